package attack

import (
	"fmt"
	"io"
	"strings"
)

// WriteText writes the report as a human-readable summary.
func (r *GameReport) WriteText(w io.Writer) {
	model := r.Model
	if r.Hidden > 0 {
		model = fmt.Sprintf("%s (hidden width %d)", r.Model, r.Hidden)
	}
	if r.Inputs == InputsSymmetric {
		model += " (inputs 2x − 1)"
	}
	fmt.Fprintf(w, "attack game: %s on %s, |D₋| = %d, K = %d, T = %d, q = %g, C = %g, lr = %g\n",
		model, r.Dataset, r.Known, r.PriorSize, r.Steps, r.Q, r.Clip, r.LR)
	if t := r.LRTuning; t != nil {
		fmt.Fprintf(w, "lr tuning:   chose lr = %g by mean %s over %d tuning trials each:\n", t.Chosen, t.Criterion, t.Trials)
		for _, c := range t.Candidates {
			if c.Diverged {
				fmt.Fprintf(w, "  lr %-8g diverged\n", c.LR)
				continue
			}
			fmt.Fprintf(w, "  lr %-8g accuracy %.4f  loss %.4f  clipped norm %.4g (%.1f %% clipped)\n", c.LR, c.TestAccuracy, c.FinalLoss, c.ClippedNorm, 100*c.ClippedFraction)
		}
	}
	if r.PriorKind == PriorUniform {
		fmt.Fprintf(w, "prior:       uniform noise on [½ − h, ½ + h], h = %.4f (the data's mean pairwise distance), random labels\n", r.NoiseHalfWidth)
	}
	fmt.Fprintf(w, "privacy:     σ = %.4g, (ε, δ) = (%.4g, %g)", r.Sigma, r.Epsilon, r.Delta)
	if r.Accountant != "" {
		fmt.Fprintf(w, " by %s, %s, %s sampling", r.Accountant, r.Adjacency, r.Sampling)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "bounds:      ReRo γ = %.4f", r.Gamma)
	if r.GammaExact {
		fmt.Fprint(w, " (q = 1 closed form)")
	} else {
		fmt.Fprintf(w, " (Monte Carlo, 95 %% CI [%.4f, %.4f])", r.GammaCI[0], r.GammaCI[1])
	}
	fmt.Fprintf(w, ", RDP-ReRo γ = %.4f, prior κ = %.4f\n", r.GammaRDP, r.Kappa)
	if r.Fano != nil {
		fmt.Fprintf(w, "             Fano bound (Guo et al. 2022b) on success %.4f, I(π; w) ≤ %.4g nats\n", r.Fano.Success, r.Fano.MutualInfo)
	}
	if r.SuccessOrthogonal != nil {
		fmt.Fprintf(w, "reference:   prior-aware success with orthogonal clipped gradients %.4f\n", *r.SuccessOrthogonal)
	}
	if r.OptimalSuccess != nil {
		fmt.Fprintf(w, "reference:   best possible prior-aware success on these trials' gradients %.4f\n", *r.OptimalSuccess)
	}
	for _, a := range sortedKeys(r.Attacks) {
		s := r.Attacks[a]
		mark := ""
		if a == r.Attack {
			mark = "  ←"
		}
		fmt.Fprintf(w, "  %-11s success %.4f  95 %% CI [%.4f, %.4f]  (%d/%d)%s\n", a, s.Rate, s.CI[0], s.CI[1], s.Successes, s.Trials, mark)
	}
	if r.GradientMSE != nil {
		fmt.Fprintf(w, "gradient attack mean MSE %.4f", *r.GradientMSE)
		if r.ReconstructionsPNG != "" {
			fmt.Fprintf(w, " (targets and reconstructions: %s)", r.ReconstructionsPNG)
		}
		fmt.Fprintln(w)
	}
	if len(r.Linf) > 0 {
		fmt.Fprintf(w, "without a prior (Hayes et al. App. I): success when a fraction ρ of the pixels is within δ = %.4f\n", r.Linf[0].Delta)
		fmt.Fprintf(w, "  %-5s %-8s %-17s | %-22s %-14s | %-14s %-14s %-14s %s\n", "ρ", "success", "95% CI", "data: κ ≥ (fixed guess)", "log10 γ", "uniform: log10 κ", "log10 γ ReRo", "log10 γ RDP", "(paper's log10 κ)")
		for _, p := range r.Linf {
			g, gd := "—", "—"
			if p.Log10Gamma != nil {
				g = fmt.Sprintf("%.4g", *p.Log10Gamma)
			}
			if p.Log10GammaData != nil {
				gd = fmt.Sprintf("%.4g", *p.Log10GammaData)
			}
			fmt.Fprintf(w, "  %-5.2g %-8.4f [%.4f, %.4f] | %-22s %-14s | %-16.4g %-14s %-14.4g (%.4g)\n", p.Rho, p.Rate, p.CI[0], p.CI[1],
				fmt.Sprintf("%.4f (%s)", p.KappaData, p.KappaDataGuess), gd, p.Log10Kappa, g, p.Log10GammaRDP, p.Log10KappaPaper)
		}
		fmt.Fprintln(w, "  (the uniform-prior columns hold for targets uniform on [0,1]^d, as the paper assumes; for the game's data targets only the data columns do)")
	}
	fmt.Fprintf(w, "final training loss %.4f", r.FinalLoss)
	if r.TestAccuracy != nil {
		fmt.Fprintf(w, ", test accuracy %.4f", *r.TestAccuracy)
	}
	fmt.Fprintf(w, ", mean prior gradient cosine %.3f, %.1f s\n", r.PriorCosine, r.WallSeconds)
	fmt.Fprintf(w, "clipping:    mean clipped gradient norm of the candidates %.4g (C = %g), %.1f %% of their gradients clipped\n",
		r.ClippedNorm, r.Clip, 100*r.ClippedFraction)
}

