package train

import (
	"context"
	"fmt"
)

func ExampleConfig_Validate() {
	cfg := DefaultConfig()
	cfg.Sigma, cfg.FILCoords = 0, 50
	fmt.Println(cfg.Validate())
	cfg.FILCoords = 0 // non-private training is fine without FIL
	fmt.Println(cfg.Validate())
	// Output:
	// config: FIL is infinite without noise (sigma = 0); set sigma > 0 or fil_coords = 0
	// <nil>
}

func ExampleRun() {
	// A small MNIST-shaped toy dataset stands in for data.Load("mnist-embedded", …).
	split := imageToyData(200, 100, 1)
	cfg := DefaultConfig()
	cfg.Model, cfg.Dataset, cfg.Steps, cfg.Batch, cfg.FILCoords = "linear", "toy", 30, 50, 4
	cfg.Sigma = 0.5
	res, err := Run(context.Background(), cfg, Options{Data: split})
	if err != nil {
		fmt.Println(err)
		return
	}
	p := res.Privacy
	fmt.Printf("T = %d, q = %.2f, σ/c = %.3f: ε = %.2f at δ = %g (%s, %s, %s sampling)\n",
		res.Steps, res.SampleRate, res.NoiseMultiplierRDP, res.Epsilon, cfg.Delta, p.Accountant, p.Adjacency, p.Sampling)
	fmt.Printf("Theorem 1 (replace-one ε₂ = %.3g): MSE ≥ %.3g\n", res.RDPOrder2, res.MSEBoundRDP)
	fmt.Printf("better than chance (10 classes): %v; FIL bound of the worst sample = 1/max dFIL: %v\n",
		res.TrainAccuracy > 0.1, res.MSEBoundFILMax == 1/res.DFILMax)
	// Output:
	// T = 30, q = 0.25, σ/c = 0.448: ε = 43.69 at δ = 1e-05 (pld, add-remove, poisson sampling)
	// Theorem 1 (replace-one ε₂ = 96.7): MSE ≥ 2.5e-43
	// better than chance (10 classes): true; FIL bound of the worst sample = 1/max dFIL: true
}
