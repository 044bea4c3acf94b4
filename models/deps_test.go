package models_test

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestEngineCoreWithoutGorgonia: the engine, the trainer and the accountants link no
// Gorgonia package (issue 28). Gorgonia lives where users define models
// (models/gorgonet) and in the test oracle (models/oracle), which register each layer
// kind's Gorgonia nodes themselves.
func TestEngineCoreWithoutGorgonia(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	pkgs := []string{"github.com/dpfil/dpfil/models", "github.com/dpfil/dpfil/train", "github.com/dpfil/dpfil/accounting"}
	out, err := exec.Command(goBin, append([]string{"list", "-deps"}, pkgs...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	seen := map[string]bool{}
	for _, d := range deps {
		seen[d] = true
		if strings.HasPrefix(d, "gorgonia.org/") {
			t.Errorf("%s is among the dependencies of %v", d, pkgs)
		}
	}
	for _, p := range pkgs {
		if !seen[p] {
			t.Errorf("go list -deps did not list %s itself:\n%s", p, out)
		}
	}
}