// WriteText writes one line per swept value and the files written.
func (sr *SweepReport) WriteText(w io.Writer) {
	fmt.Fprintf(w, "%-8s %-11s %-8s %-19s %-8s %-8s %-8s %-8s %-8s %-8s\n", sr.Sweep, "attack", "success", "95% CI", "gamma", "gammaRDP", "epsilon", "sigma", "lr", "clipped")
	for i, r := range sr.Results {
		s := r.Attacks[r.Attack]
		fmt.Fprintf(w, "%-8g %-11s %-8.4f [%.4f, %.4f] %-8.4f %-8.4f %-8.4g %-8.4g %-8.4g %-8.3f\n", sr.Values[i], r.Attack, s.Rate, s.CI[0], s.CI[1], r.Gamma, r.GammaRDP, r.Epsilon, r.Sigma, r.LR, r.ClippedFraction)
	}
	fmt.Fprintf(w, "wrote %s and %s\n", sr.JSON, sr.CSV)
}

// WriteText writes the transcript's setting and each attack's guess.
func (r *ReplayReport) WriteText(w io.Writer) {
	state := "complete"
	if !r.Complete {
		state = "recovered after a crash"
	}
	h := r.Header
	fmt.Fprintf(w, "transcript %s: %d steps (%s), %s on %s, q = %g, σ = %.4g, C = %g\n", r.Transcript, r.Steps, state, h.Model, h.Dataset, h.Q, h.Sigma, h.Clip)
	for _, a := range []string{AttackPrior, AttackPriorTopK, AttackLogLik} {
		fmt.Fprintf(w, "  %-11s guesses prior[%d] = sample %d\n", a, r.Guess[a], r.GuessIndex[a])
	}
}

