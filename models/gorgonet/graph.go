package gorgonet

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"math"
	"math/rand/v2"
	"regexp"
	"sync"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/dpfil/dpfil/internal/splitmix"
	"github.com/dpfil/dpfil/models"
)

// GraphArchPrefix starts the architecture name of every GraphModel:
// "gorgonia-graph:<name>@<fingerprint>".
const GraphArchPrefix = "gorgonia-graph:"

// ErrNoSecondOrder is returned (wrapped) by GraphModel.FILSqNorms and SecondOrderErr,
// and by train.Run when FIL is requested, for a graph with an op that has no
// forward-over-reverse rule (the error also wraps ErrNoTangentRule and lists the
// ops). Gorgonia's own second-order derivatives are never used instead: its Grad of
// a Grad silently returns wrong values (Σx³ gives 2x instead of 6x, pinned by
// models/oracle TestGorgoniaGradOfGradDefect).
var ErrNoSecondOrder = errors.New("no FIL for this Gorgonia graph: FIL needs exact second-order derivatives, " +
	"which gorgonet computes by its own forward-over-reverse rules (Gorgonia v0.9.18's Grad of a Grad is wrong), and the graph has ops without a rule; " +
	"turn FIL off (fil_coords = 0), write the model with the covered ops, or define it with gorgonet.Builder")

// InitMode selects how GraphModel.Init draws parameters.
type InitMode int

// Initialisations.
const (
	// InitGlorot (the default) draws every weight (a parameter with at least two
	// dimensions larger than 1) uniformly in ±√(6/(fan_in + fan_out)) (Glorot &
	// Bengio 2010; for dims (a, b, r…), fan_in + fan_out = (a + b)·Πr, so a dense
	// weight's orientation does not matter), from a PCG stream seeded through
	// internal/splitmix from Init's seed, in parameter order; vectors and (1, n)
	// matrices (biases) start at zero. Repeats with different seeds differ.
	InitGlorot InitMode = iota
	// InitValues returns the values the parameter nodes held when FromGraph was
	// called (e.g. from gorgonia.WithInit), whatever the seed: every repeat starts
	// from the same point.
	InitValues
)

// GraphSpec is a network the caller built as a Gorgonia expression graph for ONE
// sample. FromGraph takes ownership of Graph: it adds the gradient nodes and binds
// its own values to Input, Label and Params.
type GraphSpec struct {
	// Name is a short name (letters, digits, '.', '_', '-').
	Name  string
	Graph *G.ExprGraph
	// Input is the variable node of one sample's raw input, shape (1, C, H, W),
	// (C, H, W), (1, D) or (D) with D = C·H·W of InputShape (flat NCHW order).
	Input      *G.Node
	InputShape models.Shape
	// Label is the variable node of the sample's one-hot label, shape (1, K) or (K).
	Label   *G.Node
	Classes int // K
	// Logits are the K class scores (any shape of K values); they must not depend on
	// Label. Accuracy and the reported test loss (softmax cross-entropy) come from them.
	Logits *G.Node
	// Loss is the sample's scalar training loss (e.g. CrossEntropy(Logits, Label)).
	Loss *G.Node
	// Params are the learnable variable nodes (tensors, no ops), in the order of the
	// flat parameter vector (each row-major). Their names (gorgonia.WithName) must be
	// distinct: they name the tensors in params.npz.
	Params []*G.Node
	Init   InitMode
}

