package attack

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestOptimalSuccessClosedForms checks the Monte Carlo against three closed forms:
// K orthogonal norm-C gradients (OrthogonalSuccess's quadrature), the regular simplex
// (the same with the signal scaled by √(K/(K−1))), and two candidates of any
// geometry, where the likelihood test errs with probability Φ(−‖m₁ − m₂‖/(2σ)).
func TestOptimalSuccessClosedForms(t *testing.T) {
	const T = 100
	orth := func(K int) []float64 {
		g := make([]float64, K*K)
		for i := 0; i < K; i++ {
			g[i*K+i] = T
		}
		return g
	}
	simplex := func(K int) []float64 {
		g := make([]float64, K*K)
		for i := 0; i < K; i++ {
			for j := 0; j < K; j++ {
				g[i*K+j] = -T / float64(K-1)
			}
			g[i*K+i] = T
		}
		return g
	}
	mustOrth := func(sigma float64, K int) float64 {
		v, err := OrthogonalSuccess(sigma, T, K)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	// Two candidates: norms² 60 and 90, inner product 30 (cosine 0.41).
	pair := []float64{60, 30, 30, 90}
	pairWant := func(sigma float64) float64 {
		d := math.Sqrt(60 + 90 - 2*30)
		return 0.5 * math.Erfc(-d/(2*sigma)/math.Sqrt2)
	}
	for _, tc := range []struct {
		name  string
		gram  []float64
		K     int
		sigma float64
		want  float64
	}{
		{"orthogonal K=10 ε=10", orth(10), 10, 5.0, mustOrth(5.0, 10)},
		{"orthogonal K=10 ε=4", orth(10), 10, 10.81, mustOrth(10.81, 10)},
		{"orthogonal K=3", orth(3), 3, 3, mustOrth(3, 3)},
		{"simplex K=10", simplex(10), 10, 5.0, mustOrth(5.0*math.Sqrt(9.0/10), 10)},
		{"simplex K=4", simplex(4), 4, 8, mustOrth(8*math.Sqrt(3.0/4), 4)},
		{"pair σ=3", pair, 2, 3, pairWant(3)},
		{"pair σ=10", pair, 2, 10, pairWant(10)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const n = 200000
			draws := n / tc.K
			got, err := OptimalSuccess(tc.gram, tc.K, tc.sigma, draws, rand.New(rand.NewPCG(1, 2)))
			if err != nil {
				t.Fatal(err)
			}
			se := math.Sqrt(tc.want * (1 - tc.want) / float64(tc.K*draws))
			if math.Abs(got-tc.want) > 4*se {
				t.Errorf("success %.4f, closed form %.4f (4 SE = %.4f)", got, tc.want, 4*se)
			}
		})
	}
}

// TestOptimalSuccessLimits: identical candidates cannot be told apart (1/K), and noise far above the signal leaves chance while
// noise far below it finds every target.
func TestOptimalSuccessLimits(t *testing.T) {
	const K = 5
	same := make([]float64, K*K)
	for i := range same {
		same[i] = 7
	}
	r := rand.New(rand.NewPCG(3, 4))
	if got, err := OptimalSuccess(same, K, 1, 20000, r); err != nil || math.Abs(got-1.0/K) > 0.01 {
		t.Errorf("identical candidates: %v, %v; want 1/K", got, err)
	}
	g := make([]float64, K*K)
	for i := 0; i < K; i++ {
		g[i*K+i] = 1
	}
	if got, _ := OptimalSuccess(g, K, 1e-3, 1000, r); got != 1 {
		t.Errorf("σ → 0: success %v, want 1", got)
	}
	if got, _ := OptimalSuccess(g, K, 1e4, 20000, r); math.Abs(got-1.0/K) > 0.02 {
		t.Errorf("σ → ∞: success %v, want ≈ 1/K", got)
	}
}

