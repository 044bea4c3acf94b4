// Package oracle builds every models.Arch as a Gorgonia v0.9.18 expression graph in
// float64. It is an independent implementation of the networks used to check the
// hand-written per-sample engine of package models (forward logits, batch gradients,
// per-sample gradients) and to time Gorgonia's fastest honest per-sample route against
// it.
//
// Conventions: inputs are flat NCHW batches (row-major), parameters one flat vector in
// the layout documented in models/arch.go (conv W [Out][InC][KH][KW] then b, dense W
// [Out][In] then b). The loss of a sample is softmax cross-entropy with an integer
// label, computed from primitives as logsumexp(z) − z[y] with the max subtracted; the
// batch loss is the SUM (not the mean) of the per-sample losses, so the batch gradient
// equals the sum of the per-sample gradients.
//
// Each layer kind adds its own nodes (a NodeFunc registered by kind in the kind's file
// node_<kind>.go; the engine side is models/layer_<kind>.go), working around these Gorgonia v0.9.18 defects (pinned by the tests in
// gorgonia_defects_test.go):
//   - AveragePool2D divides by the input width instead of the kernel area, and its
//     stride-2 backward puts the whole gradient in the top-left corner: average
//     pooling is a depthwise Conv2d with a fixed, named, non-differentiated kernel of
//     1/(kh·kw), channels folded into the batch axis by Reshape.
//   - A graph identifies a constant tensor by a hash of its printed value, which is
//     truncated for long vectors, so distinct constants can be merged silently, names
//     notwithstanding (and same-named constants are merged too). Every constant is
//     named and uniform (zeros, 1/(kh·kw)), so a merge is harmless; the non-uniform
//     Normalize mean and std are bound to named input nodes that are never
//     differentiated.
//   - Conv2d only pads symmetrically: every padding (e.g. SAME with PadT≠PadB) is
//     applied by concatenating named zero constants, followed by a VALID convolution.
//   - Constants must be added to the graph (AddNode) before broadcasting ops, or
//     building fails with "No Graph Supplied".
//   - Grad of a Grad (second-order derivatives) returns silently wrong values: the
//     oracle checks first-order and per-sample gradients only.
//   - There is no softmax cross-entropy with integer labels: it is built from Max,
//     Exp, Sum, Log and a one-hot label input.
//   - Gorgonia panics on some errors: building and running recover panics into errors.
package oracle

import (
	"errors"
	"fmt"
	"math"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/dpfil/dpfil/models"
)

// Graph is one architecture built as a Gorgonia graph for a fixed batch size, with the
// symbolic gradient of the summed loss w.r.t. every parameter tensor. A Graph is not
// safe for concurrent use.
type Graph struct {
	arch    models.Arch
	batch   int
	nparams int
	pshapes []models.ParamShape
	shapes  []models.Shape // per-sample shape of the input and of every layer's output
	last    *G.Node        // the last layer's output (the input node before any layer)

	g      *G.ExprGraph
	x      *G.Node   // (B, C, H, W)
	y      *G.Node   // (B, K) one-hot labels
	params []*G.Node // one per ParamShape, same order
	grads  G.Nodes   // d loss / d params[i]
	logits *G.Node   // (B, K)
	losses *G.Node   // (B) per-sample losses
	loss   *G.Node   // scalar: sum of losses

	xT      *tensor.Dense
	yT      *tensor.Dense
	paramsT []*tensor.Dense
	// transT[i] is true when params[i] holds the transpose of the flat layout's
	// matrix (dense W is stored as (In, Out) so that the graph multiplies h·Wᵀ
	// without a Transpose op); rows×cols is the flat layout's shape.
	transT     []bool
	rows, cols []int
	vm         G.VM
}

// Build returns the Gorgonia graph of arch for batches of exactly batch samples.
func Build(arch models.Arch, batch int) (*Graph, error) {
	if _, err := arch.Shapes(); err != nil {
		return nil, fmt.Errorf("oracle: %w", err)
	}
	gr, err := NewGraph(arch.Name, arch.Input, arch.Classes, batch)
	if err != nil {
		return nil, err
	}
	h := gr.Input() // current activation, (B, C, H, W) or (B, F) after flatten
	for _, l := range arch.Layers {
		if h, err = gr.Append(l, h); err != nil {
			return nil, err
		}
	}
	if err := gr.Finish(h); err != nil {
		return nil, err
	}
	return gr, nil
}

