package main

import "github.com/spf13/cobra"

// newPlotCmd is the 'plot' command group; its issue is still open.
func newPlotCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "plot",
		Short: "Pareto plots, histograms, scatter plots and image grids (not yet implemented)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return errNotImplemented("plot")
		},
	}
}
