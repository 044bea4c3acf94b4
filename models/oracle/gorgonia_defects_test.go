package oracle

import (
	"math"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// These tests pin the Gorgonia v0.9.18 defects that the graph builder works around
// (package comment). They fail when a Gorgonia upgrade fixes a defect, which is the
// moment to revisit the workaround.

// TestGorgoniaAveragePool2DDefect: AveragePool2D of a 4×6 ramp with a 2×2 window
// divides the window sum by the input width (6), not by the kernel area (4), and with
// stride 2 its backward puts all the gradient into the top-left 2×3 block.
func TestGorgoniaAveragePool2DDefect(t *testing.T) {
	for _, stride := range []int{1, 2} {
		g := G.NewGraph()
		xv := make([]float64, 4*6)
		for i := range xv {
			xv[i] = float64(i)
		}
		x := G.NewTensor(g, G.Float64, 4, G.WithShape(1, 1, 4, 6), G.WithName("x"),
			G.WithValue(tensor.New(tensor.WithShape(1, 1, 4, 6), tensor.WithBacking(xv))))
		p, err := G.AveragePool2D(x, tensor.Shape{2, 2}, []int{0, 0}, []int{stride, stride})
		if err != nil {
			t.Fatal(err)
		}
		s, err := G.Sum(p)
		if err != nil {
			t.Fatal(err)
		}
		gs, err := G.Grad(s, x)
		if err != nil {
			t.Fatal(err)
		}
		vm := G.NewTapeMachine(g)
		if err := vm.RunAll(); err != nil {
			t.Fatal(err)
		}
		out := p.Value().Data().([]float64)
		// Correct: (0+1+6+7)/4 = 3.5. Observed: 14/6.
		if math.Abs(out[0]-14.0/6) > 1e-12 {
			t.Errorf("stride %d: AveragePool2D[0] = %v; the width-division defect (14/6) is gone, revisit avgPool", stride, out[0])
		}
		if stride == 2 {
			grad := gs[0].Value().Data().([]float64)
			// Correct: every input is in exactly one window, gradient 1/4 everywhere.
			if grad[23] != 0 {
				t.Errorf("stride 2: gradient at the last input %v; the backward defect is gone, revisit avgPool", grad[23])
			}
		}
	}
}

// TestGorgoniaConstantMergeDefect: a graph identifies a constant tensor by a hash of
// its printed value, and the printing of a long vector is truncated ("[0 0 0 0 ... 0
// 0 0 0]"). Two constants that differ only in the middle are silently merged into one
// node, even when they carry distinct names (WithName does not help); named input
// nodes holding the values stay distinct.
func TestGorgoniaConstantMergeDefect(t *testing.T) {
	for _, c := range []struct {
		kind      string
		wantMerge bool
	}{{"unnamed constants", true}, {"named constants", true}, {"named input nodes", false}} {
		g := G.NewGraph()
		av, bv := make([]float64, 100), make([]float64, 100)
		bv[50] = 7
		x := G.NewVector(g, G.Float64, G.WithShape(100), G.WithName("x"),
			G.WithValue(tensor.New(tensor.WithShape(100), tensor.WithBacking(make([]float64, 100)))))
		vec := func(name string, v []float64) *G.Node {
			t := tensor.New(tensor.WithShape(100), tensor.WithBacking(v))
			switch c.kind {
			case "unnamed constants":
				return G.NewConstant(t)
			case "named constants":
				return G.NewConstant(t, G.WithName(name))
			}
			return G.NewVector(g, G.Float64, G.WithShape(100), G.WithName(name), G.WithValue(t))
		}
		a, b := vec("a", av), vec("b", bv)
		s1, err := G.Add(x, a)
		if err != nil {
			t.Fatal(err)
		}
		s2, err := G.Add(x, b)
		if err != nil {
			t.Fatal(err)
		}
		vm := G.NewTapeMachine(g)
		if err := vm.RunAll(); err != nil {
			t.Fatal(err)
		}
		ga, gb := s1.Value().Data().([]float64)[50], s2.Value().Data().([]float64)[50]
		merged := !(ga == 0 && gb == 7)
		if merged != c.wantMerge {
			t.Errorf("%s: x+a, x+b at 50 = %v, %v (want 0, 7); merged = %v, expected %v", c.kind, ga, gb, merged, c.wantMerge)
		}
	}
}
