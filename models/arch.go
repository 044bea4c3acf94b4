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

// The layer kinds an Arch can use.
const (
	KindConv      LayerKind = "conv"      // 2-D convolution with bias
	KindAvgPool   LayerKind = "avgpool"   // average pooling (VALID, divides by the kernel area)
	KindTanh      LayerKind = "tanh"      // elementwise tanh
	KindELU       LayerKind = "elu"       // elementwise ELU with alpha = 1
	KindDense     LayerKind = "dense"     // fully connected with bias
	KindFlatten   LayerKind = "flatten"   // [C][H][W] -> [C*H*W], row-major
	KindNormalize LayerKind = "normalize" // fixed per-channel (x - mean) / std
)

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
// set used by cifar-cnn's Normalize layer (inputs stay raw [0,1] pixels; SPEC 5).
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
//   - mnist-cnn-3x3: seed 000 Table 1: Conv 16×3×3 s2 pad 2 → tanh → AvgPool 2 s1 →
//     Conv 32×3×3 s2 pad 0 → tanh → AvgPool 2 s1 → Dense 32 → tanh → Dense 10.
//   - cifar-cnn: seed 000 Table 2 with SAME padding and Normalize first.
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
	shapes := []Shape{a.Input}
	s := a.Input
	for i, l := range a.Layers {
		switch l.Kind {
		case KindConv:
			if l.Out <= 0 || l.KH <= 0 || l.KW <= 0 || l.Stride <= 0 {
				return nil, fmt.Errorf("%s layer %d: conv needs positive out, kernel and stride", a.Name, i)
			}
			h := (s.H+l.PadT+l.PadB-l.KH)/l.Stride + 1
			w := (s.W+l.PadL+l.PadR-l.KW)/l.Stride + 1
			if h <= 0 || w <= 0 {
				return nil, fmt.Errorf("%s layer %d: conv %dx%d does not fit input %dx%d", a.Name, i, l.KH, l.KW, s.H, s.W)
			}
			s = Shape{C: l.Out, H: h, W: w}
		case KindAvgPool:
			if l.KH <= 0 || l.KW <= 0 || l.Stride <= 0 {
				return nil, fmt.Errorf("%s layer %d: avgpool needs positive kernel and stride", a.Name, i)
			}
			h := (s.H-l.KH)/l.Stride + 1
			w := (s.W-l.KW)/l.Stride + 1
			if h <= 0 || w <= 0 {
				return nil, fmt.Errorf("%s layer %d: avgpool %dx%d does not fit input %dx%d", a.Name, i, l.KH, l.KW, s.H, s.W)
			}
			s = Shape{C: s.C, H: h, W: w}
		case KindTanh, KindELU:
		case KindFlatten:
			s = Shape{C: s.Size(), H: 1, W: 1}
		case KindDense:
			if s.H != 1 || s.W != 1 {
				return nil, fmt.Errorf("%s layer %d: dense needs a flattened input, got %dx%dx%d", a.Name, i, s.C, s.H, s.W)
			}
			if l.Out <= 0 {
				return nil, fmt.Errorf("%s layer %d: dense needs positive out", a.Name, i)
			}
			s = Shape{C: l.Out, H: 1, W: 1}
		case KindNormalize:
			if len(l.Mean) != s.C || len(l.Std) != s.C {
				return nil, fmt.Errorf("%s layer %d: normalize needs %d means and stds", a.Name, i, s.C)
			}
			for _, sd := range l.Std {
				if !(sd > 0) {
					return nil, fmt.Errorf("%s layer %d: normalize std must be positive", a.Name, i)
				}
			}
		default:
			return nil, fmt.Errorf("%s layer %d: unknown layer kind %q", a.Name, i, l.Kind)
		}
		shapes = append(shapes, s)
	}
	if s.Size() != a.Classes || s.H != 1 || s.W != 1 {
		return nil, fmt.Errorf("%s: last layer gives %dx%dx%d values, want %d logits", a.Name, s.C, s.H, s.W, a.Classes)
	}
	return shapes, nil
}

// Params returns the parameter tensors in flat-vector order (see LayerSpec).
func (a Arch) Params() ([]ParamShape, error) {
	shapes, err := a.Shapes()
	if err != nil {
		return nil, err
	}
	var ps []ParamShape
	off := 0
	add := func(layer int, name string, dims ...int) {
		n := 1
		for _, d := range dims {
			n *= d
		}
		ps = append(ps, ParamShape{Layer: layer, Name: name, Dims: dims, Offset: off, Size: n})
		off += n
	}
	for i, l := range a.Layers {
		in := shapes[i]
		switch l.Kind {
		case KindConv:
			add(i, fmt.Sprintf("conv%d.W", i), l.Out, in.C, l.KH, l.KW)
			add(i, fmt.Sprintf("conv%d.b", i), l.Out)
		case KindDense:
			add(i, fmt.Sprintf("dense%d.W", i), l.Out, in.Size())
			add(i, fmt.Sprintf("dense%d.b", i), l.Out)
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
