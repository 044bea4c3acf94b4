package accounting_test

import (
	"io"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dpfil/dpfil/accounting"
)

func ptr(x float64) *float64 { return &x }

func near(a, b, rel float64) bool { return math.Abs(a-b) <= rel*math.Abs(b) }

// TestAccountRDP checks the report against the RDP composition done by hand and
// the order-2 values against Order2StepRDP's closed forms.
func TestAccountRDP(t *testing.T) {
	const q, sigma, steps, delta = 0.01, 1.2, 500, 1e-5
	tests := []struct {
		name string
		req  accounting.RDPRequest
		nm   float64 // noise multiplier the accountant takes
		adj  accounting.Adjacency
		samp accounting.Sampling
	}{
		{"poisson add-remove", accounting.RDPRequest{Q: q, Sigma: sigma, Steps: steps, Delta: delta}, sigma, accounting.AddRemove, accounting.SamplingPoisson},
		{"uniform replace-one smooth", accounting.RDPRequest{Q: q, Sigma: sigma, Steps: steps, Delta: delta, Adjacency: accounting.ReplaceOne,
			Sampling: accounting.SamplingUniform, ClipMode: "smooth", ClipConstant: 1.115}, sigma / 1.115, accounting.ReplaceOne, accounting.SamplingUniform},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := accounting.AccountRDP(tc.req)
			if err != nil {
				t.Fatal(err)
			}
			// Uniform sampling under replace-one is the sampled Gaussian at σ/2.
			hand := tc.nm
			if tc.samp == accounting.SamplingUniform {
				hand /= 2
			}
			eps, order, err := rdpEpsilon(q, hand, int(steps), delta)
			if err != nil {
				t.Fatal(err)
			}
			if !near(res.Epsilon, eps, 1e-12) || res.Order != order || *res.NoiseMultiplier != tc.nm || *res.Sigma != sigma {
				t.Errorf("ε %v at order %v (σ/c %v), want %v at %v (%v)", res.Epsilon, res.Order, *res.NoiseMultiplier, eps, order, tc.nm)
			}
			o2, _ := accounting.Order2StepRDP(tc.adj, tc.samp, q, tc.nm)
			r1, _ := accounting.Order2StepRDP(accounting.ReplaceOne, tc.samp, q, tc.nm)
			p2, _ := accounting.Order2StepRDP(accounting.AddRemove, accounting.SamplingPoisson, q, tc.nm)
			th := res.Theorem1
			if !near(res.RDPOrder2, steps*o2, 1e-12) || !near(th.RDPOrder2, steps*r1, 1e-12) || !near(th.PaperRDPOrder2, steps*p2, 1e-12) {
				t.Errorf("order-2 RDP %v, Theorem 1 %v, paper %v; want %v, %v, %v", res.RDPOrder2, th.RDPOrder2, th.PaperRDPOrder2, steps*o2, steps*r1, steps*p2)
			}
			if want := 1 / (4 * math.Expm1(th.RDPOrder2)); th.MSEBoundRDP != want || res.RDPOrder2Adjacency != tc.adj.String() {
				t.Errorf("MSE bound %v, want %v; order-2 adjacency %q", th.MSEBoundRDP, want, res.RDPOrder2Adjacency)
			}
			if res.Adjacency != tc.adj.String() || res.Sampling != tc.samp.String() || res.Accountant != "rdp" || res.Conversion != "improved" {
				t.Errorf("labels %+v", res)
			}
		})
	}
}