// NewGraph starts the graph of a network with per-sample input shape in and classes
// outputs, for batches of exactly batch samples: the input node (batch, C, H, W) and
// the one-hot label node. Append adds layers, Finish the loss and its gradients.
func NewGraph(name string, in models.Shape, classes, batch int) (gr *Graph, err error) {
	if batch <= 0 {
		return nil, fmt.Errorf("oracle: batch must be positive, got %d", batch)
	}
	if in.C <= 0 || in.H <= 0 || in.W <= 0 || classes <= 0 {
		return nil, fmt.Errorf("oracle: %s: input %dx%dx%d and %d classes must be positive", name, in.C, in.H, in.W, classes)
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("oracle: %s: gorgonia panicked: %v", name, r)
		}
	}()
	gr = &Graph{arch: models.Arch{Name: name, Input: in, Classes: classes}, batch: batch, shapes: []models.Shape{in}}
	g := G.NewGraph()
	gr.g = g
	B := batch
	gr.xT = tensor.New(tensor.WithShape(B, in.C, in.H, in.W), tensor.Of(tensor.Float64))
	gr.x = G.NewTensor(g, G.Float64, 4, G.WithShape(B, in.C, in.H, in.W), G.WithName("x"), G.WithValue(gr.xT))
	gr.yT = tensor.New(tensor.WithShape(B, classes), tensor.Of(tensor.Float64))
	gr.y = G.NewMatrix(g, G.Float64, G.WithShape(B, classes), G.WithName("y_onehot"), G.WithValue(gr.yT))
	gr.last = gr.x
	return gr, nil
}

// Append adds one layer to the graph: h must be the output of the previous layer
// (the input node for the first). It returns the layer's output node.
func (gr *Graph) Append(l models.LayerSpec, h *G.Node) (out *G.Node, err error) {
	i := len(gr.arch.Layers)
	switch {
	case gr.vm != nil:
		return nil, fmt.Errorf("oracle: %s layer %d: the graph is finished", gr.arch.Name, i)
	case h == nil || h != gr.last:
		return nil, fmt.Errorf("oracle: %s layer %d: the input must be the previous layer's output node", gr.arch.Name, i)
	}
	kind, err := models.LayerOf(l.Kind)
	if err != nil {
		return nil, fmt.Errorf("oracle: %s layer %d: %w", gr.arch.Name, i, err)
	}
	node, err := NodeOf(l.Kind)
	if err != nil {
		return nil, fmt.Errorf("oracle: %s layer %d: %w", gr.arch.Name, i, err)
	}
	in := gr.shapes[i]
	outShape, err := kind.OutShape(l, in)
	if err != nil {
		return nil, fmt.Errorf("oracle: %s layer %d: %w", gr.arch.Name, i, err)
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("oracle: %s layer %d %s: gorgonia panicked: %v", gr.arch.Name, i, l.Kind, r)
		}
	}()
	tensors := kind.Params(l, in)
	ti := 0
	param := func(transposed bool, nodeShape ...int) *G.Node {
		pt := tensors[ti]
		size := 1
		for _, d := range pt.Dims {
			size *= d
		}
		gr.pshapes = append(gr.pshapes, models.ParamShape{Layer: i, Tensor: ti, Name: fmt.Sprintf("%s%d.%s", l.Kind, i, pt.Name),
			Dims: pt.Dims, Offset: gr.nparams, Size: size})
		gr.nparams += size
		ti++
		t := tensor.New(tensor.WithShape(nodeShape...), tensor.Of(tensor.Float64))
		gr.paramsT = append(gr.paramsT, t)
		gr.transT = append(gr.transT, transposed)
		if transposed {
			gr.rows, gr.cols = append(gr.rows, nodeShape[1]), append(gr.cols, nodeShape[0])
		} else {
			gr.rows, gr.cols = append(gr.rows, 0), append(gr.cols, 0)
		}
		n := G.NewTensor(gr.g, G.Float64, len(nodeShape), G.WithShape(nodeShape...), G.WithName(gr.pshapes[len(gr.pshapes)-1].Name), G.WithValue(t))
		gr.params = append(gr.params, n)
		return n
	}
	c := &Layer{Graph: gr.g, Batch: gr.batch, Index: i, Spec: l, In: in, Out: outShape, Param: param}
	if out, err = node(c, h); err != nil {
		return nil, fmt.Errorf("oracle: %s layer %d %s: %w", gr.arch.Name, i, l.Kind, err)
	}
	if ti != len(tensors) {
		return nil, fmt.Errorf("oracle: %s layer %d %s: made %d parameter nodes, want %d", gr.arch.Name, i, l.Kind, ti, len(tensors))
	}
	if want := outShape.Size() * gr.batch; out.Shape().TotalSize() != want {
		return nil, fmt.Errorf("oracle: %s layer %d %s: node shape %v, want %d values", gr.arch.Name, i, l.Kind, out.Shape(), want)
	}
	gr.arch.Layers = append(gr.arch.Layers, l)
	gr.shapes = append(gr.shapes, outShape)
	gr.last = out
	return out, nil
}

