package main

import "github.com/spf13/cobra"

// newSweepCmd is the 'sweep' command group; its issue is still open.
func newSweepCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "sweep",
		Short: "Hyperparameter sweeps on one machine or a cluster (not yet implemented)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return errNotImplemented("sweep")
		},
	}
}
