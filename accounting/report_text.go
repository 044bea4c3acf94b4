package accounting

import (
	"fmt"
	"io"
	"math"
)

// WriteText writes the human summary of the report: ε with the setting it holds
// for, the order-2 RDP and Theorem 1's bound.
func (res *RDPReport) WriteText(w io.Writer) {
	head := fmt.Sprintf("schedule of %d segments, %d steps", len(res.Schedule), res.Steps)
	if res.Q != nil {
		if res.TargetEpsilon != nil {
			fmt.Fprintf(w, "noise multiplier sigma = %.6g reaches epsilon ≤ %g\n", *res.Sigma, *res.TargetEpsilon)
		}
		clip := res.ClipMode + " clipping"
		if res.ClipConstant != 1 {
			clip += fmt.Sprintf(": clipped norm ≤ c·C, c = %.4f, noise multiplier σ/c = %.4g", res.ClipConstant, *res.NoiseMultiplier)
		}
		head = fmt.Sprintf("q = %g, sigma = %g (%s), steps = %d", *res.Q, *res.Sigma, clip, res.Steps)
	}
	fmt.Fprintf(w, "%s: (%.4g, %g)-DP (RDP, %s adjacency, %s sampling, %s conversion, order %g)\n",
		head, res.Epsilon, res.Delta, res.Adjacency, res.Sampling, res.Conversion, res.Order)
	fmt.Fprintf(w, "order-2 RDP of the run (%s): %.6g\n", res.RDPOrder2Adjacency, res.RDPOrder2)
	res.Theorem1.writeText(w, "Theorem 1 (unbiased attacker, data in [0,1]^d): ", "  ")
}

// writeText writes Theorem 1's proven bound on one line (after head) and, on
// secondary lines (after indent), the antipodal pair's exact value and the paper's
// add-remove value, each labelled.
func (t Theorem1Report) writeText(w io.Writer, head, indent string) {
	fmt.Fprintf(w, "%sMSE ≥ %.4g (ε₂ = %.4g, replace-one, proven bound)\n", head, t.MSEBoundRDP, t.RDPOrder2)
	if t.RDPOrder2Antipodal != nil {
		fmt.Fprintf(w, "%santipodal pair, exact (not proven worst case): ε₂ = %.4g → MSE ≥ %s\n", indent, *t.RDPOrder2Antipodal, showBound(t.MSEBoundRDPAntipodal))
	} else {
		fmt.Fprintf(w, "%santipodal pair, exact: %s\n", indent, t.AntipodalNote)
	}
	fmt.Fprintf(w, "%sthe paper's add-remove ε₂ = %.4g → %.4g (not a valid Theorem 1 input; for comparison)\n", indent, t.PaperRDPOrder2, t.PaperMSEBoundRDP)
}

// showBound formats a nullable MSE bound (nil: +∞, no leakage).
func showBound(p *float64) string {
	if p == nil {
		return "+Inf (no leakage)"
	}
	return fmt.Sprintf("%.4g", *p)
}

// WriteText writes the human summary of the report: the PLD bracket and the RDP ε
// beside it.
func (res *PLDReport) WriteText(w io.Writer) {
	fmt.Fprintf(w, "q = %g, sigma = %g, steps = %d, %s, %s sampling\n", res.Q, res.Sigma, res.Steps, res.Adjacency, res.Sampling)
	fmt.Fprintf(w, "PLD: (%.4g, %g)-DP (rigorous upper bound); %.4g ≤ ε of the dominating pairs (discretisation error ≤ %.2g, interval %g)\n",
		res.Epsilon, res.Delta, res.EpsilonLower, res.DiscretisationError, res.Interval)
	if res.EpsilonRDP != nil {
		fmt.Fprintf(w, "RDP accountant, for comparison: (%.4g, %g)-DP (order %g)\n", *res.EpsilonRDP, res.Delta, *res.RDPOrder)
	} else {
		fmt.Fprintf(w, "RDP accountant, for comparison: none (%s)\n", res.RDPNote)
	}
}

// WriteText writes the human summary of the privacy report: each ε with what it
// holds for, and Theorem 1's ε₂ and bound. A nil report is a run without noise.
func (p *Report) WriteText(w io.Writer) {
	if p == nil {
		fmt.Fprintln(w, "privacy            none (σ = 0)")
		return
	}
	fmt.Fprintf(w, "privacy            ε = %.4g at δ = %g (%s accountant, %s adjacency, %s sampling", p.Epsilon, p.Delta, p.Accountant, p.Adjacency, p.Sampling)
	if p.ShuffleAccounting != "" {
		fmt.Fprintf(w, ", %s", p.ShuffleAccounting)
	}
	fmt.Fprintln(w, ")")
	if p.Adjacency == ZeroOut {
		fmt.Fprintf(w, "                   %s\n", p.AdjacencyMeaning)
	}
	if p.EpsilonPLD != nil && p.EpsilonRDP != nil {
		grid := ""
		if p.PLDInterval > DefaultPLDInterval {
			grid = fmt.Sprintf(" (loss grid %.3g: a long run, coarser than the default %g)", p.PLDInterval, DefaultPLDInterval)
		}
		fmt.Fprintf(w, "                   PLD ε ∈ [%.4g, %.4g]%s, RDP ε = %.4g (order %g)\n", *p.EpsilonPLDLower, *p.EpsilonPLD, grid, *p.EpsilonRDP, *p.EpsilonRDPOrder)
	}
	if p.PLDUnavailable != "" {
		fmt.Fprintf(w, "                   PLD not computed (%s): ε is the RDP accountant's\n", p.PLDUnavailable)
	}
	if p.EpsilonPoissonApprox != nil {
		fmt.Fprintf(w, "                   ε = %.4g if shuffled batches were Poisson-sampled (the papers' approximation, not a proven bound)\n", *p.EpsilonPoissonApprox)
	}
	p.Theorem1.writeText(w, "Theorem 1 (RDP)    ", "                   ")
}

