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
// only available after an update. mnist-cnn, and cifar-cnn, whose Normalize layer
// gives every coordinate's one-hot value 1/std of its channel (the device's table;
// synthetic images). On the emulator and, in the GPU build, the stand-in or GPU.
func TestResidentFILDrawnMatchesHost(t *testing.T) {
	split := residentSplit(t, 64, 0)
	rng := rand.New(rand.NewPCG(5, 6))
	cifar := make([]float32, 16*3072)
	for i := range cifar {
		cifar[i] = float32(rng.IntN(256)) / 255
	}
	cifarY := make([]int, 16)
	for i := range cifarY {
		cifarY[i] = i % 10
	}
	for _, c := range []struct {
		arch    string
		images  []float32
		labels  []int
		B, k    int
		offsets []uint64
	}{
		{"mnist-cnn", split.Train.Images, split.Train.Labels, 12, 3, []uint64{0, 7, 1 << 33, 5}},
		{"cifar-cnn", cifar, cifarY, 2, 2, []uint64{3, 1 << 20, 9}},
	} {
		arch, err := models.ArchByName(c.arch)
		if err != nil {
			t.Fatal(err)
		}
		for _, dev := range devices() {
			drawnMatchesHost(t, arch, dev, c.images, c.labels, c.B, c.k, c.offsets)
		}
	}
}

func drawnMatchesHost(t *testing.T, arch models.Arch, dev string, images []float32, labels []int, B, k int, offsets []uint64) {
	t.Helper()
	m := openModel(t, dev, arch)
	N := len(labels)
	_, D := loadResident(t, m, images, N)
	clip := models.Clip{Mode: models.ClipSmooth, C: 1}
	pcg := rand.NewPCG(11, 12)
	for step, offset := range offsets {
		if err := pcgjump.Advance(pcg, offset); err != nil {
			t.Fatal(err)
		}
		st, err := pcg.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		idx, y := make([]int, B), make([]int, B)
		for s := range idx {
			idx[s] = (3*step + 5*s) % N
			y[s] = labels[idx[s]]
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
			t.Fatalf("%s %s step %d: the device did not draw the coordinates of a one-pass call", arch.Name, dev, step)
		}
		drawnIn := m.DeviceCounts().Sub(before).HtoDBytes
		if _, err := m.ResidentCoordsUsed(); err == nil {
			t.Fatalf("%s %s step %d: a count before the update read it back", arch.Name, dev, step)
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
				t.Fatalf("%s %s step %d: FIL value %d = %v with device-drawn coordinates, %v with the host's", arch.Name, dev, step, i, got[i], want[i])
			}
		}
		// The host call also gathers its rows (no reuse after a FIL call): 4·B.
		if bk := int64(8 * B * k); drawnIn+bk-16 > hostIn+int64(4*B) || drawnIn > hostIn {
			t.Errorf("%s %s step %d: %d bytes to the device with device-drawn coordinates, %d with the host's: want ≥ 8·B·k − 16 = %d fewer (less the host call's gather)",
				arch.Name, dev, step, drawnIn, hostIn, 8*B*k-16)
		}
		if _, err := m.ResidentUpdate(3, step, 0, float64(B), 0, 0, 0); err != nil {
			t.Fatal(err)
		}
		used, err := m.ResidentCoordsUsed()
		if err != nil {
			t.Fatal(err)
		}
		if used != uint64(B*k) {
			t.Fatalf("%s %s step %d: %d PCG outputs used for %d draws", arch.Name, dev, step, used, B*k)
		}
		if err := pcgjump.Advance(pcg, used); err != nil {
			t.Fatal(err)
		}
		a, _ := pcg.MarshalBinary()
		b, _ := host.MarshalBinary()
		if string(a) != string(b) {
			t.Fatalf("%s %s step %d: the PCG advanced by the device's count is not where the host's draws left it", arch.Name, dev, step)
		}
		if _, err := m.ResidentCoordsUsed(); err == nil {
			t.Fatalf("%s %s step %d: a second count of one draw", arch.Name, dev, step)
		}
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
}