// Finish adds the per-sample losses, their sum and its gradient w.r.t. every
// parameter node, and compiles the graph. logits must be the last layer's output.
func (gr *Graph) Finish(logits *G.Node) (err error) {
	if gr.vm != nil {
		return fmt.Errorf("oracle: %s: the graph is finished", gr.arch.Name)
	}
	if logits == nil || logits != gr.last {
		return fmt.Errorf("oracle: %s: the logits must be the last layer's output node", gr.arch.Name)
	}
	if _, err := gr.arch.Shapes(); err != nil {
		return fmt.Errorf("oracle: %w", err)
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("oracle: building %s: gorgonia panicked: %v", gr.arch.Name, r)
		}
	}()
	B, h := gr.batch, logits
	if h.Dims() != 2 {
		if h, err = G.Reshape(h, tensor.Shape{B, gr.arch.Classes}); err != nil {
			return fmt.Errorf("oracle: building %s: logits: %w", gr.arch.Name, err)
		}
	}
	gr.logits = h
	if gr.losses, err = crossEntropy(h, gr.y, B); err != nil {
		return fmt.Errorf("oracle: building %s: loss: %w", gr.arch.Name, err)
	}
	if gr.loss, err = G.Sum(gr.losses); err != nil {
		return fmt.Errorf("oracle: building %s: loss sum: %w", gr.arch.Name, err)
	}
	if len(gr.params) > 0 {
		if gr.grads, err = G.Grad(gr.loss, gr.params...); err != nil {
			return fmt.Errorf("oracle: building %s: gradient: %w", gr.arch.Name, err)
		}
	}
	gr.vm = G.NewTapeMachine(gr.g)
	return nil
}

// Arch returns the architecture of the graph (the layers appended so far).
func (gr *Graph) Arch() models.Arch { return gr.arch }

// Batch returns the batch size the graph was built for.
func (gr *Graph) Batch() int { return gr.batch }

// NumParams is the length of the flat parameter vector.
func (gr *Graph) NumParams() int { return gr.nparams }

// OutShape is the per-sample shape of the last layer's output (the input shape
// before any layer).
func (gr *Graph) OutShape() models.Shape { return gr.shapes[len(gr.shapes)-1] }

// ExprGraph is the Gorgonia expression graph.
func (gr *Graph) ExprGraph() *G.ExprGraph { return gr.g }

// Input is the input node (batch, C, H, W); its value is bound by the graph's runs.
func (gr *Graph) Input() *G.Node { return gr.x }

// Labels is the one-hot label node (batch, classes).
func (gr *Graph) Labels() *G.Node { return gr.y }

// Logits is the (batch, classes) logits node (nil before Finish).
func (gr *Graph) Logits() *G.Node { return gr.logits }

// Loss is the summed loss node (nil before Finish).
func (gr *Graph) Loss() *G.Node { return gr.loss }

// ParamNodes are the parameter nodes in flat-vector order (a dense layer's W node
// holds Wᵀ, see Layer.Param), and Gradients their gradient nodes.
func (gr *Graph) ParamNodes() []*G.Node { return gr.params }

// Gradients are the gradient nodes of the summed loss w.r.t. ParamNodes.
func (gr *Graph) Gradients() G.Nodes { return gr.grads }

