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
