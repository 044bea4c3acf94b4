package accounting

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/integrate/quad"
)

// logAQuad is log A_α by Gauss–Legendre quadrature of the defining integral
// A_α = E_{z∼N(0,σ²)}[(1 − q + q·e^{(2z−1)/(2σ²)})^α] over [−16σ, α + 16σ] (the
// integrand peaks in [0, α] and has Gaussian tails beyond), in panels of at most σ/2
// with 30 nodes each. It is the fallback for fractional orders whose erfc series
// converges only polynomially (q near 1/2, where the terms decay like i^{−α−1}).
// When α·log r stays below 50 it integrates A_α − 1 (no cancellation for tiny RDP);
// otherwise exp(log f − max log f). Tested against the exact binomial sum at integer
// orders and against the series where the series converges.
func logAQuad(q, sigma, alpha float64) (float64, error) {
	lq, l1q := math.Log(q), math.Log1p(-q)
	inv := 1 / (2 * sigma * sigma)
	if math.IsInf(inv, 0) {
		return 0, fmt.Errorf("quadrature of A_alpha: sigma = %v too small (1/σ² overflows)", sigma)
	}
	logRatio := func(z float64) float64 {
		x := (2*z - 1) * inv
		if x > 30 {
			return x + lq + math.Log1p(math.Exp(l1q-lq-x))
		}
		return math.Log1p(q * math.Expm1(x))
	}
	logNorm := -math.Log(sigma * math.Sqrt(2*math.Pi))
	logPhi := func(z float64) float64 { return -z*z*inv + logNorm }
	lo, hi := -16*sigma, alpha+16*sigma
	panels := int(math.Min(1e6, math.Max(400, math.Ceil(2*(hi-lo)/sigma))))
	w := (hi - lo) / float64(panels)
	integrate := func(f func(float64) float64) float64 {
		s := 0.0
		for p := 0; p < panels; p++ {
			s += quad.Fixed(f, lo+float64(p)*w, lo+float64(p+1)*w, 30, quad.Legendre{}, 0)
		}
		return s
	}
	maxLR, maxLF := math.Inf(-1), math.Inf(-1)
	for k := 0; k <= 4*panels; k++ {
		z := lo + (hi-lo)*float64(k)/float64(4*panels)
		lr := alpha * logRatio(z)
		maxLR = math.Max(maxLR, lr)
		maxLF = math.Max(maxLF, logPhi(z)+lr)
	}
	var logA float64
	if maxLR < 50 {
		am1 := integrate(func(z float64) float64 { return math.Exp(logPhi(z)) * math.Expm1(alpha*logRatio(z)) })
		logA = math.Log1p(am1)
	} else {
		a := integrate(func(z float64) float64 { return math.Exp(logPhi(z) + alpha*logRatio(z) - maxLF) })
		logA = maxLF + math.Log(a)
	}
	if math.IsNaN(logA) || math.IsInf(logA, 0) {
		return 0, fmt.Errorf("quadrature of A_alpha failed (q=%v, sigma=%v, alpha=%v)", q, sigma, alpha)
	}
	return logA, nil
}
