package cuda

import (
	"testing"

	"github.com/dpfil/dpfil/models"
)

// testDrivers returns the drivers this test binary can run: the emulator always, and
// the GPU TestMain opened too when built with -tags dpfil_cuda.
func testDrivers(t *testing.T) []Driver {
	t.Helper()
	drivers := []Driver{NewEmulator()}
	if gpu := testGPU(); gpu != nil {
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

// TestWorkCounts counts the device work of the two hot calls on the emulator or, for
// plain memory, the counting driver (the counts do not depend on the device) and checks the batching that makes a device
// worth using, on both memory modes. Managed memory: nothing staged (Model uploads
// the parameters once per call, every other buffer is the network's own managed
// memory), one synchronisation per backend call. Plain device memory: no managed
// memory at all, and a fixed number of synchronisations per call (the copies of the
// results to the host) whatever the batch. Both: a gradient step whose call count
// does not grow with the batch (one chunk), and a FIL step that adds at most one call
// per parameter layer and sample (the batched second term of a layer's gradient
// tangents loops over the smaller of samples and directions). With -v it prints the
// counts that docs/perf.md turns into the GPU's overhead model.
func TestWorkCounts(t *testing.T) {
	for _, plain := range []bool{false, true} {
		for _, name := range []string{"mnist-cnn", "cifar-cnn"} {
			workCounts(t, name, plain)
		}
	}
}

func workCounts(t *testing.T, name string, plain bool) {
	arch, err := models.ArchByName(name)
	if err != nil {
		t.Fatal(err)
	}
	layers := 0
	for _, l := range arch.Layers {
		if l.Kind == models.KindConv || l.Kind == models.KindDense {
			layers++
		}
	}
	// Plain memory's calls do not depend on the values in device memory, so the
	// counting driver (scale_test.go) gives its counts without running the kernels.
	var drv Driver = NewEmulator()
	open, mode := OpenManaged, "managed"
	if plain {
		open, mode, drv = Open, "plain", newCountOnly(t)
	}
	m, err := open(arch, drv)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if m.Backend().Plain() != plain {
		t.Fatalf("%s: Open gave plain = %v, want %v", name, m.Backend().Plain(), plain)
	}
	const k = 2
	count := func(batch int) (grad, fil Stats) {
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
		grad = be.Stats()
		be.ResetStats()
		if err := m.FILSqNorms(params, x, y, clip, coords, make([]float64, batch)); err != nil {
			t.Fatal(err)
		}
		return grad, be.Stats()
	}
	g8, f8 := count(4)
	g16, f16 := count(8)
	for what, s := range map[string]Stats{"gradient": g16, "FIL": f16} {
		if s.Gemms == 0 || s.Launches == 0 {
			t.Errorf("%s %s %s: inconsistent counts %+v", name, mode, what, s)
		}
		if !plain && (s.Syncs != s.Calls || s.DotReads == 0) {
			t.Errorf("%s %s %s: inconsistent counts %+v", name, mode, what, s)
		}
		if !plain && s.StagedBytes != 0 {
			t.Errorf("%s %s %s: staged %d bytes through foreign slices", name, mode, what, s.StagedBytes)
		}
		if plain && (s.Driver.Managed != 0 || s.DotReads != 0) {
			t.Errorf("%s %s %s: managed memory or host-read reductions: %+v", name, mode, what, s)
		}
	}
	if plain {
		// The host parameters and inputs go in, the clipped sum (float64) and the
		// losses come out of the gradient step; the FIL values out of the FIL step.
		if g8.Syncs != g16.Syncs || g16.Syncs != 2 || f8.Syncs != f16.Syncs || f16.Syncs != 1 {
			t.Errorf("%s plain: synchronisations: gradient %d at batch 4, %d at batch 8 (want 2); FIL %d and %d (want 1)",
				name, g8.Syncs, g16.Syncs, f8.Syncs, f16.Syncs)
		}
	}
	if g16.Calls != g8.Calls {
		t.Errorf("%s %s gradient step: %d calls at batch 4, %d at batch 8: not batched", name, mode, g8.Calls, g16.Calls)
	}
	perSample := float64(f16.Calls-f8.Calls) / 4
	if perSample > float64(layers) {
		t.Errorf("%s %s FIL step: %.1f calls per extra sample, more than one per parameter layer (%d layers)", name, mode, perSample, layers)
	}
	t.Logf("%s, %s memory, k = %d: gradient step %d calls (%d launches, %d GEMMs, %d syncs, %d host-read reductions) at batch 4 and 8; FIL step %d calls (%d launches, %d GEMMs, %d syncs, %d host-read reductions) at batch 8, %.1f calls per extra sample",
		name, mode, k, g16.Calls, g16.Launches, g16.Gemms, g16.Syncs, g16.DotReads, f16.Calls, f16.Launches, f16.Gemms, f16.Syncs, f16.DotReads, perSample)
}

// TestExtensionSubsets runs the conformance suite on the managed-memory backend
// restricted to every valid subset of its optional extensions (models.ExtSubsets:
// 40, TangentBatcher only with DeviceOps and BatchedGemmer), each against the
// float64 CPU reference and against all extensions, on two architectures that
// take every layer kind's device path (conv, dense, pool, tanh, normalize). The
// plain-memory backend has one valid subset, all of them (TestConformance).
func TestExtensionSubsets(t *testing.T) {
	for _, drv := range testDrivers(t) {
		t.Run(drv.Name(), func(t *testing.T) {
			be, err := NewBackend(drv)
			if err != nil {
				t.Fatal(err)
			}
			defer be.Close()
			if n := len(models.ExtSubsets[float32](be)); n != 40 {
				t.Fatalf("%d subsets of %v, want 40", n, models.Extensions[float32](be))
			}
			if err := models.CheckExtensionSubsets(be, 1e-4, "mnist-cnn", "linear"); err != nil {
				t.Fatal(err)
			}
			if err := be.Err(); err != nil {
				t.Fatal(err)
			}
			dbe, err := NewDeviceBackend(drv)
			if err != nil {
				t.Fatal(err)
			}
			defer dbe.Close()
			if subs := models.ExtSubsets[float32](dbe); len(subs) != 1 {
				t.Fatalf("plain device memory: subsets %v, want only all", subs)
			}
		})
	}
}
