package models

import (
	"math"
	"runtime"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"
)

// Float is the element type of a network: float64 for checks against finite
// differences, float32 for speed.
type Float interface{ ~float32 | ~float64 }

// ConvGeom is the geometry of one 2-D convolution for one sample.
type ConvGeom struct {
	InC, H, W              int // input channels and size
	KH, KW, Stride         int
	PadT, PadB, PadL, PadR int
	OutH, OutW             int
}

// CKK is the length of one im2col patch, InC·KH·KW (ordered c, kh, kw).
func (g ConvGeom) CKK() int { return g.InC * g.KH * g.KW }

// HWo is the number of output positions OutH·OutW.
func (g ConvGeom) HWo() int { return g.OutH * g.OutW }

// PoolGeom is the geometry of a VALID average pooling over C channels.
type PoolGeom struct {
	C, H, W        int
	KH, KW, Stride int
	OutH, OutW     int
}

// Act names an elementwise activation.
type Act int

// Activations known to the backends.
const (
	ActTanh Act = iota // tanh
	ActELU             // ELU with alpha = 1
)

// Backend is the seam between the networks and the numeric kernels. Every buffer a
// network hands to a backend was obtained from the backend's Alloc, so a device
// backend can return slices backed by (managed) device memory. All matrices are
// row-major. Kernels must be safe to call concurrently on disjoint outputs, since a
// network runs Workers() goroutines, each on its own samples and buffers.
//
// A new backend plugs in with NewModel(arch, be) or NewNetwork(arch, be) and must pass
// CheckBackend(be, 1e-4) in its own tests, and CheckExtensionSubsets(be, 1e-4) when it
// has optional extensions (each combination of them). Device backends: the optional extensions
// DeviceOps, BatchedGemmer, RowIm2coler, RowSqNormer, TangentBatcher
// and Chunker move the network's per-sample loops and host-side steps to the device;
// even with all of them the network still reads and writes some buffers on the host
// (inputs and outputs, softmax/cross-entropy and its tangent, Normalize, the seeds of
// explicit input and parameter tangents), so Alloc must return host-addressable
// memory (e.g. CUDA managed memory) and every call must finish before it returns.
type Backend[T Float] interface {
	// Name identifies the backend ("cpu", "cuda").
	Name() string
	// Workers is the number of goroutines a network should run over sample chunks.
	Workers() int
	// Alloc returns a zeroed buffer of n elements.
	Alloc(n int) []T
	// Gemm computes C = alpha·op(A)·op(B) + beta·C with op(A) m×k and op(B) k×n.
	Gemm(transA, transB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int)
	// Im2col writes one sample's patches x ([InC][H][W]) as a CKK×HWo matrix whose
	// rows start ld values apart (ld ≥ HWo, so several samples' patch matrices can sit
	// side by side in one CKK×(n·HWo) matrix).
	Im2col(g ConvGeom, x []T, cols []T, ld int)
	// Col2im adds a CKK×HWo patch matrix (row stride ld) back into one sample's dx
	// ([InC][H][W]).
	Col2im(g ConvGeom, cols []T, ld int, dx []T)
	// AvgPool pools n samples: y[n][C][OutH][OutW] from x[n][C][H][W].
	AvgPool(g PoolGeom, n int, x, y []T)
	// AvgPoolBack adds the adjoint of AvgPool: dx += poolᵀ(dy), for n samples.
	AvgPoolBack(g PoolGeom, n int, dy, dx []T)
	// ActForward computes y = f(x).
	ActForward(f Act, x, y []T)
	// ActBackward computes dx = f'(x)·dy elementwise.
	ActBackward(f Act, x, y, dy, dx []T)
	// ActTangent computes, for n samples of size values with k tangent directions
	// each (rows s·k+j of tx/ty/tdy/tdx belong to sample s): when ty is not nil the
	// forward tangent ty = f'(x)·tx, and, when tdy is not nil, the tangent of the
	// backward pass tdx = f'(x)·tdy + f''(x)·tx·dy (x, y = f(x), dy: n rows).
	ActTangent(f Act, n, k, size int, x, y, dy, tx, ty, tdy, tdx []T)
	// Dot returns Σ x_i·y_i accumulated in float64.
	Dot(x, y []T) float64
	// DotSq returns Σ x_i·y_i and Σ y_i² in one pass, accumulated in float64.
	DotSq(x, y []T) (xy, yy float64)
}

