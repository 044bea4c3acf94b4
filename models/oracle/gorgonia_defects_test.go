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

// TestGorgoniaGradOfGradDefect: Gorgonia's Grad applied to the output of Grad (a
// second-order derivative) returns silently wrong values, because the second pass
// reuses the first pass's adjoints: for Σx³ it gives 2x instead of 6x, and for
// Σtanh(x) it gives the first derivative 1 − tanh²(x) again instead of
// −2·tanh(x)·(1 − tanh²(x)). This is why the engine's second-order (FIL) passes are
// hand-written forward-over-reverse and Gorgonia serves only as a first-order oracle.
func TestGorgoniaGradOfGradDefect(t *testing.T) {
	xv := []float64{0.5, -1.5, 2}
	for _, c := range []struct {
		name     string
		f        func(x *G.Node) (*G.Node, error)
		right    func(x float64) float64 // the true d²/dx² of the summand
		gorgonia func(x float64) float64 // what v0.9.18 returns
	}{
		{"cube", func(x *G.Node) (*G.Node, error) {
			x2, err := G.HadamardProd(x, x)
			if err != nil {
				return nil, err
			}
			return G.HadamardProd(x2, x)
		}, func(x float64) float64 { return 6 * x }, func(x float64) float64 { return 2 * x }},
		{"tanh", G.Tanh, func(x float64) float64 {
			th := math.Tanh(x)
			return -2 * th * (1 - th*th)
		}, func(x float64) float64 {
			th := math.Tanh(x)
			return 1 - th*th
		}},
	} {
		g := G.NewGraph()
		x := G.NewVector(g, G.Float64, G.WithShape(3), G.WithName("x"),
			G.WithValue(tensor.New(tensor.WithShape(3), tensor.WithBacking(append([]float64(nil), xv...)))))
		y, err := c.f(x)
		if err != nil {
			t.Fatal(err)
		}
		s, err := G.Sum(y)
		if err != nil {
			t.Fatal(err)
		}
		g1, err := G.Grad(s, x)
		if err != nil {
			t.Fatal(err)
		}
		s2, err := G.Sum(g1[0])
		if err != nil {
			t.Fatal(err)
		}
		g2, err := G.Grad(s2, x)
		if err != nil {
			t.Fatal(err)
		}
		vm := G.NewTapeMachine(g)
		if err := vm.RunAll(); err != nil {
			t.Fatal(err)
		}
		got := g2[0].Value().Data().([]float64)
		for i, xi := range xv {
			if math.Abs(got[i]-c.right(xi)) < 1e-12 {
				t.Errorf("%s: Grad of Grad at %v = %v is right now; the defect is gone, revisit the engine's use of Gorgonia", c.name, xi, got[i])
			} else if math.Abs(got[i]-c.gorgonia(xi)) > 1e-12 {
				t.Errorf("%s: Grad of Grad at %v = %v, neither right (%v) nor the known wrong value (%v)", c.name, xi, got[i], c.right(xi), c.gorgonia(xi))
			}
		}
	}
}
