package accounting

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/integrate/quad"
)

// ---------------------------------------------------------------------------
// Independent float64 references: the hockey-stick divergence of Gaussian
// mixtures (unit variance, in units of the noise σ) by Gauss–Legendre quadrature,
// with the loss computed from the densities (nothing from pld.go).

// testMix is Σ_k W[k]·N(M[k], 1).
type testMix struct{ W, M []float64 }

func (m testMix) logDens(x float64) float64 {
	best := math.Inf(-1)
	for k := range m.W {
		best = math.Max(best, math.Log(m.W[k])-(x-m.M[k])*(x-m.M[k])/2)
	}
	var s float64
	for k := range m.W {
		s += math.Exp(math.Log(m.W[k]) - (x-m.M[k])*(x-m.M[k])/2 - best)
	}
	return best + math.Log(s) - 0.5*math.Log(2*math.Pi)
}

func (m testMix) dens(x float64) float64 { return math.Exp(m.logDens(x)) }

// testPair is a one-dimensional pair whose loss log(p/q) is monotone in x.
type testPair struct{ P, Q testMix }

func (t testPair) loss(x float64) float64 { return t.P.logDens(x) - t.Q.logDens(x) }
func (t testPair) swap() testPair         { return testPair{t.Q, t.P} }

// testPairs in units of σ: the dominating pairs of docs/accounting.md, written out
// from their definitions.
func testRemovePair(q, mu float64) testPair {
	return testPair{testMix{[]float64{1 - q, q}, []float64{0, mu}}, testMix{[]float64{1}, []float64{0}}}
}

func testReplacePair(q, mu float64) testPair {
	return testPair{testMix{[]float64{1 - q, q}, []float64{0, mu}}, testMix{[]float64{1 - q, q}, []float64{0, -mu}}}
}

const quadR = 45.0 // integration range [−R, R] in units of σ

// glSum integrates f over [a, b] with panels of width ≤ w and n Gauss–Legendre nodes.
func glSum(f func(float64) float64, a, b, w float64, n int) float64 {
	if b <= a {
		return 0
	}
	np := int(math.Ceil((b - a) / w))
	step := (b - a) / float64(np)
	var s float64
	for i := range np {
		s += quad.Fixed(f, a+float64(i)*step, a+float64(i+1)*step, n, quad.Legendre{}, 0)
	}
	return s
}

// crossing finds x in [−R, R] with g(x) = 0 for a monotone g by bisection; ok is
// false when g has one sign on the whole range (then pos tells which).
func crossing(g func(float64) float64) (x float64, ok, pos bool) {
	lo, hi := -quadR, quadR
	glo, ghi := g(lo), g(hi)
	if glo > 0 && ghi > 0 {
		return 0, false, true
	}
	if glo <= 0 && ghi <= 0 {
		return 0, false, false
	}
	inc := ghi > 0
	for range 80 {
		m := (lo + hi) / 2
		if (g(m) > 0) == inc {
			hi = m
		} else {
			lo = m
		}
	}
	return (lo + hi) / 2, true, inc
}

// positiveRegion returns the interval of [−R, R] where g > 0 (g monotone).
func positiveRegion(g func(float64) float64) (a, b float64) {
	x, ok, inc := crossing(g)
	switch {
	case !ok && inc:
		return -quadR, quadR
	case !ok:
		return 0, 0
	case inc:
		return x, quadR
	}
	return -quadR, x
}

// hockeyStick1 is H_{e^ε}(P‖Q) = ∫ (p − e^ε q)_+ by quadrature on the side of the
// loss crossing where the integrand is positive.
func hockeyStick1(t testPair, eps float64) float64 {
	a, b := positiveRegion(func(x float64) float64 { return t.loss(x) - eps })
	ee := math.Exp(eps)
	return glSum(func(x float64) float64 { return t.P.dens(x) - ee*t.Q.dens(x) }, a, b, 0.25, 20)
}

// hockeyStick2 is H_{e^ε}(P1×P2 ‖ Q1×Q2) by a product quadrature: for every outer
// node x the inner integral over y runs over {y : L2(y) > ε − L1(x)}. The outer
// integrand is smooth except where ε − L1(x) reaches an end of L2's range (the inner
// region then becomes all or nothing): the outer rule is split there.
func hockeyStick2(t1, t2 testPair, eps float64) float64 {
	ee := math.Exp(eps)
	const lo, hi = -14.0, 16.0
	outer := func(x float64) float64 {
		p1, q1 := t1.P.dens(x), t1.Q.dens(x)
		if p1 == 0 {
			return 0
		}
		l1 := t1.loss(x)
		a, b := positiveRegion(func(y float64) float64 { return t2.loss(y) - (eps - l1) })
		a, b = math.Max(a, lo), math.Min(b, hi)
		return glSum(func(y float64) float64 { return p1*t2.P.dens(y) - ee*q1*t2.Q.dens(y) }, a, b, 1, 16)
	}
	cuts := []float64{lo, hi}
	for _, end := range []float64{t2.loss(-quadR), t2.loss(quadR)} {
		if x, ok, _ := crossing(func(x float64) float64 { return t1.loss(x) - (eps - end) }); ok && x > lo && x < hi {
			cuts = append(cuts, x)
		}
	}
	slices.Sort(cuts)
	var s float64
	for i := 1; i < len(cuts); i++ {
		s += glSum(outer, cuts[i-1], cuts[i], 0.5, 16)
	}
	return s
}

