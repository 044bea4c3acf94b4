package models

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// refGemm is the triple-loop float64 reference for C = alpha·op(A)·op(B) + beta·C.
func refGemm(transA, transB bool, m, n, k int, alpha float64, a []float32, lda int, b []float32, ldb int, beta float64, c []float32, ldc int) []float64 {
	out := make([]float64, len(c))
	for i := range c {
		out[i] = float64(c[i])
	}
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s float64
			for p := 0; p < k; p++ {
				var av, bv float32
				if transA {
					av = a[p*lda+i]
				} else {
					av = a[i*lda+p]
				}
				if transB {
					bv = b[j*ldb+p]
				} else {
					bv = b[p*ldb+j]
				}
				s += float64(av) * float64(bv)
			}
			out[i*ldc+j] = alpha*s + beta*float64(c[i*ldc+j])
		}
	}
	return out
}

func TestPackedSgemm(t *testing.T) {
	if !hasAVX2FMA() {
		t.Log("no AVX2/FMA: the packed GEMM is not used on this CPU; testing its portable path")
	}
	cases := []struct {
		m, n, k     int
		alpha, beta float32
		pad         int // extra leading-dimension slack
	}{
		{1, 1, 1, 1, 0, 0},
		{4, 16, 1, 1, 0, 0},
		{3, 5, 7, 1, 0, 1},
		{16, 64, 196, 1, 0, 0},   // conv1 weight gradient
		{32, 256, 25, 1, 0, 3},   // conv2 weight gradient
		{256, 800, 32, 1, 0, 0},  // conv2 input gradient
		{17, 33, 300, 0.5, 1, 2}, // k spans two KC blocks, accumulate into C
		{130, 1030, 5, -1.5, 0.25, 1},
		{5, 19, 0, 1, 2, 0}, // k = 0: C = beta·C
		{7, 3, 9, 0, 1, 0},  // alpha = 0
	}
	rng := rand.New(rand.NewPCG(3, 4))
	g := packedSgemm{wide: hasAVX512()}
	for _, tc := range cases {
		for _, tr := range [][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
			ta, tb := tr[0], tr[1]
			name := fmt.Sprintf("%dx%dx%d/tA=%v/tB=%v", tc.m, tc.n, tc.k, ta, tb)
			t.Run(name, func(t *testing.T) {
				ar, ac := tc.m, tc.k
				if ta {
					ar, ac = tc.k, tc.m
				}
				br, bc := tc.k, tc.n
				if tb {
					br, bc = tc.n, tc.k
				}
				lda, ldb, ldc := ac+tc.pad, bc+tc.pad, tc.n+tc.pad
				a := make([]float32, max(0, (ar-1)*lda+ac))
				b := make([]float32, max(0, (br-1)*ldb+bc))
				c := make([]float32, (tc.m-1)*ldc+tc.n)
				for _, s := range [][]float32{a, b, c} {
					for i := range s {
						s[i] = float32(rng.NormFloat64())
					}
				}
				if tc.k == 0 {
					lda, ldb = max(lda, 1), max(ldb, 1)
				}
				want := refGemm(ta, tb, tc.m, tc.n, tc.k, float64(tc.alpha), a, lda, b, ldb, float64(tc.beta), c, ldc)
				g.gemm(ta, tb, tc.m, tc.n, tc.k, tc.alpha, a, lda, b, ldb, tc.beta, c, ldc)
				for i := 0; i < tc.m; i++ {
					for j := 0; j < tc.n; j++ {
						got, w := float64(c[i*ldc+j]), want[i*ldc+j]
						if math.Abs(got-w) > 1e-5*(1+float64(tc.k))*(1+math.Abs(w)) {
							t.Fatalf("C[%d][%d] = %v, want %v", i, j, got, w)
						}
					}
					for j := tc.n; j < ldc && i*ldc+j < len(c); j++ {
						if float64(c[i*ldc+j]) != want[i*ldc+j] {
							t.Fatalf("padding C[%d][%d] changed", i, j)
						}
					}
				}
			})
		}
	}
}

// TestPackedSgemmTilingInvariant checks that a GEMM computed in one call equals the
// same GEMM computed block by block (the property that keeps results independent of
// how work is split between workers).
func TestPackedSgemmTilingInvariant(t *testing.T) {
	const m, n, k = 37, 70, 300
	rng := rand.New(rand.NewPCG(5, 6))
	a, b := make([]float32, m*k), make([]float32, k*n)
	for i := range a {
		a[i] = float32(rng.NormFloat64())
	}
	for i := range b {
		b[i] = float32(rng.NormFloat64())
	}
	var g packedSgemm
	whole := make([]float32, m*n)
	g.gemm(false, false, m, n, k, 1, a, k, b, n, 0, whole, n)
	parts := make([]float32, m*n)
	for i0 := 0; i0 < m; i0 += 9 {
		for j0 := 0; j0 < n; j0 += 21 {
			mi, nj := min(9, m-i0), min(21, n-j0)
			g.gemm(false, false, mi, nj, k, 1, a[i0*k:], k, b[j0:], n, 0, parts[i0*n+j0:], n)
		}
	}
	for i := range whole {
		if whole[i] != parts[i] {
			t.Fatalf("element %d: whole %v, by blocks %v", i, whole[i], parts[i])
		}
	}
}

