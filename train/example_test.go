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
	fmt.Printf("T = %d, q = %.2f, σ/c = %.3f: ε = %.2f at δ = %g, RDP MSE bound %.3g\n",
		res.Steps, res.SampleRate, res.NoiseMultiplierRDP, res.Epsilon, cfg.Delta, res.MSEBoundRDP)
	fmt.Printf("better than chance: %v; FIL bound of the worst sample = 1/max dFIL: %v\n",
		res.TestAccuracy > 0.2, res.MSEBoundFILMax == 1/res.DFILMax)
	// Output:
	// T = 30, q = 0.25, σ/c = 0.448: ε = 48.76 at δ = 1e-05, RDP MSE bound 2.63e-31
	// better than chance: true; FIL bound of the worst sample = 1/max dFIL: true
}
