// Package fil holds per-sample dFIL vectors as files and summaries: the dfil.npy
// format (a float64 .npy vector, written atomically), the merge of repeated runs'
// files and the summary a run reports (max, median, mean, quantiles and Theorem 2's
// MSE bounds). The accounting itself (κ, the per-step FIL, the mean over repeats)
// is in accounting; this package only stores and describes its output.
package fil

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"

	"gonum.org/v1/gonum/stat"

	"github.com/dpfil/dpfil/accounting"
	"github.com/dpfil/dpfil/internal/atomicfile"
	"github.com/dpfil/dpfil/internal/jsonfloat"
	"github.com/dpfil/dpfil/internal/npy"
	"github.com/dpfil/dpfil/internal/stats"
)

// Save writes per-sample dFIL as a .npy float64 vector, atomically (a temporary
// file in the same directory, synced, then renamed).
func Save(path string, dfil []float64) error {
	for i, v := range dfil {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return fmt.Errorf("save dFIL %s: sample %d has invalid dFIL %v", path, i, v)
		}
	}
	b, err := npy.EncodeFloat64([]int{len(dfil)}, dfil)
	if err != nil {
		return fmt.Errorf("save dFIL %s: %w", path, err)
	}
	if err := atomicfile.Write(path, func(w io.Writer) error { _, err := w.Write(b); return err }); err != nil {
		return fmt.Errorf("save dFIL: %w", err)
	}
	return nil
}

// Load reads a per-sample dFIL vector written by Save (or numpy.save of a
// float64/float32 vector). Corrupt files and non-finite or negative values are
// errors.
func Load(path string) ([]float64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load dFIL: %w", err)
	}
	x, err := npy.ReadVector(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("load dFIL %s: %w", path, err)
	}
	for i, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return nil, fmt.Errorf("load dFIL %s: sample %d has invalid dFIL %v", path, i, v)
		}
	}
	return x, nil
}

// SummaryQuantiles are the quantile levels reported by Summarize, keyed
// "p01" … "p99".
func SummaryQuantiles() []float64 {
	return []float64{0.01, 0.05, 0.10, 0.25, 0.50, 0.75, 0.90, 0.95, 0.99}
}

// Summary summarises per-sample dFIL: max, median, mean, quantiles (linear
// interpolation between order statistics, numpy's default) and the Theorem 2 MSE
// bounds for an unbiased attacker, 1/max dFIL (worst sample) and 1/median dFIL.
// Bounds are +Inf when the dFIL is 0; JSON encodes non-finite numbers as null.
// Use it as a named field, not embedded: an embedded Summary would promote its
// MarshalJSON and hide the enclosing struct's other fields.
type Summary struct {
	Count          int                `json:"count"`
	Max            float64            `json:"max"`
	Median         float64            `json:"median"`
	Mean           float64            `json:"mean"`
	Min            float64            `json:"min"`
	Quantiles      map[string]float64 `json:"quantiles"`
	MSEBoundMax    float64            `json:"mse_bound_max"`
	MSEBoundMedian float64            `json:"mse_bound_median"`
}

// MarshalJSON encodes the summary with non-finite values (an infinite MSE bound when
// dFIL is 0) as null.
func (s Summary) MarshalJSON() ([]byte, error) {
	q := make(map[string]*float64, len(s.Quantiles))
	for k, v := range s.Quantiles {
		q[k] = jsonfloat.Ptr(v)
	}
	return json.Marshal(struct {
		Count          int                 `json:"count"`
		Max            *float64            `json:"max"`
		Median         *float64            `json:"median"`
		Mean           *float64            `json:"mean"`
		Min            *float64            `json:"min"`
		Quantiles      map[string]*float64 `json:"quantiles"`
		MSEBoundMax    *float64            `json:"mse_bound_max"`
		MSEBoundMedian *float64            `json:"mse_bound_median"`
	}{s.Count, jsonfloat.Ptr(s.Max), jsonfloat.Ptr(s.Median), jsonfloat.Ptr(s.Mean), jsonfloat.Ptr(s.Min), q,
		jsonfloat.Ptr(s.MSEBoundMax), jsonfloat.Ptr(s.MSEBoundMedian)})
}

// Summarize summarises per-sample dFIL values. An empty slice gives Count 0 and
// NaN statistics.
func Summarize(dfil []float64) Summary {
	out := Summary{Count: len(dfil), Quantiles: map[string]float64{}}
	if len(dfil) == 0 {
		nan := math.NaN()
		out.Max, out.Median, out.Mean, out.Min = nan, nan, nan, nan
		out.MSEBoundMax, out.MSEBoundMedian = nan, nan
		return out
	}
	s := slices.Clone(dfil)
	sort.Float64s(s)
	out.Min, out.Max = s[0], s[len(s)-1]
	out.Mean = stat.Mean(s, nil)
	out.Median = stats.QuantileSorted(s, 0.5)
	for _, p := range SummaryQuantiles() {
		out.Quantiles[fmt.Sprintf("p%02d", int(math.Round(p*100)))] = stats.QuantileSorted(s, p)
	}
	out.MSEBoundMax = accounting.MSEBoundFIL(out.Max)
	out.MSEBoundMedian = accounting.MSEBoundFIL(out.Median)
	return out
}

