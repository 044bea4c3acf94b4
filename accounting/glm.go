package accounting

import (
	"fmt"
	"math"
)

// Accounting for output-perturbed GLMs (Guo, Karrer, Chaudhuri & van der Maaten
// 2022, "Bounding training data reconstruction in private (deep) learning",
// Sec. 7.1): w̃ = w* + N(0, σ²I) with w* = argmin Σ ω_i ℓ(wᵀx̃_i, y_i) + (nλ/2)‖w‖².
// The objective is nλ-strongly convex, so replacing one example moves w* by at most
// Δ = 2·ω_max·G/(nλ), G a bound on ‖∇_wℓ‖ = |ℓ'|·‖x̃‖ ≤ L·R at the minimiser. The
// Gaussian mechanism with sensitivity Δ is (α, αΔ²/(2σ²))-RDP, so at order 2
// ε₂ = Δ²/σ².
//
// Guo et al. (2022, Sec. 7.1) state ε = 2/(nλσ) for this mechanism; that expression
// is linear in 1/σ and ignores R, so it is not the order-2 RDP (it is GLMPaperEps2,
// reported only for comparison).

// LogisticDerivBound is the bound L = sup|ℓ'| = sup|s(a) − y| = 1 of the logistic loss.
const LogisticDerivBound = 1.0

// LeastSquaresDerivBound bounds |ℓ'(w*ᵀx̃, y)| = |w*ᵀx̃ − t| (targets t = ±1) at the
// minimiser of any dataset of rel.N examples with ‖x̃‖ ≤ rel.R and weights summing to
// weightSum, for the objective with rel.Lambda: F(w*) ≤ F(0) = weightSum/2 gives
// ‖w*‖ ≤ √(weightSum/(nλ)), so L = 1 + R·√(weightSum/(nλ)) (= 1 + R/√λ without
// weights). rel.DerivBound and rel.Sigma are not used.
func (rel GLMRelease) LeastSquaresDerivBound(weightSum float64) (float64, error) {
	if err := checkGLM(rel.R, rel.Lambda, rel.N); err != nil {
		return 0, err
	}
	if !(weightSum > 0) || math.IsInf(weightSum, 0) {
		return 0, fmt.Errorf("least-squares derivative bound: weight sum must be positive and finite, got %v", weightSum)
	}
	return 1 + rel.R*math.Sqrt(weightSum/(float64(rel.N)*rel.Lambda)), nil
}

func checkGLM(r, lambda float64, n int) error {
	if !(r > 0) || math.IsInf(r, 0) {
		return fmt.Errorf("GLM accounting: input norm bound R must be positive and finite, got %v", r)
	}
	if !(lambda > 0) || math.IsInf(lambda, 0) {
		return fmt.Errorf("GLM accounting: lambda must be positive and finite, got %v", lambda)
	}
	if n <= 0 {
		return fmt.Errorf("GLM accounting: n must be positive, got %d", n)
	}
	return nil
}

// Sensitivity returns Δ = 2·ω_max·L·R/(nλ), the L2 sensitivity (replace-one) of the
// regularised minimiser for inputs with ‖x̃‖ ≤ rel.R and loss derivative
// |ℓ'| ≤ rel.DerivBound (LogisticDerivBound, or LeastSquaresDerivBound), ω_max =
// rel.MaxWeight (0 means 1). For the logistic loss without weights Δ = 2R/(nλ).
func (rel GLMRelease) Sensitivity() (float64, error) {
	if err := checkGLM(rel.R, rel.Lambda, rel.N); err != nil {
		return 0, err
	}
	if !(rel.DerivBound > 0) || math.IsInf(rel.DerivBound, 0) {
		return 0, fmt.Errorf("GLM sensitivity: derivative bound must be positive and finite, got %v", rel.DerivBound)
	}
	maxWeight := rel.MaxWeight
	if maxWeight == 0 {
		maxWeight = 1
	}
	if !(maxWeight > 0) || math.IsInf(maxWeight, 0) {
		return 0, fmt.Errorf("GLM sensitivity: max weight must be positive and finite, got %v", rel.MaxWeight)
	}
	return 2 * maxWeight * rel.DerivBound * rel.R / (float64(rel.N) * rel.Lambda), nil
}

