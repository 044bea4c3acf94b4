// Package stats holds the small sample statistics several packages report the same
// way (dFIL summaries, attack and GLM experiment spreads) and the sign convention of
// their principal components.
package stats

import (
	"math"

	"gonum.org/v1/gonum/mat"
)

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

// ComponentSign is the sign convention of the principal components (glm's PCA
// preprocessing and the figures' PCA): ±1 such that column col of v (one component's
// loadings, one row per variable) times it has its largest-magnitude entry positive.
// The first of equal magnitudes decides; an all-zero (or all-NaN) column gets +1.
func ComponentSign(v mat.Matrix, col int) float64 {
	rows, _ := v.Dims()
	big, sign := 0.0, 1.0
	for j := 0; j < rows; j++ {
		if a := v.At(j, col); math.Abs(a) > big {
			big, sign = math.Abs(a), math.Copysign(1, a)
		}
	}
	return sign
}
