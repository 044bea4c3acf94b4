package attack

import (
	"context"
	"math"
	"sort"
	"strings"
	"testing"

	"github.com/dpfil/dpfil/glm"
)

func invTable(t *testing.T, kind string, n int) *glm.Table {
	t.Helper()
	tab, err := glm.GenerateTable(kind, n, 7)
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

func TestInvertNoiseFreeExact(t *testing.T) {
	cases := []struct {
		name     string
		kind     string
		loss     glm.Loss
		cols     []int
		discrete bool
		pca      int
	}{
		{"lsq-numeric", glm.SyntheticIWPC, glm.LeastSquares, []int{1}, false, 0},
		{"lsq-block3", glm.SyntheticIWPC, glm.LeastSquares, []int{0, 1, 2}, false, 0},
		{"lsq-onehot", glm.SyntheticIWPC, glm.LeastSquares, []int{4, 5}, true, 0},
		{"lsq-pca", glm.SyntheticIWPC, glm.LeastSquares, []int{2}, false, 4},
		{"logistic-numeric", glm.SyntheticAdult, glm.Logistic, []int{1}, false, 0},
		{"logistic-binary", glm.SyntheticAdult, glm.Logistic, []int{4}, true, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tab := invTable(t, c.kind, 150)
			pre, err := glm.NewPreprocess(tab, true, c.pca)
			if err != nil {
				t.Fatal(err)
			}
			iv, err := glm.NewInverter(tab, glm.InvertConfig{Loss: c.loss, Lambda: 1e-2, Bias: true, Pre: pre})
			if err != nil {
				t.Fatal(err)
			}
			prior, err := NewAttributePrior(tab, c.cols, c.discrete)
			if err != nil {
				t.Fatal(err)
			}
			res, err := RunInversion(iv, InversionOptions{NoiseFree: true, Prior: prior, Targets: []int{0, 3, 17, 42}, Trials: 1, Workers: 2})
			if err != nil {
				t.Fatal(err)
			}
			for _, tg := range res.Targets {
				if tg.WhiteMSE > 1e-14 || (c.discrete && tg.WhiteAcc != 1) {
					t.Errorf("row %d: noise-free white-box MSE %g acc %g (true %v), residual %g", tg.Row, tg.WhiteMSE, tg.WhiteAcc, tg.True, tg.WhiteResidual)
				}
			}
		})
	}
}

