package main

import (
	"fmt"
	"io"

	"github.com/dpfil/dpfil/train"
)

// printExtraFIL prints the η (spectral-norm FIL) and label-FIL lines of a training
// result, when the run computed them.
func printExtraFIL(w io.Writer, res *train.Result) {
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
