package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dpfil/dpfil/models"
)

// testConvGeoms returns the conv geometries of the bit-exact layout tests, OutH and
// OutW set: strides 1, 2 and 3, windows 1×1 to 8×8 (square and not, larger and
// smaller than the stride: inputs no tap covers), padding on either side, a window as
// large as the padded input, and mnist-cnn's two conv layers.
func testConvGeoms() []models.ConvGeom {
	convs := []models.ConvGeom{
		{InC: 2, H: 7, W: 9, KH: 3, KW: 2, Stride: 1, PadT: 1, PadB: 1, PadL: 0, PadR: 1},
		{InC: 3, H: 8, W: 8, KH: 4, KW: 4, Stride: 3, PadT: 2, PadB: 1, PadL: 1, PadR: 2},
		{InC: 2, H: 9, W: 10, KH: 2, KW: 1, Stride: 3, PadT: 0, PadB: 0, PadL: 2, PadR: 0},
		{InC: 1, H: 28, W: 28, KH: 8, KW: 8, Stride: 2, PadT: 3, PadB: 3, PadL: 3, PadR: 3},  // mnist-cnn conv1
		{InC: 16, H: 13, W: 13, KH: 4, KW: 4, Stride: 2, PadT: 0, PadB: 0, PadL: 0, PadR: 0}, // mnist-cnn conv2
		{InC: 5, H: 6, W: 5, KH: 1, KW: 1, Stride: 1},
		{InC: 3, H: 11, W: 12, KH: 5, KW: 7, Stride: 2, PadT: 2, PadB: 2, PadL: 3, PadR: 1},
		{InC: 2, H: 4, W: 5, KH: 6, KW: 7, Stride: 1, PadT: 1, PadB: 1, PadL: 1, PadR: 1},
	}
	for i := range convs {
		g := &convs[i]
		g.OutH = (g.H+g.PadT+g.PadB-g.KH)/g.Stride + 1
		g.OutW = (g.W+g.PadL+g.PadR-g.KW)/g.Stride + 1
	}
	return convs
}

// TestGatherKernelsBitExact checks k_col2im (Col2imRows writing, Col2im adding) and
// k_avgpool_back, which gather the taps covering each input pixel, bit for bit
// against a float32 reference that gathers the same taps in the same order (kernel
// row ki, then column kj, ascending) by testing every tap of the window, on
// testConvGeoms and three pools, several samples with a row stride inN larger than
// the image (the gap must stay untouched), on the emulator and (GPU build) the
// stand-in or a GPU.
func TestGatherKernelsBitExact(t *testing.T) {
	convs := testConvGeoms()
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

// TestIm2colBitExact checks k_im2col (Im2colRows, Im2col, and the launch with 1 to
// more than InC·KH kernel rows per thread) bit for bit against a plain copy loop on
// testConvGeoms: three samples with a row stride inN larger than the image and a
// patch row stride ld larger than 3·HWo, whose gap, like the columns of the samples
// not written, must keep its old values; on the emulator and (GPU build) the stand-in
// or a GPU.
func TestIm2colBitExact(t *testing.T) {
	for _, drv := range testDrivers(t) {
		be, err := NewBackend(keepOpen{drv})
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(23, 24))
		for gi, g := range testConvGeoms() {
			m, img, hwo, ckk := 3, g.InC*g.H*g.W, g.HWo(), g.CKK()
			inN, ld := img+3, m*g.HWo()+5
			x, old := randF32(rng, m*inN), randF32(rng, ckk*ld)
			// want: samples 0 … rows−1's patches over old.
			want := func(rows int) []float32 {
				w := append([]float32(nil), old...)
				for r := 0; r < rows; r++ {
					for c := 0; c < g.InC; c++ {
						for ki := 0; ki < g.KH; ki++ {
							for kj := 0; kj < g.KW; kj++ {
								row := (c*g.KH+ki)*g.KW + kj
								for oh := 0; oh < g.OutH; oh++ {
									for ow := 0; ow < g.OutW; ow++ {
										ih, iw := oh*g.Stride-g.PadT+ki, ow*g.Stride-g.PadL+kj
										var v float32
										if ih >= 0 && ih < g.H && iw >= 0 && iw < g.W {
											v = x[r*inN+(c*g.H+ih)*g.W+iw]
										}
										w[row*ld+r*hwo+oh*g.OutW+ow] = v
									}
								}
							}
						}
					}
				}
				return w
			}
			wantRows, wantOne := want(m), want(1)
			name := fmt.Sprintf("conv %d (%d×%d×%d, k %d×%d, s %d)", gi, g.InC, g.H, g.W, g.KH, g.KW, g.Stride)
			check := func(what string, got, want []float32) {
				t.Helper()
				if err := be.Err(); err != nil {
					t.Fatalf("%s %s %s: %v", drv.Name(), name, what, err)
				}
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Errorf("%s %s %s: element %d (patch row %d, column %d) = %v, want %v (bit for bit)",
							drv.Name(), name, what, i, i/ld, i%ld, got[i], want[i])
						return
					}
				}
			}
			dx := upF32(be, x)
			cols := upF32(be, old)
			be.Im2colRows(g, m, dx, inN, cols, ld)
			check("Im2colRows", cols, wantRows)
			cols = upF32(be, old)
			be.Im2col(g, dx[:img], cols, ld)
			check("Im2col", cols, wantOne)
			kr := g.InC * g.KH
			for _, krpt := range []int{1, 2, kr - 1, kr, kr + 3} {
				if krpt < 1 {
					continue
				}
				cols = upF32(be, old)
				be.im2colRows(g, m, dx, inN, cols, ld, krpt)
				check(fmt.Sprintf("%d kernel rows per thread", krpt), cols, wantRows)
			}
		}
		be.Close()
	}
}

