package accounting

import (
	"math"
	"testing"
)

// The Gauss–Kronrod constants: the 15-point Kronrod rule integrates polynomials of
// degree ≤ 22 exactly, its embedded 7-point Gauss rule those of degree ≤ 13.
func TestGK15Exactness(t *testing.T) {
	for k := 0; k <= 22; k++ {
		f := func(x float64) float64 { return math.Pow(x, float64(k)) }
		v, e := gk15(f, -1, 1)
		want := 0.0
		if k%2 == 0 {
			want = 2 / float64(k+1)
		}
		if math.Abs(v-want) > 1e-14 {
			t.Errorf("x^%d: Kronrod %v, want %v", k, v, want)
		}
		if k <= 13 && e > 1e-14 {
			t.Errorf("x^%d: |Kronrod − Gauss| = %v, want 0 (Gauss 7 is exact to degree 13)", k, e)
		}
	}
	// An affine map of the interval: ∫_0^3 x^5 = 3^6/6.
	if v, _ := gk15(func(x float64) float64 { return math.Pow(x, 5) }, 0, 3); math.Abs(v-121.5) > 1e-12 {
		t.Errorf("∫_0^3 x^5 = %v, want 121.5", v)
	}
}

// trapezoidChi2 is an independent reference: ∫P²/Q − 1 for the antipodal pair by
// the trapezoid rule on a fine grid, with the densities written out directly.
func trapezoidChi2(q, sigma float64, reverse bool) float64 {
	m := 1 / sigma
	phi := func(x, mean float64) float64 { return math.Exp(-(x-mean)*(x-mean)/2) / math.Sqrt(2*math.Pi) }
	const h = 1e-3
	lo, hi := -3*m-30, 3*m+30
	n := int((hi - lo) / h)
	var s float64
	for i := 0; i <= n; i++ {
		x := lo + float64(i)*h
		p := (1-q)*phi(x, 0) + q*phi(x, m)
		qq := (1-q)*phi(x, 0) + q*phi(x, -m)
		if reverse {
			p, qq = qq, p
		}
		w := 1.0
		if i == 0 || i == n {
			w = 0.5
		}
		s += w * p * p / qq
	}
	return s*h - 1
}

func TestOrder2AntipodalAgainstTrapezoid(t *testing.T) {
	for _, sigma := range []float64{0.5, 0.8, 1, 2} {
		for _, q := range []float64{0.01, 0.1, 0.5, 0.9, 0.999} {
			for _, rev := range []bool{false, true} {
				got, err := order2Antipodal(q, sigma, rev)
				if err != nil {
					t.Fatal(err)
				}
				want := trapezoidChi2(q, sigma, rev)
				if chi2 := math.Expm1(got); math.Abs(chi2-want) > 1e-7*want {
					t.Errorf("q=%v σ=%v reverse=%v: χ² %.12g, trapezoid %.12g", q, sigma, rev, chi2, want)
				}
			}
			fwd, _ := order2Antipodal(q, sigma, false)
			rev, _ := order2Antipodal(q, sigma, true)
			if math.Abs(fwd-rev) > 1e-10*fwd {
				t.Errorf("q=%v σ=%v: D₂(P‖Q) = %v ≠ D₂(Q‖P) = %v", q, sigma, fwd, rev)
			}
		}
	}
}

