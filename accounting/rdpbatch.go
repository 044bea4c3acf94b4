package accounting

import (
	"errors"
	"fmt"
	"math"
)

// sgmTables evaluates the one-step RDP of the sampled Gaussian mechanism at many
// orders for one (q, σ), sharing everything that does not depend on the order:
// log-factorials, i·log q, log(e^{(i²−i)/(2σ²)} − 1) and the first erfc series term.
// Terms are summed in linear space relative to a running maximum (one exp per term
// instead of exp + log1p). It is the fast path of StepRDP and Compose; the
// single-order functions logAInt and logAFrac are the reference it is tested against.
type sgmTables struct {
	q, sigma      float64
	lq, l1q, inv  float64
	z0, sq2s      float64
	lf            []float64 // lf[k] = log k!
	c, d          []float64 // c[i] = −lf[i] + i·log q + log(e^{(i²−i)/(2σ²)} − 1); d[j] = −lf[j] + j·log(1−q)
	e0            []float64 // log(½·erfc((i − z0)/(√2σ))) + (i²−i)/(2σ²) + i·log q
	logK          []float64 // log k
	maxIntTabled  int
	fracTermsUsed int
}

// maxTabledOrder bounds the integer orders evaluated from the shared tables.
const maxTabledOrder = 1 << 14

func newSGMTables(q, sigma float64) *sgmTables {
	return &sgmTables{q: q, sigma: sigma, lq: math.Log(q), l1q: math.Log1p(-q), inv: 1 / (2 * sigma * sigma),
		z0: sigma*sigma*math.Log(1/q-1) + 0.5, sq2s: math.Sqrt2 * sigma}
}

// growInt extends the integer-series tables to index m.
func (t *sgmTables) growInt(m int) {
	for k := len(t.lf); k <= m; k++ {
		lg, _ := math.Lgamma(float64(k) + 1)
		t.lf = append(t.lf, lg)
		fk := float64(k)
		e := (fk*fk - fk) * t.inv
		var logEm1 float64
		switch {
		case k < 2:
			logEm1 = math.Inf(-1) // e = 0: these terms vanish in A_α − 1
		case e > 30:
			logEm1 = e + math.Log1p(-math.Exp(-e))
		default:
			logEm1 = math.Log(math.Expm1(e))
		}
		t.c = append(t.c, -lg+fk*t.lq+logEm1)
		t.d = append(t.d, -lg+fk*t.l1q)
	}
}

// logAInt is log A_α for integer 2 ≤ α ≤ maxTabledOrder from the tables:
// A_α − 1 = Σ_{i≥2} e^{lf[α] + c[i] + d[α−i]}.
func (t *sgmTables) logAInt(alpha int) float64 {
	t.growInt(alpha)
	c, d := t.c[:alpha+1], t.d[:alpha+1]
	m := math.Inf(-1)
	for i := 2; i <= alpha; i++ {
		m = math.Max(m, c[i]+d[alpha-i])
	}
	s := 0.0
	for i := 2; i <= alpha; i++ {
		s += math.Exp(c[i] + d[alpha-i] - m)
	}
	logAm1 := t.lf[alpha] + m + math.Log(s)
	if logAm1 > 0 {
		return logAm1 + math.Log1p(math.Exp(-logAm1))
	}
	return math.Log1p(math.Exp(logAm1))
}

// growFrac extends the fractional-series tables to index m.
func (t *sgmTables) growFrac(m int) {
	for k := len(t.e0); k <= m; k++ {
		fk := float64(k)
		t.e0 = append(t.e0, math.Log(0.5)+logErfc((fk-t.z0)/t.sq2s)+(fk*fk-fk)*t.inv+fk*t.lq)
		t.logK = append(t.logK, math.Log(fk))
	}
}

// accum is a signed sum of e^{x} terms kept as acc·e^{ref}.
type accum struct{ acc, ref float64 }

func (a *accum) add(sign, x float64) {
	if math.IsInf(x, -1) {
		return
	}
	if a.acc == 0 && a.ref == 0 {
		a.ref = x
	}
	if x > a.ref {
		a.acc *= math.Exp(a.ref - x)
		a.ref = x
	}
	a.acc += sign * math.Exp(x-a.ref)
}

// logAFrac is log A_α for fractional α by the two-series expansion (as logAFrac),
// with shared tables and linear-space accumulation.
func (t *sgmTables) logAFrac(alpha float64) (float64, error) {
	var a0, a1 accum
	logCoef, sign := 0.0, 1.0
	half := math.Log(0.5)
	for i := 0; i < maxFracTerms; i++ {
		if i >= len(t.e0) {
			t.growFrac(2*i + 64)
		}
		fi := float64(i)
		if i > 0 {
			r := alpha - fi + 1 // C(α,i) = C(α,i−1)·(α−i+1)/i
			logCoef += math.Log(math.Abs(r)) - t.logK[i]
			if r < 0 {
				sign = -sign
			}
		}
		j := alpha - fi
		logS0 := logCoef + j*t.l1q + t.e0[i]
		logS1 := logCoef + j*t.lq + fi*t.l1q + half + logErfc((t.z0-j)/t.sq2s) + (j*j-j)*t.inv
		a0.add(sign, logS0)
		a1.add(sign, logS1)
		if math.Max(logS0, logS1) < -40 && fi > alpha {
			if a0.acc < 0 || a1.acc < 0 {
				return 0, fmt.Errorf("fractional-order series cancelled below zero (q=%v, sigma=%v, alpha=%v)", t.q, t.sigma, alpha)
			}
			return logAdd(a0.ref+math.Log(a0.acc), a1.ref+math.Log(a1.acc)), nil
		}
	}
	return 0, errSlowSeries
}

// rdp returns the one-step RDP at order alpha (> 1, validated by the caller).
func (t *sgmTables) rdp(alpha float64) (float64, error) {
	if t.q == 0 {
		return 0, nil
	}
	if t.q == 1 {
		return finiteRDP(alpha/(2*t.sigma*t.sigma), t.q, t.sigma, alpha)
	}
	var logA float64
	switch {
	case alpha == math.Trunc(alpha) && alpha <= maxTabledOrder:
		logA = t.logAInt(int(alpha))
	case alpha == math.Trunc(alpha) && alpha <= 1<<20:
		logA = logAInt(t.q, t.sigma, int(alpha))
	default:
		var err error
		logA, err = t.logAFrac(alpha)
		if errors.Is(err, errSlowSeries) {
			logA, err = logAQuad(t.q, t.sigma, alpha)
		}
		if err != nil {
			return 0, fmt.Errorf("sampled Gaussian RDP (q=%v, sigma=%v, alpha=%v): %w", t.q, t.sigma, alpha, err)
		}
	}
	return finiteRDP(math.Max(logA/(alpha-1), 0), t.q, t.sigma, alpha)
}
