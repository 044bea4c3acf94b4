package train

import (
	"context"
	"testing"
	"time"

	"github.com/dpfil/dpfil/data"
)

// TestLearnsMNIST is the real learning check: mnist-cnn trained privately on the
// embedded MNIST (σ = 0.5, C = 1, batch 600, momentum 0.5, smooth clipping) reaches
// ≥ 90 % test accuracy on the 2 000 held-out digits.
//
// The learning rate is 2, not the 0.1: with C = 1 every per-sample gradient of
// this net (norm ≈ 10 early on) is clipped, so the update is ~10× smaller than plain
// SGD's, and lr 0.1 needs ~1 500 steps (measured: 69 % after 200, 87.7 % after 1 000,
// 90.4 % after 1 500; ~2 min), beyond this package's test budget. Measured with lr 2: 90.5 % after 80 steps, 91.5 % after
// 100, 92.0 % after 120 (lr 1: 87.2 % after 100, 90.6 % after 160).
func TestLearnsMNIST(t *testing.T) {
	split, err := data.Load("mnist-embedded", data.Options{NoDownload: true})
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Model, cfg.Sigma, cfg.Clip, cfg.LR, cfg.Batch, cfg.Momentum = "mnist-cnn", 0.5, 1, 2, 600, 0.5
	cfg.Steps, cfg.FILCoords, cfg.Seed = 100, 0, 1
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
