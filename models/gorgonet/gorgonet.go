// Package gorgonet defines networks in Gorgonia for dpfil's per-sample engine.
//
// A Builder grows two things at once, one layer per call: a real Gorgonia
// expression graph (*gorgonia.ExprGraph, batch 1: Gorgonia's per-sample route) and the
// engine's layer list (models.Arch). Each layer's Gorgonia nodes come from the layer
// kind's registered nodes in models/oracle (node_<kind>.go, the code the oracle
// uses), which hides
// Gorgonia v0.9.18's defects: average pooling is a depthwise convolution with a
// fixed 1/(kh·kw) kernel (AveragePool2D divides by the input width), asymmetric
// (SAME) padding is explicit zero concatenation (Conv2d pads only symmetrically),
// constants are named (Gorgonia merges same-looking constants), and second-order
// derivatives never come from Gorgonia (its Grad of Grad is wrong).
//
// Build adds softmax cross-entropy, differentiates it, and checks at construction,
// in float64 on random points, that the engine's per-sample gradients and losses
// equal Gorgonia's own from the graph; the engine model it returns then gives the
// per-sample clipped gradients and the FIL (second-order) quantities Gorgonia cannot.
//
// FromGraph is the other route, for graphs built outside the Builder with ops the
// engine lacks (sigmoid, softplus, residual adds, …): a one-sample graph with its
// input, one-hot label, logits, scalar loss and parameter nodes becomes a GraphModel
// that trains privately (DP-SGD, clipped as the engine clips, with the usual RDP/PLD
// ε) and accounts FIL. Its per-sample gradients and the second-order derivatives
// FIL needs come from gorgonet's own forward-over-reverse rules for each op of the
// graph (fwdrev.go, fwdrev_rules.go; the table is in docs/architecture.md), not
// from Gorgonia's Grad, whose Grad of a Grad is wrong. A graph with an op without a
// rule still trains first-order through Gorgonia's tape; its FIL fails with
// ErrNoSecondOrder, naming the op.
//
// ParamTensors, DatasetTensor and DatasetFromTensor view the engine's flat parameter
// vectors and data.Dataset images as gorgonia.org/tensor values. They live here, not
// in models or data, so that the engine and the trainer do not link Gorgonia.
package gorgonet

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	G "gorgonia.org/gorgonia"

	"github.com/dpfil/dpfil/models"
	"github.com/dpfil/dpfil/models/oracle"
)

// Padding of a convolution: Same (TensorFlow/JAX "SAME": output ceil(in/stride),
// extra padding at the bottom/right), Valid (none), Pad(p) (p on every side) or
// PadTBLR(top, bottom, left, right).
type Padding struct {
	same       bool
	t, b, l, r int
}

// Paddings.
var (
	Same  = Padding{same: true}
	Valid = Padding{}
)

// Pad is symmetric padding p on every side.
func Pad(p int) Padding { return Padding{t: p, b: p, l: p, r: p} }

// PadTBLR is explicit (possibly asymmetric) padding.
func PadTBLR(top, bottom, left, right int) Padding {
	return Padding{t: top, b: bottom, l: left, r: right}
}

// Builder defines a network layer by layer in Gorgonia and in the engine. Its
// methods take the previous layer's output node (Input for the first) and return
// the new layer's output; the first error is kept, later calls return nil, and
// Build or Err reports it. A Builder is not safe for concurrent use.
type Builder struct {
	gr  *oracle.Graph
	err error
}

// New starts a network with per-sample input shape in (C, H, W) and classes outputs.
func New(name string, in models.Shape, classes int) *Builder {
	gr, err := oracle.NewGraph(name, in, classes, 1)
	if err != nil {
		return &Builder{err: fmt.Errorf("gorgonet: %w", err)}
	}
	return &Builder{gr: gr}
}

// Err is the first error of the builder's calls, if any.
func (b *Builder) Err() error { return b.err }

// Graph is the Gorgonia expression graph being built (nil after an error in New).
func (b *Builder) Graph() *G.ExprGraph {
	if b.gr == nil {
		return nil
	}
	return b.gr.ExprGraph()
}

// Input is the input node, shape (1, C, H, W).
func (b *Builder) Input() *G.Node {
	if b.gr == nil {
		return nil
	}
	return b.gr.Input()
}

// Arch is the engine architecture of the layers added so far.
func (b *Builder) Arch() models.Arch {
	if b.gr == nil {
		return models.Arch{}
	}
	return b.gr.Arch()
}

