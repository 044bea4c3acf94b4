package models

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
)

// TestWinogradF23 checks the F(2, 3) matrices: Aᵀ[(G·g) ⊙ (Bᵀ·d)] equals the direct
// correlation y_k = Σ_j d_{k+j}·g_j, in float64 on random inputs.
func TestWinogradF23(t *testing.T) {
	bt, G, at := winoMatrices()
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 100; trial++ {
		var d [4]float64
		var g [3]float64
		for i := range d {
			d[i] = rng.NormFloat64()
		}
		for i := range g {
			g[i] = rng.NormFloat64()
		}
		var m [4]float64
		for r := 0; r < 4; r++ {
			var u, v float64
			for j := 0; j < 3; j++ {
				u += G[r][j] * g[j]
			}
			for j := 0; j < 4; j++ {
				v += bt[r][j] * d[j]
			}
			m[r] = u * v
		}
		for k := 0; k < 2; k++ {
			var y, want float64
			for r := 0; r < 4; r++ {
				y += at[k][r] * m[r]
			}
			for j := 0; j < 3; j++ {
				want += d[k+j] * g[j]
			}
			if math.Abs(y-want) > 1e-13*(1+math.Abs(want)) {
				t.Fatalf("trial %d: y_%d = %v, direct %v", trial, k, y, want)
			}
		}
	}
}

// TestWinogradTables checks the tables of F(m, 3) for m = 2 and 4 (winoTables):
// Aᵀ[(G·g) ⊙ (Bᵀ·d)] equals the direct correlation y_k = Σ_j d_{k+j}·g_j, in
// float64 on random inputs; m = 2 is winoMatrices.
func TestWinogradTables(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, m := range []int{2, 4} {
		bt, G, at := winoTables(m)
		a := m + 2
		if len(bt) != a || len(G) != a || len(at) != m {
			t.Fatalf("m = %d: %d×, %d×, %d× tables", m, len(bt), len(G), len(at))
		}
		for trial := 0; trial < 100; trial++ {
			d := make([]float64, a)
			var g [3]float64
			for i := range d {
				d[i] = rng.NormFloat64()
			}
			for i := range g {
				g[i] = rng.NormFloat64()
			}
			mv := make([]float64, a)
			for r := 0; r < a; r++ {
				var u, v float64
				for j := 0; j < 3; j++ {
					u += G[r][j] * g[j]
				}
				for j := 0; j < a; j++ {
					v += bt[r][j] * d[j]
				}
				mv[r] = u * v
			}
			for k := 0; k < m; k++ {
				var y, want float64
				for r := 0; r < a; r++ {
					y += at[k][r] * mv[r]
				}
				for j := 0; j < 3; j++ {
					want += d[k+j] * g[j]
				}
				if math.Abs(y-want) > 1e-13*(1+math.Abs(want)) {
					t.Fatalf("m = %d, trial %d: y_%d = %v, direct %v", m, trial, k, y, want)
				}
			}
		}
	}
}

// winoTestArch is one 3×3 stride-1 conv layer on a C×H×W input (then flatten and
// dense, so that the network is complete).
func winoTestArch(c, h, w, out, padT, padB, padL, padR int) Arch {
	return Arch{Name: "wino", Input: Shape{C: c, H: h, W: w}, Classes: 2, Layers: []LayerSpec{
		{Kind: KindConv, Out: out, KH: 3, KW: 3, Stride: 1, PadT: padT, PadB: padB, PadL: padL, PadR: padR},
		layerFlatten, Dense(2),
	}}
}

// TestWinogradConv compares, in float64, a Winograd conv layer's forward output,
// input gradient and per-sample weight and bias gradients (and their squared norms)
// with the direct im2col layer on the same random inputs and output gradients, over
// odd and even sizes, paddings 0, 1 and 2 (and asymmetric), and several samples,
// for F(2×2, 3×3) (to 10⁻¹² of the largest value) and F(4×4, 3×3) (10⁻¹⁰: its
// larger transform entries round more).
func TestWinogradConv(t *testing.T) {
	for _, algo := range []ConvAlgo{ConvWinograd, ConvWinograd4} {
		t.Run(algo.String(), func(t *testing.T) { testWinogradConv(t, algo) })
	}
}