// closedGaussDelta is δ(ε) of the Gaussian with μ = Δ√T/σ.
func closedGaussDelta(mu, eps float64) float64 {
	return stdNormalCDF(-eps/mu+mu/2) - math.Exp(eps)*stdNormalCDF(-eps/mu-mu/2)
}

// ---------------------------------------------------------------------------

func TestPLDGaussianClosedForm(t *testing.T) {
	tests := []struct {
		adj   Adjacency
		sigma float64
		steps int
		eps   float64
	}{
		{AddRemove, 1, 1, 0.5},
		{AddRemove, 1, 1, 1.23},
		{AddRemove, 2, 10, 0.5},
		{AddRemove, 0.5, 3, 2},
		{AddRemove, 5, 1000, 1.7},
		{AddRemove, 3, 50, 3.3},
		{AddRemove, 20, 1, 0.01},
		{ReplaceOne, 1, 1, 1},
		{ReplaceOne, 4, 100, 2.45},
		{ReplaceOne, 2, 7, 0.37},
	}
	for _, tc := range tests {
		p := NewPLD(tc.adj, nil)
		if err := p.ComposeGaussian(tc.sigma, tc.steps); err != nil {
			t.Fatal(err)
		}
		d, err := p.Delta(tc.eps)
		if err != nil {
			t.Fatal(err)
		}
		sens := 1.0
		if tc.adj == ReplaceOne {
			sens = 2
		}
		exact := closedGaussDelta(sens*math.Sqrt(float64(tc.steps))/tc.sigma, tc.eps)
		if math.Abs(d.Upper/exact-1) > 1e-3 {
			t.Errorf("%+v: δ upper %v, closed form %v (relative error %.2g)", tc, d.Upper, exact, d.Upper/exact-1)
		}
		if d.Upper < exact*(1-1e-12) || d.Lower > exact*(1+1e-12) {
			t.Errorf("%+v: not pessimistic ≥ exact ≥ optimistic: %v ≥ %v ≥ %v", tc, d.Upper, exact, d.Lower)
		}
		// ε at that δ brackets tc.eps.
		e, err := p.Epsilon(exact)
		if err != nil {
			t.Fatal(err)
		}
		if e.Upper < tc.eps-1e-9 || e.Lower > tc.eps+1e-9 || e.Upper-e.Lower > 1e-3 {
			t.Errorf("%+v: ε(δ) = [%v, %v] does not bracket %v tightly", tc, e.Lower, e.Upper, tc.eps)
		}
	}
	// Gaussians of different noise compose into one with μ² summed.
	p := NewPLD(AddRemove, nil)
	_ = p.ComposeGaussian(2, 3)
	_ = p.ComposeGaussian(1, 2)
	d, _ := p.Delta(1)
	if exact := closedGaussDelta(math.Sqrt(3.0/4+2), 1); math.Abs(d.Upper/exact-1) > 1e-3 || d.Upper < exact*(1-1e-12) {
		t.Errorf("heterogeneous Gaussians: δ %v, closed form %v", d.Upper, exact)
	}
}

// pldCase is one mechanism setting for the quadrature tests (two steps too when
// two is set).
type pldCase struct {
	name     string
	adj      Adjacency
	sampling Sampling
	q, sigma float64
	two      bool
}

// pairs returns the test pairs whose larger δ the accountant must report.
func (c pldCase) pairs() []testPair {
	switch {
	case c.sampling == SamplingPoisson && c.adj == AddRemove:
		r := testRemovePair(c.q, 1/c.sigma)
		return []testPair{r, r.swap()}
	case c.sampling == SamplingPoisson:
		return []testPair{testReplacePair(c.q, 1/c.sigma)}
	}
	r := testRemovePair(c.q, 2/c.sigma) // uniform, replace-one
	return []testPair{r, r.swap()}
}

func (c pldCase) compose(p *PLD, steps int) error {
	if c.sampling == SamplingUniform {
		return p.ComposeUniformGaussian(c.q, c.sigma, steps)
	}
	return p.ComposePoissonGaussian(c.q, c.sigma, steps)
}

var pldQuadCases = []pldCase{
	{"poisson add-remove", AddRemove, SamplingPoisson, 0.1, 1, true},
	{"poisson add-remove small σ", AddRemove, SamplingPoisson, 0.3, 0.6, false},
	{"poisson add-remove small q", AddRemove, SamplingPoisson, 0.02, 0.8, true},
	{"poisson replace-one", ReplaceOne, SamplingPoisson, 0.1, 1, true},
	{"poisson replace-one small σ", ReplaceOne, SamplingPoisson, 0.3, 0.7, false},
	{"uniform replace-one", ReplaceOne, SamplingUniform, 0.1, 2, false},
	{"uniform replace-one small σ", ReplaceOne, SamplingUniform, 0.05, 1, true},
}