// GraphModel is a models.Model computed from a one-sample Gorgonia graph. When every
// op of the graph (the ancestors of the loss and the logits) has a
// forward-over-reverse rule (fwdrev_rules.go), the model evaluates the graph with
// its own program in float64, whatever the graph's dtype: per sample the loss, the
// gradient w.r.t. every parameter (the reverse rules), clipped as the engine clips
// (models.Clip), and for FIL the tangents of the clipped gradient along input
// directions (forward-over-reverse, k directions at once), samples on parallel
// workers, with sums in sample order so that results do not depend on the number
// of workers. Gorgonia's own gradients (gorgonia.Grad, compiled into a tape machine)
// are the first-order route for graphs with ops the program lacks; their FIL fails
// with ErrNoSecondOrder.
//
// Cost: see docs/perf.md (the graph route against the engine on a 784→32→10 MLP).
//
// Results are deterministic. A GraphModel is not safe for concurrent use, and the
// graph must not be run by anything else while the model is in use.
type GraphModel struct {
	spec   GraphSpec
	arch   models.Arch
	fp     string
	dt     tensor.Dtype
	p, d   int
	ptens  []models.ParamShape
	grads  G.Nodes
	vm     G.VM // loss and gradients
	fwd    G.VM // logits only
	xT, yT *tensor.Dense
	pT     []*tensor.Dense
	init0  []float64 // the parameters' values at FromGraph (InitValues)

	g, total []float64 // scratch: one sample's gradient, the float64 sum

	// prog is the graph's own forward-over-reverse program (fwdrev.go); nil when
	// an op has no rule, progErr then says which (and FIL is refused).
	prog    *program
	progErr error
	workers int
	// gorgoniaRoute forces Gorgonia's tape for gradients and logits (tests, the
	// benchmark of the old route).
	gorgoniaRoute bool
	envMu         sync.Mutex
	envPool       []*env
}

var graphNameRE = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// FromGraph checks spec and builds the model: it differentiates Loss w.r.t. Params
// (gorgonia.Grad, once) and compiles the graph. Errors say which node is wrong;
// Gorgonia panics are returned as errors.
func FromGraph(spec GraphSpec) (m *GraphModel, err error) {
	if err := checkSpec(&spec); err != nil {
		return nil, fmt.Errorf("gorgonet: graph %q: %w", spec.Name, err)
	}
	defer func() {
		if r := recover(); r != nil {
			m, err = nil, fmt.Errorf("gorgonet: graph %q: gorgonia panicked: %v", spec.Name, r)
		}
	}()
	m = &GraphModel{spec: spec, dt: spec.Loss.Dtype(), d: spec.InputShape.Size()}
	off := 0
	for i, n := range spec.Params {
		dims := []int(n.Shape().Clone())
		size := n.Shape().TotalSize()
		m.ptens = append(m.ptens, models.ParamShape{Layer: -1, Tensor: i, Name: n.Name(), Dims: dims, Offset: off, Size: size})
		off += size
	}
	m.p = off
	if spec.Init == InitValues {
		m.init0 = make([]float64, m.p)
		for i, n := range spec.Params {
			ps := m.ptens[i]
			if n.Value() == nil {
				return nil, fmt.Errorf("gorgonet: graph %q: InitValues but parameter %s has no value (create it with gorgonia.WithInit or WithValue)", spec.Name, ps.Name)
			}
			if err := readValue(n.Value(), m.init0[ps.Offset:ps.Offset+ps.Size]); err != nil {
				return nil, fmt.Errorf("gorgonet: graph %q: parameter %s: %w", spec.Name, ps.Name, err)
			}
		}
	}
	m.fp = fingerprint(&spec, m.init0)
	if m.prog, err = compile(&spec); err != nil {
		m.prog, m.progErr = nil, err
	}
	m.arch = models.Arch{Name: GraphArchPrefix + spec.Name + "@" + m.fp, Input: spec.InputShape, Classes: spec.Classes}

	sub := spec.Graph.SubgraphRoots(spec.Logits)
	for _, n := range sub.AllNodes() {
		if n == spec.Label {
			return nil, fmt.Errorf("gorgonet: graph %q: the logits depend on the label node %s", spec.Name, spec.Label.Name())
		}
	}
	inLoss := map[*G.Node]bool{}
	for _, n := range spec.Graph.SubgraphRoots(spec.Loss).AllNodes() {
		inLoss[n] = true
	}
	for i, n := range spec.Params {
		if !inLoss[n] {
			return nil, fmt.Errorf("gorgonet: graph %q: parameter %d (%s) does not reach the loss", spec.Name, i, n.Name())
		}
	}
	if !inLoss[spec.Input] || !inLoss[spec.Label] {
		return nil, fmt.Errorf("gorgonet: graph %q: the loss must depend on the input and the label", spec.Name)
	}
	if m.grads, err = G.Grad(spec.Loss, spec.Params...); err != nil {
		return nil, fmt.Errorf("gorgonet: graph %q: differentiating the loss: %w", spec.Name, err)
	}
	m.xT = tensor.New(tensor.WithShape(spec.Input.Shape()...), tensor.Of(m.dt))
	m.yT = tensor.New(tensor.WithShape(spec.Label.Shape()...), tensor.Of(m.dt))
	if err := G.Let(spec.Input, m.xT); err != nil {
		return nil, fmt.Errorf("gorgonet: graph %q: binding the input: %w", spec.Name, err)
	}
	if err := G.Let(spec.Label, m.yT); err != nil {
		return nil, fmt.Errorf("gorgonet: graph %q: binding the label: %w", spec.Name, err)
	}
	for i, n := range spec.Params {
		t := tensor.New(tensor.WithShape(n.Shape()...), tensor.Of(m.dt))
		if err := G.Let(n, t); err != nil {
			return nil, fmt.Errorf("gorgonet: graph %q: binding parameter %s: %w", spec.Name, m.ptens[i].Name, err)
		}
		m.pT = append(m.pT, t)
	}
	m.vm = G.NewTapeMachine(spec.Graph)
	m.fwd = G.NewTapeMachine(sub)
	m.g, m.total = make([]float64, m.p), make([]float64, m.p)
	return m, nil
}

