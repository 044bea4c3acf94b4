package train

import (
	"fmt"

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
	return newDeviceModel(arch, device, false)
}

// newModelFor builds the model a run of cfg needs: on cuda, plain device memory (the
// device-resident step, resident.go) unless η or label FIL need the engine's
// parameter-tangent passes, which run on managed memory.
func newModelFor(arch models.Arch, cfg Config) (models.Model, error) {
	return newDeviceModel(arch, cfg.Device, cfg.FILEta > 0 || cfg.FILLabel)
}

func newDeviceModel(arch models.Arch, device string, managed bool) (models.Model, error) {
	switch device {
	case "", "cpu":
		m, err := models.NewCPUModel(arch)
		if err != nil {
			return nil, fmt.Errorf("build model %s: %w", arch.Name, err)
		}
		return m, nil
	case "cuda":
		return newCUDAModel(arch, managed)
	}
	return nil, fmt.Errorf("unknown device %q (want cpu or cuda)", device)
}

// gitCommit is the VCS revision stamped into the binary when dpfil is the main
// module ("-dirty" when the tree had local changes), else "". It never runs git:
// the working directory may be the caller's repository, not dpfil's.
func gitCommit() string {
	v := Version()
	if v.Revision == "" {
		return ""
	}
	if v.Modified {
		return v.Revision + "-dirty"
	}
	return v.Revision
}
