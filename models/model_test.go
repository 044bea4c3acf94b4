package models

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func toF32(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

func toF64(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

// TestModelFloat32VsFloat64 checks the float32 Model against the float64 Network:
// logits, clipped gradient sums, losses and FIL norms within ~1e-4 relative.
func TestModelFloat32VsFloat64(t *testing.T) {
	for _, name := range []string{"linear", "mlp", "mnist-cnn", "mnist-cnn-3x3", "cifar-cnn"} {
		t.Run(name, func(t *testing.T) {
			arch, _ := ArchByName(name)
			B, k := 5, 7
			if name == "cifar-cnn" {
				B, k = 1, 2 // one FIL direction costs ~0.3 GFLOP here
			}
			m, err := NewCPUModel(arch)
			if err != nil {
				t.Fatal(err)
			}
			n := newNet64(t, arch, backends64()[0])
			params, x, y := randomProblem(arch, B, 61)
			p32, x32 := toF32(params), toF32(x)
			params, x = toF64(p32), toF64(x32) // the same inputs in both precisions
			z := make([]float32, B*arch.Classes)
			if err := m.Logits(p32, x32, B, z); err != nil {
				t.Fatal(err)
			}
			z64, _ := n.Forward(params, x, B)
			if e := relErr(toF64(z), z64); e > 1e-5 {
				t.Errorf("logits rel. error %.3g", e)
			}
			g, _, _ := n.PerSampleGrads(params, x, y, B)
			gn := math.Sqrt(dot(g[:n.NumParams()], g[:n.NumParams()]))
			D := arch.InputDim()
			rng := rand.New(rand.NewPCG(3, 1))
			coords := make([][]int, B)
			for s := range coords {
				for j := 0; j < k; j++ {
					coords[s] = append(coords[s], rng.IntN(D))
				}
			}
			for _, clip := range []Clip{{Mode: ClipSmooth, C: gn / 3}, {Mode: ClipHard, C: gn / 3}} {
				sum := make([]float32, m.NumParams())
				losses := make([]float64, B)
				if err := m.ClippedGradSum(p32, x32, y, clip, sum, losses); err != nil {
					t.Fatal(err)
				}
				sum64 := make([]float64, m.NumParams())
				losses64 := make([]float64, B)
				if err := n.ClippedGradSum(params, x, y, B, clip, sum64, losses64); err != nil {
					t.Fatal(err)
				}
				if e := relErr(toF64(sum), sum64); e > 1e-4 {
					t.Errorf("mode %d: clipped sum rel. error %.3g", clip.Mode, e)
				}
				if e := relErr(losses, losses64); e > 1e-5 {
					t.Errorf("losses rel. error %.3g", e)
				}
				fil := make([]float64, B)
				if err := m.FILSqNorms(p32, x32, y, clip, coords, fil); err != nil {
					t.Fatal(err)
				}
				fil64 := make([]float64, B)
				if err := n.FILSqNorms(params, x, y, B, clip, coords, fil64); err != nil {
					t.Fatal(err)
				}
				if e := relErr(fil, fil64); e > 1e-4 {
					t.Errorf("mode %d: FIL norms rel. error %.3g (%v vs %v)", clip.Mode, e, fil, fil64)
				}
			}
		})
	}
}

// TestClippedGradSumMatchesPerSample checks the sum against clipping the per-sample
// gradients one by one, and that it is bit-identical for every worker count and
// chunking.
func TestClippedGradSumMatchesPerSample(t *testing.T) {
	arch, _ := ArchByName("mnist-cnn")
	params, x, y := randomProblem(arch, 37, 71)
	clip := Clip{Mode: ClipSmooth, C: 0.05}
	var first []float64
	for _, bc := range backends64() {
		n := newNet64(t, arch, bc)
		sum := make([]float64, n.NumParams())
		losses := make([]float64, 37)
		if err := n.ClippedGradSum(params, x, y, 37, clip, sum, losses); err != nil {
			t.Fatal(err)
		}
		cg, l, err := n.ClippedGrads(params, x, y, 37, clip)
		if err != nil {
			t.Fatal(err)
		}
		want := make([]float64, n.NumParams())
		for s := 0; s < 37; s++ {
			for i := range want {
				want[i] += cg[s*n.NumParams()+i]
			}
			if losses[s] != l[s] {
				t.Errorf("%s: loss %d %v vs %v", bc.name, s, losses[s], l[s])
			}
		}
		if e := relErr(sum, want); e > 1e-13 {
			t.Errorf("%s: sum rel. error %.3g", bc.name, e)
		}
		if bc.budget == 0 {
			if first == nil {
				first = sum
			} else if relErr(sum, first) != 0 {
				t.Errorf("%s: sum differs from the first backend's", bc.name)
			}
		}
	}
}

// TestEdgeCases covers batch 1, zero input, non-finite inputs and parameters, bad
// labels, bad sizes and bad clip thresholds.
func TestEdgeCases(t *testing.T) {
	arch, _ := ArchByName("mnist-cnn")
	m, err := NewCPUModel(arch)
	if err != nil {
		t.Fatal(err)
	}
	params := m.Init(3)
	D, P := m.InputDim(), m.NumParams()
	clip := Clip{Mode: ClipSmooth, C: 1}
	zero := make([]float32, D)
	sum := make([]float32, P)
	losses := make([]float64, 1)
	if err := m.ClippedGradSum(params, zero, []int{4}, clip, sum, losses); err != nil {
		t.Fatalf("zero input, batch 1: %v", err)
	}
	if math.IsNaN(losses[0]) || losses[0] <= 0 {
		t.Errorf("zero input loss %v", losses[0])
	}
	out := []float64{0}
	if err := m.FILSqNorms(params, zero, []int{4}, clip, [][]int{{0, 400, 783}}, out); err != nil || math.IsNaN(out[0]) || out[0] < 0 {
		t.Errorf("zero input FIL %v, %v", out[0], err)
	}
	// zero gradient: a network whose parameters are all zero has g ≠ 0 only in the
	// last bias; with every parameter zero and uniform logits the FIL is finite.
	if err := m.FILSqNorms(make([]float32, P), zero, []int{4}, clip, [][]int{{5}}, out); err != nil || math.IsNaN(out[0]) {
		t.Errorf("zero parameters FIL %v, %v", out[0], err)
	}
	nan := make([]float32, D)
	nan[17] = float32(math.NaN())
	inf := make([]float32, D)
	inf[3] = float32(math.Inf(1))
	badP := append([]float32(nil), params...)
	badP[5] = float32(math.NaN())
	tests := []struct {
		name    string
		call    func() error
		errPart string
	}{
		{"nan input sum", func() error { return m.ClippedGradSum(params, nan, []int{1}, clip, sum, losses) }, "not finite"},
		{"inf input fil", func() error { return m.FILSqNorms(params, inf, []int{1}, clip, [][]int{{0}}, out) }, "not finite"},
		{"nan input logits", func() error { return m.Logits(params, nan, 1, make([]float32, 10)) }, "not finite"},
		{"nan params", func() error { return m.ClippedGradSum(badP, zero, []int{1}, clip, sum, losses) }, "not finite"},
		{"bad label", func() error { return m.ClippedGradSum(params, zero, []int{10}, clip, sum, losses) }, "label"},
		{"short input", func() error { return m.ClippedGradSum(params, zero[:5], []int{1}, clip, sum, losses) }, "input values"},
		{"empty batch", func() error { return m.ClippedGradSum(params, nil, nil, clip, sum, nil) }, "batch"},
		{"zero C", func() error { return m.ClippedGradSum(params, zero, []int{1}, Clip{C: 0}, sum, losses) }, "threshold"},
		{"nan C", func() error { return m.FILSqNorms(params, zero, []int{1}, Clip{C: math.NaN()}, [][]int{{0}}, out) }, "threshold"},
		{"bad coord", func() error { return m.FILSqNorms(params, zero, []int{1}, clip, [][]int{{D}}, out) }, "coordinate"},
		{"bad mode", func() error { return m.FILSqNorms(params, zero, []int{1}, Clip{C: 1, Mode: 7}, [][]int{{0}}, out) }, "mode"},
	}
	for _, tc := range tests {
		err := tc.call()
		if err == nil || !strings.Contains(err.Error(), tc.errPart) {
			t.Errorf("%s: error %v, want one mentioning %q", tc.name, err, tc.errPart)
		}
	}
	if _, err := NewCPUModel(Arch{Name: "broken", Input: Shape{C: 1, H: 2, W: 2}, Classes: 3, Layers: []LayerSpec{Dense(3)}}); err == nil {
		t.Error("an invalid architecture was accepted")
	}
}

// TestClipExtremes checks that C ≫ ‖g‖ leaves gradients (and FIL) unclipped and
// that C ≪ ‖g‖ gives clipped norms of C (hard) or ≤ c·C (smooth).
func TestClipExtremes(t *testing.T) {
	arch, _ := ArchByName("mlp")
	n := newNet64(t, arch, backends64()[0])
	params, x, y := randomProblem(arch, 4, 81)
	g, _, _ := n.PerSampleGrads(params, x, y, 4)
	P := n.NumParams()
	big, _, _ := n.ClippedGrads(params, x, y, 4, Clip{Mode: ClipHard, C: 1e9})
	if relErr(big, g) != 0 {
		t.Error("hard clip with huge C changed the gradients")
	}
	smoothBig, _, _ := n.ClippedGrads(params, x, y, 4, Clip{Mode: ClipSmooth, C: 1e9})
	// smooth clip with C ≫ ‖g‖: s = 1/(1+GELU(−1+ε)) ≈ 1/(1−0.1587)
	if e := relErr(smoothBig, g); math.Abs(e-0.1587/(1-0.1587)) > 1e-3 {
		t.Errorf("smooth clip with huge C: relative change %v", e)
	}
	for _, mode := range []ClipMode{ClipHard, ClipSmooth} {
		c := Clip{Mode: mode, C: 1e-6}
		cg, _, _ := n.ClippedGrads(params, x, y, 4, c)
		for s := 0; s < 4; s++ {
			v := cg[s*P : (s+1)*P]
			nv := math.Sqrt(dot(v, v))
			if nv > c.Constant()*c.C*(1+1e-9) || nv < 1e-7 {
				t.Errorf("mode %d: clipped norm %v with C = %v", mode, nv, c.C)
			}
		}
	}
}

// ExampleNewCPUModel trains nothing but shows the calls a DP-SGD step makes.
func ExampleNewCPUModel() {
	arch, _ := ArchByName("mlp")
	m, _ := NewCPUModel(arch)
	params := m.Init(1)
	x := make([]float32, 2*m.InputDim()) // two blank images
	y := []int{3, 7}
	sum := make([]float32, m.NumParams())
	losses := make([]float64, 2)
	clip := Clip{Mode: ClipSmooth, C: 1}
	if err := m.ClippedGradSum(params, x, y, clip, sum, losses); err != nil {
		panic(err)
	}
	fil := make([]float64, 2)
	_ = m.FILSqNorms(params, x, y, clip, [][]int{{0, 1}, {5, 9}}, fil)
	fmt.Println(m.NumParams(), len(sum), fil[0] >= 0)
	// Output: 7960 7960 true
}

// ExampleClip_Constant prints the smooth clipping constant c.
func ExampleClip_Constant() {
	fmt.Printf("%.3f %.0f\n", Clip{Mode: ClipSmooth, C: 1}.Constant(), Clip{Mode: ClipHard, C: 1}.Constant())
	// Output: 1.115 1
}

// brokenBackend perturbs one kernel of the CPU backend, to show that the
// conformance suite catches a wrong backend.
type brokenBackend struct {
	Backend[float32]
}

func (b brokenBackend) ActForward(f Act, x, y []float32) {
	b.Backend.ActForward(f, x, y)
	for i := range y {
		y[i] *= 1.001
	}
}

func TestCheckBackend(t *testing.T) {
	if err := CheckBackend(NewCPUBackend[float32](), 1e-4); err != nil {
		t.Fatal(err)
	}
	if err := CheckBackend(brokenBackend{NewCPUBackend[float32]()}, 1e-4); err == nil {
		t.Fatal("a backend with a wrong activation passed the conformance suite")
	}
}

// ExampleNetwork_InputGradOfClippedDot computes the input gradient the
// gradient-inversion attack follows, ∇_x⟨v, g̃(x)⟩, in float64.
func ExampleNetwork_InputGradOfClippedDot() {
	arch, _ := ArchByName("linear")
	n, _ := NewNetwork(arch, NewCPUBackend[float64]())
	params := InitParams(arch, 1)
	x := make([]float64, n.InputDim())
	for i := range x {
		x[i] = 0.5
	}
	v := make([]float64, n.NumParams()) // e.g. a privatised gradient ḡ_t
	v[n.NumParams()-1] = 1              // the last class's bias
	dx, err := n.InputGradOfClippedDot(params, x, []int{3}, 1, v, Clip{Mode: ClipHard, C: 1e6})
	if err != nil {
		panic(err)
	}
	fmt.Println(len(dx))
	// Output: 784
}

// ExampleNetwork_Tangent differentiates a sample's gradient along an input direction.
func ExampleNetwork_Tangent() {
	arch, _ := ArchByName("mlp")
	n, _ := NewNetwork(arch, NewCPUBackend[float64]())
	params := InitParams(arch, 1)
	x := make([]float64, n.InputDim())
	xdot := make([]float64, n.InputDim())
	xdot[400] = 1 // one pixel
	res, err := n.Tangent(params, x, []int{7}, 1, 1, xdot, nil, false)
	if err != nil {
		panic(err)
	}
	fmt.Println(len(res.Grads), len(res.GradDots))
	// Output: 7960 7960
}

func TestTangentRejectsBadSeeds(t *testing.T) {
	arch, _ := ArchByName("linear")
	n := newNet64(t, arch, backends64()[0])
	params, x, y := randomProblem(arch, 1, 3)
	xd := make([]float64, n.InputDim())
	xd[2] = math.Inf(-1)
	tests := []struct {
		name       string
		k          int
		xdot, pdot []float64
		want       string
	}{
		{"inf input tangent", 1, xd, nil, "not finite"},
		{"short parameter tangent", 1, nil, make([]float64, 3), "parameter tangents"},
		{"no directions", 0, nil, nil, "k ≥ 1"},
	}
	for _, tc := range tests {
		if _, err := n.Tangent(params, x, y, 1, tc.k, tc.xdot, tc.pdot, false); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v", tc.name, err)
		}
	}
}

// TestWorkspaceGrowth checks that a gradient step followed by a FIL step sizes the
// tangent buffers for the FIL chunks only, not for the product of both chunk sizes.
func TestWorkspaceGrowth(t *testing.T) {
	arch, _ := ArchByName("mnist-cnn")
	n, err := NewNetwork(arch, NewCPUBackend[float32]())
	if err != nil {
		t.Fatal(err)
	}
	const B = 64
	p64, x64, y := randomProblem(arch, B, 5)
	p, x := toF32(p64), toF32(x64)
	sum, losses := make([]float32, n.NumParams()), make([]float64, B)
	coords := make([][]int, B)
	for s := range coords {
		coords[s] = make([]int, 50)
	}
	out := make([]float64, B)
	for i := 0; i < 2; i++ {
		if err := n.ClippedGradSum(p, x, y, B, Clip{C: 1}, sum, losses); err != nil {
			t.Fatal(err)
		}
		if err := n.FILSqNorms(p, x, y, B, Clip{C: 1}, coords, out); err != nil {
			t.Fatal(err)
		}
	}
	csF, _ := n.chunkSizes(B, 0, false)
	csT, kc := n.chunkSizes(B, 50, false)
	for w, ws := range n.ws {
		if ws == nil {
			continue
		}
		if ws.cs != max(csF, csT) || ws.rows != csT*kc {
			t.Errorf("worker %d: first-order capacity %d, tangent rows %d; want %d and %d", w, ws.cs, ws.rows, max(csF, csT), csT*kc)
		}
	}
}
