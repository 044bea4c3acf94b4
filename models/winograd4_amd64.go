package models

// winoComb6F32 sets, for k < 8·n8 and j < ny (1 to 6),
// y[j][k] = Σ_{i<6} c[j·6+i][·]·x[i][k] (c holds 8 copies of each coefficient),
// 8 values at a time. AVX2 and FMA.
//
//go:noescape
func winoComb6F32(c *[36][8]float32, x, y *[6]*float32, n8, ny int)

// winoBt4F32, winoB4F32, winoAt4F32 and winoA4F32 set y = Cx for k < 8·n8 with
// C = Bᵀ, B, Aᵀ and A of F(4, 3) (winoTables), written out with their common
// subexpressions (12–16 operations per 8 values instead of winoComb6F32's 24–36
// multiply-adds). AVX2 and FMA. winoA4F32 reads x[0..3], winoAt4F32 writes y[0..3].
//
//go:noescape
func winoBt4F32(x, y *[6]*float32, n8 int)

//go:noescape
func winoB4F32(x, y *[6]*float32, n8 int)

//go:noescape
func winoAt4F32(x, y *[6]*float32, n8 int)

//go:noescape
func winoA4F32(x, y *[6]*float32, n8 int)

// winoGt4F32 sets y = Gᵀx for k < 8·n8 (G of F(4, 3): 6 inputs, 3 outputs) with its
// common subexpressions. AVX2 and FMA.
//
//go:noescape
func winoGt4F32(x, y *[6]*float32, n8 int)

// winoDeint4RowsF32 and winoDeint6RowsF32 split rows of 4-column tiles into their
// columns: d[j][r·dstride + t] = src[r·sstride + 4t + j] for r < rows, t < 4·n4 and
// j < 4 (6: columns 4, 5 of tile t, read from tile t + 1). AVX.
//
//go:noescape
func winoDeint4RowsF32(src *float32, sstride int, d *[6]*float32, dstride, rows, n4 int)

//go:noescape
func winoDeint6RowsF32(src *float32, sstride int, d *[6]*float32, dstride, rows, n4 int)

// winoInt4RowsF32 and winoInt6RowsF32 are the adjoints: dst[r·dstride + 4t + c] =
// s[c][r·sstride + t] for c < 4; the 6-column version then adds columns 4, 5 of
// tile t onto columns 0, 1 of tile t + 1 (the row's last two values: tile n − 1's).
// AVX.
//
//go:noescape
func winoInt4RowsF32(s *[6]*float32, sstride int, dst *float32, dstride, rows, n4 int)

//go:noescape
func winoInt6RowsF32(s *[6]*float32, sstride int, dst *float32, dstride, rows, n4 int)

// winoTransposeF32 sets dst[c·dstride + r] = src[r·sstride + c] for r < 4·rows4 and
// c < 4·cols4 (both ≥ 1), in 4×4 blocks. AVX.
//
//go:noescape
func winoTransposeF32(src *float32, sstride int, dst *float32, dstride, rows4, cols4 int)
