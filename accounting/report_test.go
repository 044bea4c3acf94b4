package accounting

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

func TestDPSGDLedger(t *testing.T) {
	// 1000 records, batch 300: 3 batches per epoch (100 dropped); 10 steps = 4 epochs,
	// the last holding 1 step.
	d := DPSGD{Sampling: SamplingShuffle, N: 1000, Batch: 300, Steps: 10, NoiseMultiplier: 2}
	l, err := d.Ledger()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(l)
	want := `[{"kind":"self_composed","count":3,"event":{"kind":"shuffled_epoch","noise_multiplier":2,"q":0.3,"steps":3}},{"kind":"self_composed","count":1,"event":{"kind":"shuffled_epoch","noise_multiplier":2,"q":0.3,"steps":1}}]`
	if string(b) != want {
		t.Errorf("shuffle ledger\n%s\nwant\n%s", b, want)
	}
	d.Sampling = SamplingPoisson
	l, _ = d.Ledger()
	if len(l.Events) != 1 || l.Events[0].(SelfComposedEvent).Count != 10 {
		t.Errorf("poisson ledger %+v", l.Events)
	}
	for _, bad := range []DPSGD{{N: 10, Batch: 11, Steps: 1, NoiseMultiplier: 1}, {N: 10, Batch: 1, Steps: -1, NoiseMultiplier: 1},
		{N: 10, Batch: 1, Steps: 1, NoiseMultiplier: 0}, {Sampling: 9, N: 10, Batch: 1, Steps: 1, NoiseMultiplier: 1}} {
		if _, err := bad.Ledger(); err == nil {
			t.Errorf("%+v: want an error", bad)
		}
	}
}

func TestNewReportLabelsAndChoice(t *testing.T) {
	for _, tc := range []struct {
		sampling Sampling
		adj      string
	}{{SamplingPoisson, "add-remove"}, {SamplingUniform, "replace-one"}, {SamplingShuffle, "zero-out"}} {
		d := DPSGD{Sampling: tc.sampling, N: 10000, Batch: 100, Steps: 300, NoiseMultiplier: 1.2}
		l, err := d.Ledger()
		if err != nil {
			t.Fatal(err)
		}
		r, err := NewReport(l, ReportOptions{Delta: 1e-5, FILDelta: 1e-8, ClipConstant: 1.1})
		if err != nil {
			t.Fatalf("%v: %v", tc.sampling, err)
		}
		if r.Adjacency != tc.adj || r.Sampling != tc.sampling.String() || r.Theorem1.Adjacency != "replace-one" ||
			(tc.sampling == SamplingShuffle) != strings.Contains(r.AdjacencyMeaning, "batches stay fixed") {
			t.Errorf("%v: labels %s %s %s", tc.sampling, r.Adjacency, r.Sampling, r.Theorem1.Adjacency)
		}
		if r.EpsilonPLD == nil || r.EpsilonRDP == nil {
			t.Fatalf("%v: PLD %v RDP %v", tc.sampling, r.EpsilonPLD, r.EpsilonRDP)
		}
		// auto: the tighter valid bound; PLD brackets itself.
		if r.Epsilon != math.Min(*r.EpsilonPLD, *r.EpsilonRDP) || *r.EpsilonPLDLower > *r.EpsilonPLD {
			t.Errorf("%v: ε %v, PLD [%v, %v], RDP %v", tc.sampling, r.Epsilon, *r.EpsilonPLDLower, *r.EpsilonPLD, *r.EpsilonRDP)
		}
		if (tc.sampling == SamplingShuffle) != (r.EpsilonPoissonApprox != nil) || (tc.sampling == SamplingShuffle) != (r.KappaPoissonApprox != nil) {
			t.Errorf("%v: Poisson approximation only for shuffle: %v %v", tc.sampling, r.EpsilonPoissonApprox, r.KappaPoissonApprox)
		}
		if tc.sampling == SamplingShuffle {
			// 3 epochs of one Gaussian release each: the rigorous ε exceeds the approximation.
			if !(*r.EpsilonPoissonApprox < r.Epsilon) || *r.Kappa != 1 {
				t.Errorf("shuffle: approximation %v vs rigorous %v, κ %v", *r.EpsilonPoissonApprox, r.Epsilon, *r.Kappa)
			}
		}
		o2, _ := Order2StepRDP(ReplaceOne, pick(tc.sampling), d.Q(), 1.2)
		want := 300 * o2
		if tc.sampling == SamplingShuffle {
			want = 3 * 4 / (1.2 * 1.2)
		}
		if math.Abs(r.Theorem1.RDPOrder2-want) > 1e-12*want || r.Theorem1.MSEBoundRDP != MSEBoundRDP(r.Theorem1.RDPOrder2) {
			t.Errorf("%v: Theorem 1 ε₂ %v, want %v", tc.sampling, r.Theorem1.RDPOrder2, want)
		}
		for _, acct := range []string{AccountantRDP, AccountantPLD} {
			ra, err := NewReport(l, ReportOptions{Delta: 1e-5, Accountant: acct})
			if err != nil || ra.Accountant != acct {
				t.Errorf("%v --accountant %s: %v %v", tc.sampling, acct, ra, err)
			}
		}
	}
	// replace-one Poisson: RDP has no ε; auto and pld work, rdp explains.
	d := DPSGD{Sampling: SamplingPoisson, N: 1000, Batch: 10, Steps: 50, NoiseMultiplier: 1}
	l, _ := d.Ledger()
	ro := ReplaceOne
	if r, err := NewReport(l, ReportOptions{Delta: 1e-5, Adjacency: &ro}); err != nil || r.Accountant != AccountantPLD || r.EpsilonRDP != nil {
		t.Errorf("replace-one Poisson auto: %+v %v", r, err)
	}
	if _, err := NewReport(l, ReportOptions{Delta: 1e-5, Adjacency: &ro, Accountant: AccountantRDP}); err == nil {
		t.Error("replace-one Poisson with RDP: want an error")
	}
	if _, err := NewReport(l, ReportOptions{Delta: 0}); err == nil {
		t.Error("δ = 0: want an error")
	}
	if _, err := NewReport(Ledger{}, ReportOptions{Delta: 1e-5}); err == nil {
		t.Error("empty ledger: want an error")
	}
}

