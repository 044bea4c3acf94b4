package models

import (
	"math"
	"testing"
)

// TestZeroLogit checks the zero_logit layer: per-sample gradients and tangents
// against finite differences (alone after a dense layer and inside a convnet),
// the one-logit model's gradient against the logistic closed form
// (σ(z) − [y = 0])·[x; 1], float32 against float64, a non-flat input refused, and
// its Gorgonia node through the builder in models/gorgonet (TestGraphFILEqualsEngine).
func TestZeroLogit(t *testing.T) {
	archs := []Arch{
		{Name: "logit-linear", Input: Shape{C: 1, H: 3, W: 2}, Classes: 2, Layers: []LayerSpec{layerFlatten, Dense(1), {Kind: KindZeroLogit}}},
		{Name: "logit-conv", Input: Shape{C: 1, H: 6, W: 6}, Classes: 3, Layers: []LayerSpec{
			Conv(3, 3, 1, 1), {Kind: KindTanh}, AvgPool(2, 2), layerFlatten, Dense(5), {Kind: KindTanh}, Dense(2), {Kind: KindZeroLogit}}},
	}
	for _, bc := range backends64() {
		for _, arch := range archs {
			t.Run(bc.name+"/"+arch.Name, func(t *testing.T) {
				n := newNet64(t, arch, bc)
				params, x, y := randomProblem(arch, 3, 13)
				checkGradsFD(t, n, params, x, y, 3)
				checkTangentsFD(t, n, params, x, y, 3)
			})
		}
	}
	// The logistic closed form: ℓ = −log softmax([z, 0])_y with z = wᵀx + b.
	arch := archs[0]
	const B = 4
	params, x, y := randomProblem(arch, B, 14)
	n64, err := NewNetwork(arch, NewCPUBackend[float64]())
	if err != nil {
		t.Fatal(err)
	}
	if P := n64.NumParams(); P != 7 {
		t.Fatalf("%d parameters, want 6 weights and a bias", P)
	}
	grads, losses, err := n64.PerSampleGrads(params, x, y, B)
	if err != nil {
		t.Fatal(err)
	}
	D := arch.InputDim()
	for s := 0; s < B; s++ {
		xs := x[s*D : (s+1)*D]
		z := params[D]
		for i, v := range xs {
			z += params[i] * v
		}
		sig := 1 / (1 + math.Exp(-z))
		c, wantL := sig, -math.Log(1-sig)
		if y[s] == 0 {
			c, wantL = sig-1, -math.Log(sig)
		}
		if math.Abs(losses[s]-wantL) > 1e-12 {
			t.Errorf("sample %d (y %d): loss %v, logistic %v", s, y[s], losses[s], wantL)
		}
		for i := 0; i <= D; i++ {
			want := c
			if i < D {
				want = c * xs[i]
			}
			if got := grads[s*(D+1)+i]; math.Abs(got-want) > 1e-12 {
				t.Errorf("sample %d: ∂ℓ/∂θ[%d] = %v, logistic %v", s, i, got, want)
			}
		}
	}
	// float32 against float64.
	m32, err := NewCPUModel(archs[1])
	if err != nil {
		t.Fatal(err)
	}
	p2, x2, _ := randomProblem(archs[1], 4, 15)
	n2, err := NewNetwork(archs[1], NewCPUBackend[float64]())
	if err != nil {
		t.Fatal(err)
	}
	z64, _ := n2.Forward(p2, x2, 4)
	z32 := make([]float32, len(z64))
	if err := m32.Logits(toF32(p2), toF32(x2), 4, z32); err != nil {
		t.Fatal(err)
	}
	if e := relErr(toF64(z32), z64); e > 1e-5 {
		t.Errorf("float32 logits rel. error %.3g", e)
	}
	for s := 0; s < 4; s++ {
		if z64[s*3+2] != 0 {
			t.Errorf("sample %d: the fixed logit is %v", s, z64[s*3+2])
		}
	}
	bad := Arch{Name: "logit-image", Input: Shape{C: 1, H: 3, W: 3}, Classes: 2, Layers: []LayerSpec{{Kind: KindZeroLogit}}}
	if _, err := NewNetwork(bad, NewCPUBackend[float64]()); err == nil {
		t.Error("zero_logit on an image input was accepted")
	}
}
