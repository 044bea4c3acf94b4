package accounting

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/integrate/quad"
)

// hockeyStickQuad is H_{e^ε}(N(μ,1) ‖ N(0,1)) = ∫ max(0, φ(x−μ) − e^ε φ(x)) dx by
// Gauss–Legendre quadrature over the region where the integrand is positive.
func hockeyStickQuad(mu, eps float64) float64 {
	x0 := eps/mu + mu/2 // φ(x−μ) ≥ e^ε φ(x) ⇔ x ≥ x0
	f := func(x float64) float64 {
		return math.Exp(-(x-mu)*(x-mu)/2)/math.Sqrt(2*math.Pi) - math.Exp(eps-x*x/2)/math.Sqrt(2*math.Pi)
	}
	sum := 0.0
	for p := 0; p < 400; p++ {
		a := x0 + 0.1*float64(p)
		sum += quad.Fixed(f, a, a+0.1, 20, quad.Legendre{}, 0)
	}
	return sum
}

func TestGaussianDeltaQuadrature(t *testing.T) {
	for _, mu := range []float64{0.05, 0.3, 1, 2, 4} {
		for _, eps := range []float64{0, 0.1, 0.5, 1, 3, 6} {
			got, err := GaussianDelta(mu, eps)
			if err != nil {
				t.Fatal(err)
			}
			want := hockeyStickQuad(mu, eps)
			if math.Abs(got-want) > 1e-9*want+1e-15 {
				t.Errorf("δ(μ=%v, ε=%v) = %v, quadrature %v", mu, eps, got, want)
			}
		}
	}
}

func TestGaussianEpsilon(t *testing.T) {
	for _, mu := range []float64{0.01, 0.2, 1, 2.03, 5, 20} {
		for _, delta := range []float64{1e-3, 1e-5, 1e-9, 1e-12} {
			eps, err := GaussianEpsilon(mu, delta)
			if err != nil {
				t.Fatal(err)
			}
			// δ(ε) ≤ δ at the returned ε and > δ just below it (unless ε = 0).
			if d := gaussianDelta(mu, eps); d > delta*(1+1e-9) {
				t.Errorf("μ=%v δ=%v: δ(ε=%v) = %v > δ", mu, delta, eps, d)
			}
			if eps > 0 {
				if d := hockeyStickQuad(mu, eps*(1-1e-6)); d <= delta {
					t.Errorf("μ=%v δ=%v: ε=%v is not the smallest (δ(0.999999ε) = %v)", mu, delta, eps, d)
				}
			}
			// Where the classical formula is valid (ε < 1) the analytic one is tighter.
			classic := mu * math.Sqrt(2*math.Log(1.25/delta))
			if classic < 1 && eps > classic {
				t.Errorf("μ=%v δ=%v: analytic ε %v > classical %v", mu, delta, eps, classic)
			}
		}
	}
	// The classical formula is not a valid bound for large μ: there it is below the
	// exact ε (this is why Kappa does not use it).
	eps, _ := GaussianEpsilon(2/1.1, 1/(14062*60000.0))
	if classic := 2 / 1.1 * math.Sqrt(2*math.Log(1.25*14062*60000)); classic >= eps {
		t.Errorf("expected the classical ε %v to understate the exact %v at μ = 1.82", classic, eps)
	}
	for _, bad := range [][2]float64{{0, 1e-5}, {-1, 1e-5}, {math.Inf(1), 1e-5}, {1, 0}, {1, 1}, {math.NaN(), 0.1}} {
		if _, err := GaussianEpsilon(bad[0], bad[1]); err == nil {
			t.Errorf("GaussianEpsilon%v: want an error", bad)
		}
	}
}

func TestKappaUsesAnalyticGaussian(t *testing.T) {
	for _, tc := range []struct{ q, sigma, c, df float64 }{{0.004, 1.1, 1, 1e-9}, {0.05, 2, 1.115, 1e-7}, {0.01, 30, 1, 1e-8}, {1, 1, 1, 1e-5}} {
		k, err := Kappa(KappaParams{Q: tc.q, Sigma: tc.sigma, ClipConstant: tc.c, DeltaF: tc.df})
		if err != nil {
			t.Fatal(err)
		}
		eps0, _ := GaussianEpsilon(2*tc.c/tc.sigma, tc.df)
		want := tc.q / (tc.q + (1-tc.q)*math.Exp(-eps0))
		if math.Abs(k-want) > 1e-14 {
			t.Errorf("%+v: κ = %v want %v", tc, k, want)
		}
		if e, _ := KappaEpsilon0(KappaParams{Sigma: tc.sigma, ClipConstant: tc.c, DeltaF: tc.df}); e != eps0 {
			t.Errorf("KappaEpsilon0 = %v want %v", e, eps0)
		}
	}
}
