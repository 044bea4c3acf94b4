package glm

import (
	"context"
	"encoding/csv"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dpfil/dpfil/accounting"
)

// TestAccountPolicy checks the radius and loss-bound policy of Fitted.Account against
// the formulas Δ = 2·L·R/(nλ), ε₂ = Δ²/σ², L = 1 (logistic) or 1 + R/√λ (least
// squares, unweighted), computed here independently from the data.
func TestAccountPolicy(t *testing.T) {
	for _, tc := range []struct {
		loss   string
		bias   bool
		radius float64
	}{{"logistic", false, 0}, {"logistic", true, 0}, {"logistic", false, 40}, {"lsq", true, 0}, {"lsq", false, 35}} {
		s := Setup{Dataset: "mnist01-embedded", Loss: tc.loss, Lambda: 0.05, Sigma: 0.3, Bias: tc.bias, TrainSubset: 60, Radius: tc.radius}
		f, err := s.Fit()
		if err != nil {
			t.Fatal(err)
		}
		maxNorm := 0.0
		for i := 0; i < f.Train.N; i++ {
			ss := 0.0
			if tc.bias {
				ss = 1
			}
			for _, v := range f.Train.Row(i) {
				ss += v * v
			}
			maxNorm = math.Max(maxNorm, math.Sqrt(ss))
		}
		r := maxNorm
		if tc.radius > 0 {
			r = tc.radius
		}
		l := 1.0
		if tc.loss == "lsq" {
			l = 1 + r/math.Sqrt(s.Lambda)
		}
		delta := 2 * l * r / (60 * s.Lambda)
		a, err := f.Account()
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(a.R-r) > 1e-12*r || math.Abs(a.Sensitivity-delta) > 1e-12*delta || math.Abs(a.Eps2-delta*delta/0.09) > 1e-12*a.Eps2 {
			t.Fatalf("%+v: got %+v, want R %v Δ %v", tc, a, r, delta)
		}
		rel, err := f.Release()
		if err != nil {
			t.Fatal(err)
		}
		if rel.N != 60 || rel.R != a.R || float64(rel.Eps2) != a.Eps2 || rel.P != 784+map[bool]int{true: 1}[tc.bias] {
			t.Fatalf("release %+v", rel)
		}
		// Issue 27: a data-dependent R is labelled as no DP guarantee.
		var b strings.Builder
		rel.WriteText(&b)
		fromData := tc.radius == 0
		if (rel.RSource == RadiusFromData) != fromData || strings.Contains(rel.Eps2Guarantee, "not a DP guarantee") != fromData ||
			strings.Contains(b.String(), "not a DP guarantee") != fromData {
			t.Errorf("%+v: r_source %q, eps2_guarantee %q, summary:\n%s", tc, rel.RSource, rel.Eps2Guarantee, b.String())
		}
	}
	s := Setup{Dataset: "mnist01-embedded", Loss: "logistic", Lambda: 0.05, Sigma: 0.3, TrainSubset: 60, Radius: 0.5}
	f, err := s.Fit()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Account(); err == nil || !strings.Contains(err.Error(), "below the largest") {
		t.Fatalf("radius below the data accepted: %v", err)
	}
}

func TestSetupValidate(t *testing.T) {
	good := Setup{Loss: "logistic", Lambda: 1, Sigma: 1}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		mod  func(*Setup)
		want string
	}{
		{func(s *Setup) { s.Loss = "hinge" }, "hinge"},
		{func(s *Setup) { s.Lambda = 0 }, "lambda"},
		{func(s *Setup) { s.Sigma = math.Inf(1) }, "sigma"},
		{func(s *Setup) { s.TrainSubset = -1 }, "subset"},
		{func(s *Setup) { s.Radius = math.NaN() }, "radius"},
		{func(s *Setup) { s.Lambda, s.Sigma, s.Radius = math.NaN(), -1, -1 }, "lambda"}, // first field wins
	} {
		s := good
		tc.mod(&s)
		if err := s.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want %q", err, tc.want)
		}
	}
}

func TestSpreadAndExtremes(t *testing.T) {
	s := SpreadOf([]float64{3, 1, 2, 10})
	if s.Max != 10 || s.Median != 2.5 || s.Mean != 4 {
		t.Fatalf("spread %+v", s)
	}
	if s := SpreadOf([]float64{3, 1, 2}); s.Median != 2 {
		t.Fatalf("odd median %v", s.Median)
	}
	if s := SpreadOf(nil); !math.IsNaN(s.Max) || !math.IsNaN(s.Median) || !math.IsNaN(s.Mean) {
		t.Fatalf("empty spread %+v", s)
	}
	top, bottom := Extremes([]float64{5, 1, 9, 1, 7}, 2)
	if top[0] != 2 || top[1] != 4 || bottom[0] != 1 || bottom[1] != 3 {
		t.Fatalf("extremes %v %v", top, bottom)
	}
}

