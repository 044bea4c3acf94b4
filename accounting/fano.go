package accounting

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
)

// This file holds the Fano bound of Guo, Sablayrolles and Sanjabi (2022b, "Analyzing
// privacy leakage in machine learning via multiple hypothesis testing: a lesson from
// Fano"), as Hayes, Mahloujifar and Balle (2023, App. H, eq. (5) and Table 2) state
// and use it: an adversary who must name which of the K points of a uniform prior π
// was trained on, seeing the output w, errs with probability at least the smallest
// t ∈ [0, 1] with
//
//	f(t) = H(π) − I(π; w) + t log t + (1 − t) log(1 − t) − t log(K − 1) ≤ 0,
//
// so its success probability is at most 1 − t. Any upper bound on the mutual
// information I(π; w) gives a valid bound on success.

// FanoSuccessBound is the Fano upper bound on the probability of identifying the
// training point among a uniform prior of priorSize ≥ 2 points, given an upper bound
// mutualInfo ≥ 0 (nats) on I(π; w): 1 − t with t the smallest root of f above
// (f decreases on [0, (K−1)/K] from log K − I to −I, so the root is found by
// bisection to machine precision). I ≥ log K gives 1 (no bound).
func FanoSuccessBound(priorSize int, mutualInfo float64) (float64, error) {
	if priorSize < 2 {
		return 0, fmt.Errorf("Fano bound: prior size %d must be ≥ 2", priorSize)
	}
	if math.IsNaN(mutualInfo) || mutualInfo < 0 {
		return 0, fmt.Errorf("Fano bound: mutual information %v must be ≥ 0", mutualInfo)
	}
	k := float64(priorSize)
	if mutualInfo == 0 { // the root (K−1)/K is a double one, where bisection is slow
		return 1 / k, nil
	}
	f := func(t float64) float64 { return math.Log(k) - mutualInfo - binaryEntropy(t) - t*math.Log(k-1) }
	if f(0) <= 0 {
		return 1, nil
	}
	lo, hi := 0.0, (k-1)/k // f(lo) > 0 ≥ f(hi) = −I
	for i := 0; i < 200 && hi-lo > 1e-16; i++ {
		m := 0.5 * (lo + hi)
		if f(m) <= 0 {
			hi = m
		} else {
			lo = m
		}
	}
	return 1 - hi, nil
}

// binaryEntropy is −t log t − (1 − t) log(1 − t) in nats (0 at t ∈ {0, 1}).
func binaryEntropy(t float64) float64 {
	h := 0.0
	if t > 0 {
		h -= t * math.Log(t)
	}
	if t < 1 {
		h -= (1 - t) * math.Log1p(-t)
	}
	return h
}

// FanoPairwiseMI is Guo et al.'s closed-form bound on the mutual information between
// a uniform prior of priorSize points and the output of a mechanism whose output
// distributions P_i, P_j for any two prior points have KL(P_i‖P_j) ≤ pairKL:
// I(π; w) ≤ −log(1/K + (1 − 1/K)·e^{−pairKL}). For the Gaussian mechanism with
// sensitivity Δ and noise σ, pairKL = Δ²/(2σ²).
func FanoPairwiseMI(priorSize int, pairKL float64) (float64, error) {
	if priorSize < 1 {
		return 0, fmt.Errorf("Fano pairwise bound: prior size %d must be ≥ 1", priorSize)
	}
	if math.IsNaN(pairKL) || pairKL < 0 {
		return 0, fmt.Errorf("Fano pairwise bound: pairwise KL %v must be ≥ 0", pairKL)
	}
	p := 1 / float64(priorSize)
	return -math.Log(p + (1-p)*math.Exp(-pairKL)), nil
}