func testWinogradConv(t *testing.T, algo ConvAlgo) {
	tol, tile := 1e-12, 2
	if algo == ConvWinograd4 {
		tol, tile = 1e-10, 4
	}
	var worst float64
	defer func() { t.Logf("largest difference from direct, relative to the largest value: %.3g", worst) }()
	for _, tc := range []struct {
		c, h, w, out, pt, pb, pl, pr, cs int
	}{
		{1, 3, 3, 1, 0, 0, 0, 0, 1},
		{1, 4, 4, 1, 0, 0, 0, 0, 2},
		{2, 5, 7, 3, 1, 1, 1, 1, 3},
		{3, 8, 8, 4, 1, 1, 1, 1, 2},
		{5, 9, 6, 7, 0, 0, 0, 0, 3},
		{4, 7, 10, 2, 1, 0, 0, 1, 2},
		{7, 6, 5, 11, 0, 1, 1, 0, 1},
		{20, 11, 9, 17, 1, 1, 1, 1, 2},
		{13, 12, 13, 20, 2, 1, 0, 2, 3},
		{3, 3, 4, 5, 1, 1, 1, 1, 4},
		{6, 17, 15, 5, 1, 1, 1, 1, 2},
		{4, 10, 18, 3, 2, 2, 0, 1, 3},
		{9, 16, 16, 8, 1, 1, 1, 1, 1},
		{2, 13, 6, 3, 0, 2, 2, 0, 2},
		{3, 24, 24, 5, 1, 1, 1, 1, 1},
		{2, 22, 19, 3, 0, 1, 2, 0, 1},
	} {
		name := fmt.Sprintf("c%d_%dx%d_o%d_pad%d%d%d%d_s%d", tc.c, tc.h, tc.w, tc.out, tc.pt, tc.pb, tc.pl, tc.pr, tc.cs)
		t.Run(name, func(t *testing.T) {
			arch := winoTestArch(tc.c, tc.h, tc.w, tc.out, tc.pt, tc.pb, tc.pl, tc.pr)
			n, err := NewNetwork(arch, NewCPUBackend[float64]())
			if err != nil {
				t.Fatal(err)
			}
			if err := n.SetConvAlgo(algo); err != nil {
				t.Fatal(err)
			}
			if p := n.ConvPlan(); len(p) != 1 || !p[0].Winograd() || p[0].Tile != tile {
				t.Fatalf("plan %+v, want the conv layer as Winograd with %d×%d tiles", p, tile, tile)
			}
			rng := rand.New(rand.NewPCG(uint64(tc.c), uint64(tc.h*100+tc.w)))
			params := make([]float64, n.p)
			for i := range params {
				params[i] = rng.NormFloat64()
			}
			cs := tc.cs
			n.ws = make([]*workspace[float64], 1)
			n.winoPrepare(params)
			wd := n.workspaceFor(0, cs, 0, false)
			ww := n.winoWorkspace(0, cs)
			// poison the Winograd buffers: nothing may depend on what a
			// previous layer or call left there
			for _, b := range [][]float64{ww.wino.v[0], ww.wino.m, ww.wino.dv, ww.wino.du, ww.wino.scr} {
				for i := range b {
					b[i] = math.NaN()
				}
			}
			l := n.layers[0]
			for i := range wd.acts[0][:cs*l.inN] {
				v := rng.NormFloat64()
				wd.acts[0][i], ww.acts[0][i] = v, v
			}
			for i := range wd.dlt[1][:cs*l.outN] {
				v := rng.NormFloat64()
				wd.dlt[1][i], ww.dlt[1][i] = v, v
			}
			for _, ws := range []*workspace[float64]{wd, ww} {
				// poison what the layer must overwrite
				for i := range ws.acts[1][:cs*l.outN] {
					ws.acts[1][i] = math.NaN()
				}
				for i := range ws.dlt[0][:cs*l.inN] {
					ws.dlt[0][i] = math.NaN()
				}
				for i := range ws.grads[:cs*n.p] {
					ws.grads[i] = math.NaN()
				}
				clear(ws.gsq[:cs])
				l.ops.forward(n, ws, 0, params, cs)
				l.ops.backward(n, ws, 0, params, cs, true, false)
			}
			nW := l.params[0].size + l.params[1].size
			check := func(what string, got, want []float64) {
				t.Helper()
				var scale float64
				for _, v := range want {
					scale = math.Max(scale, math.Abs(v))
				}
				for i := range want {
					d := math.Abs(got[i] - want[i])
					if scale > 0 {
						worst = math.Max(worst, d/scale)
					}
					if !(d <= tol*scale) {
						t.Fatalf("%s[%d] = %v, direct %v (scale %v)", what, i, got[i], want[i], scale)
					}
				}
			}
			check("forward", ww.acts[1][:cs*l.outN], wd.acts[1][:cs*l.outN])
			check("input gradient", ww.dlt[0][:cs*l.inN], wd.dlt[0][:cs*l.inN])
			for s := 0; s < cs; s++ {
				check(fmt.Sprintf("sample %d gradient", s), ww.grads[s*n.p:s*n.p+nW], wd.grads[s*n.p:s*n.p+nW])
				check(fmt.Sprintf("sample %d squared norm", s), ww.gsq[s:s+1], wd.gsq[s:s+1])
			}
		})
	}
}

