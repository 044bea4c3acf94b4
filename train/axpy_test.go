package train

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/floats"
)

// TestAddScaledIsPlainAxpy: floats.AddScaled, which replaced the hand-written axpy of
// the learned noise (noise_fim.go) and of package glm (Lanczos, the inversion
// attack's gradients), gives bit for bit what the loop y[i] += α·x[i] gave (each
// product rounded, then the sum: no fused multiply-add), at any length and
// alignment. (floats.Dot, which replaced the hand-written dot, sums in another
// order: its results are checked to tolerance here by TestLearnedNoiseAlgebra and
// TestLearnedNoiseFILMatchesMonteCarlo, and in glm against dense SVDs and finite
// differences, e.g. TestPerExampleMatchesDenseSVD and TestInvertJacobianFD.)
func TestAddScaledIsPlainAxpy(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for n := 0; n <= 37; n++ {
		for off := 0; off < 2; off++ {
			x, y := make([]float64, n+off), make([]float64, n+off)
			for i := range x {
				x[i], y[i] = rng.NormFloat64()*1e3, rng.NormFloat64()
			}
			alpha := rng.NormFloat64() / 3
			want := make([]float64, n)
			for i := range want {
				want[i] = y[off+i] + alpha*x[off+i]
			}
			floats.AddScaled(y[off:], alpha, x[off:])
			for i, w := range want {
				if math.Float64bits(y[off+i]) != math.Float64bits(w) {
					t.Fatalf("n=%d offset %d: element %d is %v, the loop gives %v", n, off, i, y[off+i], w)
				}
			}
		}
	}
}
