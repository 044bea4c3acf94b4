package accounting

import (
	"math"
	"strings"
	"testing"
)

// q = 1: the trade-off bound equals the closed form Φ(√T/σ − Φ⁻¹(1 − κ)).
func TestReRoTradeoffClosedForm(t *testing.T) {
	for _, sigma := range []float64{0.7, 2, 4} {
		for _, steps := range []int{1, 10, 100} {
			if math.Sqrt(float64(steps))/sigma > 8 {
				continue
			}
			for _, kappa := range []float64{1e-4, 0.03, 0.5} {
				r, err := ReRoTradeoff(ReRoRun{Q: 1, Sigma: sigma, Steps: steps, Kappa: kappa}, nil)
				if err != nil {
					t.Fatal(err)
				}
				cf, _ := ReRoClosedForm(sigma, steps, kappa)
				if math.Abs(r.Gamma-cf) > 1e-3 {
					t.Errorf("σ=%v T=%d κ=%v: γ %v, closed form %v", sigma, steps, kappa, r.Gamma, cf)
				}
				if r.Gamma < cf-1e-12 || r.GammaLower > cf+1e-12 {
					t.Errorf("σ=%v T=%d κ=%v: [%v, %v] does not bracket the closed form %v", sigma, steps, kappa, r.GammaLower, r.Gamma, cf)
				}
			}
		}
	}
}

func TestReRoTradeoffTrivial(t *testing.T) {
	for _, tc := range []struct {
		q     float64
		steps int
		kappa float64
		want  float64
	}{
		{0, 100, 0.1, 0.1},
		{0.3, 0, 0.02, 0.02},
		{0.5, 10, 1, 1},
	} {
		r, err := ReRoTradeoff(ReRoRun{Q: tc.q, Sigma: 1, Steps: tc.steps, Kappa: tc.kappa}, nil)
		if err != nil || r.Gamma != tc.want || r.GammaLower != tc.want {
			t.Errorf("%+v: γ ∈ [%v, %v] (%v), want %v", tc, r.GammaLower, r.Gamma, err, tc.want)
		}
	}
	r, _ := ReRoTradeoff(ReRoRun{Q: 0.1, Sigma: 1, Steps: 10, Kappa: 0.01}, nil)
	if r.Adjacency != AddRemove || r.Sampling != SamplingPoisson || r.Interval != DefaultPLDInterval || r.Kappa != 0.01 {
		t.Errorf("result fields %+v", r)
	}
	if math.Abs(r.Advantage-(r.Gamma-0.01)/0.99) > 1e-15 {
		t.Errorf("advantage %v", r.Advantage)
	}
}

// On a grid of (q, σ, T, κ): the trade-off γ lies in the Monte Carlo confidence
// interval, its lower and upper bounds are ordered and close, and it is below the
// RDP-based bound.
func TestReRoTradeoffMonteCarlo(t *testing.T) {
	for _, q := range []float64{0.01, 0.1, 0.5} {
		for _, sigma := range []float64{0.5, 1, 2} {
			for _, steps := range []int{1, 10, 100} {
				for _, kappa := range []float64{0.01, 0.1} {
					// Grid 1e-3 (ten times the default) where the per-step losses are
					// large keeps the test fast; Gamma is still a rigorous upper bound.
					cfg := &PLDConfig{}
					if q >= 0.1 {
						cfg.Interval = 1e-3
					}
					r, err := ReRoTradeoff(ReRoRun{Q: q, Sigma: sigma, Steps: steps, Kappa: kappa}, cfg)
					if err != nil {
						t.Fatal(err)
					}
					mc, err := ReRoMonteCarlo(ReRoConfig{Q: q, Sigma: sigma, Steps: steps, Kappa: kappa,
						Samples: 20000, MuSamples: 20000, Confidence: 0.99, Seed: 7, Workers: 2})
					if err != nil {
						t.Fatal(err)
					}
					rdp, _, err := ReRoRDP(q, sigma, steps, kappa, nil)
					if err != nil {
						t.Fatal(err)
					}
					name := func() string {
						return "q=" + fmtF(q) + " σ=" + fmtF(sigma) + " T=" + fmtF(float64(steps)) + " κ=" + fmtF(kappa)
					}
					if r.Gamma < mc.GammaLow || r.Gamma > mc.GammaHigh {
						t.Errorf("%s: trade-off γ %v outside the Monte Carlo interval [%v, %v] (γ̂ %v)", name(), r.Gamma, mc.GammaLow, mc.GammaHigh, mc.Gamma)
					}
					if r.GammaLower > r.Gamma || r.Gamma-r.GammaLower > 1e-3 {
						t.Errorf("%s: bounds [%v, %v]", name(), r.GammaLower, r.Gamma)
					}
					if r.Gamma > rdp+1e-12 {
						t.Errorf("%s: trade-off γ %v above the RDP bound %v", name(), r.Gamma, rdp)
					}
					if r.Gamma < kappa || r.Gamma > 1 {
						t.Errorf("%s: γ %v outside [κ, 1]", name(), r.Gamma)
					}
				}
			}
		}
	}
}

// γ grows with T and κ and falls with σ.
func TestReRoTradeoffMonotone(t *testing.T) {
	g := func(q, sigma float64, steps int, kappa float64) float64 {
		r, err := ReRoTradeoff(ReRoRun{Q: q, Sigma: sigma, Steps: steps, Kappa: kappa}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return r.Gamma
	}
	if !(g(0.1, 1, 1, 0.01) < g(0.1, 1, 10, 0.01) && g(0.1, 1, 10, 0.01) < g(0.1, 1, 100, 0.01)) {
		t.Error("γ not increasing in T")
	}
	if !(g(0.1, 2, 10, 0.01) < g(0.1, 1, 10, 0.01)) {
		t.Error("γ not decreasing in σ")
	}
	if !(g(0.1, 1, 10, 0.01) < g(0.1, 1, 10, 0.1)) {
		t.Error("γ not increasing in κ")
	}
	if !(g(0.05, 1, 10, 0.01) < g(0.1, 1, 10, 0.01)) {
		t.Error("γ not increasing in q")
	}
}

func TestReRoTradeoffValidation(t *testing.T) {
	for _, tc := range []struct {
		q, sigma float64
		steps    int
		kappa    float64
		cfg      *PLDConfig
		want     string
	}{
		{-0.1, 1, 1, 0.1, nil, "q"},
		{1.1, 1, 1, 0.1, nil, "q"},
		{math.NaN(), 1, 1, 0.1, nil, "q"},
		{0.1, 0, 1, 0.1, nil, "sigma"},
		{0.1, math.Inf(1), 1, 0.1, nil, "sigma"},
		{0.1, 1, -1, 0.1, nil, "steps"},
		{0.1, 1, 1, 0, nil, "kappa"},
		{0.1, 1, 1, 1.5, nil, "kappa"},
		{0.1, 1, 1, math.NaN(), nil, "kappa"},
		{0.1, 1, 1, 0.1, &PLDConfig{Interval: -1}, "interval"},
		{0.5, 0.01, 10, 0.1, nil, "noise"},
	} {
		_, err := ReRoTradeoff(ReRoRun{Q: tc.q, Sigma: tc.sigma, Steps: tc.steps, Kappa: tc.kappa}, tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one mentioning %q", tc, err, tc.want)
		}
	}
}