// cpuBackend is the pure-Go backend: gonum BLAS for GEMM, plain loops elsewhere.
type cpuBackend[T Float] struct {
	workers int
	tile    bool // run GEMMs serially in tiles (see Gemm)
	// sg, when not nil, runs float32 GEMMs on the packed AVX2/FMA kernel instead of
	// gonum (serially: the network's workers already use every core).
	sg *packedSgemm
}

// NewCPUBackend returns the CPU backend; networks run one worker goroutine per CPU.
// In float32 on a CPU with AVX2 and FMA, GEMMs run on a packed 4×16 FMA
// micro-kernel (sgemm.go) and tanh, the float64-accumulated dot products and the
// clipped-gradient sums on AVX2 loops (vec.go); otherwise, and always in float64,
// GEMMs are gonum's native (pure Go, assembly-accelerated) sgemm/dgemm and the rest
// plain Go loops.
func NewCPUBackend[T Float]() Backend[T] {
	w := runtime.GOMAXPROCS(0)
	if w < 1 {
		w = 1
	}
	b := &cpuBackend[T]{workers: w, tile: w > 1}
	if _, ok := any(b.Alloc(0)).([]float32); ok && hasAVX2FMA() {
		b.sg = &packedSgemm{wide: hasAVX512(), tall: hasAVX512()}
	}
	return b
}

// packedGemm is hostKernels' packed GEMM (nil without AVX2/FMA or in float64).
func (b *cpuBackend[T]) packedGemm() *packedSgemm { return b.sg }

func (b *cpuBackend[T]) Name() string    { return "cpu" }
func (b *cpuBackend[T]) Workers() int    { return b.workers }
func (b *cpuBackend[T]) Alloc(n int) []T { return make([]T, n) }

func trans(t bool) blas.Transpose {
	if t {
		return blas.Trans
	}
	return blas.NoTrans
}

func (b *cpuBackend[T]) Gemm(transA, transB bool, m, n, k int, alpha T, a []T, lda int, bb []T, ldb int, beta T, c []T, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	if b.sg != nil {
		b.sg.gemm(transA, transB, m, n, k, float32(alpha), any(a).([]float32), lda, any(bb).([]float32), ldb,
			float32(beta), any(c).([]float32), ldc)
		return
	}
	if b.tile && (m > gemmTileM || n > gemmTileN) {
		// Networks already run one worker per CPU: cut C into tiles small enough for
		// gonum's serial kernel instead of letting it start goroutines per 64×64 block.
		for i := 0; i < m; i += gemmTileM {
			mi := min(gemmTileM, m-i)
			var ai []T
			if transA {
				ai = a[i:]
			} else {
				ai = a[i*lda:]
			}
			for j := 0; j < n; j += gemmTileN {
				nj := min(gemmTileN, n-j)
				var bj []T
				if transB {
					bj = bb[j*ldb:]
				} else {
					bj = bb[j:]
				}
				b.gemm(transA, transB, mi, nj, k, alpha, ai, lda, bj, ldb, beta, c[i*ldc+j:], ldc)
			}
		}
		return
	}
	b.gemm(transA, transB, m, n, k, alpha, a, lda, bb, ldb, beta, c, ldc)
}

// gemmTileM×gemmTileN is the tile of cpuBackend.Gemm: gonum runs a GEMM serially when
// it has fewer than 4 blocks of 64×64, and a 64×192 tile has 3.
const (
	gemmTileM = 64
	gemmTileN = 192
)

func (b *cpuBackend[T]) gemm(transA, transB bool, m, n, k int, alpha T, a []T, lda int, bb []T, ldb int, beta T, c []T, ldc int) {
	switch any(a).(type) {
	case []float32:
		blas32.Implementation().Sgemm(trans(transA), trans(transB), m, n, k, float32(alpha),
			any(a).([]float32), lda, any(bb).([]float32), ldb, float32(beta), any(c).([]float32), ldc)
	case []float64:
		blas64.Implementation().Dgemm(trans(transA), trans(transB), m, n, k, float64(alpha),
			any(a).([]float64), lda, any(bb).([]float64), ldb, float64(beta), any(c).([]float64), ldc)
	default:
		gemmGeneric(transA, transB, m, n, k, alpha, a, lda, bb, ldb, beta, c, ldc)
	}
}

