package models

//go:noescape
func cpuid(eaxArg, ecxArg uint32) (eax, ebx, ecx, edx uint32)

//go:noescape
func xgetbv() (eax, edx uint32)

// sgemmKernel4x16 adds the product of a 4-row panel of A (element (i, p) at
// a[i*rsa+p*csa]: packed when rsa = 1 and csa = 4, or read in place) and a
// 16-column panel of B (k×16, b[p*ldb+j]: packed when ldb = 16, or read in place)
// to the 4×16 block of C at c (rows ldc floats apart), or, when add = 0, stores it
// there. AVX2 and FMA only; see hasAVX2FMA.
//
//go:noescape
func sgemmKernel4x16(k int, a *float32, rsa, csa int, b *float32, ldb int, c *float32, ldc int, add int)

// sgemmKernel4x32Panels is sgemmKernel4x16 for 4×32 blocks of C, with B's columns
// 0–15 read from b0 and 16–31 from b1 (row stride ldb each), over panels
// consecutive 4-row blocks (block r at c + 4·r·ldc, its A block at a + r·astep) in one
// call, on AVX-512. Each value is bit-identical to sgemmKernel4x16's. AVX-512F only;
// see hasAVX512.
//
//go:noescape
func sgemmKernel4x32Panels(k int, a *float32, rsa, csa, astep int, b0, b1 *float32, ldb int, c *float32, ldc int, add int, panels int)

// sgemmKernel12x32Panels is sgemmKernel4x32Panels over groups of three consecutive
// 4-row blocks (12 rows of C, group g at c + 12·g·ldc, its A blocks at
// a + (3g + r)·astep): 24 independent FMA chains instead of 8. Each value is
// bit-identical to sgemmKernel4x16's. AVX-512F only; see hasAVX512.
//
//go:noescape
func sgemmKernel12x32Panels(k int, a *float32, rsa, csa, astep int, b0, b1 *float32, ldb int, c *float32, ldc int, add int, groups int)

// sgemmKernel1x128 computes one row of C, 128 columns wide: C[j] (+)= Σ_p
// a[p*csa]·b[p*ldb+j], B read in place, each element the same FMA chain as in
// sgemmKernel4x16, so bit-identical to it. AVX-512F only; see hasAVX512.
//
//go:noescape
func sgemmKernel1x128(k int, a *float32, csa int, b *float32, ldb int, c *float32, add int)

// hasAVX512 reports whether the CPU and the OS support AVX-512F (opmask and ZMM
// state saved by the OS) on top of AVX2 and FMA, i.e. whether sgemmKernel4x32Panels and sgemmKernel1x128 may run.
func hasAVX512() bool {
	if !hasAVX2FMA() {
		return false
	}
	if xcr0, _ := xgetbv(); xcr0&0xe6 != 0xe6 {
		return false
	}
	_, ebx7, _, _ := cpuid(7, 0)
	return ebx7&(1<<16) != 0
}

// hasAVX2FMA reports whether the CPU and the OS support AVX2 and FMA (YMM state
// saved by the OS), i.e. whether sgemmKernel4x16 may run.
func hasAVX2FMA() bool {
	maxID, _, _, _ := cpuid(0, 0)
	if maxID < 7 {
		return false
	}
	_, _, ecx1, _ := cpuid(1, 0)
	const fma, osxsave, avx = 1 << 12, 1 << 27, 1 << 28
	if ecx1&fma == 0 || ecx1&osxsave == 0 || ecx1&avx == 0 {
		return false
	}
	if xcr0, _ := xgetbv(); xcr0&6 != 6 {
		return false
	}
	_, ebx7, _, _ := cpuid(7, 0)
	return ebx7&(1<<5) != 0
}
