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

func ExampleSigmaForEpsilon() {
	sigma, _ := accounting.SigmaForEpsilon(accounting.SampledGaussianRun{Q: 0.01, Steps: 1000, Delta: 1e-5}, 1, nil, accounting.ConversionImproved)
	eps, _, _ := accounting.EpsilonFor(accounting.SampledGaussianRun{Q: 0.01, Sigma: sigma, Steps: 1000, Delta: 1e-5}, nil, accounting.ConversionImproved)
	fmt.Printf("sigma=%.4f eps=%.4f\n", sigma, eps)
	// Output: sigma=1.5131 eps=1.0000
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
