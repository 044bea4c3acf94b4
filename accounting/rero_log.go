package accounting

import (
	"fmt"
	"math"
)

// logNormalTail is log Q(z), Q(z) = 1 − Φ(z) = P(N(0,1) > z), for any finite z: from
// math.Erfc where that is accurate (z < 30), else from the asymptotic series of the
// Mills ratio, Q(z) = φ(z)/z · (1 − 1/z² + 3/z⁴ − 15/z⁶ + 105/z⁸ − 945/z¹⁰), whose
// next term is below 1e-12 relative at z ≥ 30.
func logNormalTail(z float64) float64 {
	if z < 30 {
		return math.Log(0.5 * math.Erfc(z/math.Sqrt2))
	}
	u := 1 / (z * z)
	series := 1 + u*(-1+u*(3+u*(-15+u*(105-945*u))))
	return -z*z/2 - math.Log(z) - 0.5*math.Log(2*math.Pi) + math.Log(series)
}

// upperQuantileLog returns z with log Q(z) = logP, for logP ≤ log ½ (any size: κ far
// below the smallest float64, e.g. Hayes et al.'s 0.25⁷⁸⁴ ≈ 1e-472, is given by its
// logarithm). Newton's method on log Q, whose derivative is −φ(z)/Q(z).
func upperQuantileLog(logP float64) (float64, error) {
	if math.IsNaN(logP) || logP > math.Log(0.5)+1e-15 {
		return 0, fmt.Errorf("tail probability log p = %v: want log p ≤ log ½", logP)
	}
	if math.IsInf(logP, -1) {
		return math.Inf(1), nil
	}
	z := math.Sqrt(-2 * logP)
	for range 100 {
		lq := logNormalTail(z)
		lphi := -z*z/2 - 0.5*math.Log(2*math.Pi)
		step := (lq - logP) / math.Exp(lphi-lq) // f/(−f') with f = log Q − log p
		z += step
		if z < 0 {
			z = 0
		}
		if math.Abs(step) <= 1e-14*math.Max(1, z) {
			return z, nil
		}
	}
	return z, nil
}

// ReRoClosedFormLog is ReRoClosedForm for a baseline κ given by its logarithm, which
// may lie far below the smallest float64 (Hayes et al. App. I: κ = (2δ)^{dρ} for
// ℓ∞-ball reconstruction of d pixels), and returns log γ, γ = Φ(√T/σ − Φ⁻¹(1 − κ)),
// itself possibly far below the smallest float64.
func ReRoClosedFormLog(sigma float64, steps int, logKappa float64) (float64, error) {
	if err := checkQSigma(1, sigma); err != nil {
		return 0, err
	}
	if steps < 0 {
		return 0, fmt.Errorf("number of steps %d must be ≥ 0", steps)
	}
	if math.IsNaN(logKappa) || logKappa > 0 {
		return 0, fmt.Errorf("baseline success probability log kappa = %v must be ≤ 0", logKappa)
	}
	if logKappa == 0 {
		return 0, nil
	}
	var z float64
	if logKappa > math.Log(0.5) { // κ > ½: Φ⁻¹(1 − κ) < 0
		z = math.Sqrt2 * math.Erfinv(1-2*math.Exp(logKappa))
	} else {
		var err error
		if z, err = upperQuantileLog(logKappa); err != nil {
			return 0, err
		}
	}
	// log Φ(x) = log Q(−x)
	return logNormalTail(z - math.Sqrt(float64(steps))/sigma), nil
}

// ReRoRDPLog is ReRoRDP for log κ (any size), returning log γ (capped at 0):
// log γ = min over orders of (α − 1)/α · (log κ + ε_α).
func ReRoRDPLog(q, sigma float64, steps int, logKappa float64, orders []float64) (float64, error) {
	if math.IsNaN(logKappa) || logKappa > 0 {
		return 0, fmt.Errorf("baseline success probability log kappa = %v must be ≤ 0", logKappa)
	}
	if steps < 0 {
		return 0, fmt.Errorf("number of steps %d must be ≥ 0", steps)
	}
	r := NewRDP(orders)
	if err := r.Compose(q, sigma, steps); err != nil {
		return 0, err
	}
	best := math.Inf(1)
	for k, a := range r.Orders {
		best = math.Min(best, (a-1)/a*(logKappa+r.Values[k]))
	}
	return math.Min(0, best), nil
}
