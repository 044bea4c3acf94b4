package models

import (
	"math"
	"testing"
)

// TestReLU checks the relu layer's passes — per-sample gradients, gradient and
// input-gradient tangents against finite differences, FIL's sparse first-layer path
// against the dense one, float32 against float64 — alone and inside a small convnet
// (its Gorgonia node is checked by the builder in models/gorgonet).
func TestReLU(t *testing.T) {
	archs := []Arch{
		{Name: "relu-alone", Input: Shape{C: 4, H: 1, W: 1}, Classes: 4, Layers: []LayerSpec{{Kind: KindReLU}}},
		{Name: "relu-conv", Input: Shape{C: 1, H: 6, W: 6}, Classes: 3, Layers: []LayerSpec{
			Conv(3, 3, 1, 1), {Kind: KindReLU}, AvgPool(2, 2), Conv(4, 2, 1, 0), {Kind: KindReLU},
			layerFlatten, Dense(5), {Kind: KindReLU}, Dense(3)}},
	}
	defer func(h float64) { fdStep = h }(fdStep)
	fdStep = 1e-5 // small enough not to cross a kink at these points
	for _, bc := range backends64() {
		for _, arch := range archs {
			t.Run(bc.name+"/"+arch.Name, func(t *testing.T) {
				n := newNet64(t, arch, bc)
				params, x, y := randomProblem(arch, 3, 11)
				for i := range x {
					x[i] = 4*x[i] - 2 // both signs
				}
				checkGradsFD(t, n, params, x, y, 3)
				checkTangentsFD(t, n, params, x, y, 3)
			})
		}
	}
	arch := archs[1]
	params, x, y := randomProblem(arch, 4, 12)
	n64, err := NewNetwork(arch, NewCPUBackend[float64]())
	if err != nil {
		t.Fatal(err)
	}
	// FIL: the sparse one-hot path (FILSqNorms) against explicit dense input tangents.
	D, P := n64.InputDim(), n64.NumParams()
	clip := Clip{Mode: ClipSmooth, C: 0.5}
	coords := [][]int{{0, 7, 35}, {1, 2, 3}, {20, 20, 5}, {33, 12, 9}}
	got := make([]float64, 4)
	if err := n64.FILSqNorms(params, x, y, 4, clip, coords, got); err != nil {
		t.Fatal(err)
	}
	xdot := make([]float64, 4*3*D)
	for s, cl := range coords {
		for j, c := range cl {
			xdot[(s*3+j)*D+c] = 1
		}
	}
	tan, err := n64.Tangent(params, x, y, 4, 3, xdot, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	for s := 0; s < 4; s++ {
		want := 0.0
		for j := 0; j < 3; j++ {
			out := make([]float64, P)
			ClipJVP(clip, tan.Grads[s*P:(s+1)*P], tan.GradDots[(s*3+j)*P:(s*3+j+1)*P], out)
			want += dot(out, out)
		}
		if math.Abs(got[s]-want) > 1e-10*want {
			t.Errorf("sample %d: FIL %v, dense tangents give %v", s, got[s], want)
		}
	}
	// float32 against float64.
	m32, err := NewCPUModel(arch)
	if err != nil {
		t.Fatal(err)
	}
	z64, _ := n64.Forward(params, x, 4)
	z32 := make([]float32, len(z64))
	if err := m32.Logits(toF32(params), toF32(x), 4, z32); err != nil {
		t.Fatal(err)
	}
	if e := relErr(toF64(z32), z64); e > 1e-5 {
		t.Errorf("float32 logits rel. error %.3g", e)
	}
}
