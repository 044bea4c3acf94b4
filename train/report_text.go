package train

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/dpfil/dpfil/models"
)

// WriteText writes the human summary of a training result: the setting, accuracy,
// the privacy report, the FIL bounds, the tuning and the time taken.
func (res *Result) WriteText(w io.Writer) {
	cfg := res.Config
	clipAlgo := ""
	if cfg.ClipAlgo != "" && cfg.ClipAlgo != models.ClipAlgoPerSample {
		clipAlgo = ", " + cfg.ClipAlgo + " norms"
	}
	optim := fmt.Sprintf("momentum %g", cfg.Momentum)
	if cfg.IsAdam() {
		optim = fmt.Sprintf("adam β1 %g β2 %g ε %g", cfg.AdamBeta1, cfg.AdamBeta2, cfg.AdamEps)
	}
	fmt.Fprintf(w, "%s on %s (%d train / %d test), %d steps × batch %d (%s), σ = %.4g, C = %g (%s clipping%s), lr %g, %s\n",
		cfg.Model, res.Dataset.Name, res.Dataset.NTrain, res.Dataset.NTest, res.Steps, cfg.Batch, res.Sampling,
		res.Sigma, cfg.Clip, cfg.ClipMode, clipAlgo, cfg.LR, optim)
	if res.ClipConstant != 1 && res.Sigma > 0 {
		fmt.Fprintf(w, "                   smooth clipping bounds a clipped gradient by c·C, c = %.4f, so the accountants take σ/c = %.4g\n",
			res.ClipConstant, res.NoiseMultiplierRDP)
	}
	fmt.Fprintf(w, "test accuracy      %.4f", res.TestAccuracy)
	if len(res.TestAccuracies) > 1 {
		fmt.Fprintf(w, " (mean of %d repeats: %v)", len(res.TestAccuracies), res.TestAccuracies)
	}
	fmt.Fprintf(w, "\ntrain loss         %.4f (train accuracy %.4f)\n", res.TrainLoss, res.TrainAccuracy)
	res.Privacy.WriteText(w)
	if res.FIL {
		fmt.Fprintf(w, "FIL (k = %d, κ = %.4g) dFIL max %.4g, median %.4g, mean %.4g → MSE ≥ %.4g (worst sample), %.4g (median sample)\n",
			res.FILCoordsUsed, res.Kappa, res.DFILMax, res.DFILMedian, res.DFILMean, res.MSEBoundFILMax, res.MSEBoundFILMedian)
		if sq := res.SqrtDFIL; sq != nil {
			fmt.Fprintf(w, "                   √dFIL per sample (mean of %d repeat(s); the statistic Edmunds' tables call dFIL): max %.4g, median %.4g, mean %.4g\n",
				sq.Runs, sq.Max, sq.Median, sq.Mean)
		}
		if res.FILEstimator != "" {
			fmt.Fprintf(w, "                   estimator: %s\n", res.FILEstimator)
		}
		if ts := res.FILTwoStage; ts != nil {
			fmt.Fprintf(w, "two-stage FIL      worst sample %d: exact dFIL %.4g → MSE ≥ %.4g (at most; exact for the %d screened samples refined)", ts.ArgMax, ts.Max, ts.MSEBoundMax, ts.Top)
			if ts.CI != nil {
				fmt.Fprintf(w, "; %g%% CI %.4g–%.4g (%s)", 100*ts.CI.Level, ts.CI.Lo, ts.CI.Hi, ts.CI.Over)
			}
			fmt.Fprintf(w, "\n                   %d of %d refined samples have exact dFIL ≥ 1; report: %s\n", ts.RefinedAtLeastOne, ts.Top, ts.Report)
		}
		if math.IsInf(res.MSEBoundFILMedian, 1) {
			fmt.Fprintln(w, "                   median bound +Inf: more than half of the training samples had no FIL measured (never in a batch, or not picked by --fil-rate), so no leakage was recorded for them; train longer or raise --fil-rate")
		}
	} else {
		fmt.Fprintln(w, "FIL                off (--fil-coords 0)")
	}
	res.writeExtraFIL(w)
	res.writeTuning(w)
	fmt.Fprintf(w, "time               %.1f s (%.1f s in DP-SGD steps, %.3g samples/s)\n", res.WallSeconds, res.StepSeconds, res.SamplesPerSec)
}

// writeExtraFIL writes the η (spectral-norm FIL) and label-FIL lines, when the run
// computed them.
func (res *Result) writeExtraFIL(w io.Writer) {
	if e := res.Eta; e != nil {
		fmt.Fprintf(w, "η (%d power iter.) η² max %.4g, median %.4g → MSE ≥ %.4g (worst sample), %.4g (median sample); last-iteration change ≤ %.2g\n",
			e.Iterations, e.EtaSq.Max, e.EtaSq.Median, e.EtaSq.MSEBoundMax, e.EtaSq.MSEBoundMedian, e.MaxRelChange)
		if e.MaxRelChange > 1e-2 {
			fmt.Fprintln(w, "                   the power iteration had not converged (it under-estimates η², over-states the bound): raise --fil-eta")
		}
	}
	if l := res.LabelFIL; l != nil {
		fmt.Fprintf(w, "label FIL (K = %d)  dFIL max %.4g, median %.4g → label MSE ≥ %.4g (worst), %.4g (median); η² max %.4g → ≥ %.4g\n",
			l.Classes, l.DFIL.Max, l.DFIL.Median, l.DFIL.MSEBoundMax, l.DFIL.MSEBoundMedian, l.EtaSq.Max, l.EtaSq.MSEBoundMax)
	}
}

