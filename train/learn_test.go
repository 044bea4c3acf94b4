package train

import (
	"context"
	"testing"
	"time"

	"github.com/dpfil/dpfil/data"
)

// TestLearnsMNIST is the real learning check with the (and seed 000 Table 3's)
// hyperparameters: mnist-cnn trained privately on the embedded MNIST with σ = 0.5,
// C = 1, lr 0.1, batch 600, momentum 0.5, smooth clipping, reaches ≥ 90 % test
// accuracy on the 2 000 held-out digits.
//
// With C = 1 every per-sample gradient of this net (norm ≈ 10 early on) is clipped,
// so the update is ~10× smaller than plain SGD's and lr 0.1 needs many steps.
// Measured (seed 1): 0.692 after 200 steps, 0.877 after 1 000, 0.904 after 1 500,
// 0.917 after 2 000 (about 2 min on the 2-core CI machine, FIL off).
func TestLearnsMNIST(t *testing.T) {
	split, err := data.Load("mnist-embedded", data.Options{NoDownload: true})
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Model, cfg.Sigma, cfg.Clip, cfg.LR, cfg.Batch, cfg.Momentum = "mnist-cnn", 0.5, 1, 0.1, 600, 0.5
	cfg.Steps, cfg.FILCoords, cfg.Seed = 2000, 0, 1
	start := time.Now()
	res, err := Run(context.Background(), cfg, Options{Data: split})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d steps in %.1fs: test accuracy %.4f, ε = %.3g", cfg.Steps, time.Since(start).Seconds(), res.TestAccuracy, res.Epsilon)
	if res.TestAccuracy < 0.90 {
		t.Fatalf("test accuracy %.4f < 0.90 after %d steps", res.TestAccuracy, cfg.Steps)
	}
}
