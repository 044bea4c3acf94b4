package models

import (
	"fmt"
	"testing"
)

// TestTransposeRowsF32 checks the AVX transpose (transposeRowsF32, and the
// Network method that picks it) against an element-by-element transpose: every
// shape of 1…27 rows and columns (8×8 blocks, their edges, and no full block),
// one and three samples, with the values around dst left untouched.
func TestTransposeRowsF32(t *testing.T) {
	for _, m := range []int{1, 3} {
		for rows := 1; rows <= 27; rows++ {
			for cols := 1; cols <= 27; cols++ {
				t.Run(fmt.Sprintf("m%d/%dx%d", m, rows, cols), func(t *testing.T) {
					n := rows * cols
					src := make([]float32, m*n)
					for i := range src {
						src[i] = float32(i) + 0.25
					}
					want := make([]float32, m*n+5)
					got := make([]float32, m*n+5)
					for i := range want {
						want[i], got[i] = -1, -1
					}
					for r := 0; r < m; r++ {
						for i := 0; i < rows; i++ {
							for j := 0; j < cols; j++ {
								want[r*n+j*rows+i] = src[r*n+i*cols+j]
							}
						}
					}
					transposeRowsF32(m, rows, cols, src, got[:m*n])
					for i := range want {
						if got[i] != want[i] {
							t.Fatalf("dst[%d] = %v, want %v", i, got[i], want[i])
						}
					}
					generic := make([]float32, m*n)
					transposeRows(m, rows, cols, src, generic)
					for i := range generic {
						if generic[i] != want[i] {
							t.Fatalf("transposeRows: dst[%d] = %v, want %v", i, generic[i], want[i])
						}
					}
				})
			}
		}
	}
}

// TestPackB16T checks the packed GEMM's transposed B panel (packB16T) against its
// definition d[p·16 + j] = b[j·ldb + p], for panel depths with and without full
// blocks of 8 and row strides longer than the depth.
func TestPackB16T(t *testing.T) {
	for _, kc := range []int{1, 7, 8, 9, 16, 23, 64, 129} {
		for _, extra := range []int{0, 5} {
			ldb := kc + extra
			b := make([]float32, 16*ldb)
			for i := range b {
				b[i] = float32(i) + 0.5
			}
			d := make([]float32, kc*16+3)
			packB16T(d, b, ldb, kc)
			for p := 0; p < kc; p++ {
				for j := 0; j < 16; j++ {
					if d[p*16+j] != b[j*ldb+p] {
						t.Fatalf("kc %d, ldb %d: d[%d] = %v, want b[%d] = %v", kc, ldb, p*16+j, d[p*16+j], j*ldb+p, b[j*ldb+p])
					}
				}
			}
			for _, v := range d[kc*16:] {
				if v != 0 {
					t.Fatalf("kc %d: wrote past the panel", kc)
				}
			}
		}
	}
}
