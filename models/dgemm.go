package models

import (
	"runtime"
	"sync"
	"sync/atomic"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
)

// Blocking of the packed float64 GEMM: a dgKC-deep slice of op(B), dgNC columns wide,
// is packed into nr-column panels (nr = 8 on AVX2, 16 on AVX-512); C is cut into
// tiles of dgMC rows × dgTN columns, each a task for one goroutine, which packs its
// rows of alpha·op(A) into 4-row panels and runs the micro-kernel over its panels.
const (
	dgMR = 4
	dgKC = 256
	dgMC = 64
	dgTN = 256
	dgNC = 2048
)

// Dgemm is a float64 matrix product on a packed FMA micro-kernel (4×8 on AVX2, 4×16 on
// AVX-512). Every element of C is C·β + Σ over dgKC-blocks of (an FMA chain over that
// block, in k order), so the result depends only on the shapes and the data, never on
// the number of goroutines or how C is split among them. On a CPU without AVX2 and
// FMA (or off amd64) it runs gonum's Dgemm. The zero value is not usable; a *Dgemm is
// safe for concurrent use.
type Dgemm struct {
	nr      int // B panel width: 8 or 16; 0 runs gonum
	workers int
	pool    sync.Pool // *dgemmPack
}

// dgemmPack holds one goroutine's packing buffers.
type dgemmPack struct {
	a    []float64
	b    []float64 // the caller's packed B block
	tile [dgMR * 16]float64
}

// NewDgemm returns the packed float64 GEMM for this CPU, running each product on at
// most workers goroutines (≤ 0: GOMAXPROCS).
func NewDgemm(workers int) *Dgemm {
	nr := 0
	switch {
	case hasAVX512():
		nr = 16
	case hasAVX2FMA():
		nr = 8
	}
	return newDgemm(nr, workers)
}

// NewGonumDgemm returns a Dgemm that runs gonum's Dgemm (the previous g_φ products):
// the reference that benchmarks and tests compare the packed kernel with.
func NewGonumDgemm() *Dgemm { return newDgemm(0, 0) }

// newDgemm is NewDgemm with the panel width chosen (0: gonum).
func newDgemm(nr, workers int) *Dgemm {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	return &Dgemm{nr: nr, workers: workers}
}

// Kernel names the micro-kernel in use: "avx512-4x16", "avx2-4x8" or "gonum".
func (g *Dgemm) Kernel() string {
	switch g.nr {
	case 16:
		return "avx512-4x16"
	case 8:
		return "avx2-4x8"
	}
	return "gonum"
}

// Gemm computes C = alpha·op(A)·op(B) + beta·C, as blas64.Gemm (row-major General
// matrices; with beta = 0, C is not read, so NaNs in it do not propagate). It panics
// on inconsistent shapes, as blas64.Gemm does.
func (g *Dgemm) Gemm(tA, tB blas.Transpose, alpha float64, a, b blas64.General, beta float64, c blas64.General) {
	if g.nr == 0 {
		blas64.Gemm(tA, tB, alpha, a, b, beta, c)
		return
	}
	transA, transB := tA != blas.NoTrans, tB != blas.NoTrans
	m, k := a.Rows, a.Cols
	if transA {
		m, k = k, m
	}
	kb, n := b.Rows, b.Cols
	if transB {
		kb, n = n, kb
	}
	if m != c.Rows || n != c.Cols || k != kb {
		panic("models: Dgemm: bad shapes")
	}
	g.gemm(transA, transB, m, n, k, alpha, a.Data, a.Stride, b.Data, b.Stride, beta, c.Data, c.Stride)
}

// scaleC sets C = beta·C (C = 0 when beta = 0, whatever C held).
func scaleC(m, n int, beta float64, c []float64, ldc int) {
	if beta == 1 {
		return
	}
	for i := 0; i < m; i++ {
		row := c[i*ldc : i*ldc+n]
		if beta == 0 {
			clear(row)
			continue
		}
		for j := range row {
			row[j] *= beta
		}
	}
}

func (g *Dgemm) gemm(transA, transB bool, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	if k == 0 || alpha == 0 {
		scaleC(m, n, beta, c, ldc)
		return
	}
	// With beta ∉ {0, 1}, C is scaled once and every k-block adds; with beta = 0 the
	// first k-block stores.
	first := 1
	switch beta {
	case 0:
		first = 0
	case 1:
	default:
		scaleC(m, n, beta, c, ldc)
	}
	nr := g.nr
	pk := g.get()
	defer g.pool.Put(pk)
	for jc := 0; jc < n; jc += dgNC {
		nc := min(dgNC, n-jc)
		npan := (nc + nr - 1) / nr
		for pc := 0; pc < k; pc += dgKC {
			kc := min(dgKC, k-pc)
			pk.b = grow(pk.b, npan*nr*kc)
			packB64(transB, nr, kc, nc, b, ldb, pc, jc, pk.b)
			add := 1
			if pc == 0 {
				add = first
			}
			g.tiles(transA, nr, m, nc, kc, alpha, a, lda, pc, jc, pk.b, c, ldc, add)
		}
	}
}

