package main

import (
	"fmt"
	"io"
	"runtime"

	"github.com/dpfil/dpfil/train"

	"github.com/spf13/cobra"
)

// buildInfo describes the binary: module version, VCS commit when stamped, Go version
// (the same build information result.json records under "dpfil").
type buildInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	Modified  bool   `json:"modified,omitempty"`
	GoVersion string `json:"go_version"`
	OS        string `json:"os"`
	Arch      string `json:"arch"`
}

func readBuildInfo() buildInfo {
	v := train.Version()
	bi := buildInfo{Version: v.Version, Commit: v.Revision, Modified: v.Modified, GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	if bi.Version == "" || bi.Version == "(devel)" || bi.Version == "unknown" {
		bi.Version = "devel"
	}
	return bi
}

func newVersionCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the dpfil version, commit and Go version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			bi := readBuildInfo()
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
