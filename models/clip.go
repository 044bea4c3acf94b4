package models

import (
	"fmt"
	"math"

	"github.com/dpfil/dpfil/internal/golden"
)

// gelu returns GELU(x) and its derivative for the chosen variant.
func gelu(x float64, kind GELUKind) (v, dv float64) {
	if kind == GELUTanh {
		const a = 0.044715
		k := math.Sqrt(2 / math.Pi)
		u := k * (x + a*x*x*x)
		th := math.Tanh(u)
		v = 0.5 * x * (1 + th)
		dv = 0.5*(1+th) + 0.5*x*(1-th*th)*k*(1+3*a*x*x)
		return v, dv
	}
	phi := 0.5 * (1 + math.Erf(x/math.Sqrt2))
	pdf := math.Exp(-0.5*x*x) / math.Sqrt(2*math.Pi)
	return x * phi, phi + x*pdf
}

// Validate reports an error for an unusable clipping configuration.
func (c Clip) Validate() error {
	if !(c.C > 0) || math.IsInf(c.C, 0) {
		return fmt.Errorf("clip: threshold C must be positive and finite, got %v", c.C)
	}
	switch c.Mode {
	case ClipSmooth, ClipHard:
	default:
		return fmt.Errorf("clip: unknown mode %d", c.Mode)
	}
	switch c.GELU {
	case GELUExact, GELUTanh:
	default:
		return fmt.Errorf("clip: unknown GELU variant %d", c.GELU)
	}
	return nil
}

// Scale returns the factor s(‖g‖) with g̃ = s·g, and its derivative ds/d‖g‖.
//
// Hard clipping: s = 1/max(1, ‖g‖/C). At the kink ‖g‖ = C the branch taken is
// s = 1 and the derivative returned is that branch's one-sided derivative, 0; above
// C it is −C/‖g‖². Smooth clipping: s = 1/(GELU(‖g‖/C − 1) + 1), ds/d‖g‖ =
// −s²·GELU′(‖g‖/C − 1)/C.
func (c Clip) Scale(norm float64) (s, ds float64) {
	if c.Mode == ClipHard {
		if norm <= c.C {
			return 1, 0
		}
		return c.C / norm, -c.C / (norm * norm)
	}
	g, dg := gelu(norm/c.C-1, c.GELU)
	s = 1 / (g + 1)
	return s, -s * s * dg / c.C
}

// Constant returns c with ‖g̃‖ ≤ c·C: 1 for hard clipping, max_t t/(1+GELU(t−1)) for
// smooth clipping (≈ 1.115 with the exact GELU), computed by a grid search over
// t ∈ [0, 20] refined by golden-section search.
func (c Clip) Constant() float64 {
	if c.Mode == ClipHard {
		return 1
	}
	f := func(t float64) float64 {
		g, _ := gelu(t-1, c.GELU)
		return t / (1 + g)
	}
	best, bt := math.Inf(-1), 0.0
	const h = 1e-3
	for t := 0.0; t <= 20; t += h {
		if v := f(t); v > best {
			best, bt = v, t
		}
	}
	br := golden.Minimize(func(t float64) float64 { return -f(t) }, math.Max(0, bt-h), bt+h, 100, 1e-14)
	return math.Max(best, f((br.Lo+br.Hi)/2))
}

// ClipVector clips g in place and returns its norm before clipping and the scale.
func ClipVector[T Float](c Clip, g []T) (norm, scale float64) {
	var ss float64
	for _, v := range g {
		ss += float64(v) * float64(v)
	}
	norm = math.Sqrt(ss)
	scale, _ = c.Scale(norm)
	for i := range g {
		g[i] = T(float64(g[i]) * scale)
	}
	return norm, scale
}

// ClipJVP writes to out the directional derivative of g̃(g) along ġ:
// ġ̃ = s·ġ + (ds/d‖g‖)·(gᵀġ/‖g‖)·g, with the second term 0 when g = 0.
func ClipJVP[T Float](c Clip, g, gdot, out []T) {
	var ss, gd float64
	for i, v := range g {
		ss += float64(v) * float64(v)
		gd += float64(v) * float64(gdot[i])
	}
	norm := math.Sqrt(ss)
	s, ds := c.Scale(norm)
	coef := 0.0
	if norm > 0 {
		coef = ds * gd / norm
	}
	for i := range out {
		out[i] = T(s*float64(gdot[i]) + coef*float64(g[i]))
	}
}

// clippedTangentSqNorm returns ‖ġ̃‖² from gg = ‖g‖², gd = gᵀġ and dd = ‖ġ‖².
func clippedTangentSqNorm(c Clip, gg, gd, dd float64) float64 {
	norm := math.Sqrt(gg)
	s, ds := c.Scale(norm)
	coef := 0.0
	if norm > 0 {
		coef = ds * gd / norm
	}
	v := s*s*dd + 2*s*coef*gd + coef*coef*gg
	if v < 0 { // rounding when ġ is (almost) parallel to g under hard clipping
		v = 0
	}
	return v
}