// gemmGeneric is the fallback for named float types (e.g. type F float32).
func gemmGeneric[T Float](transA, transB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s T
			for p := 0; p < k; p++ {
				var av, bv T
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
				s += av * bv
			}
			if beta == 0 {
				c[i*ldc+j] = alpha * s
			} else {
				c[i*ldc+j] = alpha*s + beta*c[i*ldc+j]
			}
		}
	}
}

func (b *cpuBackend[T]) Im2col(g ConvGeom, x []T, cols []T, ld int) {
	if g.Stride == 1 && g.OutW == g.W {
		im2colRuns(g, x, cols, ld)
		return
	}
	im2colRows(g, x, cols, ld)
}

// im2colRows is Im2col one output row at a time.
func im2colRows[T Float](g ConvGeom, x []T, cols []T, ld int) {
	hwo, ow := g.HWo(), g.OutW
	row := 0
	for c := 0; c < g.InC; c++ {
		xc := x[c*g.H*g.W : (c+1)*g.H*g.W]
		for kh := 0; kh < g.KH; kh++ {
			// output rows whose input row ih = oh·S − PadT + kh is inside
			hlo, hhi := validRange(g.OutH, g.Stride, kh-g.PadT, g.H)
			for kw := 0; kw < g.KW; kw++ {
				dst := cols[row*ld : row*ld+hwo]
				row++
				// output columns whose input column iw = ow·S − PadL + kw is inside
				lo, hi := validRange(ow, g.Stride, kw-g.PadL, g.W)
				if lo >= hi || hlo >= hhi {
					clear(dst)
					continue
				}
				clear(dst[:hlo*ow])
				clear(dst[hhi*ow:])
				n := hi - lo
				span := (n-1)*g.Stride + 1
				src := (hlo*g.Stride-g.PadT+kh)*g.W + lo*g.Stride - g.PadL + kw
				for oh := hlo; oh < hhi; oh++ {
					d := dst[oh*ow : (oh+1)*ow]
					for i := 0; i < lo; i++ {
						d[i] = 0
					}
					for i := hi; i < ow; i++ {
						d[i] = 0
					}
					xr := xc[src : src+span]
					src += g.Stride * g.W
					dd := d[lo:hi]
					switch g.Stride {
					case 1:
						copy(dd, xr)
					case 2:
						for o := range dd {
							dd[o] = xr[2*o]
						}
					default:
						for o := range dd {
							dd[o] = xr[o*g.Stride]
						}
					}
				}
			}
		}
	}
}

// im2colRuns is Im2col for stride 1 with output rows as wide as input rows (SAME
// padding): patch row (c, kh, kw) is then, over the output rows that read inside the
// input, one run of the input shifted by kw − PadL, copied at once; the columns
// whose input is padding are cleared afterwards. Only copies: the values are those
// of im2colRows.
func im2colRuns[T Float](g ConvGeom, x []T, cols []T, ld int) {
	hwo, hw := g.HWo(), g.H*g.W
	forEachPatchRun(g, func(p int, r patchRun) {
		dst := cols[p*ld : p*ld+hwo]
		if r.empty() {
			clear(dst)
			return
		}
		clear(dst[:r.d0])
		clear(dst[r.d1:])
		xc := x[r.c*hw : (r.c+1)*hw]
		copy(dst[r.d0:r.d1], xc[r.d0+r.shift:r.d1+r.shift])
		setPadColumns(dst, g.W, r, 0)
	})
}

// patchRun is patch row (c, kh, kw) of a stride-1 convolution whose output rows are
// as wide as its input rows: output rows hlo…hhi−1 and columns lo…hi−1 read inside
// the input, and the run cols[d0:d1] of the row corresponds to the input plane c at
// [d0+shift, d1+shift) (shift = (kh − PadT)·W + kw − PadL).
type patchRun struct {
	c, hlo, hhi, lo, hi, d0, d1, shift int
}

// empty reports whether the row reads no input value.
func (r patchRun) empty() bool { return r.lo >= r.hi || r.hlo >= r.hhi }

