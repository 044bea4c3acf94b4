// Package golden is the one golden-section search of the code base: it narrows a
// bracket around the minimum of a unimodal function, the refinement step both the
// smooth-clipping constant (models) and the PLD Chernoff tail bound (accounting) use
// after a coarse grid has located the optimum.
package golden

import "math"

// Bracket is where Minimize stopped: the interval [Lo, Hi] and its two interior
// points A < B with their values FA = f(A) and FB = f(B).
type Bracket struct {
	Lo, Hi, A, B, FA, FB float64
}

// ratio is 1/φ = (√5 − 1)/2, the golden-section step.
var ratio = (math.Sqrt(5) - 1) / 2

// Minimize runs golden-section search for the minimum of f on [lo, hi]: at most iters
// steps, and (tol > 0) none once Hi − Lo ≤ tol. Each step evaluates f once and keeps
// the sub-interval whose interior point has the smaller value (ties keep the upper
// one). To maximise g, minimise −g: the iterates are the same.
func Minimize(f func(float64) float64, lo, hi float64, iters int, tol float64) Bracket {
	a, b := hi-ratio*(hi-lo), lo+ratio*(hi-lo)
	fa, fb := f(a), f(b)
	for i := 0; i < iters && (tol <= 0 || hi-lo > tol); i++ {
		if fa < fb {
			hi, b, fb = b, a, fa
			a = hi - ratio*(hi-lo)
			fa = f(a)
		} else {
			lo, a, fa = a, b, fb
			b = lo + ratio*(hi-lo)
			fb = f(b)
		}
	}
	return Bracket{Lo: lo, Hi: hi, A: a, B: b, FA: fa, FB: fb}
}