// checkSpec validates the nodes of spec (before anything is added to the graph).
func checkSpec(s *GraphSpec) error {
	if !graphNameRE.MatchString(s.Name) {
		return fmt.Errorf("name must be letters, digits, '.', '_' or '-'")
	}
	if s.Graph == nil {
		return errors.New("no graph")
	}
	if s.InputShape.C <= 0 || s.InputShape.H <= 0 || s.InputShape.W <= 0 {
		return fmt.Errorf("input shape %dx%dx%d must be positive", s.InputShape.C, s.InputShape.H, s.InputShape.W)
	}
	if s.Classes < 2 {
		return fmt.Errorf("classes = %d, need at least 2", s.Classes)
	}
	if len(s.Params) == 0 {
		return errors.New("no parameters")
	}
	for _, r := range []struct {
		what string
		n    *G.Node
	}{{"input", s.Input}, {"label", s.Label}, {"logits", s.Logits}, {"loss", s.Loss}} {
		if r.n == nil {
			return fmt.Errorf("no %s node", r.what)
		}
		if r.n.Graph() != s.Graph {
			return fmt.Errorf("%s node %s is not in the graph", r.what, r.n.Name())
		}
	}
	for _, n := range s.Graph.AllNodes() {
		if len(n.DerivOf()) > 0 {
			return fmt.Errorf("the graph already holds gradient nodes (node %s): give FromGraph the undifferentiated graph (a second Grad would reuse the first one's adjoints)", n.Name())
		}
	}
	dt := s.Loss.Dtype()
	if dt != tensor.Float64 && dt != tensor.Float32 {
		return fmt.Errorf("loss has dtype %v, want float64 or float32", dt)
	}
	if !s.Loss.IsScalar() {
		return fmt.Errorf("loss %s has shape %v, want a scalar (reduce it with gorgonia.Sum or Mean)", s.Loss.Name(), s.Loss.Shape())
	}
	in := s.InputShape
	D := in.Size()
	switch sh := s.Input.Shape(); {
	case sh.Eq(tensor.Shape{1, in.C, in.H, in.W}), sh.Eq(tensor.Shape{in.C, in.H, in.W}), sh.Eq(tensor.Shape{1, D}), sh.Eq(tensor.Shape{D}):
	default:
		return fmt.Errorf("input node %s has shape %v; for input %dx%dx%d want (1, %d, %d, %d), (%d, %d, %d), (1, %d) or (%d)",
			s.Input.Name(), sh, in.C, in.H, in.W, in.C, in.H, in.W, in.C, in.H, in.W, D, D)
	}
	K := s.Classes
	if sh := s.Label.Shape(); !sh.Eq(tensor.Shape{1, K}) && !sh.Eq(tensor.Shape{K}) {
		return fmt.Errorf("label node %s has shape %v, want the one-hot (1, %d) or (%d)", s.Label.Name(), sh, K, K)
	}
	if n := s.Logits.Shape().TotalSize(); n != K || s.Logits.IsScalar() {
		return fmt.Errorf("logits node %s has shape %v, want %d values", s.Logits.Name(), s.Logits.Shape(), K)
	}
	seen := map[*G.Node]string{s.Input: "the input", s.Label: "the label"}
	names := map[string]bool{}
	for what, n := range map[string]*G.Node{"input": s.Input, "label": s.Label} {
		if !n.IsVar() {
			return fmt.Errorf("%s node %s must be a variable (a node without an op)", what, n.Name())
		}
	}
	for i, n := range s.Params {
		switch {
		case n == nil:
			return fmt.Errorf("parameter %d is nil", i)
		case n.Graph() != s.Graph:
			return fmt.Errorf("parameter %d (%s) is not in the graph", i, n.Name())
		case seen[n] != "":
			return fmt.Errorf("parameter %d (%s) is %s", i, n.Name(), seen[n])
		case !n.IsVar():
			return fmt.Errorf("parameter %d (%s) is computed by an op; parameters must be variables (leaf nodes without an op)", i, n.Name())
		case n.IsScalar() || n.Shape().TotalSize() == 0:
			return fmt.Errorf("parameter %d (%s) is a scalar; use a vector of length 1", i, n.Name())
		case names[n.Name()]:
			return fmt.Errorf("parameter %d: name %s is used twice (give each parameter a distinct gorgonia.WithName)", i, n.Name())
		}
		seen[n] = fmt.Sprintf("parameter %d", i)
		names[n.Name()] = true
	}
	for _, r := range []struct {
		what string
		n    *G.Node
	}{{"input", s.Input}, {"label", s.Label}, {"logits", s.Logits}} {
		if r.n.Dtype() != dt {
			return fmt.Errorf("%s node %s has dtype %v, the loss %v", r.what, r.n.Name(), r.n.Dtype(), dt)
		}
	}
	for i, n := range s.Params {
		if n.Dtype() != dt {
			return fmt.Errorf("parameter %d (%s) has dtype %v, the loss %v", i, n.Name(), n.Dtype(), dt)
		}
	}
	return nil
}

