package models

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dpfil/dpfil/internal/registry"
)

// Layer is one layer kind, implemented in its own file (layer_<kind>.go) and
// registered by kind in an init function: what an architecture needs (shape
// inference, parameter tensors, initialisation, FLOPs, a description) and, through
// engine, its passes of the per-sample second-order engine in float32 and float64
// (forward, per-sample backward, the tangent forward and backward passes and, for a
// layer with parameters, the gradient tangents). The network code knows no kind by name: it asks the registry.
// The kind's Gorgonia nodes (the oracle and the Gorgonia builder) are registered by
// kind in models/oracle (node_<kind>.go), so that this package does not import
// Gorgonia.
//
// A Layer is stateless; everything a configured layer needs is in its LayerSpec and
// its input shape. The engine passes are unexported, so new kinds live in this package
// (docs/architecture.md shows what adding one takes).
type Layer interface {
	// Kind is the name used in LayerSpec.Kind and in architecture files.
	Kind() LayerKind
	// Doc is a one-line description of the kind and the LayerSpec fields it uses.
	Doc() string
	// Fields are the JSON names of the LayerSpec fields the kind uses (architecture
	// files may set only these).
	Fields() []string
	// OutShape checks spec against the per-sample input shape and returns the
	// output shape.
	OutShape(spec LayerSpec, in Shape) (Shape, error)
	// Params lists the layer's parameter tensors in their flat-vector order (nil
	// when it has none). Dims follow the layout documented at LayerSpec.
	Params(spec LayerSpec, in Shape) []ParamTensor
	// InitParam fills parameter tensor t (an index into Params) from rng.
	InitParam(spec LayerSpec, in Shape, t int, rng *rand.Rand, dst []float64)
	// OneHotScale reports whether the layer maps a one-hot input e_idx to a scaled
	// one-hot output s·e_idx (same index), and s. The FIL step propagates one-hot
	// input tangents sparsely through such layers up to the first parameter layer.
	OneHotScale(spec LayerSpec, in Shape, idx int) (s float64, ok bool)
	// Describe is a one-line description of the configured layer.
	Describe(spec LayerSpec) string
	// FLOPs is the GEMM arithmetic (a multiply-add counts 2) of one sample's
	// per-sample gradient and of one FIL tangent direction (see FLOPCount).
	FLOPs(spec LayerSpec, in, out Shape, f FLOPContext) (perSampleGrad, filDirection float64)
	// engine returns the layer's engine passes for a resolved layer.
	engine(r *resolved) engines
}

// noParams gives a layer kind without parameter tensors (and so without GEMM
// arithmetic) its Params, InitParam and FLOPs, embedded in the kind's type.
type noParams struct{}

func (noParams) Params(LayerSpec, Shape) []ParamTensor                         { return nil }
func (noParams) InitParam(LayerSpec, Shape, int, *rand.Rand, []float64)        {}
func (noParams) FLOPs(LayerSpec, Shape, Shape, FLOPContext) (float64, float64) { return 0, 0 }

// ParamTensor is one parameter tensor of a layer: its name suffix ("W", "b") and
// dimensions.
type ParamTensor struct {
	Name string
	Dims []int
}

// FLOPContext is where a layer sits in the network, for its FLOP count.
type FLOPContext struct {
	// ParamsBelow is true when a layer before it has parameters (the backward pass
	// then forms the layer's input gradient).
	ParamsBelow bool
	// SparseFirst is true when the layer is the first parameter layer and the FIL
	// step's one-hot input tangents reach it sparsely (crossing it is a scatter).
	SparseFirst bool
}

// layers are the registered layer kinds.
var layers = registry.New[LayerKind, Layer]("models: layer kind")

// registerLayer adds a layer kind to the registry (from the kind's init function).
func registerLayer(l Layer) { layers.Register(l.Kind(), l) }

// LayerOf returns the implementation of a layer kind.
func LayerOf(kind LayerKind) (Layer, error) {
	l, ok := layers.Lookup(kind)
	if !ok {
		return nil, fmt.Errorf("unknown layer kind %q (known: %v)", kind, LayerKinds())
	}
	return l, nil
}

// LayerKinds lists the registered layer kinds, sorted.
func LayerKinds() []LayerKind { return layers.Kinds() }

// tensorRange is one parameter tensor's place in the flat parameter vector.
type tensorRange struct{ off, size int }

// resolved is one layer of a network once its input shape is known: what the
// network's bookkeeping (buffers, chunk sizes, parameter blocks) needs to know
// about it, whatever its kind.
type resolved struct {
	kind      Layer
	spec      LayerSpec
	in, out   Shape
	inN, outN int           // per-sample sizes
	params    []tensorRange // the layer's parameter tensors, in flat order
	// Workspace needs, per sample or tangent row, set by the kind's engine:
	// view: the output is the input's buffer (no values change, e.g. flatten);
	// cols: values of the layer's patch matrix (im2col), kept from the forward pass
	// for the weight gradients; scratch: values of its output-layout scratch.
	view    bool
	cols    int
	scratch int
	// colsPad and scratchPad: values a buffer of several rows' patch matrices (or
	// output-layout scratch) needs beyond rows·cols (rows·scratch) for a padded
	// row stride (colLD).
	colsPad, scratchPad int
}