// Layer adds a layer of any registered kind (models.LayerKinds) given as a spec.
func (b *Builder) Layer(h *G.Node, spec models.LayerSpec) *G.Node {
	if b.err != nil {
		return nil
	}
	out, err := b.gr.Append(spec, h)
	if err != nil {
		b.err = fmt.Errorf("gorgonet: %w", err)
		return nil
	}
	return out
}

// Conv adds a convolution with bias: out filters of kernel×kernel, stride, padding.
func (b *Builder) Conv(h *G.Node, out, kernel, stride int, pad Padding) *G.Node {
	return b.ConvRect(h, out, kernel, kernel, stride, pad)
}

// ConvRect adds a convolution with a kh×kw kernel.
func (b *Builder) ConvRect(h *G.Node, out, kh, kw, stride int, pad Padding) *G.Node {
	if b.err != nil {
		return nil
	}
	spec := models.LayerSpec{Kind: models.KindConv, Out: out, KH: kh, KW: kw, Stride: stride,
		PadT: pad.t, PadB: pad.b, PadL: pad.l, PadR: pad.r}
	if pad.same {
		if stride <= 0 || kh <= 0 || kw <= 0 {
			b.err = fmt.Errorf("gorgonet: conv layer %d: kernel and stride must be positive", len(b.gr.Arch().Layers))
			return nil
		}
		s := b.gr.OutShape()
		spec.PadT, spec.PadB = samePad(s.H, kh, stride)
		spec.PadL, spec.PadR = samePad(s.W, kw, stride)
	}
	return b.Layer(h, spec)
}

func samePad(n, k, stride int) (lo, hi int) {
	out := (n + stride - 1) / stride
	total := max((out-1)*stride+k-n, 0)
	return total / 2, total - total/2
}

// AvgPool adds VALID average pooling over a kernel×kernel window.
func (b *Builder) AvgPool(h *G.Node, kernel, stride int) *G.Node {
	return b.Layer(h, models.AvgPool(kernel, stride))
}

// Dense adds a fully connected layer with bias (on a flattened input).
func (b *Builder) Dense(h *G.Node, out int) *G.Node { return b.Layer(h, models.Dense(out)) }

// Flatten reshapes (1, C, H, W) to (1, C·H·W).
func (b *Builder) Flatten(h *G.Node) *G.Node {
	return b.Layer(h, models.LayerSpec{Kind: models.KindFlatten})
}

// Tanh adds an elementwise tanh.
func (b *Builder) Tanh(h *G.Node) *G.Node { return b.Layer(h, models.LayerSpec{Kind: models.KindTanh}) }

// ELU adds an elementwise ELU (α = 1).
func (b *Builder) ELU(h *G.Node) *G.Node { return b.Layer(h, models.LayerSpec{Kind: models.KindELU}) }

// ReLU adds an elementwise max(x, 0).
func (b *Builder) ReLU(h *G.Node) *G.Node { return b.Layer(h, models.LayerSpec{Kind: models.KindReLU}) }

// Normalize adds the fixed per-channel (x − mean[c])/std[c].
func (b *Builder) Normalize(h *G.Node, mean, std []float64) *G.Node {
	return b.Layer(h, models.LayerSpec{Kind: models.KindNormalize,
		Mean: append([]float64(nil), mean...), Std: append([]float64(nil), std...)})
}

// Options of Build's construction check.
type Options struct {
	Samples int     // random points checked (default 4)
	Seed    uint64  // of the random parameters, inputs and labels (default 1)
	Tol     float64 // largest relative error accepted (default 1e-9)
}

// Check is the outcome of the construction check: the engine's float64 per-sample
// gradients and losses against Gorgonia's own from the graph, on Samples random
// points (relative errors ‖engine − gorgonia‖/‖gorgonia‖, the worst sample).
type Check struct {
	Samples      int     `json:"samples"`
	GradRelErr   float64 `json:"grad_rel_err"`
	LossRelErr   float64 `json:"loss_rel_err"`
	LogitsRelErr float64 `json:"logits_rel_err"`
	Tol          float64 `json:"tol"`
}

// ErrMismatch is returned (wrapped) by Build when the engine and Gorgonia disagree.
var ErrMismatch = errors.New("engine and Gorgonia per-sample gradients differ")

// Net is a network defined in Gorgonia: its engine architecture, its Gorgonia
// graph (batch 1, with the loss and its gradients) and the construction check.
type Net struct {
	Arch  models.Arch
	Graph *oracle.Graph
	Check Check
}