// TestWinogradClippedGradSum checks ClippedGradSum of float32 models with Winograd
// (and auto) conv layers against the float64 direct engine, to float32 tolerance:
// cifar-cnn (six Winograd layers), mnist-cnn-3x3 (strided convs: every layer falls
// back to direct, so float32 is bit-identical to float32 direct) and an --arch
// model with odd sizes and padding 0. Batches are small (CI has 2 cores).
func TestWinogradClippedGradSum(t *testing.T) {
	spec := `name: wino-arch
layers:
  - {kind: conv, out: 6, kernel: 3}
  - tanh
  - {kind: conv, out: 5, kernel: 3, padding: same}
  - relu
  - {kind: conv, out: 4, kh: 3, kw: 2, stride: 2, pad_t: 1, pad_b: 0, pad_l: 0, pad_r: 1}
  - flatten
  - {kind: dense}
`
	as, err := ParseArchSpec(strings.NewReader(spec))
	if err != nil {
		t.Fatal(err)
	}
	arch, err := as.Resolve(Shape{C: 2, H: 11, W: 9}, 3)
	if err != nil {
		t.Fatal(err)
	}
	cifar, _ := ArchByName("cifar-cnn")
	m3, _ := ArchByName("mnist-cnn-3x3")
	for _, tc := range []struct {
		arch     Arch
		batch    int
		algo     ConvAlgo
		clip     ClipAlgo // of the float32 runs (the float64 reference is per-sample)
		winoLays int      // conv layers run as Winograd
	}{
		{cifar, 3, ConvWinograd, ClipPerSample, 6},
		{cifar, 3, ConvWinograd4, ClipPerSample, 6},
		{cifar, 3, ConvAuto, ClipPerSample, -1},
		{m3, 4, ConvWinograd, ClipPerSample, 0},
		{arch, 5, ConvWinograd, ClipPerSample, 2},
		{arch, 5, ConvWinograd4, ClipPerSample, 2},
		{arch, 5, ConvAuto, ClipPerSample, -1},
		// mixed clipping: cifar-cnn's 8×8 convs take ghost norms and run direct,
		// the four 32×32 and 16×16 convs form per-sample gradients as Winograd
		{cifar, 3, ConvWinograd, ClipAuto, 4},
		{cifar, 3, ConvWinograd4, ClipAuto, 4},
		{cifar, 3, ConvAuto, ClipAuto, 3},
		{arch, 5, ConvWinograd, ClipGhost, 0},
		{arch, 5, ConvWinograd, ClipAuto, -1},
	} {
		t.Run(tc.arch.Name+"/"+tc.algo.String()+"/"+tc.clip.String(), func(t *testing.T) {
			n32, err := NewNetwork(tc.arch, NewCPUBackend[float32]())
			if err != nil {
				t.Fatal(err)
			}
			d32, _ := NewNetwork(tc.arch, NewCPUBackend[float32]())
			n64, _ := NewNetwork(tc.arch, NewCPUBackend[float64]())
			// the conv algorithm first, then the clip algorithm: SetClipAlgo redoes
			// the Winograd plan (TestConvAlgoOptions checks the other order)
			if err := n32.SetConvAlgo(tc.algo); err != nil {
				t.Fatal(err)
			}
			if err := n32.SetClipAlgo(tc.clip); err != nil {
				t.Fatal(err)
			}
			if err := d32.SetClipAlgo(tc.clip); err != nil {
				t.Fatal(err)
			}
			for _, p := range n32.ConvPlan() {
				if p.Ghost && p.Winograd() {
					t.Fatalf("layer %d takes a ghost norm and runs as Winograd", p.Layer)
				}
			}
			on := 0
			for _, p := range n32.ConvPlan() {
				if p.Winograd() {
					on++
				}
			}
			if tc.winoLays >= 0 && on != tc.winoLays {
				t.Fatalf("%d Winograd layers, want %d (plan %+v)", on, tc.winoLays, n32.ConvPlan())
			}
			p64 := InitParams(tc.arch, 7)
			rng := rand.New(rand.NewPCG(5, 6))
			x64 := make([]float64, tc.batch*n64.d)
			for i := range x64 {
				x64[i] = rng.Float64()
			}
			y := make([]int, tc.batch)
			for i := range y {
				y[i] = rng.IntN(tc.arch.Classes)
			}
			p32, x32 := toF32(p64), toF32(x64)
			clip := Clip{C: 0.05, Mode: ClipHard}
			s32, s64, sd := make([]float32, n32.p), make([]float64, n64.p), make([]float32, n32.p)
			l32, l64, ld := make([]float64, tc.batch), make([]float64, tc.batch), make([]float64, tc.batch)
			for rep := 0; rep < 2; rep++ { // the second call reuses the workspaces
				if err := n32.ClippedGradSum(p32, x32, y, tc.batch, clip, s32, l32); err != nil {
					t.Fatal(err)
				}
			}
			if err := n64.ClippedGradSum(p64, x64, y, tc.batch, clip, s64, l64); err != nil {
				t.Fatal(err)
			}
			if err := d32.ClippedGradSum(p32, x32, y, tc.batch, clip, sd, ld); err != nil {
				t.Fatal(err)
			}
			var num, den float64
			for i := range s64 {
				d := float64(s32[i]) - s64[i]
				num += d * d
				den += s64[i] * s64[i]
			}
			rel := math.Sqrt(num / den)
			t.Logf("clipped sum: relative L2 error %.3g against float64 direct", rel)
			if !(rel < 1e-5) {
				t.Errorf("clipped sum: relative error %.3g against float64 direct", rel)
			}
			for s := range l64 {
				if math.Abs(l32[s]-l64[s]) > 1e-5*(1+math.Abs(l64[s])) {
					t.Errorf("loss %d: %v, float64 direct %v", s, l32[s], l64[s])
				}
			}
			same := true
			for i := range sd {
				same = same && sd[i] == s32[i]
			}
			if on == 0 && !same {
				t.Errorf("no Winograd layer, but the sum differs from float32 direct (clip algorithm %s)", tc.clip)
			}
			if on > 0 && same {
				t.Errorf("%d Winograd layers, but the sum is bit-identical to float32 direct: Winograd did not run", on)
			}
		})
	}
}

