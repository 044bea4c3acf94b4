package train

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dpfil/dpfil/train/fil"
)

// TestSummarizeFIL summarises the dFIL of real runs given as a run directory, as the
// run's own dfil.npy and as a bare copy: the statistics are those of the run's
// per-sample dFIL (sorted by hand here), and the estimator is named from result.json
// (random coordinates with k, or exact), or said to be unrecorded for the copy.
func TestSummarizeFIL(t *testing.T) {
	split := imageToyData(40, 10, 4)
	cfg := DefaultConfig()
	cfg.Model, cfg.Dataset, cfg.Batch, cfg.Steps, cfg.FILCoords, cfg.Sigma = "linear", "toy", 10, 3, 5, 1
	est := filepath.Join(t.TempDir(), "est")
	res, err := Run(context.Background(), cfg, Options{Out: est, Data: split})
	if err != nil {
		t.Fatal(err)
	}
	cfg.FILExact = true
	exact := filepath.Join(t.TempDir(), "exact")
	if _, err := Run(context.Background(), cfg, Options{Out: exact, Data: split}); err != nil {
		t.Fatal(err)
	}
	sorted := slices.Clone(res.DFIL)
	slices.Sort(sorted)
	n := len(sorted)
	wantMedian := (sorted[n/2-1] + sorted[n/2]) / 2 // n = 40, even
	// √dFIL statistics (Edmunds' tables' "dFIL") of the one-repeat run, by hand.
	var sumRoot float64
	for _, v := range sorted {
		sumRoot += math.Sqrt(v)
	}
	if sq := res.SqrtDFIL; sq == nil || sq.Runs != 1 || sq.Max != math.Sqrt(sorted[n-1]) ||
		math.Abs(sq.Median-(math.Sqrt(sorted[n/2-1])+math.Sqrt(sorted[n/2]))/2) > 1e-15 || math.Abs(sq.Mean-sumRoot/float64(n)) > 1e-12*sq.Mean {
		t.Errorf("sqrt_dfil %+v, want max %v mean %v", sq, math.Sqrt(sorted[n-1]), sumRoot/float64(n))
	}
	// Two repeats: the statistic is each repeat's, averaged (not the merged vector's).
	cfg2 := cfg
	cfg2.Repeats = 2
	res2, err := Run(context.Background(), cfg2, Options{Data: split})
	if err != nil {
		t.Fatal(err)
	}
	var wantMax float64
	for _, rr := range res2.Repeats {
		wantMax += math.Sqrt(slices.Max(rr.DFIL)) / 2
	}
	if sq := res2.SqrtDFIL; sq == nil || sq.Runs != 2 || math.Abs(sq.Max-wantMax) > 1e-15*wantMax || sq.Max == math.Sqrt(res2.DFILMax) {
		t.Errorf("two repeats: sqrt_dfil %+v, want max %v (√ of merged max %v)", sq, wantMax, math.Sqrt(res2.DFILMax))
	}
	for _, in := range []string{est, filepath.Join(est, DFILFile)} {
		rep, err := SummarizeFIL([]string{in}, "")
		if err != nil {
			t.Fatal(err)
		}
		s := rep.Summary
		if s.Count != n || s.Max != sorted[n-1] || s.Min != sorted[0] || s.Median != wantMedian || s.MSEBoundMax != 1/sorted[n-1] {
			t.Errorf("%s: summary %+v, want max %v median %v", in, s, sorted[n-1], wantMedian)
		}
		if !strings.Contains(rep.Estimator, "random-coordinate estimate") || !strings.Contains(rep.Estimator, fmt.Sprintf("k = 5 of d = %d", res.InputDim)) ||
			rep.Sources[0].Run != est || *rep.Sources[0].Exact {
			t.Errorf("%s: estimator %q, source %+v", in, rep.Estimator, rep.Sources[0])
		}
	}
	rep, err := SummarizeFIL([]string{exact}, "")
	if err != nil || !strings.HasPrefix(rep.Estimator, fmt.Sprintf("exact: the trace of the Fisher information over all d = %d", res.InputDim)) {
		t.Fatalf("exact run: %v, %+v", err, rep)
	}
	bare := filepath.Join(t.TempDir(), "copy.npy")
	if err := fil.Save(bare, res.DFIL); err != nil {
		t.Fatal(err)
	}
	rep, err = SummarizeFIL([]string{bare, est}, "")
	if err != nil || rep.Sources[0].Exact != nil || !strings.HasPrefix(rep.Sources[0].Estimator, "not recorded") ||
		!strings.HasPrefix(rep.Estimator, "mixed") || rep.Summary.Max != sorted[n-1] {
		t.Fatalf("bare copy + run: %v, %+v", err, rep)
	}
	var b strings.Builder
	rep.WriteText(&b)
	if !strings.Contains(b.String(), "dFIL estimator: mixed") || !strings.Contains(b.String(), "estimates of the bounds") {
		t.Errorf("text:\n%s", b.String())
	}

	noFIL := filepath.Join(t.TempDir(), "nofil")
	cfg.FILExact, cfg.FILCoords = false, 0
	if _, err := Run(context.Background(), cfg, Options{Out: noFIL, Data: split}); err != nil {
		t.Fatal(err)
	}
	unfinished := t.TempDir()
	if err := os.WriteFile(filepath.Join(unfinished, CheckpointFile), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{noFIL: "accounted no FIL", unfinished: "unfinished", "": "no such file"} {
		if _, err := SummarizeFIL([]string{in}, ""); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
	if _, err := SummarizeFIL(nil, ""); err == nil {
		t.Error("no input accepted")
	}
}
