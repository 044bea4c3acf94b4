package accounting

import (
	"math"
	"testing"
)

// TestAnalyticGaussianMatchesPLD checks the closed form the calibration uses for
// unsampled Gaussian releases against the PLD accountant: μ is Δ·√(Σ T/σ²) for the
// adjacency's sensitivity, and the exact ε lies between the PLD's optimistic and
// pessimistic discretisations, within their gap; any subsampled step has no closed
// form.
func TestAnalyticGaussianMatchesPLD(t *testing.T) {
	g := func(s float64) GaussianEvent { return GaussianEvent{NoiseMultiplier: s} }
	for _, tc := range []struct {
		name  string
		adj   Adjacency
		ev    Event
		mu    float64
		delta float64
	}{
		{"one release", AddRemove, g(2), 0.5, 1e-5},
		{"T = 100, q = 1", AddRemove, SelfComposedEvent{Event: PoissonSampledEvent{Q: 1, Event: g(5)}, Count: 100}, 2, 1e-5},
		{"T = 1000, q = 1, replace-one", ReplaceOne, SelfComposedEvent{Event: PoissonSampledEvent{Q: 1, Event: g(30)}, Count: 1000}, 2 * math.Sqrt(1000) / 30, 1e-6},
		{"heterogeneous", AddRemove, ComposedEvent{Events: []Event{SelfComposedEvent{Event: g(2), Count: 3}, SelfComposedEvent{Event: g(1), Count: 2}}}, math.Sqrt(3.0/4 + 2), 1e-3},
		{"shuffled epochs, no amplification", AddRemove, SelfComposedEvent{Event: ShuffledEpochEvent{Q: 0.1, Steps: 10, Event: g(1.5)}, Count: 3}, math.Sqrt(3) / 1.5, 1e-5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := NewPLDAccountant(tc.adj, ShuffleRigorous, nil)
			if err := a.Compose(tc.ev); err != nil {
				t.Fatal(err)
			}
			mu, ok := a.pld.gaussianMu()
			if !ok || math.Abs(mu/tc.mu-1) > 1e-12 {
				t.Fatalf("μ = %v (ok %v), want %v", mu, ok, tc.mu)
			}
			exact, ok, err := a.analyticEpsilon(tc.delta)
			if err != nil || !ok {
				t.Fatalf("closed form: %v, %v", ok, err)
			}
			if d := gaussianDelta(mu, exact); d > tc.delta || d < tc.delta*(1-1e-6) {
				t.Errorf("δ(ε = %v) = %v, want %v", exact, d, tc.delta)
			}
			b, err := a.Epsilon(tc.delta)
			if err != nil {
				t.Fatal(err)
			}
			if exact > b.Epsilon*(1+1e-9) || exact < *b.Lower*(1-1e-9) || b.Epsilon-exact > 2e-3 {
				t.Errorf("exact ε %v outside the PLD's [%v, %v]", exact, *b.Lower, b.Epsilon)
			}
		})
	}
	a := NewPLDAccountant(AddRemove, ShuffleRigorous, nil)
	if err := a.Compose(ComposedEvent{Events: []Event{g(1), PoissonSampledEvent{Q: 0.5, Event: g(1)}}}); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := a.analyticEpsilon(1e-5); ok || err != nil {
		t.Errorf("a subsampled step has a closed form: %v, %v", ok, err)
	}
}

// TestCalibrateNoiseUnsampled checks the calibration's contract where the closed form
// brackets the PLD's answer (q = 1, and shuffled epochs without amplification): the
// σ meets the target by EpsilonOf and σ/(1 + 1e-4) does not.
func TestCalibrateNoiseUnsampled(t *testing.T) {
	for _, tc := range []struct {
		d      DPSGD
		acct   string
		target float64
	}{
		{DPSGD{Sampling: SamplingPoisson, N: 100, Batch: 100, Steps: 100}, AccountantAuto, 10},
		{DPSGD{Sampling: SamplingPoisson, N: 100, Batch: 100, Steps: 100}, AccountantPLD, 0.5},
		{DPSGD{Sampling: SamplingPoisson, N: 100, Batch: 100, Steps: 1000}, AccountantAuto, 4},
		{DPSGD{Sampling: SamplingShuffle, N: 1000, Batch: 100, Steps: 50}, AccountantAuto, 2},
	} {
		opt := ReportOptions{Delta: 1e-5, Accountant: tc.acct}
		nm, err := CalibrateNoise(tc.d.LedgerAt, opt, tc.target)
		if err != nil {
			t.Fatal(err)
		}
		at := func(nm float64) float64 {
			l, err := tc.d.LedgerAt(nm)
			if err != nil {
				t.Fatal(err)
			}
			e, err := EpsilonOf(l, opt)
			if err != nil {
				t.Fatal(err)
			}
			return e.Epsilon
		}
		if e, e2 := at(nm), at(nm/(1+1e-4)); e > tc.target || e2 <= tc.target {
			t.Errorf("%+v %s target %v: σ %v gives ε %v, σ/(1+1e-4) gives %v", tc.d, tc.acct, tc.target, nm, e, e2)
		}
	}
}