// TestConvAlgoOptions checks ParseConvAlgo and SetConvAlgo's refusals.
func TestConvAlgoOptions(t *testing.T) {
	for s, want := range map[string]ConvAlgo{"": ConvDirect, "direct": ConvDirect, "winograd": ConvWinograd, "winograd4": ConvWinograd4, "auto": ConvAuto} {
		a, err := ParseConvAlgo(s)
		if err != nil || a != want {
			t.Errorf("ParseConvAlgo(%q) = %v, %v; want %v", s, a, err, want)
		}
		if s != "" && a.String() != s {
			t.Errorf("%v.String() = %q, want %q", a, a.String(), s)
		}
	}
	if _, err := ParseConvAlgo("fft"); err == nil || !strings.Contains(err.Error(), `unknown conv algorithm "fft" (want direct, winograd, auto or winograd4)`) {
		t.Errorf("ParseConvAlgo(fft): %v", err)
	}
	cifar, _ := ArchByName("cifar-cnn")
	n, err := NewNetwork(cifar, NewCPUBackend[float32]())
	if err != nil {
		t.Fatal(err)
	}
	if err := n.SetConvAlgo(ConvAlgo(9)); err == nil || !strings.Contains(err.Error(), "unknown conv algorithm") {
		t.Errorf("SetConvAlgo(9): %v", err)
	}
	// Under ghost clipping every layer takes a ghost norm: no Winograd layer.
	// Under mixed clipping the 8×8 layers do (direct), the others may run as
	// Winograd; back to per-sample clipping, the plan is the per-sample one again.
	// The clip algorithm first here (TestWinogradClippedGradSum: the other order).
	plan := func() (ghost, wino int) {
		for _, p := range n.ConvPlan() {
			if p.Ghost {
				ghost++
			}
			if p.Winograd() {
				wino++
			}
		}
		return ghost, wino
	}
	for _, tc := range []struct {
		clip        ClipAlgo
		ghost, wino int
	}{{ClipGhost, 6, 0}, {ClipAuto, 2, 4}, {ClipPerSample, 0, 6}} {
		if err := n.SetClipAlgo(tc.clip); err != nil {
			t.Fatal(err)
		}
		if tc.clip == ClipGhost {
			if err := n.SetConvAlgo(ConvWinograd); err != nil {
				t.Fatal(err)
			}
		}
		if g, w := plan(); g != tc.ghost || w != tc.wino {
			t.Errorf("clip algorithm %s, conv algorithm winograd: %d ghost-norm and %d Winograd conv layers, want %d and %d",
				tc.clip, g, w, tc.ghost, tc.wino)
		}
	}
	if err := n.SetConvAlgo(ConvDirect); err != nil || n.ConvPlan() != nil {
		t.Errorf("SetConvAlgo(direct): %v, plan %v", err, n.ConvPlan())
	}
	// a backend with device extensions keeps direct convolutions
	dev, err := NewNetwork(cifar, Backend[float32](fakeDevice{Backend: NewCPUBackend[float32]()}))
	if err != nil {
		t.Fatal(err)
	}
	if err := dev.SetConvAlgo(ConvWinograd); err == nil || !strings.Contains(err.Error(), "CPU backend only") {
		t.Errorf("SetConvAlgo(winograd) on a device backend: %v", err)
	}
}

