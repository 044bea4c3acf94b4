package train

import (
	"context"
	"fmt"
	"os/exec"
	"runtime/debug"
	"strings"
	"time"

	"github.com/dpfil/dpfil/models"
)

// NewModel builds the engine model of arch on a device: "cpu", or "cuda" (GPU 0, in a
// binary built with the dpfil_cuda tag). A model that holds device resources implements
// io.Closer.
func NewModel(arch models.Arch, device string) (models.Model, error) {
	return newModel(arch, device)
}

// newModel builds the engine model of arch on a device.
func newModel(arch models.Arch, device string) (models.Model, error) {
	switch device {
	case "", "cpu":
		m, err := models.NewCPUModel(arch)
		if err != nil {
			return nil, fmt.Errorf("build model %s: %w", arch.Name, err)
		}
		return m, nil
	case "cuda":
		return newCUDAModel(arch)
	}
	return nil, fmt.Errorf("unknown device %q (want cpu or cuda)", device)
}

// gitCommit identifies the code that produced a result: the VCS revision stamped
// into the binary, else `git rev-parse HEAD` in the working directory, else "unknown".
func gitCommit() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		rev, dirty := "", false
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if rev != "" {
			if dirty {
				rev += "-dirty"
			}
			return rev
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "git", "rev-parse", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}