// TestIm2colSplit checks k_im2col's split: nb groups of krpt kernel rows cover the kr
// kernel rows with less than one group to spare, about im2colValuesPerThread values a
// thread (at least one kernel row), the index space nb·n fits 2³¹ − 1 (krpt grows
// only when it must), and columns beyond 32 bits are an error.
func TestIm2colSplit(t *testing.T) {
	for _, tc := range []struct{ n, kr, kw, nb, krpt int }{
		{117600, 8, 8, 4, 2},               // mnist-cnn conv1, B = 600
		{15000, 64, 4, 16, 4},              // mnist-cnn conv2
		{5, 3, 1, 1, 3},                    // fewer values than im2colValuesPerThread
		{7, 17, 3, 3, 6},                   // a partial last group
		{7, 5, 20, 5, 1},                   // kernel rows longer than im2colValuesPerThread
		{1 << 30, 64, 4, 1, 64},            // only one group fits
		{1 << 28, 400, 1, 7, 58},           // 7 groups fit
		{math.MaxInt32, 5, 2, 1, 5},        // the largest n
		{math.MaxInt32 / 9, 100, 4, 9, 12}, // 9 groups fit
	} {
		nb, krpt, err := im2colSplit(tc.n, tc.kr, tc.kw)
		if err != nil || nb != tc.nb || krpt != tc.krpt {
			t.Errorf("im2colSplit(%d, %d, %d) = %d, %d, %v, want %d, %d", tc.n, tc.kr, tc.kw, nb, krpt, err, tc.nb, tc.krpt)
		}
		if nb*krpt < tc.kr || (nb-1)*krpt >= tc.kr || nb*tc.n > math.MaxInt32 {
			t.Errorf("im2colSplit(%d, %d, %d) = %d, %d: groups do not cover the rows once or exceed 2³¹ − 1 threads", tc.n, tc.kr, tc.kw, nb, krpt)
		}
	}
	if nb, _, err := im2colSplit(0, 16, 4); err != nil || nb != 0 {
		t.Errorf("im2colSplit(0, 16, 4) = %d, %v, want no launch", nb, err)
	}
	if _, _, err := im2colSplit(math.MaxInt32+1, 16, 4); err == nil {
		t.Error("im2colSplit(2³¹, 16, 4): no error")
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
