package models

import "sync"

// Blocking of the packed float32 GEMM: a KC-deep slice of op(B), NC columns wide, is
// packed into 16-column panels; an MC-row block of op(A) into 4-row panels; the
// micro-kernel multiplies one A panel by one B panel into a 4×16 block of C.
const (
	sgMR = 4
	sgNR = 16
	sgKC = 256
	sgMC = 128
	sgNC = 1024
)

// sgemmPack holds one goroutine's packing buffers.
type sgemmPack struct {
	a, b []float32
	tile [sgMR * sgNR]float32
}

// packedSgemm is a float32 GEMM built on sgemmKernel4x16. Every element of C is
// computed as C·β + Σ over KC-blocks of (FMA chain over that block, in k order), so
// the result depends only on the shapes and the data, never on how C is split into
// tiles or on which goroutine runs it.
type packedSgemm struct {
	pool sync.Pool // *sgemmPack
	wide bool      // run pairs of full 16-column panels on the AVX-512 kernel
	tall bool      // with wide: three 4-row blocks at a time on the 12×32 kernel
}

// gemm computes C = alpha·op(A)·op(B) + beta·C (row-major, op(A) m×k, op(B) k×n).
func (g *packedSgemm) gemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	if beta != 1 && beta != 0 {
		for i := 0; i < m; i++ {
			r := c[i*ldc : i*ldc+n]
			for j := range r {
				r[j] *= beta
			}
		}
	}
	if k == 0 || alpha == 0 {
		if beta == 0 {
			for i := 0; i < m; i++ {
				clear(c[i*ldc : i*ldc+n])
			}
		}
		return
	}
	if m == 1 && g.wide && !transB && alpha == 1 && n >= 128 {
		// One row of C (a vector times a matrix read in place): 128 columns per
		// kernel call instead of a 4-row tile three rows of which are padding.
		n128 := n &^ 127
		csa := 1
		if transA {
			csa = lda
		}
		for pc := 0; pc < k; pc += sgKC {
			kc := min(sgKC, k-pc)
			add := 1
			if pc == 0 && beta == 0 {
				add = 0
			}
			for j := 0; j < n128; j += 128 {
				sgemmKernel1x128(kc, &a[pc*csa], csa, &b[pc*ldb+j], ldb, &c[j], add)
			}
		}
		if n128 < n {
			g.gemm(transA, transB, m, n-n128, k, alpha, a, lda, b[n128:], ldb, beta, c[n128:], ldc)
		}
		return
	}
	pk, _ := g.pool.Get().(*sgemmPack)
	if pk == nil {
		pk = &sgemmPack{}
	}
	defer g.pool.Put(pk)
	for pc := 0; pc < k; pc += sgKC {
		kc := min(sgKC, k-pc)
		// With beta = 0 the first KC-block stores into C instead of adding to it.
		add := 1
		if pc == 0 && beta == 0 {
			add = 0
		}
		for jc := 0; jc < n; jc += sgNC {
			nc := min(sgNC, n-jc)
			np := (nc + sgNR - 1) / sgNR
			if need := np * sgNR * kc; len(pk.b) < need {
				pk.b = make([]float32, need)
			}
			// Full panels of a non-transposed B are read in place (row stride ldb);
			// the others are packed (row stride sgNR).
			inPlace := !transB && kc > 1
			packB(transB, inPlace, kc, nc, b, ldb, pc, jc, pk.b)
			for ic := 0; ic < m; ic += sgMC {
				mc := min(sgMC, m-ic)
				mp := (mc + sgMR - 1) / sgMR
				if need := mp * sgMR * kc; len(pk.a) < need {
					pk.a = make([]float32, need)
				}
				// Full panels of A are read in place when alpha = 1; the others are
				// packed (alpha folded in).
				aInPlace := alpha == 1
				packA(transA, aInPlace, mc, kc, alpha, a, lda, ic, pc, pk.a)
				for jr := 0; jr < np; {
					j0 := jc + jr*sgNR
					nr := min(sgNR, n-j0)
					bp, bld := &pk.b[jr*sgNR*kc], sgNR
					if inPlace && nr == sgNR {
						bp, bld = &b[pc*ldb+j0], ldb
					}
					// Two full panels side by side go to the AVX-512 kernel.
					pair := g.wide && j0+2*sgNR <= n && jr+1 < np
					var bp1 *float32
					if pair {
						bp1 = &pk.b[(jr+1)*sgNR*kc]
						if inPlace {
							bp1 = &b[pc*ldb+j0+sgNR]
						}
					}
					ir0 := 0
					if full := mc / sgMR; pair && full > 0 {
						// The full 4-row blocks of this column pair: groups of three on
						// the 12-row kernel, the rest on the 4-row one.
						ap, rsa, csa, astep := panelA(transA, aInPlace, a, lda, pk.a, ic, pc, 0, kc)
						if g.tall && full >= 3 {
							groups := full / 3
							sgemmKernel12x32Panels(kc, ap, rsa, csa, astep, bp, bp1, bld, &c[ic*ldc+j0], ldc, add, groups)
							ir0 = 3 * groups
						}
						if ir0 < full {
							i0 := ic + ir0*sgMR
							ap, _, _, _ = panelA(transA, aInPlace, a, lda, pk.a, i0, pc, ir0, kc)
							sgemmKernel4x32Panels(kc, ap, rsa, csa, astep, bp, bp1, bld, &c[i0*ldc+j0], ldc, add, full-ir0)
						}
						ir0 = full
					}
					for ir := ir0; ir < mp; ir++ {
						i0 := ic + ir*sgMR
						mr := min(sgMR, m-i0)
						ap, rsa, csa, _ := panelA(transA, aInPlace && mr == sgMR, a, lda, pk.a, i0, pc, ir, kc)
						if mr == sgMR && nr == sgNR {
							sgemmKernel4x16(kc, ap, rsa, csa, bp, bld, &c[i0*ldc+j0], ldc, add)
							continue
						}
						g.edge(kc, ap, rsa, csa, bp, bld, c[i0*ldc+j0:], ldc, mr, nr, add, pk)
						if pair {
							g.edge(kc, ap, rsa, csa, bp1, bld, c[i0*ldc+j0+sgNR:], ldc, mr, sgNR, add, pk)
						}
					}
					jr++
					if pair {
						jr++
					}
				}
			}
		}
	}
}

