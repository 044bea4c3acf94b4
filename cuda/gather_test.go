package cuda

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/dpfil/dpfil/models"
)

// TestGatherKernelsBitExact checks k_col2im (Col2imRows writing, Col2im adding) and
// k_avgpool_back, which gather the taps covering each input pixel, bit for bit
// against a float32 reference that gathers the same taps in the same order (kernel
// row ki, then column kj, ascending) by testing every tap of the window, on
// geometries with stride 1, 2 and 3, windows larger and smaller than the stride
// (inputs no tap covers), padding on either side, mnist-cnn's two conv layers and
// pools, several samples with a row stride inN larger than the image (the gap must
// stay untouched), on the emulator and (GPU build) the stand-in or a GPU.
func TestGatherKernelsBitExact(t *testing.T) {
	convs := []models.ConvGeom{
		{InC: 2, H: 7, W: 9, KH: 3, KW: 2, Stride: 1, PadT: 1, PadB: 1, PadL: 0, PadR: 1},
		{InC: 3, H: 8, W: 8, KH: 4, KW: 4, Stride: 3, PadT: 2, PadB: 1, PadL: 1, PadR: 2},
		{InC: 2, H: 9, W: 10, KH: 2, KW: 1, Stride: 3, PadT: 0, PadB: 0, PadL: 2, PadR: 0},
		{InC: 1, H: 28, W: 28, KH: 8, KW: 8, Stride: 2, PadT: 3, PadB: 3, PadL: 3, PadR: 3},  // mnist-cnn conv1
		{InC: 16, H: 13, W: 13, KH: 4, KW: 4, Stride: 2, PadT: 0, PadB: 0, PadL: 0, PadR: 0}, // mnist-cnn conv2
	}
	pools := []models.PoolGeom{
		{C: 16, H: 14, W: 14, KH: 2, KW: 2, Stride: 1}, // mnist-cnn's pools
		{C: 3, H: 9, W: 9, KH: 3, KW: 2, Stride: 2},
		{C: 2, H: 10, W: 11, KH: 2, KW: 2, Stride: 3},
	}
	for _, drv := range testDrivers(t) {
		be, err := NewBackend(keepOpen{drv})
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(21, 22))
		same := func(name string, got, want []float32) {
			t.Helper()
			for i := range want {
				if got[i] != want[i] {
					t.Errorf("%s %s: element %d = %v, want %v (bit for bit)", drv.Name(), name, i, got[i], want[i])
					return
				}
			}
		}
		for gi, g := range convs {
			g.OutH = (g.H+g.PadT+g.PadB-g.KH)/g.Stride + 1
			g.OutW = (g.W+g.PadL+g.PadR-g.KW)/g.Stride + 1
			m, img := 3, g.InC*g.H*g.W
			inN := img + 3
			ld := m*g.HWo() + 2
			cols, old := randF32(rng, g.CKK()*ld), randF32(rng, m*inN)
			// want[r·inN + pixel]: the taps' sum over the window, in (ki, kj) order.
			gather := func(r, c, ih, iw int) float32 {
				var s float32
				for ki := 0; ki < g.KH; ki++ {
					th := ih + g.PadT - ki
					if th < 0 || th%g.Stride != 0 || th/g.Stride >= g.OutH {
						continue
					}
					for kj := 0; kj < g.KW; kj++ {
						u := iw + g.PadL - kj
						if u < 0 || u%g.Stride != 0 || u/g.Stride >= g.OutW {
							continue
						}
						row := (c*g.KH+ki)*g.KW + kj
						s += cols[row*ld+r*g.HWo()+(th/g.Stride)*g.OutW+u/g.Stride]
					}
				}
				return s
			}
			written, added := append([]float32(nil), old...), append([]float32(nil), old...)
			for r := 0; r < m; r++ {
				for c := 0; c < g.InC; c++ {
					for ih := 0; ih < g.H; ih++ {
						for iw := 0; iw < g.W; iw++ {
							s := gather(r, c, ih, iw)
							e := r*inN + (c*g.H+ih)*g.W + iw
							written[e] = 0 + s
							if r == 0 {
								added[e] = old[e] + s
							}
						}
					}
				}
			}
			name := fmt.Sprintf("conv %d (%d×%d×%d, k %d×%d, s %d)", gi, g.InC, g.H, g.W, g.KH, g.KW, g.Stride)
			dc := upF32(be, cols)
			dx := upF32(be, old)
			be.Col2imRows(g, m, dc, ld, dx, inN)
			dxa := upF32(be, old)
			be.Col2im(g, dc, ld, dxa[:img])
			if err := be.Err(); err != nil {
				t.Fatalf("%s %s: %v", drv.Name(), name, err)
			}
			same(name+" Col2imRows", dx, written)
			same(name+" Col2im", dxa, added)
		}
		for pi, g := range pools {
			g.OutH = (g.H-g.KH)/g.Stride + 1
			g.OutW = (g.W-g.KW)/g.Stride + 1
			n := 3
			dy, old := randF32(rng, n*g.C*g.OutH*g.OutW), randF32(rng, n*g.C*g.H*g.W)
			inv := 1 / float32(g.KH*g.KW)
			want := append([]float32(nil), old...)
			for sc := 0; sc < n*g.C; sc++ {
				for ih := 0; ih < g.H; ih++ {
					for iw := 0; iw < g.W; iw++ {
						var s float32
						for ki := 0; ki < g.KH; ki++ {
							th := ih - ki
							if th < 0 || th%g.Stride != 0 || th/g.Stride >= g.OutH {
								continue
							}
							for kj := 0; kj < g.KW; kj++ {
								u := iw - kj
								if u < 0 || u%g.Stride != 0 || u/g.Stride >= g.OutW {
									continue
								}
								// The conversion rounds the product (no fused multiply-add).
								s += float32(dy[(sc*g.OutH+th/g.Stride)*g.OutW+u/g.Stride] * inv)
							}
						}
						e := (sc*g.H+ih)*g.W + iw
						want[e] = old[e] + s
					}
				}
			}
			dx := upF32(be, old)
			be.AvgPoolBack(g, n, upF32(be, dy), dx)
			if err := be.Err(); err != nil {
				t.Fatalf("%s pool %d: %v", drv.Name(), pi, err)
			}
			same(fmt.Sprintf("avgpool back %d (%d×%d×%d, k %d×%d, s %d)", pi, g.C, g.H, g.W, g.KH, g.KW, g.Stride), dx, want)
		}
		be.Close()
	}
}

// randF32 returns n standard normal float32 values.
func randF32(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}

// upF32 returns device memory holding v.
func upF32(be *Backend, v []float32) []float32 {
	d := be.Alloc(len(v))
	be.Copy(d, v)
	return d
}