// SampledGaussianKL is the Kullback–Leibler divergence KL(μ‖ν) of one step of the
// sampled Gaussian mechanism (sensitivity 1, Poisson rate q, noise multiplier σ):
// μ = (1 − q)·N(0, σ²) + q·N(1, σ²), ν = N(0, σ²), i.e. the Rényi divergence of order
// 1 (the α → 1 limit of SampledGaussianRDP). It is computed as
// (1 − q)·E_{N(0,σ²)}[log r] + q·E_{N(1,σ²)}[log r], r = 1 − q + q·e^{(2x−1)/(2σ²)},
// by composite Simpson quadrature over ±14 standard deviations around both means;
// q = 1 gives 1/(2σ²) exactly and q = 0 gives 0.
func SampledGaussianKL(q, sigma float64) (float64, error) {
	if err := checkQSigma(q, sigma); err != nil {
		return 0, fmt.Errorf("sampled Gaussian KL: %w", err)
	}
	switch q {
	case 0:
		return 0, nil
	case 1:
		return 1 / (2 * sigma * sigma), nil
	}
	lq, l1q := math.Log(q), math.Log1p(-q)
	logR := func(x float64) float64 { // log(1 − q + q e^a), stably
		a := lq + (2*x-1)/(2*sigma*sigma)
		m := math.Max(a, l1q)
		return m + math.Log(math.Exp(a-m)+math.Exp(l1q-m))
	}
	// E_{N(m, σ²)}[log r] by Simpson's rule in the standard variable u.
	expect := func(mean float64) float64 {
		const lim, n = 14.0, 8000 // n even
		h := 2 * lim / n
		s := 0.0
		for i := 0; i <= n; i++ {
			u := -lim + float64(i)*h
			w := 2.0
			switch {
			case i == 0 || i == n:
				w = 1
			case i%2 == 1:
				w = 4
			}
			s += w * math.Exp(-0.5*u*u) * logR(mean+sigma*u)
		}
		return s * h / 3 / math.Sqrt(2*math.Pi)
	}
	kl := (1-q)*expect(0) + q*expect(1)
	return math.Max(kl, 0), nil
}

// FanoBound is the Fano bound of a DP-SGD run beside ReRo: an upper bound on the
// probability that any adversary names the trained point among a uniform prior of
// PriorSize points, from an upper bound on the mutual information between the prior
// and everything the run releases.
type FanoBound struct {
	PriorSize int `json:"prior_size"`
	// MutualInfo is the bound on I(π; w) in nats that the bound uses: the smaller of
	// MutualInfoKL and MutualInfoPairwise.
	MutualInfo float64 `json:"mutual_info"`
	// MutualInfoKL = T·KL(μ‖ν) of the sampled Gaussian step (SampledGaussianKL): the
	// run's divergence from the run without the target, an upper bound on I since
	// I(π; w) = min_Q E_i KL(P_i‖Q).
	MutualInfoKL float64 `json:"mutual_info_kl"`
	// MutualInfoPairwise is Guo et al.'s closed form (FanoPairwiseMI) with the pairwise
	// divergence of two targets' runs, KL(P_i‖P_j) ≤ T·q·Δ²/(2σ²) with Δ = 2 (two
	// clipped gradients of norm ≤ 1; joint convexity of KL in the sampling mixture).
	MutualInfoPairwise float64 `json:"mutual_info_pairwise"`
	Success            float64 `json:"success"`   // upper bound on the success probability
	Advantage          float64 `json:"advantage"` // (Success − 1/K)/(1 − 1/K), Hayes et al.'s eq. (4)
	// Holds says what the bound holds for.
	Holds string `json:"holds"`
}

// fanoHolds is FanoBound.Holds.
const fanoHolds = "uniform prior of K points, the target's clipped gradient of norm ≤ C and noise σ·C in every step, Poisson sampling at rate q, add-remove of the target to a known D₋ (the ReRo threat model); KL composes over adaptive steps"