// panelA returns where the micro-kernels read the 4-row panel ir of op(A) that starts
// at row i0, column pc: element (i, p) at ap[i·rsa + p·csa], and the distance
// between consecutive panels (astep). Panels are read in place when inPlace (full
// panels, alpha = 1), else from the packed buffer pa.
func panelA(transA, inPlace bool, a []float32, lda int, pa []float32, i0, pc, ir, kc int) (ap *float32, rsa, csa, astep int) {
	switch {
	case !inPlace:
		return &pa[ir*sgMR*kc], 1, sgMR, sgMR * kc
	case transA: // op(A)[i][p] = a[p*lda+i]
		return &a[pc*lda+i0], 1, lda, sgMR
	default:
		return &a[i0*lda+pc], lda, 1, sgMR * lda
	}
}

// edge computes an mr×nr corner block of C (mr ≤ 4, nr ≤ 16) through pk.tile with
// the same kernel, so its values are bit-identical to those of a full block.
func (g *packedSgemm) edge(kc int, ap *float32, rsa, csa int, bp *float32, bld int, c []float32, ldc, mr, nr, add int, pk *sgemmPack) {
	sgemmKernel4x16(kc, ap, rsa, csa, bp, bld, &pk.tile[0], sgNR, 0)
	for i := 0; i < mr; i++ {
		cr := c[i*ldc : i*ldc+nr]
		t := pk.tile[i*sgNR : i*sgNR+nr]
		if add == 0 {
			copy(cr, t)
			continue
		}
		for j := range cr {
			cr[j] += t[j]
		}
	}
}

