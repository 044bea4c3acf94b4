package gorgonet

import (
	"math"
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestCrossEntropyValueAndErrors checks CrossEntropy's value against the float64
// logsumexp(z) − z_label computed here, and that bad inputs (shapes or dtypes that
// differ) come back as errors naming cross-entropy, not panics.
func TestCrossEntropyValueAndErrors(t *testing.T) {
	zv := []float64{0.5, -1.25, 3, 2.5}
	label := 2
	g := G.NewGraph()
	z := G.NewMatrix(g, G.Float64, G.WithShape(1, 4), G.WithName("z"),
		G.WithValue(tensor.New(tensor.WithShape(1, 4), tensor.WithBacking(append([]float64(nil), zv...)))))
	yv := make([]float64, 4)
	yv[label] = 1
	y := G.NewMatrix(g, G.Float64, G.WithShape(1, 4), G.WithName("y"),
		G.WithValue(tensor.New(tensor.WithShape(1, 4), tensor.WithBacking(yv))))
	loss, err := CrossEntropy(z, y)
	if err != nil {
		t.Fatal(err)
	}
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, v := range zv {
		sum += math.Exp(v)
	}
	want := math.Log(sum) - zv[label]
	if got := loss.Value().Data().(float64); math.Abs(got-want) > 1e-12 {
		t.Errorf("cross-entropy %v, want %v", got, want)
	}

	h := G.NewGraph()
	z2 := G.NewMatrix(h, G.Float64, G.WithShape(1, 4), G.WithName("z"))
	y3 := G.NewMatrix(h, G.Float64, G.WithShape(1, 3), G.WithName("y3"))
	y32 := G.NewMatrix(h, G.Float32, G.WithShape(1, 4), G.WithName("y32"))
	for _, c := range []struct {
		name string
		y    *G.Node
	}{{"shape", y3}, {"dtype", y32}} {
		loss, err := CrossEntropy(z2, c.y)
		if err == nil || loss != nil || !strings.HasPrefix(err.Error(), "gorgonet: cross-entropy: ") {
			t.Errorf("%s: got %v, %v; want a cross-entropy error", c.name, loss, err)
		}
	}
}
