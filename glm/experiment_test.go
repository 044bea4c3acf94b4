package glm

import (
	"encoding/csv"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	dfilfile "github.com/dpfil/dpfil/train/fil"
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

func TestParseColumns(t *testing.T) {
	cols, err := ParseColumns("3-5, 9,0", 10)
	if err != nil || len(cols) != 5 || cols[0] != 3 || cols[2] != 5 || cols[3] != 9 || cols[4] != 0 {
		t.Fatalf("%v %v", cols, err)
	}
	for _, bad := range []string{"5-2", "10", "1,1", "x", "-1", "2-12"} {
		if _, err := ParseColumns(bad, 10); err == nil {
			t.Errorf("%q accepted", bad)
		}
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
	if total != 40 || calls != 40 || r.AttrColumns != 4 || len(r.Files) != 8 {
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
	npy, err := dfilfile.Load(filepath.Join(out, "glm_dfil.npy"))
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

// TestSetupPCAFeatures checks the --pca plumbing: the model is fitted on the unit-ball +
// PCA features of the training images, the test split goes through the same map, the
// images stay raw, and the release names the preprocessing.
func TestSetupPCAFeatures(t *testing.T) {
	s := Setup{Dataset: "mnist01-embedded", Loss: "lsq", Lambda: 1e-6, Sigma: 1, TrainSubset: 200, PCA: 5, WithLabel: true, Out: t.TempDir()}
	f, rel, err := s.FitRelease()
	if err != nil {
		t.Fatal(err)
	}
	if f.Train.D != 5 || f.Images.D != 784 || f.Model.P != 5 || rel.D != 5 || rel.Preprocess != "unit-ball+pca-5" || !rel.WithLabel {
		t.Fatalf("train d %d, images d %d, p %d, release %+v", f.Train.D, f.Images.D, f.Model.P, rel)
	}
	pre, _, err := FeaturePreprocess(f.Images.X, f.Images.N, f.Images.D, 5)
	if err != nil {
		t.Fatal(err)
	}
	want, err := pre.ApplyData(f.Images)
	if err != nil {
		t.Fatal(err)
	}
	for k := range want.X {
		if want.X[k] != f.Train.X[k] {
			t.Fatalf("feature %d: %v, want %v", k, f.Train.X[k], want.X[k])
		}
	}
	if f.Test == nil || f.Test.D != 5 {
		t.Fatal("test split not projected")
	}
	ds, err := Setup{Dataset: "mnist01-embedded", Loss: "lsq", Lambda: 1, Sigma: 1}.Fit()
	if err != nil {
		t.Fatal(err)
	}
	z := make([]float64, 5)
	pre.Apply(ds.Test.Row(3), z)
	for c := range z {
		if math.Abs(z[c]-f.Test.Row(3)[c]) > 1e-12 {
			t.Fatalf("test row 3 feature %d: %v, want %v", c, f.Test.Row(3)[c], z[c])
		}
	}
	if rel.PCAExplained != pre.Explained {
		t.Errorf("explained %v, want %v", rel.PCAExplained, pre.Explained)
	}
	for _, bad := range []int{-1, 785, 200} {
		s.PCA = bad
		if _, err := s.Fit(); err == nil {
			t.Errorf("PCA %d accepted", bad)
		}
	}
}
