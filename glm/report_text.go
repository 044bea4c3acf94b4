package glm

import (
	"fmt"
	"io"
	"strings"
)

// WriteText writes the data, fit and accounting of the release.
func (c Release) WriteText(w io.Writer) {
	fmt.Fprintf(w, "dataset %s (%s): n=%d d=%d, %s loss, λ=%g, bias=%v, σ=%g\n", c.Dataset, c.Source, c.N, c.D, c.Loss, c.Lambda, c.Bias, c.Sigma)
	fmt.Fprintf(w, "fit: %d Newton iterations, ‖∇F‖ = %.3g, %.1fs; accuracy test %.4f train %.4f\n", c.NewtonIters, c.GradNorm, c.FitSeconds, float64(c.Accuracy), float64(c.TrainAcc))
	fmt.Fprintf(w, "RDP: R=%.4g, Δ=%.4g, ε₂=Δ²/σ²=%.4g → MSE ≥ %.4g (paper's 2/(nλσ) = %.4g is not the order-2 RDP)\n",
		c.R, c.Sensitivity, float64(c.Eps2), float64(c.MSEBoundRDP), float64(c.Eps2Paper))
	if c.RSource == RadiusFromData {
		fmt.Fprintf(w, "     ε₂ is %s\n", c.Eps2Guarantee)
	} else {
		fmt.Fprintf(w, "     ε₂ is an %s\n", c.Eps2Guarantee)
	}
}

// WriteText writes the release and the FIL summary.
func (r *FILReport) WriteText(w io.Writer) {
	r.Release.WriteText(w)
	fmt.Fprintf(w, "dFIL: max %.4g median %.4g mean %.4g → MSE bound min %.4g median %.4g (%d/%d examples with bound > 1)\n",
		float64(r.DFILMax), float64(r.DFILMedian), float64(r.DFILMean), float64(r.MSEBoundFILMin), float64(r.MSEBoundFILMedian), r.BoundAbove1, r.N)
	fmt.Fprintf(w, "η: max %.4g median %.4g; FIL took %.1fs\n", float64(r.EtaMax), float64(r.EtaMedian), r.FILSeconds)
	fmt.Fprintf(w, "wrote %s\n", strings.Join(r.Files, ", "))
}

// WriteText writes the release and one line per IRFIL iteration.
func (r *IRFILReport) WriteText(w io.Writer) {
	r.Release.WriteText(w)
	fmt.Fprintf(w, "iter  eta_mean    spread     train_acc  test_acc  weights[min,max]  clamped\n")
	for _, it := range r.Iterations {
		fmt.Fprintf(w, "%4d  %.4g  %.4g  %.4f  %.4f  [%.3g, %.3g]  %d\n", it.Iter, it.EtaMean, it.Spread, it.TrainAcc, it.TestAcc, it.WeightMin, it.WeightMax, it.Clamped)
	}
	fmt.Fprintf(w, "η spread (std/mean): %.4g → %.4g in %.1fs; wrote %s\n", r.SpreadInitial, r.SpreadFinal, r.Seconds, strings.Join(r.Files, ", "))
}

// WriteText writes the table, the adversaries' errors and the FIL prediction.
func (r *InvertReport) WriteText(w io.Writer) {
	noise := ""
	if r.NoiseFree {
		noise = " (noise-free: σ = 0)"
	}
	fmt.Fprintf(w, "table %s: n=%d, d=%d → %d features (%s), p=%d; %s loss, λ=%g, bias=%v\n", r.Source, r.N, r.D, r.K, r.Preprocess, r.P, r.Loss, r.Lambda, r.Bias)
	fmt.Fprintf(w, "fit: train %s %.4g; release σ=%g%s\n", r.TrainMetricIs, r.TrainMetric, r.Sigma, noise)
	kind := "continuous (Gaussian prior)"
	if r.Discrete {
		kind = fmt.Sprintf("discrete (%d observed values)", r.PriorValues)
	}
	fmt.Fprintf(w, "attribute %s: %s; %d targets × %d trials in %.1fs\n", strings.Join(r.Columns, ","), kind, r.Targets, r.Trials, r.AttackSeconds)
	if len(r.IRFIL) > 0 {
		first, last := r.IRFIL[0], r.IRFIL[len(r.IRFIL)-1]
		fmt.Fprintf(w, "IRFIL: η spread %.4f → %.4f after %d iterations\n", first.Spread, last.Spread, last.Iter)
	}
	fmt.Fprintf(w, "%-10s %12s %10s\n", "adversary", "MSE/coord", "accuracy")
	fmt.Fprintf(w, "%-10s %12.4g %10.4f\n", "white-box", float64(r.WhiteMSE), float64(r.WhiteAcc))
	fmt.Fprintf(w, "%-10s %12.4g %10.4f\n", "black-box", float64(r.BlackMSE), float64(r.BlackAcc))
	fmt.Fprintf(w, "%-10s %12.4g %10.4f\n", "baseline", float64(r.BaselineMSE), float64(r.BaselineAcc))
	if !r.NoiseFree {
		fmt.Fprintf(w, "FIL prediction: mean CRB %.4g, mean 1/dFIL %.4g; median realised/CRB %.3f, corr(log CRB, log MSE) %.3f; targets below CRB %d, below 1/dFIL %d of %d\n",
			float64(r.MeanCRB), float64(r.MeanBoundDFIL), float64(r.MedianRatio), float64(r.LogCorr), r.BelowCRB, r.BelowBoundDFIL, r.Targets)
		if len(r.Deciles) > 0 {
			fmt.Fprintln(w, "η² decile            white acc  black acc  white MSE   mean CRB")
			for _, d := range r.Deciles {
				fmt.Fprintf(w, "[%8.3g, %8.3g]  %9.3f  %9.3f  %9.4g  %9.4g\n", d.EtaSqLo, d.EtaSqHi, d.WhiteAcc, d.BlackAcc, d.WhiteMSE, d.CRB)
			}
		}
	}
	if len(r.Files) > 0 {
		fmt.Fprintf(w, "wrote %s\n", strings.Join(r.Files, ", "))
	}
}
