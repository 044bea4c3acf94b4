package main

import "github.com/spf13/cobra"

// newDemoCmd is the 'demo' command group; its issue is still open.
func newDemoCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "demo",
		Short: "The main job on the embedded MNIST, offline (not yet implemented)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return errNotImplemented("demo")
		},
	}
}