// pick maps shuffle to the per-step sampling whose Order2StepRDP the test uses.
func pick(s Sampling) Sampling {
	if s == SamplingShuffle {
		return SamplingPoisson
	}
	return s
}

func TestCalibrateNoise(t *testing.T) {
	for _, tc := range []struct {
		s      Sampling
		acct   string
		target float64
	}{{SamplingPoisson, AccountantAuto, 2}, {SamplingPoisson, AccountantRDP, 8}, {SamplingUniform, AccountantPLD, 1}, {SamplingShuffle, AccountantAuto, 4}} {
		d := DPSGD{Sampling: tc.s, N: 20000, Batch: 200, Steps: 400}
		opt := ReportOptions{Delta: 1e-5, Accountant: tc.acct}
		nm, err := CalibrateNoise(d.LedgerAt, opt, tc.target)
		if err != nil {
			t.Fatal(err)
		}
		d.NoiseMultiplier = nm
		l, _ := d.Ledger()
		r, err := NewReport(l, opt)
		if err != nil {
			t.Fatal(err)
		}
		if r.Epsilon > tc.target || r.Epsilon < 0.99*tc.target {
			t.Errorf("%v/%s: σ %v gives ε %v for target %v", tc.s, tc.acct, nm, r.Epsilon, tc.target)
		}
	}
	if _, err := CalibrateNoise(DPSGD{N: 10, Batch: 1, Steps: 1}.LedgerAt, ReportOptions{Delta: 1e-5}, -1); err == nil {
		t.Error("negative target: want an error")
	}
}

