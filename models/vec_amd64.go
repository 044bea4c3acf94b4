package models

// tanhF32 sets y[i] = tanh(x[i]) for i < len(x) &^ 7 (len(y) ≥ len(x)) with a
// rational approximation (|error| < 4e-7). AVX2 and FMA only.
//
//go:noescape
func tanhF32(x, y []float32)

// dotF32F64 returns Σ x[i]·y[i] for i < len(x) &^ 7 (len(y) ≥ len(x)), accumulated
// in float64. AVX2 and FMA only.
//
//go:noescape
func dotF32F64(x, y []float32) float64

// axpyF32F64 adds sc·g[i] to acc[i] in float64 for i < len(g) &^ 7 (len(acc) ≥
// len(g)). AVX2 and FMA only.
//
//go:noescape
func axpyF32F64(acc []float64, sc float64, g []float32)

// dotSqF32F64 returns Σ x[i]·y[i] and Σ y[i]² for i < len(x) &^ 7 (len(y) ≥
// len(x)), accumulated in float64. AVX2 and FMA only.
//
//go:noescape
func dotSqF32F64(x, y []float32) (xy, yy float64)

// mulF32 sets y[i] = a[i]·x[i] for i < len(x) &^ 7 (len(a), len(y) ≥ len(x)).
// AVX only.
//
//go:noescape
func mulF32(a, x, y []float32)

// actTanF32 sets tdx[i] = d1[i]·tdy[i] + (d2[i]·tx[i])·dy[i] for i < len(tx) &^ 7
// (the other slices at least as long), rounding each product and the sum to
// float32 as Go does. AVX only.
//
//go:noescape
func actTanF32(d1, tdy, d2, tx, dy, tdx []float32)

// addPatch4F32 adds, for c < inC and r < kh, row[(c·kh+r)·4:][:4] to
// dx[c·hw+r·w:][:4] (the caller checks the bounds; kh ≥ 1).
//
//go:noescape
func addPatch4F32(row, dx []float32, inC, kh, hw, w int)

// copyPatch4F32 copies, for c < inC and r < kh, x[c·hw+r·w:][:4] to
// row[(c·kh+r)·4:][:4] (the caller checks the bounds; kh ≥ 1).
//
//go:noescape
func copyPatch4F32(x, row []float32, inC, kh, hw, w int)

// hasSSEPatch: the interior-patch copies and adds of the patch-major im2col run on
// copyPatch4F32 and addPatch4F32 (SSE, which every amd64 CPU has).
const hasSSEPatch = true

// addF32 adds x[i] to y[i] for i < len(x) (len(y) ≥ len(x)). AVX only.
//
//go:noescape
func addF32(x, y []float32)

// tanhBackF32 sets dx[i] = (1 − y[i]²)·dy[i] for i < len(y) (dy, dx at least as
// long), rounding each operation to float32 as Go does. AVX only.
//
//go:noescape
func tanhBackF32(y, dy, dx []float32)

// addConstF32 adds c to every y[i]. AVX only.
//
//go:noescape
func addConstF32(y []float32, c float32)

// transpose8F32 transposes 8 rows × 8·nb columns of src (row stride ld) into dst
// (row stride dld): dst[j·dld + i] = src[i·ld + j]. The caller checks the bounds
// (transposeRowsF32). AVX only.
//
//go:noescape
func transpose8F32(src []float32, ld int, dst []float32, dld int, nb int)

// avgPool2s2F32 sets y[i] = ((((0 + x0[2i]) + x0[2i+1]) + x1[2i]) + x1[2i+1])·inv
// for i < len(y) &^ 7 (len(x0), len(x1) ≥ 2·(len(y) &^ 7)). AVX2.
//
//go:noescape
func avgPool2s2F32(x0, x1, y []float32, inv float32)

// avgPoolBack2s2F32 adds dy[i]·inv to dx0[2i], dx0[2i+1], dx1[2i] and dx1[2i+1]
// for i < len(dy) &^ 7 (len(dx0), len(dx1) ≥ 2·(len(dy) &^ 7)). AVX.
//
//go:noescape
func avgPoolBack2s2F32(dy, dx0, dx1 []float32, inv float32)
