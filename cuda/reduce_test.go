package cuda

import (
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/dpfil/dpfil/models"
)

// TestSumTree sums device vectors of integer-valued doubles (exact in any order, so
// the host sum is the reference bit for bit) with the multi-block sumTree, at sizes
// around the chunk boundaries and at cifar-cnn's 275 456 update threads, and checks
// the number of levels it launched (one thread never sums more than sumChunk values).
func TestSumTree(t *testing.T) {
	for _, drv := range testDrivers(t) {
		t.Run(drv.Name(), func(t *testing.T) {
			be, err := NewBackend(drv)
			if err != nil {
				t.Fatal(err)
			}
			defer be.Close()
			rng := rand.New(rand.NewPCG(3, 4))
			for _, n := range []int{1, 2, 255, 256, 257, 65536, 65537, 275456} {
				host := make([]float64, n)
				want := 0.0
				for i := range host {
					host[i] = float64(rng.IntN(3))
					if i%9973 == 0 {
						host[i] = 1 << 20
					}
					want += host[i]
				}
				buf := be.AllocFloat64(sumTreeLen(n))
				be.CopyFloat64(buf[:n], host)
				before := be.Counts()
				if !be.begin() {
					t.Fatal(be.Err())
				}
				p := be.sumTree(n, unsafe.Pointer(unsafe.SliceData(buf)))
				var got [1]float64
				if p != nil {
					be.synced = true
					be.copyOut(unsafe.Pointer(&got[0]), p, 8)
				}
				be.end()
				if err := be.Err(); err != nil {
					t.Fatal(err)
				}
				levels := 0
				for m := n; m > 1; m = (m + sumChunk - 1) / sumChunk {
					levels++
				}
				if l := be.Counts().Sub(before).Launches; l != int64(levels) {
					t.Errorf("n = %d: %d launches, want %d levels", n, l, levels)
				}
				if got[0] != want {
					t.Errorf("n = %d: sum %v, want %v", n, got[0], want)
				}
			}
		})
	}
}

// TestResidentUpdateCountsNonFinite plants NaN and ±Inf in the master parameters and
// momentum of cifar-cnn (275 456 update threads: the count goes through three
// levels of the multi-block sum, one launch each) at the first, last and interior positions, takes one
// device update and checks the count it returns against the host count of the
// non-finite parameters it copies back.
func TestResidentUpdateCountsNonFinite(t *testing.T) {
	arch, err := models.ArchByName("cifar-cnn")
	if err != nil {
		t.Fatal(err)
	}
	m, err := Open(arch, NewEmulator())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	D, P := m.InputDim(), m.NumParams()
	if err := m.ResidentLoad(make([]float32, D), 1, nil, 0); err != nil {
		t.Fatal(err)
	}
	inf := math.Inf(1)
	for _, tc := range []struct {
		name  string
		plant map[int]float64 // parameter index → value (negative index: momentum of -i-1)
	}{
		{"none", nil},
		{"first", map[int]float64{0: math.NaN()}},
		{"last", map[int]float64{P - 1: inf}},
		{"spread", map[int]float64{1: -inf, 511: math.NaN(), 512: math.NaN(), P / 2: inf, P - 2: math.NaN(), P - 1: -inf}},
		{"momentum", map[int]float64{-1: inf, -(P / 3) - 1: math.NaN()}},
	} {
		w, v := make([]float64, P), make([]float64, P)
		for i := range w {
			w[i] = 0.01 * float64(i%7-3)
		}
		for i, x := range tc.plant {
			if i < 0 {
				v[-i-1] = x
			} else {
				w[i] = x
			}
		}
		if err := m.ResidentSetState(w, v); err != nil {
			t.Fatal(err)
		}
		before := m.DeviceCounts()
		got, err := m.ResidentUpdate(1, 0, 0, 1, 0.1, 0.9, 0)
		if err != nil {
			t.Fatal(err)
		}
		// The update kernel, then the three levels 275 456 → 1 076 → 5 → 1.
		if l := m.DeviceCounts().Sub(before).Launches; l != 4 {
			t.Errorf("%s: the update launched %d kernels, want 4 (the update and three sum levels)", tc.name, l)
		}
		if err := m.ResidentState(w, nil); err != nil {
			t.Fatal(err)
		}
		want := 0
		for _, x := range w {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				want++
			}
		}
		if want != len(tc.plant) || got != want {
			t.Errorf("%s: the device counted %d non-finite parameters, the host %d (planted %d)", tc.name, got, want, len(tc.plant))
		}
	}
}
