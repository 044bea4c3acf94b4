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

func TestInverterRejects(t *testing.T) {
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
	for _, cols := range [][]int{nil, {-1}, {tab.D}, {1, 1}} {
		if err := iv.CheckCols(cols); err == nil {
			t.Errorf("columns %v accepted", cols)
		}
	}
}
