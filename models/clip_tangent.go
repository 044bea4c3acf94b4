package models

// ClippedTangentSqNorm returns ‖ġ̃‖², the squared norm of the directional derivative
// of the clipped gradient g̃ = s(‖g‖)·g along ġ, from gg = ‖g‖², gd = gᵀġ and
// dd = ‖ġ‖² — the per-direction term of FILSqNorms, for models outside this package
// (e.g. a Gorgonia graph's forward-over-reverse in models/gorgonet) that compute g
// and ġ themselves.
func ClippedTangentSqNorm(c Clip, gg, gd, dd float64) float64 {
	return clippedTangentSqNorm(c, gg, gd, dd)
}
