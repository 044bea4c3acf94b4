package accounting_test

import (
	"fmt"
	"log"
	"slices"

	"github.com/dpfil/dpfil/accounting"
)

// The privacy of 1000 DP-SGD steps at q = 0.01, σ = 1.1, in Rényi DP, with Guo et
// al.'s Theorem 1 bound from the replace-one order-2 RDP.
func ExampleAccountRDP() {
	res, err := accounting.AccountRDP(accounting.RDPRequest{Q: 0.01, Sigma: 1.1, Steps: 1000, Delta: 1e-5})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("ε = %.3f at order %g (%s, %s sampling)\n", res.Epsilon, res.Order, res.Adjacency, res.Sampling)
	fmt.Printf("Theorem 1: ε₂ = %.4f (replace-one) → MSE ≥ %.3f\n", res.Theorem1.RDPOrder2, res.Theorem1.MSEBoundRDP)
	// Output:
	// ε = 1.712 at order 9.6 (add-remove, poisson sampling)
	// Theorem 1: ε₂ = 0.3732 (replace-one) → MSE ≥ 0.553
}

// A heterogeneous run: the noise is lowered half way.
func ExampleParseSchedule() {
	sched, err := accounting.ParseSchedule("0.01:2:500,0.01:1:500")
	if err != nil {
		log.Fatal(err)
	}
	res, err := accounting.AccountRDP(accounting.RDPRequest{Schedule: sched, Delta: 1e-5})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d segments, %d steps: ε = %.3f\n", len(sched), res.Steps, res.Epsilon)
	// Output:
	// 2 segments, 1000 steps: ε = 1.712
}

// The PLD accountant gives a tighter ε than RDP, with a rigorous bracket.
func ExampleAccountPLD() {
	res, err := accounting.AccountPLD(accounting.PLDRequest{Q: 0.01, Sigma: 1, Steps: 1000, Delta: 1e-5,
		Interval: accounting.DefaultPLDInterval})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("PLD ε ∈ [%.3f, %.3f], RDP ε = %.3f\n", res.EpsilonLower, res.Epsilon, *res.EpsilonRDP)
	// Output:
	// PLD ε ∈ [1.828, 1.828], RDP ε = 2.101
}

// Every privacy number of a training run, as the trainer reports it.
func ExampleAccountDPSGD() {
	res, err := accounting.AccountDPSGD(accounting.DPSGDRequest{N: 60000, Batch: 600, Steps: 1000, Sigma: 1,
		Delta: 1e-5, Sampling: accounting.SamplingPoisson})
	if err != nil {
		log.Fatal(err)
	}
	p := res.Privacy
	fmt.Printf("ε = %.3f (%s accountant), κ = %.4f\n", p.Epsilon, p.Accountant, *p.Kappa)
	// Output:
	// ε = 1.828 (pld accountant), κ = 0.9997
}

// Lower bounds on the MSE of any reconstruction attack from an order-2 RDP and a dFIL.
func ExampleMSEBounds() {
	eps2, dfil := 0.33, 0.5
	res, err := accounting.MSEBounds(accounting.MSERequest{Eps2: &eps2, Diameter: 1, DFIL: &dfil})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("Theorem 1: MSE ≥ %.4f; Theorem 2: MSE ≥ %.4f\n", *res.MSEBoundRDP, *res.MSEBoundFIL)
	// Output:
	// Theorem 1: MSE ≥ 0.6394; Theorem 2: MSE ≥ 2.0000
}

// κ for q = B/N = 256/60000, σ = 1.1, hard clipping and δ_f = 1/(T·N) for 14062
// steps.
func ExampleKappa() {
	k, err := accounting.Kappa(accounting.KappaParams{Q: 256.0 / 60000, Sigma: 1.1, ClipConstant: 1,
		DeltaF: accounting.DefaultFILDelta(14062, 60000)})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("kappa=%.4f\n", k)
	// Output: kappa=0.9987
}

// Per-sample FIL over one step in which samples 0 and 2 were in the batch, with FIM
// traces 784 and 392.
func ExampleFIL() {
	const n, d = 4, 784
	kappa, _ := accounting.Kappa(accounting.KappaParams{Q: 0.5, Sigma: 1.0, ClipConstant: 1.0, DeltaF: accounting.DefaultFILDelta(1000, n)})
	f, _ := accounting.NewFIL(n, d, kappa)
	_ = f.AddStep([]int{0, 2}, []float64{784, 392})
	dfil := f.DFIL()
	worst := slices.Max(dfil)
	fmt.Printf("kappa=%.6f max dFIL=%.4f MSE bound (worst sample)=%.4f\n", kappa, worst, accounting.MSEBoundFIL(worst))
	// Output: kappa=0.999772 max dFIL=0.9998 MSE bound (worst sample)=1.0002
}