// checkAgainst compares the accountant's δ(ε) with the exact value, computed by a
// quadrature of relative accuracy quadTol: within 0.1 %, and upper ≥ exact ≥ lower
// up to quadTol.
func checkAgainst(t *testing.T, what string, d DeltaBounds, exact, quadTol float64) {
	t.Helper()
	if math.Abs(d.Upper/exact-1) > 1e-3 {
		t.Errorf("%s: δ upper %.10g, quadrature %.10g (relative error %.2g)", what, d.Upper, exact, d.Upper/exact-1)
	}
	if d.Upper < exact*(1-quadTol) {
		t.Errorf("%s: δ upper %.12g below the quadrature %.12g", what, d.Upper, exact)
	}
	if d.Lower > exact*(1+quadTol) {
		t.Errorf("%s: δ lower %.12g above the quadrature %.12g", what, d.Lower, exact)
	}
}

// Relative accuracy of the 1-D and 2-D quadratures (checked against the accountant
// at interval 1e-5, whose two bounds are then within 1e-9 of each other).
const (
	quadTol1 = 1e-10
	quadTol2 = 1e-6
)

func TestPLDSubsampledQuadrature(t *testing.T) {
	for _, c := range pldQuadCases {
		for _, steps := range []int{1, 2} {
			if steps == 2 && !c.two {
				continue
			}
			p := NewPLD(c.adj, nil)
			if err := c.compose(p, steps); err != nil {
				t.Fatal(err)
			}
			epss := []float64{0, 0.3, 1, 2.5}
			if steps == 2 {
				epss = []float64{0.3, 1.5}
			}
			for _, eps := range epss {
				var exact float64
				for _, tp := range c.pairs() {
					var v float64
					if steps == 1 {
						v = hockeyStick1(tp, eps)
					} else {
						v = hockeyStick2(tp, tp, eps)
					}
					exact = math.Max(exact, v)
				}
				if exact < 1e-12 {
					continue
				}
				d, err := p.Delta(eps)
				if err != nil {
					t.Fatal(err)
				}
				tol := quadTol1
				if steps == 2 {
					tol = quadTol2
				}
				checkAgainst(t, c.name+" T="+string(rune('0'+steps))+" ε="+fmtF(eps), d, exact, tol)
			}
		}
	}
}

func fmtF(x float64) string {
	b, _ := json.Marshal(x)
	return string(b)
}

// Two different subsampled steps (FFT convolution of two distributions) against
// the two-dimensional quadrature of the product pair.
func TestPLDHeterogeneousQuadrature(t *testing.T) {
	p := NewPLD(AddRemove, nil)
	_ = p.ComposePoissonGaussian(0.2, 1, 1)
	_ = p.ComposePoissonGaussian(0.05, 0.6, 1)
	a, b := testRemovePair(0.2, 1), testRemovePair(0.05, 1/0.6)
	for _, eps := range []float64{0.2, 1} {
		exact := math.Max(hockeyStick2(a, b, eps), hockeyStick2(a.swap(), b.swap(), eps))
		d, err := p.Delta(eps)
		if err != nil {
			t.Fatal(err)
		}
		checkAgainst(t, "heterogeneous ε="+fmtF(eps), d, exact, quadTol2)
	}
}

// The t-fold self-composition (one FFT and a power over a Chernoff window) equals
// t − 1 successive convolutions.
func TestPLDSelfComposeMatchesConvolution(t *testing.T) {
	d, err := discretise(newMixPair(0.05, 1.3, false), 1e-3, 1e-16)
	if err != nil {
		t.Fatal(err)
	}
	for _, pess := range []bool{true, false} {
		x := d.opt
		if pess {
			x = d.pess
		}
		self, err := x.selfCompose(7, 1e-15, pess)
		if err != nil {
			t.Fatal(err)
		}
		rep := x
		for range 6 {
			if rep, err = rep.compose(x, 1e-15, pess); err != nil {
				t.Fatal(err)
			}
		}
		for _, eps := range []float64{0, 0.5, 1, 2, 3} {
			a, b := self.delta(1e-3, eps), rep.delta(1e-3, eps)
			if math.Abs(a-b) > 1e-12+1e-9*b {
				t.Errorf("pess=%v ε=%v: self-composed δ %v, repeated %v", pess, eps, a, b)
			}
		}
	}
}

// Several groups composed in one Fourier product over a Chernoff window equal the
// groups self-composed and convolved one after the other.
func TestPLDComposeAllMatchesSequential(t *testing.T) {
	a, err := discretise(newMixPair(0.05, 1, false), 1e-4, 1e-17)
	if err != nil {
		t.Fatal(err)
	}
	b, err := discretise(newMixPair(0.2, 0.5, false), 1e-4, 1e-17)
	if err != nil {
		t.Fatal(err)
	}
	for _, pess := range []bool{true, false} {
		x, y := a.opt, b.opt
		if pess {
			x, y = a.pess, b.pess
		}
		all, err := composeAll([]pmf{x, y}, []int{30, 40}, 1e-15, pess)
		if err != nil {
			t.Fatal(err)
		}
		if full := 30*(len(x.p)-1) + 40*(len(y.p)-1) + 1; full <= 1<<16 || len(all.p) >= full {
			t.Fatalf("the test must exercise the Chernoff window: support %d, window %d", full, len(all.p))
		}
		sx, _ := x.selfCompose(30, 1e-15, pess)
		sy, _ := y.selfCompose(40, 1e-15, pess)
		seq, err := sx.compose(sy, 1e-15, pess)
		if err != nil {
			t.Fatal(err)
		}
		for _, eps := range []float64{0, 0.5, 1, 2, 4} {
			u, v := all.delta(1e-4, eps), seq.delta(1e-4, eps)
			if math.Abs(u-v) > 1e-13+1e-9*v {
				t.Errorf("pess=%v ε=%v: one product %v, sequential %v", pess, eps, u, v)
			}
		}
	}
}