// fingerprint hashes what determines the model's results: every node of the graph
// in insertion (topological) order — op, dtype, shape, children, role — the values
// of the graph's other leaves (constants, fixed inputs), the init mode and, for
// InitValues, the initial parameters. It is part of the architecture name, so that
// result.json and train's config hash name the graph that ran.
func fingerprint(s *GraphSpec, init0 []float64) string {
	h := sha256.New()
	all := s.Graph.AllNodes()
	idx := make(map[int64]int, len(all))
	role := map[*G.Node]string{s.Input: "input", s.Label: "label", s.Logits: "logits", s.Loss: "loss"}
	for i, n := range s.Params {
		role[n] = fmt.Sprintf("param%d", i)
	}
	fmt.Fprintf(h, "classes %d input %v init %d\n", s.Classes, s.InputShape, s.Init)
	for i, n := range all {
		idx[n.ID()] = i
		op := "var " + n.Name()
		if n.Op() != nil {
			op = n.Op().String()
		}
		fmt.Fprintf(h, "%d %q %v %v %s [", i, op, n.Dtype(), n.Shape(), role[n])
		for it := s.Graph.From(n.ID()); it.Next(); {
			fmt.Fprintf(h, "%d ", idx[it.Node().ID()])
		}
		h.Write([]byte("]\n"))
		if _, ok := role[n]; !ok && (n.Op() == nil || s.Graph.From(n.ID()).Len() == 0) {
			hashValue(h, n.Value())
		}
	}
	for _, v := range init0 {
		_ = binary.Write(h, binary.LittleEndian, v)
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

func hashValue(h hash.Hash, v G.Value) {
	if v == nil {
		h.Write([]byte("nil\n"))
		return
	}
	switch d := v.Data().(type) {
	case []float64, []float32, float64, float32, []int, int:
		_ = binary.Write(h, binary.LittleEndian, d)
	default:
		fmt.Fprintf(h, "%v", d)
	}
}

// readValue copies a float64 or float32 value (tensor or scalar) into dst.
func readValue(v G.Value, dst []float64) error {
	switch d := v.Data().(type) {
	case []float64:
		if len(d) != len(dst) {
			return fmt.Errorf("%d values, want %d", len(d), len(dst))
		}
		copy(dst, d)
	case []float32:
		if len(d) != len(dst) {
			return fmt.Errorf("%d values, want %d", len(d), len(dst))
		}
		for i, x := range d {
			dst[i] = float64(x)
		}
	case float64:
		if len(dst) != 1 {
			return fmt.Errorf("a scalar, want %d values", len(dst))
		}
		dst[0] = d
	case float32:
		if len(dst) != 1 {
			return fmt.Errorf("a scalar, want %d values", len(dst))
		}
		dst[0] = float64(d)
	default:
		return fmt.Errorf("holds %T, not float64 or float32", d)
	}
	return nil
}

// write copies src into the float64 or float32 backing of t.
func write[T models.Float](t *tensor.Dense, src []T) {
	switch d := t.Data().(type) {
	case []float64:
		for i, v := range src {
			d[i] = float64(v)
		}
	case []float32:
		for i, v := range src {
			d[i] = float32(v)
		}
	}
}

// Arch is the model's architecture record: name GraphArchPrefix+Name+"@"+Fingerprint,
// input shape and classes, and no engine layers.
func (m *GraphModel) Arch() models.Arch { return m.arch }

// Fingerprint is the graph's hash in the architecture name (see GraphModel.Arch).
func (m *GraphModel) Fingerprint() string { return m.fp }

// NumParams is the length of the flat parameter vector.
func (m *GraphModel) NumParams() int { return m.p }

// InputDim is C·H·W.
func (m *GraphModel) InputDim() int { return m.d }

// Graph is the Gorgonia graph (with the gradient nodes FromGraph added).
func (m *GraphModel) Graph() *G.ExprGraph { return m.spec.Graph }

// ParamTensors names the parameter tensors of the flat vector (Layer is −1, Tensor
// the index in GraphSpec.Params; Dims are the nodes' shapes).
func (m *GraphModel) ParamTensors() []models.ParamShape {
	out := make([]models.ParamShape, len(m.ptens))
	for i, p := range m.ptens {
		p.Dims = append([]int(nil), p.Dims...)
		out[i] = p
	}
	return out
}

// Init returns the initial parameters for seed (see InitMode).
func (m *GraphModel) Init(seed uint64) []float32 {
	p := m.Init64(seed)
	out := make([]float32, len(p))
	for i, v := range p {
		out[i] = float32(v)
	}
	return out
}

// Init64 is Init in float64.
func (m *GraphModel) Init64(seed uint64) []float64 {
	if m.spec.Init == InitValues {
		return append([]float64(nil), m.init0...)
	}
	st := seed ^ 0x676f72676f6e6574 // "gorgonet"
	a := splitmix.Next(&st)
	rng := rand.New(rand.NewPCG(a, splitmix.Next(&st)))
	out := make([]float64, m.p)
	for _, ps := range m.ptens {
		big := 0
		for _, v := range ps.Dims {
			if v > 1 {
				big++
			}
		}
		if big < 2 { // a vector, (1, n) included: a bias
			continue
		}
		rf := 1
		for _, r := range ps.Dims[2:] {
			rf *= r
		}
		lim := math.Sqrt(6 / float64((ps.Dims[0]+ps.Dims[1])*rf))
		for i := ps.Offset; i < ps.Offset+ps.Size; i++ {
			out[i] = lim * (2*rng.Float64() - 1)
		}
	}
	return out
}

// checkBatch validates the lengths, the labels and the finiteness of params.
func checkBatch[T models.Float](m *GraphModel, params, x []T, y []int, n int) error {
	if n < 0 || len(x) != n*m.d {
		return fmt.Errorf("%s: x has %d values, want %d samples × %d", m.arch.Name, len(x), n, m.d)
	}
	if y != nil && len(y) != n {
		return fmt.Errorf("%s: %d labels for %d samples", m.arch.Name, len(y), n)
	}
	if len(params) != m.p {
		return fmt.Errorf("%s: %d parameters, want %d", m.arch.Name, len(params), m.p)
	}
	for i, v := range params {
		if f := float64(v); math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("%s: parameter %d = %v is not finite", m.arch.Name, i, f)
		}
	}
	for i, c := range y {
		if c < 0 || c >= m.arch.Classes {
			return fmt.Errorf("%s: label %d of sample %d not in [0, %d)", m.arch.Name, c, i, m.arch.Classes)
		}
	}
	return nil
}

// bind writes the parameters and sample i's input (and one-hot label if y != nil).
func bind[T models.Float](m *GraphModel, params, x []T, y []int, i int) error {
	for j, ps := range m.ptens {
		write(m.pT[j], params[ps.Offset:ps.Offset+ps.Size])
	}
	xi := x[i*m.d : (i+1)*m.d]
	for j, v := range xi {
		if f := float64(v); math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("input %d of sample %d = %v is not finite", j, i, f)
		}
	}
	write(m.xT, xi)
	if y != nil {
		switch d := m.yT.Data().(type) {
		case []float64:
			clear(d)
			d[y[i]] = 1
		case []float32:
			clear(d)
			d[y[i]] = 1
		}
	}
	return nil
}

