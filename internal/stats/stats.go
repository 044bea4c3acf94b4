// Package stats holds the small sample statistics several packages report the same
// way (dFIL summaries, attack and GLM experiment spreads).
package stats

import "math"

// QuantileSorted is the linear-interpolation quantile of sorted s at p ∈ [0, 1]:
// numpy's default ("linear", Hyndman & Fan type 7), s[⌊h⌋] + (h − ⌊h⌋)(s[⌊h⌋+1] − s[⌊h⌋])
// with h = p(n − 1). (gonum's stat.Quantile offers the empirical CDF and type 4, not
// this one, and users compare dFIL quantiles with numpy.) NaN for an empty s.
func QuantileSorted(s []float64, p float64) float64 {
	if len(s) == 0 {
		return math.NaN()
	}
	h := p * float64(len(s)-1)
	lo := int(math.Floor(h))
	if lo >= len(s)-1 {
		return s[len(s)-1]
	}
	return s[lo] + (h-float64(lo))*(s[lo+1]-s[lo])
}