// forEachPatchRun calls fn for every patch row p = (c·KH + kh)·KW + kw of g in order.
func forEachPatchRun(g ConvGeom, fn func(p int, r patchRun)) {
	w, p := g.W, 0
	for c := 0; c < g.InC; c++ {
		for kh := 0; kh < g.KH; kh++ {
			hlo, hhi := validRange(g.OutH, 1, kh-g.PadT, g.H)
			for kw := 0; kw < g.KW; kw++ {
				lo, hi := validRange(w, 1, kw-g.PadL, w)
				fn(p, patchRun{c: c, hlo: hlo, hhi: hhi, lo: lo, hi: hi,
					d0: hlo*w + lo, d1: (hhi-1)*w + hi, shift: (kh-g.PadT)*w + kw - g.PadL})
				p++
			}
		}
	}
}

// setPadColumns sets the columns outside lo…hi−1 of output rows hlo…hhi−1 of a
// non-empty patch row (w columns per output row) to v.
func setPadColumns[T Float](row []T, w int, r patchRun, v T) {
	for j := 0; j < w; j++ {
		if j == r.lo {
			j = r.hi - 1 // skip columns lo…hi−1: they read inside the input
			continue
		}
		for oh := r.hlo; oh < r.hhi; oh++ {
			row[oh*w+j] = v
		}
	}
}

// validRange returns the range [lo, hi) of output indices o in [0, n) with
// 0 ≤ o·stride + off < size.
func validRange(n, stride, off, size int) (lo, hi int) {
	lo = 0
	if off < 0 {
		lo = (-off + stride - 1) / stride
	}
	hi = n
	if last := (size - 1 - off); last < 0 {
		hi = 0
	} else if h := last/stride + 1; h < hi {
		hi = h
	}
	if lo > hi {
		lo = hi
	}
	return lo, hi
}

func (b *cpuBackend[T]) Col2im(g ConvGeom, cols []T, ld int, dx []T) {
	if g.Stride == 1 && g.OutW == g.W {
		col2imRuns(g, cols, ld, dx, b.sg != nil)
		return
	}
	b.col2imRows(g, cols, ld, dx)
}

// col2imRuns is Col2im for stride 1 with output rows as wide as input rows (SAME
// padding), the converse of im2colRuns: the columns of patch row (c, kh, kw) whose
// input is padding are set to −0 in cols (which Col2im may overwrite), and the row
// is then added to dx in one run. Each dx value receives the same terms in the same
// order (increasing (c, kh, kw)) as in col2imRows, plus −0s, and x + (−0) = x for
// every x (±0 included), so the bits are col2imRows'. With vec, the run goes
// through the AVX adds (float32 only).
func col2imRuns[T Float](g ConvGeom, cols []T, ld int, dx []T, vec bool) {
	negZero := T(math.Copysign(0, -1))
	hwo, hw := g.HWo(), g.H*g.W
	forEachPatchRun(g, func(p int, r patchRun) {
		if r.empty() {
			return
		}
		src := cols[p*ld : p*ld+hwo]
		setPadColumns(src, g.W, r, negZero)
		xc := dx[r.c*hw : (r.c+1)*hw]
		sr, xr := src[r.d0:r.d1], xc[r.d0+r.shift:r.d1+r.shift]
		if vec {
			addVec(any(sr).([]float32), any(xr).([]float32))
			return
		}
		for i, v := range sr {
			xr[i] += v
		}
	})
}

// col2imRows is Col2im one output row at a time.
func (b *cpuBackend[T]) col2imRows(g ConvGeom, cols []T, ld int, dx []T) {
	hwo := g.HWo()
	row := 0
	for c := 0; c < g.InC; c++ {
		xc := dx[c*g.H*g.W:]
		for kh := 0; kh < g.KH; kh++ {
			for kw := 0; kw < g.KW; kw++ {
				src := cols[row*ld : row*ld+hwo]
				row++
				lo, hi := validRange(g.OutW, g.Stride, kw-g.PadL, g.W)
				if lo >= hi {
					continue
				}
				for oh := 0; oh < g.OutH; oh++ {
					ih := oh*g.Stride - g.PadT + kh
					if ih < 0 || ih >= g.H {
						continue
					}
					iw := lo*g.Stride - g.PadL + kw
					xr := xc[ih*g.W+iw : ih*g.W+iw+(hi-lo-1)*g.Stride+1]
					sr := src[oh*g.OutW+lo : oh*g.OutW+hi]
					if g.Stride == 1 {
						xr = xr[:len(sr)]
						if b.sg != nil {
							addVec(any(sr).([]float32), any(xr).([]float32))
							continue
						}
						for o, v := range sr {
							xr[o] += v
						}
						continue
					}
					for o, v := range sr {
						xr[o*g.Stride] += v
					}
				}
			}
		}
	}
}

