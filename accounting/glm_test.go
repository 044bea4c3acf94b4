package accounting

import (
	"fmt"
	"math"
	"testing"
)

func glmRelClose(a, b, rel float64) bool { return math.Abs(a-b) <= rel*math.Abs(b) }

// Expected values were computed by hand (Python) from the formulas of SPEC 8.
func TestAccountGLMHandComputed(t *testing.T) {
	cases := []struct {
		name                     string
		deriv, r                 float64
		n                        int
		lambda, maxW, sigma      float64
		delta, eps2, paper, mse0 float64
	}{
		// The paper's Sec. 7.1 setting with R = 1: ε₂ = 2.4937 (paper: 1.5792).
		{"paper-R1", 1, 1, 12665, 1e-2, 1, 1e-2, 0.015791551519936834, 2.493730994068193, 1.579155151993683, 0.02250962365037582},
	}
	for _, c := range cases {
		a, err := AccountGLM(GLMRelease{DerivBound: c.deriv, R: c.r, N: c.n, Lambda: c.lambda, MaxWeight: c.maxW, Sigma: c.sigma})
		if err != nil {
			t.Fatal(err)
		}
		if !glmRelClose(a.Sensitivity, c.delta, 1e-13) || !glmRelClose(a.Eps2, c.eps2, 1e-13) ||
			!glmRelClose(a.Eps2Paper, c.paper, 1e-13) || !glmRelClose(a.MSEBoundRDP, c.mse0, 1e-12) {
			t.Fatalf("%s: got %+v", c.name, a)
		}
	}
	// R = √101 (bias + 100 unit features), σ = 1e-5: ε₂ = 251866830.40088752.
	a, err := AccountGLM(GLMRelease{DerivBound: LogisticDerivBound, R: math.Sqrt(101), N: 12665, Lambda: 1e-2, Sigma: 1e-5})
	if err != nil {
		t.Fatal(err)
	}
	if !glmRelClose(a.Eps2, 251866830.40088752, 1e-12) || a.MSEBoundRDP != 0 {
		t.Fatalf("got %+v", a)
	}
	// Least squares: R = 2, λ = 0.25, n = 10, weights summing to 12 with max 1.5:
	// L = 1 + 2√(1.2/0.25) = 5.381780460041329, Δ = 12.91627310409919, ε₂(σ=0.3) = 1853.6678988852905.
	l, err := GLMRelease{R: 2, N: 10, Lambda: 0.25}.LeastSquaresDerivBound(12)
	if err != nil {
		t.Fatal(err)
	}
	if !glmRelClose(l, 5.381780460041329, 1e-14) {
		t.Fatalf("L = %v", l)
	}
	a, err = AccountGLM(GLMRelease{DerivBound: l, R: 2, N: 10, Lambda: 0.25, MaxWeight: 1.5, Sigma: 0.3})
	if err != nil {
		t.Fatal(err)
	}
	if !glmRelClose(a.Sensitivity, 12.91627310409919, 1e-13) || !glmRelClose(a.Eps2, 1853.6678988852905, 1e-12) {
		t.Fatalf("got %+v", a)
	}
}

func TestGaussianRDPOrders(t *testing.T) {
	for _, alpha := range []float64{1.5, 2, 8} {
		got, err := GaussianRDP(alpha, 0.3, 0.7)
		if err != nil {
			t.Fatal(err)
		}
		if want := alpha * 0.09 / (2 * 0.49); !glmRelClose(got, want, 1e-15) {
			t.Fatalf("alpha %v: %v want %v", alpha, got, want)
		}
	}
}

func TestAccountGLMRejectsBadInput(t *testing.T) {
	bad := []struct {
		deriv, r      float64
		n             int
		lambda, w, sg float64
	}{
		{1, 0, 10, 1, 1, 1}, {1, 1, 0, 1, 1, 1}, {1, 1, 10, 0, 1, 1}, {1, 1, 10, 1, -1, 1},
		{1, 1, 10, 1, 1, 0}, {0, 1, 10, 1, 1, 1}, {1, math.NaN(), 10, 1, 1, 1}, {1, 1, 10, math.Inf(1), 1, 1},
	}
	for _, b := range bad {
		if _, err := AccountGLM(GLMRelease{DerivBound: b.deriv, R: b.r, N: b.n, Lambda: b.lambda, MaxWeight: b.w, Sigma: b.sg}); err == nil {
			t.Fatalf("%+v accepted", b)
		}
	}
	if _, err := (GLMRelease{R: 1, N: 3, Lambda: 1}).LeastSquaresDerivBound(0); err == nil {
		t.Fatal("zero weight sum accepted")
	}
	if _, err := GaussianRDP(1, 1, 1); err == nil {
		t.Fatal("order 1 accepted")
	}
}

func ExampleAccountGLM() {
	// Seed 000 Sec. 7.1: n = 12 665, λ = σ = 1e-2, logistic loss, here with R = 1.
	a, _ := AccountGLM(GLMRelease{DerivBound: LogisticDerivBound, R: 1, N: 12665, Lambda: 1e-2, Sigma: 1e-2})
	fmt.Printf("eps2 = %.4f (paper's 2/(nλσ) = %.4f), MSE bound %.4f\n", a.Eps2, a.Eps2Paper, a.MSEBoundRDP)
	// Output: eps2 = 2.4937 (paper's 2/(nλσ) = 1.5792), MSE bound 0.0225
}
