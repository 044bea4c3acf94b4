package accounting

import (
	"math"
	"strings"
	"testing"
)

// Both accountants answer through one interface; δ(ε) inverts ε(δ): RDP exactly
// (each order's conversion is inverted in closed form, so δ(ε(δ)) = δ up to
// rounding), the PLD up to its discretisation (δ(ε(δ)) ≤ δ, since ε is the
// pessimistic bound's).
func TestAccountantDeltaInvertsEpsilon(t *testing.T) {
	step := func(q, nm float64) Event { return PoissonSampledEvent{Q: q, Event: GaussianEvent{NoiseMultiplier: nm}} }
	for _, tc := range []struct {
		name  string
		adj   Adjacency
		e     Event
		delta float64
	}{
		{"poisson", AddRemove, SelfComposedEvent{step(0.01, 1), 1000}, 1e-5},
		{"full batch", AddRemove, SelfComposedEvent{step(1, 4), 50}, 1e-6},
		{"uniform replace-one", ReplaceOne, SelfComposedEvent{SampledWithoutReplacementEvent{0.02, GaussianEvent{2}}, 300}, 1e-5},
		{"gaussian", ReplaceOne, SelfComposedEvent{GaussianEvent{3}, 4}, 1e-3},
	} {
		for _, name := range []string{AccountantRDP, AccountantPLD} {
			a, err := NewAccountant(name, tc.adj, ShuffleRigorous)
			if err != nil {
				t.Fatal(err)
			}
			if err := a.Supports(tc.e); err != nil {
				t.Fatalf("%s/%s: %v", tc.name, name, err)
			}
			if err := a.Compose(tc.e); err != nil {
				t.Fatal(err)
			}
			e, err := a.Epsilon(tc.delta)
			if err != nil {
				t.Fatal(err)
			}
			d, err := a.Delta(e.Epsilon)
			if err != nil {
				t.Fatal(err)
			}
			if e.Accountant != name || d.Accountant != name || e.Adjacency != tc.adj || e.Delta != tc.delta || d.Epsilon != e.Epsilon {
				t.Errorf("%s/%s: labels %+v / %+v", tc.name, name, e, d)
			}
			switch name {
			case AccountantRDP:
				if math.Abs(d.Delta-tc.delta) > 1e-9*tc.delta || d.Order != e.Order || e.Lower != nil || e.Conversion != "improved" {
					t.Errorf("%s/rdp: δ(ε(%v)) = %v at order %v (ε's order %v)", tc.name, tc.delta, d.Delta, d.Order, e.Order)
				}
			case AccountantPLD:
				if d.Delta > tc.delta*(1+1e-9) || d.Delta < 0.5*tc.delta || e.Lower == nil || *e.Lower > e.Epsilon || e.Interval != DefaultPLDInterval {
					t.Errorf("%s/pld: δ(ε(%v)) = %v, ε %+v", tc.name, tc.delta, d.Delta, e)
				}
			}
		}
	}
}

// The classic conversion's δ(ε) is min over orders of exp((α−1)(RDP_α − ε)).
func TestRDPDeltaClassicClosedForm(t *testing.T) {
	a := NewRDPAccountant(AddRemove, ShuffleRigorous, []float64{2, 8, 32})
	a.Conversion = ConversionClassic
	if err := a.Compose(SelfComposedEvent{GaussianEvent{5}, 10}); err != nil {
		t.Fatal(err)
	}
	want := math.Inf(1)
	for _, al := range []float64{2, 8, 32} {
		want = math.Min(want, math.Exp((al-1)*(10*al/50-2)))
	}
	d, err := a.Delta(2)
	if err != nil || math.Abs(d.Delta-want) > 1e-14*want {
		t.Errorf("δ(2) = %+v, %v; want %v", d, err, want)
	}
	if _, err := a.Delta(-1); err == nil {
		t.Error("ε < 0: want an error")
	}
}