func (b *cpuBackend[T]) AvgPool(g PoolGeom, n int, x, y []T) {
	inS, outS := g.H*g.W, g.OutH*g.OutW
	inv := 1 / T(g.KH*g.KW)
	if g.KH == 2 && g.KW == 2 && g.Stride == 2 && b.sg != nil {
		// The general loop's order, from +0, on the AVX2 kernel (row tails in Go).
		xf, yf, invf := any(x).([]float32), any(y).([]float32), float32(inv)
		for sc := 0; sc < n*g.C; sc++ {
			xs := xf[sc*inS : (sc+1)*inS]
			ys := yf[sc*outS : (sc+1)*outS]
			for oh := 0; oh < g.OutH; oh++ {
				yr := ys[oh*g.OutW : (oh+1)*g.OutW]
				x0 := xs[2*oh*g.W : 2*oh*g.W+2*len(yr)]
				x1 := xs[(2*oh+1)*g.W : (2*oh+1)*g.W+2*len(yr)]
				avgPool2s2F32(x0, x1, yr, invf)
				for ow := len(yr) &^ 7; ow < len(yr); ow++ {
					var s float32
					s += x0[2*ow]
					s += x0[2*ow+1]
					s += x1[2*ow]
					s += x1[2*ow+1]
					yr[ow] = s * invf
				}
			}
		}
		return
	}
	if g.KH == 2 && g.KW == 2 && g.Stride == 1 {
		// Same summation order as the general loop: ((x00 + x01) + x10) + x11.
		for sc := 0; sc < n*g.C; sc++ {
			xs := x[sc*inS : (sc+1)*inS]
			ys := y[sc*outS : (sc+1)*outS]
			for oh := 0; oh < g.OutH; oh++ {
				yr := ys[oh*g.OutW : (oh+1)*g.OutW]
				x0 := xs[oh*g.W : oh*g.W+len(yr)+1]
				x1 := xs[(oh+1)*g.W : (oh+1)*g.W+len(yr)+1]
				for ow := range yr {
					yr[ow] = (x0[ow] + x0[ow+1] + x1[ow] + x1[ow+1]) * inv
				}
			}
		}
		return
	}
	for sc := 0; sc < n*g.C; sc++ {
		xs := x[sc*inS : (sc+1)*inS]
		ys := y[sc*outS : (sc+1)*outS]
		for oh := 0; oh < g.OutH; oh++ {
			yr := ys[oh*g.OutW : (oh+1)*g.OutW]
			clear(yr)
			for kh := 0; kh < g.KH; kh++ {
				xr := xs[(oh*g.Stride+kh)*g.W : (oh*g.Stride+kh+1)*g.W]
				for kw := 0; kw < g.KW; kw++ {
					if g.Stride == 1 {
						xv := xr[kw : kw+len(yr)]
						for ow := range yr {
							yr[ow] += xv[ow]
						}
						continue
					}
					for ow := range yr {
						yr[ow] += xr[ow*g.Stride+kw]
					}
				}
			}
			for ow := range yr {
				yr[ow] *= inv
			}
		}
	}
}