// TestWinogradComb checks winoComb's AVX2 kernel (float32, where the CPU has it)
// against its portable loop in float64, for every coefficient matrix of the
// transforms, 2 and 4 outputs, and lengths with and without a tail.
func TestWinogradComb(t *testing.T) {
	fast, slow := newWinoKern(hasAVX2FMA()), newWinoKern(false)
	rng := rand.New(rand.NewPCG(8, 9))
	for _, n := range []int{1, 7, 8, 9, 16, 31, 100} {
		for ci, pick := range []func(k *winoKern) *winoCoef{
			func(k *winoKern) *winoCoef { return k.bt }, func(k *winoKern) *winoCoef { return k.b },
			func(k *winoKern) *winoCoef { return k.at }, func(k *winoKern) *winoCoef { return k.a },
			func(k *winoKern) *winoCoef { return k.add2 }, func(k *winoKern) *winoCoef { return k.gt },
		} {
			for _, ny := range []int{2, 4} {
				var x32, y32 [4][]float32
				var x64, y64 [4][]float64
				for i := 0; i < 4; i++ {
					x64[i], y64[i] = make([]float64, n), make([]float64, n)
					y32[i] = make([]float32, n)
					for k := range x64[i] {
						x64[i][k] = float64(float32(rng.NormFloat64()))
					}
					x32[i] = toF32(x64[i])
				}
				winoComb(fast, pick(fast), x32, y32, n, ny)
				winoComb(slow, pick(slow), x64, y64, n, ny)
				for j := 0; j < ny; j++ {
					for k := 0; k < n; k++ {
						if d := math.Abs(float64(y32[j][k]) - y64[j][k]); d > 1e-6*(1+math.Abs(y64[j][k])) {
							t.Fatalf("n %d, matrix %d, ny %d: y[%d][%d] = %v, float64 %v", n, ci, ny, j, k, y32[j][k], y64[j][k])
						}
					}
				}
			}
		}
	}
}

// TestWinogradCombN checks winoCombN's AVX2 kernel (float32, where the CPU has it)
// against its portable loop in float64, for every coefficient matrix of the
// F(4×4, 3×3) and F(2×2, 3×3) transforms (1 to 6 inputs and outputs) and lengths
// with and without a tail.
func TestWinogradCombN(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 11))
	for _, m := range []int{2, 4} {
		fast, slow := newWinoKernN(m, hasAVX2FMA()), newWinoKernN(m, false)
		for _, n := range []int{1, 7, 8, 9, 16, 31, 100} {
			for ci, pick := range []func(k *winoKernN) *winoCoefN{
				func(k *winoKernN) *winoCoefN { return k.ctb }, func(k *winoKernN) *winoCoefN { return k.cb },
				func(k *winoKernN) *winoCoefN { return k.cat }, func(k *winoKernN) *winoCoefN { return k.ca },
				func(k *winoKernN) *winoCoefN { return k.cgt },
			} {
				var x32, y32 [winoMaxAlpha][]float32
				var x64, y64 [winoMaxAlpha][]float64
				c := pick(slow)
				for i := 0; i < c.nx; i++ {
					x64[i] = make([]float64, n)
					for k := range x64[i] {
						x64[i][k] = float64(float32(rng.NormFloat64()))
					}
					x32[i] = toF32(x64[i])
				}
				for j := 0; j < c.ny; j++ {
					y32[j], y64[j] = make([]float32, n), make([]float64, n)
				}
				winoCombN(fast, pick(fast), &x32, &y32, n)
				winoCombN(slow, c, &x64, &y64, n)
				for j := 0; j < winoMaxAlpha; j++ {
					if j >= c.ny {
						if y32[j] != nil {
							t.Fatalf("output %d of %d set", j, c.ny)
						}
						continue
					}
					for k := 0; k < n; k++ {
						var want float64
						for i := 0; i < c.nx; i++ {
							want += c.f[j][i] * x64[i][k]
						}
						if math.Abs(y64[j][k]-want) > 1e-12*(1+math.Abs(want)) {
							t.Fatalf("m %d, n %d, matrix %d: portable y[%d][%d] = %v, want %v", m, n, ci, j, k, y64[j][k], want)
						}
						if d := math.Abs(float64(y32[j][k]) - want); d > 1e-5*(1+math.Abs(want)) {
							t.Fatalf("m %d, n %d, matrix %d: y[%d][%d] = %v, float64 %v", m, n, ci, j, k, y32[j][k], want)
						}
					}
				}
			}
		}
	}
}

