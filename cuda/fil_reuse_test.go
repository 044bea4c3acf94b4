package cuda_test

import (
	"math"
	"testing"

	"github.com/dpfil/dpfil/models"
)

// TestResidentFILReusesGradPass checks that ResidentFIL, right after ResidentGradSum
// of the same rows, reuses that call's forward and backward pass (fewer launches) with
// FIL values bit for bit those of a FIL step that runs its own pass, and that it
// does not reuse it when it may not: a second FIL call (the workspace was
// overwritten), other rows, or parameters changed by ResidentUpdate — there a stale
// pass would give other values than the fresh one checked here. On the emulator and,
// in the GPU build, the stand-in or GPU.
func TestResidentFILReusesGradPass(t *testing.T) {
	arch, err := models.ArchByName("mnist-cnn")
	if err != nil {
		t.Fatal(err)
	}
	split := residentSplit(t, 64, 0)
	const B, k = 12, 3
	for _, dev := range devices() {
		m := openModel(t, dev, arch)
		// Uncaptured, so that the counts compare calls, not captures and replays
		// (TestResidentGraphReplay replays the reusing FIL step).
		if err := m.SetGraphs(false); err != nil {
			t.Fatal(err)
		}
		tr := split.Train
		_, D := loadResident(t, m, tr.Images, tr.N)
		clip := models.Clip{Mode: models.ClipSmooth, C: 1}
		rows := func(off int) ([]int, []int, [][]int) {
			idx, y, coords := make([]int, B), make([]int, B), make([][]int, B)
			for s := range idx {
				idx[s] = (off + 5*s) % tr.N
				y[s] = tr.Labels[idx[s]]
				coords[s] = []int{(13 * s) % D, (7*s + 100) % D, (s + 400) % D}
			}
			return idx, y, coords
		}
		// fil runs ResidentFIL and returns its values and launches + GEMMs.
		fil := func(idx, y []int, coords [][]int) ([]float64, int64) {
			out := make([]float64, B)
			before := m.DeviceCounts()
			if err := m.ResidentFIL(idx, y, clip, coords, out); err != nil {
				t.Fatal(err)
			}
			c := m.DeviceCounts().Sub(before)
			return out, c.Launches + c.Gemms
		}
		grad := func(idx, y []int) {
			if err := m.ResidentGradSum(idx, y, clip, make([]float64, B)); err != nil {
				t.Fatal(err)
			}
		}
		same := func(what string, got, want []float64) {
			t.Helper()
			for i := range want {
				if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
					t.Fatalf("%s, %s: FIL value %d = %v, want %v bit for bit", dev, what, i, got[i], want[i])
				}
			}
		}
		idx, y, coords := rows(0)
		grad(idx, y)
		reused, nReused := fil(idx, y, coords)
		fresh, nFresh := fil(idx, y, coords) // the workspace now holds the FIL step's pass
		same("reused vs own pass", reused, fresh)
		t.Logf("%s: FIL after the gradient sum of its rows %d launches + GEMMs, on its own %d", dev, nReused, nFresh)
		if nReused >= nFresh {
			t.Errorf("%s: FIL after the gradient sum %d launches + GEMMs, on its own %d: want fewer", dev, nReused, nFresh)
		}
		// Other rows than the gradient sum's: no reuse.
		idx2, y2, coords2 := rows(3)
		grad(idx, y)
		other, nOther := fil(idx2, y2, coords2)
		otherFresh, _ := fil(idx2, y2, coords2)
		same("other rows", other, otherFresh)
		if nOther < nFresh { // its own pass, and the gather of its rows
			t.Errorf("%s: FIL of other rows than the gradient sum's: %d launches + GEMMs, want ≥ %d (its own pass)", dev, nOther, nFresh)
		}
		// After an update the parameters differ: no reuse, and the values are the
		// new parameters'.
		grad(idx, y)
		if _, err := m.ResidentUpdate(3, 0, 0, B, 0.5, 0.9, 0); err != nil {
			t.Fatal(err)
		}
		updated, nUpdated := fil(idx, y, coords)
		updatedFresh, _ := fil(idx, y, coords)
		same("after an update", updated, updatedFresh)
		if nUpdated < nFresh {
			t.Errorf("%s: FIL after an update: %d launches + GEMMs, want ≥ %d (its own pass)", dev, nUpdated, nFresh)
		}
		differs := false
		for i := range updated {
			differs = differs || updated[i] != fresh[i]
		}
		if !differs {
			t.Errorf("%s: the update left every FIL value unchanged: the check above tests nothing", dev)
		}
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
