package gorgonet

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"

	"github.com/dpfil/dpfil/models"
	"github.com/dpfil/dpfil/models/oracle"
)

// mnistCNN defines the reference code's MNIST net (models.ArchByName("mnist-cnn"))
// in Gorgonia.
func mnistCNN(t *testing.T) *Net {
	t.Helper()
	b := New("mnist-cnn-gorgonia", models.Shape{C: 1, H: 28, W: 28}, 10)
	h := b.Conv(b.Input(), 16, 8, 2, Same)
	h = b.Tanh(h)
	h = b.AvgPool(h, 2, 1)
	h = b.Conv(h, 32, 4, 2, Valid)
	h = b.Tanh(h)
	h = b.AvgPool(h, 2, 1)
	h = b.Flatten(h)
	h = b.Dense(h, 32)
	h = b.Tanh(h)
	logits := b.Dense(h, 10)
	n, err := b.Build(logits)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestMNISTCNNFromGorgonia is the acceptance check: a Gorgonia-defined copy
// of mnist-cnn has the built-in's layer list, and gives the same per-sample
// gradients and FIL as the built-in one (float64, relative 1e-10); Gorgonia's own
// per-sample gradients from the builder's graph agree with both.
func TestMNISTCNNFromGorgonia(t *testing.T) {
	n := mnistCNN(t)
	ref, err := models.ArchByName("mnist-cnn")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(n.Arch.Layers, ref.Layers) || n.Arch.Input != ref.Input || n.Arch.Classes != ref.Classes {
		t.Fatalf("layers differ:\n gorgonia %+v\n built-in %+v", n.Arch.Layers, ref.Layers)
	}
	if n.Check.GradRelErr > 1e-10 || n.Check.Samples != 4 {
		t.Errorf("construction check %+v", n.Check)
	}
	gn, err := n.Network64()
	if err != nil {
		t.Fatal(err)
	}
	bn, err := models.NewNetwork(ref, models.NewCPUBackend[float64]())
	if err != nil {
		t.Fatal(err)
	}
	const B = 3
	params, x, y := RandomPoint(ref, B, 7)
	g1, _, err := gn.PerSampleGrads(params, x, y, B)
	if err != nil {
		t.Fatal(err)
	}
	g2, _, err := bn.PerSampleGrads(params, x, y, B)
	if err != nil {
		t.Fatal(err)
	}
	if e := relErr(g1, g2); e > 1e-10 {
		t.Errorf("per-sample gradients: rel. error %.3g", e)
	}
	gg, _, err := n.Graph.PerSampleGrads(params, x, y, B)
	if err != nil {
		t.Fatal(err)
	}
	if e := relErr(gg, g2); e > 1e-10 {
		t.Errorf("Gorgonia's per-sample gradients: rel. error %.3g", e)
	}
	coords := make([][]int, B)
	for s := range coords {
		for j := 0; j < 20; j++ {
			coords[s] = append(coords[s], (s*131+j*37)%784)
		}
	}
	for _, clip := range []models.Clip{{Mode: models.ClipSmooth, C: 0.1}, {Mode: models.ClipHard, C: 0.1}} {
		f1, f2 := make([]float64, B), make([]float64, B)
		if err := gn.FILSqNorms(params, x, y, B, clip, coords, f1); err != nil {
			t.Fatal(err)
		}
		if err := bn.FILSqNorms(params, x, y, B, clip, coords, f2); err != nil {
			t.Fatal(err)
		}
		if e := relErr(f1, f2); e > 1e-10 {
			t.Errorf("FIL (mode %d): rel. error %.3g", clip.Mode, e)
		}
	}
}

// TestBuilderKinds builds nets with every layer kind the builder offers, asymmetric
// padding included, which pass the construction check.
func TestBuilderKinds(t *testing.T) {
	b := New("three-conv-relu", models.Shape{C: 3, H: 9, W: 8}, 4)
	h := b.Normalize(b.Input(), []float64{0.5, 0.4, 0.3}, []float64{0.2, 0.3, 0.25})
	h = b.Conv(h, 4, 3, 2, Same) // SAME at stride 2: asymmetric
	h = b.ReLU(h)
	h = b.ConvRect(h, 5, 2, 3, 1, PadTBLR(1, 0, 2, 1))
	h = b.ELU(h)
	h = b.AvgPool(h, 2, 1)
	h = b.Conv(h, 3, 2, 1, Pad(1))
	h = b.ReLU(h)
	h = b.Flatten(h)
	h = b.Dense(h, 6)
	h = b.Tanh(h)
	logits := b.Dense(h, 4)
	n, err := b.Build(logits, Options{Samples: 3, Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	if l := n.Arch.Layers[1]; l.PadL == l.PadR || l.PadT != 1 || l.PadB != 1 {
		t.Errorf("SAME padding should be asymmetric here: %+v", n.Arch.Layers[1])
	}
	if n.Check.Samples != 3 || n.Check.GradRelErr > 1e-9 {
		t.Errorf("check %+v", n.Check)
	}
	if _, err := n.Model(); err != nil {
		t.Fatal(err)
	}
}

// TestBuilderErrors: misuse gives errors naming the problem, never a panic.
func TestBuilderErrors(t *testing.T) {
	in := models.Shape{C: 1, H: 6, W: 6}
	cases := []struct {
		name string
		f    func() error
		want string
	}{
		{"bad input", func() error {
			_, err := New("x", models.Shape{}, 3).Build(nil)
			return err
		}, "must be positive"},
		{"kernel too large", func() error {
			b := New("x", in, 3)
			h := b.Conv(b.Input(), 2, 9, 1, Valid)
			_, err := b.Build(b.Dense(b.Flatten(h), 3))
			return err
		}, "does not fit"},
		{"not the last node", func() error {
			b := New("x", in, 3)
			h := b.Flatten(b.Input())
			b.Dense(h, 4)
			_, err := b.Build(b.Dense(h, 3))
			return err
		}, "previous layer's output"},
		{"logits size", func() error {
			b := New("x", in, 3)
			_, err := b.Build(b.Dense(b.Flatten(b.Input()), 4))
			return err
		}, "want 3 logits"},
		{"dense before flatten", func() error {
			b := New("x", in, 3)
			_, err := b.Build(b.Dense(b.Input(), 3))
			return err
		}, "flattened input"},
		{"unknown kind", func() error {
			b := New("x", in, 3)
			_, err := b.Build(b.Layer(b.Input(), models.LayerSpec{Kind: "softplus"}))
			return err
		}, "unknown layer kind"},
		{"foreign node", func() error {
			b := New("x", in, 3)
			other := G.NewGraph()
			x := G.NewMatrix(other, G.Float64, G.WithShape(1, 36), G.WithName("z"))
			_, err := b.Build(b.Dense(x, 3))
			return err
		}, "previous layer's output"},
		{"built twice", func() error {
			b := New("x", in, 3)
			l := b.Dense(b.Flatten(b.Input()), 3)
			if _, err := b.Build(l); err != nil {
				return err
			}
			_, err := b.Build(l)
			return err
		}, "finished"},
	}
	for _, c := range cases {
		err := c.f()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to mention %q", c.name, err, c.want)
		}
	}
}

// TestCheckCatchesMismatch: the construction check fails, with ErrMismatch, when the
// engine's layers are not what the graph computes (a tanh engine against an ELU graph).
func TestCheckCatchesMismatch(t *testing.T) {
	mk := func(k models.LayerKind) models.Arch {
		return models.Arch{Name: string(k), Input: models.Shape{C: 4, H: 1, W: 1}, Classes: 3,
			Layers: []models.LayerSpec{{Kind: models.KindFlatten}, models.Dense(5), {Kind: k}, models.Dense(3)}}
	}
	gr, err := oracle.Build(mk(models.KindELU), 1)
	if err != nil {
		t.Fatal(err)
	}
	c, err := check(mk(models.KindTanh), gr, Options{Samples: 2, Seed: 1, Tol: 1e-9})
	if !errors.Is(err, ErrMismatch) || !(c.GradRelErr > 1e-3) {
		t.Errorf("check = %+v, %v; want a mismatch", c, err)
	}
	if _, err := check(mk(models.KindELU), gr, Options{Samples: 2, Seed: 1, Tol: 1e-9}); err != nil {
		t.Errorf("same layers: %v", err)
	}
	if math.IsNaN(c.LossRelErr) {
		t.Error("NaN loss error")
	}
}