func TestOrder2AntipodalLimits(t *testing.T) {
	for _, sigma := range []float64{0.3, 0.7, 1, 3, 10} {
		x := 1 / (sigma * sigma)
		// q → 1 (quadrature path): two Gaussians 2/σ apart, D₂ = 2·(2/σ)²/2 = 4/σ².
		// (At small σ the 1e-12 weight of N(0, σ²) in Q still matters near x = 3/σ,
		// where it exceeds N(−1/σ, ·) by e^{3.5/σ²}: the limit is checked for σ ≥ 0.7.)
		if got, _ := Order2AntipodalStep(1-1e-12, sigma); sigma >= 0.7 && math.Abs(got-4*x) > 1e-8*4*x {
			t.Errorf("σ=%v, q=1−1e-12: %v, want 4/σ² = %v", sigma, got, 4*x)
		}
		if got, _ := Order2AntipodalStep(1, sigma); math.Abs(got-4*x) > 1e-15*4*x {
			t.Errorf("σ=%v, q=1: %v, want %v", sigma, got, 4*x)
		}
		// q → 0: χ² = q²∫(φ_m − φ_{−m})²/Q → q²·4 sinh(1/σ²) (the Gaussian identities
		// ∫φ_uφ_v/φ_0 = e^{uv/σ²}); the relative correction is O(q·e^{…}).
		if sigma >= 0.7 {
			const q = 1e-6
			got, _ := Order2AntipodalStep(q, sigma)
			want := q * q * 4 * math.Sinh(x)
			if math.Abs(got-want) > 1e-4*want {
				t.Errorf("σ=%v, q=%v: %v, want q²·4 sinh(1/σ²) = %v", sigma, q, got, want)
			}
		}
	}
	if got, _ := Order2AntipodalStep(0, 1); got != 0 {
		t.Errorf("q = 0: %v, want 0", got)
	}
	for _, bad := range [][2]float64{{-0.1, 1}, {1.1, 1}, {0.5, 0}, {0.5, math.NaN()}, {math.Inf(1), 1}} {
		if _, err := Order2AntipodalStep(bad[0], bad[1]); err == nil {
			t.Errorf("q=%v σ=%v: no error", bad[0], bad[1])
		}
	}
}

// The exact value of one pair never exceeds the proven bound over all pairs.
func TestOrder2AntipodalBelowProvenBound(t *testing.T) {
	for _, sigma := range []float64{0.2, 0.5, 1, 2, 5} {
		for _, q := range []float64{1e-4, 0.01, 0.1, 0.5, 0.9, 1} {
			exact, err := Order2AntipodalStep(q, sigma)
			if err != nil {
				t.Fatal(err)
			}
			bound, _ := Order2StepRDP(ReplaceOne, SamplingPoisson, q, sigma)
			if exact > bound*(1+1e-12) {
				t.Errorf("q=%v σ=%v: exact %v above the proven bound %v", q, sigma, exact, bound)
			}
		}
	}
}

// Issue 27: at q = 0.01, σ = 0.5, T = 1000 (hard clipping) Theorem 1's proven ε₂ is
// 10.97 and the antipodal pair's exact value 7.13, so the MSE bound from the proven
// ε₂ is 47× below the one the exact value would give.
func TestOrder2AntipodalIssueNumbers(t *testing.T) {
	ev := SelfComposedEvent{Event: PoissonSampledEvent{Q: 0.01, Event: GaussianEvent{NoiseMultiplier: 0.5}}, Count: 1000}
	t1, err := Theorem1Of(ev)
	if err != nil {
		t.Fatal(err)
	}
	if math.Round(t1.RDPOrder2*100) != 1097 {
		t.Errorf("proven ε₂ = %v, want 10.97", t1.RDPOrder2)
	}
	if t1.RDPOrder2Antipodal == nil || math.Round(*t1.RDPOrder2Antipodal*100) != 713 {
		t.Fatalf("antipodal ε₂ = %v, want 7.13", t1.RDPOrder2Antipodal)
	}
	if r := MSEBoundRDP(*t1.RDPOrder2Antipodal) / t1.MSEBoundRDP; math.Round(r) != 47 {
		t.Errorf("MSE bound ratio %v, want 47", r)
	}
	if t1.MSEBoundRDPAntipodal == nil || *t1.MSEBoundRDPAntipodal != MSEBoundRDP(*t1.RDPOrder2Antipodal) {
		t.Errorf("antipodal MSE bound %v", t1.MSEBoundRDPAntipodal)
	}
	// Composition is additive, per (q, σ) segment, and a shuffled epoch is a Gaussian.
	mix := ComposedEvent{Events: []Event{ev, SelfComposedEvent{Event: ShuffledEpochEvent{Q: 0.1, Steps: 10, Event: GaussianEvent{NoiseMultiplier: 2}}, Count: 3}}}
	got, err := Order2AntipodalOf(mix)
	if err != nil {
		t.Fatal(err)
	}
	step, _ := Order2AntipodalStep(0.01, 0.5)
	if want := 1000*step + 3*4/4.0; math.Abs(got-want) > 1e-12*want {
		t.Errorf("composed %v, want %v", got, want)
	}
}