func TestOptimalSuccessErrors(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, tc := range []struct {
		name  string
		gram  []float64
		K     int
		sigma float64
		draws int
		err   string
	}{
		{"one candidate", []float64{1}, 1, 1, 10, "Gram matrix of 1 values for K = 1"},
		{"wrong size", []float64{1, 0, 0}, 2, 1, 10, "Gram matrix of 3 values"},
		{"zero σ", []float64{1, 0, 0, 1}, 2, 0, 10, "need σ > 0"},
		{"infinite σ", []float64{1, 0, 0, 1}, 2, math.Inf(1), 10, "need σ > 0"},
		{"no draws", []float64{1, 0, 0, 1}, 2, 1, 0, "draws ≥ 1"},
		{"NaN", []float64{1, math.NaN(), 0, 1}, 2, 1, 10, "not finite"},
		{"asymmetric", []float64{1, 0.5, 0, 1}, 2, 1, 10, "not symmetric at (0, 1)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := OptimalSuccess(tc.gram, tc.K, tc.sigma, tc.draws, r)
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("error %v, want one containing %q", err, tc.err)
			}
		})
	}
}

// TestTrialOptimalSuccess: a trial's OptimalSuccess is the one computed here from
// the prior's clipped gradients at θ₀ (lr 0 keeps θ_t = θ₀, so the Gram matrix is T
// times one step's, recomputed outside the game); it is measured at q = 1 and
// K ≤ optimalMaxK only.
func TestTrialOptimalSuccess(t *testing.T) {
	cfg := smallConfig()
	cfg.LR, cfg.Sigma, cfg.Clip = 0, 0.8, 0.05
	g := testGame(t, cfg, 12, 4, 3, 60)
	res := runGame(t, g, 4, 1)
	K, P := cfg.PriorSize, g.P
	st := g.newState()
	for _, r := range res {
		if r.OptimalSuccess == nil {
			t.Fatalf("trial %d: no optimal success at q = 1", r.Trial)
		}
		var x []float64
		var y []int
		for _, i := range r.Prior {
			x = g.pool.AppendImages(x, i, i+1)
			y = append(y, g.pool.Y[i])
		}
		ci := make([]float64, K*P)
		if err := st.net.PerSampleGrads(g.theta0, x, y, K, ci, nil); err != nil {
			t.Fatal(err)
		}
		for k := 0; k < K; k++ {
			row := ci[k*P : (k+1)*P]
			n := 0.0
			for _, v := range row {
				n += v * v
			}
			if n = math.Sqrt(n); n > cfg.Clip {
				for i := range row {
					row[i] *= cfg.Clip / n
				}
			}
		}
		gram := make([]float64, K*K)
		for i := 0; i < K; i++ {
			for j := 0; j < K; j++ {
				d := 0.0
				for k := 0; k < P; k++ {
					d += ci[i*P+k] * ci[j*P+k]
				}
				gram[i*K+j] = float64(cfg.Steps) * d / (cfg.Clip * cfg.Clip)
			}
		}
		want, err := OptimalSuccess(gram, K, cfg.Sigma, optimalDraws/K, rand.New(rand.NewPCG(deriveSeed(cfg.Seed, uint64(r.Trial)), 0x6f7074)))
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(*r.OptimalSuccess-want) > 1e-3 {
			t.Errorf("trial %d: optimal success %v, recomputed %v", r.Trial, *r.OptimalSuccess, want)
		}
		if *r.OptimalSuccess <= 1.0/float64(K) {
			t.Errorf("trial %d: optimal success %v at or below chance 1/K", r.Trial, *r.OptimalSuccess)
		}
	}
	big := cfg
	big.PriorSize = optimalMaxK + 1
	for _, r := range runGame(t, testGame(t, big, 12, 4, 3, 80), 1, 1) {
		if r.OptimalSuccess != nil {
			t.Errorf("K = %d: optimal success %v, want none (cost)", big.PriorSize, *r.OptimalSuccess)
		}
	}
	cfg.Q = 0.5
	for _, r := range runGame(t, testGame(t, cfg, 12, 4, 3, 60), 2, 1) {
		if r.OptimalSuccess != nil {
			t.Errorf("q = 0.5: optimal success %v, want none (the likelihood is a mixture)", *r.OptimalSuccess)
		}
	}
}
