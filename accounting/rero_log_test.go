package accounting

import (
	"math"
	"testing"
)

// logTailCF is log Q(z) from the continued fraction of the Mills ratio,
// Q(z) = φ(z) / (z + 1/(z + 2/(z + 3/(z + …)))), an independent reference for z > 0.
func logTailCF(z float64) float64 {
	d := z
	for k := 4000; k >= 1; k-- {
		d = z + float64(k)/d
	}
	return -z*z/2 - 0.5*math.Log(2*math.Pi) - math.Log(d)
}

func TestLogNormalTail(t *testing.T) {
	for _, z := range []float64{3, 5, 20, 29.9, 30, 37, 40, 100, 1000} {
		got, want := logNormalTail(z), logTailCF(z)
		if math.Abs(got-want) > 1e-11*math.Max(1, math.Abs(want)) {
			t.Errorf("log Q(%v) = %.15g, continued fraction %.15g", z, got, want)
		}
	}
}

func TestUpperQuantileLog(t *testing.T) {
	for _, lp := range []float64{math.Log(0.5), -1, -10, -100, -700, -745, -1087.3, -1e5} {
		z, err := upperQuantileLog(lp)
		if err != nil {
			t.Fatal(err)
		}
		if got := logNormalTail(z); math.Abs(got-lp) > 1e-10*math.Max(1, -lp) {
			t.Errorf("log p = %v: z = %v gives log Q = %v", lp, z, got)
		}
	}
	// the existing bisection where float64 holds p
	for _, p := range []float64{0.3, 1e-3, 1e-12, 1e-200} {
		z, _ := upperQuantileLog(math.Log(p))
		if w := upperQuantile(p); math.Abs(z-w) > 1e-9*w {
			t.Errorf("p = %v: %v, bisection %v", p, z, w)
		}
	}
	if _, err := upperQuantileLog(-0.1); err == nil {
		t.Error("p > ½: want error")
	}
}

func TestReRoLogForms(t *testing.T) {
	for _, tc := range []struct {
		sigma float64
		steps int
		kappa float64
	}{{1, 100, 0.1}, {5, 100, 0.1}, {0.5, 10, 1e-3}, {2, 1000, 1e-6}, {3, 100, 0.9}, {1, 1, 0.5}} {
		lg, err := ReRoClosedFormLog(tc.sigma, tc.steps, math.Log(tc.kappa))
		if err != nil {
			t.Fatal(err)
		}
		want, _ := ReRoClosedForm(tc.sigma, tc.steps, tc.kappa)
		if math.Abs(math.Exp(lg)-want) > 1e-10*want {
			t.Errorf("%+v: closed form from log κ %v, direct %v", tc, math.Exp(lg), want)
		}
		lr, err := ReRoRDPLog(1, tc.sigma, tc.steps, math.Log(tc.kappa), nil)
		if err != nil {
			t.Fatal(err)
		}
		wr, _, _ := ReRoRDP(1, tc.sigma, tc.steps, tc.kappa, nil)
		if math.Abs(math.Exp(lr)-wr) > 1e-12*wr {
			t.Errorf("%+v: RDP-ReRo from log κ %v, direct %v", tc, math.Exp(lr), wr)
		}
	}
	// Hayes et al. App. I: κ = 0.25^784 ≈ 1e-472 is below float64; the bound is not.
	lk := 784 * math.Log(0.25)
	prev := math.Inf(-1)
	for _, sigma := range []float64{10, 1, 0.3, 0.1, 0.05} {
		lg, err := ReRoClosedFormLog(sigma, 100, lk)
		if err != nil || !(lg >= lk-1e-9) || !(lg <= 0) || !(lg >= prev) {
			t.Fatalf("σ = %v: log γ = %v (log κ = %v, previous %v), %v", sigma, lg, lk, prev, err)
		}
		prev = lg
	}
	// tiny κ through the float64 interface: Erfcinv alone gave γ = 0 below 1e-16
	for _, k := range []float64{1e-9, 1e-20, 1e-300} {
		g, _ := ReRoClosedForm(0.5, 100, k)
		lg, _ := ReRoClosedFormLog(0.5, 100, math.Log(k))
		if !(g > k) || math.Abs(math.Log(g)-lg) > 1e-9*math.Abs(lg) {
			t.Errorf("κ = %v: γ = %v, log-space %v", k, g, math.Exp(lg))
		}
	}
	if _, err := ReRoClosedFormLog(1, 10, 0.1); err == nil {
		t.Error("log κ > 0: want error")
	}
}