// The inverse loss functions invert the losses.
func TestPLDLossInverse(t *testing.T) {
	pairs := []lossPair{
		gaussPair{mu: 0.7}, newMixPair(0.01, 1, false), newMixPair(0.3, 2, true),
		newDoubleMixPair(0.01, 1), newDoubleMixPair(0.4, 3), newDoubleMixPair(0.001, 0.2),
	}
	for _, pr := range pairs {
		for _, x := range []float64{-8, -3, -1, -0.1, 0.05, 0.7, 2, 5, 9} {
			l := pr.loss(x)
			lmin, lmax := pr.lossRange()
			if l <= lmin+1e-9 || l >= lmax-1e-9 {
				continue
			}
			if y := pr.inv(l); math.Abs(y-x) > 1e-7*math.Max(1, math.Abs(x)) {
				t.Errorf("%T %+v: inv(loss(%v)) = %v", pr, pr, x, y)
			}
		}
	}
	// The test pairs' loss matches the accountant's.
	tp, ap := testReplacePair(0.1, 1.5), newDoubleMixPair(0.1, 1.5)
	for _, x := range []float64{-2, 0.3, 4} {
		if a, b := tp.loss(x), ap.loss(x); math.Abs(a-b) > 1e-12 {
			t.Errorf("replace-one loss at %v: %v vs %v", x, a, b)
		}
	}
}

// The replace-one Poisson pair (antipodal shifts ±1) dominates every pair of
// clipped contributions a, b (‖a‖, ‖b‖ ≤ 1) in two dimensions: the hockey-stick
// divergence of (1−q)N(0, σ²I) + qN(a, σ²I) against (1−q)N(0, σ²I) + qN(b, σ²I),
// by a product Gauss–Legendre rule, never exceeds the one-dimensional antipodal one
// (Schuchardt et al. 2024).
func TestPLDReplaceOneDominatingPair(t *testing.T) {
	if testing.Short() {
		t.Skip("2-D quadrature")
	}
	rng := rand.New(rand.NewPCG(3, 5))
	disk := func() [2]float64 {
		for {
			x, y := 2*rng.Float64()-1, 2*rng.Float64()-1
			if x*x+y*y <= 1 {
				return [2]float64{x, y}
			}
		}
	}
	type vpair struct {
		name string
		a, b [2]float64
	}
	th := 0.9
	vs := []vpair{
		{"antipodal rotated", [2]float64{math.Cos(th), math.Sin(th)}, [2]float64{-math.Cos(th), -math.Sin(th)}},
		{"b = 0", [2]float64{0.6, 0.8}, [2]float64{}},
		{"orthogonal unit", [2]float64{1, 0}, [2]float64{0, 1}},
	}
	for i := range 3 {
		vs = append(vs, vpair{"random " + string(rune('1'+i)), disk(), disk()})
	}
	for _, qs := range [][2]float64{{0.1, 1}, {0.3, 0.7}} {
		q, sigma := qs[0], qs[1]
		for _, eps := range []float64{0.3, 1.2} {
			anti := hockeyStick1(testReplacePair(q, 1/sigma), eps)
			for _, v := range vs {
				h2 := hockeyStick2D(q, sigma, v.a, v.b, eps)
				if h2 > anti*(1+2e-4)+1e-12 {
					t.Errorf("q=%v σ=%v ε=%v %s a=%v b=%v: 2-D %v > antipodal %v", q, sigma, eps, v.name, v.a, v.b, h2, anti)
				}
				if v.name == "antipodal rotated" && math.Abs(h2/anti-1) > 2e-4 {
					t.Errorf("q=%v σ=%v ε=%v: rotated antipodal pair in 2-D %v, 1-D %v", q, sigma, eps, h2, anti)
				}
			}
		}
	}
}

