package glm

import (
	"math"
	"testing"
)

func TestSpearmanAgainstHandComputedRanks(t *testing.T) {
	// x ranks 1, 2.5, 2.5, 4, 5 (a tie); y ranks 2, 1, 3, 5, 4. Pearson of the ranks,
	// worked by hand: mean 3; Σdx·dy = (−2)(−1) + (−0.5)(−2) + (−0.5)(0) + (1)(2) + (2)(1) = 7,
	// Σdx² = 4 + 0.25 + 0.25 + 1 + 4 = 9.5, Σdy² = 10 → 7/√95.
	x := []float64{0.1, 0.5, 0.5, 2, 9}
	y := []float64{3, -1, 4, 40, 10}
	got, err := Spearman(x, y)
	if err != nil {
		t.Fatal(err)
	}
	if want := 7 / math.Sqrt(95); math.Abs(got-want) > 1e-14 {
		t.Fatalf("Spearman %v, want %v", got, want)
	}
	// Invariant under increasing transforms; −1 for a decreasing one.
	ex := make([]float64, len(x))
	neg := make([]float64, len(x))
	for i, v := range x {
		ex[i], neg[i] = math.Exp(3*v), -v
	}
	if r, _ := Spearman(ex, x); math.Abs(r-1) > 1e-14 {
		t.Errorf("Spearman of a monotone transform %v", r)
	}
	if r, _ := Spearman(neg, x); math.Abs(r+1) > 1e-14 {
		t.Errorf("Spearman of a decreasing transform %v", r)
	}
	if _, err := Spearman(x, y[:3]); err == nil {
		t.Error("unequal lengths accepted")
	}
	if _, err := Spearman([]float64{1, math.NaN()}, []float64{1, 2}); err == nil {
		t.Error("NaN accepted")
	}
}

func TestEtaByClassAndHeuristics(t *testing.T) {
	y := []float64{0, 1, 1, 0, 1}
	eta := []float64{4, 1, 2, 6, 3} // examples 4, 0, 1 (η[k] is example idx[k])
	idx := []int{0, 1, 2, 3, 4}
	all, cls, err := EtaByClass(eta, idx, y)
	if err != nil {
		t.Fatal(err)
	}
	// label 0: {4, 6} mean 5, sample std √2; label 1: {1, 2, 3} mean 2, std 1; all:
	// mean 3.2, sample variance (0.64+4.84+1.44+7.84+0.04)/4 = 3.7.
	if cls[0].N != 2 || math.Abs(cls[0].Mean-5) > 1e-15 || math.Abs(cls[0].Std-math.Sqrt2) > 1e-15 ||
		cls[1].N != 3 || math.Abs(cls[1].Mean-2) > 1e-15 || math.Abs(cls[1].Std-1) > 1e-15 ||
		math.Abs(all.Mean-3.2) > 1e-15 || math.Abs(all.Std-math.Sqrt(3.7)) > 1e-14 {
		t.Fatalf("all %+v, classes %+v", all, cls)
	}
	if _, _, err := EtaByClass(eta, []int{0, 1, 2, 3, 9}, y); err == nil {
		t.Error("index out of range accepted")
	}
	// 20 examples: η = 1…20, loss = η/10 except a near-zero loss at the highest η,
	// gradient norm decreasing in η; the deciles are the two lowest- and the two
	// highest-η examples.
	n := 20
	e, l, g := make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range e {
		e[i] = float64(i + 1)
		l[i] = 0.1 * float64(i+1)
		g[i] = float64(n - i)
	}
	l[n-1] = 0.001
	h, err := CompareEtaHeuristics(e, l, g)
	if err != nil {
		t.Fatal(err)
	}
	if h.LowEtaLossMax != 0.2 || h.HighEtaLossMin != 0.001 || math.Abs(h.HighEtaLossMax-1.9) > 1e-15 || math.Abs(h.LossMax-1.9) > 1e-15 ||
		h.GradNormMax != 20 || h.LowEtaGradNormMax != 20 || math.Abs(h.SpearmanGradNorm+1) > 1e-14 {
		t.Fatalf("%+v", h)
	}
	if _, err := CompareEtaHeuristics(e[:9], l[:9], g[:9]); err == nil {
		t.Error("9 values accepted")
	}
}

// TestExampleLossGradientByFiniteDifferences checks ExampleLoss's gradient norm
// against central differences of the per-example loss in w.
func TestExampleLossGradientByFiniteDifferences(t *testing.T) {
	for _, loss := range []Loss{Logistic, LeastSquares} {
		dt := synth(60, 4, 3)
		m, err := Fit(dt, Config{Loss: loss, Lambda: 1e-2, Bias: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, i := range []int{0, 7, 33} {
			f, gn := m.ExampleLoss(i)
			lossAt := func(w []float64) float64 {
				v, _, _ := loss.derivs(m.MarginOf(w, dt.Row(i)), dt.Y[i])
				return v
			}
			if math.Abs(lossAt(m.W)-f) > 1e-15*(1+f) {
				t.Fatalf("%s example %d: loss %v, want %v", loss, i, f, lossAt(m.W))
			}
			const h = 1e-6
			g2 := 0.0
			for a := range m.W {
				wp, wm := append([]float64(nil), m.W...), append([]float64(nil), m.W...)
				wp[a] += h
				wm[a] -= h
				d := (lossAt(wp) - lossAt(wm)) / (2 * h)
				g2 += d * d
			}
			if math.Abs(math.Sqrt(g2)-gn) > 1e-7*(1+gn) {
				t.Fatalf("%s example %d: gradient norm %v, finite differences %v", loss, i, gn, math.Sqrt(g2))
			}
		}
	}
}
