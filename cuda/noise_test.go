package cuda

import (
	"math"
	"testing"
	"unsafe"

	"github.com/dpfil/dpfil/internal/philox"
)

// TestNoiseMatchesGo draws the counter-based Gaussian noise with the kernels'
// generator (k_normals: dpfil.cu's Philox4x32-10 and Box–Muller) and compares it with
// internal/philox, which the CPU trainer uses, bit for bit: the same released noise on
// both devices. On the emulator and the stand-in the kernel is dpfil.cu compiled as C;
// on a GPU it is the PTX (nvcc's code, __dadd_rn/__dmul_rn: still no fused multiply-add).
func TestNoiseMatchesGo(t *testing.T) {
	for _, drv := range testDrivers(t) {
		t.Run(drv.Name(), func(t *testing.T) {
			be, err := NewBackend(drv)
			if err != nil {
				t.Fatal(err)
			}
			defer be.Close()
			for _, c := range []struct {
				n          int
				seed, step uint64
			}{{1, 1, 0}, {7, 0x0123456789abcdef, 3}, {4099, 0xfedcba9876543210, 1<<33 + 5}} {
				got := be.noiseForTest(c.n, c.seed, c.step)
				if err := be.Err(); err != nil {
					t.Fatal(err)
				}
				key := philox.Key(c.seed)
				for i, g := range got {
					want := philox.Normal(key, c.step, uint64(i))
					if math.Float64bits(g) != math.Float64bits(want) {
						t.Fatalf("n %d, seed %#x, step %d: coordinate %d: kernel %v (%#x), Go %v (%#x)",
							c.n, c.seed, c.step, i, g, math.Float64bits(g), want, math.Float64bits(want))
					}
				}
			}
		})
	}
}

// noiseForTest runs k_normals for n coordinates at block step under the key seed.
func (b *Backend) noiseForTest(n int, seed, step uint64) []float64 {
	if !b.begin() {
		return nil
	}
	defer b.end()
	p := b.allocBytes(8 * n)
	if p == nil {
		return nil
	}
	b.launch("k_normals", (n+1)/2, n, int64(seed), int64(step), p)
	b.synced = true
	if err := b.drv.Sync(); err != nil {
		b.fail(err)
		return nil
	}
	return append([]float64(nil), unsafe.Slice((*float64)(p), n)...)
}
