package gorgonet

import "gonum.org/v1/gonum/floats"

// gemm adds op(A)·op(B) to C (m×n, row length ldc), with op(A) m×p (A stored with
// row length lda, transposed when tA) and op(B) p×n. It runs on the calling
// goroutine (the samples are the parallel dimension) and skips the zero entries of
// the sparser operand, so that products with one-hot input tangents cost what their
// nonzeros do. Its result depends only on its operands (not on the worker).
func gemm(tA, tB bool, m, n, p int, A []float64, lda int, B []float64, ldb int, C []float64, ldc int) {
	gemmS(true, false, tA, tB, m, n, p, A, lda, B, ldb, C, ldc)
}

// gemmDense is gemm for dense operands (values and adjoints): no zero counting, and
// a matrix-vector product (n = 1) is a row of dot products.
func gemmDense(tA, tB bool, m, n, p int, A []float64, lda int, B []float64, ldb int, C []float64, ldc int) {
	gemmS(false, false, tA, tB, m, n, p, A, lda, B, ldb, C, ldc)
}

// gemmS is gemm (sparse) or gemmDense; with overwrite, C = op(A)·op(B) instead of
// C += op(A)·op(B) (each row of C is cleared just before it is written, while it is
// in cache).
func gemmS(sparse, overwrite, tA, tB bool, m, n, p int, A []float64, lda int, B []float64, ldb int, C []float64, ldc int) {
	if n == 1 && !tA && (tB || ldb == 1) && !sparse { // C[i] += ⟨A[i, :], b⟩, b contiguous
		b := B[:p]
		for i := 0; i < m; i++ {
			if overwrite {
				C[i*ldc] = 0
			}
			C[i*ldc] += floats.Dot(A[i*lda:i*lda+p], b)
		}
		return
	}
	at := func(i, l int) float64 { // op(A)[i, l]
		if tA {
			return A[l*lda+i]
		}
		return A[i*lda+l]
	}
	bt := func(l, j int) float64 { // op(B)[l, j]
		if tB {
			return B[j*ldb+l]
		}
		return B[l*ldb+j]
	}
	nzA, nzB := m*p, p*n
	if sparse {
		nzA, nzB = nonzeros(A), nonzeros(B)
	}
	if !tA && tB && p >= 16 && 4*nzA > m*p && 4*nzB > p*n { // dense A·Bᵀ: rows of both are contiguous
		for i := 0; i < m; i++ {
			a := A[i*lda : i*lda+p]
			for j := 0; j < n; j++ {
				if overwrite {
					C[i*ldc+j] = 0
				}
				C[i*ldc+j] += floats.Dot(a, B[j*ldb:j*ldb+p])
			}
		}
		return
	}
	if nzA*n <= nzB*m { // rows of C: C[i, :] += op(A)[i, l]·op(B)[l, :]
		for i := 0; i < m; i++ {
			c := C[i*ldc : i*ldc+n]
			if overwrite {
				clear(c)
			}
			for l := 0; l < p; l++ {
				a := at(i, l)
				if a == 0 {
					continue
				}
				if !tB {
					if n >= 16 {
						floats.AddScaled(c, a, B[l*ldb:l*ldb+n])
						continue
					}
					for j, v := range B[l*ldb : l*ldb+n] {
						c[j] += a * v
					}
					continue
				}
				if ldb == 1 { // op(B)'s row l is contiguous (B is a column)
					floats.AddScaled(c, a, B[l:l+n])
					continue
				}
				for j := range c {
					c[j] += a * B[j*ldb+l]
				}
			}
		}
		return
	}
	// columns of C: C[:, j] += op(B)[l, j]·op(A)[:, l]
	if overwrite {
		for i := 0; i < m; i++ {
			clear(C[i*ldc : i*ldc+n])
		}
	}
	for j := 0; j < n; j++ {
		for l := 0; l < p; l++ {
			b := bt(l, j)
			if b == 0 {
				continue
			}
			if tA {
				col := A[l*lda : l*lda+m]
				for i, a := range col {
					C[i*ldc+j] += a * b
				}
				continue
			}
			for i := 0; i < m; i++ {
				C[i*ldc+j] += A[i*lda+l] * b
			}
		}
	}
}

// nonzeros counts the nonzero values of v.
func nonzeros(v []float64) int {
	n := 0
	for _, x := range v {
		if x != 0 {
			n++
		}
	}
	return n
}
