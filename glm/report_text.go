package glm

import (
	"fmt"
	"io"
	"strings"
)

// WriteText writes the data, fit and accounting of the release.
func (c Release) WriteText(w io.Writer) {
	fmt.Fprintf(w, "dataset %s (%s): n=%d d=%d, %s loss, λ=%g, bias=%v, σ=%g\n", c.Dataset, c.Source, c.N, c.D, c.Loss, c.Lambda, c.Bias, c.Sigma)
	if c.Preprocess != "none" && c.Preprocess != "" {
		fmt.Fprintf(w, "features: %s (%.4g of the scaled training images' variance kept)\n", c.Preprocess, c.PCAExplained)
	}
	if c.WithLabel {
		fmt.Fprintln(w, "FIL over (x, y): the label column is included (Hannun et al.'s η)")
	}
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
	fmt.Fprintf(w, "η: max %.4g median %.4g mean %.4g ± %.4g; FIL took %.1fs\n", float64(r.EtaMax), float64(r.EtaMedian), float64(r.EtaMean), float64(r.EtaStd), r.FILSeconds)
	for _, c := range r.EtaByClass {
		fmt.Fprintf(w, "     label %d: n=%d, η %.4g ± %.4g\n", c.Label, c.N, c.Mean, c.Std)
	}
	h := r.EtaHeuristics
	fmt.Fprintf(w, "η vs loss: Spearman %.3f (vs gradient norm %.3f); loss median %.3g, max %.3g; lowest-η decile's largest loss %.3g; highest-η decile's losses %.3g … %.3g\n",
		h.SpearmanLoss, h.SpearmanGradNorm, h.LossMedian, h.LossMax, h.LowEtaLossMax, h.HighEtaLossMin, h.HighEtaLossMax)
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
