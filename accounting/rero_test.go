package accounting

import (
	"fmt"
	"math"
	"sort"
	"testing"
)

func TestExpTable(t *testing.T) {
	et := newExpTable()
	r := newXoshiro(7, 0)
	worst := 0.0
	for i := 0; i < 200000; i++ {
		x := (r.uniform()*2 - 1) * 700
		if i < 1000 {
			x = (r.uniform()*2 - 1) * 1e-3 // near 0
		}
		got, want := et.exp(x), math.Exp(x)
		rel := math.Abs(got-want) / want
		worst = math.Max(worst, rel)
	}
	if worst > 1e-14 {
		t.Errorf("table exp: worst relative error %.3g > 1e-14", worst)
	}
}

func TestZigguratNormal(t *testing.T) {
	// Kolmogorov–Smirnov against Φ and the first four moments, n = 400 000.
	const n = 400000
	z := newZiggurat()
	r := newXoshiro(11, 3)
	x := make([]float64, n)
	var m1, m2, m4 float64
	tail := 0
	for i := range x {
		v := z.norm(r)
		x[i] = v
		m1 += v
		m2 += v * v
		m4 += v * v * v * v
		if math.Abs(v) > zigR {
			tail++
		}
	}
	sort.Float64s(x)
	d := 0.0
	for i, v := range x {
		f := stdNormalCDF(v)
		d = math.Max(d, math.Max(math.Abs(f-float64(i)/n), math.Abs(f-float64(i+1)/n)))
	}
	if d > 1.95/math.Sqrt(n) { // KS critical value at level 0.001
		t.Errorf("KS statistic %v too large", d)
	}
	m1, m2, m4 = m1/n, m2/n, m4/n
	if math.Abs(m1) > 5/math.Sqrt(n) || math.Abs(m2-1) > 5*math.Sqrt(2.0/n) || math.Abs(m4-3) > 5*math.Sqrt(96.0/n) {
		t.Errorf("moments %v %v %v", m1, m2, m4)
	}
	// The tail branch is exercised and has the right mass 2Φ(−r) ≈ 5.8e-4.
	want := 2 * stdNormalCDF(-zigR) * n
	if math.Abs(float64(tail)-want) > 5*math.Sqrt(want) {
		t.Errorf("tail count %d, want ≈ %.0f", tail, want)
	}
}

func TestReRoClosedForm(t *testing.T) {
	tests := []struct {
		sigma float64
		steps int
		kappa float64
		want  float64
	}{
		{1, 0, 0.1, 0.1}, // no steps: no blow-up
		{1, 5, 1, 1},
		{1e9, 100, 0.01, 0.01},
		{1, 1, 0.5, stdNormalCDF(1)},                 // Φ⁻¹(1/2) = 0
		{2, 4, 1 - stdNormalCDF(1), stdNormalCDF(0)}, // √4/2 − 1 = 0
	}
	for _, tc := range tests {
		g, err := ReRoClosedForm(tc.sigma, tc.steps, tc.kappa)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(g-tc.want) > 1e-9 {
			t.Errorf("%+v: γ = %v", tc, g)
		}
	}
	for _, bad := range []struct {
		s float64
		T int
		k float64
	}{{0, 1, 0.1}, {1, -1, 0.1}, {1, 1, 0}, {1, 1, 1.5}, {1, 1, math.NaN()}} {
		if _, err := ReRoClosedForm(bad.s, bad.T, bad.k); err == nil {
			t.Errorf("%+v: want an error", bad)
		}
	}
}