// TestWinogradRows checks winoDeintRows and winoIntRows (the AVX kernels for
// float32 where the CPU has them, n a multiple of 4) against the definitions in
// float64, for 4 and 6 columns, strided rows and lengths with and without the
// kernels, and the float64 loops likewise.
func TestWinogradRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 13))
	for _, nj := range []int{4, 6} {
		for _, n := range []int{1, 4, 5, 8, 16} {
			for _, rows := range []int{1, 3} {
				sstride, dstride := 4*n+7, n+3
				src := make([]float64, (rows-1)*sstride+4*n+nj-4)
				for i := range src {
					src[i] = float64(float32(rng.NormFloat64()))
				}
				var d32 [6][]float32
				var d64 [6][]float64
				for j := 0; j < nj; j++ {
					d32[j], d64[j] = make([]float32, (rows-1)*dstride+n), make([]float64, (rows-1)*dstride+n)
				}
				winoDeintRows(hasAVX2FMA(), toF32(src), sstride, &d32, nj, dstride, rows, n)
				winoDeintRows(false, src, sstride, &d64, nj, dstride, rows, n)
				for j := 0; j < nj; j++ {
					for r := 0; r < rows; r++ {
						for c := 0; c < n; c++ {
							want := src[r*sstride+4*c+j]
							if got := d32[j][r*dstride+c]; float64(got) != want || d64[j][r*dstride+c] != want {
								t.Fatalf("deint nj %d n %d rows %d: d[%d][%d][%d] = %v, %v; want %v", nj, n, rows, j, r, c, got, d64[j][r*dstride+c], want)
							}
						}
					}
				}
				// adjoint: dst = Σ over the source columns placed at 4t + c
				dlen := (rows-1)*sstride + 4*n + nj - 4
				o32, o64 := make([]float32, dlen), make([]float64, dlen)
				for i := range o32 {
					o32[i], o64[i] = 99, 99 // the rows' values must be overwritten
				}
				winoIntRows(hasAVX2FMA(), &d32, nj, dstride, o32, sstride, rows, n)
				winoIntRows(false, &d64, nj, dstride, o64, sstride, rows, n)
				for r := 0; r < rows; r++ {
					for x := 0; x < 4*n+nj-4; x++ {
						var want float64
						for c := 0; c < nj; c++ {
							if tt := (x - c) / 4; x-c >= 0 && (x-c)%4 == 0 && tt < n {
								want += d64[c][r*dstride+tt]
							}
						}
						got := o32[r*sstride+x]
						if math.Abs(float64(got)-want) > 1e-6*(1+math.Abs(want)) || math.Abs(o64[r*sstride+x]-want) > 1e-15*(1+math.Abs(want)) {
							t.Fatalf("int nj %d n %d rows %d: dst[%d][%d] = %v, %v; want %v", nj, n, rows, r, x, got, o64[r*sstride+x], want)
						}
					}
				}
			}
		}
	}
}

// TestWinogradGenericF2 checks the tile-size-generic transforms of winograd4.go at
// m = 2 against the specialised F(2×2, 3×3) ones of winograd_transform.go (which
// TestWinogradConv checks against the direct layer), in float64 on random data:
// input, output, output-gradient, input-gradient, weight and weight-gradient
// transforms, with one sample (ld = tiles: channel groups) and with a sample at an
// offset in a wider chunk.
func TestWinogradGenericF2(t *testing.T) {
	rng := rand.New(rand.NewPCG(16, 17))
	k2, kn := newWinoKern(false), newWinoKernN(2, false)
	for _, tc := range []struct {
		c, h, w, out, pt, pb, pl, pr, cs int
	}{
		{2, 5, 7, 3, 1, 1, 1, 1, 1},
		{3, 8, 8, 4, 1, 1, 1, 1, 3},
		{5, 9, 6, 7, 0, 0, 0, 0, 1},
		{4, 7, 10, 2, 1, 0, 0, 1, 2},
		{13, 12, 13, 20, 2, 1, 0, 2, 1},
	} {
		g := ConvGeom{InC: tc.c, H: tc.h, W: tc.w, KH: 3, KW: 3, Stride: 1, PadT: tc.pt, PadB: tc.pb, PadL: tc.pl, PadR: tc.pr,
			OutH: tc.h + tc.pt + tc.pb - 2, OutW: tc.w + tc.pl + tc.pr - 2}
		th, tw := winoTiles(g)
		nt := th * tw
		ld := winoLD(g, tc.cs)
		c0 := (tc.cs - 1) * nt
		randv := func(n int) []float64 {
			v := make([]float64, n)
			for i := range v {
				v[i] = rng.NormFloat64()
			}
			return v
		}
		scrLen := max(winoScratchLen(g), winoScratchLenM(g, 2))
		s1, s2 := make([]float64, scrLen), make([]float64, scrLen)
		check := func(what string, got, want []float64) {
			t.Helper()
			for i := range want {
				if math.Abs(got[i]-want[i]) > 1e-12*(1+math.Abs(want[i])) {
					t.Fatalf("%+v %s[%d] = %v, specialised %v", tc, what, i, got[i], want[i])
				}
			}
		}
		x := randv(tc.c * tc.h * tc.w)
		v1, v2 := make([]float64, 16*winoStride(tc.c, ld)), make([]float64, 16*winoStride(tc.c, ld))
		winoInput(k2, g, x, v1, ld, c0, s1)
		winoInputN(kn, g, x, v2, ld, c0, s2)
		check("V", v2, v1)
		mm := randv(16 * winoStride(tc.out, ld))
		y1, y2 := make([]float64, tc.out*g.HWo()), make([]float64, tc.out*g.HWo())
		winoOutput(k2, g, tc.out, mm, ld, c0, y1, s1)
		winoOutputN(kn, g, tc.out, mm, ld, c0, y2, s2)
		check("Y", y2, y1)
		dy := randv(tc.out * g.HWo())
		n1, n2 := make([]float64, len(mm)), make([]float64, len(mm))
		winoOutGrad(k2, g, tc.out, dy, n1, ld, c0, s1)
		winoOutGradN(kn, g, tc.out, dy, n2, ld, c0, s2)
		check("N", n2, n1)
		dv := randv(len(v1))
		dx1, dx2 := make([]float64, len(x)), make([]float64, len(x))
		winoInputGrad(k2, g, dv, ld, c0, dx1, s1)
		winoInputGradN(kn, g, dv, ld, c0, dx2, s2)
		check("dx", dx2, dx1)
		w := randv(tc.out * tc.c * 9)
		u1, u2 := make([]float64, 16*winoStride(tc.out, tc.c)), make([]float64, 16*winoStride(tc.out, tc.c))
		winoWeights(tc.out, tc.c, w, u1)
		winoWeightsN(kn, tc.out, tc.c, w, u2)
		check("U", u2, u1)
		du := randv(len(u1))
		dw1, dw2 := make([]float64, len(w)), make([]float64, len(w))
		winoWeightGrad(k2, tc.out, tc.c, du, dw1, s1)
		winoWeightGradN(kn, tc.out, tc.c, du, dw2, s2)
		check("dw", dw2, dw1)
	}
}