// FanoDPSGD is the Fano bound of T = steps steps of DP-SGD at Poisson rate q and noise
// multiplier sigma against a uniform prior of priorSize points.
func FanoDPSGD(q, sigma float64, steps, priorSize int) (*FanoBound, error) {
	if err := checkQSigma(q, sigma); err != nil {
		return nil, fmt.Errorf("Fano bound: %w", err)
	}
	if steps < 1 {
		return nil, fmt.Errorf("Fano bound: number of steps %d must be ≥ 1", steps)
	}
	if priorSize < 2 {
		return nil, fmt.Errorf("Fano bound: prior size %d must be ≥ 2", priorSize)
	}
	kl, err := SampledGaussianKL(q, sigma)
	if err != nil {
		return nil, fmt.Errorf("Fano bound: %w", err)
	}
	b := &FanoBound{PriorSize: priorSize, MutualInfoKL: float64(steps) * kl, Holds: fanoHolds}
	if b.MutualInfoPairwise, err = FanoPairwiseMI(priorSize, float64(steps)*q*2/(sigma*sigma)); err != nil {
		return nil, fmt.Errorf("Fano bound: %w", err)
	}
	b.MutualInfo = math.Min(b.MutualInfoKL, b.MutualInfoPairwise)
	if b.Success, err = FanoSuccessBound(priorSize, b.MutualInfo); err != nil {
		return nil, err
	}
	b.Advantage = Advantage(b.Success, 1/float64(priorSize))
	return b, nil
}

// FanoPriorSize is the uniform prior size K with κ = 1/K, or 0 when 1/κ is not an
// integer ≥ 2 (the Fano bound is then not computed).
func FanoPriorSize(kappa float64) int {
	if !(kappa > 0 && kappa <= 0.5) {
		return 0
	}
	k := math.Round(1 / kappa)
	if k > math.MaxInt32 || math.Abs(k*kappa-1) > 1e-9 {
		return 0
	}
	return int(k)
}

// OrthonormalMutualInfoMC is a Monte Carlo estimate of the mutual information
// I(π; w) (nats) between a uniform prior of K points and one release of the Gaussian
// mechanism w = e_i + N(0, σ²I_K) whose K means e_i are orthonormal (pairwise distance
// √2): the setting of Hayes et al.'s Table 2 "Guo et al. (MC)" rows (one step, q = 1,
// unit clipped gradients orthogonal to each other). By symmetry
// I = log K − E[log Σ_j e^{(⟨w, e_j⟩ − ⟨w, e_1⟩)/σ²}] with w = e_1 + σZ; it returns the
// estimate and its standard error from n draws.
func OrthonormalMutualInfoMC(priorSize int, sigma float64, n int, seed uint64) (mi, stderr float64, err error) {
	if priorSize < 2 || !(sigma > 0) || math.IsInf(sigma, 0) || n < 2 {
		return 0, 0, fmt.Errorf("orthonormal mutual information: need K ≥ 2, finite σ > 0, n ≥ 2; got %d, %v, %d", priorSize, sigma, n)
	}
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	s2 := sigma * sigma
	var sum, sumSq float64
	for range n {
		z1 := rng.NormFloat64()
		acc := 1.0 // the j = 1 term
		for j := 1; j < priorSize; j++ {
			acc += math.Exp((-1 + sigma*(rng.NormFloat64()-z1)) / s2)
		}
		l := math.Log(acc)
		sum += l
		sumSq += l * l
	}
	mean := sum / float64(n)
	v := math.Max(sumSq/float64(n)-mean*mean, 0) * float64(n) / float64(n-1)
	return math.Log(float64(priorSize)) - mean, math.Sqrt(v / float64(n)), nil
}

// WriteText writes the bound in one line, indented as a sub-item of the ReRo report.
func (b *FanoBound) WriteText(w io.Writer) {
	fmt.Fprintf(w, "  Fano bound (Guo et al. 2022b, uniform prior K = %d): success ≤ %.6g, advantage ≤ %.6g; I(π; w) ≤ %.6g nats (T·KL to the run without the target %.6g, pairwise closed form %.6g)\n",
		b.PriorSize, b.Success, b.Advantage, b.MutualInfo, b.MutualInfoKL, b.MutualInfoPairwise)
}

// writeFano writes the report's Fano bound, or why there is none.
func (res *ReRoReport) writeFano(w io.Writer) {
	if res.Fano != nil {
		res.Fano.WriteText(w)
	} else if res.FanoNote != "" {
		fmt.Fprintf(w, "  Fano bound: %s\n", res.FanoNote)
	}
}
