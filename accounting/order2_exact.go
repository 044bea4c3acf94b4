package accounting

import (
	"errors"
	"fmt"
	"math"
)

// Exact order-2 Rényi divergence of the antipodal replace-one pair.
//
// Under replace-one adjacency, one sampled step with clipped gradients a (record z)
// and b (record z′) and every other record's gradient 0 releases
// P = (1−q)N(0, σ²I) + qN(a, σ²I) against Q = (1−q)N(0, σ²I) + qN(b, σ²I). The
// antipodal pair a = −b, ‖a‖ = 1 is the natural worst case (it maximises the
// proven bound of Order2StepRDP), but it is not proven to be the worst case for the
// exact divergence, so its value is reported beside the proven bound, never in its
// place. In units of the noise (x ∼ N(·, 1), m = 1/σ) and on the line through ±a,
//
//	χ²(P‖Q) = ∫P²/Q − 1 = q² ∫ (φ_m − φ_{−m})² / Q,   D₂ = log(1 + χ²),
//
// and φ_m − φ_{−m} = 2 sinh(mx)·e^{−(x²+m²)/2}/√(2π), so the integrand is positive
// and free of cancellation. It has no closed form (a mixture in the denominator) and
// is integrated by adaptive Gauss–Kronrod (7/15) quadrature in log-scaled form.

// Order2AntipodalStep returns the exact order-2 Rényi divergence D₂(P‖Q) of one
// sampled Gaussian step for the antipodal replace-one pair (clipped gradients u and
// −u with ‖u‖ = 1, all other records' gradients 0): P = (1−q)N(0, σ²) + qN(1, σ²),
// Q = (1−q)N(0, σ²) + qN(−1, σ²), with sigma the noise multiplier relative to the
// per-record bound (σ/c with smooth clipping). The pair is the same for Poisson
// sampling and for fixed-size batches drawn without replacement (the differing
// record's slot is in the batch with probability q). D₂(Q‖P) is equal by the
// symmetry x → −x. Relative accuracy about 1e-10 (adaptive quadrature, tested
// against a fine trapezoid rule and the closed forms at q = 1 and q → 0).
func Order2AntipodalStep(q, sigma float64) (float64, error) {
	return order2Antipodal(q, sigma, false)
}

// order2Antipodal is Order2AntipodalStep; reverse computes D₂(Q‖P) instead.
func order2Antipodal(q, sigma float64, reverse bool) (float64, error) {
	if err := checkQSigma(q, sigma); err != nil {
		return 0, err
	}
	if q == 0 {
		return 0, nil
	}
	m := 1 / sigma
	if math.IsInf(m, 0) || 4*m*m > 1e300 {
		return 0, fmt.Errorf("exact order-2 RDP: σ = %v is too small (1/σ² overflows)", sigma)
	}
	if q == 1 { // two Gaussians 2m apart: D₂ = 2·(2m)²/2
		return 4 * m * m, nil
	}
	lq, l1q := math.Log(q), math.Log1p(-q)
	// log of (φ_m − φ_{−m})²/den, up to the constant −log √(2π); den = Q (or P).
	sign := 1.0
	if reverse {
		sign = -1
	}
	logH := func(x float64) float64 {
		y := math.Abs(m * x)
		if y == 0 {
			return math.Inf(-1)
		}
		var ls float64 // log(2 sinh y)
		if y > 20 {
			ls = y + math.Log1p(-math.Exp(-2*y))
		} else {
			ls = math.Log(2 * math.Sinh(y))
		}
		d := x + sign*m
		den := logAdd(l1q-x*x/2, lq-d*d/2)
		return 2*(ls-(x*x+m*m)/2) - den
	}
	// The integrand is below e^{−(|x|−2m)²/2 + m²} and peaks (width ≈ 1) near ±2m: the
	// range ±(3m + 60) leaves out less than e^{−1800} of it; panels of width 0.5
	// cannot step over a peak.
	logI, err := logIntegrate(logH, -3*m-60, 3*m+60, 0.5)
	if err != nil {
		return 0, fmt.Errorf("exact order-2 RDP (q = %v, σ = %v): %w", q, sigma, err)
	}
	logChi2 := 2*lq - 0.5*math.Log(2*math.Pi) + logI
	return log1pExp(logChi2), nil
}

// logIntegrate returns log ∫_a^b exp(f(x)) dx for a smooth log-integrand f that is
// negligible (below its maximum by more than 700) at a and b and has no feature
// narrower than width: the maximum M of f on a grid scales the integrand, exp(f − M)
// is integrated by globally adaptive Gauss–Kronrod 7/15 quadrature, starting from
// panels of that width, to a relative error of 1e-13, and M is added back.
func logIntegrate(f func(float64) float64, a, b, width float64) (float64, error) {
	n := int(math.Ceil((b - a) / width))
	if n > 1<<17 {
		return 0, fmt.Errorf("range [%g, %g] needs %d panels (more than %d)", a, b, n, 1<<17)
	}
	n = max(n, 64)
	grid := 4 * n
	mx := math.Inf(-1)
	for i := 0; i <= grid; i++ {
		if v := f(a + (b-a)*float64(i)/float64(grid)); v > mx {
			mx = v
		}
	}
	if math.IsInf(mx, -1) || math.IsNaN(mx) {
		return 0, errors.New("integrand is zero or undefined on the grid")
	}
	if f(a)-mx > -700 || f(b)-mx > -700 {
		return 0, errors.New("integrand not negligible at the ends of the range")
	}
	g := func(x float64) float64 { return math.Exp(f(x) - mx) }
	v, err := adaptiveGK(g, a, b, n, 1e-13)
	if err != nil {
		return 0, err
	}
	if !(v > 0) {
		return 0, fmt.Errorf("quadrature gave %v", v)
	}
	return mx + math.Log(v), nil
}

