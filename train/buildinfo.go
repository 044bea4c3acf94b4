package train

import "runtime"

// Binary describes the running program: dpfil's version ("devel" when the build
// has none), the VCS commit when the build stamped one, the Go version and the
// platform (the same build information Result records as its Version).
type Binary struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	Modified  bool   `json:"modified,omitempty"`
	GoVersion string `json:"go_version"`
	OS        string `json:"os"`
	Arch      string `json:"arch"`
}

// DescribeBinary returns the Binary of the running program.
func DescribeBinary() Binary {
	v := Version()
	b := Binary{Version: v.Version, Commit: v.Revision, Modified: v.Modified, GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	if b.Version == "" || b.Version == "(devel)" || b.Version == "unknown" {
		b.Version = "devel"
	}
	return b
}
