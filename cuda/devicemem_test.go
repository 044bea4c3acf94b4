package cuda

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dpfil/dpfil/models"
)

// relDiff is ‖a − b‖/‖b‖ (0 when both are 0).
func relDiff[T float32 | float64](a, b []T) float64 {
	var num, den float64
	for i := range b {
		d := float64(a[i]) - float64(b[i])
		num += d * d
		den += float64(b[i]) * float64(b[i])
	}
	if den == 0 {
		return math.Sqrt(num)
	}
	return math.Sqrt(num / den)
}

// TestDeviceMemoryMatchesManaged runs the trainer's three engine calls — the clipped
// gradient sum, the FIL norms and the logits — on plain device memory
// (NewDeviceBackend: the network's host steps as kernels, nothing host-addressable)
// and on managed memory for every built-in architecture, with host inputs and with
// device-resident parameters, inputs and sum, and compares them (the two differ only
// in where softmax and the clip factors are computed: 1e-6). Architectures with a
// layer kind that has no device passes must be refused with models.ErrDeviceMemory.
func TestDeviceMemoryMatchesManaged(t *testing.T) {
	for _, drv := range testDrivers(t) {
		t.Run(drv.Name(), func(t *testing.T) {
			for _, name := range models.ArchNames() {
				arch, err := models.ArchByName(name)
				if err != nil {
					t.Fatal(err)
				}
				B, k := 3, 3
				if name == "cifar-cnn" {
					B, k = 2, 2
				}
				checkDeviceMemoryArch(t, drv, arch, B, k)
			}
		})
	}
}

// keepOpen is a driver whose Close leaves the device open (several backends share it
// in one test).
type keepOpen struct{ Driver }

func (keepOpen) Close() error { return nil }

func checkDeviceMemoryArch(t *testing.T, dv Driver, arch models.Arch, B, k int) {
	t.Helper()
	drv := keepOpen{dv}
	pbe, err := NewDeviceBackend(drv)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := NewModel(arch, pbe)
	if errors.Is(err, models.ErrDeviceMemory) {
		t.Logf("%s: refused on plain device memory: %v", arch.Name, err)
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	mbe, err := NewBackend(drv)
	if err != nil {
		t.Fatal(err)
	}
	managed, err := NewModel(arch, mbe)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, uint64(B)))
	params := plain.Init(11)
	d, P, K := plain.InputDim(), plain.NumParams(), arch.Classes
	x := make([]float32, B*d)
	for i := range x {
		x[i] = rng.Float32()
	}
	y := make([]int, B)
	coords := make([][]int, B)
	for s := range y {
		y[s] = rng.IntN(K)
		coords[s] = make([]int, k-s%2) // ragged: padded directions must add 0
		for j := range coords[s] {
			coords[s][j] = rng.IntN(d)
		}
	}
	for _, clip := range []models.Clip{{Mode: models.ClipSmooth, C: 0.5}, {Mode: models.ClipHard, C: 0.3}} {
		type out struct {
			sum    []float32
			losses []float64
			fil    []float64
			logits []float32
		}
		run := func(m *Model, resident bool) out {
			o := out{make([]float32, P), make([]float64, B), make([]float64, B), make([]float32, B*K)}
			p, xs, sum := params, x, o.sum
			if resident {
				p, xs, sum = m.be.Alloc(P), m.be.Alloc(B*d), m.be.Alloc(P)
				m.be.Copy(p, params)
				m.be.Copy(xs, x)
			}
			if err := m.ClippedGradSum(p, xs, y, clip, sum, o.losses); err != nil {
				t.Fatal(err)
			}
			if err := m.FILSqNorms(p, xs, y, clip, coords, o.fil); err != nil {
				t.Fatal(err)
			}
			if err := m.Logits(p, xs, B, o.logits); err != nil {
				t.Fatal(err)
			}
			if resident {
				m.be.Copy(o.sum, sum)
			}
			if err := m.be.Err(); err != nil {
				t.Fatal(err)
			}
			return o
		}
		want := run(managed, false)
		for _, resident := range []bool{false, true} {
			got := run(plain, resident)
			for _, c := range []struct {
				what string
				err  float64
			}{
				{"clipped sum", relDiff(got.sum, want.sum)},
				{"losses", relDiff(got.losses, want.losses)},
				{"FIL", relDiff(got.fil, want.fil)},
				{"logits", relDiff(got.logits, want.logits)},
			} {
				if !(c.err <= 1e-6) {
					t.Errorf("%s, clip %+v, resident %v: %s differs from managed memory by %.3g", arch.Name, clip, resident, c.what, c.err)
				}
			}
		}
	}
	if !pbe.Plain() || pbe.Stats().Driver.Managed != 0 {
		t.Errorf("%s: the plain backend allocated managed memory: %+v", arch.Name, pbe.Stats().Driver)
	}
	plain.Close()
	managed.Close()
}
