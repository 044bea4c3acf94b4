package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// buildInfo describes the binary: module version, VCS commit when stamped, Go version.
type buildInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	GoVersion string `json:"go_version"`
	OS        string `json:"os"`
	Arch      string `json:"arch"`
}

func readBuildInfo() buildInfo {
	bi := buildInfo{Version: "devel", GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	if info, ok := debug.ReadBuildInfo(); ok {
		if info.Main.Version != "" && info.Main.Version != "(devel)" {
			bi.Version = info.Main.Version
		}
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" {
				bi.Commit = s.Value
			}
		}
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
				if bi.Commit != "" {
					fmt.Fprintf(w, " (%s)", bi.Commit)
				}
				fmt.Fprintf(w, " %s %s/%s\n", bi.GoVersion, bi.OS, bi.Arch)
			})
		},
	}
	addJSONFlag(cmd, &asJSON)
	return cmd
}
