package attack

import (
	"fmt"
	"math"

	"github.com/dpfil/dpfil/accounting"
)

// Bounds are the privacy guarantee of a game's DP-SGD run and the ReRo upper bounds on
// any attack's success probability with a uniform prior of size K (κ = 1/K).
type Bounds struct {
	// Epsilon is the (ε, δ)-DP of the T released gradients as train reports it
	// (accounting.EpsilonOf: the tighter of the PLD and RDP accountants), under
	// Adjacency (add-remove) with Poisson sampling at rate q (q = 1: every record in
	// every batch); Accountant names the one that gave it.
	Epsilon    float64 `json:"epsilon"`
	Delta      float64 `json:"delta"`
	Accountant string  `json:"accountant,omitempty"`
	Adjacency  string  `json:"adjacency,omitempty"`
	Sampling   string  `json:"sampling,omitempty"`
	Sigma      float64 `json:"sigma"`
	Kappa      float64 `json:"kappa"`
	// Gamma is the Hayes et al. ReRo bound: the q = 1 closed form
	// Φ(√T/σ − Φ⁻¹(1−κ)), or the Monte Carlo blow-up estimate for q < 1 (GammaCI
	// its confidence interval; equal to Gamma for the closed form).
	Gamma    float64    `json:"gamma"`
	GammaCI  [2]float64 `json:"gamma_ci"`
	GammaMC  float64    `json:"gamma_mc"`  // the Monte Carlo estimate (also at q = 1, as a check)
	GammaRDP float64    `json:"gamma_rdp"` // min_α (κ e^{ε_α})^{(α−1)/α}
	Exact    bool       `json:"gamma_exact"`
	// Fano is the Fano bound (Guo et al. 2022b) on the success probability for the
	// uniform prior of K points, beside ReRo (nil at σ = 0).
	Fano *accounting.FanoBound `json:"fano,omitempty"`
}

// BoundsRequest names the run ComputeBounds bounds: T = Steps steps of DP-SGD at
// sampling rate Q and noise multiplier Sigma, δ = Delta, a uniform prior of size
// PriorSize, and the Monte Carlo size (Samples; 0 = 10⁶) and seed of the ReRo estimate.
type BoundsRequest struct {
	Q, Sigma         float64
	Steps, PriorSize int
	Delta            float64
	Samples          int
	Seed             uint64
}

// ComputeBounds returns ε and the ReRo bounds of Hayes, Mahloujifar and Balle (2023)
// Sec. 3.2–3.3 (the q = 1 closed form, the Monte Carlo blow-up estimate for q < 1, and the
// RDP-based bound) for the request.
func ComputeBounds(req BoundsRequest) (Bounds, error) {
	q, sigma, steps, priorSize, delta, samples, seed := req.Q, req.Sigma, req.Steps, req.PriorSize, req.Delta, req.Samples, req.Seed
	if priorSize < 2 {
		return Bounds{}, fmt.Errorf("bounds: prior size %d < 2", priorSize)
	}
	b := Bounds{Delta: delta, Sigma: sigma, Kappa: 1 / float64(priorSize)}
	if sigma == 0 {
		b.Epsilon, b.Gamma, b.GammaMC, b.GammaRDP, b.GammaCI, b.Exact = math.Inf(1), 1, 1, 1, [2]float64{1, 1}, true
		return b, nil
	}
	e, err := gameEpsilon(q, sigma, steps, delta)
	if err != nil {
		return Bounds{}, fmt.Errorf("bounds: ε: %w", err)
	}
	b.Epsilon, b.Accountant, b.Adjacency, b.Sampling = e.Epsilon, e.Accountant, e.Adjacency.String(), e.Sampling
	r, err := accounting.ReRoMonteCarlo(accounting.ReRoConfig{Q: q, Sigma: sigma, Steps: steps, Kappa: b.Kappa, Samples: samples, Seed: seed})
	if err != nil {
		return Bounds{}, fmt.Errorf("bounds: ReRo: %w", err)
	}
	if b.Fano, err = accounting.FanoDPSGD(q, sigma, steps, priorSize); err != nil {
		return Bounds{}, fmt.Errorf("bounds: %w", err)
	}
	b.GammaMC, b.GammaRDP = r.GammaNu, r.GammaRDP
	b.Gamma, b.GammaCI = r.Gamma, [2]float64{r.GammaLow, r.GammaHigh}
	if r.GammaExact != nil {
		b.Gamma, b.GammaCI, b.Exact = *r.GammaExact, [2]float64{*r.GammaExact, *r.GammaExact}, true
	}
	return b, nil
}

