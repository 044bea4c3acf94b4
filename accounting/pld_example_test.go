package accounting_test

import (
	"fmt"
	"log"

	"github.com/dpfil/dpfil/accounting"
)

// DP-SGD with Poisson sampling at rate 0.01 and noise multiplier 1 for 10 000 steps,
// add/remove adjacency: the PLD accountant's (ε, 1e-5) against the RDP accountant's.
func ExamplePLD() {
	p := accounting.NewPLD(accounting.AddRemove, nil) // default grid 1e-4
	if err := p.ComposePoissonGaussian(0.01, 1, 10000); err != nil {
		log.Fatal(err)
	}
	e, err := p.Epsilon(1e-5)
	if err != nil {
		log.Fatal(err)
	}
	r := accounting.NewRDP(nil)
	if err := r.Compose(0.01, 1, 10000); err != nil {
		log.Fatal(err)
	}
	rdp, _, err := r.Epsilon(1e-5, accounting.ConversionImproved)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("PLD: %.3f ≤ ε ≤ %.3f\n", e.Lower, e.Upper)
	fmt.Printf("RDP: ε ≤ %.3f\n", rdp)
	// Output:
	// PLD: 6.188 ≤ ε ≤ 6.188
	// RDP: ε ≤ 6.713
}

// The ReRo bound of Hayes et al. from the trade-off curve of the same run, for an
// attacker whose prior guess succeeds with probability 1/100.
func ExampleReRoTradeoff() {
	r, err := accounting.ReRoTradeoff(accounting.ReRoRun{Q: 0.01, Sigma: 1, Steps: 1000, Kappa: 0.01}, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%.4f ≤ γ ≤ %.4f (%s, %s)\n", r.GammaLower, r.Gamma, r.Adjacency, r.Sampling)
	// Output:
	// 0.0291 ≤ γ ≤ 0.0291 (add-remove, poisson)
}