// auto never fails where RDP has a bound: at tiny noise the PLD refuses the run and
// the report falls back to the (valid) RDP ε, saying why.
func TestNewReportAutoFallsBackToRDP(t *testing.T) {
	// (σ = 0.05 needed an FFT beyond the cap at the 1e-4 grid and is now recomposed on
	// a coarser one; at σ = 0.02 the privacy loss leaves the PLD's ±600 range.)
	d := DPSGD{Sampling: SamplingPoisson, N: 1000, Batch: 100, Steps: 200, NoiseMultiplier: 0.02}
	l, err := d.Ledger()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewReport(l, ReportOptions{Delta: 1e-5, Accountant: AccountantPLD}); err == nil {
		t.Fatal("the PLD now handles σ = 0.02: pick a smaller noise to test the fallback")
	}
	r, err := NewReport(l, ReportOptions{Delta: 1e-5})
	if err != nil {
		t.Fatalf("auto at σ = 0.02: %v", err)
	}
	if r.Accountant != AccountantRDP || r.EpsilonPLD != nil || r.PLDUnavailable == "" || r.Epsilon != *r.EpsilonRDP {
		t.Fatalf("auto fallback: %+v", r)
	}
}

// DPSGD.Ledger builds in O(1) the ledger the trainer emits step by step.
func TestDPSGDLedgerClosedForm(t *testing.T) {
	for _, s := range []Sampling{SamplingPoisson, SamplingUniform, SamplingShuffle} {
		for _, c := range []struct{ n, b, steps int }{{100, 10, 0}, {100, 10, 7}, {100, 10, 10}, {100, 10, 30}, {100, 10, 34}, {105, 10, 23}, {10, 10, 3}} {
			d := DPSGD{Sampling: s, N: c.n, Batch: c.b, Steps: c.steps, NoiseMultiplier: 1.3}
			var want Ledger
			for step := 0; step < d.Steps; step++ {
				if e, ok := d.StepEvent(step); ok {
					if err := want.Add(e, 1); err != nil {
						t.Fatal(err)
					}
				}
			}
			got, err := d.Ledger()
			if err != nil {
				t.Fatal(err)
			}
			a, _ := json.Marshal(got)
			b, _ := json.Marshal(want)
			if string(a) != string(b) {
				t.Errorf("%v %+v: ledger %s, step by step %s", s, c, a, b)
			}
		}
	}
	// 10¹² steps: the step-by-step loop would take days.
	done := make(chan error, 1)
	go func() {
		_, err := DPSGD{Sampling: SamplingShuffle, N: 60000, Batch: 600, Steps: 1e12, NoiseMultiplier: 1}.Ledger()
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Ledger of 10¹² steps did not return within 20 s")
	}
}

// Issue 27 (account dpsgd --steps 1e7 took 43 s): a report's PLD whose composition
// would need an FFT of more than 2^21 points is recomposed on a coarser grid; ε stays
// a rigorous upper bound, here within 1e-5 (relative) of the default grid's.
func TestReportCoarsensPLDForLongRuns(t *testing.T) {
	const nm = 1 / 1.1152
	for _, tc := range []struct {
		steps  int
		coarse bool
	}{{10000, false}, {1000000, true}} {
		d := DPSGD{Sampling: SamplingPoisson, N: 60000, Batch: 600, Steps: tc.steps, NoiseMultiplier: nm}
		l, _ := d.Ledger()
		r, err := NewReport(l, ReportOptions{Delta: 1e-5})
		if err != nil {
			t.Fatal(err)
		}
		fine, err := pldEpsilon(AddRemove, SamplingPoisson, sampledGaussianRun{Q: 0.01, Sigma: nm, Steps: tc.steps, Delta: 1e-5}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if (r.PLDInterval > DefaultPLDInterval) != tc.coarse || r.PLDInterval < DefaultPLDInterval {
			t.Errorf("T = %d: PLD interval %v", tc.steps, r.PLDInterval)
		}
		if tc.coarse {
			if *r.EpsilonPLD < fine.Lower || *r.EpsilonPLD > fine.Upper*(1+1e-5) || *r.EpsilonPLDLower > fine.Upper {
				t.Errorf("T = %d: coarse PLD [%v, %v], default grid [%v, %v]", tc.steps, *r.EpsilonPLDLower, *r.EpsilonPLD, fine.Lower, fine.Upper)
			}
		} else if *r.EpsilonPLD != fine.Upper || *r.EpsilonPLDLower != fine.Lower {
			t.Errorf("T = %d: PLD [%v, %v], want the default grid's [%v, %v]", tc.steps, *r.EpsilonPLDLower, *r.EpsilonPLD, fine.Lower, fine.Upper)
		}
	}
}