// GaussianRDP is the RDP of the Gaussian mechanism with L2 sensitivity delta and noise
// standard deviation sigma at order alpha > 1: αΔ²/(2σ²).
func GaussianRDP(alpha, delta, sigma float64) (float64, error) {
	if !(alpha > 1) || math.IsInf(alpha, 0) {
		return 0, fmt.Errorf("Gaussian RDP: order must be finite and > 1, got %v", alpha)
	}
	if !(delta >= 0) || math.IsInf(delta, 0) {
		return 0, fmt.Errorf("Gaussian RDP: sensitivity must be finite and ≥ 0, got %v", delta)
	}
	if !(sigma > 0) || math.IsInf(sigma, 0) {
		return 0, fmt.Errorf("Gaussian RDP: sigma must be positive and finite, got %v", sigma)
	}
	return alpha * delta * delta / (2 * sigma * sigma), nil
}

// GLMEps2 returns ε₂ = Δ²/σ², the order-2 RDP of output perturbation.
func GLMEps2(delta, sigma float64) (float64, error) { return GaussianRDP(2, delta, sigma) }

// GLMPaperEps2 is Guo et al.'s stated value 2/(nλσ) (2022, Sec. 7.1, "ε = 1.58").
// It is NOT the order-2 RDP of output perturbation (see GLMEps2); it is provided only
// to compare with the paper.
func GLMPaperEps2(n int, lambda, sigma float64) (float64, error) {
	if n <= 0 || !(lambda > 0) || !(sigma > 0) || math.IsInf(lambda, 0) || math.IsInf(sigma, 0) {
		return 0, fmt.Errorf("paper GLM epsilon: need n, λ, σ positive and finite, got %d, %v, %v", n, lambda, sigma)
	}
	return 2 / (float64(n) * lambda * sigma), nil
}

// GLMAccount bundles the order-2 RDP accounting of one output-perturbed GLM release.
type GLMAccount struct {
	R           float64 `json:"r"`             // input norm bound used (incl. bias)
	DerivBound  float64 `json:"deriv_bound"`   // L, bound on |ℓ'|
	Sensitivity float64 `json:"sensitivity"`   // Δ
	Eps2        float64 `json:"eps2"`          // Δ²/σ²
	MSEBoundRDP float64 `json:"mse_bound_rdp"` // 1/(4(e^{ε₂} − 1)) on [0,1]^d
	Eps2Paper   float64 `json:"eps2_paper"`    // 2/(nλσ), the paper's (incorrect) value
}

// GLMRelease is one output-perturbed GLM release, as AccountGLM needs it.
type GLMRelease struct {
	DerivBound float64 // L ≥ sup|ℓ'| at the minimiser (LogisticDerivBound, LeastSquaresDerivBound)
	R          float64 // input norm bound ‖x̃‖ ≤ R, bias feature included
	N          int     // number of examples n
	Lambda     float64 // λ of the objective Σ ω_i ℓ_i + (nλ/2)‖w‖²
	MaxWeight  float64 // largest example weight ω_max (0 means 1: no weights)
	Sigma      float64 // output-perturbation noise σ
}

// AccountGLM computes the order-2 RDP accounting of the release.
func AccountGLM(rel GLMRelease) (GLMAccount, error) {
	delta, err := rel.Sensitivity()
	if err != nil {
		return GLMAccount{}, err
	}
	eps2, err := GLMEps2(delta, rel.Sigma)
	if err != nil {
		return GLMAccount{}, err
	}
	paper, err := GLMPaperEps2(rel.N, rel.Lambda, rel.Sigma)
	if err != nil {
		return GLMAccount{}, err
	}
	return GLMAccount{R: rel.R, DerivBound: rel.DerivBound, Sensitivity: delta, Eps2: eps2,
		MSEBoundRDP: MSEBoundRDP(eps2), Eps2Paper: paper}, nil
}
