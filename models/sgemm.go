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
}

// gemm computes C = alpha·op(A)·op(B) + beta·C (row-major, op(A) m×k, op(B) k×n).
func (g *packedSgemm) gemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	if beta != 1 {
		for i := 0; i < m; i++ {
			r := c[i*ldc : i*ldc+n]
			if beta == 0 {
				clear(r)
				continue
			}
			for j := range r {
				r[j] *= beta
			}
		}
	}
	if k == 0 || alpha == 0 {
		return
	}
	pk, _ := g.pool.Get().(*sgemmPack)
	if pk == nil {
		pk = &sgemmPack{}
	}
	defer g.pool.Put(pk)
	for pc := 0; pc < k; pc += sgKC {
		kc := min(sgKC, k-pc)
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
				packA(transA, mc, kc, alpha, a, lda, ic, pc, pk.a)
				for jr := 0; jr < np; jr++ {
					j0 := jc + jr*sgNR
					nr := min(sgNR, n-j0)
					bp, bld := &pk.b[jr*sgNR*kc], sgNR
					if inPlace && nr == sgNR {
						bp, bld = &b[pc*ldb+j0], ldb
					}
					for ir := 0; ir < mp; ir++ {
						ap := &pk.a[ir*sgMR*kc]
						i0 := ic + ir*sgMR
						mr := min(sgMR, m-i0)
						if mr == sgMR && nr == sgNR {
							sgemmKernel4x16(kc, ap, bp, bld, &c[i0*ldc+j0], ldc)
							continue
						}
						clear(pk.tile[:])
						sgemmKernel4x16(kc, ap, bp, bld, &pk.tile[0], sgNR)
						for i := 0; i < mr; i++ {
							cr := c[(i0+i)*ldc+j0 : (i0+i)*ldc+j0+nr]
							for j := range cr {
								cr[j] += pk.tile[i*sgNR+j]
							}
						}
					}
				}
			}
		}
	}
}

// packA writes rows ic..ic+mc and columns pc..pc+kc of alpha·op(A) as 4-row panels
// (panel r holds kc groups of 4 values, zero-padded past mc).
func packA(trans bool, mc, kc int, alpha float32, a []float32, lda, ic, pc int, dst []float32) {
	for r := 0; r*sgMR < mc; r++ {
		d := dst[r*sgMR*kc : (r+1)*sgMR*kc]
		i0 := ic + r*sgMR
		mr := min(sgMR, ic+mc-i0)
		if mr < sgMR {
			clear(d)
		}
		if trans { // op(A)[i][p] = a[p*lda+i]
			for p := 0; p < kc; p++ {
				src := a[(pc+p)*lda+i0 : (pc+p)*lda+i0+mr]
				dp := d[p*sgMR : p*sgMR+mr]
				for i, v := range src {
					dp[i] = alpha * v
				}
			}
			continue
		}
		for i := 0; i < mr; i++ {
			src := a[(i0+i)*lda+pc : (i0+i)*lda+pc+kc]
			for p, v := range src {
				d[p*sgMR+i] = alpha * v
			}
		}
	}
}

// packB writes rows pc..pc+kc and columns jc..jc+nc of op(B) as 16-column panels
// (panel r holds kc groups of 16 values, zero-padded past nc). With skipFull, full
// panels are left out (the kernel reads them in place).
func packB(trans, skipFull bool, kc, nc int, b []float32, ldb, pc, jc int, dst []float32) {
	for r := 0; r*sgNR < nc; r++ {
		d := dst[r*sgNR*kc : (r+1)*sgNR*kc]
		j0 := jc + r*sgNR
		nr := min(sgNR, jc+nc-j0)
		if skipFull && nr == sgNR {
			continue
		}
		if nr < sgNR {
			clear(d)
		}
		if !trans { // op(B)[p][j] = b[p*ldb+j]
			for p := 0; p < kc; p++ {
				copy(d[p*sgNR:p*sgNR+nr], b[(pc+p)*ldb+j0:(pc+p)*ldb+j0+nr])
			}
			continue
		}
		if nr < sgNR {
			for j := 0; j < nr; j++ {
				src := b[(j0+j)*ldb+pc : (j0+j)*ldb+pc+kc]
				for p, v := range src {
					d[p*sgNR+j] = v
				}
			}
			continue
		}
		// Full panel: read the 16 source rows in lockstep so that the writes are
		// sequential.
		var rows [sgNR][]float32
		for j := range rows {
			rows[j] = b[(j0+j)*ldb+pc : (j0+j)*ldb+pc+kc]
		}
		for p := 0; p < kc; p++ {
			dp := d[p*sgNR : p*sgNR+sgNR : p*sgNR+sgNR]
			for j := range dp {
				dp[j] = rows[j][p]
			}
		}
	}
}