func TestReRoMonteCarloMatchesClosedForm(t *testing.T) {
	tests := []struct {
		q, sigma float64
		steps    int
		kappa    float64
		n        int
	}{
		{1, 2, 10, 0.01, 400000},
		{1, 1, 1, 0.001, 400000},
		{1, 0.5, 3, 0.1, 200000},
		{1, 4, 100, 0.5, 200000},
		// q just below 1 runs the general per-step kernel; γ differs from the q = 1
		// value by O(T·(1−q)) ≈ 1e-8.
		{1 - 1e-9, 2, 10, 0.01, 200000},
		{1 - 1e-9, 1, 20, 0.05, 100000},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("q=%g,sigma=%g,T=%d,kappa=%g", tc.q, tc.sigma, tc.steps, tc.kappa), func(t *testing.T) {
			res, err := ReRoMonteCarlo(ReRoConfig{Q: tc.q, Sigma: tc.sigma, Steps: tc.steps, Kappa: tc.kappa, Samples: tc.n, Seed: 5})
			if err != nil {
				t.Fatal(err)
			}
			exact, _ := ReRoClosedForm(tc.sigma, tc.steps, tc.kappa)
			if math.Abs(res.GammaMu-exact) > 3*res.DKWEps+res.DKWEpsMu {
				t.Errorf("μ-side estimate %v far from the exact γ %v", res.GammaMu, exact)
			}
			if exact < res.GammaLow || exact > res.GammaHigh {
				t.Errorf("exact γ %v outside the CI [%v, %v] (estimate %v)", exact, res.GammaLow, res.GammaHigh, res.GammaNu)
			}
			if !(res.GammaLow <= res.GammaMu && res.GammaMu <= res.GammaHigh && res.GammaHigh <= 1) {
				t.Errorf("inconsistent result %+v", res)
			}
			// The ν-sample estimator (SPEC 10) is accurate while r is not too heavy
			// tailed under ν; otherwise it must say so.
			inCI := res.GammaLow <= res.GammaNu && res.GammaNu <= res.GammaHigh
			if inCI == (res.Warning != "") {
				t.Errorf("estimate %v, CI [%v, %v], warning %q", res.GammaNu, res.GammaLow, res.GammaHigh, res.Warning)
			}
			if exact < 0.5 && !inCI {
				t.Errorf("moderate regime: estimate %v outside the CI", res.GammaNu)
			}
			// The CI is not vacuous: it is narrower than 0.1.
			if res.GammaHigh-res.GammaLow > 0.1 {
				t.Errorf("CI [%v, %v] too wide", res.GammaLow, res.GammaHigh)
			}
			if tc.q == 1 && (res.GammaExact == nil || *res.GammaExact != exact) {
				t.Errorf("GammaExact %v", res.GammaExact)
			}
			// RDP-based ReRo is an upper bound, looser than the exact blow-up.
			if res.GammaRDP < exact {
				t.Errorf("RDP ReRo %v below the exact γ %v", res.GammaRDP, exact)
			}
		})
	}
}

// refTopSum recomputes the estimate by brute force: the same normal draws (same
// per-chunk streams), log-ratios by the direct formula with math.Exp, a full sort.
func refTopSum(q, sigma float64, steps, n int, seed uint64, k int) float64 {
	z := newZiggurat()
	ls := make([]float64, 0, n)
	for c := 0; len(ls) < n; c++ {
		r := newXoshiro(seed, uint64(c))
		for i := 0; i < reroChunk && len(ls) < n; i++ {
			l := 0.0
			for t := 0; t < steps; t++ {
				w := sigma * z.norm(r)
				l += math.Log(1 - q + q*math.Exp((2*w-1)/(2*sigma*sigma)))
			}
			ls = append(ls, l)
		}
	}
	sort.Sort(sort.Reverse(sort.Float64Slice(ls)))
	s := 0.0
	for _, l := range ls[:k] {
		s += math.Exp(l)
	}
	return s / float64(n)
}

func TestReRoMonteCarloExactSelection(t *testing.T) {
	// N beyond the pilot exercises the window; a tiny pilot margin forces the
	// wider-window retries; both must give the brute-force top-⌈κN⌉ sum.
	cfg := ReRoConfig{Q: 0.2, Sigma: 1, Steps: 5, Kappa: 0.02, Samples: 150000, Seed: 9}
	want := refTopSum(cfg.Q, cfg.Sigma, cfg.Steps, cfg.Samples, cfg.Seed, 3000)
	for _, scale := range []float64{1, 1e-6} {
		for _, workers := range []int{1, 3} {
			cfg.Workers = workers
			res, err := reroMonteCarlo(cfg, scale)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(res.GammaNu-want) > 1e-11*want {
				t.Errorf("scale %v workers %d: γ = %.15g, brute force %.15g", scale, workers, res.GammaNu, want)
			}
			if scale == 1 && (res.Passes != 1 || res.Stored > reroPilot+cfg.Samples/10) {
				t.Errorf("window: %d passes, %d stored", res.Passes, res.Stored)
			}
			if scale < 1 && res.Passes == 1 {
				t.Errorf("tiny margin should need retries")
			}
		}
	}
}

