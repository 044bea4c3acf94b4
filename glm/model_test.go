package glm

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// synth returns n examples with d features in [0,1] and labels from a noisy linear rule.
func synth(n, d int, seed uint64) *Data {
	rng := rand.New(rand.NewPCG(seed, 99))
	dt := &Data{N: n, D: d, X: make([]float64, n*d), Y: make([]float64, n)}
	dir := make([]float64, d)
	for j := range dir {
		dir[j] = rng.NormFloat64()
	}
	for i := 0; i < n; i++ {
		s := 0.0
		for j := 0; j < d; j++ {
			v := rng.Float64()
			dt.X[i*d+j] = v
			s += (v - 0.5) * dir[j]
		}
		if s+0.3*rng.NormFloat64() > 0 {
			dt.Y[i] = 1
		}
	}
	return dt
}

func TestFitReachesTightGradient(t *testing.T) {
	for _, tc := range []struct {
		loss Loss
		bias bool
	}{{Logistic, true}, {Logistic, false}, {LeastSquares, true}, {LeastSquares, false}} {
		t.Run(tc.loss.String(), func(t *testing.T) {
			dt := synth(200, 12, 1)
			m, err := Fit(dt, Config{Loss: tc.loss, Lambda: 1e-3, Bias: tc.bias})
			if err != nil {
				t.Fatal(err)
			}
			if m.GradNorm > 1e-11 {
				t.Fatalf("gradient norm %.3g > 1e-11", m.GradNorm)
			}
			// Independent check of the reported gradient norm.
			g, err := m.Gradient(m.W)
			if err != nil {
				t.Fatal(err)
			}
			if n := norm2(g); n > 1e-11 {
				t.Fatalf("recomputed gradient norm %.3g", n)
			}
		})
	}
}

// TestLeastSquaresClosedForm compares Newton's solution with the normal equations
// (X̃ᵀΩX̃ + nλI) w = X̃ᵀΩt solved by LU.
func TestLeastSquaresClosedForm(t *testing.T) {
	dt := synth(80, 7, 2)
	wts := make([]float64, dt.N)
	for i := range wts {
		wts[i] = 0.5 + float64(i%5)/4
	}
	lambda := 0.02
	m, err := Fit(dt, Config{Loss: LeastSquares, Lambda: lambda, Bias: true, Weights: wts})
	if err != nil {
		t.Fatal(err)
	}
	p := dt.D + 1
	a := mat.NewDense(p, p, nil)
	rhs := mat.NewVecDense(p, nil)
	for i := 0; i < dt.N; i++ {
		x := append([]float64{1}, dt.Row(i)...)
		tg := 2*dt.Y[i] - 1
		for r := 0; r < p; r++ {
			rhs.SetVec(r, rhs.AtVec(r)+wts[i]*x[r]*tg)
			for c := 0; c < p; c++ {
				a.Set(r, c, a.At(r, c)+wts[i]*x[r]*x[c])
			}
		}
	}
	for r := 0; r < p; r++ {
		a.Set(r, r, a.At(r, r)+float64(dt.N)*lambda)
	}
	var w mat.VecDense
	if err := w.SolveVec(a, rhs); err != nil {
		t.Fatal(err)
	}
	for j := 0; j < p; j++ {
		if d := math.Abs(w.AtVec(j) - m.W[j]); d > 1e-10 {
			t.Fatalf("w[%d] = %v, normal equations %v", j, m.W[j], w.AtVec(j))
		}
	}
}