// WriteText writes the experiment's setting, the reconstructor's fit and the
// targets' summary.
func (r *RecoNNReport) WriteText(w io.Writer) {
	shared := ""
	if r.SameInit {
		shared = ", shared init"
	}
	fmt.Fprintf(w, "RecoNN on %s: D₋ = %d samples, pool %d, recipe %s (%d steps, batch %d, σ=%g, C=%g)%s\n", r.Dataset, r.Fixed, r.Pool,
		r.Config.Model, r.Config.Steps, r.Config.Batch, r.Config.Sigma, r.Config.Clip, shared)
	if r.Public > 0 {
		disjoint := "not checked disjoint"
		if r.PublicDisjoint {
			disjoint = "disjoint from D₋ and the pool; the targets are test samples"
		}
		fmt.Fprintf(w, "public pool: %d training samples (%s), the same public data for every shadow and target model\n", r.Public, disjoint)
	}
	fmt.Fprintf(w, "shadows: %d (%d to fit the %s reconstructor on %d features, %d held out) in %.1fs\n", r.Shadows, r.ShadowsTrain, r.Reconstructor, r.Features, r.ShadowsVal, r.Seconds)
	sh := r.Shadow
	fmt.Fprintf(w, "shadow training (%s trainer): %d trained in %.1fs (%.3g shadows/s, load average %.2f → %.2f), %d loaded from the checkpoint\n",
		sh.Trainer, sh.Trained, sh.Seconds, float64(sh.ShadowsPerSecond), sh.LoadAvgStart, sh.LoadAvgEnd, sh.Loaded)
	fmt.Fprintf(w, "reconstructor MSE: train %.4g, held-out shadows %.4g (label-only baseline %.4g)\n", float64(r.TrainMSE), float64(r.ValMSE), float64(r.ValBaselineMSE))
	fmt.Fprintf(w, "targets: mean MSE %.4g vs label-only baseline %.4g; ε = %.4g, ε₂ = %.4g → Theorem 1 bound %.4g (%d targets below it); median 1/dFIL %.4g (%d of %d targets below it)\n",
		float64(r.MeanMSE), float64(r.MeanBaseline), float64(r.Epsilon), float64(r.RDPOrder2), float64(r.BoundRDP), r.RDPViolations, float64(r.MedianBoundFIL), r.FILBelow, len(r.Targets))
	fmt.Fprintf(w, "targets: mean SSIM %.4g; baselines (MSE / SSIM): class mean %.4g / %.4g, prior mean %.4g / %.4g, nearest neighbour in D₋ ∪ pool (oracle) %.4g / %.4g\n",
		float64(r.MeanSSIM), float64(r.MeanBaseline), float64(r.MeanBaselineSSIM), float64(r.MeanPriorMeanMSE), float64(r.MeanPriorMeanSSIM),
		float64(r.MeanNearestMSE), float64(r.MeanNearestSSIM))
	if len(r.Files) > 0 {
		fmt.Fprintf(w, "wrote %v\n", r.Files)
	}
}

// WriteText writes the release, the attack's cost and its comparison with the FIL
// bound.
func (r *GLMReport) WriteText(w io.Writer) {
	r.Release.WriteText(w)
	fmt.Fprintf(w, "attack: %d trials × %d targets in %.1fs (FIL %.1fs); non-finite trials: %d\n", r.Trials, r.Targets, r.AttackSeconds, r.FILSeconds, r.NonFiniteTrials)
	fmt.Fprintf(w, "realised MSE median %.4g; FIL bound median %.4g; corr(log bound, log MSE) = %.3f\n", float64(r.MSEMedian), float64(r.BoundMedian), float64(r.LogCorr))
	fmt.Fprintf(w, "bound violations (realised < 1/dFIL): %d of %d; among the %d examples with bound < 1: %d\n", r.Violations, r.Targets, r.BoundBelow1, r.ViolationsBelow1)
	fmt.Fprintf(w, "wrote %s\n", strings.Join(r.Files, ", "))
}