// SqrtStats are the mean, median and max over samples of √dFIL, taken per run and
// then averaged over the runs. This is the statistic Edmunds (2024) reports as
// "dFIL" in Tables 3.1–3.4 and A.1: the thesis's code accumulates Σ_t tr(I_t)/d per
// sample and prints the mean, median and max of its square root (Guo et al.'s
// η), averaging the three runs' statistics. It is not √ of Summary's statistics:
// the mean of √dFIL is at most √ of the mean dFIL (Jensen), and averaging over
// runs happens after the root.
type SqrtStats struct {
	Runs   int     `json:"runs"`
	Mean   float64 `json:"mean"`
	Median float64 `json:"median"`
	Max    float64 `json:"max"`
}

// SqrtSummary computes SqrtStats from each run's per-sample dFIL (the runs must
// have the same, non-zero length; values must be finite and non-negative).
func SqrtSummary(runs ...[]float64) (SqrtStats, error) {
	n, err := accounting.CheckDFILRuns("√dFIL summary", runs...)
	if err != nil {
		return SqrtStats{}, err
	}
	out := SqrtStats{Runs: len(runs)}
	k := float64(len(runs))
	for _, run := range runs {
		s := make([]float64, n)
		for i, v := range run {
			s[i] = math.Sqrt(v)
		}
		sort.Float64s(s)
		out.Mean += stat.Mean(s, nil) / k
		out.Median += stats.QuantileSorted(s, 0.5) / k
		out.Max += s[n-1] / k
	}
	return out, nil
}

// FilesReport summarises per-sample dFIL files merged by the per-sample mean.
type FilesReport struct {
	Files   []string `json:"files"`
	Runs    int      `json:"runs"`
	Summary Summary  `json:"summary"`
	// SqrtDFIL is the √dFIL statistic of Edmunds' tables (SqrtSummary), each file
	// counting as one run (a run directory's dfil.npy already holds the mean over
	// its repeats, so give per-repeat files to match the thesis's averaging).
	SqrtDFIL SqrtStats `json:"sqrt_dfil"`
	Out      string    `json:"out,omitempty"`
}

// SummarizeFiles reads the per-sample dFIL vectors of repeated runs (.npy files as
// Save writes them), merges them by the per-sample mean (accounting.MeanDFIL),
// writes the merged vector to out unless out is "", and summarises it (Summarize).
func SummarizeFiles(files []string, out string) (*FilesReport, error) {
	if len(files) == 0 {
		return nil, errors.New("dFIL summary: no files")
	}
	runs := make([][]float64, 0, len(files))
	for _, p := range files {
		x, err := Load(p)
		if err != nil {
			return nil, err
		}
		runs = append(runs, x)
	}
	mean, err := accounting.MeanDFIL(runs...)
	if err != nil {
		return nil, fmt.Errorf("merge dFIL runs: %w", err)
	}
	if out != "" {
		if err := Save(out, mean); err != nil {
			return nil, err
		}
	}
	sq, err := SqrtSummary(runs...)
	if err != nil {
		return nil, fmt.Errorf("dFIL summary: %w", err)
	}
	return &FilesReport{Files: files, Runs: len(files), Summary: Summarize(mean), SqrtDFIL: sq, Out: out}, nil
}

// WriteText writes the human summary of the merged dFIL: its statistics and
// Theorem 2's bounds.
func (res *FilesReport) WriteText(w io.Writer) {
	s := res.Summary
	fmt.Fprintf(w, "%d samples, %d run(s)\n", s.Count, res.Runs)
	fmt.Fprintf(w, "dFIL max %.6g  median %.6g  mean %.6g  min %.6g\n", s.Max, s.Median, s.Mean, s.Min)
	keys := make([]string, 0, len(s.Quantiles))
	for k := range s.Quantiles {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "  %s %.6g\n", k, s.Quantiles[k])
	}
	fmt.Fprintf(w, "Theorem 2 MSE lower bound: worst sample 1/max = %.6g, median sample 1/median = %.6g\n",
		s.MSEBoundMax, s.MSEBoundMedian)
	q := res.SqrtDFIL
	fmt.Fprintf(w, "√dFIL per sample, each file one run (the statistic Edmunds' tables call dFIL): max %.6g  median %.6g  mean %.6g\n",
		q.Max, q.Median, q.Mean)
}
