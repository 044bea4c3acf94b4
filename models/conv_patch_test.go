package models

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestPatchMajorIm2col checks im2colT and col2imT against the column-major Im2col
// and Col2im (a second implementation): the same patch values transposed, and
// bit-identical input gradients, for strides 1–3, square and odd kernels and
// asymmetric padding.
func TestPatchMajorIm2col(t *testing.T) {
	be := &cpuBackend[float32]{workers: 1}
	for _, g := range []ConvGeom{
		{InC: 1, H: 28, W: 28, KH: 8, KW: 8, Stride: 2, PadT: 3, PadB: 3, PadL: 3, PadR: 3},
		{InC: 16, H: 13, W: 13, KH: 4, KW: 4, Stride: 2},
		{InC: 3, H: 9, W: 7, KH: 3, KW: 3, Stride: 1, PadT: 1, PadB: 1, PadL: 1, PadR: 1},
		{InC: 2, H: 11, W: 10, KH: 5, KW: 3, Stride: 3, PadT: 2, PadB: 0, PadL: 0, PadR: 2},
		{InC: 2, H: 6, W: 6, KH: 3, KW: 3, Stride: 2, PadT: 2, PadB: 2, PadL: 2, PadR: 2},
	} {
		g.OutH = (g.H+g.PadT+g.PadB-g.KH)/g.Stride + 1
		g.OutW = (g.W+g.PadL+g.PadR-g.KW)/g.Stride + 1
		ckk, hwo, inN := g.CKK(), g.HWo(), g.InC*g.H*g.W
		rng := rand.New(rand.NewPCG(uint64(ckk), uint64(hwo)))
		x := make([]float32, inN)
		for i := range x {
			x[i] = rng.Float32() - 0.5
		}
		cols, colsT := make([]float32, ckk*hwo), make([]float32, ckk*hwo)
		be.Im2col(g, x, cols, hwo)
		im2colT(g, x, colsT)
		for q := 0; q < ckk; q++ {
			for p := 0; p < hwo; p++ {
				if cols[q*hwo+p] != colsT[p*ckk+q] {
					t.Fatalf("%+v: im2colT[%d][%d] = %v, Im2col = %v", g, p, q, colsT[p*ckk+q], cols[q*hwo+p])
				}
			}
		}
		// col2im of the same patch gradients in both layouts
		for i := range cols {
			cols[i] = rng.Float32() - 0.5
		}
		transposeRows(1, ckk, hwo, cols, colsT)
		dx, dxT := make([]float32, inN), make([]float32, inN)
		be.Col2im(g, cols, hwo, dx)
		col2imT(g, colsT, dxT)
		for i := range dx {
			if math.Float32bits(dx[i]) != math.Float32bits(dxT[i]) {
				t.Fatalf("%+v: col2imT[%d] = %v, Col2im = %v (not bit-identical)", g, i, dxT[i], dx[i])
			}
		}
	}
}