// packPanels walks the panels of n rows (packA) or columns (packB) from first, width
// at a time, the panel r being dst[r·width·kc : (r+1)·width·kc]: it zeroes a partial
// panel (fewer than width left), leaves out full ones with skipFull (the kernel reads
// them in place) and calls fill with the panel, its first row or column and its width.
func packPanels(width, n, kc, first int, skipFull bool, dst []float32, fill func(d []float32, i0, w int)) {
	for r := 0; r*width < n; r++ {
		d := dst[r*width*kc : (r+1)*width*kc]
		i0 := first + r*width
		w := min(width, first+n-i0)
		if skipFull && w == width {
			continue
		}
		if w < width {
			clear(d)
		}
		fill(d, i0, w)
	}
}

// packA writes rows ic..ic+mc and columns pc..pc+kc of alpha·op(A) as 4-row panels
// (panel r holds kc groups of 4 values, zero-padded past mc). With skipFull, full
// panels are left out (the kernel reads them in place).
func packA(trans, skipFull bool, mc, kc int, alpha float32, a []float32, lda, ic, pc int, dst []float32) {
	packPanels(sgMR, mc, kc, ic, skipFull, dst, func(d []float32, i0, mr int) {
		if trans { // op(A)[i][p] = a[p*lda+i]
			for p := 0; p < kc; p++ {
				src := a[(pc+p)*lda+i0 : (pc+p)*lda+i0+mr]
				dp := d[p*sgMR : p*sgMR+mr]
				for i, v := range src {
					dp[i] = alpha * v
				}
			}
			return
		}
		for i := 0; i < mr; i++ {
			src := a[(i0+i)*lda+pc : (i0+i)*lda+pc+kc]
			for p, v := range src {
				d[p*sgMR+i] = alpha * v
			}
		}
	})
}

// packB writes rows pc..pc+kc and columns jc..jc+nc of op(B) as 16-column panels
// (panel r holds kc groups of 16 values, zero-padded past nc). With skipFull, full
// panels are left out (the kernel reads them in place).
func packB(trans, skipFull bool, kc, nc int, b []float32, ldb, pc, jc int, dst []float32) {
	packPanels(sgNR, nc, kc, jc, skipFull, dst, func(d []float32, j0, nr int) {
		if !trans { // op(B)[p][j] = b[p*ldb+j]
			for p := 0; p < kc; p++ {
				copy(d[p*sgNR:p*sgNR+nr], b[(pc+p)*ldb+j0:(pc+p)*ldb+j0+nr])
			}
			return
		}
		if nr < sgNR {
			for j := 0; j < nr; j++ {
				src := b[(j0+j)*ldb+pc : (j0+j)*ldb+pc+kc]
				for p, v := range src {
					d[p*sgNR+j] = v
				}
			}
			return
		}
		// Full panel: read the 16 source rows in lockstep so that the writes are
		// sequential.
		packB16T(d, b[j0*ldb+pc:], ldb, kc)
	})
}

// packB16T writes the transpose of the 16×kc block at b (rows ldb apart) to d
// (d[p*16+j] = b[j*ldb+p]): two 8-row halves through the AVX 8×8 transpose
// (transpose8F32; the packed GEMM runs only where AVX2 is), the last kc mod 8
// columns in Go.
func packB16T(d, b []float32, ldb, kc int) {
	_ = b[15*ldb+kc-1]
	d = d[:kc*sgNR]
	if k8 := kc &^ 7; k8 > 0 {
		transpose8F32(b, ldb, d, sgNR, k8/8)
		transpose8F32(b[8*ldb:], ldb, d[8:], sgNR, k8/8)
	}
	for p := kc &^ 7; p < kc; p++ {
		dp := (*[sgNR]float32)(d[p*sgNR:])
		for j := range dp {
			dp[j] = b[j*ldb+p]
		}
	}
}
