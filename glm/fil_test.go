package glm

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// denseNorms returns ‖J‖_F² and ‖J‖₂² of an explicit matrix by SVD.
func denseNorms(t *testing.T, j *mat.Dense) (float64, float64) {
	t.Helper()
	var svd mat.SVD
	if !svd.Factorize(j, mat.SVDNone) {
		t.Fatal("SVD failed")
	}
	sv := svd.Values(nil)
	f := 0.0
	for _, s := range sv {
		f += s * s
	}
	return f, sv[0] * sv[0]
}

// TestPerExampleMatchesDenseSVD compares the structured Frobenius/spectral norms with
// an SVD of the explicitly formed Jacobian.
func TestPerExampleMatchesDenseSVD(t *testing.T) {
	for _, c := range []struct {
		loss     Loss
		bias     bool
		weighted bool
		lambda   float64
	}{{Logistic, true, false, 1e-2}, {Logistic, false, false, 1e-3}, {LeastSquares, true, false, 1e-2},
		{LeastSquares, false, false, 1e-1}, {Logistic, true, true, 1e-2}} {
		t.Run(c.loss.String(), func(t *testing.T) {
			dt := synth(150, 30, 5)
			// Constant-zero columns make H's smallest eigenvalue nλ highly degenerate,
			// as MNIST's border pixels do.
			for i := 0; i < dt.N; i++ {
				dt.X[i*dt.D+3], dt.X[i*dt.D+17], dt.X[i*dt.D+29] = 0, 0, 0
			}
			var wts []float64
			if c.weighted {
				wts = make([]float64, dt.N)
				for i := range wts {
					wts[i] = 0.2 + float64(i%3)
				}
			}
			m, err := Fit(dt, Config{Loss: c.loss, Lambda: c.lambda, Bias: c.bias, Weights: wts})
			if err != nil {
				t.Fatal(err)
			}
			an, err := NewAnalysis(m)
			if err != nil {
				t.Fatal(err)
			}
			const sigma = 0.1
			res, err := an.PerExample(sigma, FILOptions{Workers: 2})
			if err != nil {
				t.Fatal(err)
			}
			if res.NotConverged != 0 {
				t.Fatalf("%d Lanczos runs did not converge", res.NotConverged)
			}
			// Capping Lanczos at 2 steps forces the dense fallback for every example.
			dense, err := an.PerExample(sigma, FILOptions{LanczosMaxSteps: 2})
			if err != nil {
				t.Fatal(err)
			}
			if dense.DenseFallbacks == 0 {
				t.Fatal("2-step cap did not trigger the dense fallback")
			}
			for i := range dense.Eta {
				if math.Abs(dense.Spec2[i]-res.Spec2[i]) > 1e-9*res.Spec2[i] {
					t.Fatalf("example %d: dense fallback ‖J‖₂² %.12g, Lanczos %.12g", i, dense.Spec2[i], res.Spec2[i])
				}
			}
			for i := 0; i < dt.N; i += 7 {
				jac, _ := an.Jacobian(i)
				f2, s2 := denseNorms(t, jac)
				if rel := math.Abs(res.Frob2[i]-f2) / f2; rel > 1e-9 {
					t.Fatalf("example %d: ‖J‖_F² %.12g, SVD %.12g", i, res.Frob2[i], f2)
				}
				if rel := math.Abs(res.Spec2[i]-s2) / s2; rel > 1e-8 {
					t.Fatalf("example %d: ‖J‖₂² %.12g, SVD %.12g", i, res.Spec2[i], s2)
				}
				if want := f2 / (sigma * sigma * float64(dt.D)); math.Abs(res.DFIL[i]-want) > 1e-9*want {
					t.Fatalf("dFIL %v want %v", res.DFIL[i], want)
				}
				if want := math.Sqrt(s2) / sigma; math.Abs(res.Eta[i]-want) > 1e-8*want {
					t.Fatalf("eta %v want %v", res.Eta[i], want)
				}
			}
		})
	}
}

func TestAttributeFIL(t *testing.T) {
	dt := synth(120, 9, 6)
	m, err := Fit(dt, Config{Loss: Logistic, Lambda: 1e-2, Bias: true})
	if err != nil {
		t.Fatal(err)
	}
	an, err := NewAnalysis(m)
	if err != nil {
		t.Fatal(err)
	}
	all := []int{0, 1, 2, 3, 4, 5, 6, 7, 8}
	full, err := an.PerExample(0.5, FILOptions{})
	if err != nil {
		t.Fatal(err)
	}
	attr, err := an.AttributeFIL(0.5, all, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range full.DFIL {
		if math.Abs(attr.DFIL[i]-full.DFIL[i]) > 1e-10*full.DFIL[i] || math.Abs(attr.Eta[i]-full.Eta[i]) > 1e-8*full.Eta[i] {
			t.Fatalf("example %d: all-columns attribute FIL (%v, %v) != per-example (%v, %v)",
				i, attr.DFIL[i], attr.Eta[i], full.DFIL[i], full.Eta[i])
		}
	}
	// A pair of columns: compare with the SVD of the explicit 2-column block.
	cols := []int{6, 2}
	pair, err := an.AttributeFIL(0.5, cols, []int{3, 11})
	if err != nil {
		t.Fatal(err)
	}
	for k, i := range []int{3, 11} {
		jac, _ := an.Jacobian(i)
		blk := mat.NewDense(m.P, 2, nil)
		for r := 0; r < m.P; r++ {
			blk.Set(r, 0, jac.At(r, 2))
			blk.Set(r, 1, jac.At(r, 6))
		}
		f2, s2 := denseNorms(t, blk)
		if math.Abs(pair.DFIL[k]-f2/(0.25*2)) > 1e-10*f2 || math.Abs(pair.Eta[k]-math.Sqrt(s2)/0.5) > 1e-8 {
			t.Fatalf("example %d: attribute FIL (%v, %v), want (%v, %v)", i, pair.DFIL[k], pair.Eta[k], f2/0.5, math.Sqrt(s2)/0.5)
		}
	}
	for _, bad := range [][]int{nil, {9}, {-1}, {1, 1}} {
		if _, err := an.AttributeFIL(0.5, bad, nil); err == nil {
			t.Fatalf("columns %v accepted", bad)
		}
	}
	if _, err := an.AttributeFIL(0, all, nil); err == nil {
		t.Fatal("sigma 0 accepted")
	}
	if _, err := an.PerExample(math.Inf(1), FILOptions{}); err == nil {
		t.Fatal("infinite sigma accepted")
	}
}