// TestWinogradTranspose checks winoTranspose (the AVX kernel for float32 where the
// CPU has it and both sizes are multiples of 4; the loop otherwise and for float64)
// against the definition, with strided rows.
func TestWinogradTranspose(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 15))
	for _, rc := range [][2]int{{4, 4}, {16, 64}, {16, 32}, {4, 128}, {5, 8}, {8, 3}, {1, 1}} {
		rows, cols := rc[0], rc[1]
		ss, ds := cols+5, rows+3
		src := make([]float64, (rows-1)*ss+cols)
		for i := range src {
			src[i] = float64(float32(rng.NormFloat64()))
		}
		d32, d64 := make([]float32, (cols-1)*ds+rows), make([]float64, (cols-1)*ds+rows)
		winoTranspose(hasAVX2FMA(), toF32(src), ss, d32, ds, rows, cols)
		winoTranspose(false, src, ss, d64, ds, rows, cols)
		for r := 0; r < rows; r++ {
			for c := 0; c < cols; c++ {
				want := src[r*ss+c]
				if float64(d32[c*ds+r]) != want || d64[c*ds+r] != want {
					t.Fatalf("%d×%d: dst[%d][%d] = %v, %v; want %v", rows, cols, c, r, d32[c*ds+r], d64[c*ds+r], want)
				}
			}
		}
	}
}

// TestConvPlanAuto checks the auto rule on cifar-cnn: each conv layer runs as
// whichever of direct, F(2×2, 3×3) and F(4×4, 3×3) the cost model says is
// cheapest (ties to direct, then to the smaller tile), which (docs/perf.md,
// "Winograd convolution") is planWant; winograd and winograd4 run every layer with
// their tile.
func TestConvPlanAuto(t *testing.T) {
	const planWant = "[3:4 6:4 8:4]"
	cifar, _ := ArchByName("cifar-cnn")
	n, err := NewNetwork(cifar, NewCPUBackend[float32]())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		algo ConvAlgo
		want string
	}{
		{ConvAuto, planWant},
		{ConvWinograd, "[1:2 3:2 6:2 8:2 11:2 13:2]"},
		{ConvWinograd4, "[1:4 3:4 6:4 8:4 11:4 13:4]"},
	} {
		if err := n.SetConvAlgo(tc.algo); err != nil {
			t.Fatal(err)
		}
		var on []string
		for _, p := range n.ConvPlan() {
			want := 0
			switch {
			case tc.algo == ConvWinograd:
				want = 2
			case tc.algo == ConvWinograd4:
				want = 4
			case p.WinogradCost < p.DirectCost && p.WinogradCost <= p.Winograd4Cost:
				want = 2
			case p.Winograd4Cost < p.DirectCost && p.Winograd4Cost < p.WinogradCost:
				want = 4
			}
			if !p.Eligible || p.DirectCost <= 0 || p.WinogradCost <= 0 || p.Winograd4Cost <= 0 || p.Tile != want {
				t.Errorf("%v: plan %+v, want tile %d", tc.algo, p, want)
			}
			if p.Winograd() {
				on = append(on, fmt.Sprintf("%d:%d", p.Layer, p.Tile))
			}
		}
		if fmt.Sprint(on) != tc.want {
			t.Errorf("%v runs layers %v as Winograd (layer:tile), want %s", tc.algo, on, tc.want)
		}
	}
}