// run executes a machine once, turning Gorgonia panics into errors.
func run(vm G.VM) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("gorgonia panicked: %v", r)
		}
		vm.Reset()
	}()
	return vm.RunAll()
}

// ClippedGradSum implements models.Model: per sample, the gradient of the loss (by
// the program's reverse rules, samples in parallel, or Gorgonia's tape when an op
// has no rule), clipped as models.Clip scales it, summed in float64 in sample order
// and rounded once to sum.
func (m *GraphModel) ClippedGradSum(params, x []float32, y []int, clip models.Clip, sum []float32, losses []float64) error {
	if err := clippedGradSum(m, params, x, y, clip, losses); err != nil {
		return err
	}
	if len(sum) != m.p {
		return fmt.Errorf("%s: sum buffer has %d values, want %d", m.arch.Name, len(sum), m.p)
	}
	for j, v := range m.total {
		sum[j] = float32(v)
	}
	return nil
}

// ClippedGradSum64 is ClippedGradSum with float64 parameters, inputs and sum (exact
// checks). The program computes in float64 whatever the graph's dtype; Gorgonia's
// tape (the fallback) computes in the graph's dtype.
func (m *GraphModel) ClippedGradSum64(params, x []float64, y []int, clip models.Clip, sum []float64, losses []float64) error {
	if len(sum) != m.p {
		return fmt.Errorf("%s: sum buffer has %d values, want %d", m.arch.Name, len(sum), m.p)
	}
	if err := clippedGradSum(m, params, x, y, clip, losses); err != nil {
		return err
	}
	copy(sum, m.total)
	return nil
}

