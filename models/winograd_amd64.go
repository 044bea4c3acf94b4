package models

// winoCombF32 sets, for k < 8·n8 and j < ny (2 or 4), y[j][k] = Σ_i c[j·4+i][·]·x[i][k]
// (c holds 8 copies of each coefficient), 8 values at a time. AVX2 and FMA.
//
//go:noescape
func winoCombF32(c *[16][8]float32, x, y *[4]*float32, n8, ny int)
