package models

// dgemmKernel4x8 computes the 4×8 block C (rows ldc doubles apart) of the product of a
// packed 4-row panel of A (a[p*4+i]) and a packed 8-column panel of B (b[p*8+j]) over
// p < k: stores it when add = 0, adds it to C otherwise. AVX2 and FMA only; see
// hasAVX2FMA.
//
//go:noescape
func dgemmKernel4x8(k int, a, b, c *float64, ldc, add int)

// dgemmKernel4x16 is dgemmKernel4x8 for 16-column panels of B (b[p*16+j]), on
// AVX-512F; every element is the same FMA chain as dgemmKernel4x8's. See hasAVX512.
//
//go:noescape
func dgemmKernel4x16(k int, a, b, c *float64, ldc, add int)