func (b *cpuBackend[T]) AvgPoolBack(g PoolGeom, n int, dy, dx []T) {
	inS, outS := g.H*g.W, g.OutH*g.OutW
	inv := 1 / T(g.KH*g.KW)
	if g.KH == 2 && g.KW == 2 && g.Stride == 2 && b.sg != nil {
		// Windows do not overlap: every dx value gets one term, added as in the
		// general loop, on the AVX kernel (row tails in Go).
		dyf, dxf, invf := any(dy).([]float32), any(dx).([]float32), float32(inv)
		for sc := 0; sc < n*g.C; sc++ {
			dxs := dxf[sc*inS : (sc+1)*inS]
			dys := dyf[sc*outS : (sc+1)*outS]
			for oh := 0; oh < g.OutH; oh++ {
				dyr := dys[oh*g.OutW : (oh+1)*g.OutW]
				d0 := dxs[2*oh*g.W : 2*oh*g.W+2*len(dyr)]
				d1 := dxs[(2*oh+1)*g.W : (2*oh+1)*g.W+2*len(dyr)]
				avgPoolBack2s2F32(dyr, d0, d1, invf)
				for ow := len(dyr) &^ 7; ow < len(dyr); ow++ {
					v := dyr[ow] * invf
					d0[2*ow] += v
					d0[2*ow+1] += v
					d1[2*ow] += v
					d1[2*ow+1] += v
				}
			}
		}
		return
	}
	if g.KH == 2 && g.KW == 2 && g.Stride == 1 && g.H == g.OutH+1 && g.W == g.OutW+1 {
		// Gather form of the general scatter loop below, adding in its order: for
		// dx[r][c], the terms of output rows r−1 then r, each with output columns c
		// then c−1.
		// Interior rows add their four terms in a register (one load and one store
		// of dx instead of four read-modify-writes), in the same order.
		ow := g.OutW
		for sc := 0; sc < n*g.C; sc++ {
			dxs := dx[sc*inS : (sc+1)*inS]
			dys := dy[sc*outS : (sc+1)*outS]
			for r := 0; r < g.H; r++ {
				dxr := dxs[r*g.W : (r+1)*g.W]
				if r == 0 || r == g.OutH {
					oh := max(r-1, 0)
					dyr := dys[oh*ow : (oh+1)*ow]
					dxr[0] += dyr[0] * inv
					for c := 1; c < ow; c++ {
						dxr[c] += dyr[c] * inv
						dxr[c] += dyr[c-1] * inv
					}
					dxr[ow] += dyr[ow-1] * inv
					continue
				}
				up, dn := dys[(r-1)*ow:r*ow], dys[r*ow:(r+1)*ow]
				dxr = dxr[:ow+1]
				v := dxr[0]
				v += up[0] * inv
				v += dn[0] * inv
				dxr[0] = v
				for c := 1; c < ow; c++ {
					v := dxr[c]
					v += up[c] * inv
					v += up[c-1] * inv
					v += dn[c] * inv
					v += dn[c-1] * inv
					dxr[c] = v
				}
				v = dxr[ow]
				v += up[ow-1] * inv
				v += dn[ow-1] * inv
				dxr[ow] = v
			}
		}
		return
	}
	for sc := 0; sc < n*g.C; sc++ {
		dxs := dx[sc*inS : (sc+1)*inS]
		dys := dy[sc*outS : (sc+1)*outS]
		for oh := 0; oh < g.OutH; oh++ {
			dyr := dys[oh*g.OutW : (oh+1)*g.OutW]
			for kh := 0; kh < g.KH; kh++ {
				dxr := dxs[(oh*g.Stride+kh)*g.W : (oh*g.Stride+kh+1)*g.W]
				for kw := 0; kw < g.KW; kw++ {
					if g.Stride == 1 {
						dv := dxr[kw : kw+len(dyr)]
						for ow, v := range dyr {
							dv[ow] += v * inv
						}
						continue
					}
					for ow, v := range dyr {
						dxr[ow*g.Stride+kw] += v * inv
					}
				}
			}
		}
	}
}

func (b *cpuBackend[T]) ActForward(f Act, x, y []T) {
	switch f {
	case ActTanh:
		if b.sg != nil {
			tanhVec(any(x).([]float32), any(y).([]float32)[:len(x)])
			return
		}
		for i, v := range x {
			y[i] = T(math.Tanh(float64(v)))
		}
	case ActELU:
		for i, v := range x {
			if v > 0 {
				y[i] = v
			} else {
				y[i] = T(math.Expm1(float64(v)))
			}
		}
	}
}

// actD1 returns f'(x) given x and y = f(x).
func actD1[T Float](f Act, x, y T) T {
	if f == ActTanh {
		return 1 - y*y
	}
	if x > 0 {
		return 1
	}
	return y + 1
}

