package accounting

import (
	"fmt"
	"math"
)

// GaussianDelta returns the exact δ(ε) of the Gaussian mechanism whose L2 sensitivity
// is mu times the noise standard deviation (Balle & Wang 2018, Theorem 8):
//
//	δ(ε) = Φ(μ/2 − ε/μ) − e^ε·Φ(−μ/2 − ε/μ).
//
// It holds for every ε ≥ 0 and μ > 0 (no ε < 1 condition) and is the tight
// hockey-stick divergence H_{e^ε}(N(μ, 1) ‖ N(0, 1)).
func GaussianDelta(mu, eps float64) (float64, error) {
	if !(mu > 0) || math.IsInf(mu, 0) {
		return 0, fmt.Errorf("Gaussian δ(ε): sensitivity/noise ratio μ = %v must be finite and > 0", mu)
	}
	if !(eps >= 0) || math.IsInf(eps, 0) {
		return 0, fmt.Errorf("Gaussian δ(ε): ε = %v must be finite and ≥ 0", eps)
	}
	return gaussianDelta(mu, eps), nil
}

func gaussianDelta(mu, eps float64) float64 {
	a := mu/2 - eps/mu
	b := -mu/2 - eps/mu
	pa := 0.5 * math.Erfc(-a/math.Sqrt2)
	// e^ε Φ(b) in log space: Φ(b) can underflow while e^ε overflows.
	lb := math.Log(0.5) + logErfc(-b/math.Sqrt2)
	d := pa - math.Exp(eps+lb)
	if d < 0 {
		return 0
	}
	return d
}

// GaussianEpsilon returns the smallest ε ≥ 0 with δ(ε) ≤ delta for the Gaussian
// mechanism with sensitivity/noise ratio mu: the analytic Gaussian mechanism of Balle
// & Wang (2018), valid for every σ (the classical ε = μ·√(2 ln(1.25/δ)) needs ε < 1).
// It is found by bisection to a relative tolerance of 1e-12 and rounded up, so
// δ(ε) ≤ delta holds for the returned ε.
func GaussianEpsilon(mu, delta float64) (float64, error) {
	if !(mu > 0) || math.IsInf(mu, 0) {
		return 0, fmt.Errorf("analytic Gaussian ε: sensitivity/noise ratio μ = %v must be finite and > 0", mu)
	}
	if err := checkDelta(delta); err != nil {
		return 0, err
	}
	if gaussianDelta(mu, 0) <= delta {
		return 0, nil
	}
	lo, hi := 0.0, math.Max(1, mu*mu)
	for gaussianDelta(mu, hi) > delta {
		lo, hi = hi, 2*hi
		if hi > 1e6 {
			return 0, fmt.Errorf("analytic Gaussian ε: no ε ≤ 1e6 reaches δ = %v at μ = %v", delta, mu)
		}
	}
	for i := 0; i < 200 && hi-lo > 1e-12*hi; i++ {
		mid := 0.5 * (lo + hi)
		if gaussianDelta(mu, mid) > delta {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi, nil
}