// hockeyStick2D integrates (p − e^ε q)_+ over R² by a product Gauss–Legendre rule
// (σ = 1 after scaling a and b by 1/σ).
func hockeyStick2D(q, sigma float64, a, b [2]float64, eps float64) float64 {
	for i := range 2 {
		a[i] /= sigma
		b[i] /= sigma
	}
	ee := math.Exp(eps)
	const r, w, n = 11.0, 0.1, 8
	np := int(2 * r / w)
	xs, ws := make([]float64, n), make([]float64, n)
	quad.Legendre{}.FixedLocations(xs, ws, -w/2, w/2)
	var nodes, weights []float64
	for i := range np {
		c := -r + w/2 + float64(i)*w
		for k := range n {
			nodes, weights = append(nodes, c+xs[k]), append(weights, ws[k])
		}
	}
	n0 := make([]float64, len(nodes))
	for i, x := range nodes {
		n0[i] = math.Exp(-x*x/2) / math.Sqrt(2*math.Pi)
	}
	var s float64
	for i, x := range nodes {
		for j, y := range nodes {
			base := (1 - q) * n0[i] * n0[j]
			pa := q * math.Exp(-((x-a[0])*(x-a[0])+(y-a[1])*(y-a[1]))/2) / (2 * math.Pi)
			pb := q * math.Exp(-((x-b[0])*(x-b[0])+(y-b[1])*(y-b[1]))/2) / (2 * math.Pi)
			if v := base + pa - ee*(base+pb); v > 0 {
				s += weights[i] * weights[j] * v
			}
		}
	}
	return s
}

// The PLD ε never exceeds the RDP accountant's (both Poisson, add/remove).
func TestPLDBelowRDP(t *testing.T) {
	for _, q := range []float64{0.001, 0.01, 0.1, 0.5, 1} {
		for _, sigma := range []float64{0.8, 1, 2, 5} {
			for _, steps := range []int{1, 10, 100, 1000} {
				if q == 1 && steps*int(1/sigma) > 100 {
					continue // ε in the hundreds: beyond the grid's loss range
				}
				// A coarser grid (h = 1e-3) where the per-step losses are large keeps the
				// test fast; its upper bound is only larger, so the comparison is no
				// easier.
				cfg := &PLDConfig{}
				if q >= 0.1 && sigma <= 2 {
					cfg.Interval = 1e-3
				}
				p := NewPLD(AddRemove, cfg)
				if err := p.ComposePoissonGaussian(q, sigma, steps); err != nil {
					t.Fatal(err)
				}
				for _, delta := range []float64{1e-5, 1e-3} {
					e, err := p.Epsilon(delta)
					if err != nil {
						t.Fatalf("q=%v σ=%v T=%d δ=%v: %v", q, sigma, steps, delta, err)
					}
					r, _, err := epsilonFor(sampledGaussianRun{Q: q, Sigma: sigma, Steps: steps, Delta: delta}, nil, ConversionImproved)
					if err != nil {
						t.Fatal(err)
					}
					if e.Upper > r+1e-9 {
						t.Errorf("q=%v σ=%v T=%d δ=%v: PLD ε %v above RDP %v", q, sigma, steps, delta, e.Upper, r)
					}
					if e.Lower > e.Upper || e.Upper-e.Lower > 0.01*math.Max(1, e.Upper) {
						t.Errorf("q=%v σ=%v T=%d δ=%v: bounds [%v, %v]", q, sigma, steps, delta, e.Lower, e.Upper)
					}
				}
			}
		}
	}
}

