package attack

import (
	"context"
	"math/rand/v2"
	"testing"
)

// mnistSizedGame is the default game's shape (784 → 10 → 10 MLP, |D₋| = 999, K = 10)
// on random data with T steps.
func mnistSizedGame(b *testing.B, steps int, q float64, grad bool) *Game {
	b.Helper()
	m, _ := NewMLP(784, 10, 10)
	cfg := DefaultGameConfig()
	cfg.Steps, cfg.Q, cfg.Gradient.Enabled = steps, q, grad
	g, err := NewGame(cfg, synthPool(1200, 784, 10, 3), func() Net { return m }, m.Init)
	if err != nil {
		b.Fatal(err)
	}
	return g
}

// BenchmarkTrialStep is one DP-SGD step of the default game (999 known + 10 prior
// per-sample gradients, noise, scores), single goroutine.
func BenchmarkTrialStep(b *testing.B) {
	g := mnistSizedGame(b, 10, 1, false)
	st := g.newState()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := g.trial(context.Background(), st, i, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N*10)*1e3, "ms/step")
}

// BenchmarkGradientLoss is one evaluation of Eq. 1 and its exact input gradient over
// 10 observed steps of the 784 → 10 → 10 MLP.
func BenchmarkGradientLoss(b *testing.B) {
	m, _ := NewMLP(784, 10, 10)
	r := rand.New(rand.NewPCG(1, 1))
	obs := make([]Observation, 10)
	for i := range obs {
		gb := make([]float64, m.NumParams())
		for j := range gb {
			gb[j] = 0.01 * r.NormFloat64()
		}
		obs[i] = Observation{Theta: m.Init(uint64(i)), GBar: gb}
	}
	x := make([]float64, 784)
	for i := range x {
		x[i] = r.Float64()
	}
	dx := make([]float64, 784)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := GradientLoss(m, obs, x, 3, 0.1, dx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N*10)*1e6, "µs/step-term")
}

// BenchmarkOptimalSuccess is one trial's optimal_success at K = 10: the Bayes
// decision over optimalDraws noise draws on a Gram matrix of T = 100 orthogonal steps.
func BenchmarkOptimalSuccess(b *testing.B) {
	const K = 10
	gram := make([]float64, K*K)
	for i := 0; i < K; i++ {
		gram[i*K+i] = 100
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < b.N; i++ {
		if _, err := OptimalSuccess(gram, K, 5, optimalDraws/K, r); err != nil {
			b.Fatal(err)
		}
	}
}