// actD2 returns f”(x) given x and y = f(x).
func actD2[T Float](f Act, x, y T) T {
	if f == ActTanh {
		return -2 * y * (1 - y*y)
	}
	if x > 0 {
		return 0
	}
	return y + 1
}

func (b *cpuBackend[T]) ActBackward(f Act, x, y, dy, dx []T) {
	if f == ActTanh && b.sg != nil { // the same rounding as the loop below
		n := len(dx)
		tanhBackF32(any(y[:n]).([]float32), any(dy[:n]).([]float32), any(dx).([]float32))
		return
	}
	for i := range dx {
		dx[i] = actD1(f, x[i], y[i]) * dy[i]
	}
}

func (b *cpuBackend[T]) ActTangent(f Act, n, k, size int, x, y, dy, tx, ty, tdy, tdx []T) {
	// f'(x) and f''(x) of one sample, computed once for its k directions (the same
	// values and the same expression order as computing them per direction).
	d := make([]T, 2*size)
	d1, d2 := d[:size], d[size:]
	for s := 0; s < n; s++ {
		xs, ys := x[s*size:(s+1)*size], y[s*size:(s+1)*size]
		for i := range xs {
			d1[i] = actD1(f, xs[i], ys[i])
		}
		if tdy != nil { // f'' only for the tangent of the backward pass
			for i := range xs {
				d2[i] = actD2(f, xs[i], ys[i])
			}
		}
		var dys []T
		if tdy != nil {
			dys = dy[s*size : (s+1)*size]
		}
		if b.sg != nil { // AVX kernels, the same rounding as the loops below
			f1, f2 := any(d1).([]float32), any(d2).([]float32)
			for j := 0; j < k; j++ {
				r := (s*k + j) * size
				txr := any(tx[r : r+size]).([]float32)
				if ty != nil {
					mulVec(f1, txr, any(ty[r:r+size]).([]float32))
				}
				if tdy != nil {
					actTanVec(f1, any(tdy[r:r+size]).([]float32), f2, txr, any(dys).([]float32), any(tdx[r:r+size]).([]float32))
				}
			}
			continue
		}
		for j := 0; j < k; j++ {
			r := (s*k + j) * size
			txr := tx[r : r+size]
			if ty != nil {
				tyr := ty[r : r+size]
				for i, v := range txr {
					tyr[i] = d1[i] * v
				}
			}
			if tdy != nil {
				tdyr, tdxr := tdy[r:r+size], tdx[r:r+size]
				for i, v := range txr {
					tdxr[i] = d1[i]*tdyr[i] + d2[i]*v*dys[i]
				}
			}
		}
	}
}

func (b *cpuBackend[T]) Dot(x, y []T) float64 {
	y = y[:len(x)]
	if b.sg != nil {
		return dotVec(any(x).([]float32), any(y).([]float32))
	}
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s0 += float64(x[i]) * float64(y[i])
		s1 += float64(x[i+1]) * float64(y[i+1])
		s2 += float64(x[i+2]) * float64(y[i+2])
		s3 += float64(x[i+3]) * float64(y[i+3])
	}
	for ; i < len(x); i++ {
		s0 += float64(x[i]) * float64(y[i])
	}
	return (s0 + s1) + (s2 + s3)
}

func (b *cpuBackend[T]) DotSq(x, y []T) (xy, yy float64) {
	y = y[:len(x)]
	if b.sg != nil {
		return dotSqVec(any(x).([]float32), any(y).([]float32))
	}
	var a0, a1, b0, b1 float64
	i := 0
	for ; i+2 <= len(x); i += 2 {
		y0, y1 := float64(y[i]), float64(y[i+1])
		a0 += float64(x[i]) * y0
		a1 += float64(x[i+1]) * y1
		b0 += y0 * y0
		b1 += y1 * y1
	}
	for ; i < len(x); i++ {
		yv := float64(y[i])
		a0 += float64(x[i]) * yv
		b0 += yv * yv
	}
	return a0 + a1, b0 + b1
}

// addScaled adds sc·g to acc in float64.
func (b *cpuBackend[T]) addScaled(acc []float64, sc float64, g []T) {
	if b.sg != nil {
		axpyVec(acc[:len(g)], sc, any(g).([]float32))
		return
	}
	addScaled(acc, sc, g)
}