// Reference values of other accountants.
func TestPLDReferenceValues(t *testing.T) {
	// Issue 15: q = 0.01, σ = 1, T = 10 000, δ = 1e-5, Poisson add/remove: RDP 6.71,
	// dp_accounting's PLD about 6.19.
	e, err := pldEpsilon(AddRemove, SamplingPoisson, sampledGaussianRun{Q: 0.01, Sigma: 1, Steps: 10000, Delta: 1e-5}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(e.Upper-6.19) > 0.005 || math.Abs(e.Lower-6.19) > 0.005 {
		t.Errorf("issue 15 reference: ε ∈ [%v, %v], want 6.19 ± 0.005", e.Lower, e.Upper)
	}
	if r, _, _ := epsilonFor(sampledGaussianRun{Q: 0.01, Sigma: 1, Steps: 10000, Delta: 1e-5}, nil, ConversionImproved); math.Abs(r-6.71) > 0.005 {
		t.Errorf("RDP reference %v, want 6.71", r)
	}

	// dp_accounting pld_privacy_accountant_test.py: test_gaussian_basic (σ = √3,
	// 1 + 2 compositions: δ(1) = 0.126936) and test_poisson_subsampled_gaussian
	// (q = 0.2, σ = 0.5, 1 + 2 compositions: δ(1) = 0.15594), both add/remove.
	p := NewPLD(AddRemove, nil)
	_ = p.ComposeGaussian(math.Sqrt(3), 1)
	_ = p.ComposeGaussian(math.Sqrt(3), 2)
	if d, _ := p.Delta(1); math.Abs(d.Upper-0.126936) > 1e-5 {
		t.Errorf("dp_accounting Gaussian: δ(1) = %v, want 0.126936", d.Upper)
	}
	p = NewPLD(AddRemove, nil)
	_ = p.ComposePoissonGaussian(0.2, 0.5, 1)
	_ = p.ComposePoissonGaussian(0.2, 0.5, 2)
	if d, _ := p.Delta(1); math.Abs(d.Upper-0.15594) > 2e-5 {
		t.Errorf("dp_accounting subsampled Gaussian: δ(1) = %v, want 0.15594", d.Upper)
	}

	// Koskela, Jälkö, Honkela's Fourier accountant (DPBayes/PLD-Accountant README:
	// q = 0.01, σ = 4, at its default 10⁴ compositions): remove relation δ(ε = 1) =
	// 4.243484e-06 (one direction, the mixture against N(0, σ²)); substitute relation
	// (the replace-one pair) ε(δ = 1e-5) = 1.99312. Their values carry their own
	// discretisation error (grid 4e-5): they must fall inside our bracket, widened by
	// 0.2 %.
	dirs, err := composeSteps(AddRemove, []PLDStep{{Mechanism: PLDPoissonGaussian, Q: 0.01, Sigma: 4, Steps: 10000}}, PLDConfig{Interval: 1e-4, TailMass: 1e-15}, true)
	if err != nil {
		t.Fatal(err)
	}
	up, lo := dirs[0].pess.delta(1e-4, 1), dirs[0].opt.delta(1e-4, 1)
	if ref := 4.243484e-06; up < ref*(1-2e-3) || lo > ref*(1+2e-3) || up/lo-1 > 0.01 {
		t.Errorf("Fourier accountant remove relation: δ(1) ∈ [%v, %v], reference %v", lo, up, ref)
	}
	p = NewPLD(ReplaceOne, nil)
	_ = p.ComposePoissonGaussian(0.01, 4, 10000)
	if e, _ := p.Epsilon(1e-5); e.Upper < 1.99312-1e-3 || e.Lower > 1.99312+1e-3 || math.Abs(e.Upper-1.99312) > 1e-3 {
		t.Errorf("Fourier accountant substitute relation: ε ∈ [%v, %v], reference 1.99312", e.Lower, e.Upper)
	}
}

func TestPLDMonotone(t *testing.T) {
	eps := func(adj Adjacency, s Sampling, q, sigma float64, steps int) float64 {
		t.Helper()
		e, err := pldEpsilon(adj, s, sampledGaussianRun{Q: q, Sigma: sigma, Steps: steps, Delta: 1e-5}, &PLDConfig{Interval: 1e-3})
		if err != nil {
			t.Fatal(err)
		}
		return e.Upper
	}
	for _, m := range []struct {
		adj Adjacency
		s   Sampling
	}{{AddRemove, SamplingPoisson}, {ReplaceOne, SamplingPoisson}, {ReplaceOne, SamplingUniform}} {
		prev := 0.0
		for _, steps := range []int{1, 10, 100, 1000} {
			e := eps(m.adj, m.s, 0.02, 1, steps)
			if e <= prev {
				t.Errorf("%v %v: ε not increasing in steps at T=%d: %v ≤ %v", m.adj, m.s, steps, e, prev)
			}
			prev = e
		}
		prev = 0
		for _, q := range []float64{0.001, 0.01, 0.05, 0.2, 1} {
			e := eps(m.adj, m.s, q, 1, 100)
			if e <= prev {
				t.Errorf("%v %v: ε not increasing in q at q=%v: %v ≤ %v", m.adj, m.s, q, e, prev)
			}
			prev = e
		}
		prev = math.Inf(1)
		for _, sigma := range []float64{0.8, 1, 1.5, 3, 10} {
			e := eps(m.adj, m.s, 0.02, sigma, 100)
			if e >= prev {
				t.Errorf("%v %v: ε not decreasing in σ at σ=%v: %v ≥ %v", m.adj, m.s, sigma, e, prev)
			}
			prev = e
		}
	}
	// Replace-one is less private than add/remove; the Poisson replace-one pair is
	// tighter than the (sensitivity-2) uniform one at the same rate.
	ar, r1, u1 := eps(AddRemove, SamplingPoisson, 0.01, 1, 1000), eps(ReplaceOne, SamplingPoisson, 0.01, 1, 1000), eps(ReplaceOne, SamplingUniform, 0.01, 1, 1000)
	if !(ar < r1 && r1 < u1) {
		t.Errorf("ε add/remove %v, Poisson replace-one %v, uniform replace-one %v: want increasing", ar, r1, u1)
	}
}

func TestPLDEdgeCases(t *testing.T) {
	// No steps, q = 0 and zero-step calls: no privacy loss.
	for _, f := range []func(p *PLD) error{
		func(p *PLD) error { return nil },
		func(p *PLD) error { return p.ComposePoissonGaussian(0, 1, 100) },
		func(p *PLD) error { return p.ComposeGaussian(1, 0) },
	} {
		p := NewPLD(AddRemove, nil)
		if err := f(p); err != nil {
			t.Fatal(err)
		}
		e, err := p.Epsilon(1e-5)
		d, err2 := p.Delta(0)
		if err != nil || err2 != nil || e.Upper != 0 || e.Lower != 0 || d.Upper != 0 || d.Lower != 0 {
			t.Errorf("no privacy loss: ε %+v δ %+v (%v, %v)", e, d, err, err2)
		}
	}
	// q = 1 equals the plain Gaussian.
	a, _ := pldEpsilon(AddRemove, SamplingPoisson, sampledGaussianRun{Q: 1, Sigma: 2, Steps: 10, Delta: 1e-5}, nil)
	p := NewPLD(AddRemove, nil)
	_ = p.ComposeGaussian(2, 10)
	b, _ := p.Epsilon(1e-5)
	if a != b {
		t.Errorf("q = 1: %+v, Gaussian %+v", a, b)
	}
	// Identical consecutive calls merge.
	p = NewPLD(ReplaceOne, nil)
	_ = p.ComposeUniformGaussian(0.1, 1, 3)
	_ = p.ComposeUniformGaussian(0.1, 1, 4)
	if len(p.Steps) != 1 || p.Steps[0].Steps != 7 {
		t.Errorf("steps %+v", p.Steps)
	}
	// A large δ gives ε = 0, a tiny one needs the far tail.
	if e, err := pldEpsilon(AddRemove, SamplingPoisson, sampledGaussianRun{Q: 0.01, Sigma: 5, Steps: 10, Delta: 0.5}, nil); err != nil || e.Upper != 0 {
		t.Errorf("δ = 0.5: %+v %v", e, err)
	}
	if e, err := pldEpsilon(AddRemove, SamplingPoisson, sampledGaussianRun{Q: 0.01, Sigma: 1, Steps: 100, Delta: 1e-12}, nil); err != nil || !(e.Upper > 1) {
		t.Errorf("δ = 1e-12: %+v %v", e, err)
	}
	// A coarser grid gives a wider bracket around the same value.
	fine, _ := pldEpsilon(AddRemove, SamplingPoisson, sampledGaussianRun{Q: 0.05, Sigma: 1, Steps: 100, Delta: 1e-5}, nil)
	coarse, _ := pldEpsilon(AddRemove, SamplingPoisson, sampledGaussianRun{Q: 0.05, Sigma: 1, Steps: 100, Delta: 1e-5}, &PLDConfig{Interval: 1e-2})
	if !(coarse.Upper >= fine.Upper-1e-9 && coarse.Lower <= fine.Lower+1e-9 && coarse.Upper-coarse.Lower > fine.Upper-fine.Lower) {
		t.Errorf("coarse %+v, fine %+v", coarse, fine)
	}
}

func TestPLDValidation(t *testing.T) {
	bad := []struct {
		name string
		f    func() error
		want string
	}{
		{"q < 0", func() error { return NewPLD(AddRemove, nil).ComposePoissonGaussian(-0.1, 1, 1) }, "q"},
		{"q > 1", func() error { return NewPLD(AddRemove, nil).ComposePoissonGaussian(1.5, 1, 1) }, "q"},
		{"q NaN", func() error { return NewPLD(AddRemove, nil).ComposePoissonGaussian(math.NaN(), 1, 1) }, "q"},
		{"σ = 0", func() error { return NewPLD(AddRemove, nil).ComposePoissonGaussian(0.1, 0, 1) }, "sigma"},
		{"σ < 0", func() error { return NewPLD(ReplaceOne, nil).ComposeGaussian(-1, 1) }, "sigma"},
		{"σ Inf", func() error { return NewPLD(ReplaceOne, nil).ComposeUniformGaussian(0.1, math.Inf(1), 1) }, "sigma"},
		{"σ NaN", func() error { return NewPLD(ReplaceOne, nil).ComposeGaussian(math.NaN(), 1) }, "sigma"},
		{"steps < 0", func() error { return NewPLD(AddRemove, nil).ComposePoissonGaussian(0.1, 1, -1) }, "steps"},
		{"uniform add/remove", func() error { return NewPLD(AddRemove, nil).ComposeUniformGaussian(0.1, 1, 1) }, "add/remove"},
		{"bad adjacency", func() error { return NewPLD(Adjacency(7), nil).ComposeGaussian(1, 1) }, "adjacency"},
		{"δ = 0", func() error { _, err := NewPLD(AddRemove, nil).Epsilon(0); return err }, "delta"},
		{"δ = 1", func() error { _, err := NewPLD(AddRemove, nil).Epsilon(1); return err }, "delta"},
		{"δ NaN", func() error { _, err := NewPLD(AddRemove, nil).Epsilon(math.NaN()); return err }, "delta"},
		{"ε NaN", func() error { _, err := NewPLD(AddRemove, nil).Delta(math.NaN()); return err }, "epsilon"},
		{"ε Inf", func() error { _, err := NewPLD(AddRemove, nil).Delta(math.Inf(1)); return err }, "epsilon"},
		{"interval < 0", func() error { _, err := NewPLD(AddRemove, &PLDConfig{Interval: -1}).Epsilon(1e-5); return err }, "interval"},
		{"interval NaN", func() error { _, err := NewPLD(AddRemove, &PLDConfig{Interval: math.NaN()}).Epsilon(1e-5); return err }, "interval"},
		{"tail mass 0.5", func() error { _, err := NewPLD(AddRemove, &PLDConfig{TailMass: 0.5}).Epsilon(1e-5); return err }, "tail"},
		{"δ below +∞ mass", func() error {
			_, err := pldEpsilon(AddRemove, SamplingPoisson, sampledGaussianRun{Q: 0.5, Sigma: 1, Steps: 10, Delta: 1e-17}, nil)
			return err
		}, "+∞"},
		{"grid too fine", func() error {
			_, err := pldEpsilon(AddRemove, SamplingPoisson, sampledGaussianRun{Q: 0.5, Sigma: 0.2, Steps: 10, Delta: 1e-5}, &PLDConfig{Interval: 1e-7})
			return err
		}, "interval"},
		{"noise too small", func() error {
			_, err := pldEpsilon(AddRemove, SamplingPoisson, sampledGaussianRun{Q: 0.5, Sigma: 0.01, Steps: 10, Delta: 1e-5}, nil)
			return err
		}, "noise"},
		{"shuffle helper", func() error {
			_, err := pldEpsilon(AddRemove, SamplingShuffle, sampledGaussianRun{Q: 0.5, Sigma: 1, Steps: 10, Delta: 1e-5}, nil)
			return err
		}, "shuffle"},
		{"uniform helper add/remove", func() error {
			_, err := pldEpsilon(AddRemove, SamplingUniform, sampledGaussianRun{Q: 0.5, Sigma: 1, Steps: 10, Delta: 1e-5}, nil)
			return err
		}, "add/remove"},
		{"bad step from JSON", func() error {
			p := NewPLD(AddRemove, nil)
			p.Steps = []PLDStep{{Mechanism: PLDPoissonGaussian, Q: 2, Sigma: 1, Steps: 1}}
			_, err := p.Epsilon(1e-5)
			return err
		}, "step 0"},
	}
	for _, tc := range bad {
		err := tc.f()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one mentioning %q", tc.name, err, tc.want)
		}
	}
	// A rejected step leaves the accountant unchanged.
	p := NewPLD(AddRemove, nil)
	_ = p.ComposePoissonGaussian(0.1, 1, 5)
	if err := p.ComposePoissonGaussian(0.1, -1, 5); err == nil || len(p.Steps) != 1 || p.Steps[0].Steps != 5 {
		t.Errorf("rejected step changed the accountant: %+v", p.Steps)
	}
	// Bad JSON mechanism.
	var s PLDStep
	if err := json.Unmarshal([]byte(`{"mechanism":"laplace"}`), &s); err == nil {
		t.Error("unknown mechanism accepted")
	}
}

