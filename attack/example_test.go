package attack_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dpfil/dpfil/attack"
)

// An exact 95 % interval for 1 success in 2 trials: [1 − √0.975, √0.975].
func ExampleClopperPearson() {
	lo, hi, err := attack.ClopperPearson(1, 2, 0.95)
	if err != nil {
		panic(err)
	}
	fmt.Printf("[%.4f, %.4f] vs [%.4f, %.4f]\n", lo, hi, 1-math.Sqrt(0.975), math.Sqrt(0.975))
	// Output: [0.0126, 0.9874] vs [0.0126, 0.9874]
}

// A tiny attack game on random data: with almost no noise the prior-aware attack
// always identifies the target.
func ExampleGame_Run() {
	r := rand.New(rand.NewPCG(1, 2))
	pool := attack.Pool{D: 8}
	for i := 0; i < 100; i++ {
		for j := 0; j < 8; j++ {
			pool.X = append(pool.X, r.Float64())
		}
		pool.Y = append(pool.Y, r.IntN(3))
	}
	m, _ := attack.NewMLP(8, 4, 3)
	cfg := attack.DefaultGameConfig()
	cfg.Known, cfg.PriorSize, cfg.Steps, cfg.Sigma = 20, 5, 5, 1e-6
	g, err := attack.NewGame(cfg, pool, func() attack.Net { return m }, m.Init)
	if err != nil {
		panic(err)
	}
	res, err := g.Run(context.Background(), attack.RunOptions{Trials: 20, Workers: 2})
	if err != nil {
		panic(err)
	}
	st, _ := attack.Summarize(res)
	fmt.Println(st[attack.AttackPrior].Successes, "of", st[attack.AttackPrior].Trials)
	// Output: 20 of 20
}

// The ReRo bound of a full-batch run (Hayes, Mahloujifar and Balle 2023, Sec. 3.2): the
// closed form Φ(√T/σ − Φ⁻¹(1−κ)) for T = 16 steps at σ = 2 and a prior of K = 10.
func ExampleComputeBounds() {
	b, err := attack.ComputeBounds(attack.BoundsRequest{Q: 1, Sigma: 2, Steps: 16, PriorSize: 10, Delta: 1e-5, Samples: 1000, Seed: 1})
	if err != nil {
		panic(err)
	}
	// Φ⁻¹(0.9) = 1.2815515655446004, so γ = Φ(2 − 1.28155…).
	phi := 0.5 * math.Erfc(-(2-1.2815515655446004)/math.Sqrt2)
	fmt.Printf("closed form %v: γ = %.4f (Φ(0.7184) = %.4f), κ = %.1f\n", b.Exact, b.Gamma, phi, b.Kappa)
	// Output: closed form true: γ = 0.7638 (Φ(0.7184) = 0.7638), κ = 0.1
}

// Realised MSEs of three targets against their FIL bounds 1/dFIL (Guo et al. 2022,
// Fig. 3): the first target is reconstructed below its bound.
func ExampleCompareFIL() {
	c, err := attack.CompareFIL([]float64{0.5, 2, 4}, []float64{0.4, 3, 8})
	if err != nil {
		panic(err)
	}
	fmt.Printf("violations %d (%d of the %d bounds below 1), median MSE %v\n", c.Violations, c.ViolationsBelow1, c.BoundBelow1, float64(c.MSEMedian))
	// Output: violations 1 (1 of the 1 bounds below 1), median MSE 3
}

// Two candidates whose clipped gradients, summed over T = 4 steps, are orthogonal
// (Gram matrix 4·I in units of C²) under noise multiplier σ = 1: the best test errs
// when the noise crosses half their distance √8, so its success is Φ(√8/2).
func ExampleOptimalSuccess() {
	gram := []float64{4, 0, 0, 4}
	s, err := attack.OptimalSuccess(gram, 2, 1, 100000, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		panic(err)
	}
	fmt.Printf("Monte Carlo %.2f, closed form %.2f\n", s, 0.5*math.Erfc(-math.Sqrt(8)/2/math.Sqrt2))
	// Output: Monte Carlo 0.92, closed form 0.92
}
