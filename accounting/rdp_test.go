package accounting

import (
	"fmt"
	"math"
	"testing"

	"gonum.org/v1/gonum/integrate/quad"
)

// refRDP computes the one-step RDP of the sampled Gaussian mechanism by numerical
// integration of its defining integral A_α = E_{z∼N(0,σ²)}[(μ(z)/ν(z))^α] with
// μ/ν = 1 − q + q·exp((2z−1)/(2σ²)), using gonum's Gauss–Legendre quadrature over
// panels covering [−16σ, α + 16σ] (the integrand peaks in [0, α] and has Gaussian
// tails). Small values integrate A_α − 1 directly (no cancellation); large ones
// integrate exp(log f − max log f).
func refRDP(q, sigma, alpha float64) float64 {
	logRatio := func(z float64) float64 {
		x := (2*z - 1) / (2 * sigma * sigma)
		if q == 1 {
			return x
		}
		if x > 30 {
			return x + math.Log(q) + math.Log1p((1-q)*math.Exp(-x)/q)
		}
		return math.Log1p(q * math.Expm1(x))
	}
	logPhi := func(z float64) float64 {
		return -z*z/(2*sigma*sigma) - math.Log(sigma*math.Sqrt(2*math.Pi))
	}
	lo, hi := -16*sigma, alpha+16*sigma
	const panels = 400
	integrate := func(f func(float64) float64) float64 {
		w := (hi - lo) / panels
		s := 0.0
		for p := 0; p < panels; p++ {
			s += quad.Fixed(f, lo+float64(p)*w, lo+float64(p+1)*w, 30, quad.Legendre{}, 0)
		}
		return s
	}
	// Largest exponent of ratio^α on the range.
	maxLR := math.Inf(-1)
	for k := 0; k <= 20000; k++ {
		z := lo + (hi-lo)*float64(k)/20000
		maxLR = math.Max(maxLR, alpha*logRatio(z))
	}
	if maxLR < 50 {
		am1 := integrate(func(z float64) float64 {
			return math.Exp(logPhi(z)) * math.Expm1(alpha*logRatio(z))
		})
		return math.Log1p(am1) / (alpha - 1)
	}
	m := math.Inf(-1)
	for k := 0; k <= 20000; k++ {
		z := lo + (hi-lo)*float64(k)/20000
		m = math.Max(m, logPhi(z)+alpha*logRatio(z))
	}
	a := integrate(func(z float64) float64 { return math.Exp(logPhi(z) + alpha*logRatio(z) - m) })
	return (m + math.Log(a)) / (alpha - 1)
}

func TestSampledGaussianRDPAgainstQuadrature(t *testing.T) {
	qs := []float64{1e-4, 1e-2, 0.1, 0.5, 1}
	sigmas := []float64{0.3, 1, 5, 20}
	orders := []float64{1.1, 1.5, 2, 2.5, 3, 4.75, 8, 12.3, 32}
	worst := 0.0
	for _, q := range qs {
		for _, s := range sigmas {
			for _, a := range orders {
				t.Run(fmt.Sprintf("q=%g/sigma=%g/alpha=%g", q, s, a), func(t *testing.T) {
					single, err := SampledGaussianRDP(q, s, a)
					if err != nil {
						t.Fatal(err)
					}
					batch, err := StepRDP(q, s, []float64{1.5, a})
					if err != nil {
						t.Fatal(err)
					}
					want := refRDP(q, s, a)
					// Both code paths: single-order series and the shared-table batch.
					for _, got := range []float64{single, batch[1]} {
						rel := math.Abs(got-want) / math.Max(math.Abs(want), 1e-300)
						if rel > worst {
							worst = rel
						}
						// Stated accuracy: relative error ≤ 1e-7, or an absolute error
						// of log A_α = (α−1)·RDP below 2e-15 (log-space summation).
						if rel > 1e-7 && (a-1)*math.Abs(got-want) > 2e-15 {
							t.Errorf("RDP = %.15g, quadrature %.15g, rel. error %.3g", got, want, rel)
						}
					}
				})
			}
		}
	}
	t.Logf("worst relative error vs quadrature: %.3g", worst)
}

func TestSampledGaussianRDPLargeOrders(t *testing.T) {
	// Large integer and fractional orders (overflow territory for a naive sum)
	// against the quadrature reference.
	for _, q := range []float64{1e-4, 0.01, 0.1} {
		for _, s := range []float64{1, 5} {
			for _, a := range []float64{128, 300.5, 1024} {
				got, err := SampledGaussianRDP(q, s, a)
				if err != nil {
					t.Fatal(err)
				}
				batch, _ := StepRDP(q, s, []float64{a})
				want := refRDP(q, s, a)
				for _, g := range []float64{got, batch[0]} {
					if rel := math.Abs(g-want) / want; rel > 1e-7 && (a-1)*math.Abs(g-want) > 2e-15 {
						t.Errorf("q=%g σ=%g α=%g: RDP %.15g, quadrature %.15g (rel %.2g)", q, s, a, g, want, rel)
					}
				}
			}
		}
	}
}

