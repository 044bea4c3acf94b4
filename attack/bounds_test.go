package attack

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The ReRo bound is a theorem: no attack may succeed significantly more often. With
// every gradient clipped (small C) and high-dimensional, nearly orthogonal per-sample
// gradients the prior-aware attack comes close to it, so this catches bugs on either
// side (a leaky game or a too small bound).
func TestSuccessNotAboveReRoBound(t *testing.T) {
	for _, tc := range []struct {
		name  string
		q     float64
		sigma float64
	}{{"full batch", 1, 2.5}, {"poisson q=0.5", 0.5, 1.5}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := smallConfig()
			cfg.Known, cfg.PriorSize, cfg.Steps = 20, 10, 10
			cfg.Q, cfg.Sigma, cfg.Clip, cfg.LR = tc.q, tc.sigma, 1e-3, 0.1
			g := testGame(t, cfg, 40, 16, 10, 600)
			res := runGame(t, g, 2000, 2)
			st, err := Summarize(res)
			if err != nil {
				t.Fatal(err)
			}
			b, err := ComputeBounds(BoundsRequest{Q: cfg.Q, Sigma: cfg.Sigma, Steps: cfg.Steps, PriorSize: cfg.PriorSize, Delta: 1e-5, Samples: 200_000, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range []string{AttackPrior, AttackPriorTopK, AttackLogLik} {
				s := st[a]
				lo, _, _ := ClopperPearson(s.Successes, s.Trials, 0.999)
				t.Logf("%s: success %.3f [%.3f, %.3f], ReRo γ = %.3f (CI %.3f–%.3f), RDP γ = %.3f, ε = %.2f",
					a, s.Rate, s.CI[0], s.CI[1], b.Gamma, b.GammaCI[0], b.GammaCI[1], b.GammaRDP, b.Epsilon)
				if lo > b.GammaCI[1] {
					t.Errorf("%s succeeds %d/%d (99.9%% lower limit %.3f) above the ReRo bound %.3f", a, s.Successes, s.Trials, lo, b.GammaCI[1])
				}
				if s.Rate < 0.15 {
					t.Errorf("%s succeeds only %.3f: the test setting is too weak to check the bound", a, s.Rate)
				}
			}
		})
	}
}

func TestComputeBounds(t *testing.T) {
	// q = 1: closed form, and the Monte Carlo estimate agrees with it
	b, err := ComputeBounds(BoundsRequest{Q: 1, Sigma: 2, Steps: 16, PriorSize: 10, Delta: 1e-5, Samples: 200_000, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	// Φ(√16/2 − Φ⁻¹(0.9)) = Φ(2 − 1.2815516) = Φ(0.7184484)
	want := 0.5 * math.Erfc(-(2-1.2815515655446004)/math.Sqrt2)
	if !b.Exact || math.Abs(b.Gamma-want) > 1e-9 || math.Abs(b.GammaMC-want) > 0.01 {
		t.Fatalf("q = 1: γ = %v (MC %v), want %v", b.Gamma, b.GammaMC, want)
	}
	if !(b.GammaRDP >= b.Gamma) || !(b.Epsilon > 0) {
		t.Fatalf("RDP bound %v below the tight bound %v, or ε = %v", b.GammaRDP, b.Gamma, b.Epsilon)
	}
	// more noise → smaller bound; q < 1 → smaller bound than q = 1 at the same σ
	b2, _ := ComputeBounds(BoundsRequest{Q: 1, Sigma: 4, Steps: 16, PriorSize: 10, Delta: 1e-5, Samples: 200_000, Seed: 3})
	b3, _ := ComputeBounds(BoundsRequest{Q: 0.3, Sigma: 2, Steps: 16, PriorSize: 10, Delta: 1e-5, Samples: 200_000, Seed: 3})
	if !(b2.Gamma < b.Gamma) || !(b3.Gamma < b.Gamma) || b3.Exact {
		t.Fatalf("γ(σ=4) = %v, γ(q=0.3) = %v, γ(σ=2, q=1) = %v", b2.Gamma, b3.Gamma, b.Gamma)
	}
	if _, err := ComputeBounds(BoundsRequest{Q: 1, Sigma: 2, Steps: 16, PriorSize: 1, Delta: 1e-5, Samples: 1000, Seed: 1}); err == nil {
		t.Error("K = 1: no error")
	}
	s, err := CalibrateSigma(1, 100, 1e-5, 4)
	if err != nil {
		t.Fatal(err)
	}
	b4, _ := ComputeBounds(BoundsRequest{Q: 1, Sigma: s, Steps: 100, PriorSize: 10, Delta: 1e-5, Samples: 1000, Seed: 1})
	if b4.Epsilon > 4 || b4.Epsilon < 4-1e-3 || b4.Accountant == "" || b4.Adjacency != "add-remove" || b4.Sampling != "poisson" {
		t.Fatalf("σ for ε = 4 gives ε = %v (%s, %s, %s)", b4.Epsilon, b4.Accountant, b4.Adjacency, b4.Sampling)
	}
}

func TestOrthogonalSuccess(t *testing.T) {
	// K = 2: P(Z₁ + μ > Z₂) = Φ(μ/√2)
	for _, sigma := range []float64{0.5, 2, 10} {
		got, err := OrthogonalSuccess(sigma, 9, 2)
		if err != nil {
			t.Fatal(err)
		}
		want := 0.5 * math.Erfc(-(3/sigma/math.Sqrt2)/math.Sqrt2)
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("σ = %v, K = 2: %v, want %v", sigma, got, want)
		}
	}
	// K = 10 against a direct simulation of the idealised scores
	r := rand.New(rand.NewPCG(1, 1))
	const n = 200000
	mu := math.Sqrt(16) / 3.0
	win := 0
	for i := 0; i < n; i++ {
		s := mu + r.NormFloat64()
		ok := true
		for k := 1; k < 10 && ok; k++ {
			ok = r.NormFloat64() < s
		}
		if ok {
			win++
		}
	}
	got, _ := OrthogonalSuccess(3, 16, 10)
	if p := float64(win) / n; math.Abs(got-p) > 4*math.Sqrt(p*(1-p)/n) {
		t.Errorf("K = 10: %v, simulation %v", got, p)
	}
	// below the ReRo bound, above the prior
	b, _ := ComputeBounds(BoundsRequest{Q: 1, Sigma: 3, Steps: 16, PriorSize: 10, Delta: 1e-5, Samples: 1000, Seed: 1})
	if !(got < b.Gamma && got > 0.1) {
		t.Errorf("orthogonal success %v not in (κ, γ = %v)", got, b.Gamma)
	}
	if _, err := OrthogonalSuccess(0, 1, 2); err == nil {
		t.Error("σ = 0: no error")
	}
}