// Build finishes the network: logits must be the last layer's output, with as many
// values as classes. It adds the loss and its gradients to the graph and checks
// the engine against Gorgonia (see Check); a disagreement is an error wrapping
// ErrMismatch.
func (b *Builder) Build(logits *G.Node, opt ...Options) (*Net, error) {
	if b.err != nil {
		return nil, b.err
	}
	o := Options{}
	if len(opt) > 0 {
		o = opt[0]
	}
	if o.Samples <= 0 {
		o.Samples = 4
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if !(o.Tol > 0) {
		o.Tol = 1e-9
	}
	if err := b.gr.Finish(logits); err != nil {
		b.err = fmt.Errorf("gorgonet: %w", err)
		return nil, b.err
	}
	n := &Net{Arch: b.gr.Arch(), Graph: b.gr}
	b.err = errors.New("gorgonet: the builder is finished")
	c, err := check(n.Arch, b.gr, o)
	n.Check = c
	if err != nil {
		return nil, fmt.Errorf("gorgonet: %s: %w", n.Arch.Name, err)
	}
	return n, nil
}

// check compares the engine with the graph on random points.
func check(arch models.Arch, gr *oracle.Graph, o Options) (Check, error) {
	c := Check{Samples: o.Samples, Tol: o.Tol}
	net, err := models.NewNetwork(arch, models.NewCPUBackend[float64]())
	if err != nil {
		return c, err
	}
	params, x, y := RandomPoint(arch, o.Samples, o.Seed)
	eg, el, err := net.PerSampleGrads(params, x, y, o.Samples)
	if err != nil {
		return c, fmt.Errorf("engine: %w", err)
	}
	gg, gl, err := gr.PerSampleGrads(params, x, y, o.Samples)
	if err != nil {
		return c, fmt.Errorf("gorgonia: %w", err)
	}
	P, D := net.NumParams(), net.InputDim()
	for s := 0; s < o.Samples; s++ {
		c.GradRelErr = max(c.GradRelErr, relErr(eg[s*P:(s+1)*P], gg[s*P:(s+1)*P]))
		c.LossRelErr = max(c.LossRelErr, relErr(el[s:s+1], gl[s:s+1]))
		ez, err := net.Forward(params, x[s*D:(s+1)*D], 1)
		if err != nil {
			return c, fmt.Errorf("engine: %w", err)
		}
		gz, err := gr.Forward(params, x[s*D:(s+1)*D], 1)
		if err != nil {
			return c, fmt.Errorf("gorgonia: %w", err)
		}
		c.LogitsRelErr = max(c.LogitsRelErr, relErr(ez, gz))
	}
	for _, e := range []struct {
		what string
		v    float64
	}{{"per-sample gradients", c.GradRelErr}, {"losses", c.LossRelErr}, {"logits", c.LogitsRelErr}} {
		if !(e.v <= o.Tol) {
			return c, fmt.Errorf("%w: %s relative error %.3g > %.3g", ErrMismatch, e.what, e.v, o.Tol)
		}
	}
	return c, nil
}

// RandomPoint draws a float64 check point for arch: the default initialisation with
// every parameter perturbed by N(0, 0.1²) (so that biases matter), n inputs uniform
// in [0,1] and n uniform labels.
func RandomPoint(arch models.Arch, n int, seed uint64) (params, x []float64, y []int) {
	rng := rand.New(rand.NewPCG(seed, 0x676f72))
	params = models.InitParams(arch, seed)
	for i := range params {
		params[i] += 0.1 * rng.NormFloat64()
	}
	x = make([]float64, n*arch.InputDim())
	for i := range x {
		x[i] = rng.Float64()
	}
	y = make([]int, n)
	for i := range y {
		y[i] = rng.IntN(arch.Classes)
	}
	return params, x, y
}

// relErr is ‖a − b‖/‖b‖ (‖a − b‖ when b = 0).
func relErr(a, b []float64) float64 {
	var num, den float64
	for i := range b {
		d := a[i] - b[i]
		num += d * d
		den += b[i] * b[i]
	}
	if den == 0 {
		return math.Sqrt(num)
	}
	return math.Sqrt(num / den)
}

// Model is the network as a float32 engine model on the CPU (per-sample clipped
// gradients and FIL for train.Run, or any models.Model consumer).
func (n *Net) Model() (models.Model, error) { return models.NewCPUModel(n.Arch) }

// Network64 is the network as a float64 engine network (exact checks).
func (n *Net) Network64() (*models.Network[float64], error) {
	return models.NewNetwork(n.Arch, models.NewCPUBackend[float64]())
}

// Spec is the network as an architecture spec (train.Config.WithArch; the file
// form of train --arch).
func (n *Net) Spec() *models.ArchSpec { return models.SpecOf(n.Arch) }