// TestWinogradWorkerCountBitIdentical checks that Winograd sums are bit-identical
// with 1, 2 and 3 workers (each worker has its own Winograd workspace; chunks are
// added in batch order), on an --arch-like network whose chunks hold several
// samples, so that the GEMMs span samples side by side.
func TestWinogradWorkerCountBitIdentical(t *testing.T) {
	arch := Arch{Name: "wino-workers", Input: Shape{C: 2, H: 9, W: 10}, Classes: 3, Layers: []LayerSpec{
		{Kind: KindConv, Out: 5, KH: 3, KW: 3, Stride: 1, PadT: 1, PadB: 1, PadL: 1, PadR: 1},
		layerTanh,
		{Kind: KindConv, Out: 4, KH: 3, KW: 3, Stride: 1},
		layerFlatten, Dense(3),
	}}
	const batch = 41
	rng := rand.New(rand.NewPCG(4, 4))
	params, x, y, _ := testProblem(arch, 2, batch, 0, rng, false)
	for _, algo := range []ConvAlgo{ConvWinograd, ConvWinograd4} {
		t.Run(algo.String(), func(t *testing.T) { testWinogradWorkers(t, arch, algo, params, x, y, batch) })
	}
}

func testWinogradWorkers(t *testing.T, arch Arch, algo ConvAlgo, params, x []float32, y []int, batch int) {
	var ref []float32
	for _, w := range []int{1, 2, 3} {
		net := workerNetwork(t, arch, w)
		if err := net.SetConvAlgo(algo); err != nil {
			t.Fatal(err)
		}
		if cs, _ := net.chunkSizes(batch, 0, false); cs < 2 {
			t.Fatalf("chunks of %d samples, want several", cs)
		}
		sum := make([]float32, len(params))
		if err := net.ClippedGradSum(params, x, y, batch, Clip{C: 0.5}, sum, make([]float64, batch)); err != nil {
			t.Fatal(err)
		}
		if ref == nil {
			ref = sum
			continue
		}
		for i := range sum {
			if math.Float32bits(sum[i]) != math.Float32bits(ref[i]) {
				t.Fatalf("%d workers: sum[%d] = %v, 1 worker %v", w, i, sum[i], ref[i])
			}
		}
	}
}

// TestWinogradCombRef checks winoCombRef (the comb kernels' portable version off
// amd64) against the float64 sums for 4 and 6 inputs, and the float32 kernels
// (AVX2 on amd64 where the CPU has it) against it.
func TestWinogradCombRef(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 13))
	for _, nx := range []int{4, 6} {
		const n8, ny = 3, 4
		n := 8 * n8
		c := make([][8]float32, nx*nx)
		for k := range c {
			v := float32(rng.NormFloat64())
			for l := range c[k] {
				c[k][l] = v
			}
		}
		xs, x := make([][]float32, nx), make([]*float32, nx)
		for i := range xs {
			xs[i] = make([]float32, n)
			for k := range xs[i] {
				xs[i][k] = float32(rng.NormFloat64())
			}
			x[i] = &xs[i][0]
		}
		ys, y, yk, yp := make([][]float32, nx), make([]*float32, nx), make([][]float32, nx), make([]*float32, nx)
		for j := range ys {
			ys[j], yk[j] = make([]float32, n), make([]float32, n)
			y[j], yp[j] = &ys[j][0], &yk[j][0]
		}
		winoCombRef(c, x, y, n8, ny)
		switch {
		case !hasAVX2FMA() && runtime.GOARCH == "amd64":
			copy(yk, ys) // the amd64 kernels need AVX2 and FMA
		case nx == 4:
			winoCombF32((*[16][8]float32)(c), (*[4]*float32)(x), (*[4]*float32)(yp), n8, ny)
		default:
			winoComb6F32((*[36][8]float32)(c), (*[6]*float32)(x), (*[6]*float32)(yp), n8, ny)
		}
		for j := 0; j < nx; j++ {
			for k := 0; k < n; k++ {
				if j >= ny {
					if ys[j][k] != 0 {
						t.Fatalf("nx %d: output %d of %d written", nx, j, ny)
					}
					continue
				}
				var want float64
				for i := 0; i < nx; i++ {
					want += float64(c[j*nx+i][0]) * float64(xs[i][k])
				}
				if d := math.Abs(float64(ys[j][k]) - want); d > 1e-5*(1+math.Abs(want)) {
					t.Fatalf("nx %d: y[%d][%d] = %v, float64 %v", nx, j, k, ys[j][k], want)
				}
				if d := math.Abs(float64(yk[j][k] - ys[j][k])); d > 1e-5*(1+math.Abs(want)) {
					t.Fatalf("nx %d: kernel y[%d][%d] = %v, reference %v", nx, j, k, yk[j][k], ys[j][k])
				}
			}
		}
	}
}
