package accounting

import (
	"fmt"
	"math"
)

// Order-2 Rényi divergence bounds for Theorem 1 of Guo et al.
//
// Theorem 1 (MSE ≥ 1/(4(e^{ε₂} − 1)) on [0,1]^d) needs ε₂ = a bound on the order-2
// Rényi divergence between the runs on D ∪ {z} and D ∪ {z′}: replace-one adjacency.
// Noise multipliers below are relative to the per-record sensitivity 1 (a clipped
// gradient has norm ≤ 1 in units of the clip bound; callers with smooth clipping pass
// σ/c). Derivations: docs/accounting.md, "Order-2 RDP under replace-one".

// Order2StepRDP returns an upper bound on the order-2 RDP of one DP-SGD step with
// sampling rate q and noise multiplier sigma, under the given adjacency and sampling:
//
//   - add-remove, Poisson: exact (Mironov, Talwar, Zhang 2019): log(1 + q²(e^{1/σ²} − 1)).
//   - replace-one, Poisson: log(1 + q²·min{S/(1−q), (1−q)S + qE, E/q}) with
//     S = 4 sinh(1/σ²), E = e^{4/σ²} − 1, a proven bound (docs/accounting.md), equal to
//     the exact value at q = 1 and, for σ ≳ 1, within a few per cent of the antipodal
//     pair's exact value at small q.
//   - replace-one, uniform (fixed-size subset without replacement, q = B/N):
//     log(1 + q²(e^{4/σ²} − 1)), the order-2 divergence of the dominating pair
//     (qN(2, σ²) + (1−q)N(0, σ²), N(0, σ²)) of Zhu, Dong & Wang (AISTATS 2022).
//
// Shuffled batches have no per-step bound (use shuffleEpochOrder2 per epoch); uniform
// sampling under add-remove is not defined (the dataset size would change).
func Order2StepRDP(adj Adjacency, s Sampling, q, sigma float64) (float64, error) {
	if err := checkQSigma(q, sigma); err != nil {
		return 0, err
	}
	if q == 0 {
		return 0, nil
	}
	x := 1 / (sigma * sigma)
	switch {
	case adj == AddRemove && s == SamplingPoisson:
		return SampledGaussianRDP(q, sigma, 2)
	case adj == ReplaceOne && s == SamplingPoisson:
		// χ² = q²∫(A−B)²/Q ≤ q²·min{S/(1−q), (1−q)S + qE, E/q}, S = 4 sinh x,
		// E = e^{4x} − 1 (three bounds on 1/Q), in log space.
		logS := math.Log(2) + x + math.Log(-math.Expm1(-2*x)) // log(4 sinh x)
		logE := 4*x + math.Log(-math.Expm1(-4*x))             // log(e^{4x} − 1)
		t := logE - math.Log(q)
		if q < 1 {
			t = math.Min(t, logS-math.Log1p(-q))
			t = math.Min(t, logAdd(math.Log1p(-q)+logS, math.Log(q)+logE))
		}
		return log1pExp(2*math.Log(q) + t), nil
	case adj == ReplaceOne && s == SamplingUniform:
		return SampledGaussianRDP(q, sigma/2, 2)
	case s == SamplingShuffle:
		return 0, fmt.Errorf("order-2 RDP: shuffled batches have no per-step bound; account them per epoch (shuffleEpochOrder2)")
	case adj == AddRemove && s == SamplingUniform:
		return 0, fmt.Errorf("order-2 RDP: uniform (fixed-size, without replacement) sampling is accounted under replace-one adjacency only")
	}
	return 0, fmt.Errorf("order-2 RDP: unknown adjacency %v or sampling %v", adj, s)
}

// shuffleEpochOrder2 is the order-2 RDP of one epoch of shuffled batches that claims
// no amplification: each record enters at most one batch per epoch, so an epoch is at
// most one Gaussian release of it, with sensitivity 1 (add-remove, read as the batches
// staying fixed and z's gradient removed) or 2 (replace-one): Δ²/σ².
func shuffleEpochOrder2(adj Adjacency, sigma float64) (float64, error) {
	if err := checkQSigma(1, sigma); err != nil {
		return 0, err
	}
	return GaussianRDP(2, adj.sensitivity(), sigma)
}

// sensitivity is the per-record L2 sensitivity of a clipped-gradient sum (norm ≤ 1).
func (a Adjacency) sensitivity() float64 {
	if a == ReplaceOne {
		return 2
	}
	return 1
}

// log1pExp returns log(1 + e^x) without overflow.
func log1pExp(x float64) float64 {
	if x > 35 {
		return x + math.Exp(-x)
	}
	return math.Log1p(math.Exp(x))
}
