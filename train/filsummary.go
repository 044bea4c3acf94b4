package train

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/dpfil/dpfil/train/fil"
)

// FILSource is one input of SummarizeFIL: the dFIL file read and how its values
// were computed, from the run's result.json when there is one beside it.
type FILSource struct {
	Input     string `json:"input"`            // as given: a .npy file or a run directory
	File      string `json:"file"`             // the per-sample dFIL .npy read
	Run       string `json:"run,omitempty"`    // the run directory whose result.json describes it
	Estimator string `json:"estimator"`        // how the dFIL values were computed
	Exact     *bool  `json:"exact"`            // whether dFIL is the exact trace (null: not recorded)
	Coords    int    `json:"coords,omitempty"` // k input coordinates per sample and step (d when exact)
	InputDim  int    `json:"input_dim,omitempty"`
}

// FILSummaryReport is SummarizeFIL's answer: the merged summary of the dFIL files
// (max, median, quantiles, Theorem 2's MSE bounds 1/max and 1/median dFIL) and the
// estimator behind them.
type FILSummaryReport struct {
	fil.FilesReport
	// Estimator names how the dFIL values were computed: the sources' common one,
	// "mixed: …" when they differ, or "not recorded" for bare .npy files.
	Estimator string      `json:"estimator"`
	Sources   []FILSource `json:"sources"`
}

// SummarizeFIL summarises per-sample dFIL given as .npy files (a run's dfil.npy) or
// run directories (their dfil.npy), merged by the per-sample mean over repeated runs
// (accounting.SummarizeDFILFiles; out, when not "", receives the merged vector). The
// estimator of each input comes from its run's result.json (the run directory, or
// the directory of a run's own dfil.npy).
func SummarizeFIL(inputs []string, out string) (*FILSummaryReport, error) {
	if len(inputs) == 0 {
		return nil, errors.New("dFIL summary: no input: give a run's dfil.npy or its run directory")
	}
	rep := &FILSummaryReport{}
	var files []string
	for _, in := range inputs {
		src, err := filSource(in)
		if err != nil {
			return nil, err
		}
		files = append(files, src.File)
		rep.Sources = append(rep.Sources, src)
	}
	sum, err := fil.SummarizeFiles(files, out)
	if err != nil {
		return nil, err
	}
	rep.FilesReport = *sum
	rep.Estimator = rep.Sources[0].Estimator
	for _, s := range rep.Sources[1:] {
		if s.Estimator != rep.Estimator {
			rep.Estimator = "mixed: the inputs were computed differently (see sources)"
			break
		}
	}
	return rep, nil
}

// filSource resolves one input of SummarizeFIL.
func filSource(in string) (FILSource, error) {
	src := FILSource{Input: in, File: in}
	fi, err := os.Stat(in)
	if err != nil {
		return src, fmt.Errorf("dFIL summary: %w", err)
	}
	runDir := ""
	if fi.IsDir() {
		runDir = in
		r, err := ReadResult(in)
		if err != nil {
			return src, fmt.Errorf("dFIL summary: %w", explainNoResult(in, err))
		}
		if !r.FIL || r.DFILPath == "" {
			return src, fmt.Errorf("dFIL summary: run %s accounted no FIL (fil_coords = 0): it has no per-sample dFIL", in)
		}
		src.File = filepath.Join(in, r.DFILPath)
	} else if r, err := ReadResult(filepath.Dir(in)); err == nil && r.DFILPath == filepath.Base(in) {
		runDir = filepath.Dir(in) // the run's own dfil.npy
	}
	if runDir == "" {
		src.Estimator = "not recorded: a bare .npy does not say how it was computed (its run directory's result.json does)"
		return src, nil
	}
	r, err := ReadResult(runDir)
	if err != nil {
		return src, fmt.Errorf("dFIL summary: %w", err)
	}
	exact := r.Config.FILExact || (r.InputDim > 0 && r.FILCoordsUsed == r.InputDim)
	src.Run, src.Exact, src.Coords, src.InputDim = runDir, &exact, r.FILCoordsUsed, r.InputDim
	src.Estimator = filEstimator(r, exact)
	return src, nil
}

// filEstimator describes how a run computed its per-sample dFIL.
func filEstimator(r *Result, exact bool) string {
	var b strings.Builder
	if exact {
		fmt.Fprintf(&b, "exact: the trace of the Fisher information over all d = %d input coordinates", r.InputDim)
	} else {
		fmt.Fprintf(&b, "random-coordinate estimate: the trace from k = %d of d = %d input coordinates drawn per sample and step, scaled by d/k (unbiased)", r.FILCoordsUsed, r.InputDim)
	}
	if r.FILRate > 0 && r.FILRate < 1 {
		fmt.Fprintf(&b, ", for a random %.3g%% of the batch members per step, weighted 1/rate", 100*r.FILRate)
	}
	input := "raw pixels in [0,1]"
	if r.FILInput == "normalized_inputs" {
		input = "the normalised inputs"
	}
	fmt.Fprintf(&b, "; w.r.t. %s; κ = %.4g", input, r.Kappa)
	return b.String()
}

// WriteText writes the estimator, then the summary (accounting's), and what the
// bounds mean when dFIL is an estimate.
func (r *FILSummaryReport) WriteText(w io.Writer) {
	fmt.Fprintf(w, "dFIL estimator: %s\n", r.Estimator)
	if len(r.Sources) > 1 {
		for _, s := range r.Sources {
			fmt.Fprintf(w, "  %s: %s\n", s.File, s.Estimator)
		}
	}
	r.FilesReport.WriteText(w)
	exact := true
	for _, s := range r.Sources {
		exact = exact && s.Exact != nil && *s.Exact
	}
	if !exact {
		fmt.Fprintln(w, "(the bounds hold for an unbiased attacker; from a random-coordinate or unrecorded dFIL they are estimates of the bounds, not the exact values)")
	}
}