// The accountant's state is its steps: it round-trips through JSON and a restored
// accountant gives the same ε; changing the steps directly invalidates the cache.
func TestPLDCheckpointJSON(t *testing.T) {
	p := NewPLD(ReplaceOne, &PLDConfig{Interval: 2e-4})
	_ = p.ComposePoissonGaussian(0.02, 1.1, 300)
	_ = p.ComposeUniformGaussian(0.01, 2, 100)
	_ = p.ComposeGaussian(8, 2)
	e1, err := p.Epsilon(1e-6)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{`"adjacency":"replace-one"`, `"mechanism":"uniform-gaussian"`, `"interval":0.0002`} {
		if !strings.Contains(string(b), k) {
			t.Errorf("JSON %s lacks %s", b, k)
		}
	}
	var r PLD
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	e2, err := r.Epsilon(1e-6)
	if err != nil || e1 != e2 {
		t.Errorf("restored ε %+v (%v), original %+v", e2, err, e1)
	}
	r.Steps = r.Steps[:1]
	e3, _ := r.Epsilon(1e-6)
	if !(e3.Upper < e2.Upper) {
		t.Errorf("changing Steps did not change ε: %+v vs %+v", e3, e2)
	}
}

// Required speed: T = 10 000 identical steps (q = 0.01, σ = 1) well under a second;
// asserted with a generous 3 s bound for loaded machines.
func TestPLDSpeed(t *testing.T) {
	start := time.Now()
	e, err := pldEpsilon(AddRemove, SamplingPoisson, sampledGaussianRun{Q: 0.01, Sigma: 1, Steps: 10000, Delta: 1e-5}, nil)
	el := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("T = 10 000: ε ∈ [%.5f, %.5f] in %v", e.Lower, e.Upper, el)
	if el > 3*time.Second {
		t.Errorf("T = 10 000 took %v", el)
	}
}

