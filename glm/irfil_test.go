package glm

import (
	"math"
	"testing"
)

func TestIRFILEqualisesEtaSynthetic(t *testing.T) {
	dt := synth(150, 10, 7)
	res, err := IRFIL(dt, IRFILOptions{Config: Config{Loss: Logistic, Lambda: 1e-2, Bias: true}, Sigma: 1, Iters: 15})
	if err != nil {
		t.Fatal(err)
	}
	first, last := res.Iterations[0], res.Iterations[len(res.Iterations)-1]
	if len(res.Iterations) != 16 {
		t.Fatalf("%d iteration records, want 16", len(res.Iterations))
	}
	if !(first.Spread > 0.1) {
		t.Fatalf("initial spread %v: test data not heterogeneous enough", first.Spread)
	}
	if last.Spread > 0.01 {
		t.Fatalf("η spread after 15 iterations %.4g (initial %.4g)", last.Spread, first.Spread)
	}
	// Independent check of the final η with a fresh fit at the final weights.
	m, err := Fit(dt, Config{Loss: Logistic, Lambda: 1e-2, Bias: true, Weights: res.Weights})
	if err != nil {
		t.Fatal(err)
	}
	an, _ := NewAnalysis(m)
	jac, _ := an.Jacobian(5)
	_, s2 := denseNorms(t, jac)
	// res.Eta and res.Weights belong to the same (last) fitted model.
	if math.Abs(math.Sqrt(s2)-res.Eta[5]) > 1e-7*res.Eta[5] {
		t.Fatalf("η(5) = %v, dense recomputation %v", res.Eta[5], math.Sqrt(s2))
	}
}

func TestIRFILClampAndErrors(t *testing.T) {
	dt := synth(60, 5, 8)
	res, err := IRFIL(dt, IRFILOptions{Config: Config{Loss: LeastSquares, Lambda: 1e-1, Bias: true}, Sigma: 1, Iters: 5, ClampLo: 0.9, ClampHi: 1.1})
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range res.Weights {
		if w < 0.9 || w > 1.1 {
			t.Fatalf("weight %d = %v outside the clamp", i, w)
		}
	}
	if res.Iterations[1].Clamped == 0 {
		t.Fatal("tight clamp never hit")
	}
	for _, o := range []IRFILOptions{
		{Config: Config{Lambda: 1}, Sigma: 1, Iters: -1},
		{Config: Config{Lambda: 1}, Sigma: 1, Iters: 2, ClampLo: 2, ClampHi: 1},
		{Config: Config{Lambda: 1}, Sigma: 0, Iters: 2},
	} {
		if _, err := IRFIL(dt, o); err == nil {
			t.Fatalf("options %+v accepted", o)
		}
	}
}