// Gauss–Kronrod 7/15 nodes on [−1, 1] (the positive half, the centre last) and
// weights: xgk[1], xgk[3], xgk[5], xgk[7] are the Gauss–Legendre 7-point nodes with
// weights wg.
var (
	xgk = [8]float64{
		0.991455371120812639206854697526329, 0.949107912342758524526189684047851,
		0.864864423359769072789712788640926, 0.741531185599394439863864773280788,
		0.586087235467691130294144845693013, 0.405845151377397166906606412076961,
		0.207784955007898467600689403773245, 0,
	}
	wgk = [8]float64{
		0.022935322010529224963732008058970, 0.063092092629978553290700663189204,
		0.104790010322250183839876322541518, 0.140653259715525918745189590510238,
		0.169004726639267902826583426598550, 0.190350578064785409913256402421014,
		0.204432940075298892414161999234649, 0.209482141084727828012999174891714,
	}
	wg = [4]float64{
		0.129484966168869693270611432679082, 0.279705391489276667901467771423780,
		0.381830050505118944950369775488975, 0.417959183673469387755102040816327,
	}
)

// gk15 returns the Kronrod estimate of ∫_a^b f and |Kronrod − Gauss|.
func gk15(f func(float64) float64, a, b float64) (k, e float64) {
	c, h := (a+b)/2, (b-a)/2
	fc := f(c)
	kr, ga := wgk[7]*fc, wg[3]*fc
	for i := 0; i < 7; i++ {
		s := f(c-h*xgk[i]) + f(c+h*xgk[i])
		kr += wgk[i] * s
		if i%2 == 1 {
			ga += wg[i/2] * s
		}
	}
	return kr * h, math.Abs((kr - ga) * h)
}

// adaptiveGK integrates f over [a, b], split first into n equal panels, by passes
// that bisect every panel whose error estimate exceeds its share of the target,
// until the summed estimate is below rel times the integral.
func adaptiveGK(f func(float64) float64, a, b float64, n int, rel float64) (float64, error) {
	type panel struct{ a, b, v, e float64 }
	ps := make([]panel, 0, 2*n)
	for i := 0; i < n; i++ {
		lo, hi := a+(b-a)*float64(i)/float64(n), a+(b-a)*float64(i+1)/float64(n)
		v, e := gk15(f, lo, hi)
		ps = append(ps, panel{lo, hi, v, e})
	}
	for pass := 0; pass < 60; pass++ {
		var tot, errSum float64
		for _, p := range ps {
			tot += p.v
			errSum += p.e
		}
		target := rel * math.Abs(tot)
		if errSum <= target || errSum < 1e-300 {
			return tot, nil
		}
		share := target / float64(len(ps))
		next := ps[:0:0]
		for _, p := range ps {
			mid := (p.a + p.b) / 2
			if p.e <= share || mid <= p.a || mid >= p.b {
				next = append(next, p)
				continue
			}
			v1, e1 := gk15(f, p.a, mid)
			v2, e2 := gk15(f, mid, p.b)
			next = append(next, panel{p.a, mid, v1, e1}, panel{mid, p.b, v2, e2})
		}
		if len(next) > 1<<21 {
			break
		}
		ps = next
	}
	return 0, errors.New("adaptive quadrature did not reach its tolerance")
}

// Order2AntipodalOf returns the exact order-2 Rényi divergence of the whole run ev
// for the antipodal replace-one pair (Order2AntipodalStep per sampled step, composed
// additively; a shuffled epoch, which holds the record in exactly one batch, and an
// unsampled Gaussian release are N(u, σ²) against N(−u, σ²): 4/σ²). It is the
// divergence of one pair of neighbouring datasets, not a proven bound over all pairs.
func Order2AntipodalOf(ev Event) (float64, error) {
	cache := map[[2]float64]float64{}
	var walk func(e Event, count float64) (float64, error)
	step := func(q, nm, count float64) (float64, error) {
		k := [2]float64{q, nm}
		v, ok := cache[k]
		if !ok {
			var err error
			if v, err = Order2AntipodalStep(q, nm); err != nil {
				return 0, err
			}
			cache[k] = v
		}
		return count * v, nil
	}
	walk = func(e Event, count float64) (float64, error) {
		switch x := e.(type) {
		case GaussianEvent:
			return step(1, x.NoiseMultiplier, count)
		case PoissonSampledEvent:
			return step(x.Q, x.Event.NoiseMultiplier, count)
		case SampledWithoutReplacementEvent:
			return step(x.Q, x.Event.NoiseMultiplier, count)
		case ShuffledEpochEvent:
			return step(1, x.Event.NoiseMultiplier, count)
		case SelfComposedEvent:
			return walk(x.Event, count*float64(x.Count))
		case ComposedEvent:
			var s float64
			for _, y := range x.Events {
				v, err := walk(y, count)
				if err != nil {
					return 0, err
				}
				s += v
			}
			return s, nil
		}
		return 0, fmt.Errorf("unsupported privacy event %T", e)
	}
	if err := checkEvent(ev); err != nil {
		return 0, err
	}
	return walk(ev, 1)
}
