package cuda

import (
	"testing"

	"github.com/dpfil/dpfil/models"
)

// testDrivers returns the drivers this test binary can run: the emulator always, and
// the GPU too when built with -tags dpfil_cuda (where a missing GPU fails the test).
func testDrivers(t *testing.T) []Driver {
	t.Helper()
	drivers := []Driver{NewEmulator()}
	if HasGPU() {
		gpu, err := OpenDriver("cuda")
		if err != nil {
			t.Fatalf("cuda build without a usable GPU: %v", err)
		}
		drivers = append(drivers, gpu)
	}
	return drivers
}

// TestConformance runs the engine's backend conformance suite (logits, per-sample
// gradients, clipped sums, tangents, input gradients of clipped dots, FIL norms on
// every architecture) against the float64 CPU reference.
func TestConformance(t *testing.T) {
	for _, drv := range testDrivers(t) {
		t.Run(drv.Name(), func(t *testing.T) {
			be, err := NewBackend(drv)
			if err != nil {
				t.Fatal(err)
			}
			defer be.Close()
			if err := models.CheckBackend(be, 1e-4); err != nil {
				if derr := be.Err(); derr != nil {
					t.Fatalf("%v (after the driver error %v)", err, derr)
				}
				t.Fatal(err)
			}
			if err := be.Err(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestWorkCounts counts the device work of the two hot calls on the emulator (the
// counts do not depend on the device) and checks its bookkeeping: one synchronisation
// per backend call, and nothing staged (Model uploads the parameters once per call,
// every other buffer is the network's own managed memory). With -v it
// prints the per-sample counts that docs/perf.md turns into the GPU's overhead model.
func TestWorkCounts(t *testing.T) {
	for _, name := range []string{"mnist-cnn", "cifar-cnn"} {
		arch, err := models.ArchByName(name)
		if err != nil {
			t.Fatal(err)
		}
		m, err := Open(arch, NewEmulator())
		if err != nil {
			t.Fatal(err)
		}
		const batch, k = 8, 2
		params := m.Init(1)
		x := make([]float32, batch*m.InputDim())
		for i := range x {
			x[i] = float32(i%17) / 17
		}
		y := make([]int, batch)
		coords := make([][]int, batch)
		for s := range coords {
			coords[s] = []int{s, 3 * s}
		}
		clip := models.Clip{Mode: models.ClipSmooth, C: 1}
		be := m.Backend()
		be.ResetStats()
		if err := m.ClippedGradSum(params, x, y, clip, make([]float32, m.NumParams()), make([]float64, batch)); err != nil {
			t.Fatal(err)
		}
		grad := be.Stats()
		be.ResetStats()
		if err := m.FILSqNorms(params, x, y, clip, coords, make([]float64, batch)); err != nil {
			t.Fatal(err)
		}
		fil := be.Stats()
		for what, s := range map[string]Stats{"gradient": grad, "FIL": fil} {
			if s.Syncs != s.Calls || s.Gemms == 0 || s.Launches == 0 || s.DotReads == 0 {
				t.Errorf("%s %s: inconsistent counts %+v", name, what, s)
			}
			if s.StagedBytes != 0 {
				t.Errorf("%s %s: staged %d bytes through foreign slices", name, what, s.StagedBytes)
			}
			t.Logf("%s %s step, per sample (batch %d, k %d): %.1f calls, %.1f launches, %.1f GEMMs, %.1f syncs, %.1f dot reads, %.0f staged bytes",
				name, what, batch, k, float64(s.Calls)/batch, float64(s.Launches)/batch, float64(s.Gemms)/batch,
				float64(s.Syncs)/batch, float64(s.DotReads)/batch, float64(s.StagedBytes)/batch)
		}
		m.Close()
	}
}