func clippedGradSum[T models.Float](m *GraphModel, params, x []T, y []int, clip models.Clip, losses []float64) error {
	if err := clip.Validate(); err != nil {
		return err
	}
	n := len(y)
	if y == nil {
		return fmt.Errorf("%s: labels are required", m.arch.Name)
	}
	if err := checkBatch(m, params, x, y, n); err != nil {
		return err
	}
	if len(losses) != n {
		return fmt.Errorf("%s: losses buffer has %d values, want %d", m.arch.Name, len(losses), n)
	}
	if m.prog != nil && !m.gorgoniaRoute {
		return m.progClippedGradSum(toF64(params), toF64(x), y, clip, losses)
	}
	clear(m.total)
	l := make([]float64, 1)
	for i := 0; i < n; i++ {
		if err := bind(m, params, x, y, i); err != nil {
			return fmt.Errorf("%s: %w", m.arch.Name, err)
		}
		if err := run(m.vm); err != nil {
			return fmt.Errorf("%s: sample %d: %w", m.arch.Name, i, err)
		}
		for j, ps := range m.ptens {
			gv := m.grads[j].Value()
			if gv == nil {
				return fmt.Errorf("%s: sample %d: gradient of %s has no value", m.arch.Name, i, ps.Name)
			}
			if err := readValue(gv, m.g[ps.Offset:ps.Offset+ps.Size]); err != nil {
				return fmt.Errorf("%s: sample %d: gradient of %s: %w", m.arch.Name, i, ps.Name, err)
			}
		}
		if err := readValue(m.spec.Loss.Value(), l); err != nil {
			return fmt.Errorf("%s: sample %d: loss: %w", m.arch.Name, i, err)
		}
		if math.IsNaN(l[0]) || math.IsInf(l[0], 0) {
			return fmt.Errorf("%s: sample %d: loss %v is not finite", m.arch.Name, i, l[0])
		}
		losses[i] = l[0]
		if norm, _ := models.ClipVector(clip, m.g); math.IsNaN(norm) || math.IsInf(norm, 0) {
			return fmt.Errorf("%s: sample %d: gradient norm %v is not finite", m.arch.Name, i, norm)
		}
		for j, v := range m.g {
			m.total[j] += v
		}
	}
	return nil
}