func TestReRoMonteCarloReproducible(t *testing.T) {
	cfg := ReRoConfig{Q: 0.05, Sigma: 0.8, Steps: 30, Kappa: 0.01, Samples: 20000, Seed: 3}
	a, _ := ReRoMonteCarlo(cfg)
	cfg.Workers = 1
	var last, calls int64
	cfg.Progress = func(done, total int64) { last, calls = done, calls+1 }
	b, _ := ReRoMonteCarlo(cfg)
	cfg.Progress = nil
	if last != 40000 || calls < 10 {
		t.Errorf("progress: last %d after %d calls", last, calls)
	}
	if a.GammaNu != b.GammaNu || a.GammaLow != b.GammaLow || a.GammaHigh != b.GammaHigh {
		t.Errorf("results depend on the number of workers: %+v vs %+v", a, b)
	}
	// Fewer μ draws: same ν estimate, a wider interval.
	cfg.MuSamples = 5000
	d, _ := ReRoMonteCarlo(cfg)
	if d.GammaNu != a.GammaNu || d.GammaHigh-d.GammaLow <= a.GammaHigh-a.GammaLow || d.MuSamples != 5000 {
		t.Errorf("MuSamples: %+v vs %+v", d, a)
	}
	cfg.MuSamples = 0
	cfg.Seed = 4
	c, _ := ReRoMonteCarlo(cfg)
	if c.GammaNu == a.GammaNu {
		t.Error("a different seed gave the same estimate")
	}
}