func TestParseColumnsAndBlock(t *testing.T) {
	cols, err := ParseColumns("3-5, 9,0", 10)
	if err != nil || len(cols) != 5 || cols[0] != 3 || cols[2] != 5 || cols[3] != 9 || cols[4] != 0 {
		t.Fatalf("%v %v", cols, err)
	}
	for _, bad := range []string{"5-2", "10", "1,1", "x", "-1", "2-12"} {
		if _, err := ParseColumns(bad, 10); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	b, err := BlockColumns([]int{1, 2, 2, 3}, 4, 5)
	if want := []int{7, 8, 9, 12, 13, 14}; err != nil || len(b) != len(want) {
		t.Fatalf("block %v %v", b, err)
	} else {
		for i := range want {
			if b[i] != want[i] {
				t.Fatalf("block %v, want %v", b, want)
			}
		}
	}
	for _, bad := range [][]int{{0, 0, 2}, {3, 0, 2, 1}, {0, 0, 0, 1}, {-1, 0, 1, 1}} {
		if _, err := BlockColumns(bad, 4, 5); err == nil {
			t.Errorf("block %v accepted", bad)
		}
	}
	if _, err := BlockColumns([]int{0, 0, 1, 1}, 0, 0); err == nil {
		t.Error("block of a table accepted")
	}
}

func TestInvertExperimentValidate(t *testing.T) {
	good := InvertExperiment{Synthetic: SyntheticIWPC, Loss: "auto", AttrType: "auto", Lambda: 1e-2, Sigma: 1e-2, Trials: 1}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		mod  func(*InvertExperiment)
		want string
	}{
		{func(e *InvertExperiment) { e.CSVPath = "x.csv" }, "at most one"},
		{func(e *InvertExperiment) { e.Rows = -1 }, "rows"},
		{func(e *InvertExperiment) { e.Loss = "probit" }, "probit"},
		{func(e *InvertExperiment) { e.Lambda = 0 }, "lambda"},
		{func(e *InvertExperiment) { e.Sigma = 0 }, "sigma"},
		{func(e *InvertExperiment) { e.PCA = -1 }, "pca"},
		{func(e *InvertExperiment) { e.Columns, e.Block = "a", []int{0, 0, 1, 1} }, "not both"},
		{func(e *InvertExperiment) { e.AttrType = "both" }, "both"},
		{func(e *InvertExperiment) { e.Trials = 0 }, "trials"},
		{func(e *InvertExperiment) { e.NoiseFree, e.IRFIL = true, 1 }, "IRFIL"},
		{func(e *InvertExperiment) { e.Box = []float64{1, 0} }, "box"},
		{func(e *InvertExperiment) { e.Box = []float64{1} }, "box"},
		{func(e *InvertExperiment) { e.NoiseFree, e.Scatter = true, "s.png" }, "scatter"},
	} {
		e := good
		tc.mod(&e)
		if err := e.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want %q", err, tc.want)
		}
	}
	e := good
	e.Sigma, e.NoiseFree = 0, true
	if err := e.Validate(); err != nil {
		t.Fatalf("noise-free: %v", err)
	}
}

// TestRunInvertSummary checks the report's comparison with the CRB against its own
// per-target outcomes.
func TestRunInvertSummary(t *testing.T) {
	r, err := RunInvert(context.Background(), InvertExperiment{Synthetic: SyntheticIWPC, Rows: 150, Loss: "auto", AttrType: "auto",
		Lambda: 1e-2, Sigma: 0.05, Bias: true, UnitBall: true, Targets: 12, Trials: 6, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	if r.Targets != 12 || len(r.PerTarget) != 12 || r.Columns[0] != "vkorc1_a" || !r.Discrete || r.Loss != "lsq" {
		t.Fatalf("report %+v", r)
	}
	below, ratios := 0, []float64{}
	for _, tg := range r.PerTarget {
		if tg.WhiteMSE < tg.CRB {
			below++
		}
		if tg.CRB > 0 && !math.IsInf(tg.CRB, 0) && tg.WhiteMSE > 0 {
			ratios = append(ratios, tg.WhiteMSE/tg.CRB)
		}
	}
	if r.BelowCRB != below {
		t.Fatalf("below CRB %d, targets say %d", r.BelowCRB, below)
	}
	if len(ratios) > 0 && float64(r.MedianRatio) != SpreadOf(ratios).Median {
		t.Fatalf("median ratio %v, targets say %v", r.MedianRatio, SpreadOf(ratios).Median)
	}
}

// TestRunFILFiles checks the FIL report against the CSV it wrote.
func TestRunFILFiles(t *testing.T) {
	out := t.TempDir()
	total, calls := 0, 0
	r, err := RunFIL(FILExperiment{Setup: Setup{Dataset: "mnist01-embedded", Loss: "logistic", Lambda: 1e-2, Sigma: 1e-2,
		TrainSubset: 40, Out: out}, Columns: "400-403",
		Progress: func(n, tot int) { calls += n; total = tot }})
	if err != nil {
		t.Fatal(err)
	}
	if total != 40 || calls != 40 || r.AttrColumns != 4 || len(r.Files) != 5 {
		t.Fatalf("progress %d/%d, report %+v", calls, total, r)
	}
	f, err := os.Open(filepath.Join(out, "glm_fil.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var dfil []float64
	above := 0
	for _, row := range rows[1:] {
		d, _ := strconv.ParseFloat(row[2], 64)
		dfil = append(dfil, d)
		if 1/d > 1 {
			above++
		}
	}
	npy, err := accounting.LoadDFIL(filepath.Join(out, "glm_dfil.npy"))
	if err != nil || len(npy) != len(dfil) {
		t.Fatalf("glm_dfil.npy: %d values, %v; CSV %d", len(npy), err, len(dfil))
	}
	for i := range npy {
		if math.Abs(npy[i]-dfil[i]) > 1e-9*dfil[i] {
			t.Fatalf("example %d: npy dFIL %v, CSV %v", i, npy[i], dfil[i])
		}
	}
	s := SpreadOf(dfil)
	if r.BoundAbove1 != above || math.Abs(float64(r.DFILMedian)-s.Median) > 1e-9*s.Median || math.Abs(float64(r.MSEBoundFILMin)*float64(r.DFILMax)-1) > 1e-15 {
		t.Fatalf("report %+v, CSV above %d median %v", r, above, s.Median)
	}
}
