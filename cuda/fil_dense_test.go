package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestFILDotSqDenseShapes checks FILDotSqDense (k_fil_dense_terms, then
// k_fil_dense) against a float64 reference that forms each row's gradient tangent
// (δ̇ ⊗ a + δ ⊗ ȧ, δ̇) explicitly, over shapes that exercise how the kernels split the
// work: inputs and outputs fewer than, equal to and more than the stripes (several
// inputs and outputs per stripe, idle stripes), one and several samples and
// directions, stripes 32, 40 and 101 (mnist-cnn's), dense and one-hot input tangents
// (hot inputs beyond the stripes, a zero row), the layer starting the reduction
// (first, over partial sums a previous reduction left) and continuing one, with host
// (managed) and device (plain) memory, on the emulator and (GPU build) the stand-in
// or a GPU. The tolerance is double rounding: 1e-12 of the sum of the terms' absolute
// values.
func TestFILDotSqDenseShapes(t *testing.T) {
	cases := []struct {
		inN, outN, cs, kc, P int // P sets the stripes (stripesFor)
	}{
		{inN: 7, outN: 3, cs: 2, kc: 3, P: 400},            // S = 32: inN, outN < S
		{inN: 32, outN: 32, cs: 1, kc: 1, P: 2200},         // S = 32: = S
		{inN: 100, outN: 45, cs: 3, kc: 5, P: 10240},       // S = 40: outN > S
		{inN: 512, outN: 32, cs: 2, kc: 50, P: 26010},      // S = 101: mnist-cnn's first dense layer
		{inN: 33, outN: 130, cs: 4, kc: 2, P: 8192},        // S = 32: 5 outputs per stripe
		{inN: 784, outN: 10, cs: 3, kc: 4, P: 7850 + 1000}, // S = 34: mlp's first layer shape
	}
	for ci, c := range cases {
		stripes := stripesFor(c.P)
		rows := c.cs * c.kc
		off := 5 // the layer before: one tensor (0, off)
		wOff, bOff := off, off+c.outN*c.inN
		if bOff+c.outN > c.P {
			t.Fatalf("case %d: P = %d too small", ci, c.P)
		}
		rng := rand.New(rand.NewPCG(uint64(ci)+11, 12))
		gv := randVec(rng, c.cs*c.P)
		a, ta := randVec(rng, c.cs*c.inN), randVec(rng, rows*c.inN)
		D, tD := randVec(rng, c.cs*c.outN), randVec(rng, rows*c.outN)
		prev := randVec(rng, rows*off)
		val := randVec(rng, rows)
		idx := make([]int, rows)
		for r := range idx {
			idx[r] = rng.IntN(c.inN)
		}
		idx[rows/2] = -1
		for _, sparse := range []bool{false, true} {
			for _, first := range []bool{true, false} {
				// The reference, and the scale of its terms.
				wgd, wdd := make([]float64, rows), make([]float64, rows)
				sgd, sdd := make([]float64, rows), make([]float64, rows)
				for r := 0; r < rows; r++ {
					s := r / c.kc
					if !first {
						for i := 0; i < off; i++ {
							v := prev[r*off+i]
							wgd[r] += gv[s*c.P+i] * v
							wdd[r] += v * v
							sgd[r] += math.Abs(gv[s*c.P+i] * v)
							sdd[r] += v * v
						}
					}
					for o := 0; o < c.outN; o++ {
						dt, d := tD[r*c.outN+o], D[s*c.outN+o]
						for i := 0; i < c.inN; i++ {
							ai := ta[r*c.inN+i]
							if sparse {
								ai = 0
								if idx[r] == i {
									ai = val[r]
								}
							}
							x, y := dt*a[s*c.inN+i], d*ai
							gw := gv[s*c.P+wOff+o*c.inN+i]
							wgd[r] += gw * (x + y)
							wdd[r] += (x + y) * (x + y)
							sgd[r] += math.Abs(gw*x) + math.Abs(gw*y)
							sdd[r] += (math.Abs(x) + math.Abs(y)) * (math.Abs(x) + math.Abs(y))
						}
						gb := gv[s*c.P+bOff+o]
						wgd[r] += gb * dt
						wdd[r] += dt * dt
						sgd[r] += math.Abs(gb * dt)
						sdd[r] += dt * dt
					}
				}
				for _, drv := range testDrivers(t) {
					for _, plain := range []bool{false, true} {
						name := fmt.Sprintf("%s case %d (inN %d, outN %d, cs %d, kc %d, S %d) sparse=%v first=%v plain=%v",
							drv.Name(), ci, c.inN, c.outN, c.cs, c.kc, stripes, sparse, first, plain)
						be, up := openUploader(t, drv, plain)
						g32 := up(gv)
						// A reduction begun by the layer before; when the dense layer
						// starts it (first), what that left must be ignored.
						be.FILDotSqLayer(g32, c.P, up(prev), c.cs, c.kc, []int{0, off}, true)
						var ta32, val32 []float32
						var ix []int
						if sparse {
							ix, val32 = idx, up(val)
						} else {
							ta32 = up(ta)
						}
						be.FILDotSqDense(g32, c.P, c.cs, c.kc, c.inN, c.outN, wOff, bOff, up(a), ta32, ix, val32, up(D), up(tD), first)
						gd, dd := make([]float64, rows), make([]float64, rows)
						if plain {
							dgd, ddd := be.AllocFloat64(rows), be.AllocFloat64(rows)
							be.FILDotSqEnd(c.cs, c.kc, dgd, ddd)
							be.CopyFloat64(gd, dgd)
							be.CopyFloat64(dd, ddd)
						} else {
							be.FILDotSqEnd(c.cs, c.kc, gd, dd)
						}
						if err := be.Err(); err != nil {
							t.Fatalf("%s: %v", name, err)
						}
						for r := 0; r < rows; r++ {
							if math.Abs(gd[r]-wgd[r]) > 1e-12*sgd[r] || math.Abs(dd[r]-wdd[r]) > 1e-12*sdd[r] {
								t.Errorf("%s row %d: (%v, %v), want (%v, %v)", name, r, gd[r], dd[r], wgd[r], wdd[r])
							}
						}
						be.Close()
					}
				}
			}
		}
	}
}