// OrthogonalSuccess is the success probability of the prior-aware attack in the
// idealised full-batch game where every candidate's clipped gradient has norm exactly
// C and is orthogonal to the others' at every step: the target's normalised score is
// N(T, Tσ²) and the K − 1 others' are independent N(0, Tσ²), so success =
// ∫ φ(z) Φ(z + √T/σ)^{K−1} dz. It is the natural reference for the attack (the ReRo
// bound γ is a bound for the best attack, which this K-way identification does not
// reach): K = 2 gives Φ(√T/(σ√2)).
func OrthogonalSuccess(sigma float64, steps, priorSize int) (float64, error) {
	if !(sigma > 0) || math.IsInf(sigma, 0) || steps < 1 || priorSize < 2 {
		return 0, fmt.Errorf("orthogonal success: need σ > 0, T ≥ 1, K ≥ 2; got %v, %d, %d", sigma, steps, priorSize)
	}
	mu := math.Sqrt(float64(steps)) / sigma
	const lo, hi, n = -12.0, 12.0, 12000
	h := (hi - lo) / n
	s := 0.0
	for i := 0; i <= n; i++ {
		z := lo + float64(i)*h
		w := h
		if i == 0 || i == n {
			w = h / 2
		}
		phi := math.Exp(-z*z/2) / math.Sqrt(2*math.Pi)
		s += w * phi * math.Pow(0.5*math.Erfc(-(z+mu)/math.Sqrt2), float64(priorSize-1))
	}
	return math.Min(1, s), nil
}

// gameLedger is the privacy ledger of the game's releases: steps Poisson-sampled
// Gaussian steps at rate q with noise multiplier nm (hard clipping, so σ/c = σ).
func gameLedger(q, nm float64, steps int) (accounting.Ledger, error) {
	var l accounting.Ledger
	err := l.Add(accounting.PoissonSampledEvent{Q: q, Event: accounting.GaussianEvent{NoiseMultiplier: nm}}, steps)
	return l, err
}

// gameReportOptions are the accounting options of the game: δ, the default
// accountant (auto: the tighter of the PLD and RDP, as train reports) and the
// sampling's default adjacency (add-remove).
func gameReportOptions(delta float64) accounting.ReportOptions {
	return accounting.ReportOptions{Delta: delta, Accountant: accounting.AccountantAuto}
}

// gameEpsilon is ε at delta of the game at (q, σ, T), computed as train's report
// computes it.
func gameEpsilon(q, sigma float64, steps int, delta float64) (accounting.EpsilonBound, error) {
	l, err := gameLedger(q, sigma, steps)
	if err != nil {
		return accounting.EpsilonBound{}, err
	}
	return accounting.EpsilonOf(l, gameReportOptions(delta))
}

// CalibrateSigma is the smallest noise multiplier σ (to a relative 1e-4) whose ε
// at delta (gameEpsilon) is at most target for steps Poisson-sampled steps at
// rate q: accounting.CalibrateNoise, the calibration train's target_epsilon uses.
func CalibrateSigma(q float64, steps int, delta, target float64) (float64, error) {
	return accounting.CalibrateNoise(func(nm float64) (accounting.Ledger, error) { return gameLedger(q, nm, steps) },
		gameReportOptions(delta), target)
}
