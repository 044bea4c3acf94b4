package main

import (
	"github.com/dpfil/dpfil/train"

	"github.com/spf13/cobra"
)

func newVersionCmd() *cobra.Command {
	return reportCmd(&cobra.Command{
		Use:   "version",
		Short: "Print the dpfil version, commit and Go version",
		Args:  cobra.NoArgs,
	}, func(*cobra.Command, []string) (*train.Binary, error) {
		bi := train.DescribeBinary()
		return &bi, nil
	})
}