func TestSampledGaussianRDPSpecialCases(t *testing.T) {
	tests := []struct {
		name           string
		q, sigma, a, w float64
	}{
		{"q=1 closed form", 1, 0.7, 3.5, 3.5 / (2 * 0.49)},
		{"q=1 large order", 1, 2, 1024, 1024.0 / 8},
		{"q=0", 0, 0.5, 7.3, 0},
		{"tiny q large order", 1e-12, 1, 1024, -1}, // finite, no overflow
		{"small sigma large order", 0.01, 0.2, 1024, -1},
		{"fractional large order", 0.05, 0.8, 200.5, -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SampledGaussianRDP(tc.q, tc.sigma, tc.a)
			if err != nil {
				t.Fatal(err)
			}
			if math.IsNaN(got) || math.IsInf(got, 0) || got < 0 {
				t.Fatalf("RDP = %v, want finite ≥ 0", got)
			}
			if tc.w >= 0 && math.Abs(got-tc.w) > 1e-12*tc.w {
				t.Errorf("RDP = %v, want %v", got, tc.w)
			}
			// Never more than the un-subsampled Gaussian α/(2σ²).
			if full := tc.a / (2 * tc.sigma * tc.sigma); got > full*(1+1e-12) {
				t.Errorf("RDP %v exceeds the q=1 value %v", got, full)
			}
		})
	}
}

func TestSampledGaussianRDPFractionalMatchesIntegerSeries(t *testing.T) {
	// The two expansions are independent code paths: the fractional series at an
	// integer order must equal the binomial sum.
	for _, q := range []float64{1e-3, 0.02, 0.3} {
		for _, s := range []float64{0.5, 1, 4} {
			for _, a := range []int{2, 3, 7, 20} {
				fr, err := logAFrac(q, s, float64(a))
				if err != nil {
					t.Fatal(err)
				}
				in := logAInt(q, s, a)
				if math.Abs(fr-in) > 1e-10*math.Max(1e-6, math.Abs(in)) {
					t.Errorf("q=%g σ=%g α=%d: frac %.15g vs int %.15g", q, s, a, fr, in)
				}
			}
		}
	}
}

func TestStepRDPMatchesSingleOrder(t *testing.T) {
	// The shared-table batch path against the single-order series at the default
	// orders, large integer orders and fractional orders beyond the defaults.
	orders := append(DefaultOrders(), 100.5, 333.3, 2000, 5000)
	for _, q := range []float64{1e-5, 0.004, 0.1, 0.7} {
		for _, s := range []float64{0.4, 1.1, 3, 30} {
			batch, err := StepRDP(q, s, orders)
			if err != nil {
				t.Fatal(err)
			}
			for k, a := range orders {
				single, err := SampledGaussianRDP(q, s, a)
				if err != nil {
					t.Fatal(err)
				}
				if d := math.Abs(batch[k] - single); d > 1e-8*single && (a-1)*d > 1e-14 {
					t.Errorf("q=%g σ=%g α=%g: batch %.15g single %.15g", q, s, a, batch[k], single)
				}
			}
		}
	}
}

func TestQuadratureFallback(t *testing.T) {
	// Near q = 1/2 the erfc series converges only polynomially and the production
	// quadrature (logAQuad) takes over. Check it against the exact binomial sum at
	// integer orders in that regime, and that fractional values sit between the
	// neighbouring integer orders (RDP is non-decreasing in α).
	for _, q := range []float64{0.3, 0.5, 0.7} {
		for _, s := range []float64{0.3, 1, 20, 3000} {
			for _, a := range []int{2, 3, 10, 64} {
				lq, err := logAQuad(q, s, float64(a))
				if err != nil {
					t.Fatal(err)
				}
				li := logAInt(q, s, a)
				if math.Abs(lq-li) > 1e-9*math.Abs(li) && math.Abs(lq-li) > 2e-15 {
					t.Errorf("q=%g σ=%g α=%d: quadrature %.15g, binomial %.15g", q, s, a, lq, li)
				}
			}
			prev := 0.0
			for _, a := range []float64{1.01, 1.1, 1.5, 2, 2.5, 3} {
				v, err := SampledGaussianRDP(q, s, a)
				if err != nil {
					t.Fatal(err)
				}
				if v < prev*(1-1e-9) {
					t.Errorf("q=%g σ=%g: RDP decreases at α=%g (%v < %v)", q, s, a, v, prev)
				}
				prev = v
			}
		}
	}
}