func TestFitRejectsBadInput(t *testing.T) {
	dt := synth(20, 3, 3)
	bad := dt.Clone()
	bad.Y[4] = 2
	cases := []struct {
		name string
		data *Data
		cfg  Config
		want string
	}{
		{"zero lambda", dt, Config{Lambda: 0}, "lambda"},
		{"nan lambda", dt, Config{Lambda: math.NaN()}, "lambda"},
		{"negative weight", dt, Config{Lambda: 1, Weights: append(make([]float64, 19), -1)}, "weight"},
		{"weight count", dt, Config{Lambda: 1, Weights: []float64{1}}, "weights"},
		{"bad label", bad, Config{Lambda: 1}, "label"},
		{"bad loss", dt, Config{Lambda: 1, Loss: Loss(7)}, "loss"},
		{"warm start size", dt, Config{Lambda: 1, Init: []float64{1}}, "warm start"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Fit(tc.data, tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want mention of %q", err, tc.want)
			}
		})
	}
	if _, err := NewData([]float32{0, float32(math.NaN())}, []int{0}, 1, 2); err == nil {
		t.Fatal("NaN feature accepted")
	}
	if _, err := NewData([]float32{0, 1}, []int{3}, 1, 2); err == nil {
		t.Fatal("label 3 accepted")
	}
	if _, err := ParseLoss("hinge"); err == nil {
		t.Fatal("unknown loss accepted")
	}
}

// TestJacobianFiniteDifferences checks J_i = ∂w*/∂x_i against central differences of
// the re-solved minimiser (one pixel of one example perturbed, re-solved to ~1e-13).
func TestJacobianFiniteDifferences(t *testing.T) {
	type tc struct {
		loss     Loss
		bias     bool
		weighted bool
	}
	for _, c := range []tc{{Logistic, true, false}, {Logistic, false, false}, {LeastSquares, true, false},
		{LeastSquares, false, false}, {Logistic, true, true}, {LeastSquares, true, true}} {
		name := c.loss.String()
		if c.bias {
			name += "/bias"
		}
		if c.weighted {
			name += "/weighted"
		}
		t.Run(name, func(t *testing.T) {
			dt := synth(40, 5, 4)
			var wts []float64
			if c.weighted {
				wts = make([]float64, dt.N)
				for i := range wts {
					wts[i] = 0.3 + float64(i%4)*0.6
				}
			}
			cfg := Config{Loss: c.loss, Lambda: 0.03, Bias: c.bias, Weights: wts, GradTol: 1e-13}
			m, err := Fit(dt, cfg)
			if err != nil {
				t.Fatal(err)
			}
			an, err := NewAnalysis(m)
			if err != nil {
				t.Fatal(err)
			}
			const h = 1e-5
			for _, i := range []int{0, 7, 21} {
				jac, err := an.Jacobian(i)
				if err != nil {
					t.Fatal(err)
				}
				scale := mat.Norm(jac, math.Inf(1))
				for j := 0; j < dt.D; j++ {
					var ws [2][]float64
					for s, sgn := range []float64{1, -1} {
						pd := dt.Clone()
						pd.X[i*dt.D+j] += sgn * h
						cfg2 := cfg
						cfg2.Init = m.W
						mm, err := Fit(pd, cfg2)
						if err != nil {
							t.Fatal(err)
						}
						ws[s] = mm.W
					}
					for r := 0; r < m.P; r++ {
						fd := (ws[0][r] - ws[1][r]) / (2 * h)
						if d := math.Abs(fd - jac.At(r, j)); d > 1e-6*scale+1e-9 {
							t.Fatalf("example %d pixel %d row %d: J = %.10g, finite difference %.10g", i, j, r, jac.At(r, j), fd)
						}
					}
				}
			}
		})
	}
}

// TestFitStopsAtRoundOffFloor: an unreachable tolerance ends at the floating-point floor
// (no error, far fewer than MaxIter iterations) with a tiny gradient.
func TestFitStopsAtRoundOffFloor(t *testing.T) {
	dt := synth(300, 20, 12)
	m, err := Fit(dt, Config{Loss: Logistic, Lambda: 1e-3, Bias: true, GradTol: 1e-300, MaxIter: 60})
	if err != nil {
		t.Fatal(err)
	}
	if m.Iters >= 60 || m.GradNorm > 1e-11 {
		t.Fatalf("iterations %d, gradient norm %.3g", m.Iters, m.GradNorm)
	}
}