// crossEntropy returns the per-sample losses logsumexp(z_i) − ⟨z_i, y_i⟩ of logits z
// (B, K) and one-hot labels y (B, K), with the row max subtracted inside the exp.
func crossEntropy(z, y *G.Node, B int) (*G.Node, error) {
	m, err := G.Max(z, 1) // (B)
	if err != nil {
		return nil, err
	}
	m2, err := G.Reshape(m, tensor.Shape{B, 1})
	if err != nil {
		return nil, err
	}
	shifted, err := G.BroadcastSub(z, m2, nil, []byte{1})
	if err != nil {
		return nil, err
	}
	e, err := G.Exp(shifted)
	if err != nil {
		return nil, err
	}
	se, err := G.Sum(e, 1)
	if err != nil {
		return nil, err
	}
	lse, err := G.Log(se)
	if err != nil {
		return nil, err
	}
	if lse, err = G.Add(lse, m); err != nil {
		return nil, err
	}
	zy, err := G.HadamardProd(z, y)
	if err != nil {
		return nil, err
	}
	picked, err := G.Sum(zy, 1)
	if err != nil {
		return nil, err
	}
	return G.Sub(lse, picked)
}

// set copies params, x and the one-hot of y (nil: all-zero labels) into the values
// bound to the graph's input nodes.
func (gr *Graph) set(params, x []float64, y []int) error {
	if err := gr.checkParams(params); err != nil {
		return err
	}
	gr.setParams(params)
	return gr.setData(x, y)
}

func (gr *Graph) checkParams(params []float64) error {
	if len(params) != gr.nparams {
		return fmt.Errorf("oracle: %s has %d parameters, got %d", gr.arch.Name, gr.nparams, len(params))
	}
	return checkFinite("params", params)
}

// setData copies x and the one-hot of y (nil: all-zero labels) into the values bound
// to the input and label nodes.
func (gr *Graph) setData(x []float64, y []int) error {
	d := gr.arch.InputDim()
	if len(x) != gr.batch*d {
		return fmt.Errorf("oracle: x has %d values, want batch %d × %d", len(x), gr.batch, d)
	}
	if err := checkFinite("x", x); err != nil {
		return err
	}
	if y != nil && len(y) != gr.batch {
		return fmt.Errorf("oracle: %d labels for batch %d", len(y), gr.batch)
	}
	copy(gr.xT.Data().([]float64), x)
	yv := gr.yT.Data().([]float64)
	clear(yv)
	K := gr.arch.Classes
	for i, c := range y {
		if c < 0 || c >= K {
			return fmt.Errorf("oracle: label %d of sample %d not in [0, %d)", c, i, K)
		}
		yv[i*K+c] = 1
	}
	return nil
}

// setParams copies params into the parameter nodes' values (transposing dense W).
func (gr *Graph) setParams(params []float64) {
	for i, ps := range gr.pshapes {
		dst, src := gr.paramsT[i].Data().([]float64), params[ps.Offset:ps.Offset+ps.Size]
		if !gr.transT[i] {
			copy(dst, src)
			continue
		}
		transpose(dst, src, gr.rows[i], gr.cols[i])
	}
}

// transpose writes the c×r transpose of the r×c row-major matrix src to dst.
func transpose(dst, src []float64, r, c int) {
	for o := 0; o < r; o++ {
		for j := 0; j < c; j++ {
			dst[j*r+o] = src[o*c+j]
		}
	}
}

func checkFinite(what string, v []float64) error {
	for i, f := range v {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("oracle: %s[%d] = %v is not finite", what, i, f)
		}
	}
	return nil
}

// run executes the tape once, turning Gorgonia panics into errors.
func (gr *Graph) run() (err error) {
	if gr.vm == nil {
		return fmt.Errorf("oracle: %s: the graph is not finished (call Finish)", gr.arch.Name)
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("oracle: gorgonia panicked: %v", r)
		}
		gr.vm.Reset()
	}()
	if err := gr.vm.RunAll(); err != nil {
		return fmt.Errorf("oracle: running %s graph: %w", gr.arch.Name, err)
	}
	return nil
}