func BenchmarkPLDEpsilon10k(b *testing.B) {
	for range b.N {
		if _, err := pldEpsilon(AddRemove, SamplingPoisson, sampledGaussianRun{Q: 0.01, Sigma: 1, Steps: 10000, Delta: 1e-5}, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// pldEpsilon is the one-call PLD accountant: run.Steps steps of DP-SGD with
// sampling s (SamplingPoisson or SamplingUniform; uniform needs ReplaceOne) at rate
// run.Q and noise multiplier run.Sigma, converted to ε at run.Delta. For shuffled
// batches no subsampled PLD is exact: compose one Gaussian per epoch with
// (*PLD).ComposeGaussian.
func pldEpsilon(adj Adjacency, s Sampling, run sampledGaussianRun, cfg *PLDConfig) (EpsilonBounds, error) {
	q, sigma, steps, delta := run.Q, run.Sigma, run.Steps, run.Delta
	p := NewPLD(adj, cfg)
	var err error
	switch s {
	case SamplingPoisson:
		err = p.ComposePoissonGaussian(q, sigma, steps)
	case SamplingUniform:
		err = p.ComposeUniformGaussian(q, sigma, steps)
	case SamplingShuffle:
		err = errors.New("shuffled batches have no subsampled PLD: account one Gaussian release per epoch with ComposeGaussian")
	default:
		err = fmt.Errorf("invalid sampling %d", int(s))
	}
	if err != nil {
		return EpsilonBounds{}, err
	}
	return p.Epsilon(delta)
}
