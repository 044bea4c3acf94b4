//go:build !dpfil_cuda

package cuda

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestOpenDriverNames: without the GPU build, "cuda" says which build tag gives GPU
// support (dpfil_cuda, not Gorgonia's cuda tag); "cuda-emu" opens the emulator; any
// other name is refused.
func TestOpenDriverNames(t *testing.T) {
	if _, err := OpenDriver("cuda"); err == nil || !strings.Contains(err.Error(), "build tag dpfil_cuda") {
		t.Errorf(`OpenDriver("cuda") = %v, want an error naming the build tag dpfil_cuda`, err)
	}
	drv, err := OpenDriver("cuda-emu")
	if err != nil {
		t.Fatalf(`OpenDriver("cuda-emu"): %v`, err)
	}
	if err := drv.Close(); err != nil {
		t.Error(err)
	}
	if _, err := OpenDriver("gpu"); err == nil || !strings.Contains(err.Error(), `unknown device "gpu"`) {
		t.Errorf(`OpenDriver("gpu") = %v, want an unknown-device error`, err)
	}
}

// TestBuildsWithoutCgo: the package compiles with CGO_ENABLED=0 (the emulator, which
// is C, is then left out and "cuda-emu" is an error). .ci/run builds the whole module
// that way.
func TestBuildsWithoutCgo(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	cmd := exec.Command(goBin, "build", "github.com/dpfil/dpfil/cuda")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("CGO_ENABLED=0 go build ./cuda: %v\n%s", err, out)
	}
}
