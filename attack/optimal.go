package attack

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"
)

// optimalMaxK is the largest prior for which a trial measures OptimalSuccess: the
// Gram matrix costs K²P/2 multiply-adds per step, against ≈ 6P per sample for the
// |D₋| + K per-sample gradients, so beyond a few dozen candidates it would dominate
// the trial.
const optimalMaxK = 32

// optimalDraws is the number of Monte Carlo noise draws, over all candidates, of a
// trial's OptimalSuccess: a standard error ≤ 0.5/√optimalDraws ≈ 0.0011 per trial.
const optimalDraws = 200000

// OptimalSuccess is the expected success of the best possible prior-aware attack
// on one trial's trajectory: the Bayes decision (App. G's likelihood test at q = 1)
// for a target uniform over K candidates whose C-normalised clipped gradients,
// summed over the steps as vectors in R^{T·P}, have Gram matrix gram (K×K,
// row-major and symmetric: gram[i·K+j] = Σ_t ⟨clip(∇ℓ(θ_t, z_i)),
// clip(∇ℓ(θ_t, z_j))⟩/C²), under noise σ per coordinate. With the target i the test's score of candidate j is
// gram[i,j] − gram[j,j]/2 + w_j, w ~ N(0, σ²·gram), so the success
// (1/K) Σ_i P[argmax_j score_j = i] is estimated from draws noise draws per candidate
// (the trajectory held at the one observed; the ReRo bound γ holds for every
// trajectory).
//
// OptimalSuccess is what the attack could reach on these gradients: below γ when
// the candidates' gradients are shorter than C or correlated, and, for K > 2, below
// γ even when they are not (ten orthogonal norm-C gradients: OrthogonalSuccess).
func OptimalSuccess(gram []float64, K int, sigma float64, draws int, rng *rand.Rand) (float64, error) {
	if K < 2 || len(gram) != K*K {
		return 0, fmt.Errorf("optimal success: Gram matrix of %d values for K = %d", len(gram), K)
	}
	if !(sigma > 0) || math.IsInf(sigma, 0) || draws < 1 {
		return 0, fmt.Errorf("optimal success: need σ > 0 and draws ≥ 1; got %v, %d", sigma, draws)
	}
	for i, v := range gram {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, errors.New("optimal success: Gram matrix is not finite")
		}
		if w := gram[(i%K)*K+i/K]; math.Abs(v-w) > 1e-9*(math.Abs(v)+math.Abs(w)) {
			return 0, fmt.Errorf("optimal success: Gram matrix is not symmetric at (%d, %d)", i/K, i%K)
		}
	}
	// w = σ·V·√Λ·z with gram = V Λ Vᵀ (negative round-off eigenvalues set to 0).
	var eig mat.EigenSym
	if !eig.Factorize(mat.NewSymDense(K, gram), true) {
		return 0, errors.New("optimal success: eigendecomposition of the Gram matrix failed")
	}
	lam := eig.Values(nil)
	var v mat.Dense
	eig.VectorsTo(&v)
	l := make([]float64, K*K) // row j: σ·V[j,:]·√Λ
	for j := 0; j < K; j++ {
		for k := 0; k < K; k++ {
			l[j*K+k] = sigma * v.At(j, k) * math.Sqrt(math.Max(lam[k], 0))
		}
	}
	z := make([]float64, K)
	hits := 0
	for i := 0; i < K; i++ {
		for d := 0; d < draws; d++ {
			for k := range z {
				z[k] = rng.NormFloat64()
			}
			best, arg := math.Inf(-1), -1
			for j := 0; j < K; j++ {
				s := gram[i*K+j] - gram[j*K+j]/2
				for k, zk := range z {
					s += l[j*K+k] * zk
				}
				if s > best {
					best, arg = s, j
				}
			}
			if arg == i {
				hits++
			}
		}
	}
	return float64(hits) / float64(K*draws), nil
}
