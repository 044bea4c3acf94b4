package accounting

import (
	"encoding/json"
	"math"
	"testing"
)

func TestLedgerMergesAndRoundTrips(t *testing.T) {
	var l Ledger
	step := PoissonSampledEvent{Q: 0.01, Event: GaussianEvent{NoiseMultiplier: 1.1}}
	for i := 0; i < 5; i++ {
		if err := l.Add(step, 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Add(ShuffledEpochEvent{Q: 0.1, Steps: 10, Event: GaussianEvent{NoiseMultiplier: 2}}, 3); err != nil {
		t.Fatal(err)
	}
	if err := l.Add(step, 2); err != nil {
		t.Fatal(err)
	}
	if len(l.Events) != 3 || l.Events[0].(SelfComposedEvent).Count != 5 || l.Events[2].(SelfComposedEvent).Count != 2 {
		t.Fatalf("ledger = %+v", l.Events)
	}
	b, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	var back Ledger
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	b2, _ := json.Marshal(back)
	if string(b) != string(b2) {
		t.Errorf("round trip:\n%s\n%s", b, b2)
	}
	for _, bad := range []string{`[{"kind":"laplace"}]`, `[{"kind":"gaussian","noise_multiplier":-1}]`,
		`[{"kind":"self_composed","count":2}]`, `[{"kind":"shuffled_epoch","q":0.5,"steps":3,"noise_multiplier":1}]`, `{`} {
		if err := json.Unmarshal([]byte(bad), &back); err == nil {
			t.Errorf("ledger %s: want an error", bad)
		}
	}
	if err := l.Add(GaussianEvent{NoiseMultiplier: math.NaN()}, 1); err == nil || len(l.Events) != 3 {
		t.Errorf("NaN event: err %v, %d entries", err, len(l.Events))
	}
}

func TestRDPAccountantMatchesDirect(t *testing.T) {
	const delta = 1e-5
	q, sigma, T := 0.02, 1.3, 500
	tests := []struct {
		name    string
		adj     Adjacency
		shuffle ShuffleAccounting
		event   Event
		wantEps func() (float64, error)
		want2   float64
	}{
		{"poisson add-remove", AddRemove, ShuffleRigorous, SelfComposedEvent{PoissonSampledEvent{q, GaussianEvent{sigma}}, T},
			func() (float64, error) {
				e, _, err := epsilonFor(sampledGaussianRun{Q: q, Sigma: sigma, Steps: T, Delta: delta}, nil, ConversionImproved)
				return e, err
			},
			float64(T) * mustF(SampledGaussianRDP(q, sigma, 2))},
		{"uniform replace-one", ReplaceOne, ShuffleRigorous, SelfComposedEvent{SampledWithoutReplacementEvent{q, GaussianEvent{sigma}}, T},
			func() (float64, error) {
				e, _, err := epsilonFor(sampledGaussianRun{Q: q, Sigma: sigma / 2, Steps: T, Delta: delta}, nil, ConversionImproved)
				return e, err
			},
			float64(T) * math.Log1p(q*q*math.Expm1(4/(sigma*sigma)))},
		// 500 steps of 1/q = 50 per epoch: 10 epochs, each one Gaussian of sensitivity 2.
		{"shuffle rigorous replace-one", ReplaceOne, ShuffleRigorous, SelfComposedEvent{ShuffledEpochEvent{q, 50, GaussianEvent{sigma}}, 10},
			func() (float64, error) {
				e, _, err := epsilonFor(sampledGaussianRun{Q: 1, Sigma: sigma / 2, Steps: 10, Delta: delta}, nil, ConversionImproved)
				return e, err
			},
			10 * 4 / (sigma * sigma)},
		{"shuffle approx add-remove", AddRemove, ShufflePoissonApprox, SelfComposedEvent{ShuffledEpochEvent{q, 50, GaussianEvent{sigma}}, 10},
			func() (float64, error) {
				e, _, err := epsilonFor(sampledGaussianRun{Q: q, Sigma: sigma, Steps: T, Delta: delta}, nil, ConversionImproved)
				return e, err
			},
			float64(T) * mustF(SampledGaussianRDP(q, sigma, 2))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := NewRDPAccountant(tc.adj, tc.shuffle, nil)
			if err := a.Compose(tc.event); err != nil {
				t.Fatal(err)
			}
			b, err := a.Epsilon(delta)
			if err != nil {
				t.Fatal(err)
			}
			eps := b.Epsilon
			want, err := tc.wantEps()
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(eps-want) > 1e-9*want {
				t.Errorf("ε = %v, want %v", eps, want)
			}
			if math.Abs(a.Order2()-tc.want2) > 1e-9*tc.want2 {
				t.Errorf("order 2 = %v, want %v", a.Order2(), tc.want2)
			}
		})
	}
	// Replace-one Poisson: order 2 only.
	a := NewRDPAccountant(ReplaceOne, ShuffleRigorous, nil)
	if err := a.Compose(SelfComposedEvent{PoissonSampledEvent{q, GaussianEvent{sigma}}, T}); err != nil {
		t.Fatal(err)
	}
	o2, _ := Order2StepRDP(ReplaceOne, SamplingPoisson, q, sigma)
	if math.Abs(a.Order2()-float64(T)*o2) > 1e-12 {
		t.Errorf("replace-one Poisson order 2 = %v, want %v", a.Order2(), float64(T)*o2)
	}
	if _, err := a.Epsilon(delta); err == nil {
		t.Error("replace-one Poisson RDP ε: want an error pointing to PLD")
	}
	// A bad event leaves the accountant unchanged.
	b := NewRDPAccountant(AddRemove, ShuffleRigorous, nil)
	_ = b.Compose(PoissonSampledEvent{q, GaussianEvent{sigma}})
	before := b.Order2()
	if err := b.Compose(ComposedEvent{[]Event{PoissonSampledEvent{q, GaussianEvent{sigma}}, SampledWithoutReplacementEvent{q, GaussianEvent{sigma}}}}); err == nil {
		t.Error("uniform under add-remove: want an error")
	}
	if b.Order2() != before {
		t.Errorf("failed compose changed the accountant: %v → %v", before, b.Order2())
	}
}

func TestKappaOf(t *testing.T) {
	g := GaussianEvent{NoiseMultiplier: 1.5}
	k1, _ := KappaOf(PoissonSampledEvent{0.01, g}, 1e-8, ShuffleRigorous)
	want, _ := Kappa(KappaParams{Q: 0.01, Sigma: 1.5, ClipConstant: 1, DeltaF: 1e-8})
	k2, _ := KappaOf(ShuffledEpochEvent{0.01, 100, g}, 1e-8, ShuffleRigorous)
	k3, _ := KappaOf(ShuffledEpochEvent{0.01, 100, g}, 1e-8, ShufflePoissonApprox)
	if k1 != want || k2 != 1 || k3 != want {
		t.Errorf("κ: poisson %v (want %v), shuffle rigorous %v (want 1), approx %v", k1, want, k2, k3)
	}
	if _, err := KappaOf(ComposedEvent{}, 1e-8, ShuffleRigorous); err == nil {
		t.Error("κ of a composed event: want an error")
	}
}

func mustF(v float64, err error) float64 {
	if err != nil {
		panic(err)
	}
	return v
}
