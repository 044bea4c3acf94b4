package enginebench_test

import (
	"testing"

	"github.com/dpfil/dpfil/cuda"
	"github.com/dpfil/dpfil/models"
	"github.com/dpfil/dpfil/models/enginebench"
)

// TestRunDeviceCounts times the cuda backend on the emulator next to the CPU and
// checks that the report holds the driver's counts per call with resident inputs:
// one wait per call (the losses, the FIL values), and nothing of the parameters' or
// inputs' size moved.
func TestRunDeviceCounts(t *testing.T) {
	req := enginebench.Request{Model: "mlp", Batch: 6, Coords: 2, Device: "cuda-emu", Seconds: 0.05,
		OpenDevice: func(arch models.Arch, _ string) (models.Model, error) {
			return cuda.Open(arch, cuda.NewEmulator())
		}}
	r, err := enginebench.Run(req)
	if err != nil {
		t.Fatal(err)
	}
	d := r.Device
	if d == nil || !d.Resident || d.GradCounts == nil || d.FILCounts == nil {
		t.Fatalf("device result %+v: want resident inputs and counts", d)
	}
	P := float64(r.Params)
	for _, c := range []struct {
		what string
		c    *enginebench.DeviceCounts
	}{{"gradient sum", d.GradCounts}, {"FIL step", d.FILCounts}} {
		if c.c.Syncs != 1 || c.c.Launches == 0 || c.c.HtoDBytes >= 4*P || c.c.DtoHBytes >= 4*P {
			t.Errorf("%s: %+v per call (P = %.0f): want 1 wait and O(batch) bytes", c.what, *c.c, P)
		}
	}
}
