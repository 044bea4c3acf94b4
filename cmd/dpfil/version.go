package main

import (
	"github.com/dpfil/dpfil/train"

	"github.com/spf13/cobra"
)

func newVersionCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the dpfil version, commit and Go version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			bi := train.DescribeBinary()
			return emitReport(cmd, asJSON, &bi, nil)
		},
	}
	addJSONFlag(cmd, &asJSON)
	return cmd
}