// TestPatchMajorBitIdentical checks that the CPU's fast conv paths (patch-major
// layers, transposed weight gradients, the one-sample dense forward: everything Network.patchT turns on) give results bit-identical to
// the plain column-major passes on every pass: per-sample gradients, clipped
// sums, input gradients, FIL values and tangents with input and parameter
// directions, the input gradient of a clipped dot.
func TestPatchMajorBitIdentical(t *testing.T) {
	if !hasAVX2FMA() {
		t.Skip("patch-major layers run on the packed float32 GEMM only (needs AVX2 and FMA)")
	}
	// a small stride-1 net (cifar-cnn's layer kinds, one sample per first-order
	// chunk) for the column-major fast paths: transposed weight gradients, the
	// one-sample dense forward (with transposed weights at batch ≥ minDenseTBatch)
	small := Arch{Name: "small-s1", Input: Shape{C: 3, H: 48, W: 48}, Classes: 10, Layers: []LayerSpec{
		{Kind: KindNormalize, Mean: CIFAR10Mean, Std: CIFAR10Std},
		ConvSame(16, 3, 1, 48, 48), layerTanh, ConvSame(16, 3, 1, 48, 48), layerTanh, AvgPool(4, 4),
		layerFlatten, Dense(128), layerTanh, Dense(10), // 128 wide: the one-row GEMMs
	}}
	// 32×32 stride-1 layers: patch matrices of 1 024 columns per sample, whose row
	// stride the fast path pads (colLD)
	small32 := Arch{Name: "small-s1-32", Input: Shape{C: 3, H: 32, W: 32}, Classes: 10, Layers: []LayerSpec{
		ConvSame(8, 3, 1, 32, 32), layerTanh, ConvSame(8, 3, 1, 32, 32), layerTanh, AvgPool(4, 4),
		layerFlatten, Dense(16), layerTanh, Dense(10),
	}}
	mnist, _ := ArchByName("mnist-cnn")
	mnist3, _ := ArchByName("mnist-cnn-3x3")
	for _, tc := range []struct {
		arch  Arch
		batch int
	}{{mnist, 9}, {mnist3, 9}, {small, 9}, {small, 1}, {small32, 5}, {small32, 1}, {mnist, 1}} {
		arch, batch := tc.arch, tc.batch
		name := fmt.Sprintf("%s/batch%d", arch.Name, batch)
		t.Run(name, func(t *testing.T) {
			const k = 4
			rng := rand.New(rand.NewPCG(3, 4))
			params, x, y, coords := testProblem(arch, 5, batch, k, rng, false)
			d, P := arch.InputDim(), len(params)
			xdot, pdot, v := make([]float32, batch*k*d), make([]float32, batch*k*P), make([]float32, P)
			for i := range xdot {
				xdot[i] = rng.Float32() - 0.5
			}
			for i := range pdot {
				pdot[i] = 0.01 * (rng.Float32() - 0.5)
			}
			for i := range v {
				v[i] = rng.Float32() - 0.5
			}
			clip := Clip{C: 0.5}
			run := func(patch bool) [][]float32 {
				net, err := NewNetwork(arch, NewCPUBackend[float32]())
				if err != nil {
					t.Fatal(err)
				}
				if patch && !net.patchT {
					t.Fatal("the CPU backend with the packed GEMM does not select patch-major layers")
				}
				net.patchT = patch
				var out [][]float32
				add := func(v []float32, err error) {
					if err != nil {
						t.Fatal(err)
					}
					out = append(out, v)
				}
				g, l, err := net.PerSampleGrads(params, x, y, batch)
				add(g, err)
				add(l, err)
				sum, losses := make([]float32, P), make([]float64, batch)
				err = net.ClippedGradSum(params, x, y, batch, clip, sum, losses)
				add(sum, err)
				add(net.InputGrads(params, x, y, batch))
				fil := make([]float64, batch)
				err = net.FILSqNorms(params, x, y, batch, clip, coords, fil)
				f32 := make([]float32, 2*batch)
				for i, v := range fil { // both halves of the float64 bits
					b := math.Float64bits(v)
					f32[2*i], f32[2*i+1] = math.Float32frombits(uint32(b)), math.Float32frombits(uint32(b>>32))
				}
				add(f32, err)
				tg, err := net.Tangent(params, x, y, batch, k, xdot, pdot, true)
				if err != nil {
					t.Fatal(err)
				}
				add(tg.GradDots, nil)
				add(tg.InputGradDots, nil)
				add(net.InputGradOfClippedDot(params, x, y, batch, v, clip))
				return out
			}
			want, got := run(false), run(true)
			names := []string{"grads", "losses", "clipped sum", "input grads", "FIL", "tangent grads", "tangent input grads", "input grad of clipped dot"}
			for i := range want {
				if !slices.EqualFunc(want[i], got[i], func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }) {
					t.Errorf("%s: %s with the fast paths differ from the plain column-major passes", name, names[i])
				}
			}
		})
	}
}

