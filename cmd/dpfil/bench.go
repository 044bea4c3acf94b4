package main

import "github.com/spf13/cobra"

// newBenchCmd is the 'bench' command group; its issue is still open.
func newBenchCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "bench",
		Short: "Benchmarks of the engine and accountants (not yet implemented)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return errNotImplemented("bench")
		},
	}
}
