package models

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// CheckBackend is the conformance suite every float32 backend must pass (the CPU
// backend in this package's tests, a device backend in its own): for every built-in
// architecture it runs the engine on be and on the float64 CPU backend with the same
// (float32-representable) parameters and inputs, and compares logits, per-sample
// gradients, clipped gradient sums, gradient tangents along input and parameter
// directions, input-gradients of clipped inner products and FIL norms. It returns an
// error naming the first quantity whose relative error exceeds tol (1e-4 is the
// project's bar for float32).
func CheckBackend(be Backend[float32], tol float64) error {
	for _, name := range ArchNames() {
		arch, err := ArchByName(name)
		if err != nil {
			return err
		}
		B, k := 3, 3
		if name == "cifar-cnn" {
			B, k = 1, 1
		}
		if err := checkBackendArch(be, arch, B, k, tol); err != nil {
			return fmt.Errorf("backend %s, %s: %w", be.Name(), name, err)
		}
	}
	return nil
}

func checkBackendArch(be Backend[float32], arch Arch, B, k int, tol float64) error {
	n32, err := NewNetwork(arch, be)
	if err != nil {
		return err
	}
	n64, err := NewNetwork(arch, NewCPUBackend[float64]())
	if err != nil {
		return err
	}
	P, D := n64.NumParams(), n64.InputDim()
	rng := rand.New(rand.NewPCG(12345, uint64(P)))
	p64 := InitParams(arch, 7)
	for i := range p64 {
		p64[i] = float64(float32(p64[i] + 0.01*rng.NormFloat64()))
	}
	x64 := make([]float64, B*D)
	for i := range x64 {
		x64[i] = float64(float32(rng.Float64()))
	}
	y := make([]int, B)
	for i := range y {
		y[i] = rng.IntN(arch.Classes)
	}
	unit := func(n int) []float64 {
		v := make([]float64, n)
		var ss float64
		for i := range v {
			v[i] = rng.NormFloat64()
			ss += v[i] * v[i]
		}
		for i := range v {
			v[i] = float64(float32(v[i] / math.Sqrt(ss)))
		}
		return v
	}
	var xd64, pd64 []float64
	for r := 0; r < B*k; r++ {
		xd64 = append(xd64, unit(D)...)
		pd64 = append(pd64, unit(P)...)
	}
	v64 := unit(P)
	p32, x32, xd32, pd32, v32 := to32(p64), to32(x64), to32(xd64), to32(pd64), to32(v64)

	cmp := func(what string, got []float32, want []float64) error {
		var num, den float64
		for i, w := range want {
			d := float64(got[i]) - w
			num += d * d
			den += w * w
		}
		e := math.Sqrt(num / math.Max(den, 1e-300))
		if math.IsNaN(e) || e > tol {
			return fmt.Errorf("%s: relative error %.3g > %.3g", what, e, tol)
		}
		return nil
	}

	z32, err := n32.Forward(p32, x32, B)
	if err != nil {
		return err
	}
	z64, _ := n64.Forward(p64, x64, B)
	if err := cmp("logits", z32, z64); err != nil {
		return err
	}
	t32, err := n32.Tangent(p32, x32, y, B, k, xd32, pd32, true)
	if err != nil {
		return err
	}
	t64, err := n64.Tangent(p64, x64, y, B, k, xd64, pd64, true)
	if err != nil {
		return err
	}
	for _, c := range []struct {
		what string
		got  []float32
		want []float64
	}{
		{"per-sample gradients", t32.Grads, t64.Grads},
		{"losses", t32.Losses, t64.Losses},
		{"gradient tangents", t32.GradDots, t64.GradDots},
		{"input-gradient tangents", t32.InputGradDots, t64.InputGradDots},
	} {
		if err := cmp(c.what, c.got, c.want); err != nil {
			return err
		}
	}
	g64 := t64.Grads[:P]
	var ss float64
	for _, v := range g64 {
		ss += v * v
	}
	coords := make([][]int, B)
	for s := range coords {
		for j := 0; j < 2*k; j++ {
			coords[s] = append(coords[s], rng.IntN(D))
		}
	}
	for _, clip := range []Clip{{Mode: ClipSmooth, C: math.Sqrt(ss) / 2}, {Mode: ClipHard, C: math.Sqrt(ss) / 2}} {
		sum32 := make([]float32, P)
		sum64 := make([]float64, P)
		l32, l64 := make([]float64, B), make([]float64, B)
		if err := n32.ClippedGradSum(p32, x32, y, B, clip, sum32, l32); err != nil {
			return err
		}
		if err := n64.ClippedGradSum(p64, x64, y, B, clip, sum64, l64); err != nil {
			return err
		}
		if err := cmp(fmt.Sprintf("clipped gradient sum (mode %d)", clip.Mode), sum32, sum64); err != nil {
			return err
		}
		dx32, err := n32.InputGradOfClippedDot(p32, x32, y, B, v32, clip)
		if err != nil {
			return err
		}
		dx64, err := n64.InputGradOfClippedDot(p64, x64, y, B, v64, clip)
		if err != nil {
			return err
		}
		if err := cmp(fmt.Sprintf("input gradient of clipped dot (mode %d)", clip.Mode), dx32, dx64); err != nil {
			return err
		}
		f32, f64 := make([]float64, B), make([]float64, B)
		if err := n32.FILSqNorms(p32, x32, y, B, clip, coords, f32); err != nil {
			return err
		}
		if err := n64.FILSqNorms(p64, x64, y, B, clip, coords, f64); err != nil {
			return err
		}
		if err := cmp(fmt.Sprintf("FIL norms (mode %d)", clip.Mode), to32(f32), f64); err != nil {
			return err
		}
	}
	return nil
}

func to32(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}