func TestSampledGaussianRDPMonotone(t *testing.T) {
	// RDP is non-decreasing in the order, in q and non-increasing in σ.
	prev := 0.0
	for _, a := range DefaultOrders() {
		v, err := SampledGaussianRDP(0.01, 1.1, a)
		if err != nil {
			t.Fatal(err)
		}
		if v < prev*(1-1e-12) {
			t.Fatalf("RDP decreased at order %v: %v < %v", a, v, prev)
		}
		prev = v
	}
	prev = 0
	for _, q := range []float64{1e-4, 1e-3, 1e-2, 0.1, 0.5, 0.9, 1} {
		v, _ := SampledGaussianRDP(q, 1, 8)
		if v < prev {
			t.Fatalf("RDP decreased in q at %v", q)
		}
		prev = v
	}
	prev = math.Inf(1)
	for _, s := range []float64{0.3, 0.5, 1, 2, 5, 20} {
		v, _ := SampledGaussianRDP(0.05, s, 8)
		if v > prev {
			t.Fatalf("RDP increased in sigma at %v", s)
		}
		prev = v
	}
}

func TestSampledGaussianRDPErrors(t *testing.T) {
	tests := []struct {
		name    string
		q, s, a float64
	}{
		{"q<0", -0.1, 1, 2}, {"q>1", 1.5, 1, 2}, {"q NaN", math.NaN(), 1, 2},
		{"sigma 0", 0.1, 0, 2}, {"sigma<0", 0.1, -1, 2}, {"sigma Inf", 0.1, math.Inf(1), 2},
		{"alpha 1", 0.1, 1, 1}, {"sigma underflow q=1", 1, 1e-200, 2}, {"sigma underflow", 0.1, 1e-200, 2.5}, {"alpha NaN", 0.1, 1, math.NaN()}, {"alpha Inf", 0.1, 1, math.Inf(1)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := SampledGaussianRDP(tc.q, tc.s, tc.a); err == nil {
				t.Error("want an error")
			}
		})
	}
}

func TestRDPComposeHeterogeneous(t *testing.T) {
	orders := []float64{1.5, 2, 3.25, 16}
	r := NewRDP(orders)
	segs := []Step{{0.01, 1.1, 100}, {0.02, 0.9, 50}, {0.01, 1.1, 25}, {1, 3, 2}}
	for _, s := range segs {
		if err := r.Compose(s.Q, s.Sigma, s.Steps); err != nil {
			t.Fatal(err)
		}
	}
	r2 := NewRDP(orders)
	if err := r2.ComposeSchedule(segs); err != nil {
		t.Fatal(err)
	}
	for k, a := range orders {
		want := 0.0
		for _, s := range segs {
			v, _ := SampledGaussianRDP(s.Q, s.Sigma, a)
			want += float64(s.Steps) * v
		}
		if math.Abs(r.Values[k]-want) > 1e-9*want || math.Abs(r2.Values[k]-want) > 1e-9*want {
			t.Errorf("order %v: Compose %v, ComposeSchedule %v, want %v", a, r.Values[k], r2.Values[k], want)
		}
	}
	v2, err := r.At(2)
	if err != nil || v2 != r.Values[1] {
		t.Errorf("At(2) = %v, %v", v2, err)
	}
	if _, err := r.At(5); err == nil {
		t.Error("At of a missing order: want an error")
	}
	if err := r.Compose(0.1, 1, -1); err == nil {
		t.Error("negative steps: want an error")
	}
	if err := r.Compose(2, 1, 1); err == nil {
		t.Error("q=2: want an error")
	}
	if err := NewRDP([]float64{0.5}).Compose(0.1, 1, 1); err == nil {
		t.Error("order 0.5: want an error")
	}
}