func (g *Dgemm) get() *dgemmPack {
	if p, ok := g.pool.Get().(*dgemmPack); ok {
		return p
	}
	return &dgemmPack{}
}

func grow(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n)
	}
	return s[:n]
}

// tiles runs the kernel over C's rows 0..m and columns jc..jc+nc for one packed
// k-block of B (pb), one task per dgMC × dgTN tile of C, on up to g.workers goroutines.
func (g *Dgemm) tiles(transA bool, nr, m, nc, kc int, alpha float64, a []float64, lda, pc, jc int, pb []float64, c []float64, ldc, add int) {
	mt, nt := (m+dgMC-1)/dgMC, (nc+dgTN-1)/dgTN
	tasks := mt * nt
	run := func(pk *dgemmPack, t int) {
		ic, jt := (t/nt)*dgMC, (t%nt)*dgTN
		mc, tn := min(dgMC, m-ic), min(dgTN, nc-jt)
		mp := (mc + dgMR - 1) / dgMR
		pk.a = grow(pk.a, mp*dgMR*kc)
		packA64(transA, kc, mc, alpha, a, lda, ic, pc, pk.a)
		for jr := 0; jr < tn; jr += nr {
			nw := min(nr, tn-jr)
			bp := &pb[((jt+jr)/nr)*nr*kc]
			for ir := 0; ir < mc; ir += dgMR {
				mw := min(dgMR, mc-ir)
				ap := &pk.a[(ir/dgMR)*dgMR*kc]
				ci := (ic+ir)*ldc + jc + jt + jr
				if mw == dgMR && nw == nr {
					g.kernel(kc, ap, bp, &c[ci], ldc, add)
					continue
				}
				g.kernel(kc, ap, bp, &pk.tile[0], nr, 0)
				for i := 0; i < mw; i++ {
					row := c[ci+i*ldc : ci+i*ldc+nw]
					tr := pk.tile[i*nr : i*nr+nw]
					if add != 0 {
						for j := range row {
							row[j] += tr[j]
						}
					} else {
						copy(row, tr)
					}
				}
			}
		}
	}
	w := min(g.workers, tasks)
	if w <= 1 {
		pk := g.get()
		for t := 0; t < tasks; t++ {
			run(pk, t)
		}
		g.pool.Put(pk)
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	wg.Add(w)
	for range w {
		go func() {
			defer wg.Done()
			pk := g.get()
			for t := int(next.Add(1) - 1); t < tasks; t = int(next.Add(1) - 1) {
				run(pk, t)
			}
			g.pool.Put(pk)
		}()
	}
	wg.Wait()
}

func (g *Dgemm) kernel(kc int, a, b, c *float64, ldc, add int) {
	if g.nr == 16 {
		dgemmKernel4x16(kc, a, b, c, ldc, add)
		return
	}
	dgemmKernel4x8(kc, a, b, c, ldc, add)
}

// packA64 writes rows ic..ic+mc, columns pc..pc+kc of alpha·op(A) as 4-row panels
// (panel r: kc groups of 4 values, rows past mc zero).
func packA64(trans bool, kc, mc int, alpha float64, a []float64, lda, ic, pc int, dst []float64) {
	for r := 0; r*dgMR < mc; r++ {
		d := dst[r*dgMR*kc : (r+1)*dgMR*kc]
		for i := 0; i < dgMR; i++ {
			row := ic + r*dgMR + i
			if r*dgMR+i >= mc {
				for p := 0; p < kc; p++ {
					d[p*dgMR+i] = 0
				}
				continue
			}
			if trans {
				for p := 0; p < kc; p++ {
					d[p*dgMR+i] = alpha * a[(pc+p)*lda+row]
				}
				continue
			}
			src := a[row*lda+pc : row*lda+pc+kc]
			for p, v := range src {
				d[p*dgMR+i] = alpha * v
			}
		}
	}
}

// packB64 writes rows pc..pc+kc, columns jc..jc+nc of op(B) as nr-column panels
// (panel r: kc groups of nr values, columns past nc zero).
func packB64(trans bool, nr, kc, nc int, b []float64, ldb, pc, jc int, dst []float64) {
	for r := 0; r*nr < nc; r++ {
		d := dst[r*nr*kc : (r+1)*nr*kc]
		w := min(nr, nc-r*nr)
		j0 := jc + r*nr
		if trans {
			for j := 0; j < nr; j++ {
				if j >= w {
					for p := 0; p < kc; p++ {
						d[p*nr+j] = 0
					}
					continue
				}
				src := b[(j0+j)*ldb+pc : (j0+j)*ldb+pc+kc]
				for p, v := range src {
					d[p*nr+j] = v
				}
			}
			continue
		}
		for p := 0; p < kc; p++ {
			src := b[(pc+p)*ldb+j0 : (pc+p)*ldb+j0+w]
			dp := d[p*nr : p*nr+nr]
			copy(dp, src)
			clear(dp[w:])
		}
	}
}
