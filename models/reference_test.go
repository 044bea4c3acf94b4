package models

import (
	"math"
	"math/rand/v2"
	"testing"
)

// naiveForward is an independent, direct-loop float64 implementation of an Arch's
// forward pass for one sample (no im2col, no GEMM), used as the reference for the
// engine's forward pass.
func naiveForward(arch Arch, params, x []float64) []float64 {
	shapes, err := arch.Shapes()
	if err != nil {
		panic(err)
	}
	ps, _ := arch.Params()
	pi := 0
	a := append([]float64(nil), x...)
	for li, l := range arch.Layers {
		in, out := shapes[li], shapes[li+1]
		next := make([]float64, out.Size())
		switch l.Kind {
		case KindConv:
			W, b := params[ps[pi].Offset:], params[ps[pi+1].Offset:]
			pi += 2
			for o := 0; o < out.C; o++ {
				for oh := 0; oh < out.H; oh++ {
					for ow := 0; ow < out.W; ow++ {
						s := b[o]
						for c := 0; c < in.C; c++ {
							for kh := 0; kh < l.KH; kh++ {
								for kw := 0; kw < l.KW; kw++ {
									ih, iw := oh*l.Stride+kh-l.PadT, ow*l.Stride+kw-l.PadL
									if ih < 0 || iw < 0 || ih >= in.H || iw >= in.W {
										continue
									}
									s += W[((o*in.C+c)*l.KH+kh)*l.KW+kw] * a[(c*in.H+ih)*in.W+iw]
								}
							}
						}
						next[(o*out.H+oh)*out.W+ow] = s
					}
				}
			}
		case KindDense:
			W, b := params[ps[pi].Offset:], params[ps[pi+1].Offset:]
			pi += 2
			for o := range next {
				s := b[o]
				for i, v := range a {
					s += W[o*len(a)+i] * v
				}
				next[o] = s
			}
		case KindAvgPool:
			for c := 0; c < out.C; c++ {
				for oh := 0; oh < out.H; oh++ {
					for ow := 0; ow < out.W; ow++ {
						var s float64
						for kh := 0; kh < l.KH; kh++ {
							for kw := 0; kw < l.KW; kw++ {
								s += a[(c*in.H+oh*l.Stride+kh)*in.W+ow*l.Stride+kw]
							}
						}
						next[(c*out.H+oh)*out.W+ow] = s / float64(l.KH*l.KW)
					}
				}
			}
		case KindTanh:
			for i, v := range a {
				next[i] = math.Tanh(v)
			}
		case KindELU:
			for i, v := range a {
				if v > 0 {
					next[i] = v
				} else {
					next[i] = math.Exp(v) - 1
				}
			}
		case KindFlatten:
			copy(next, a)
		case KindNormalize:
			hw := in.H * in.W
			for i, v := range a {
				c := i / hw
				next[i] = (v - l.Mean[c]) / l.Std[c]
			}
		}
		a = next
	}
	return a
}

// TestForwardVsNaive compares the engine's logits with the direct-loop reference
// for every network and the single-layer networks, on every backend.
func TestForwardVsNaive(t *testing.T) {
	archs := singleLayerArchs()
	for _, tc := range testArchs(t) {
		archs = append(archs, tc.arch)
	}
	for _, bc := range backends64() {
		for _, arch := range archs {
			t.Run(bc.name+"/"+arch.Name, func(t *testing.T) {
				n := newNet64(t, arch, bc)
				const B = 2
				params, x, _ := randomProblem(arch, B, 9)
				z, err := n.Forward(params, x, B)
				if err != nil {
					t.Fatal(err)
				}
				D, K := arch.InputDim(), arch.Classes
				for s := 0; s < B; s++ {
					want := naiveForward(arch, params, x[s*D:(s+1)*D])
					if e := relErr(z[s*K:(s+1)*K], want); e > 1e-12 {
						t.Errorf("sample %d: logits %v, reference %v (rel. error %.3g)", s, z[s*K:(s+1)*K], want, e)
					}
				}
			})
		}
	}
}

// TestKernelAdjoints checks that Col2im is the adjoint of Im2col and AvgPoolBack the
// adjoint of AvgPool: ⟨Ax, y⟩ = ⟨x, Aᵀy⟩ for random x, y.
func TestKernelAdjoints(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 11))
	for _, bc := range backends64() {
		be := bc.new()
		convs := []ConvGeom{
			{InC: 2, H: 7, W: 6, KH: 3, KW: 2, Stride: 2, PadT: 1, PadB: 2, PadL: 0, PadR: 1},
			{InC: 1, H: 28, W: 28, KH: 8, KW: 8, Stride: 2, PadT: 3, PadB: 3, PadL: 3, PadR: 3},
		}
		for _, g := range convs {
			g.OutH = (g.H+g.PadT+g.PadB-g.KH)/g.Stride + 1
			g.OutW = (g.W+g.PadL+g.PadR-g.KW)/g.Stride + 1
			x := randVec(rng, g.InC*g.H*g.W)
			ld := g.HWo() + 3 // patch rows in a wider matrix
			c := randVec(rng, g.CKK()*ld)
			for r := 0; r < g.CKK(); r++ {
				for p := g.HWo(); p < ld; p++ {
					c[r*ld+p] = 0
				}
			}
			ax := be.Alloc(len(c))
			be.Im2col(g, x, ax, ld)
			aty := be.Alloc(len(x))
			be.Col2im(g, c, ld, aty)
			if l, r := dot(ax, c), dot(x, aty); math.Abs(l-r) > 1e-12 {
				t.Errorf("%s: im2col/col2im not adjoint: %v vs %v", bc.name, l, r)
			}
		}
		pg := PoolGeom{C: 3, H: 6, W: 5, KH: 2, KW: 3, Stride: 2}
		pg.OutH, pg.OutW = (pg.H-pg.KH)/pg.Stride+1, (pg.W-pg.KW)/pg.Stride+1
		const n = 2
		x := randVec(rng, n*pg.C*pg.H*pg.W)
		y := randVec(rng, n*pg.C*pg.OutH*pg.OutW)
		ax := be.Alloc(len(y))
		be.AvgPool(pg, n, x, ax)
		aty := be.Alloc(len(x))
		be.AvgPoolBack(pg, n, y, aty)
		if l, r := dot(ax, y), dot(x, aty); math.Abs(l-r) > 1e-12 {
			t.Errorf("%s: avgpool not adjoint: %v vs %v", bc.name, l, r)
		}
	}
}

