package glm

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// ridgeSolve is an independent least-squares reference: w = (X̃ᵀΩX̃ + nλI)⁻¹X̃ᵀΩt for
// real targets t, by a dense solve.
func ridgeSolve(t *testing.T, x []float64, tg, wts []float64, n, d int, lambda float64, bias bool) []float64 {
	t.Helper()
	p := paramCount(d, bias)
	row := func(i int) []float64 {
		r := make([]float64, 0, p)
		if bias {
			r = append(r, 1)
		}
		return append(r, x[i*d:(i+1)*d]...)
	}
	h := mat.NewDense(p, p, nil)
	rhs := mat.NewVecDense(p, nil)
	for i := 0; i < n; i++ {
		r := row(i)
		for a := 0; a < p; a++ {
			rhs.SetVec(a, rhs.AtVec(a)+wts[i]*r[a]*tg[i])
			for b := 0; b < p; b++ {
				h.Set(a, b, h.At(a, b)+wts[i]*r[a]*r[b])
			}
		}
	}
	for a := 0; a < p; a++ {
		h.Set(a, a, h.At(a, a)+float64(n)*lambda)
	}
	var w mat.VecDense
	if err := w.SolveVec(h, rhs); err != nil {
		t.Fatal(err)
	}
	return w.RawVector().Data
}

// TestPerExampleWithLabelMatchesFiniteDifferences checks η and dFIL with the label
// column (Hannun et al.'s η) against the SVD of a Jacobian built independently: for
// least squares by central differences of a dense ridge solve w.r.t. every feature and
// the target of the example; for the logistic loss, the feature block (finite-difference
// checked elsewhere) and the label column ω_i H⁻¹x̃_i with H formed and solved densely.
func TestPerExampleWithLabelMatchesFiniteDifferences(t *testing.T) {
	const n, d, lambda, sigma = 80, 5, 1e-2, 0.5
	for _, c := range []struct {
		loss Loss
		bias bool
	}{{LeastSquares, false}, {LeastSquares, true}, {Logistic, false}, {Logistic, true}} {
		t.Run(c.loss.String(), func(t *testing.T) {
			dt := synth(n, d, 11)
			wts := make([]float64, n)
			for i := range wts {
				wts[i] = 0.5 + float64(i%4)*0.4
			}
			m, err := Fit(dt, Config{Loss: c.loss, Lambda: lambda, Bias: c.bias, Weights: wts})
			if err != nil {
				t.Fatal(err)
			}
			an, err := NewAnalysis(m)
			if err != nil {
				t.Fatal(err)
			}
			with, err := an.PerExample(sigma, FILOptions{WithLabel: true, Workers: 2})
			if err != nil {
				t.Fatal(err)
			}
			dense, err := an.PerExample(sigma, FILOptions{WithLabel: true, LanczosMaxSteps: 2})
			if err != nil {
				t.Fatal(err)
			}
			without, err := an.PerExample(sigma, FILOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if with.D != d+1 || !with.Label || without.D != d {
				t.Fatalf("D = %d (label %v), without %d", with.D, with.Label, without.D)
			}
			p := m.P
			for _, i := range []int{0, 13, 42, n - 1} {
				j := mat.NewDense(p, d+1, nil)
				if c.loss == LeastSquares {
					tg := make([]float64, n)
					for k := range tg {
						tg[k] = 2*dt.Y[k] - 1
					}
					const h = 1e-5
					for col := 0; col <= d; col++ {
						xp, xm := append([]float64(nil), dt.X...), append([]float64(nil), dt.X...)
						tp, tm := append([]float64(nil), tg...), append([]float64(nil), tg...)
						if col < d {
							xp[i*d+col] += h
							xm[i*d+col] -= h
						} else {
							tp[i] += h
							tm[i] -= h
						}
						wp := ridgeSolve(t, xp, tp, wts, n, d, lambda, c.bias)
						wm := ridgeSolve(t, xm, tm, wts, n, d, lambda, c.bias)
						for r := 0; r < p; r++ {
							j.Set(r, col, (wp[r]-wm[r])/(2*h))
						}
					}
				} else {
					jx, err := an.Jacobian(i)
					if err != nil {
						t.Fatal(err)
					}
					h := mat.NewDense(p, p, nil)
					x := make([]float64, p)
					for k := 0; k < n; k++ {
						r := mat.Row(nil, k, m.Design())
						s := 1 / (1 + math.Exp(-floatsDot(r, m.W)))
						for a := 0; a < p; a++ {
							for b := 0; b < p; b++ {
								h.Set(a, b, h.At(a, b)+wts[k]*s*(1-s)*r[a]*r[b])
							}
						}
						if k == i {
							copy(x, r)
						}
					}
					for a := 0; a < p; a++ {
						h.Set(a, a, h.At(a, a)+n*lambda)
					}
					var col mat.VecDense
					if err := col.SolveVec(h, mat.NewVecDense(p, x)); err != nil {
						t.Fatal(err)
					}
					for r := 0; r < p; r++ {
						for cc := 0; cc < d; cc++ {
							j.Set(r, cc, jx.At(r, cc))
						}
						j.Set(r, d, wts[i]*col.AtVec(r))
					}
				}
				f2, s2 := denseNorms(t, j)
				tol := 1e-8
				if c.loss == LeastSquares {
					tol = 1e-6 // finite differences
				}
				if math.Abs(with.Frob2[i]-f2) > tol*f2 || math.Abs(with.Spec2[i]-s2) > tol*s2 {
					t.Fatalf("example %d: ‖J‖_F² %.10g (ref %.10g), ‖J‖₂² %.10g (ref %.10g)", i, with.Frob2[i], f2, with.Spec2[i], s2)
				}
				if want := f2 / (sigma * sigma * (d + 1)); math.Abs(with.DFIL[i]-want) > tol*want {
					t.Fatalf("example %d: dFIL %v, want %v", i, with.DFIL[i], want)
				}
			}
			for i := range with.Eta {
				if math.Abs(dense.Spec2[i]-with.Spec2[i]) > 1e-9*with.Spec2[i] {
					t.Fatalf("example %d: dense fallback ‖J‖₂² %v, Lanczos %v", i, dense.Spec2[i], with.Spec2[i])
				}
				// Adding a column cannot lower the spectral norm.
				if with.Eta[i] < without.Eta[i]*(1-1e-12) {
					t.Fatalf("example %d: η with label %v < without %v", i, with.Eta[i], without.Eta[i])
				}
			}
		})
	}
}

func floatsDot(a, b []float64) float64 {
	s := 0.0
	for k := range a {
		s += a[k] * b[k]
	}
	return s
}