// TestPackedSgemmWideBitIdentical checks that the AVX-512 4×32 and 12×32 kernels give
// the same bits as the AVX2 4×16 kernel (in place and packed operands, α = 1 and not,
// β = 0 and 1, edges, row counts with 0, 1 and 2 blocks left over after the groups of
// three and more than one MC block).
func TestPackedSgemmWideBitIdentical(t *testing.T) {
	if !hasAVX512() {
		t.Log("no AVX-512: the wide kernel is not used on this CPU")
		return
	}
	rng := rand.New(rand.NewPCG(21, 22))
	for _, sh := range [][3]int{{16, 64, 196}, {32, 256, 25}, {37, 95, 300}, {8, 48, 1}, {256, 800, 32}, {1, 2048, 128}, {1, 300, 700}, {1, 128, 10}, {1, 130, 1},
		{12, 32, 7}, {24, 64, 513}, {28, 96, 40}, {44, 33, 17}, {300, 64, 9}} {
		m, n, k := sh[0], sh[1], sh[2]
		for _, tr := range [][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
			for _, ab := range [][2]float32{{1, 0}, {1, 1}, {0.5, 1}} {
				alpha, beta := ab[0], ab[1]
				ta, tb := tr[0], tr[1]
				a, b := make([]float32, m*k), make([]float32, k*n)
				c0 := make([]float32, m*n)
				for _, v := range [][]float32{a, b, c0} {
					for i := range v {
						v[i] = float32(rng.NormFloat64())
					}
				}
				lda, ldb := k, n
				if ta {
					lda = m
				}
				if tb {
					ldb = k
				}
				c1 := append([]float32(nil), c0...)
				c2 := append([]float32(nil), c0...)
				narrow, wide, tall := packedSgemm{}, packedSgemm{wide: true}, packedSgemm{wide: true, tall: true}
				narrow.gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c0, n)
				wide.gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c1, n)
				tall.gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c2, n)
				for i := range c0 {
					if math.Float32bits(c0[i]) != math.Float32bits(c1[i]) || math.Float32bits(c0[i]) != math.Float32bits(c2[i]) {
						t.Fatalf("%dx%dx%d tA=%v tB=%v alpha=%v beta=%v: C[%d] = %v (4x16) vs %v (4x32) vs %v (12x32)", m, n, k, ta, tb, alpha, beta, i, c0[i], c1[i], c2[i])
					}
				}
			}
		}
	}
}

// BenchmarkPackedSgemm compares the packed kernel with gonum on the engine's shapes.
func BenchmarkPackedSgemm(b *testing.B) {
	shapes := []struct {
		name    string
		ta, tb  bool
		m, n, k int
	}{
		{"conv1-dW", false, true, 16, 64, 196},
		{"conv2-dW", false, true, 32, 256, 25},
		{"conv1-fwd", false, false, 16, 6272, 64},
		{"conv2-dX", true, false, 256, 800, 32},
		{"sq1024", false, false, 1024, 1024, 1024},
		{"l1", false, false, 24, 32, 128},
	}
	for _, s := range shapes {
		a := make([]float32, s.m*s.k)
		bb := make([]float32, s.k*s.n)
		c := make([]float32, s.m*s.n)
		for i := range a {
			a[i] = float32(i%7) - 3
		}
		for i := range bb {
			bb[i] = float32(i%5) - 2
		}
		lda, ldb := s.k, s.n
		if s.ta {
			lda = s.m
		}
		if s.tb {
			ldb = s.k
		}
		flop := 2 * float64(s.m*s.n*s.k)
		b.Run(s.name+"/packed-avx512-12x32", func(b *testing.B) {
			g := packedSgemm{wide: hasAVX512(), tall: hasAVX512()}
			for i := 0; i < b.N; i++ {
				g.gemm(s.ta, s.tb, s.m, s.n, s.k, 1, a, lda, bb, ldb, 0, c, s.n)
			}
			b.ReportMetric(flop*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
		b.Run(s.name+"/packed-avx512", func(b *testing.B) {
			g := packedSgemm{wide: hasAVX512()}
			for i := 0; i < b.N; i++ {
				g.gemm(s.ta, s.tb, s.m, s.n, s.k, 1, a, lda, bb, ldb, 0, c, s.n)
			}
			b.ReportMetric(flop*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
		b.Run(s.name+"/packed", func(b *testing.B) {
			var g packedSgemm
			for i := 0; i < b.N; i++ {
				g.gemm(s.ta, s.tb, s.m, s.n, s.k, 1, a, lda, bb, ldb, 0, c, s.n)
			}
			b.ReportMetric(flop*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
		b.Run(s.name+"/gonum", func(b *testing.B) {
			be := &cpuBackend[float32]{workers: 1}
			for i := 0; i < b.N; i++ {
				be.gemm(s.ta, s.tb, s.m, s.n, s.k, 1, a, lda, bb, ldb, 0, c, s.n)
			}
			b.ReportMetric(flop*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