// TestInitParams checks the stax-default initialisation: determinism, the bias
// scales, and the truncated Glorot-normal weight scale and range.
func TestInitParams(t *testing.T) {
	arch, _ := ArchByName("cifar-cnn")
	a, b, c := InitParams(arch, 1), InitParams(arch, 1), InitParams(arch, 2)
	if relErr(a, b) != 0 {
		t.Fatal("same seed gave different parameters")
	}
	if relErr(a, c) == 0 {
		t.Fatal("different seeds gave the same parameters")
	}
	ps, _ := arch.Params()
	shapes, _ := arch.Shapes()
	for _, p := range ps {
		v := a[p.Offset : p.Offset+p.Size]
		var ss, mx float64
		for _, x := range v {
			ss += x * x
			mx = math.Max(mx, math.Abs(x))
		}
		sd := math.Sqrt(ss / float64(len(v)))
		l := arch.Layers[p.Layer]
		var want, bound float64
		switch {
		case len(p.Dims) == 1 && l.Kind == KindConv:
			want, bound = 1e-6, 1e-5
		case len(p.Dims) == 1:
			want, bound = 1e-2, 1e-1
		default:
			fanIn, fanOut := p.Dims[1], p.Dims[0]
			if l.Kind == KindConv {
				fanIn, fanOut = shapes[p.Layer].C*l.KH*l.KW, l.Out*l.KH*l.KW
			}
			// the truncated normal rescaled by 0.8796 has exactly the Glorot variance
			want = math.Sqrt(2 / float64(fanIn+fanOut))
			bound = 2 * want / truncNormalStd
		}
		tol := 4 / math.Sqrt(float64(len(v))) // relative standard error of an SD, generous
		if math.Abs(sd/want-1) > math.Max(tol, 0.05) {
			t.Errorf("%s: sd %.4g, want %.4g", p.Name, sd, want)
		}
		if mx > bound*(1+1e-12) {
			t.Errorf("%s: max |w| %.4g beyond %.4g", p.Name, mx, bound)
		}
	}
}

// TestValidRange compares validRange with a brute-force scan.
func TestValidRange(t *testing.T) {
	for n := 0; n < 6; n++ {
		for stride := 1; stride < 4; stride++ {
			for off := -5; off < 6; off++ {
				for size := 1; size < 8; size++ {
					lo, hi := validRange(n, stride, off, size)
					for o := 0; o < n; o++ {
						in := o*stride+off >= 0 && o*stride+off < size
						if in != (o >= lo && o < hi) {
							t.Fatalf("n=%d stride=%d off=%d size=%d: [%d,%d) wrong at %d", n, stride, off, size, lo, hi, o)
						}
					}
				}
			}
		}
	}
}

// TestGemmTiledMatchesGeneric checks the tiled CPU GEMM (all transpose cases, beta ≠ 0,
// leading dimensions wider than the matrices) against the plain triple loop.
func TestGemmTiledMatchesGeneric(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 13))
	be := &cpuBackend[float64]{workers: 2, tile: true}
	for _, tA := range []bool{false, true} {
		for _, tB := range []bool{false, true} {
			m, n, k := 150, 410, 37
			ar, ac := m, k
			if tA {
				ar, ac = k, m
			}
			br, bc := k, n
			if tB {
				br, bc = n, k
			}
			lda, ldb, ldc := ac+3, bc+5, n+2
			a, b := randVec(rng, ar*lda), randVec(rng, br*ldb)
			c := randVec(rng, m*ldc)
			want := append([]float64(nil), c...)
			be.Gemm(tA, tB, m, n, k, 0.7, a, lda, b, ldb, 0.3, c, ldc)
			gemmGeneric(tA, tB, m, n, k, 0.7, a, lda, b, ldb, 0.3, want, ldc)
			if e := relErr(c, want); e > 1e-13 {
				t.Errorf("transA=%v transB=%v: rel. error %.3g", tA, tB, e)
			}
		}
	}
}

func TestDotKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 14))
	be := NewCPUBackend[float64]()
	for _, n := range []int{0, 1, 2, 3, 4, 5, 7, 1001} {
		x, y := randVec(rng, n+1)[:n], randVec(rng, n+1)[:n]
		var xy, yy float64
		for i := range x {
			xy += x[i] * y[i]
			yy += y[i] * y[i]
		}
		a, b := be.DotSq(x, y)
		if d := be.Dot(x, y); math.Abs(d-xy) > 1e-14 || math.Abs(a-xy) > 1e-14 || math.Abs(b-yy) > 1e-14 {
			t.Errorf("n=%d: Dot %v, DotSq %v %v, want %v %v", n, d, a, b, xy, yy)
		}
	}
}
