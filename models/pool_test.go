package models

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestAvgPoolBackGatherBitIdentical checks the 2×2 stride-1 gather form of
// AvgPoolBack bit for bit against the plain scatter loop (the adjoint written out),
// adding into a non-zero dx, for small and odd sizes.
func TestAvgPoolBackGatherBitIdentical(t *testing.T) {
	be := &cpuBackend[float32]{workers: 1}
	for _, hw := range [][2]int{{2, 2}, {2, 5}, {3, 3}, {5, 4}, {14, 14}, {13, 7}} {
		g := PoolGeom{C: 3, H: hw[0], W: hw[1], KH: 2, KW: 2, Stride: 1, OutH: hw[0] - 1, OutW: hw[1] - 1}
		const n = 2
		rng := rand.New(rand.NewPCG(uint64(hw[0]), uint64(hw[1])))
		dy := make([]float32, n*g.C*g.OutH*g.OutW)
		for i := range dy {
			dy[i] = rng.Float32() - 0.5
		}
		got, want := make([]float32, n*g.C*g.H*g.W), make([]float32, n*g.C*g.H*g.W)
		for i := range got {
			got[i] = rng.Float32() - 0.5
			want[i] = got[i]
		}
		be.AvgPoolBack(g, n, dy, got)
		inv := float32(0.25)
		for sc := 0; sc < n*g.C; sc++ {
			for oh := 0; oh < g.OutH; oh++ {
				for kh := 0; kh < 2; kh++ {
					for kw := 0; kw < 2; kw++ {
						for ow := 0; ow < g.OutW; ow++ {
							want[sc*g.H*g.W+(oh+kh)*g.W+ow+kw] += dy[sc*g.OutH*g.OutW+oh*g.OutW+ow] * inv
						}
					}
				}
			}
		}
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%dx%d: dx[%d] = %v, scatter loop %v", g.H, g.W, i, got[i], want[i])
			}
		}
	}
}

// TestAvgPool2s2BitIdentical checks the AVX kernels of 2×2 stride-2 average pooling
// (forward and the added adjoint) bit for bit against the general loops, on row
// lengths with and without full blocks of 8 and odd input sizes (a last row or
// column that no window reads), with ±0 among the values (the forward sums from +0).
func TestAvgPool2s2BitIdentical(t *testing.T) {
	if !hasAVX2FMA() {
		t.Skip("no AVX2/FMA: the kernels do not run on this CPU")
	}
	fast := &cpuBackend[float32]{workers: 1, sg: &packedSgemm{}}
	for _, hw := range [][2]int{{2, 2}, {4, 16}, {5, 17}, {8, 8}, {16, 16}, {32, 32}, {6, 38}, {33, 35}} {
		g := PoolGeom{C: 3, H: hw[0], W: hw[1], KH: 2, KW: 2, Stride: 2, OutH: (hw[0]-2)/2 + 1, OutW: (hw[1]-2)/2 + 1}
		const n = 2
		rng := rand.New(rand.NewPCG(uint64(hw[0]), uint64(hw[1])))
		val := func() float32 {
			switch rng.IntN(8) {
			case 0:
				return float32(math.Copysign(0, -1))
			case 1:
				return 0
			}
			return rng.Float32() - 0.5
		}
		x := make([]float32, n*g.C*g.H*g.W)
		for i := range x {
			x[i] = val()
		}
		dy := make([]float32, n*g.C*g.OutH*g.OutW)
		for i := range dy {
			dy[i] = val()
		}
		// the general loops: a backend without the packed GEMM (sg nil)
		slow := &cpuBackend[float32]{workers: 1}
		yf, ys := make([]float32, len(dy)), make([]float32, len(dy))
		fast.AvgPool(g, n, x, yf)
		slow.AvgPool(g, n, x, ys)
		dxf, dxs := make([]float32, len(x)), make([]float32, len(x))
		for i := range dxf {
			dxf[i] = val()
			dxs[i] = dxf[i]
		}
		fast.AvgPoolBack(g, n, dy, dxf)
		slow.AvgPoolBack(g, n, dy, dxs)
		for i := range yf {
			if math.Float32bits(yf[i]) != math.Float32bits(ys[i]) {
				t.Fatalf("%dx%d: y[%d] = %v, general loop %v", g.H, g.W, i, yf[i], ys[i])
			}
		}
		for i := range dxf {
			if math.Float32bits(dxf[i]) != math.Float32bits(dxs[i]) {
				t.Fatalf("%dx%d: dx[%d] = %v, general loop %v", g.H, g.W, i, dxf[i], dxs[i])
			}
		}
	}
}