func TestAccountRDPScheduleAndTarget(t *testing.T) {
	sched, err := accounting.ParseSchedule("0.01:2:500, 0.01:1.5:500,0.02:1:1000")
	if err != nil {
		t.Fatal(err)
	}
	res, err := accounting.AccountRDP(accounting.RDPRequest{Schedule: sched, Delta: 1e-5})
	if err != nil {
		t.Fatal(err)
	}
	r := accounting.NewRDP(nil)
	if err := r.ComposeSchedule(sched); err != nil {
		t.Fatal(err)
	}
	eps, _, _ := r.Epsilon(1e-5, accounting.ConversionImproved)
	if !near(res.Epsilon, eps, 1e-12) || res.Steps != 2000 || res.Q != nil || res.Sigma != nil {
		t.Errorf("schedule: ε %v (want %v), %d steps, q %v", res.Epsilon, eps, res.Steps, res.Q)
	}
	res, err = accounting.AccountRDP(accounting.RDPRequest{Q: 0.01, Steps: 1000, Delta: 1e-5, TargetEpsilon: ptr(2)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Epsilon > 2 || res.Epsilon < 2-1e-4 || *res.TargetEpsilon != 2 {
		t.Errorf("target ε 2: σ = %v gives ε = %v", *res.Sigma, res.Epsilon)
	}
}

func TestParseOrdersAndSchedule(t *testing.T) {
	o, err := accounting.ParseOrders(" 8, 2,4 ")
	if err != nil || !slices.Equal(o, []float64{2, 4, 8}) {
		t.Errorf("orders %v, %v", o, err)
	}
	if o, _ := accounting.ParseOrders(""); !slices.Equal(o, accounting.DefaultOrders()) {
		t.Errorf("empty orders %v", o)
	}
	for _, bad := range []string{"2,x", "1", "0.5,2", "NaN", "Inf"} {
		if _, err := accounting.ParseOrders(bad); err == nil {
			t.Errorf("orders %q: no error", bad)
		}
	}
	for _, bad := range []string{"", "0.1:1", "0.1:x:10", "NaN:1:10", "0.1:Inf:3", "0.1:1:2.5"} {
		if _, err := accounting.ParseSchedule(bad); err == nil {
			t.Errorf("schedule %q: no error", bad)
		}
	}
}

// Bad input is refused with a message naming the first bad field in the order of
// the request's fields, every time.
func TestRequestErrors(t *testing.T) {
	tests := []struct {
		name string
		run  func() error
		want string
	}{
		{"rdp all NaN", func() error {
			_, err := accounting.AccountRDP(accounting.RDPRequest{Q: math.NaN(), Sigma: math.Inf(1), Delta: math.NaN(), Steps: 10})
			return err
		}, "q = NaN must be finite"},
		{"rdp shuffle", func() error {
			_, err := accounting.AccountRDP(accounting.RDPRequest{Q: 0.1, Sigma: 1, Delta: 1e-5, Sampling: accounting.SamplingShuffle})
			return err
		}, "shuffled"},
		{"rdp target replace-one poisson", func() error {
			_, err := accounting.AccountRDP(accounting.RDPRequest{Q: 0.1, Steps: 10, Delta: 1e-5, TargetEpsilon: ptr(1), Adjacency: accounting.ReplaceOne})
			return err
		}, "PLD"},
		{"rdp schedule negative steps", func() error {
			_, err := accounting.AccountRDP(accounting.RDPRequest{Schedule: []accounting.Step{{Q: 0.1, Sigma: 1, Steps: -1}}, Delta: 1e-5})
			return err
		}, "segment 0"},
		{"pld sigma Inf interval NaN", func() error {
			_, err := accounting.AccountPLD(accounting.PLDRequest{Q: 0.1, Sigma: math.Inf(1), Delta: 1e-5, Interval: math.NaN()})
			return err
		}, "sigma = +Inf must be finite"},
		{"pld interval 0", func() error {
			_, err := accounting.AccountPLD(accounting.PLDRequest{Q: 0.1, Sigma: 1, Delta: 1e-5})
			return err
		}, "interval"},
		{"pld uniform add-remove", func() error {
			_, err := accounting.AccountPLD(accounting.PLDRequest{Q: 0.1, Sigma: 1, Delta: 1e-5, Interval: 1e-3, Sampling: accounting.SamplingUniform})
			return err
		}, "replace-one"},
		{"rdp steps before delta", func() error {
			_, err := accounting.AccountRDP(accounting.RDPRequest{Q: 0.1, Sigma: 1, Steps: -1, Delta: math.NaN()})
			return err
		}, "steps = -1"},
		{"dpsgd batch before sigma", func() error {
			_, err := accounting.AccountDPSGD(accounting.DPSGDRequest{N: 10, Batch: 11, Steps: 1, Sigma: math.NaN()})
			return err
		}, "batch 11"},
		{"dpsgd NaN", func() error {
			_, err := accounting.AccountDPSGD(accounting.DPSGDRequest{N: 10, Batch: 1, Steps: 1, Sigma: math.NaN(), Delta: math.NaN()})
			return err
		}, "sigma = NaN"},
		{"rero NaN", func() error {
			_, err := accounting.ReRoBounds(accounting.ReRoRequest{ReRoConfig: accounting.ReRoConfig{Q: 0.1, Sigma: 1, Steps: 1, Kappa: math.NaN(), Confidence: math.NaN()}})
			return err
		}, "kappa = NaN"},
		{"kappa no delta_f", func() error {
			_, err := accounting.AccountKappa(accounting.KappaRequest{KappaParams: accounting.KappaParams{Q: 0.1, Sigma: 1, ClipConstant: 1}})
			return err
		}, "delta_f"},
		{"mse nothing", func() error { _, err := accounting.MSEBounds(accounting.MSERequest{}); return err }, "eps2"},
		{"mse dfil NaN", func() error {
			_, err := accounting.MSEBounds(accounting.MSERequest{DFIL: ptr(math.NaN())})
			return err
		}, "dfil = NaN"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			first := tc.run()
			if first == nil || !strings.Contains(first.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", first, tc.want)
			}
			for i := 0; i < 20; i++ {
				if err := tc.run(); err == nil || err.Error() != first.Error() {
					t.Fatalf("run %d: %v, run 0: %v", i, err, first)
				}
			}
		})
	}
}

func TestAccountPLDAndDPSGD(t *testing.T) {
	res, err := accounting.AccountPLD(accounting.PLDRequest{Q: 0.01, Sigma: 1, Steps: 1000, Delta: 1e-5, Interval: accounting.DefaultPLDInterval})
	if err != nil {
		t.Fatal(err)
	}
	e, err := poissonPLDEpsilon(0.01, 1, 1000, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	rdp, order, _ := rdpEpsilon(0.01, 1, 1000, 1e-5)
	if res.Epsilon != e.Upper || res.EpsilonLower != e.Lower || res.DiscretisationError != e.Upper-e.Lower ||
		*res.EpsilonRDP != rdp || *res.RDPOrder != order || !(res.Epsilon < rdp) {
		t.Errorf("PLD report %+v; want [%v, %v], RDP %v at %v", res, e.Lower, e.Upper, rdp, order)
	}
	// Replace-one Poisson: RDP has no ε, the note says why.
	res, err = accounting.AccountPLD(accounting.PLDRequest{Q: 0.01, Sigma: 1, Steps: 100, Delta: 1e-5, Interval: 1e-3, Adjacency: accounting.ReplaceOne})
	if err != nil || res.EpsilonRDP != nil || res.RDPNote == "" {
		t.Errorf("replace-one: %v, %+v", err, res)
	}

	d, err := accounting.AccountDPSGD(accounting.DPSGDRequest{N: 6000, Batch: 60, Steps: 200, Sigma: 1.115, Delta: 1e-5, ClipConstant: 1.115})
	if err != nil {
		t.Fatal(err)
	}
	l, _ := accounting.DPSGD{N: 6000, Batch: 60, Steps: 200, NoiseMultiplier: 1}.Ledger()
	rep, err := accounting.NewReport(l, accounting.ReportOptions{Delta: 1e-5, FILDelta: 1.0 / (200 * 6000), ClipConstant: 1.115})
	if err != nil {
		t.Fatal(err)
	}
	if d.NoiseMultiplier != 1 || d.Q != 0.01 || d.FILDelta != 1.0/(200*6000) || d.Privacy.Epsilon != rep.Epsilon || *d.Privacy.Kappa != *rep.Kappa {
		t.Errorf("dpsgd %+v: ε %v κ %v, want %v %v", d, d.Privacy.Epsilon, *d.Privacy.Kappa, rep.Epsilon, *rep.Kappa)
	}
	d, err = accounting.AccountDPSGD(accounting.DPSGDRequest{N: 6000, Batch: 60, Steps: 200, TargetEpsilon: ptr(3), Delta: 1e-5})
	if err != nil || d.Privacy.Epsilon > 3 || d.Privacy.Epsilon < 2.99 || d.Sigma != d.NoiseMultiplier {
		t.Errorf("target ε 3: %v, σ %v, ε %v", err, d.Sigma, d.Privacy.Epsilon)
	}
}

func TestBoundRequests(t *testing.T) {
	k, err := accounting.AccountKappa(accounting.KappaRequest{KappaParams: accounting.KappaParams{Q: 0.01, Sigma: 1.1, ClipConstant: 1.115}, Steps: 1000, N: 60000})
	if err != nil {
		t.Fatal(err)
	}
	df := 1.0 / (1000 * 60000)
	paper := 1.115 * 2 * math.Sqrt(2*math.Log(1.25/df)) / 1.1
	if k.DeltaF != df || !near(k.PaperEpsilon0, paper, 1e-15) || !near(k.PaperKappa, 0.01/(0.01+0.99*math.Exp(-paper)), 1e-12) ||
		!near(k.Kappa, 0.01/(0.01+0.99*math.Exp(-k.Epsilon0)), 1e-12) {
		t.Errorf("kappa %+v", k)
	}
	m, err := accounting.MSEBounds(accounting.MSERequest{Eps2: ptr(0.5), Diameter: 2, DFIL: ptr(4), PriorFisherTrace: ptr(30), D: 10})
	if err != nil {
		t.Fatal(err)
	}
	if !near(*m.MSEBoundRDP, 4/(4*math.Expm1(0.5)), 1e-12) || *m.MSEBoundFIL != 0.25 || !near(*m.MSEBoundVanTrees, 1/(4+3.0), 1e-15) {
		t.Errorf("MSE bounds %v %v %v", *m.MSEBoundRDP, *m.MSEBoundFIL, *m.MSEBoundVanTrees)
	}
	if m, _ := accounting.MSEBounds(accounting.MSERequest{Eps2: ptr(0), Diameter: 1}); m.MSEBoundRDP != nil || m.MSEBoundFIL != nil {
		t.Errorf("ε₂ = 0: bound %v, want null (+∞)", m.MSEBoundRDP)
	}
}

func TestReRoBounds(t *testing.T) {
	r, err := accounting.ReRoBounds(accounting.ReRoRequest{ReRoConfig: accounting.ReRoConfig{Q: 1, Sigma: 2, Steps: 10, Kappa: 0.01, Samples: 20000, Seed: 3}})
	if err != nil {
		t.Fatal(err)
	}
	exact, _ := accounting.ReRoClosedForm(2, 10, 0.01)
	tr, _ := accounting.ReRoTradeoff(accounting.ReRoRun{Q: 1, Sigma: 2, Steps: 10, Kappa: 0.01}, nil)
	if r.GammaExact == nil || *r.GammaExact != exact || r.Gamma != exact || *r.GammaTradeoff != tr.Gamma || *r.GammaTradeoffLower != tr.GammaLower ||
		!(tr.GammaLower <= exact && exact <= tr.Gamma+1e-9) || r.Seed != 3 || r.Q != 1 || r.MonteCarlo == nil || r.Warning != "" {
		t.Errorf("ReRo %+v; closed form %v, trade-off [%v, %v]", r, exact, tr.GammaLower, tr.Gamma)
	}
}

// Issue 27: the headline γ is the rigorous bound, computed (and handed to Bound)
// before the Monte Carlo, whose cost is capped.
func TestReRoBoundsRigorousFirst(t *testing.T) {
	var order []string
	cfg := accounting.ReRoConfig{Q: 0.01, Sigma: 1, Steps: 1000, Kappa: 0.01, Samples: 20000, Seed: 1,
		Progress: func(done, total int64) {
			if len(order) == 0 || order[len(order)-1] != "mc" {
				order = append(order, "mc")
			}
		}}
	var atBound accounting.ReRoReport
	r, err := accounting.ReRoBounds(accounting.ReRoRequest{ReRoConfig: cfg, Bound: func(b *accounting.ReRoReport) {
		order = append(order, "bound")
		atBound = *b
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(order) != 2 || order[0] != "bound" || order[1] != "mc" {
		t.Errorf("order of events %v, want the bound before the Monte Carlo", order)
	}
	if atBound.Gamma != r.Gamma || atBound.MonteCarlo != nil || r.MonteCarlo == nil || r.Gamma != *r.GammaTradeoff ||
		r.Gamma > r.GammaRDP || !strings.Contains(r.GammaMethod, "trade-off") {
		t.Errorf("bound %+v, report %+v", atBound, r)
	}
	// Skipped on request, and over the cap, saying so; the bound is still there.
	skip, err := accounting.ReRoBounds(accounting.ReRoRequest{ReRoConfig: cfg, SkipMonteCarlo: true})
	if err != nil || skip.MonteCarlo != nil || skip.MonteCarloSkipped == "" || skip.Gamma != r.Gamma {
		t.Errorf("skipped: %+v, %v", skip, err)
	}
	capped, err := accounting.ReRoBounds(accounting.ReRoRequest{ReRoConfig: cfg, MaxDraws: 1000 * 40000 / 2})
	if err != nil || capped.MonteCarlo != nil || !strings.Contains(capped.MonteCarloSkipped, "cap") || capped.Gamma != r.Gamma {
		t.Errorf("capped: %+v, %v", capped, err)
	}
	// The default cap stops T = 10⁵ with the default 10⁶ + 10⁶ draws (2·10¹¹ normal
	// draws, about an hour of one core) at once.
	start := time.Now()
	big, err := accounting.ReRoBounds(accounting.ReRoRequest{ReRoConfig: accounting.ReRoConfig{Q: 0.01, Sigma: 1, Steps: 100000, Kappa: 0.01}})
	if err != nil || big.MonteCarlo != nil || big.MonteCarloSkipped == "" || !(big.Gamma > 0.5 && big.Gamma <= 1) {
		t.Errorf("T = 1e5: %+v, %v", big, err)
	}
	if d := time.Since(start); d > 2*time.Minute {
		t.Errorf("T = 1e5 took %v", d)
	}
}

// The human summaries say what each number is and name +∞ bounds and absent
// reports plainly.
func TestWriteText(t *testing.T) {
	var nilReport *accounting.Report
	sched := []accounting.Step{{Q: 0.01, Sigma: 2, Steps: 10}, {Q: 0.02, Sigma: 1, Steps: 5}}
	rdp, err := accounting.AccountRDP(accounting.RDPRequest{Schedule: sched, Delta: 1e-5})
	if err != nil {
		t.Fatal(err)
	}
	mse, err := accounting.MSEBounds(accounting.MSERequest{Eps2: ptr(0), Diameter: 1, DFIL: ptr(0)})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		w    interface{ WriteText(w io.Writer) }
		want []string
	}{
		{nilReport, []string{"privacy            none (σ = 0)"}},
		{rdp, []string{"schedule of 2 segments, 15 steps", "RDP, add-remove adjacency", "Theorem 1 (unbiased attacker", "proven bound", "antipodal pair, exact (not proven worst case)", "not a valid Theorem 1 input"}},
		{mse, []string{"Theorem 1 (RDP, eps2 = 0, diameter 1): MSE ≥ +Inf (no leakage)", "Theorem 2 (dFIL = 0, unbiased attacker): MSE ≥ +Inf (no leakage)"}},
	}
	for i, tc := range tests {
		var b strings.Builder
		tc.w.WriteText(&b)
		for _, s := range tc.want {
			if !strings.Contains(b.String(), s) {
				t.Errorf("%d: summary lacks %q:\n%s", i, s, b.String())
			}
		}
	}
}

// rdpEpsilon is (ε, order) of steps Poisson-sampled Gaussian steps under add-remove
// by the per-order RDP accumulator, the improved conversion: the reference the
// event accountants are checked against.
func rdpEpsilon(q, sigma float64, steps int, delta float64) (float64, float64, error) {
	r := accounting.NewRDP(nil)
	if err := r.Compose(q, sigma, steps); err != nil {
		return 0, 0, err
	}
	return r.Epsilon(delta, accounting.ConversionImproved)
}

// poissonPLDEpsilon is the same run's ε bracket by the bare PLD (default grid).
func poissonPLDEpsilon(q, sigma float64, steps int, delta float64) (accounting.EpsilonBounds, error) {
	p := accounting.NewPLD(accounting.AddRemove, nil)
	if err := p.ComposePoissonGaussian(q, sigma, steps); err != nil {
		return accounting.EpsilonBounds{}, err
	}
	return p.Epsilon(delta)
}