// The white-box attack is the maximum-likelihood estimator of the attribute, so at
// small σ its MSE matches the Cramér–Rao prediction Tr(I_S⁻¹)/|S| (seed 001 eqs. 4–5).
func TestInvertMonteCarloMatchesFIL(t *testing.T) {
	cases := []struct {
		kind string
		loss glm.Loss
		cols []int
	}{
		{glm.SyntheticIWPC, glm.LeastSquares, []int{1}},
		{glm.SyntheticIWPC, glm.LeastSquares, []int{0, 2}},
		{glm.SyntheticAdult, glm.Logistic, []int{3}},
	}
	for _, c := range cases {
		tab := invTable(t, c.kind, 120)
		iv, err := glm.NewInverter(tab, glm.InvertConfig{Loss: c.loss, Lambda: 1e-2, Bias: true})
		if err != nil {
			t.Fatal(err)
		}
		prior, err := NewAttributePrior(tab, c.cols, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range []int{2, 9} {
			// σ small against the attribute's FIL so the linearisation holds.
			pr, err := iv.Predict(row, c.cols, 1)
			if err != nil {
				t.Fatal(err)
			}
			sigma := math.Sqrt(1e-3 / pr.CRB) // CRB ∝ σ²: 1e-3 at this σ
			res, err := RunInversion(iv, InversionOptions{Sigma: sigma, Prior: prior, Targets: []int{row}, Trials: 800, Seed: 3, Predict: true, Workers: 2})
			if err != nil {
				t.Fatal(err)
			}
			tg := res.Targets[0]
			ratio := tg.WhiteMSE / tg.CRB
			// 800 trials: the MSE estimate has relative sd ≈ √(2/800) = 5 % per column.
			if math.IsNaN(ratio) || ratio < 0.82 || ratio > 1.18 {
				t.Errorf("%s cols %v row %d: Monte Carlo MSE %.4g vs CRB %.4g (ratio %.3f)", c.kind, c.cols, tg.Row, tg.WhiteMSE, tg.CRB, ratio)
			}
			if tg.BoundDFIL > tg.CRB*(1+1e-9) || tg.BoundEta > tg.BoundDFIL*(1+1e-9) {
				t.Errorf("bound order violated: 1/η² %g ≤ 1/dFIL %g ≤ CRB %g", tg.BoundEta, tg.BoundDFIL, tg.CRB)
			}
		}
	}
}

func TestInvertBlackBoxDiscrete(t *testing.T) {
	tab := invTable(t, glm.SyntheticIWPC, 300)
	iv, err := glm.NewInverter(tab, glm.InvertConfig{Loss: glm.LeastSquares, Lambda: 1e-2, Bias: true})
	if err != nil {
		t.Fatal(err)
	}
	prior, err := NewAttributePrior(tab, []int{4, 5}, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(prior.Values) != 3 {
		t.Fatalf("one-hot group has %d values, want 3", len(prior.Values))
	}
	targets := make([]int, 40)
	for k := range targets {
		targets[k] = k
	}
	res, err := RunInversion(iv, InversionOptions{Sigma: 1e-3, Prior: prior, Targets: targets, Trials: 3, Seed: 1, Predict: true, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	// The synthetic dose depends strongly on the allele: the black-box adversary beats
	// the prior-mode baseline, and the white-box one is near-perfect at small σ.
	if !(res.BlackAcc > res.BaselineAcc+0.2) || res.WhiteAcc < 0.95 {
		t.Errorf("accuracies: white %.3f black %.3f baseline %.3f", res.WhiteAcc, res.BlackAcc, res.BaselineAcc)
	}
	if len(res.Deciles) != 10 {
		t.Errorf("%d deciles", len(res.Deciles))
	}
}

func TestInvertRejects(t *testing.T) {
	tab := invTable(t, glm.SyntheticIWPC, 30)
	if _, err := glm.NewInverter(tab, glm.InvertConfig{Loss: glm.Logistic, Lambda: 1e-2}); err == nil {
		t.Error("logistic on real targets accepted")
	}
	if _, err := glm.NewInverter(tab, glm.InvertConfig{Loss: glm.LeastSquares, Lambda: 0}); err == nil {
		t.Error("λ = 0 accepted")
	}
	iv, err := glm.NewInverter(tab, glm.InvertConfig{Loss: glm.LeastSquares, Lambda: 1e-2, Bias: true})
	if err != nil {
		t.Fatal(err)
	}
	prior, _ := NewAttributePrior(tab, []int{0}, false)
	for _, o := range []InversionOptions{
		{Sigma: 0, Prior: prior, Targets: []int{0}, Trials: 1},
		{Sigma: 1, Prior: prior, Targets: []int{99}, Trials: 1},
		{Sigma: 1, Prior: prior, Targets: []int{0}, Trials: 0},
		{Sigma: 1, Prior: nil, Targets: []int{0}, Trials: 1},
	} {
		if _, err := RunInversion(iv, o); err == nil {
			t.Errorf("accepted %+v", o)
		}
	}
	if _, err := NewAttributePrior(invTable(t, glm.SyntheticIWPC, 100), []int{0}, true); err == nil {
		t.Error("continuous column accepted as a discrete attribute with > 64 values")
	}
}

func TestInvertExperimentValidate(t *testing.T) {
	good := InvertExperiment{Synthetic: glm.SyntheticIWPC, Loss: "auto", AttrType: "auto", Lambda: 1e-2, Sigma: 1e-2, Trials: 1}
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
	r, err := RunInvert(context.Background(), InvertExperiment{Synthetic: glm.SyntheticIWPC, Rows: 150, Loss: "auto", AttrType: "auto",
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
	if len(ratios) > 0 && float64(r.MedianRatio) != glm.SpreadOf(ratios).Median {
		t.Fatalf("median ratio %v, targets say %v", r.MedianRatio, glm.SpreadOf(ratios).Median)
	}
}

// TestBlockColumns: the pixel block ROW,COL,H,W of an h×w image, and bad blocks.
func TestBlockColumns(t *testing.T) {
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

// TestInversionScores checks one trial's scores against hand values and that add and
// div turn the trials' sums into their means.
func TestInversionScores(t *testing.T) {
	truth := []float64{1, 0}
	a := scoreGuesses([]float64{1, 0}, []float64{0, 0}, []float64{3, 2}, truth)
	if want := (InversionScores{0, 0.5, 4, 1, 0, 0}); a != want {
		t.Fatalf("scores %+v, want %+v", a, want)
	}
	b := scoreGuesses([]float64{1, 2}, []float64{1, 0}, []float64{1, 0}, truth)
	if want := (InversionScores{2, 0, 0, 0, 1, 1}); b != want {
		t.Fatalf("scores %+v, want %+v", b, want)
	}
	var sum InversionScores
	sum.add(a)
	sum.add(b)
	sum.div(2)
	if want := (InversionScores{1, 0.25, 2, 0.5, 0.5, 0.5}); sum != want {
		t.Fatalf("mean %+v, want %+v", sum, want)
	}
}

// TestRunInvertDecilesByInitialEta: with IRFIL the targets are grouped into deciles by
// the η² of the unweighted model (Hannun et al. 2021, Fig. 7b), computed here
// independently from an unweighted Inverter; without IRFIL by the attacked model's η².
func TestRunInvertDecilesByInitialEta(t *testing.T) {
	e := InvertExperiment{Synthetic: glm.SyntheticIWPC, Rows: 120, Loss: "lsq", AttrType: "continuous", Columns: "0",
		Lambda: 1e-2, Sigma: 0.05, Bias: true, UnitBall: true, Targets: 30, Trials: 2, Seed: 3, IRFIL: 3}
	r, err := RunInvert(context.Background(), e)
	if err != nil {
		t.Fatal(err)
	}
	if r.DecileBy != "initial_eta_sq" || len(r.Deciles) != 10 {
		t.Fatalf("deciles by %q, %d of them", r.DecileBy, len(r.Deciles))
	}
	// The reference: the unweighted model of the same preprocessed table.
	it, err := e.table()
	if err != nil {
		t.Fatal(err)
	}
	pre, err := glm.NewPreprocess(it.t, true, 0)
	if err != nil {
		t.Fatal(err)
	}
	iv0, err := glm.NewInverter(it.t, glm.InvertConfig{Loss: glm.LeastSquares, Lambda: 1e-2, Bias: true, Pre: pre})
	if err != nil {
		t.Fatal(err)
	}
	var initial []float64
	for _, tg := range r.PerTarget {
		pr, err := iv0.Predict(tg.Row, []int{0}, 0.05)
		if err != nil {
			t.Fatal(err)
		}
		initial = append(initial, pr.EtaSq)
	}
	sort.Float64s(initial)
	for g, d := range r.Deciles {
		lo, hi := initial[g*3], initial[g*3+2]
		if math.Abs(d.EtaSqLo-lo) > 1e-9*lo || math.Abs(d.EtaSqHi-hi) > 1e-9*hi || d.N != 3 {
			t.Fatalf("decile %d: [%v, %v] n %d, want [%v, %v] n 3", g, d.EtaSqLo, d.EtaSqHi, d.N, lo, hi)
		}
	}
	e.IRFIL = 0
	r0, err := RunInvert(context.Background(), e)
	if err != nil {
		t.Fatal(err)
	}
	if r0.DecileBy != "eta_sq" {
		t.Fatalf("without IRFIL deciles by %q", r0.DecileBy)
	}
	// Without IRFIL the attacked model is the unweighted one: the same grouping.
	for g := range r0.Deciles {
		if math.Abs(r0.Deciles[g].EtaSqLo-r.Deciles[g].EtaSqLo) > 1e-9*r.Deciles[g].EtaSqLo {
			t.Fatalf("decile %d: %v without IRFIL, %v initial with IRFIL", g, r0.Deciles[g].EtaSqLo, r.Deciles[g].EtaSqLo)
		}
	}
	prior, err := NewAttributePrior(it.t, []int{0}, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := RunInversion(iv0, InversionOptions{Sigma: 1, Prior: prior, Targets: []int{0}, Trials: 1, DecileKey: []float64{1, 2}}); err == nil {
		t.Error("decile keys of the wrong length accepted")
	}
}