// Logits implements models.Model: the n×Classes logits, one forward run per sample
// (the logits' subgraph only).
func (m *GraphModel) Logits(params, x []float32, n int, out []float32) error {
	return logits(m, params, x, n, func(i int, z []float64) {
		for c, v := range z {
			out[i*len(z)+c] = float32(v)
		}
	}, len(out))
}

// Logits64 is Logits in float64.
func (m *GraphModel) Logits64(params, x []float64, n int, out []float64) error {
	return logits(m, params, x, n, func(i int, z []float64) { copy(out[i*len(z):], z) }, len(out))
}

func logits[T models.Float](m *GraphModel, params, x []T, n int, put func(int, []float64), outLen int) error {
	if err := checkBatch(m, params, x, nil, n); err != nil {
		return err
	}
	K := m.arch.Classes
	if outLen != n*K {
		return fmt.Errorf("%s: logits buffer has %d values, want %d × %d", m.arch.Name, outLen, n, K)
	}
	if m.prog != nil && !m.gorgoniaRoute {
		return m.progLogits(toF64(params), toF64(x), n, put)
	}
	z := make([]float64, K)
	for i := 0; i < n; i++ {
		if err := bind(m, params, x, nil, i); err != nil {
			return fmt.Errorf("%s: %w", m.arch.Name, err)
		}
		if err := run(m.fwd); err != nil {
			return fmt.Errorf("%s: sample %d: %w", m.arch.Name, i, err)
		}
		if err := readValue(m.spec.Logits.Value(), z); err != nil {
			return fmt.Errorf("%s: sample %d: logits: %w", m.arch.Name, i, err)
		}
		put(i, z)
	}
	return nil
}