// WriteText writes the human summary of the report: the run, its privacy report
// and κ.
func (res *DPSGDReport) WriteText(w io.Writer) {
	if res.TargetEpsilon != nil {
		fmt.Fprintf(w, "noise multiplier σ = %.6g (σ/c = %.6g) reaches ε ≤ %g\n", res.Sigma, res.NoiseMultiplier, *res.TargetEpsilon)
	}
	clip := ""
	if res.ClipConstant != 1 {
		clip = fmt.Sprintf(": clipped norm ≤ c·C, c = %.4f, noise multiplier σ/c = %.4g", res.ClipConstant, res.NoiseMultiplier)
	}
	fmt.Fprintf(w, "N = %d, B = %d (q = %.4g), T = %d, σ = %.6g, %s clipping%s\n",
		res.N, res.Batch, res.Q, res.Steps, res.Sigma, res.ClipMode, clip)
	res.Privacy.WriteText(w)
	if p := res.Privacy; p != nil && p.Kappa != nil {
		fmt.Fprintf(w, "FIL factor         κ = %.6g (ε₀ = %.4g of one step, replace-one, at δ_f = %.3g)", *p.Kappa, *p.KappaEpsilon0, res.FILDelta)
		if p.KappaPoissonApprox != nil && !math.IsNaN(*p.KappaPoissonApprox) {
			fmt.Fprintf(w, "; Poisson approximation κ = %.6g", *p.KappaPoissonApprox)
		}
		fmt.Fprintln(w)
	}
}

// WriteText writes the human summary of the report: the rigorous bound first, the
// other bounds, then the Monte Carlo check.
func (res *ReRoReport) WriteText(w io.Writer) {
	res.WriteBound(w)
	if res.GammaTradeoff != nil && res.GammaExact == nil {
		fmt.Fprintf(w, "  PLD trade-off curve: exact γ ∈ [%.6g, %.6g] (discretisation)\n", *res.GammaTradeoffLower, *res.GammaTradeoff)
	} else if res.TradeoffNote != "" {
		fmt.Fprintf(w, "  PLD trade-off curve: %s\n", res.TradeoffNote)
	}
	fmt.Fprintf(w, "  RDP-based bound: %.6g (order %g)\n", res.GammaRDP, res.RDPOrder)
	res.writeFano(w)
	if mc := res.MonteCarlo; mc != nil {
		fmt.Fprintf(w, "Monte Carlo check (Hayes et al., N = %d, seed %d): %.6g, %.0f%% CI [%.6g, %.6g]; from mixture draws %.6g\n",
			mc.Samples, res.Seed, mc.Gamma, 100*mc.Confidence, mc.GammaLow, mc.GammaHigh, mc.GammaMu)
		if mc.Warning != "" {
			fmt.Fprintf(w, "  Monte Carlo warning: %s\n", mc.Warning)
		}
	} else {
		fmt.Fprintf(w, "Monte Carlo check: skipped (%s)\n", res.MonteCarloSkipped)
	}
	if res.Warning != "" {
		fmt.Fprintf(w, "warning: %s\n", res.Warning)
	}
}

// WriteBound writes the run and its headline bound γ (what is known before the
// Monte Carlo runs).
func (res *ReRoReport) WriteBound(w io.Writer) {
	fmt.Fprintf(w, "q = %g, sigma = %g, steps = %d, kappa = %.6g\n", res.Q, res.Sigma, res.Steps, res.Kappa)
	rel := "≤"
	if res.GammaExact != nil || res.Q == 0 {
		rel = "="
	}
	fmt.Fprintf(w, "ReRo gamma %s %.6g (%s; add-remove, Poisson sampling)   advantage %.6g\n", rel, res.Gamma, res.GammaMethod, res.Advantage)
}

// WriteText writes the human summary of the report: κ and the paper's classical
// value beside it.
func (res *KappaReport) WriteText(w io.Writer) {
	fmt.Fprintf(w, "kappa = %.6g (q = %g, sigma = %g, c = %g, delta_f = %.3g; ε₀ = %.4g of one step, replace-one, analytic Gaussian mechanism)\n",
		res.Kappa, res.Q, res.Sigma, res.ClipConstant, res.DeltaF, res.Epsilon0)
	valid := "valid"
	if res.PaperEpsilon0 >= 1 {
		valid = "not valid: ≥ 1"
	}
	fmt.Fprintf(w, "the paper's classical ε₀ = %.4g (%s) would give kappa = %.6g\n", res.PaperEpsilon0, valid, res.PaperKappa)
}

// WriteText writes the human summary of the report: one line per requested bound.
func (res *MSEReport) WriteText(w io.Writer) {
	show := func(p *float64) string {
		if p == nil {
			return "+Inf (no leakage)"
		}
		return fmt.Sprintf("%.6g", *p)
	}
	if res.Eps2 != nil {
		fmt.Fprintf(w, "Theorem 1 (RDP, eps2 = %g, diameter %g): MSE ≥ %s\n", *res.Eps2, *res.Diameter, show(res.MSEBoundRDP))
	}
	if res.DFIL != nil {
		fmt.Fprintf(w, "Theorem 2 (dFIL = %g, unbiased attacker): MSE ≥ %s\n", *res.DFIL, show(res.MSEBoundFIL))
	}
	if res.PriorFisherTrace != nil {
		fmt.Fprintf(w, "van Trees (prior Fisher trace %g, d = %d): MSE ≥ %s\n", *res.PriorFisherTrace, res.D, show(res.MSEBoundVanTrees))
	}
}