func TestEpsilonConversions(t *testing.T) {
	// q = 1: RDP(α) = Tα/(2σ²); the classic conversion has the closed-form optimum
	// ε = T/(2σ²) + √(2T log(1/δ))/σ at α* = 1 + σ√(2 log(1/δ)/T) (for orders on a
	// fine grid the minimum is close to it).
	const sigma, T, delta = 5.0, 10, 1e-5
	var orders []float64
	for a := 1.01; a < 200; a += 0.01 {
		orders = append(orders, a)
	}
	r := NewRDP(orders)
	if err := r.Compose(1, sigma, T); err != nil {
		t.Fatal(err)
	}
	eps, _, err := r.Epsilon(delta, ConversionClassic)
	if err != nil {
		t.Fatal(err)
	}
	want := T/(2*sigma*sigma) + math.Sqrt(2*T*math.Log(1/delta))/sigma
	if math.Abs(eps-want) > 1e-4*want {
		t.Errorf("classic ε = %v, want %v", eps, want)
	}
	// The improved conversion is never worse than the classic one at the same order.
	epsI, ordI, err := r.Epsilon(delta, ConversionImproved)
	if err != nil {
		t.Fatal(err)
	}
	if epsI > eps {
		t.Errorf("improved ε %v > classic %v", epsI, eps)
	}
	v, _ := r.At(ordI)
	if w := v + math.Log1p(-1/ordI) - (math.Log(delta)+math.Log(ordI))/(ordI-1); math.Abs(w-epsI) > 1e-12 {
		t.Errorf("improved ε %v does not match its formula %v at order %v", epsI, w, ordI)
	}
	// No leakage gives ε = 0 with the improved conversion (dp_accounting's KL rule).
	z := NewRDP(nil)
	if e, _, err := z.Epsilon(1e-5, ConversionImproved); err != nil || e != 0 {
		t.Errorf("zero RDP: ε = %v, %v", e, err)
	}
	for _, d := range []float64{0, 1, -1, math.NaN()} {
		if _, _, err := r.Epsilon(d, ConversionImproved); err == nil {
			t.Errorf("delta %v: want an error", d)
		}
	}
	if _, _, err := r.Epsilon(1e-5, Conversion(7)); err == nil {
		t.Error("unknown conversion: want an error")
	}
}

func TestSigmaForEpsilon(t *testing.T) {
	tests := []struct {
		q      float64
		steps  int
		target float64
	}{
		{256.0 / 60000, 14060, 2}, {0.01, 1000, 1}, {1, 10, 5}, {0.1, 100, 8},
	}
	for _, tc := range tests {
		s, err := sigmaForEpsilon(sampledGaussianRun{Q: tc.q, Steps: tc.steps, Delta: 1e-5}, tc.target, nil, ConversionImproved)
		if err != nil {
			t.Fatal(err)
		}
		e, _, err := epsilonFor(sampledGaussianRun{Q: tc.q, Sigma: s, Steps: tc.steps, Delta: 1e-5}, nil, ConversionImproved)
		if err != nil {
			t.Fatal(err)
		}
		if e > tc.target {
			t.Errorf("q=%v: σ=%v gives ε=%v > target %v", tc.q, s, e, tc.target)
		}
		e2, _, _ := epsilonFor(sampledGaussianRun{Q: tc.q, Sigma: s * (1 - 2e-6), Steps: tc.steps, Delta: 1e-5}, nil, ConversionImproved)
		if e2 <= tc.target {
			t.Errorf("q=%v: σ=%v is not minimal to 1e-6 (ε at 0.999998σ = %v)", tc.q, s, e2)
		}
	}
	for _, bad := range []struct {
		q        float64
		steps    int
		delta, e float64
	}{{0, 10, 1e-5, 1}, {0.1, 0, 1e-5, 1}, {0.1, 10, 0, 1}, {0.1, 10, 1e-5, -1}, {0.1, 10, 1e-5, math.Inf(1)}} {
		if _, err := sigmaForEpsilon(sampledGaussianRun{Q: bad.q, Steps: bad.steps, Delta: bad.delta}, bad.e, nil, ConversionImproved); err == nil {
			t.Errorf("%+v: want an error", bad)
		}
	}
}

func TestEpsilonMatchesTFPrivacyTutorial(t *testing.T) {
	// TF Privacy's MNIST tutorial (compute_dp_sgd_privacy, classic conversion, orders
	// 1.1…11 step 0.1 and 12…63) reports ε = 3.01 at δ = 1e-5 for q = 256/60000,
	// σ = 1.1, 14062 steps, optimal order 8.8.
	var o []float64
	for x := 1; x <= 100; x++ {
		o = append(o, 1+float64(x)/10)
	}
	for x := 12; x < 64; x++ {
		o = append(o, float64(x))
	}
	eps, order, err := epsilonFor(sampledGaussianRun{Q: 256.0 / 60000, Sigma: 1.1, Steps: 14062, Delta: 1e-5}, o, ConversionClassic)
	if err != nil {
		t.Fatal(err)
	}
	if math.Round(eps*100)/100 != 3.01 || math.Abs(order-8.8) > 1e-9 {
		t.Errorf("ε = %v at order %v, want 3.01 at 8.8", eps, order)
	}
}

func TestDefaultOrders(t *testing.T) {
	o := DefaultOrders()
	if len(o) != 99+53+4 {
		t.Fatalf("%d orders", len(o))
	}
	has2 := false
	for i, a := range o {
		if a == 2 {
			has2 = true
		}
		if i > 0 && a <= o[i-1] {
			t.Fatalf("orders not increasing at %d", i)
		}
	}
	if !has2 || o[0] != 1.1 || o[len(o)-1] != 1024 {
		t.Errorf("orders %v…%v, has 2: %v", o[0], o[len(o)-1], has2)
	}
}