// SecondOrderErr implements models.FirstOrderOnly: nil when every op of the graph
// has a forward-over-reverse rule, else an error wrapping ErrNoSecondOrder and
// ErrNoTangentRule that lists the ops without one.
func (m *GraphModel) SecondOrderErr() error {
	if m.prog != nil {
		return nil
	}
	return fmt.Errorf("%s: %w (%w)", m.arch.Name, ErrNoSecondOrder, m.progErr)
}

// FILSqNorms implements models.Model: for each sample s, Σ_j ‖J_s e_{coords[s][j]}‖²
// with J_s = ∂g̃_s/∂x_s the Jacobian of the sample's clipped gradient w.r.t. its
// input, by the graph's own forward-over-reverse (fwdrev.go) in float64, samples in
// parallel (SetWorkers; the results do not depend on the number of workers). A
// graph with an op without a rule returns SecondOrderErr and writes nothing.
func (m *GraphModel) FILSqNorms(params, x []float32, y []int, clip models.Clip, coords [][]int, out []float64) error {
	return filSqNorms(m, params, x, y, clip, coords, out)
}

// FILSqNorms64 is FILSqNorms with float64 parameters and inputs.
func (m *GraphModel) FILSqNorms64(params, x []float64, y []int, clip models.Clip, coords [][]int, out []float64) error {
	return filSqNorms(m, params, x, y, clip, coords, out)
}

func filSqNorms[T models.Float](m *GraphModel, params, x []T, y []int, clip models.Clip, coords [][]int, out []float64) error {
	if err := m.SecondOrderErr(); err != nil {
		return err
	}
	if err := clip.Validate(); err != nil {
		return err
	}
	if y == nil {
		return fmt.Errorf("%s: labels are required", m.arch.Name)
	}
	n := len(y)
	if err := checkBatch(m, params, x, y, n); err != nil {
		return err
	}
	if len(coords) != n || len(out) != n {
		return fmt.Errorf("%s: FIL needs %d coordinate lists and outputs, got %d and %d", m.arch.Name, n, len(coords), len(out))
	}
	for s, cs := range coords {
		for _, c := range cs {
			if c < 0 || c >= m.d {
				return fmt.Errorf("%s: FIL coordinate %d of sample %d outside [0,%d)", m.arch.Name, c, s, m.d)
			}
		}
	}
	return m.progFILSqNorms(toF64(params), toF64(x), y, clip, coords, out)
}

// CrossEntropy returns the softmax cross-entropy logsumexp(z) − ⟨z, y⟩ of one
// sample's logits z and one-hot label y (same shape), as a scalar node, with the
// maximum subtracted inside the exponential.
func CrossEntropy(z, y *G.Node) (loss *G.Node, err error) {
	// Each op goes through G.Must, which panics with the op's error; the recover
	// returns it (and any panic inside Gorgonia) as this function's error.
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(error); ok {
				loss, err = nil, fmt.Errorf("gorgonet: cross-entropy: %w", e)
				return
			}
			loss, err = nil, fmt.Errorf("gorgonet: cross-entropy: gorgonia panicked: %v", r)
		}
	}()
	if !z.Shape().Eq(y.Shape()) {
		return nil, fmt.Errorf("gorgonet: cross-entropy: logits %v and label %v differ in shape", z.Shape(), y.Shape())
	}
	mx := G.Must(G.Max(z))
	se := G.Must(G.Sum(G.Must(G.Exp(G.Must(G.Sub(z, mx))))))
	lse := G.Must(G.Add(G.Must(G.Log(se)), mx))
	picked := G.Must(G.Sum(G.Must(G.HadamardProd(z, y))))
	return G.Must(G.Sub(lse, picked)), nil
}
