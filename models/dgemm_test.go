package models

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
)

// dgemmVariants are the kernels this CPU can run (the gonum fallback always).
func dgemmVariants() []int {
	v := []int{0}
	if hasAVX2FMA() {
		v = append(v, 8)
	}
	if hasAVX512() {
		v = append(v, 16)
	}
	return v
}

// TestDgemmMatchesReference checks every kernel against the triple loop (gemmGeneric) over shapes at
// and around the panel, tile and block edges, both transposes, strided views, and
// alpha/beta cases (beta = 0 with NaN in C must not read C; cells outside the view
// must stay untouched).
func TestDgemmMatchesReference(t *testing.T) {
	shapes := [][3]int{{1, 1, 1}, {3, 5, 7}, {4, 8, 1}, {4, 16, 9}, {5, 17, 3}, {9, 33, 257},
		{63, 65, 300}, {64, 256, 256}, {65, 257, 513}, {130, 40, 20}, {7, 2100, 11}, {2, 3, 0}}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, nr := range dgemmVariants() {
		for _, workers := range []int{1, 3} {
			g := newDgemm(nr, workers)
			for _, s := range shapes {
				for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
					for _, ab := range [][2]float64{{1, 0}, {1, 1}, {-0.5, 0.3}, {0, 2}} {
						m, n, k := s[0], s[1], s[2]
						name := fmt.Sprintf("nr%d/w%d/%dx%dx%d/tA=%v,tB=%v/a=%g,b=%g", nr, workers, m, n, k, tr[0], tr[1], ab[0], ab[1])
						ar, ac := m, k
						if tr[0] {
							ar, ac = k, m
						}
						br, bc := k, n
						if tr[1] {
							br, bc = n, k
						}
						lda, ldb, ldc := ac+3, bc+1, n+2
						a := randSlice(rng, ar*lda+1)
						b := randSlice(rng, br*ldb+1)
						c := randSlice(rng, m*ldc+1)
						if ab[1] == 0 {
							for i := range c {
								c[i] = math.NaN()
							}
						}
						want := append([]float64(nil), c...)
						gemmGeneric(tr[0], tr[1], m, n, k, ab[0], a, lda, b, ldb, ab[1], want, ldc) // the plain triple loop
						got := append([]float64(nil), c...)
						tA, tB := blas.NoTrans, blas.NoTrans
						if tr[0] {
							tA = blas.Trans
						}
						if tr[1] {
							tB = blas.Trans
						}
						g.Gemm(tA, tB, ab[0], blas64.General{Rows: ar, Cols: ac, Stride: lda, Data: a[:max(0, (ar-1)*lda+ac)]},
							blas64.General{Rows: br, Cols: bc, Stride: ldb, Data: b[:max(0, (br-1)*ldb+bc)]}, ab[1],
							blas64.General{Rows: m, Cols: n, Stride: ldc, Data: got[:max(0, (m-1)*ldc+n)]})
						for i := range got {
							inView := i/ldc < m && i%ldc < n
							if !inView {
								if !(math.IsNaN(got[i]) && math.IsNaN(c[i])) && got[i] != c[i] {
									t.Fatalf("%s: cell %d outside C changed: %v → %v", name, i, c[i], got[i])
								}
								continue
							}
							tol := 1e-13 * float64(k+1) * (1 + math.Abs(want[i]))
							if math.IsNaN(got[i]) || math.Abs(got[i]-want[i]) > tol {
								t.Fatalf("%s: C[%d,%d] = %v, want %v", name, i/ldc, i%ldc, got[i], want[i])
							}
						}
					}
				}
			}
		}
	}
}

func randSlice(rng *rand.Rand, n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = rng.NormFloat64()
	}
	return s
}

