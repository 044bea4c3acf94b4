// Package models holds the per-sample, second-order engine: layers with batched
// Forward, per-sample Backward and forward-over-reverse Tangent passes, the networks of
// the papers built from them, gradient clipping and the per-sample FIL step.
package models

import (
	"fmt"
	"sort"
)

// LayerKind names a layer type of an architecture.
type LayerKind string

// The layer kinds are registered by their files (layer_<kind>.go): KindConv,
// KindAvgPool, KindTanh, KindELU, KindReLU, KindDense, KindFlatten, KindNormalize;
// LayerKinds lists them.

// LayerSpec describes one layer. Only the fields of its Kind are used.
//
// Parameter layout (the contract between the engine, the Gorgonia oracle, the
// trainer and checkpoints): parameters are one flat vector, layer after layer in
// order; a conv layer stores W as [Out][InC][KH][KW] then b as [Out]; a dense layer
// stores W as [Out][In] then b as [Out]. Activations are NCHW, flattened row-major.
type LayerSpec struct {
	Kind LayerKind `json:"kind"`
	// Conv: Out filters of KH×KW, Stride, and explicit padding PadT/PadB/PadL/PadR
	// (SAME and VALID are resolved to explicit padding by the constructors).
	// AvgPool: KH×KW window, Stride.
	Out    int `json:"out,omitempty"`
	KH     int `json:"kh,omitempty"`
	KW     int `json:"kw,omitempty"`
	Stride int `json:"stride,omitempty"`
	PadT   int `json:"pad_t,omitempty"`
	PadB   int `json:"pad_b,omitempty"`
	PadL   int `json:"pad_l,omitempty"`
	PadR   int `json:"pad_r,omitempty"`
	// Normalize: per-channel mean and standard deviation.
	Mean []float64 `json:"mean,omitempty"`
	Std  []float64 `json:"std,omitempty"`
}

// Shape is a per-sample activation shape [C][H][W]; dense activations have H = W = 1.
type Shape struct{ C, H, W int }

// Size is the number of values in one sample's activation.
func (s Shape) Size() int { return s.C * s.H * s.W }

// Arch is a network architecture: input shape, layers, number of classes. The loss is
// softmax cross-entropy with integer labels on the last layer's outputs (logits).
type Arch struct {
	Name    string      `json:"name"`
	Input   Shape       `json:"input"`
	Classes int         `json:"classes"`
	Layers  []LayerSpec `json:"layers"`
}

// ParamShape names one parameter tensor of an architecture and its place in the flat
// parameter vector.
type ParamShape struct {
	Layer  int    // index into Arch.Layers
	Tensor int    // index among the layer's tensors (Layer.Params)
	Name   string // e.g. "conv0.W", "dense3.b"
	Dims   []int  // conv W: [Out InC KH KW]; dense W: [Out In]; biases: [Out]
	Offset int    // offset in the flat parameter vector
	Size   int
}

// Conv returns a conv layer with explicit symmetric padding pad.
func Conv(out, k, stride, pad int) LayerSpec {
	return LayerSpec{Kind: KindConv, Out: out, KH: k, KW: k, Stride: stride, PadT: pad, PadB: pad, PadL: pad, PadR: pad}
}

// ConvSame returns a conv layer with TensorFlow/JAX "SAME" padding for an input of
// height h and width w: output ceil(h/stride), extra padding at the bottom/right.
func ConvSame(out, k, stride, h, w int) LayerSpec {
	pt, pb := samePad(h, k, stride)
	pl, pr := samePad(w, k, stride)
	return LayerSpec{Kind: KindConv, Out: out, KH: k, KW: k, Stride: stride, PadT: pt, PadB: pb, PadL: pl, PadR: pr}
}

func samePad(n, k, stride int) (lo, hi int) {
	out := (n + stride - 1) / stride
	total := (out-1)*stride + k - n
	if total < 0 {
		total = 0
	}
	return total / 2, total - total/2
}

// AvgPool returns a VALID average-pooling layer with a k×k window.
func AvgPool(k, stride int) LayerSpec {
	return LayerSpec{Kind: KindAvgPool, KH: k, KW: k, Stride: stride}
}

// Dense returns a fully connected layer with out units.
func Dense(out int) LayerSpec { return LayerSpec{Kind: KindDense, Out: out} }

// Simple layers without configuration.
var (
	layerTanh    = LayerSpec{Kind: KindTanh}
	layerELU     = LayerSpec{Kind: KindELU}
	layerFlatten = LayerSpec{Kind: KindFlatten}
)

// CIFAR10Mean and CIFAR10Std are the per-channel statistics of the CIFAR-10 training
// set used by cifar-cnn's Normalize layer (inputs stay raw [0,1] pixels: the FIL and its MSE bounds are then in pixel units).
var (
	CIFAR10Mean = []float64{0.4914, 0.4822, 0.4465}
	CIFAR10Std  = []float64{0.2470, 0.2435, 0.2616}
)

// ArchNames lists the built-in architectures.
func ArchNames() []string {
	names := []string{"mnist-cnn", "mnist-cnn-3x3", "cifar-cnn", "mlp", "linear"}
	sort.Strings(names)
	return names
}

