package main

import "github.com/spf13/cobra"

// newDataCmd is the 'data' command group; its issue is still open.
func newDataCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "data",
		Short: "Load, inspect and download datasets (not yet implemented)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return errNotImplemented("data")
		},
	}
}