func (r *resolved) hasParams() bool { return len(r.params) > 0 }

// oneHot reports whether the layer maps one-hot inputs to scaled one-hot outputs.
func (r *resolved) oneHot() bool {
	_, ok := r.kind.OneHotScale(r.spec, r.in, 0)
	return ok
}

// engines holds a layer's passes in both precisions.
type engines struct {
	f32 engineLayer[float32]
	f64 engineLayer[float64]
}

// engineLayer is a layer's part of the engine's passes over a chunk of cs samples
// (and, in tangent passes, kc directions per sample: rows s·kc+j) of the workspace
// ws, layer i reading ws.acts[i] and writing ws.acts[i+1] and so on.
type engineLayer[T Float] interface {
	// forward computes the layer's outputs of cs samples.
	forward(n *Network[T], ws *workspace[T], i int, params []T, cs int)
	// backward writes the per-sample parameter gradients to ws.grads (sample s at
	// s·P) and adds their squared norms to ws.gsq; when needIn it writes the
	// gradient w.r.t. the layer input to ws.dlt[i]. dev selects the batched device
	// form of the weight gradients.
	backward(n *Network[T], ws *workspace[T], i int, params []T, cs int, needIn, dev bool)
	// tangentForward propagates the input tangents ws.tacts[i] (and parameter
	// tangents tp, cs·kc rows of P values, when not nil) to ws.tacts[i+1].
	tangentForward(n *Network[T], ws *workspace[T], i int, params []T, cs, kc int, tp []T)
	// tangentBackward propagates the tangent of the output gradient ws.tdlt[i+1] to
	// the input's, ws.tdlt[i].
	tangentBackward(n *Network[T], ws *workspace[T], i int, params []T, cs, kc int, tp []T)
}

// paramEngineLayer is an engineLayer with parameters: the FIL step's sparse first
// layer and the gradient tangents.
type paramEngineLayer[T Float] interface {
	engineLayer[T]
	// sparseForward writes the tangent outputs of rows one-hot input tangents
	// ws.spVal[r]·e_{ws.spIdx[r]} (index < 0: a zero row) to ws.tacts[i+1].
	sparseForward(n *Network[T], ws *workspace[T], i int, params []T, rows int)
	// gradTangents writes the kc gradient tangents of chunk sample s (of cs) of the
	// layer's parameters to ws.tg in the blocked layout (see gradTangentAt); first
	// says the layer's input tangents are the one-hot rows of ws.spIdx/spVal.
	gradTangents(n *Network[T], ws *workspace[T], i, s, cs, kc int, first bool)
	// filDotSqAll adds the layer's terms of every sample's kc gradient tangents to
	// the chunk's FIL reduction (Network.filDotSqAll) with batched device calls
	// (TangentBatcher); first says the layer's input tangents are the one-hot rows
	// of ws.spIdx/spVal, start that the reduction begins with this layer.
	filDotSqAll(n *Network[T], ws *workspace[T], i, cs, kc int, first, start bool)
}

// pickEngine returns the engine passes of precision T.
func pickEngine[T Float](e engines) (engineLayer[T], error) {
	var z T
	switch any(z).(type) {
	case float32:
		return any(e.f32).(engineLayer[T]), nil
	case float64:
		return any(e.f64).(engineLayer[T]), nil
	}
	return nil, fmt.Errorf("element type %T is not float32 or float64", z)
}

// gemmLayerFLOPs is the FLOP count of a layer whose passes are GEMMs of mac
// multiply-adds each (conv: Out·CKK·HWo, dense: Out·In): forward, weight gradient
// and, with parameters below, input gradient; per FIL direction the tangent forward
// (a scatter, counted 0, for the sparse first layer), tangent backward (with
// parameters below) and the two gradient-tangent terms (the second a scatter for
// the sparse first layer).
func gemmLayerFLOPs(mac float64, f FLOPContext) (grad, dir float64) {
	below := 0.0
	if f.ParamsBelow {
		below = 1
	}
	dense := 1.0
	if f.SparseFirst {
		dense = 0
	}
	return 2 * mac * (2 + below), 2 * mac * (dense + below + 1 + dense)
}

// initGlorot fills dst with the stax default weight init: Glorot normal =
// variance_scaling(1, "fan_avg", "truncated_normal"), t·√(2/(fan_in+fan_out))/0.8796…
// with t a standard normal truncated to [−2, 2] (drawn by rejection).
func initGlorot(dst []float64, fanIn, fanOut int, rng *rand.Rand) {
	sd := math.Sqrt(2/float64(fanIn+fanOut)) / truncNormalStd
	for i := range dst {
		t := rng.NormFloat64()
		for t < -2 || t > 2 {
			t = rng.NormFloat64()
		}
		dst[i] = sd * t
	}
}

// initNormal fills dst with N(0, sd²) draws.
func initNormal(dst []float64, sd float64, rng *rand.Rand) {
	for i := range dst {
		dst[i] = sd * rng.NormFloat64()
	}
}

// positive returns an error naming the fields of a layer that must be positive.
func positive(kind LayerKind, what string, vals ...int) error {
	for _, v := range vals {
		if v <= 0 {
			return fmt.Errorf("%s needs positive %s", kind, what)
		}
	}
	return nil
}
