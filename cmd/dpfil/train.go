package main

import "github.com/spf13/cobra"

// newTrainCmd is the 'train' command group; its issue is still open.
func newTrainCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "train",
		Short: "Train a model with DP-SGD and FIL/RDP accounting (not yet implemented)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return errNotImplemented("train")
		},
	}
}
