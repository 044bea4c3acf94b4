package accounting_test

import (
	"fmt"
	"math"

	"github.com/dpfil/dpfil/accounting"
)

func ExampleMSEBoundRDP() {
	fmt.Printf("%.4f\n", accounting.MSEBoundRDP(math.Log(2)))
	// Output: 0.2500
}

func ExampleMSEBoundVanTrees() {
	// Mean dFIL 2 over a Gaussian prior with variance 0.25 per pixel, d = 784.
	v, _ := accounting.MSEBoundVanTrees(2, 784/0.25, 784)
	fmt.Printf("%.4f\n", v)
	// Output: 0.1667
}

func ExampleRDP() {
	r := accounting.NewRDP(nil)
	// 60 epochs of MNIST with batch 256 and noise multiplier 1.1.
	if err := r.Compose(256.0/60000, 1.1, 60*60000/256); err != nil {
		panic(err)
	}
	eps, order, _ := r.Epsilon(1e-5, accounting.ConversionImproved)
	eps2, _ := r.At(2)
	fmt.Printf("eps=%.2f at order %g; MSE bound (Thm 1) %.3g\n", eps, order, accounting.MSEBoundRDP(eps2))
	// Output: eps=2.60 at order 8.1; MSE bound (Thm 1) 0.642
}

// Events are composed into an accountant, which answers ε(δ) and δ(ε) and says
// what its numbers hold for.
func ExampleAccountant() {
	step := accounting.PoissonSampledEvent{Q: 0.01, Event: accounting.GaussianEvent{NoiseMultiplier: 1}}
	for _, name := range []string{accounting.AccountantRDP, accounting.AccountantPLD} {
		a, err := accounting.NewAccountant(name, accounting.AddRemove, accounting.ShuffleRigorous)
		if err != nil {
			panic(err)
		}
		if err := a.Supports(step); err != nil {
			panic(err)
		}
		if err := a.Compose(accounting.SelfComposedEvent{Event: step, Count: 10000}); err != nil {
			panic(err)
		}
		e, err := a.Epsilon(1e-5)
		if err != nil {
			panic(err)
		}
		d, err := a.Delta(e.Epsilon)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s: ε = %.3f (%s, %s); δ(ε) = %.2g\n", e.Accountant, e.Epsilon, e.Adjacency, e.Sampling, d.Delta)
	}
	// RDP has no ε for Poisson sampling under replace-one: Supports says so.
	r, _ := accounting.NewAccountant(accounting.AccountantRDP, accounting.ReplaceOne, accounting.ShuffleRigorous)
	fmt.Println(r.Supports(step) != nil)
	// Output:
	// rdp: ε = 6.713 (add-remove, poisson); δ(ε) = 1e-05
	// pld: ε = 6.188 (add-remove, poisson); δ(ε) = 1e-05
	// true
}

// The noise multiplier σ/c for a target ε, and the ε it gives, as train's report
// and the attacks compute them: the tighter of the PLD and RDP accountants.
func ExampleCalibrateNoise() {
	d := accounting.DPSGD{Sampling: accounting.SamplingPoisson, N: 60000, Batch: 600, Steps: 1000}
	opt := accounting.ReportOptions{Delta: 1e-5}
	nm, err := accounting.CalibrateNoise(d.LedgerAt, opt, 1)
	if err != nil {
		panic(err)
	}
	l, _ := d.LedgerAt(nm)
	e, err := accounting.EpsilonOf(l, opt)
	if err != nil {
		panic(err)
	}
	fmt.Printf("σ/c = %.4f: ε = %.4f by %s (%s, %s)\n", nm, e.Epsilon, e.Accountant, e.Adjacency, e.Sampling)
	// Output:
	// σ/c = 1.4147: ε = 1.0000 by pld (add-remove, poisson)
}

func ExampleReRoMonteCarlo() {
	res, err := accounting.ReRoMonteCarlo(accounting.ReRoConfig{Q: 1, Sigma: 2, Steps: 10, Kappa: 0.01, Samples: 200000, Seed: 1})
	if err != nil {
		panic(err)
	}
	fmt.Printf("exact %.3f, within CI: %v\n", *res.GammaExact, res.GammaLow <= *res.GammaExact && *res.GammaExact <= res.GammaHigh)
	// Output: exact 0.228, within CI: true
}

func ExampleReRoClosedForm() {
	// Full-batch DP-SGD, 10 steps at σ = 2, prior of 100 candidates.
	g, _ := accounting.ReRoClosedForm(2, 10, 0.01)
	fmt.Printf("gamma=%.4f advantage=%.4f\n", g, accounting.Advantage(g, 0.01))
	// Output: gamma=0.2281 advantage=0.2203
}

func ExampleReRoRDP() {
	g, order, _ := accounting.ReRoRDP(0.01, 1, 1000, 0.1, nil)
	fmt.Printf("gamma_rdp=%.4f at order %g\n", g, order)
	// Output: gamma_rdp=0.2301 at order 4.7
}