func values(n *G.Node) ([]float64, error) {
	v := n.Value()
	if v == nil {
		return nil, fmt.Errorf("oracle: node %s has no value", n.Name())
	}
	t, ok := v.(tensor.Tensor)
	if !ok {
		if f, ok := v.Data().(float64); ok {
			return []float64{f}, nil
		}
		return nil, fmt.Errorf("oracle: node %s holds %T, not a tensor", n.Name(), v)
	}
	d, ok := t.Data().([]float64)
	if !ok {
		if f, ok := t.Data().(float64); ok {
			return []float64{f}, nil
		}
		return nil, fmt.Errorf("oracle: node %s holds %T data, not []float64", n.Name(), t.Data())
	}
	return d, nil
}

// Forward returns the batch×Classes logits of x. batch must be the graph's batch size.
func (gr *Graph) Forward(params, x []float64, batch int) ([]float64, error) {
	if batch != gr.batch {
		return nil, fmt.Errorf("oracle: graph built for batch %d, got %d", gr.batch, batch)
	}
	if err := gr.set(params, x, nil); err != nil {
		return nil, err
	}
	if err := gr.run(); err != nil {
		return nil, err
	}
	v, err := values(gr.logits)
	if err != nil {
		return nil, err
	}
	return append([]float64(nil), v...), nil
}

// BatchGrad returns the gradient of the SUMMED loss Σ_i ℓ(x_i, y_i) over the batch
// w.r.t. the flat parameter vector, and that summed loss.
func (gr *Graph) BatchGrad(params, x []float64, y []int) (grad []float64, loss float64, err error) {
	grad = make([]float64, gr.nparams)
	losses := make([]float64, gr.batch)
	if err := gr.gradInto(params, x, y, grad, losses); err != nil {
		return nil, 0, err
	}
	for _, l := range losses {
		loss += l
	}
	return grad, loss, nil
}

// gradInto runs the graph on (x, y) and writes the summed-loss gradient to grad and
// the per-sample losses to losses.
func (gr *Graph) gradInto(params, x []float64, y []int, grad, losses []float64) error {
	if y == nil {
		return errors.New("oracle: labels are required for gradients")
	}
	if err := gr.set(params, x, y); err != nil {
		return err
	}
	return gr.runGradInto(grad, losses)
}

func (gr *Graph) runGradInto(grad, losses []float64) error {
	if err := gr.run(); err != nil {
		return err
	}
	for i, ps := range gr.pshapes {
		v, err := values(gr.grads[i])
		if err != nil {
			return err
		}
		if len(v) != ps.Size {
			return fmt.Errorf("oracle: gradient of %s has %d values, want %d", ps.Name, len(v), ps.Size)
		}
		dst := grad[ps.Offset : ps.Offset+ps.Size]
		if !gr.transT[i] {
			copy(dst, v)
			continue
		}
		transpose(dst, v, gr.cols[i], gr.rows[i])
	}
	l, err := values(gr.losses)
	if err != nil {
		return err
	}
	if len(l) != gr.batch {
		return fmt.Errorf("oracle: %d losses for batch %d", len(l), gr.batch)
	}
	copy(losses, l)
	return nil
}

// PerSampleGrads runs a batch-1 graph once per sample (Gorgonia's per-sample route)
// and returns the n×P per-sample gradients (row i is ∇_θ ℓ(x_i, y_i)) and losses.
func (gr *Graph) PerSampleGrads(params, x []float64, y []int, n int) (grads, losses []float64, err error) {
	if gr.batch != 1 {
		return nil, nil, fmt.Errorf("oracle: per-sample gradients need a batch-1 graph, %s has batch %d", gr.arch.Name, gr.batch)
	}
	d := gr.arch.InputDim()
	if n <= 0 || len(x) != n*d || len(y) != n {
		return nil, nil, fmt.Errorf("oracle: %d samples need %d input values and %d labels, got %d and %d", n, n*d, n, len(x), len(y))
	}
	if err := gr.checkParams(params); err != nil {
		return nil, nil, err
	}
	gr.setParams(params)
	P := gr.nparams
	grads, losses = make([]float64, n*P), make([]float64, n)
	for i := 0; i < n; i++ {
		if err := gr.setData(x[i*d:(i+1)*d], y[i:i+1]); err != nil {
			return nil, nil, fmt.Errorf("sample %d: %w", i, err)
		}
		if err := gr.runGradInto(grads[i*P:(i+1)*P], losses[i:i+1]); err != nil {
			return nil, nil, fmt.Errorf("sample %d: %w", i, err)
		}
	}
	return grads, losses, nil
}
