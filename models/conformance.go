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
// project's bar for float32). CheckExtensionSubsets runs it on every valid
// combination of be's optional extensions.
func CheckBackend(be Backend[float32], tol float64) error {
	return checkBackend(be, tol, nil, nil)
}

// checkBackend is CheckBackend on the architectures named (nil: all), comparing be
// also with full when full is not nil.
func checkBackend(be Backend[float32], tol float64, full Backend[float32], archs []string) error {
	if len(archs) == 0 {
		archs = ArchNames()
	}
	for _, name := range archs {
		arch, err := ArchByName(name)
		if err != nil {
			return err
		}
		B, k := 3, 3
		if name == "cifar-cnn" {
			B, k = 1, 1
		}
		if err := checkBackendArch(be, full, arch, B, k, tol); err != nil {
			return fmt.Errorf("backend %s, %s: %w", be.Name(), name, err)
		}
	}
	return nil
}

// probe is the conformance suite's inputs for one architecture: parameters, B
// samples with labels, k input and parameter tangent directions per sample, a unit
// parameter vector, FIL coordinates and the clips (all float32-representable).
type probe struct {
	B, k            int
	p, x, xd, pd, v []float64
	y               []int
	coords          [][]int
	clips           []Clip
}

// output is one named result of a probe run.
type output struct {
	what string
	v    []float64
}

func newProbe(arch Arch, B, k int) (probe, error) {
	n64, err := NewNetwork(arch, NewCPUBackend[float64]())
	if err != nil {
		return probe{}, err
	}
	P, D := n64.NumParams(), n64.InputDim()
	rng := rand.New(rand.NewPCG(12345, uint64(P)))
	pr := probe{B: B, k: k, p: InitParams(arch, 7), x: make([]float64, B*D), y: make([]int, B)}
	for i := range pr.p {
		pr.p[i] = float64(float32(pr.p[i] + 0.01*rng.NormFloat64()))
	}
	for i := range pr.x {
		pr.x[i] = float64(float32(rng.Float64()))
	}
	for i := range pr.y {
		pr.y[i] = rng.IntN(arch.Classes)
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
	for r := 0; r < B*k; r++ {
		pr.xd = append(pr.xd, unit(D)...)
		pr.pd = append(pr.pd, unit(P)...)
	}
	pr.v = unit(P)
	t64, err := n64.Tangent(pr.p, pr.x, pr.y, B, k, pr.xd, pr.pd, true)
	if err != nil {
		return probe{}, err
	}
	var ss float64
	for _, v := range t64.Grads[:P] {
		ss += v * v
	}
	pr.coords = make([][]int, B)
	for s := range pr.coords {
		for j := 0; j < 2*k; j++ {
			pr.coords[s] = append(pr.coords[s], rng.IntN(D))
		}
	}
	pr.clips = []Clip{{Mode: ClipSmooth, C: math.Sqrt(ss) / 2}, {Mode: ClipHard, C: math.Sqrt(ss) / 2}}
	return pr, nil
}

// runProbe runs the suite's engine calls on n and returns their results in a fixed
// order.
func runProbe[T Float](n *Network[T], pr probe) ([]output, error) {
	B, k, P := pr.B, pr.k, n.NumParams()
	p, x, xd, pd, v := convert[T](pr.p), convert[T](pr.x), convert[T](pr.xd), convert[T](pr.pd), convert[T](pr.v)
	z, err := n.Forward(p, x, B)
	if err != nil {
		return nil, err
	}
	out := []output{{"logits", convert[float64](z)}}
	t, err := n.Tangent(p, x, pr.y, B, k, xd, pd, true)
	if err != nil {
		return nil, err
	}
	out = append(out,
		output{"per-sample gradients", convert[float64](t.Grads)},
		output{"losses", convert[float64](t.Losses)},
		output{"gradient tangents", convert[float64](t.GradDots)},
		output{"input-gradient tangents", convert[float64](t.InputGradDots)})
	for _, clip := range pr.clips {
		sum, losses := make([]T, P), make([]float64, B)
		if err := n.ClippedGradSum(p, x, pr.y, B, clip, sum, losses); err != nil {
			return nil, err
		}
		out = append(out, output{fmt.Sprintf("clipped gradient sum (mode %d)", clip.Mode), convert[float64](sum)})
		dx, err := n.InputGradOfClippedDot(p, x, pr.y, B, v, clip)
		if err != nil {
			return nil, err
		}
		out = append(out, output{fmt.Sprintf("input gradient of clipped dot (mode %d)", clip.Mode), convert[float64](dx)})
		fil := make([]float64, B)
		if err := n.FILSqNorms(p, x, pr.y, B, clip, pr.coords, fil); err != nil {
			return nil, err
		}
		out = append(out, output{fmt.Sprintf("FIL norms (mode %d)", clip.Mode), fil})
	}
	return out, nil
}

// compareOutputs returns an error naming the first of got's results whose relative
// error against want's exceeds tol.
func compareOutputs(got, want []output, tol float64) error {
	for i, w := range want {
		var num, den float64
		for j, wv := range w.v {
			d := got[i].v[j] - wv
			num += d * d
			den += wv * wv
		}
		e := math.Sqrt(num / math.Max(den, 1e-300))
		if math.IsNaN(e) || e > tol {
			return fmt.Errorf("%s: relative error %.3g > %.3g", w.what, e, tol)
		}
	}
	return nil
}

func checkBackendArch(be, full Backend[float32], arch Arch, B, k int, tol float64) error {
	pr, err := newProbe(arch, B, k)
	if err != nil {
		return err
	}
	run := func(be Backend[float32]) ([]output, error) {
		n, err := NewNetwork(arch, be)
		if err != nil {
			return nil, err
		}
		return runProbe(n, pr)
	}
	got, err := run(be)
	if err != nil {
		return err
	}
	n64, err := NewNetwork(arch, NewCPUBackend[float64]())
	if err != nil {
		return err
	}
	want, err := runProbe(n64, pr)
	if err != nil {
		return err
	}
	if err := compareOutputs(got, want, tol); err != nil {
		return err
	}
	if full == nil {
		return nil
	}
	all, err := run(full)
	if err != nil {
		return err
	}
	if err := compareOutputs(got, all, tol); err != nil {
		return fmt.Errorf("against all extensions: %w", err)
	}
	return nil
}

// convert returns v converted element by element to precision T.
func convert[T, S Float](v []S) []T {
	out := make([]T, len(v))
	for i, x := range v {
		out[i] = T(x)
	}
	return out
}
