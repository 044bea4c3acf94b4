package accounting

import (
	"fmt"
	"math"
)

// ReRo from the trade-off curve (Kaissis, Hayes, Ziller, Rueckert 2023: the
// hypothesis-testing view of Hayes et al.'s ReRo; docs/accounting.md, "ReRo from the
// trade-off curve").
//
// Hayes et al.'s bound γ = sup{P_μ(E) : P_ν(E) ≤ κ}, with ν = N(0, σ²I_T) and μ the
// T-fold product of (1−q)N(0, σ²) + qN(1, σ²), is the power at level κ of the
// Neyman–Pearson test of ν against μ: one minus the trade-off function of (μ, ν) at
// κ. For every event E and every ε, P_μ(E) − e^ε·P_ν(E) ≤ H_{e^ε}(μ‖ν) = δ(ε), so
// γ ≤ e^ε·κ + δ(ε); the infimum over ε is attained (convex conjugacy of the
// trade-off curve and the hockey-stick curve) and equals γ. With the pessimistic PLD
// of (μ, ν), whose δ(ε) lies above the true one, the infimum is a rigorous upper
// bound; as a function of e^ε that δ is piecewise linear with kinks at the grid
// points, so the infimum is a minimum over the grid, computed exactly.

// ReRoTradeoffResult is the ReRo bound from the PLD of the run.
type ReRoTradeoffResult struct {
	// Gamma is a rigorous upper bound on γ: min over the grid of e^ε·κ + δ(ε) with the
	// pessimistic δ, capped at 1.
	Gamma float64 `json:"gamma"`
	// GammaLower is a rigorous lower bound on γ: the Neyman–Pearson power at level κ
	// of the optimistic distribution (a post-processing of (μ, ν)).
	GammaLower float64 `json:"gamma_lower"`
	// Epsilon is the ε at which e^ε·κ + δ(ε) is smallest.
	Epsilon   float64 `json:"epsilon"`
	Advantage float64 `json:"advantage"` // (Gamma − κ)/(1 − κ)
	Kappa     float64 `json:"kappa"`
	Q         float64 `json:"q"`
	Sigma     float64 `json:"sigma"`
	Steps     int     `json:"steps"`
	// Adjacency and Sampling name the setting of the bound: Hayes et al.'s, a record
	// added to (μ) or absent from (ν) a Poisson-sampled run.
	Adjacency Adjacency `json:"adjacency"`
	Sampling  Sampling  `json:"sampling"`
	Interval  float64   `json:"interval"`
}

// ReRoRun is a DP-SGD run for a ReRo bound: Steps steps with Poisson rate Q and noise
// multiplier Sigma, against an attacker whose guess from the prior succeeds with
// probability Kappa.
type ReRoRun struct {
	Q, Sigma float64
	Steps    int
	Kappa    float64
}

// ReRoTradeoff bounds Hayes et al.'s ReRo γ for run.Steps steps of DP-SGD with
// Poisson rate run.Q and noise multiplier run.Sigma at baseline success probability
// run.Kappa, from the
// privacy-loss distribution of the remove direction (μ = mixture, ν = N(0, σ²I_T)):
// GammaLower ≤ γ ≤ Gamma, with no sampling error. q = 1 gives the closed form
// Φ(√T/σ − Φ⁻¹(1 − κ)) (to the discretisation error), q = 0 or no steps gives κ.
func ReRoTradeoff(run ReRoRun, cfg *PLDConfig) (ReRoTradeoffResult, error) {
	q, sigma, steps, kappa := run.Q, run.Sigma, run.Steps, run.Kappa
	if err := checkQSigma(q, sigma); err != nil {
		return ReRoTradeoffResult{}, err
	}
	if err := checkSteps(steps); err != nil {
		return ReRoTradeoffResult{}, err
	}
	if err := checkKappaReRo(kappa); err != nil {
		return ReRoTradeoffResult{}, err
	}
	c, err := cfg.resolved()
	if err != nil {
		return ReRoTradeoffResult{}, err
	}
	res := ReRoTradeoffResult{Kappa: kappa, Q: q, Sigma: sigma, Steps: steps,
		Adjacency: AddRemove, Sampling: SamplingPoisson, Interval: c.Interval}
	if kappa == 1 {
		res.Gamma, res.GammaLower = 1, 1
		return res, nil
	}
	dirs, err := composeSteps(AddRemove, []PLDStep{{Mechanism: PLDPoissonGaussian, Q: q, Sigma: sigma, Steps: steps}}, c, true)
	if err != nil {
		return ReRoTradeoffResult{}, fmt.Errorf("ReRo trade-off: %w", err)
	}
	d := dirs[0]
	res.Gamma, res.Epsilon = d.pess.conjugate(c.Interval, kappa)
	res.GammaLower = math.Max(kappa, d.opt.npPower(c.Interval, kappa)-d.opt.excess)
	res.GammaLower = math.Min(res.GammaLower, res.Gamma)
	res.Advantage = Advantage(res.Gamma, kappa)
	return res, nil
}

// conjugate returns min over ε of e^ε·κ + δ(ε) (capped at 1) and the minimising ε.
// δ(e^ε) is piecewise linear in e^ε with kinks at the grid points, so the minimum is
// at a grid point or in the limit ε → −∞ (value: the total mass).
func (d pmf) conjugate(h, kappa float64) (gamma, eps float64) {
	best, bestEps := 1.0, math.Inf(-1)
	A, Bs := d.inf, 0.0 // as in epsilon: δ(l_j) = A − Bs over the points above j
	eh := math.Exp(-h)
	logK := math.Log(kappa)
	for j := len(d.p) - 1; j >= 0; j-- {
		l := float64(d.lo+j) * h
		if l+logK < 0 { // else e^l·κ ≥ 1
			if v := kappa*math.Exp(l) + A - Bs; v < best {
				best, bestEps = v, l
			}
		}
		A += d.p[j]
		Bs += d.p[j]
		Bs *= eh
	}
	if A < best {
		best, bestEps = A, math.Inf(-1)
	}
	best = math.Min(1, math.Max(best, kappa))
	if math.IsInf(bestEps, -1) {
		bestEps = float64(d.lo) * h
	}
	return best, bestEps
}

// npPower is the power at level kappa of the Neyman–Pearson test for the pair whose
// loss distribution (under P) is d: reject the largest losses first, each point of P-
// mass p at loss l carrying Q-mass p·e^{−l}, the last one in part.
func (d pmf) npPower(h, kappa float64) float64 {
	power, qm := d.inf, 0.0
	for j := len(d.p) - 1; j >= 0; j-- {
		if d.p[j] <= 0 {
			continue
		}
		l := float64(d.lo+j) * h
		qj := d.p[j] * math.Exp(-l)
		if qm+qj <= kappa {
			power += d.p[j]
			qm += qj
			continue
		}
		power += d.p[j] * (kappa - qm) / qj
		break
	}
	return math.Min(1, power)
}