// Supports says, before composing, what Epsilon would refuse: RDP has no ε for
// Poisson sampling under replace-one, fixed-size sampling is not defined under
// add-remove, invalid events are refused by both.
func TestAccountantSupports(t *testing.T) {
	poisson := SelfComposedEvent{PoissonSampledEvent{0.01, GaussianEvent{1}}, 10}
	uniform := SampledWithoutReplacementEvent{0.01, GaussianEvent{1}}
	shuffled := ShuffledEpochEvent{Q: 0.1, Steps: 10, Event: GaussianEvent{1}}
	for _, tc := range []struct {
		acct    string
		adj     Adjacency
		sh      ShuffleAccounting
		e       Event
		wantErr string // "" = supported
	}{
		{AccountantRDP, AddRemove, ShuffleRigorous, poisson, ""},
		{AccountantRDP, ReplaceOne, ShuffleRigorous, poisson, "PLD"},
		{AccountantRDP, ReplaceOne, ShuffleRigorous, uniform, ""},
		{AccountantRDP, AddRemove, ShuffleRigorous, ComposedEvent{[]Event{poisson, uniform}}, "add/remove"},
		{AccountantRDP, ReplaceOne, ShuffleRigorous, shuffled, ""},
		{AccountantRDP, ReplaceOne, ShufflePoissonApprox, shuffled, "PLD"},
		{AccountantPLD, ReplaceOne, ShuffleRigorous, poisson, ""},
		{AccountantPLD, AddRemove, ShuffleRigorous, uniform, "add/remove"},
		{AccountantPLD, AddRemove, ShufflePoissonApprox, shuffled, ""},
		{AccountantPLD, AddRemove, ShuffleRigorous, GaussianEvent{-1}, "noise multiplier"},
		{AccountantRDP, AddRemove, ShuffleRigorous, nil, "nil"},
	} {
		a, err := NewAccountant(tc.acct, tc.adj, tc.sh)
		if err != nil {
			t.Fatal(err)
		}
		err = a.Supports(tc.e)
		if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%s %v %v %T: Supports = %v, want %q", tc.acct, tc.adj, tc.sh, tc.e, err, tc.wantErr)
			continue
		}
		// What Supports says is what composing and asking for ε find.
		_, eerr := a.Epsilon(1e-5)
		if cerr := a.Compose(tc.e); cerr == nil {
			_, eerr = a.Epsilon(1e-5)
		} else {
			eerr = cerr
		}
		if (err == nil) != (eerr == nil) {
			t.Errorf("%s %v %T: Supports %v but compose/ε %v", tc.acct, tc.adj, tc.e, err, eerr)
		}
	}
	if _, err := NewAccountant("auto", AddRemove, ShuffleRigorous); err == nil {
		t.Error("NewAccountant(auto): want an error (auto is a choice between accountants, not one)")
	}
}

// EpsilonBound names the sampling of what was composed.
func TestEpsilonBoundSampling(t *testing.T) {
	g := GaussianEvent{2}
	for _, tc := range []struct {
		adj           Adjacency
		e             Event
		sampling, shf string
	}{
		{AddRemove, PoissonSampledEvent{0.1, g}, "poisson", ""},
		{ReplaceOne, SampledWithoutReplacementEvent{0.1, g}, "uniform", ""},
		{ReplaceOne, ShuffledEpochEvent{0.1, 10, g}, "shuffle", "no-amplification"},
		{AddRemove, g, "none", ""},
		{ReplaceOne, ComposedEvent{[]Event{SampledWithoutReplacementEvent{0.1, g}, ShuffledEpochEvent{0.1, 10, g}}}, "mixed", "no-amplification"},
	} {
		for _, name := range []string{AccountantRDP, AccountantPLD} {
			a, _ := NewAccountant(name, tc.adj, ShuffleRigorous)
			if err := a.Compose(tc.e); err != nil {
				t.Fatal(err)
			}
			e, err := a.Epsilon(1e-5)
			if err != nil || e.Sampling != tc.sampling || e.Shuffle != tc.shf {
				t.Errorf("%s %T: %+v, %v; want sampling %q shuffle %q", name, tc.e, e, err, tc.sampling, tc.shf)
			}
		}
	}
}

// Ledgers compare event by event (kind, q, σ/c, steps, counts), not by their JSON.
func TestLedgerEqual(t *testing.T) {
	p := PoissonSampledEvent{0.01, GaussianEvent{1}}
	mk := func(es ...Event) Ledger {
		var l Ledger
		for _, e := range es {
			if err := l.Add(e, 1); err != nil {
				t.Fatal(err)
			}
		}
		return l
	}
	base := mk(p, p, ShuffledEpochEvent{0.1, 10, GaussianEvent{1}})
	for _, tc := range []struct {
		name string
		l    Ledger
		want bool
	}{
		{"same", mk(p, p, ShuffledEpochEvent{0.1, 10, GaussianEvent{1}}), true},
		{"count", mk(p, ShuffledEpochEvent{0.1, 10, GaussianEvent{1}}), false},
		{"kind", mk(p, p, SampledWithoutReplacementEvent{0.1, GaussianEvent{1}}), false},
		{"steps", mk(p, p, ShuffledEpochEvent{0.1, 9, GaussianEvent{1}}), false},
		{"sigma", mk(p, p, ShuffledEpochEvent{0.1, 10, GaussianEvent{math.Nextafter(1, 2)}}), false},
		{"order", mk(ShuffledEpochEvent{0.1, 10, GaussianEvent{1}}, p, p), false},
		{"empty", Ledger{}, false},
		{"nested", Ledger{Events: []Event{ComposedEvent{[]Event{p}}}}, false},
	} {
		if got := base.Equal(tc.l); got != tc.want || tc.l.Equal(base) != tc.want {
			t.Errorf("%s: Equal = %v, want %v", tc.name, got, tc.want)
		}
	}
	n := Ledger{Events: []Event{ComposedEvent{[]Event{p, SelfComposedEvent{p, 2}}}}}
	if !n.Equal(Ledger{Events: []Event{ComposedEvent{[]Event{p, SelfComposedEvent{p, 2}}}}}) || n.Equal(Ledger{Events: []Event{ComposedEvent{[]Event{p, SelfComposedEvent{p, 3}}}}}) {
		t.Error("nested composed events")
	}
}