// ArchByName returns a built-in architecture:
//
//   - mnist-cnn: the reference code's (Papernot et al.) net: Conv 16×8×8 s2 SAME → tanh
//     → AvgPool 2 s1 → Conv 32×4×4 s2 VALID → tanh → AvgPool 2 s1 → Dense 32 → tanh →
//     Dense 10 (26 010 parameters).
//   - mnist-cnn-3x3: Guo, Karrer, Chaudhuri & van der Maaten 2022, Table 1: Conv 16×3×3 s2 pad 2 → tanh → AvgPool 2 s1 →
//     Conv 32×3×3 s2 pad 0 → tanh → AvgPool 2 s1 → Dense 32 → tanh → Dense 10.
//   - cifar-cnn: Guo, Karrer, Chaudhuri & van der Maaten 2022, Table 2, with SAME padding and Normalize first.
//   - mlp: 784 → Dense 10 → ELU → Dense 10 (Hayes et al.).
//   - linear: 784 → Dense 10.
func ArchByName(name string) (Arch, error) {
	mnist := Shape{C: 1, H: 28, W: 28}
	switch name {
	case "mnist-cnn":
		return Arch{Name: name, Input: mnist, Classes: 10, Layers: []LayerSpec{
			ConvSame(16, 8, 2, 28, 28), layerTanh, AvgPool(2, 1),
			Conv(32, 4, 2, 0), layerTanh, AvgPool(2, 1),
			layerFlatten, Dense(32), layerTanh, Dense(10),
		}}, nil
	case "mnist-cnn-3x3":
		return Arch{Name: name, Input: mnist, Classes: 10, Layers: []LayerSpec{
			Conv(16, 3, 2, 2), layerTanh, AvgPool(2, 1),
			Conv(32, 3, 2, 0), layerTanh, AvgPool(2, 1),
			layerFlatten, Dense(32), layerTanh, Dense(10),
		}}, nil
	case "cifar-cnn":
		ls := []LayerSpec{{Kind: KindNormalize, Mean: CIFAR10Mean, Std: CIFAR10Std}}
		for _, c := range []struct{ out, hw int }{{32, 32}, {64, 16}, {128, 8}} {
			ls = append(ls, ConvSame(c.out, 3, 1, c.hw, c.hw), layerTanh, ConvSame(c.out, 3, 1, c.hw, c.hw), layerTanh, AvgPool(2, 2))
		}
		ls = append(ls, layerFlatten, Dense(128), layerTanh, Dense(10))
		return Arch{Name: name, Input: Shape{C: 3, H: 32, W: 32}, Classes: 10, Layers: ls}, nil
	case "mlp":
		return Arch{Name: name, Input: mnist, Classes: 10, Layers: []LayerSpec{
			layerFlatten, Dense(10), layerELU, Dense(10),
		}}, nil
	case "linear":
		return Arch{Name: name, Input: mnist, Classes: 10, Layers: []LayerSpec{
			layerFlatten, Dense(10),
		}}, nil
	}
	return Arch{}, fmt.Errorf("unknown model %q (known: %v)", name, ArchNames())
}

// Shapes returns the per-sample activation shape before layer 0 (the input) and after
// every layer, or an error when the layers do not fit the input.
func (a Arch) Shapes() ([]Shape, error) {
	if a.Input.C <= 0 || a.Input.H <= 0 || a.Input.W <= 0 {
		return nil, fmt.Errorf("%s: input shape %dx%dx%d must be positive", a.Name, a.Input.C, a.Input.H, a.Input.W)
	}
	if a.Classes < 1 {
		return nil, fmt.Errorf("%s: %d classes, want at least 1", a.Name, a.Classes)
	}
	shapes := []Shape{a.Input}
	s := a.Input
	for i, l := range a.Layers {
		kind, err := LayerOf(l.Kind)
		if err != nil {
			return nil, fmt.Errorf("%s layer %d: %w", a.Name, i, err)
		}
		if s, err = kind.OutShape(l, s); err != nil {
			return nil, fmt.Errorf("%s layer %d: %w", a.Name, i, err)
		}
		shapes = append(shapes, s)
	}
	if s.Size() != a.Classes || s.H != 1 || s.W != 1 {
		return nil, fmt.Errorf("%s: last layer gives %dx%dx%d values, want %d logits", a.Name, s.C, s.H, s.W, a.Classes)
	}
	return shapes, nil
}

// Params returns the parameter tensors in flat-vector order (see LayerSpec), named
// <kind><layer index>.<tensor> (e.g. "conv0.W", "dense9.b").
func (a Arch) Params() ([]ParamShape, error) {
	shapes, err := a.Shapes()
	if err != nil {
		return nil, err
	}
	var ps []ParamShape
	off := 0
	for i, l := range a.Layers {
		kind, _ := LayerOf(l.Kind) // known: Shapes checked it
		for t, pt := range kind.Params(l, shapes[i]) {
			n := 1
			for _, d := range pt.Dims {
				n *= d
			}
			ps = append(ps, ParamShape{Layer: i, Tensor: t, Name: fmt.Sprintf("%s%d.%s", l.Kind, i, pt.Name), Dims: pt.Dims, Offset: off, Size: n})
			off += n
		}
	}
	return ps, nil
}

// NumParams is the length of the flat parameter vector.
func (a Arch) NumParams() int {
	ps, err := a.Params()
	if err != nil || len(ps) == 0 {
		return 0
	}
	last := ps[len(ps)-1]
	return last.Offset + last.Size
}

// InputDim is d, the number of input values (pixels) per sample.
func (a Arch) InputDim() int { return a.Input.Size() }