// writeTuning writes the tuning lines (public data, frozen parameters, learned
// noise), when the run used them.
func (res *Result) writeTuning(w io.Writer) {
	t := res.Tuning
	if t == nil {
		return
	}
	var parts []string
	if t.NPublic > 0 {
		s := fmt.Sprintf("public %d / private %d samples", t.NPublic, t.NPrivate)
		if t.PublicExternal {
			s = fmt.Sprintf("public %d samples given by the caller (not in the training set; fingerprint %.12s…) / private %d samples (the whole training set)", t.NPublic, t.PublicSHA256, t.NPrivate)
		}
		if t.PretrainSteps > 0 {
			s += fmt.Sprintf(", pretrained %d steps (test accuracy %.4f)", t.PretrainSteps, t.PretrainAccuracy)
		}
		parts = append(parts, s)
	}
	if t.Frozen > 0 {
		s := fmt.Sprintf("%d of %d parameters frozen", t.Frozen, t.Frozen+t.Released)
		if len(t.FrozenTensors) > 0 {
			s += " (" + strings.Join(t.FrozenTensors, ",") + ")"
		}
		parts = append(parts, s)
	}
	fmt.Fprintf(w, "tuning             %s\n", strings.Join(parts, "; "))
	if n := t.Noise; n != nil {
		fmt.Fprintf(w, "learned noise      rank %d, ρ=%g, β=%g: σ=%g → σ_eff=%g (the accounted multiplier); extra noise power %.3g× isotropic; span captures %.1f%% of the public FIM sample, metric lowers it %.1f%%\n",
			n.Rank, n.Power, n.Base, n.SigmaNominal, n.SigmaEffective, n.ExtraNoisePower, 100*n.Captured, 100*n.PublicReduction)
	}
	if g := t.Perturb; g != nil {
		body := fmt.Sprintf("H=%d", g.Hidden)
		if g.Hidden2 > 0 {
			body = fmt.Sprintf("%s, H=%d,%d", g.Arch, g.Hidden, g.Hidden2)
		}
		fmt.Fprintf(w, "g_φ perturbation   %s, %s, %s (lr %g, batch %d) every %d step(s), %d refreshes: public loss %.4g, mean ‖g_φ‖ %.4g, cos(mean g_φ, mean public gradient) %.3f\n",
			body, g.lambdaText(), g.scheduleText(), g.LR, g.Batch, g.Every, g.Refreshes, g.Loss, g.PerturbNorm, g.CosMeanGrad)
		fmt.Fprintf(w, "g_φ privacy        %s\n", g.Privacy)
	}
}

// WriteText writes the human summary of the evaluation: accuracy, loss, per-class
// accuracy and whether the run's own number was reproduced.
func (r *EvalReport) WriteText(w io.Writer) {
	fmt.Fprintf(w, "%s (arch %s, repeat %d, %s) on %s %s (%d samples)\n", r.Model, r.ArchHash, r.Repeat, r.ParamsFile, r.Dataset, r.Split, r.Eval.N)
	fmt.Fprintf(w, "accuracy  %.4f\nloss      %.4f\n", r.Eval.Accuracy, r.Eval.Loss)
	fmt.Fprintf(w, "per class")
	for c, a := range r.Eval.PerClass {
		name := fmt.Sprint(c)
		if c < len(r.ClassNames) {
			name = r.ClassNames[c]
		}
		if math.IsNaN(a) {
			fmt.Fprintf(w, "  %s: –", name)
		} else {
			fmt.Fprintf(w, "  %s: %.3f", name, a)
		}
	}
	fmt.Fprintln(w)
	if r.Reported != nil {
		verdict := "reproduced exactly"
		if !*r.Reproduced {
			verdict = "NOT reproduced"
		}
		fmt.Fprintf(w, "the run reported test accuracy %.4f: %s\n", *r.Reported, verdict)
	}
}

// WriteText writes each input's class with its three most probable classes.
func (r *PredictReport) WriteText(w io.Writer) { r.WriteTop(w, 3) }

// WriteTop writes each input's class with its top most probable classes.
func (r *PredictReport) WriteTop(w io.Writer, top int) {
	label := func(c int) string {
		if c < len(r.ClassNames) {
			return fmt.Sprintf("%d (%s)", c, r.ClassNames[c])
		}
		return fmt.Sprint(c)
	}
	for _, p := range r.Predictions {
		var parts []string
		for _, c := range p.Top(top) {
			parts = append(parts, fmt.Sprintf("%s %.3f", label(c), p.Probs[c]))
		}
		fmt.Fprintf(w, "%s: %s   [%s]\n", p.Where(), label(p.Class), strings.Join(parts, ", "))
	}
}

// WriteText writes the version line of the binary.
func (b *Binary) WriteText(w io.Writer) {
	fmt.Fprintf(w, "dpfil %s", b.Version)
	switch {
	case b.Commit != "" && b.Modified:
		fmt.Fprintf(w, " (commit %s, with local changes)", b.Commit)
	case b.Commit != "":
		fmt.Fprintf(w, " (commit %s)", b.Commit)
	default:
		fmt.Fprint(w, " (no commit stamped: built with -buildvcs=false or outside a git checkout; 'make build' stamps it)")
	}
	fmt.Fprintf(w, " %s %s/%s\n", b.GoVersion, b.OS, b.Arch)
}
