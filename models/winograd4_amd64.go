package models

// winoComb6F32 sets, for k < 8·n8 and j < ny (1 to 6),
// y[j][k] = Σ_{i<6} c[j·6+i][·]·x[i][k] (c holds 8 copies of each coefficient),
// 8 values at a time. AVX2 and FMA.
//
//go:noescape
func winoComb6F32(c *[36][8]float32, x, y *[6]*float32, n8, ny int)
