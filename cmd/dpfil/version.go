package main

import (
	"fmt"
	"io"

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
			return emit(cmd.OutOrStdout(), asJSON, bi, func(w io.Writer) {
				fmt.Fprintf(w, "dpfil %s", bi.Version)
				switch {
				case bi.Commit != "" && bi.Modified:
					fmt.Fprintf(w, " (commit %s, with local changes)", bi.Commit)
				case bi.Commit != "":
					fmt.Fprintf(w, " (commit %s)", bi.Commit)
				default:
					fmt.Fprint(w, " (no commit stamped: built with -buildvcs=false or outside a git checkout; 'make build' stamps it)")
				}
				fmt.Fprintf(w, " %s %s/%s\n", bi.GoVersion, bi.OS, bi.Arch)
			})
		},
	}
	addJSONFlag(cmd, &asJSON)
	return cmd
}