func TestReRoMonotone(t *testing.T) {
	run := func(q, s float64, steps int, k float64) float64 {
		res, err := ReRoMonteCarlo(ReRoConfig{Q: q, Sigma: s, Steps: steps, Kappa: k, Samples: 20000, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		if res.Gamma > 1 || res.GammaHigh > 1 || res.Gamma < 0 || res.GammaLow < 0 {
			t.Fatalf("γ out of [0,1]: %+v", res)
		}
		return res.Gamma
	}
	check := func(name string, xs []float64, dir float64) {
		for i := 1; i < len(xs); i++ {
			if (xs[i]-xs[i-1])*dir < 0 {
				t.Errorf("%s not monotone: %v", name, xs)
			}
		}
	}
	var bySigma, bySteps, byKappa []float64
	for _, s := range []float64{0.5, 0.8, 1.5, 3, 10} {
		bySigma = append(bySigma, run(0.1, s, 20, 0.01))
	}
	check("γ(σ)", bySigma, -1)
	for _, T := range []int{1, 10, 50, 200} {
		bySteps = append(bySteps, run(0.1, 1, T, 0.01))
	}
	check("γ(T)", bySteps, 1)
	for _, k := range []float64{1e-4, 1e-3, 0.01, 0.1, 0.5, 1} {
		byKappa = append(byKappa, run(0.1, 1, 20, k))
	}
	check("γ(κ)", byKappa, 1)
	// Extreme leakage: the ν draws never reach μ's mass, so the ν-sample estimate is
	// far too small; the μ side catches it, the CI reaches 1 and a warning is set.
	res, err := ReRoMonteCarlo(ReRoConfig{Q: 0.5, Sigma: 0.05, Steps: 50, Kappa: 0.001, Samples: 20000, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.GammaHigh != 1 || res.GammaMu < 0.99 || res.Warning == "" || res.GammaNu > 1 {
		t.Errorf("σ = 0.05: %+v", res)
	}
	// Closed form is monotone too.
	prev := 0.0
	for _, T := range []int{0, 1, 4, 16, 64} {
		g, _ := ReRoClosedForm(1, T, 0.01)
		if g < prev || g > 1 {
			t.Errorf("closed form not monotone in T: %v after %v", g, prev)
		}
		prev = g
	}
}

func TestReRoRDP(t *testing.T) {
	// q = 1: ε_α = Tα/(2σ²); minimising over α ∈ (1, ∞) gives Hayes et al. eq. (2),
	// γ = exp(−max{0, √log(1/κ) − √(T/(2σ²))}²). A grid of orders can only do worse.
	var orders []float64
	for a := 1.001; a < 100; a *= 1.001 {
		orders = append(orders, a)
	}
	for _, tc := range []struct {
		sigma float64
		steps int
		kappa float64
	}{{5, 10, 1e-3}, {10, 1, 0.01}, {2, 5, 1e-6}} {
		g, order, err := ReRoRDP(1, tc.sigma, tc.steps, tc.kappa, orders)
		if err != nil {
			t.Fatal(err)
		}
		d := math.Max(0, math.Sqrt(math.Log(1/tc.kappa))-math.Sqrt(float64(tc.steps)/(2*tc.sigma*tc.sigma)))
		want := math.Exp(-d * d)
		if g < want*(1-1e-9) || g > want*1.001 {
			t.Errorf("%+v: γ_RDP = %v at order %v, eq. (2) gives %v", tc, g, order, want)
		}
	}
	if g, _, _ := ReRoRDP(0.5, 0.1, 100, 0.5, nil); g != 1 {
		t.Errorf("γ_RDP must be capped at 1, got %v", g)
	}
	if _, _, err := ReRoRDP(0.1, 1, 10, 0, nil); err == nil {
		t.Error("κ = 0: want an error")
	}
}

func TestReRoErrors(t *testing.T) {
	good := ReRoConfig{Q: 0.1, Sigma: 1, Steps: 10, Kappa: 0.01, Samples: 1000}
	tests := []struct {
		name string
		mod  func(*ReRoConfig)
	}{
		{"q>1", func(c *ReRoConfig) { c.Q = 1.1 }},
		{"q<0", func(c *ReRoConfig) { c.Q = -0.1 }},
		{"sigma 0", func(c *ReRoConfig) { c.Sigma = 0 }},
		{"sigma NaN", func(c *ReRoConfig) { c.Sigma = math.NaN() }},
		{"steps 0", func(c *ReRoConfig) { c.Steps = 0 }},
		{"kappa 0", func(c *ReRoConfig) { c.Kappa = 0 }},
		{"kappa>1", func(c *ReRoConfig) { c.Kappa = 1.5 }},
		{"kappa Inf", func(c *ReRoConfig) { c.Kappa = math.Inf(1) }},
		{"samples<0", func(c *ReRoConfig) { c.Samples = -5 }},
		{"confidence 1", func(c *ReRoConfig) { c.Confidence = 1 }},
		{"mu samples<0", func(c *ReRoConfig) { c.MuSamples = -1 }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := good
			tc.mod(&c)
			if _, err := ReRoMonteCarlo(c); err == nil {
				t.Error("want an error")
			}
		})
	}
	if _, err := KappaFromPriorSize(0); err == nil {
		t.Error("prior size 0: want an error")
	}
	if k, _ := KappaFromPriorSize(10); k != 0.1 {
		t.Errorf("κ = %v", k)
	}
	if math.Abs(Advantage(0.5, 0.1)-4.0/9) > 1e-15 || Advantage(1, 1) != 0 || Advantage(0.1, 0.1) != 0 {
		t.Error("Advantage")
	}
}

func TestReRoEdgeCases(t *testing.T) {
	for _, tc := range []ReRoConfig{
		{Q: 0.1, Sigma: 1, Steps: 3, Kappa: 0.5, Samples: 1},
		{Q: 0.1, Sigma: 1, Steps: 3, Kappa: 1e-9, Samples: 7},
		{Q: 0.1, Sigma: 1, Steps: 3, Kappa: 1, Samples: 300000},
		{Q: 0, Sigma: 1, Steps: 5, Kappa: 0.2, Samples: 5000},
		{Q: 1 - 1e-120, Sigma: 1, Steps: 5, Kappa: 0.2, Samples: 5000},
		{Q: 0.3, Sigma: 0.02, Steps: 4, Kappa: 0.01, Samples: 5000}, // exponents beyond ±700
	} {
		res, err := ReRoMonteCarlo(tc)
		if err != nil {
			t.Fatalf("%+v: %v", tc, err)
		}
		for _, v := range []float64{res.Gamma, res.GammaLow, res.GammaHigh, res.GammaMu, res.GammaRDP} {
			if math.IsNaN(v) || v < 0 || v > 1 {
				t.Errorf("%+v: value %v out of [0, 1] in %+v", tc, v, res)
			}
		}
		if res.GammaLow > res.GammaHigh {
			t.Errorf("%+v: empty interval", tc)
		}
		switch {
		case tc.Q == 0:
			// μ = ν: no blow-up, γ = κ.
			if math.Abs(res.Gamma-tc.Kappa) > 1e-12 || res.GammaLow > tc.Kappa || res.GammaHigh < tc.Kappa {
				t.Errorf("q = 0: %+v", res)
			}
		case tc.Kappa == 1 && tc.Samples > 1000:
			if math.Abs(res.Gamma-1) > 0.01 || res.GammaHigh != 1 {
				t.Errorf("κ = 1: %+v", res)
			}
		case tc.Q > 0.999:
			exact, _ := ReRoClosedForm(tc.Sigma, tc.Steps, tc.Kappa)
			if exact < res.GammaLow || exact > res.GammaHigh {
				t.Errorf("q ≈ 1 (log-space kernel): exact %v outside [%v, %v]", exact, res.GammaLow, res.GammaHigh)
			}
		}
	}
}

func TestReRoCoverage(t *testing.T) {
	// Over 40 seeds the exact γ must fall inside the 95% interval at least 95% of
	// the time (the DKW construction is conservative, so misses should be rare).
	for _, q := range []float64{1, 1 - 1e-9} {
		exact, _ := ReRoClosedForm(1.5, 10, 0.05)
		miss := 0
		for seed := uint64(0); seed < 40; seed++ {
			res, err := ReRoMonteCarlo(ReRoConfig{Q: q, Sigma: 1.5, Steps: 10, Kappa: 0.05, Samples: 20000, Seed: seed})
			if err != nil {
				t.Fatal(err)
			}
			if exact < res.GammaLow || exact > res.GammaHigh {
				miss++
			}
		}
		if miss > 2 {
			t.Errorf("q=%v: exact γ outside the 95%% CI in %d of 40 runs", q, miss)
		}
	}
}

// TestReRoReportedGamma pins which estimate `gamma` reports: the closed form at q = 1,
// the ν-sample estimator when it is inside its interval, the μ-sample one otherwise.
func TestReRoReportedGamma(t *testing.T) {
	res, err := ReRoMonteCarlo(ReRoConfig{Q: 1, Sigma: 2, Steps: 100, Kappa: 0.1, Samples: 20000, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	exact, _ := ReRoClosedForm(2, 100, 0.1)
	if res.Gamma != exact || res.Advantage != Advantage(exact, 0.1) {
		t.Errorf("q = 1: gamma %v, advantage %v, want the closed form %v", res.Gamma, res.Advantage, exact)
	}
	res, err = ReRoMonteCarlo(ReRoConfig{Q: 0.5, Sigma: 0.05, Steps: 50, Kappa: 0.001, Samples: 20000, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.GammaMu-res.GammaNu < 0.5 || res.Gamma != res.GammaMu || res.Warning == "" {
		t.Errorf("ν estimate far off: %+v", res)
	}
	res, err = ReRoMonteCarlo(ReRoConfig{Q: 0.1, Sigma: 1, Steps: 20, Kappa: 0.1, Samples: 20000, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Gamma != res.GammaNu || res.Warning != "" {
		t.Errorf("moderate regime: %+v", res)
	}
}
