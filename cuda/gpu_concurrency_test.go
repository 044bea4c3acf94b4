//go:build dpfil_cuda

package cuda

import (
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"unsafe"

	"github.com/dpfil/dpfil/models"
)

// TestGPUConcurrentGoroutines drives GPU 0 from several goroutines at once, each on
// whatever OS thread the scheduler gives it: GPU's methods must make the context
// current on the calling thread every time (a thread without one fails on a real
// driver and on the stand-in). Valid on a real GPU too (where the host touches its
// own managed buffers while other goroutines' kernels run, which devices with
// concurrent managed access allow).
func TestGPUConcurrentGoroutines(t *testing.T) {
	t.Run("one driver", func(t *testing.T) {
		d, err := OpenGPU(0)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		const workers, rounds, n, dim = 4, 6, 3000, 16
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				alloc := func(k int) []float32 {
					p, err := d.AllocManaged(4 * k)
					if err != nil {
						t.Errorf("worker %d: %v", w, err)
						return nil
					}
					return unsafe.Slice((*float32)(p), k)
				}
				x, y, a, b, c := alloc(n), alloc(n), alloc(dim*dim), alloc(dim*dim), alloc(dim*dim)
				defer func() {
					for _, s := range [][]float32{x, y, a, b, c} {
						if s != nil {
							if err := d.Free(unsafe.Pointer(unsafe.SliceData(s))); err != nil {
								t.Errorf("worker %d: %v", w, err)
							}
						}
					}
				}()
				if x == nil || y == nil || a == nil || b == nil || c == nil {
					return
				}
				ptr := func(s []float32) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(s)) }
				r := rand.New(rand.NewPCG(uint64(w), 9))
				for round := 0; round < rounds; round++ {
					for i := range x {
						x[i] = float32(3 * r.NormFloat64())
					}
					for i := range a {
						a[i], b[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
					}
					if err := d.Launch("k_act_fwd", Dim3{(n + 255) / 256, 1, 1}, Dim3{256, 1, 1}, Args(0, n, ptr(x), ptr(y))); err != nil {
						t.Errorf("worker %d round %d: %v", w, round, err)
						return
					}
					if err := d.Sgemm(false, true, dim, dim, dim, 1, ptr(a), dim, ptr(b), dim, 0, ptr(c), dim); err != nil {
						t.Errorf("worker %d round %d: %v", w, round, err)
						return
					}
					if err := d.Sync(); err != nil {
						t.Errorf("worker %d round %d: %v", w, round, err)
						return
					}
					for i := range x {
						if want := math.Tanh(float64(x[i])); math.Abs(float64(y[i])-want) > 1e-6 {
							t.Errorf("worker %d round %d: tanh(%g) = %g, want %g", w, round, x[i], y[i], want)
							return
						}
					}
					for i := 0; i < dim; i++ {
						for j := 0; j < dim; j++ {
							var s, scale float64
							for k := 0; k < dim; k++ {
								p := float64(a[i*dim+k]) * float64(b[j*dim+k])
								s += p
								scale += math.Abs(p)
							}
							if e := math.Abs(float64(c[i*dim+j]) - s); e > 1e-5*(1+scale) {
								t.Errorf("worker %d round %d: C[%d][%d] = %g, want %g", w, round, i, j, c[i*dim+j], s)
								return
							}
						}
					}
				}
			}(w)
		}
		wg.Wait()
	})

	// Several models, each with its own driver on GPU 0 (so all sharing the device's
	// primary context), computing the same clipped gradient sum at once, opened and
	// closed concurrently; each must equal the CPU backend's.
	t.Run("one model per goroutine", func(t *testing.T) {
		arch, err := models.ArchByName("mnist-cnn")
		if err != nil {
			t.Fatal(err)
		}
		cpu, err := models.NewCPUModel(arch)
		if err != nil {
			t.Fatal(err)
		}
		const batch = 8
		r := rand.New(rand.NewPCG(3, 5))
		params := cpu.Init(2)
		x := make([]float32, batch*cpu.InputDim())
		for i := range x {
			x[i] = r.Float32()
		}
		y := make([]int, batch)
		for i := range y {
			y[i] = r.IntN(arch.Classes)
		}
		clip := models.Clip{Mode: models.ClipSmooth, C: 1}
		want, wantLoss := make([]float32, cpu.NumParams()), make([]float64, batch)
		if err := cpu.ClippedGradSum(params, x, y, clip, want, wantLoss); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for w := 0; w < 3; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				drv, err := OpenGPU(0)
				if err != nil {
					t.Errorf("model %d: %v", w, err)
					return
				}
				m, err := Open(arch, drv)
				if err != nil {
					t.Errorf("model %d: %v", w, err)
					return
				}
				defer func() {
					if err := m.Close(); err != nil {
						t.Errorf("model %d: close: %v", w, err)
					}
				}()
				sum, losses := make([]float32, m.NumParams()), make([]float64, batch)
				for round := 0; round < 2; round++ {
					if err := m.ClippedGradSum(params, x, y, clip, sum, losses); err != nil {
						t.Errorf("model %d: %v", w, err)
						return
					}
					var num, den float64
					for i := range want {
						d := float64(sum[i] - want[i])
						num += d * d
						den += float64(want[i]) * float64(want[i])
					}
					if e := math.Sqrt(num / den); e > 1e-4 || math.IsNaN(e) {
						t.Errorf("model %d round %d: clipped gradient sum differs from the CPU's by %.3g (relative)", w, round, e)
					}
					for i, l := range losses {
						if math.Abs(l-wantLoss[i]) > 1e-4*(1+math.Abs(wantLoss[i])) {
							t.Errorf("model %d round %d: loss %d = %v, CPU %v", w, round, i, l, wantLoss[i])
						}
					}
				}
			}(w)
		}
		wg.Wait()
	})
}
