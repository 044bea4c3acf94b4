package glm

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
)

func invTable(t *testing.T, kind string, n int) *Table {
	t.Helper()
	tab, err := GenerateTable(kind, n, 7)
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

func TestInvertNoiseFreeExact(t *testing.T) {
	cases := []struct {
		name     string
		kind     string
		loss     Loss
		cols     []int
		discrete bool
		pca      int
	}{
		{"lsq-numeric", SyntheticIWPC, LeastSquares, []int{1}, false, 0},
		{"lsq-block3", SyntheticIWPC, LeastSquares, []int{0, 1, 2}, false, 0},
		{"lsq-onehot", SyntheticIWPC, LeastSquares, []int{4, 5}, true, 0},
		{"lsq-pca", SyntheticIWPC, LeastSquares, []int{2}, false, 4},
		{"logistic-numeric", SyntheticAdult, Logistic, []int{1}, false, 0},
		{"logistic-binary", SyntheticAdult, Logistic, []int{4}, true, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tab := invTable(t, c.kind, 150)
			pre, err := NewPreprocess(tab, true, c.pca)
			if err != nil {
				t.Fatal(err)
			}
			iv, err := NewInverter(tab, InvertConfig{Loss: c.loss, Lambda: 1e-2, Bias: true, Pre: pre})
			if err != nil {
				t.Fatal(err)
			}
			prior, err := NewPrior(tab, c.cols, c.discrete)
			if err != nil {
				t.Fatal(err)
			}
			res, err := iv.RunInversion(InversionOptions{NoiseFree: true, Prior: prior, Targets: []int{0, 3, 17, 42}, Trials: 1, Workers: 2})
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

// The Jacobian of the refitted minimiser equals central finite differences, for the
// attribute columns (through PCA) and the label.
func TestInvertJacobianFD(t *testing.T) {
	for _, loss := range []Loss{LeastSquares, Logistic} {
		kind := SyntheticIWPC
		if loss == Logistic {
			kind = SyntheticAdult
		}
		tab := invTable(t, kind, 80)
		pre, err := NewPreprocess(tab, true, 3)
		if err != nil {
			t.Fatal(err)
		}
		iv, err := NewInverter(tab, InvertConfig{Loss: loss, Lambda: 1e-2, Bias: true, Pre: pre, Weights: weightsRamp(tab.N)})
		if err != nil {
			t.Fatal(err)
		}
		const row = 5
		cols := []int{0, 2}
		j, err := iv.Jacobian(row, cols, true)
		if err != nil {
			t.Fatal(err)
		}
		const h = 1e-5
		zi := make([]float64, iv.P)
		for c := 0; c <= len(cols); c++ {
			refit := func(delta float64) []float64 {
				x := append([]float64(nil), tab.Row(row)...)
				tt := tab.T[row]
				if c < len(cols) {
					x[cols[c]] += delta
				} else {
					tab.T[row] += delta
				}
				iv.features(x, zi)
				w, err := iv.solve(row, zi, iv.W)
				tab.T[row] = tt
				if err != nil {
					t.Fatal(err)
				}
				return w
			}
			wp, wm := refit(h), refit(-h)
			for a := 0; a < iv.P; a++ {
				fd := (wp[a] - wm[a]) / (2 * h)
				if d := math.Abs(fd - j.At(a, c)); d > 1e-6*(1+math.Abs(fd)) {
					t.Errorf("%s: J[%d,%d] = %g, finite difference %g", loss, a, c, j.At(a, c), fd)
				}
			}
		}
	}
}

func weightsRamp(n int) []float64 {
	w := make([]float64, n)
	for i := range w {
		w[i] = 0.5 + float64(i%5)/4
	}
	return w
}

// The white-box attack is the maximum-likelihood estimator of the attribute, so at
// small σ its MSE matches the Cramér–Rao prediction Tr(I_S⁻¹)/|S| (seed 001 eqs. 4–5).
func TestInvertMonteCarloMatchesFIL(t *testing.T) {
	cases := []struct {
		kind string
		loss Loss
		cols []int
	}{
		{SyntheticIWPC, LeastSquares, []int{1}},
		{SyntheticIWPC, LeastSquares, []int{0, 2}},
		{SyntheticAdult, Logistic, []int{3}},
	}
	for _, c := range cases {
		tab := invTable(t, c.kind, 120)
		iv, err := NewInverter(tab, InvertConfig{Loss: c.loss, Lambda: 1e-2, Bias: true})
		if err != nil {
			t.Fatal(err)
		}
		prior, err := NewPrior(tab, c.cols, false)
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
			res, err := iv.RunInversion(InversionOptions{Sigma: sigma, Prior: prior, Targets: []int{row}, Trials: 800, Seed: 3, Predict: true, Workers: 2})
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
	tab := invTable(t, SyntheticIWPC, 300)
	iv, err := NewInverter(tab, InvertConfig{Loss: LeastSquares, Lambda: 1e-2, Bias: true})
	if err != nil {
		t.Fatal(err)
	}
	prior, err := NewPrior(tab, []int{4, 5}, true)
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
	res, err := iv.RunInversion(InversionOptions{Sigma: 1e-3, Prior: prior, Targets: targets, Trials: 3, Seed: 1, Predict: true, Workers: 2})
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

func TestInvertCSVRoundTrip(t *testing.T) {
	tab := invTable(t, SyntheticIWPC, 20)
	var buf bytes.Buffer
	if err := tab.WriteCSV(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := ReadCSV(bytes.NewReader(buf.Bytes()), "dose")
	if err != nil {
		t.Fatal(err)
	}
	if back.N != tab.N || back.D != tab.D || strings.Join(back.Names, ",") != strings.Join(tab.Names, ",") {
		t.Fatalf("round trip: %d×%d %v", back.N, back.D, back.Names)
	}
	for i := range tab.X {
		if back.X[i] != tab.X[i] {
			t.Fatalf("value %d: %v != %v", i, back.X[i], tab.X[i])
		}
	}
	// Target by position (last column) when not named; a named middle column works.
	mid, err := ReadCSV(strings.NewReader("a,y,b\n1,2,3\n4,5,6\n"), "y")
	if err != nil || mid.D != 2 || mid.T[1] != 5 || mid.Row(1)[1] != 6 {
		t.Fatalf("middle target: %+v %v", mid, err)
	}
	for _, bad := range []string{"", "a\n1\n", "a,b\n1,x\n", "a,a\n1,2\n", "a,b\n1,2,3\n", "a,b\n", "a,b\n1,NaN\n"} {
		if _, err := ReadCSV(strings.NewReader(bad), ""); err == nil {
			t.Errorf("ReadCSV(%q) accepted", bad)
		}
	}
	if _, err := ReadCSV(strings.NewReader("a,b\n1,2\n"), "c"); err == nil {
		t.Error("missing target column accepted")
	}
}

func TestInvertPreprocess(t *testing.T) {
	tab := invTable(t, SyntheticAdult, 100)
	pre, err := NewPreprocess(tab, true, 3)
	if err != nil {
		t.Fatal(err)
	}
	// Rows of A/s are orthonormal principal directions.
	var g mat.Dense
	g.Mul(pre.A, pre.A.T())
	for a := 0; a < 3; a++ {
		for b := 0; b < 3; b++ {
			want := 0.0
			if a == b {
				want = pre.Scale * pre.Scale
			}
			if math.Abs(g.At(a, b)-want) > 1e-12 {
				t.Fatalf("AAᵀ[%d,%d] = %g, want %g", a, b, g.At(a, b), want)
			}
		}
	}
	if !(pre.Explained > 0 && pre.Explained <= 1) || pre.String() != "unit-ball+pca-3" {
		t.Errorf("explained %v, %s", pre.Explained, pre)
	}
	ub, err := NewPreprocess(tab, true, 0)
	if err != nil {
		t.Fatal(err)
	}
	mx := 0.0
	z := make([]float64, tab.D)
	for i := 0; i < tab.N; i++ {
		ub.Apply(tab.Row(i), z)
		mx = math.Max(mx, norm2(z))
	}
	if math.Abs(mx-1) > 1e-12 {
		t.Errorf("max norm after unit-ball scaling %v", mx)
	}
	if _, err := NewPreprocess(tab, false, tab.D+1); err == nil {
		t.Error("PCA dimension above D accepted")
	}
}

func TestAttributeIRFILEqualises(t *testing.T) {
	tab := invTable(t, SyntheticIWPC, 120)
	w, steps, err := AttributeIRFIL(tab, InvertConfig{Loss: LeastSquares, Lambda: 1e-2, Bias: true}, []int{1}, 1, 6)
	if err != nil {
		t.Fatal(err)
	}
	if len(w) != tab.N || len(steps) != 7 {
		t.Fatalf("%d weights, %d steps", len(w), len(steps))
	}
	if !(steps[6].Spread < 0.2*steps[0].Spread) {
		t.Errorf("spread %.4f → %.4f did not shrink 5×", steps[0].Spread, steps[6].Spread)
	}
}

func TestInvertRejects(t *testing.T) {
	tab := invTable(t, SyntheticIWPC, 30)
	if _, err := NewInverter(tab, InvertConfig{Loss: Logistic, Lambda: 1e-2}); err == nil {
		t.Error("logistic on real targets accepted")
	}
	if _, err := NewInverter(tab, InvertConfig{Loss: LeastSquares, Lambda: 0}); err == nil {
		t.Error("λ = 0 accepted")
	}
	iv, err := NewInverter(tab, InvertConfig{Loss: LeastSquares, Lambda: 1e-2, Bias: true})
	if err != nil {
		t.Fatal(err)
	}
	prior, _ := NewPrior(tab, []int{0}, false)
	for _, o := range []InversionOptions{
		{Sigma: 0, Prior: prior, Targets: []int{0}, Trials: 1},
		{Sigma: 1, Prior: prior, Targets: []int{99}, Trials: 1},
		{Sigma: 1, Prior: prior, Targets: []int{0}, Trials: 0},
		{Sigma: 1, Prior: nil, Targets: []int{0}, Trials: 1},
	} {
		if _, err := iv.RunInversion(o); err == nil {
			t.Errorf("accepted %+v", o)
		}
	}
	if _, err := NewPrior(invTable(t, SyntheticIWPC, 100), []int{0}, true); err == nil {
		t.Error("continuous column accepted as a discrete attribute with > 64 values")
	}
}