// TestDgemmDeterministic checks that the result does not depend on the number of
// goroutines, for every kernel this CPU has (the gonum fallback included, so it checks
// something everywhere), and that the two packed kernel widths agree bit for bit (the
// same FMA chains).
func TestDgemmDeterministic(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	m, n, k := 150, 700, 600
	a, b := randSlice(rng, m*k), randSlice(rng, k*n)
	var packed []float64 // the first packed kernel's result
	for _, nr := range dgemmVariants() {
		var ref []float64
		for _, w := range []int{1, 2, 5} {
			c := make([]float64, m*n)
			newDgemm(nr, w).Gemm(blas.NoTrans, blas.NoTrans, 1, blas64.General{Rows: m, Cols: k, Stride: k, Data: a},
				blas64.General{Rows: k, Cols: n, Stride: n, Data: b}, 0, blas64.General{Rows: m, Cols: n, Stride: n, Data: c})
			if ref == nil && nr > 0 && packed == nil {
				packed = c
			}
			if ref == nil {
				ref = c
			}
			for i := range c {
				if c[i] != ref[i] {
					t.Fatalf("kernel %s, %d workers: C[%d] = %v, the 1-worker run %v", newDgemm(nr, w).Kernel(), w, i, c[i], ref[i])
				}
				if nr > 0 && c[i] != packed[i] {
					t.Fatalf("kernel %s, %d workers: C[%d] = %v, the first packed kernel's %v", newDgemm(nr, w).Kernel(), w, i, c[i], packed[i])
				}
			}
		}
	}
}

// TestDgemmShapePanics checks the blas64-style panic on inconsistent shapes.
func TestDgemmShapePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic on bad shapes")
		}
	}()
	g := newDgemm(8, 1)
	g.Gemm(blas.NoTrans, blas.NoTrans, 1, blas64.General{Rows: 2, Cols: 3, Stride: 3, Data: make([]float64, 6)},
		blas64.General{Rows: 2, Cols: 2, Stride: 2, Data: make([]float64, 4)}, 0, blas64.General{Rows: 2, Cols: 2, Stride: 2, Data: make([]float64, 4)})
}

// BenchmarkDgemm compares the packed kernel with gonum's Dgemm at g_φ's shapes (512
// samples, MLP input 8 634 = 784 + 7 850, hidden 32), one goroutine each
// (GOMAXPROCS=1 via -cpu 1 for gonum).
func BenchmarkDgemm(b *testing.B) {
	shapes := []struct {
		name    string
		tA, tB  bool
		m, n, k int
	}{
		{"fwd-512x32x8634-NT", false, true, 512, 32, 8634},
		{"out-512x7850x32-NN", false, false, 512, 7850, 32},
		{"gradA-32x8634x512-TN", true, false, 32, 8634, 512},
		{"sq-1024", false, false, 1024, 1024, 1024},
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, s := range shapes {
		ar, ac := s.m, s.k
		if s.tA {
			ar, ac = s.k, s.m
		}
		br, bc := s.k, s.n
		if s.tB {
			br, bc = s.n, s.k
		}
		A := blas64.General{Rows: ar, Cols: ac, Stride: ac, Data: randSlice(rng, ar*ac)}
		B := blas64.General{Rows: br, Cols: bc, Stride: bc, Data: randSlice(rng, br*bc)}
		C := blas64.General{Rows: s.m, Cols: s.n, Stride: s.n, Data: make([]float64, s.m*s.n)}
		tA, tB := blas.NoTrans, blas.NoTrans
		if s.tA {
			tA = blas.Trans
		}
		if s.tB {
			tB = blas.Trans
		}
		flop := 2 * float64(s.m) * float64(s.n) * float64(s.k)
		for _, nr := range dgemmVariants() {
			g := newDgemm(nr, 1)
			b.Run(fmt.Sprintf("%s/%s", s.name, g.Kernel()), func(b *testing.B) {
				for range b.N {
					g.Gemm(tA, tB, 1, A, B, 0, C)
				}
				b.ReportMetric(flop*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}
