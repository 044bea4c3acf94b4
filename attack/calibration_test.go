package attack

import (
	"testing"

	"github.com/dpfil/dpfil/accounting"
	"github.com/dpfil/dpfil/train"
)

// The attack game and train calibrate through the same accountant: for the same
// q, σ, T and δ the game's ε (ComputeBounds) is the ε train reports, by the same
// accountant, and the σ the game solves for a target ε (CalibrateSigma) is the σ
// train's target_epsilon resolves to. At these settings the PLD is tighter than
// RDP, so an attack calibrated with RDP alone fails the test.
func TestAttackAndTrainCalibrateAlike(t *testing.T) {
	for _, tc := range []struct {
		n, batch, steps int
		sigma, delta    float64
		target          float64
	}{
		{1000, 10, 1000, 1, 1e-5, 2},
		{1000, 1000, 100, 4, 1e-5, 4}, // q = 1: the game's default full batch
		{500, 25, 200, 0.8, 1e-6, 8},
	} {
		q := float64(tc.batch) / float64(tc.n)
		cfg := train.DefaultConfig()
		cfg.Batch, cfg.Steps, cfg.Epochs, cfg.Sampling, cfg.ClipMode = tc.batch, tc.steps, 0, train.SamplingPoisson, train.ClipModeHard
		cfg.Sigma, cfg.Delta = tc.sigma, tc.delta
		p, err := train.ResolvePrivacy(cfg, tc.n)
		if err != nil {
			t.Fatal(err)
		}
		l, err := p.Ledger()
		if err != nil {
			t.Fatal(err)
		}
		rep, err := p.Report(l)
		if err != nil {
			t.Fatal(err)
		}
		b, err := ComputeBounds(BoundsRequest{Q: q, Sigma: tc.sigma, Steps: tc.steps, PriorSize: 10, Delta: tc.delta, Samples: 1000, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		if b.Epsilon != rep.Epsilon || b.Accountant != rep.Accountant || b.Adjacency != rep.Adjacency || b.Sampling != rep.Sampling {
			t.Errorf("q %v σ %v T %d: attack ε %v (%s, %s, %s), train ε %v (%s, %s, %s)", q, tc.sigma, tc.steps,
				b.Epsilon, b.Accountant, b.Adjacency, b.Sampling, rep.Epsilon, rep.Accountant, rep.Adjacency, rep.Sampling)
		}
		if rep.Accountant != accounting.AccountantPLD || !(*rep.EpsilonPLD < *rep.EpsilonRDP) {
			t.Errorf("q %v σ %v T %d: train reports %s (PLD %v, RDP %v): the case does not tell the accountants apart",
				q, tc.sigma, tc.steps, rep.Accountant, *rep.EpsilonPLD, *rep.EpsilonRDP)
		}

		cfg.Sigma, cfg.TargetEpsilon = 0, tc.target
		pt, err := train.ResolvePrivacy(cfg, tc.n)
		if err != nil {
			t.Fatal(err)
		}
		s, err := CalibrateSigma(q, tc.steps, tc.delta, tc.target)
		if err != nil {
			t.Fatal(err)
		}
		if s != pt.Sigma || pt.NoiseMultiplier != pt.Sigma {
			t.Errorf("q %v T %d target ε %v: attack σ %v, train σ %v (σ/c %v)", q, tc.steps, tc.target, s, pt.Sigma, pt.NoiseMultiplier)
		}
	}
}

// TestCalibrateBeyondThePLD: at ε where the PLD accountant refuses the setting (its
// privacy-loss range too wide at tiny noise; ε = 1000 at q = 1, T = 100), calibration
// meets the ε the report then gives, by the RDP accountant, instead of failing.
func TestCalibrateBeyondThePLD(t *testing.T) {
	for _, target := range []float64{1000, 5000} {
		s, err := CalibrateSigma(1, 100, 1e-5, target)
		if err != nil {
			t.Fatalf("ε = %v: %v", target, err)
		}
		b, err := ComputeBounds(BoundsRequest{Q: 1, Sigma: s, Steps: 100, PriorSize: 10, Delta: 1e-5, Samples: 1000, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		if b.Accountant != accounting.AccountantRDP || !(b.Epsilon <= target) || !(b.Epsilon > target*(1-1e-3)) {
			t.Errorf("target ε %v: σ %v gives ε %v by %s", target, s, b.Epsilon, b.Accountant)
		}
	}
}
