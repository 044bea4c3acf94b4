package cuda_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dpfil/dpfil/internal/pcgjump"
	"github.com/dpfil/dpfil/models"
)

// TestResidentFILDrawnMatchesHost: ResidentFILDrawn's FIL values are bit for bit
// those of ResidentFIL with the coordinates drawn on the host by IntN(D) from the
// same PCG, its upload is the 16-byte PCG state instead of 8·B·k bytes of
// coordinates and one-hot values, and the count the update reads back advances the
// PCG exactly to where the host's draws leave it. Several steps (the call runs
// directly, is captured, then replayed) from different PCG offsets; the count is
// only available after an update. On the emulator and, in the GPU build, the
// stand-in or GPU.
func TestResidentFILDrawnMatchesHost(t *testing.T) {
	arch, err := models.ArchByName("mnist-cnn")
	if err != nil {
		t.Fatal(err)
	}
	split := residentSplit(t, 64, 0)
	const B, k = 12, 3
	for _, dev := range devices() {
		m := openModel(t, dev, arch)
		tr := split.Train
		if err := m.ResidentLoad(tr.Images, tr.N, nil, 0); err != nil {
			t.Fatal(err)
		}
		P, D := m.NumParams(), m.InputDim()
		w0 := make([]float64, P)
		for i := range w0 {
			w0[i] = 0.05 * math.Sin(float64(i))
		}
		if err := m.ResidentSetState(w0, make([]float64, P)); err != nil {
			t.Fatal(err)
		}
		clip := models.Clip{Mode: models.ClipSmooth, C: 1}
		pcg := rand.NewPCG(11, 12)
		for step, offset := range []uint64{0, 7, 1 << 33, 5} {
			if err := pcgjump.Advance(pcg, offset); err != nil {
				t.Fatal(err)
			}
			st, err := pcg.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			idx, y := make([]int, B), make([]int, B)
			for s := range idx {
				idx[s] = (3*step + 5*s) % tr.N
				y[s] = tr.Labels[idx[s]]
			}
			if err := m.ResidentGradSum(idx, y, clip, make([]float64, B)); err != nil {
				t.Fatal(err)
			}
			got := make([]float64, B)
			before := m.DeviceCounts()
			drawn, err := m.ResidentFILDrawn(idx, y, clip, k, D, st, got)
			if err != nil {
				t.Fatal(err)
			}
			if !drawn {
				t.Fatalf("%s step %d: the device did not draw the coordinates of a one-pass call", dev, step)
			}
			drawnIn := m.DeviceCounts().Sub(before).HtoDBytes
			if _, err := m.ResidentCoordsUsed(); err == nil {
				t.Fatalf("%s step %d: a count before the update read it back", dev, step)
			}
			// The host's draws from the same state, and the FIL step on them.
			host := rand.NewPCG(0, 0)
			if err := host.UnmarshalBinary(st); err != nil {
				t.Fatal(err)
			}
			r := rand.New(host)
			coords := make([][]int, B)
			for s := range coords {
				for range k {
					coords[s] = append(coords[s], r.IntN(D))
				}
			}
			want := make([]float64, B)
			before = m.DeviceCounts()
			if err := m.ResidentFIL(idx, y, clip, coords, want); err != nil {
				t.Fatal(err)
			}
			hostIn := m.DeviceCounts().Sub(before).HtoDBytes
			for i := range want {
				if math.Float64bits(got[i]) != math.Float64bits(want[i]) || want[i] == 0 {
					t.Fatalf("%s step %d: FIL value %d = %v with device-drawn coordinates, %v with the host's", dev, step, i, got[i], want[i])
				}
			}
			// The host call also gathers its rows (no reuse after a FIL call): 4·B.
			if drawnIn+8*B*k-16 > hostIn+4*B || drawnIn > hostIn {
				t.Errorf("%s step %d: %d bytes to the device with device-drawn coordinates, %d with the host's: want ≥ 8·B·k − 16 = %d fewer (less the host call's gather)",
					dev, step, drawnIn, hostIn, 8*B*k-16)
			}
			if _, err := m.ResidentUpdate(3, step, 0, B, 0, 0, 0); err != nil {
				t.Fatal(err)
			}
			used, err := m.ResidentCoordsUsed()
			if err != nil {
				t.Fatal(err)
			}
			if used != B*k {
				t.Fatalf("%s step %d: %d PCG outputs used for %d draws", dev, step, used, B*k)
			}
			if err := pcgjump.Advance(pcg, used); err != nil {
				t.Fatal(err)
			}
			a, _ := pcg.MarshalBinary()
			b, _ := host.MarshalBinary()
			if string(a) != string(b) {
				t.Fatalf("%s step %d: the PCG advanced by the device's count is not where the host's draws left it", dev, step)
			}
			if _, err := m.ResidentCoordsUsed(); err == nil {
				t.Fatalf("%s step %d: a second count of one draw", dev, step)
			}
		}
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