// TestCol2imVectorBitIdentical checks Col2im on the CPU backends — the run form of
// SAME stride-1 layers (col2imRuns), with Go adds and with the AVX adds (addVec) —
// against the row-by-row form (col2imRows), bit for bit, with −0, +0 and random
// values in dx; and Im2col's run form against its row form, with cols filled with
// NaN first so that every value must be written.
func TestCol2imVectorBitIdentical(t *testing.T) {
	backends := map[string]*cpuBackend[float32]{"go": {workers: 1}}
	if hasAVX2FMA() {
		backends["vector"] = &cpuBackend[float32]{workers: 1, sg: &packedSgemm{}}
	}
	for _, g := range []ConvGeom{
		{InC: 3, H: 32, W: 32, KH: 3, KW: 3, Stride: 1, PadT: 1, PadB: 1, PadL: 1, PadR: 1},
		{InC: 2, H: 8, W: 13, KH: 3, KW: 2, Stride: 1, PadT: 1, PadB: 1, PadL: 0, PadR: 1},
		{InC: 2, H: 7, W: 5, KH: 5, KW: 5, Stride: 1, PadT: 2, PadB: 2, PadL: 2, PadR: 2},
		{InC: 1, H: 4, W: 9, KH: 3, KW: 3, Stride: 1, PadT: 0, PadB: 2, PadL: 2, PadR: 0},
		{InC: 2, H: 5, W: 6, KH: 1, KW: 2, Stride: 1, PadL: 1}, // one real term per pixel
		{InC: 2, H: 6, W: 5, KH: 2, KW: 2, Stride: 1},
	} {
		g.OutH = (g.H+g.PadT+g.PadB-g.KH)/g.Stride + 1
		g.OutW = (g.W+g.PadL+g.PadR-g.KW)/g.Stride + 1
		rng := rand.New(rand.NewPCG(uint64(g.W), uint64(g.KH)))
		ld := g.HWo() + 3
		cols := make([]float32, g.CKK()*ld)
		for i := range cols {
			switch i % 4 {
			case 0:
				cols[i] = float32(math.Copysign(0, -1))
			case 1:
			default:
				cols[i] = rng.Float32() - 0.5
			}
		}
		dx0 := make([]float32, g.InC*g.H*g.W)
		for i := range dx0 {
			switch i % 5 {
			case 0:
				dx0[i] = float32(math.Copysign(0, -1))
			case 1:
			default:
				dx0[i] = rng.Float32()
			}
		}
		want := slices.Clone(dx0)
		(&cpuBackend[float32]{workers: 1}).col2imRows(g, slices.Clone(cols), ld, want)
		for name, be := range backends {
			got := slices.Clone(dx0)
			be.Col2im(g, slices.Clone(cols), ld, got)
			if !slices.EqualFunc(got, want, func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }) {
				t.Fatalf("%s %+v: Col2im differs from the row-by-row form", name, g)
			}
		}
		x := make([]float32, g.InC*g.H*g.W)
		for i := range x {
			x[i] = rng.Float32() - 0.5
		}
		wantC, gotC := make([]float32, len(cols)), make([]float32, len(cols))
		for i := range gotC {
			wantC[i], gotC[i] = float32(math.NaN()), float32(math.NaN())
		}
		im2colRows(g, x, wantC, ld)
		backends["go"].Im2col(g, x, gotC, ld)
		if !slices.EqualFunc(gotC, wantC, func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }) {
			t.Fatalf("%+v: Im2col differs from the row-by-row form", g)
		}
	}
}

// TestFILFusedBitIdentical checks that FILSqNorms with the layers' fused reductions
// (workspace.fil: one direction's weight tangent formed and reduced in a scratch)
// and with windowed tangents (tangent_window.go), each on its own and together,
// gives the bits of the plain route (dense tangents, reductions through ws.tg), for
// conv nets with strided first layers (tanh and ELU, 2×2 stride-1 pools), an MLP
// whose first layer is dense (not fused, not windowed) and a stride-1 net whose
// pool is not windowed, with several passes of directions per sample.
func TestFILFusedBitIdentical(t *testing.T) {
	small := Arch{Name: "small-dense", Input: Shape{C: 1, H: 12, W: 12}, Classes: 10, Layers: []LayerSpec{
		ConvSame(4, 3, 1, 12, 12), layerTanh, AvgPool(2, 2),
		layerFlatten, Dense(130), layerTanh, Dense(40), layerTanh, Dense(10),
	}}
	// an ELU after a strided conv first layer, then a 2×2 stride-1 pool: windowed
	elu := Arch{Name: "small-elu", Input: Shape{C: 2, H: 15, W: 15}, Classes: 10, Layers: []LayerSpec{
		Conv(6, 3, 2, 1), layerELU, AvgPool(2, 1),
		layerFlatten, Dense(12), layerTanh, Dense(10),
	}}
	mnist, _ := ArchByName("mnist-cnn")
	mnist3, _ := ArchByName("mnist-cnn-3x3")
	mlp, _ := ArchByName("mlp")
	for _, arch := range []Arch{mnist, mnist3, mlp, small, elu} {
		t.Run(arch.Name, func(t *testing.T) {
			const batch, k = 5, 70
			rng := rand.New(rand.NewPCG(11, 12))
			params, x, y, coords := testProblem(arch, 9, batch, k, rng, true)
			run := func(fuse, win bool) []float64 {
				net, err := NewNetwork(arch, NewCPUBackend[float32]())
				if err != nil {
					t.Fatal(err)
				}
				if !net.filFuse || !net.tangentWindows {
					t.Fatal("the CPU backend does not fuse the FIL reductions or window the tangents")
				}
				net.filFuse, net.tangentWindows = fuse, win
				out := make([]float64, batch)
				if err := net.FILSqNorms(params, x, y, batch, Clip{C: 0.3}, coords, out); err != nil {
					t.Fatal(err)
				}
				return out
			}
			want := run(false, false)
			for _, c := range [][2]bool{{true, false}, {false, true}, {true, true}} {
				got := run(c[0], c[1])
				for s := range want {
					if math.Float64bits(want[s]) != math.Float64bits(got[s]) {
						t.Fatalf("sample %d: FIL %v with fused reductions %v, windowed tangents %v; %v without", s, got[s], c[0], c[1], want[s])
					}
				}
			}
		})
	}
}
