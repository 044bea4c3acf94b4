package main

import (
	"testing"

	"github.com/dpfil/dpfil/cuda"
	"github.com/dpfil/dpfil/models"
)

// TestBenchEngineDeviceCounts times the cuda backend on the emulator next to the CPU
// and checks that bench engine reports the driver's counts per call with resident
// inputs (what --json prints): one wait per call (the losses, the FIL values), and
// nothing of the parameters' or inputs' size moved.
func TestBenchEngineDeviceCounts(t *testing.T) {
	o := benchEngineOptions{model: "mlp", batch: 6, coords: 2, device: "cuda-emu", seconds: 0.05,
		openDevice: func(arch models.Arch, _ string) (models.Model, error) {
			return cuda.Open(arch, cuda.NewEmulator())
		}}
	r, err := runBenchEngine(o)
	if err != nil {
		t.Fatal(err)
	}
	d := r.Device
	if d == nil || !d.Resident || d.GradCounts == nil || d.FILCounts == nil {
		t.Fatalf("device result %+v: want resident inputs and counts", d)
	}
	P := float64(r.Params)
	for what, c := range map[string]*benchDeviceCounts{"gradient sum": d.GradCounts, "FIL step": d.FILCounts} {
		if c.Syncs != 1 || c.Launches == 0 || c.HtoDBytes >= 4*P || c.DtoHBytes >= 4*P {
			t.Errorf("%s: %+v per call (P = %.0f): want 1 wait and O(batch) bytes", what, *c, P)
		}
	}
}
