package glm

import (
	"math"
	"testing"

	"github.com/dpfil/dpfil/data"
	"gonum.org/v1/gonum/mat"
)

// realSubset returns the first n training images of mnist01-embedded (real MNIST 0/1
// digits), average-pooled by pool×pool (pool = 1 keeps 28×28).
func realSubset(t *testing.T, n, pool int) *Data {
	t.Helper()
	s, err := data.Load("mnist01-embedded", data.Options{NoDownload: true})
	if err != nil {
		t.Fatal(err)
	}
	tr := s.Train
	if n > tr.N {
		t.Fatalf("want %d examples, have %d", n, tr.N)
	}
	h, w := tr.H/pool, tr.W/pool
	out := &Data{N: n, D: h * w, X: make([]float64, n*h*w), Y: make([]float64, n)}
	for i := 0; i < n; i++ {
		img := tr.Image(i)
		for r := 0; r < h; r++ {
			for c := 0; c < w; c++ {
				s := 0.0
				for dr := 0; dr < pool; dr++ {
					for dc := 0; dc < pool; dc++ {
						s += float64(img[(r*pool+dr)*tr.W+c*pool+dc])
					}
				}
				out.X[i*h*w+r*w+c] = s / float64(pool*pool)
			}
		}
		out.Y[i] = float64(tr.Labels[i])
	}
	return out
}

// TestRealSubsetNormsMatchSVD checks the structured norms on real 28×28 digits (many
// constant-zero border pixels, so H has a highly degenerate smallest eigenvalue).
func TestRealSubsetNormsMatchSVD(t *testing.T) {
	dt := realSubset(t, 300, 1)
	m, err := Fit(dt, Config{Loss: Logistic, Lambda: 1e-2, Bias: true})
	if err != nil {
		t.Fatal(err)
	}
	an, err := NewAnalysis(m)
	if err != nil {
		t.Fatal(err)
	}
	idx := []int{0, 1, 2}
	res, err := an.PerExample(1e-2, FILOptions{Indices: idx})
	if err != nil {
		t.Fatal(err)
	}
	for k, i := range idx {
		jac, _ := an.Jacobian(i)
		f2, s2 := denseNorms(t, jac)
		if math.Abs(res.Frob2[k]-f2) > 1e-9*f2 || math.Abs(res.Spec2[k]-s2) > 1e-8*s2 {
			t.Fatalf("example %d: structured (%.12g, %.12g), SVD (%.12g, %.12g)", i, res.Frob2[k], res.Spec2[k], f2, s2)
		}
	}
}

// TestIRFILRealSubset runs IRFIL on 400 real digits pooled to 14×14 and reports the η
// spread per iteration; it requires std/mean < 1 % within 15 iterations.
func TestIRFILRealSubset(t *testing.T) {
	dt := realSubset(t, 400, 2)
	res, err := IRFIL(dt, IRFILOptions{Config: Config{Loss: Logistic, Lambda: 1e-2, Bias: true}, Sigma: 1, Iters: 15})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range res.Iterations {
		t.Logf("iter %2d: eta mean %.4g spread %.4g  train acc %.4f  weights [%.3g, %.3g]", it.Iter, it.EtaMean, it.Spread, it.TrainAcc, it.WeightMin, it.WeightMax)
	}
	if last := res.Iterations[len(res.Iterations)-1]; last.Spread >= 0.01 {
		t.Fatalf("η spread after 15 iterations is %.4g (initial %.4g)", last.Spread, res.Iterations[0].Spread)
	}
}

// TestJacobianFiniteDifferencesReal repeats the finite-difference check of J on real
// digits (pooled to 14×14) for both losses, including pixels that are 0 in the image.
func TestJacobianFiniteDifferencesReal(t *testing.T) {
	dt := realSubset(t, 80, 2)
	for _, loss := range []Loss{Logistic, LeastSquares} {
		t.Run(loss.String(), func(t *testing.T) {
			cfg := Config{Loss: loss, Lambda: 1e-2, Bias: true, GradTol: 1e-13}
			m, err := Fit(dt, cfg)
			if err != nil {
				t.Fatal(err)
			}
			an, err := NewAnalysis(m)
			if err != nil {
				t.Fatal(err)
			}
			const h = 1e-5
			for _, i := range []int{3, 41} {
				jac, _ := an.Jacobian(i)
				scale := mat.Norm(jac, math.Inf(1))
				for _, j := range []int{0, 90, 105} {
					var ws [2][]float64
					for s, sgn := range []float64{1, -1} {
						pd := dt.Clone()
						pd.X[i*dt.D+j] += sgn * h
						c2 := cfg
						c2.Init = m.W
						mm, err := Fit(pd, c2)
						if err != nil {
							t.Fatal(err)
						}
						ws[s] = mm.W
					}
					for r := 0; r < m.P; r++ {
						fd := (ws[0][r] - ws[1][r]) / (2 * h)
						if d := math.Abs(fd - jac.At(r, j)); d > 1e-5*scale+1e-9 {
							t.Fatalf("example %d pixel %d row %d: J = %.10g, finite difference %.10g", i, j, r, jac.At(r, j), fd)
						}
					}
				}
			}
		})
	}
}
