package gorgonet

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"gonum.org/v1/gonum/floats"
	G "gorgonia.org/gorgonia"

	"github.com/dpfil/dpfil/models"
)

// This file is the graph route's own forward-over-reverse: the one-sample graph's
// nodes (the ancestors of the loss and the logits) are compiled, in topological
// order, into a program of op rules (fwdrev_rules.go). Each rule has a forward
// value, a reverse (adjoint) rule, and the tangents of both, so that one pass
// carries (a, ȧ) forward and (δ, δ̇) back for k input directions at once ([k × size]
// blocks), without Gorgonia's Grad (whose Grad of a Grad is wrong) and without
// Gorgonia's kernels (whose AveragePool2D is wrong): every value is computed here,
// in float64.

// ErrNoTangentRule is wrapped by the errors of graphs with ops the program has no
// rule for; the error lists every such node and op.
var ErrNoTangentRule = errors.New("no forward-over-reverse rule for these Gorgonia ops")

// pnode is one node of the program.
type pnode struct {
	gn    *G.Node
	in    []int // program indices of the children, in order
	shape []int
	size  int
	r     rule // nil for leaves
	// leaf: role of the leaf (leafInput, leafLabel, leafParam, leafConst) and, for
	// a parameter, its index in GraphSpec.Params; for a constant, its value.
	leaf   int
	param  int
	cval   []float64
	dep    bool // depends on the input x: carries a forward tangent
	adj    bool // a parameter reaches the loss through it: carries an adjoint
	logits bool // an ancestor of the logits (evaluated by Logits)
	// ownAdjT: the node's only consumer is a matrix product, whose first
	// contribution overwrites the node's adjoint tangent, so tangents() does not
	// clear it.
	ownAdjT bool
}

const (
	leafNone = iota
	leafInput
	leafLabel
	leafParam
	leafConst
)

// program is a compiled one-sample graph.
type program struct {
	nodes  []pnode
	input  int
	label  int
	loss   int
	logits int
	params []int // program index of each GraphSpec.Params entry
	// dirBytes is the memory one input direction takes in an env (its forward and
	// adjoint tangents).
	dirBytes int
}

// compile builds the program of the ancestors of spec.Loss and spec.Logits. An op
// without a rule makes it fail with an error wrapping ErrNoTangentRule that lists
// every such node.
func compile(spec *GraphSpec) (pr *program, err error) {
	defer func() { // an op whose fields are not what the rules expect
		if r := recover(); r != nil {
			pr, err = nil, fmt.Errorf("%w: compiling the graph panicked: %v", ErrNoTangentRule, r)
		}
	}()
	g := spec.Graph
	need := map[*G.Node]bool{}
	for _, n := range g.SubgraphRoots(spec.Loss).AllNodes() {
		need[n] = true
	}
	inLogits := map[*G.Node]bool{}
	for _, n := range g.SubgraphRoots(spec.Logits).AllNodes() {
		need[n] = true
		inLogits[n] = true
	}
	paramOf := map[*G.Node]int{}
	for i, n := range spec.Params {
		paramOf[n] = i
	}
	pr = &program{input: -1, label: -1, loss: -1, logits: -1, params: make([]int, len(spec.Params))}
	for i := range pr.params {
		pr.params[i] = -1
	}
	idx := map[*G.Node]int{}
	var missing []string
	for _, n := range g.AllNodes() { // insertion order: children before parents
		if !need[n] {
			continue
		}
		pn := pnode{gn: n, shape: []int(n.Shape().Clone()), logits: inLogits[n]}
		pn.size = max(1, n.Shape().TotalSize())
		for it := g.From(n.ID()); it.Next(); {
			c := it.Node().(*G.Node)
			ci, ok := idx[c]
			if !ok {
				return nil, fmt.Errorf("node %s: child %s comes later in the graph (not topologically ordered)", n.Name(), c.Name())
			}
			pn.in = append(pn.in, ci)
		}
		switch {
		case n == spec.Input:
			pn.leaf, pr.input = leafInput, len(pr.nodes)
		case n == spec.Label:
			pn.leaf, pr.label = leafLabel, len(pr.nodes)
		case isParam(paramOf, n):
			pn.leaf, pn.param = leafParam, paramOf[n]
			pr.params[pn.param] = len(pr.nodes)
		case n.Op() == nil || isConstOp(n.Op()):
			pn.leaf = leafConst
			if n.Value() == nil {
				return nil, fmt.Errorf("leaf node %s is not the input, the label or a parameter, and has no value", n.Name())
			}
			pn.cval = make([]float64, pn.size)
			if err := readValue(n.Value(), pn.cval); err != nil {
				return nil, fmt.Errorf("leaf node %s: %w", n.Name(), err)
			}
		default:
			r, err := ruleOf(g, n, pr, pn.in)
			if err != nil {
				missing = append(missing, fmt.Sprintf("%s (op %q: %v)", n.Name(), n.Op().String(), err))
			}
			pn.r = r
		}
		idx[n] = len(pr.nodes)
		pr.nodes = append(pr.nodes, pn)
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w: %s (covered: %s)", ErrNoTangentRule, strings.Join(missing, "; "), strings.Join(coveredOps, ", "))
	}
	pr.loss, pr.logits = idx[spec.Loss], idx[spec.Logits]
	if pr.input < 0 || pr.label < 0 {
		return nil, errors.New("the loss does not depend on the input and the label")
	}
	for i, p := range pr.params {
		if p < 0 {
			return nil, fmt.Errorf("parameter %d does not reach the loss", i)
		}
	}
	// Which nodes carry tangents (depend on x) and adjoints (lie between a
	// parameter and the loss).
	reach := make([]bool, len(pr.nodes)) // a parameter is an ancestor
	for i := range pr.nodes {
		n := &pr.nodes[i]
		switch n.leaf {
		case leafInput:
			n.dep = true
		case leafParam:
			reach[i] = true
		}
		if n.r != nil && !n.r.constOut() {
			for _, c := range n.in {
				n.dep = n.dep || pr.nodes[c].dep
				reach[i] = reach[i] || reach[c]
			}
		}
	}
	toLoss := make([]bool, len(pr.nodes)) // the loss is a descendant
	toLoss[pr.loss] = true
	for i := len(pr.nodes) - 1; i >= 0; i-- {
		n := &pr.nodes[i]
		if !toLoss[i] || n.r == nil || n.r.constOut() {
			continue
		}
		for _, c := range n.in {
			toLoss[c] = true
		}
	}
	for i := range pr.nodes {
		pr.nodes[i].adj = reach[i] && toLoss[i]
	}
	uses := make([]int, len(pr.nodes))
	mmUse := make([]bool, len(pr.nodes))
	for i := range pr.nodes {
		n := &pr.nodes[i]
		if n.r == nil || !n.adj || n.r.constOut() {
			continue
		}
		_, mm := n.r.(mmRule)
		for _, c := range n.in {
			uses[c]++
			mmUse[c] = mm
		}
	}
	for i := range pr.nodes {
		n := &pr.nodes[i]
		n.ownAdjT = n.adj && uses[i] == 1 && mmUse[i]
		if n.dep {
			pr.dirBytes += 8 * n.size
		}
		if n.adj {
			pr.dirBytes += 8 * n.size
		}
	}
	return pr, nil
}

func isParam(m map[*G.Node]int, n *G.Node) bool { _, ok := m[n]; return ok }

// env holds one sample's values, adjoints and their tangents (for up to k
// directions), per program node. One env per worker.
type env struct {
	k               int // directions of the current block
	val, adj        [][]float64
	tan, adjT       [][]float64 // [k × size]; nil where the node carries none
	idx             [][]int     // per-node scratch of dynamic rules (argmax)
	g, gt           []float64   // the flat gradient and one direction's gradient tangent
	kmax            int
	logitsOnly, fil bool
}

func newEnv(pr *program, P, kmax int) *env {
	e := &env{kmax: kmax}
	N := len(pr.nodes)
	e.val, e.adj, e.tan, e.adjT, e.idx = make([][]float64, N), make([][]float64, N), make([][]float64, N), make([][]float64, N), make([][]int, N)
	for i := range pr.nodes {
		n := &pr.nodes[i]
		switch n.leaf {
		case leafConst:
			e.val[i] = n.cval
		default:
			e.val[i] = make([]float64, n.size)
		}
		if n.adj {
			e.adj[i] = make([]float64, n.size)
		}
		if kmax > 0 && n.dep {
			e.tan[i] = make([]float64, kmax*n.size)
		}
		if kmax > 0 && n.adj {
			e.adjT[i] = make([]float64, kmax*n.size)
		}
	}
	e.g = make([]float64, P)
	return e
}

// tanOf is node i's tangent block for the current k, or nil.
func (e *env) tanOf(i int) []float64 {
	if e.tan[i] == nil {
		return nil
	}
	return e.tan[i][:e.k*len(e.val[i])]
}

func (e *env) adjTOf(i int) []float64 {
	if e.adjT[i] == nil {
		return nil
	}
	return e.adjT[i][:e.k*len(e.val[i])]
}

// forward binds the sample's input, label and the parameters and evaluates every
// node (only the logits' ancestors when logitsOnly).
func (pr *program) forward(e *env, params, x []float64, y int, logitsOnly bool, ptens []models.ParamShape) error {
	copy(e.val[pr.input], x)
	lab := e.val[pr.label]
	clear(lab)
	if y >= 0 {
		lab[y] = 1
	}
	for i, pi := range pr.params {
		ps := ptens[i]
		copy(e.val[pi], params[ps.Offset:ps.Offset+ps.Size])
	}
	for i := range pr.nodes {
		n := &pr.nodes[i]
		if n.r == nil || logitsOnly && !n.logits {
			continue
		}
		n.r.forward(e, pr, i)
	}
	return nil
}

// backward computes the adjoints (δ = ∂loss/∂node) and writes the flat parameter
// gradient to e.g.
func (pr *program) backward(e *env, ptens []models.ParamShape) {
	for i := range pr.nodes {
		if e.adj[i] != nil {
			clear(e.adj[i])
		}
	}
	e.adj[pr.loss][0] = 1
	for i := len(pr.nodes) - 1; i >= 0; i-- {
		n := &pr.nodes[i]
		if n.r == nil || !n.adj {
			continue
		}
		n.r.backward(e, pr, i)
	}
	for j, pi := range pr.params {
		ps := ptens[j]
		copy(e.g[ps.Offset:ps.Offset+ps.Size], e.adj[pi])
	}
}

// tangents seeds the input tangent with the one-hot directions coords (len k ≤
// kmax), then carries the forward tangents ȧ and the adjoint tangents δ̇.
func (pr *program) tangents(e *env, coords []int) {
	e.k = len(coords)
	tx := e.tanOf(pr.input)
	clear(tx)
	d := len(e.val[pr.input])
	for j, c := range coords {
		tx[j*d+c] = 1
	}
	for i := range pr.nodes {
		n := &pr.nodes[i]
		if n.r == nil || !n.dep {
			continue
		}
		n.r.tangent(e, pr, i)
	}
	for i := range pr.nodes {
		if t := e.adjTOf(i); t != nil && !pr.nodes[i].ownAdjT {
			clear(t)
		}
	}
	for i := len(pr.nodes) - 1; i >= 0; i-- {
		n := &pr.nodes[i]
		if n.r == nil || !n.adj {
			continue
		}
		n.r.backwardTangent(e, pr, i)
	}
}

// ---- the model's entry points ----

// SetWorkers sets how many goroutines evaluate samples (≤ 0: GOMAXPROCS, the
// default). Results do not depend on it.
func (m *GraphModel) SetWorkers(n int) { m.workers = n }

func (m *GraphModel) nworkers(n int) int {
	w := m.workers
	if w <= 0 {
		w = runtime.GOMAXPROCS(0)
	}
	return max(1, min(w, n))
}

// envs returns w environments with room for kmax directions.
func (m *GraphModel) envs(w, kmax int) []*env {
	m.envMu.Lock()
	defer m.envMu.Unlock()
	for len(m.envPool) < w {
		m.envPool = append(m.envPool, nil)
	}
	for i := 0; i < w; i++ {
		if m.envPool[i] == nil || m.envPool[i].kmax < kmax {
			m.envPool[i] = newEnv(m.prog, m.p, kmax)
		}
	}
	return m.envPool[:w]
}

// parallel runs f(e, s) for every s = 0..n−1 on the workers, in increasing order of
// s as the workers take them (f may wait for earlier samples: every sample is run,
// even after an error); the error of the first failing sample is returned.
func (m *GraphModel) parallel(n, kmax int, f func(e *env, s int) error) error {
	w := m.nworkers(n)
	es := m.envs(w, kmax)
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := 0; i < w; i++ {
		wg.Add(1)
		go func(e *env) {
			defer wg.Done()
			for {
				s := int(next.Add(1) - 1)
				if s >= n {
					return
				}
				errs[s] = f(e, s)
			}
		}(es[i])
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func toF64[T models.Float](v []T) []float64 {
	if f, ok := any(v).([]float64); ok {
		return f
	}
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

// checkInputs checks the finiteness of every input value.
func (m *GraphModel) checkFiniteInputs(x []float64) error {
	for i, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%s: input %d of sample %d = %v is not finite", m.arch.Name, i%m.d, i/m.d, v)
		}
	}
	return nil
}

// progClippedGradSum is ClippedGradSum on the program: per sample (in parallel),
// the gradient, clipped; the clipped gradients are added to m.total in sample
// order (each waits for its turn), so the float64 sum does not depend on the
// number of workers.
func (m *GraphModel) progClippedGradSum(params, x []float64, y []int, clip models.Clip, losses []float64) error {
	if err := m.checkFiniteInputs(x); err != nil {
		return err
	}
	clear(m.total)
	var mu sync.Mutex
	cond := sync.NewCond(&mu)
	turn := 0
	n := len(y)
	err := m.parallel(n, 0, func(e *env, s int) error {
		defer func() { // let the later samples add theirs whatever happened here
			mu.Lock()
			for turn != s {
				cond.Wait()
			}
			turn++
			cond.Broadcast()
			mu.Unlock()
		}()
		if err := m.prog.forward(e, params, x[s*m.d:(s+1)*m.d], y[s], false, m.ptens); err != nil {
			return err
		}
		l := e.val[m.prog.loss][0]
		if math.IsNaN(l) || math.IsInf(l, 0) {
			return fmt.Errorf("%s: sample %d: loss %v is not finite", m.arch.Name, s, l)
		}
		losses[s] = l
		m.prog.backward(e, m.ptens)
		norm := math.Sqrt(floats.Dot(e.g, e.g))
		if math.IsNaN(norm) || math.IsInf(norm, 0) {
			return fmt.Errorf("%s: sample %d: gradient norm %v is not finite", m.arch.Name, s, norm)
		}
		sc, _ := clip.Scale(norm) // g̃ = sc·g (models.ClipVector's scale)
		mu.Lock()
		for turn != s {
			cond.Wait()
		}
		floats.AddScaled(m.total, sc, e.g)
		mu.Unlock()
		return nil
	})
	return err
}

// progLogits evaluates the logits of n samples on the program.
func (m *GraphModel) progLogits(params, x []float64, n int, put func(int, []float64)) error {
	if err := m.checkFiniteInputs(x); err != nil {
		return err
	}
	return m.parallel(n, 0, func(e *env, s int) error {
		if err := m.prog.forward(e, params, x[s*m.d:(s+1)*m.d], -1, true, m.ptens); err != nil {
			return err
		}
		put(s, e.val[m.prog.logits])
		return nil
	})
}

// filBlock is the largest number of input directions carried at once; fewer when
// their tangents would take more than filBlockBytes per worker.
const (
	filBlock      = 16
	filBlockBytes = 256 << 20
)

// progFILSqNorms writes Σ_j ‖J_s e_{coords[s][j]}‖² to out[s], J_s the Jacobian of
// sample s's clipped gradient w.r.t. its input, by forward-over-reverse on the
// program, filBlock directions at a time.
func (m *GraphModel) progFILSqNorms(params, x []float64, y []int, clip models.Clip, coords [][]int, out []float64) error {
	if err := m.checkFiniteInputs(x); err != nil {
		return err
	}
	block := max(1, min(filBlock, filBlockBytes/max(1, m.prog.dirBytes)))
	kmax := 0
	for _, cs := range coords {
		kmax = max(kmax, min(len(cs), block))
	}
	clear(out)
	if kmax == 0 {
		return nil
	}
	return m.parallel(len(y), kmax, func(e *env, s int) error {
		if len(coords[s]) == 0 {
			return nil
		}
		if err := m.prog.forward(e, params, x[s*m.d:(s+1)*m.d], y[s], false, m.ptens); err != nil {
			return err
		}
		m.prog.backward(e, m.ptens)
		var gg float64
		for _, v := range e.g {
			gg += v * v
		}
		var acc float64
		for j0 := 0; j0 < len(coords[s]); j0 += kmax {
			blk := coords[s][j0:min(j0+kmax, len(coords[s]))]
			m.prog.tangents(e, blk)
			for j := range blk {
				var gd, dd float64
				for pi, ni := range m.prog.params {
					g := e.g[m.ptens[pi].Offset : m.ptens[pi].Offset+m.ptens[pi].Size]
					sz := len(g)
					gt := e.adjT[ni][j*sz : (j+1)*sz]
					gd += floats.Dot(g, gt)
					dd += floats.Dot(gt, gt)
				}
				acc += models.ClippedTangentSqNorm(clip, gg, gd, dd)
			}
		}
		out[s] = acc
		return nil
	})
}

// progClippedGradTangents returns, for tests, sample 0's clipped gradient and its
// tangents ġ̃_j along the input directions coords (k × P), by forward-over-reverse.
func (m *GraphModel) progClippedGradTangents(params, x []float64, y int, clip models.Clip, coords []int) (g []float64, gt [][]float64, err error) {
	e := newEnv(m.prog, m.p, len(coords))
	if err := m.prog.forward(e, params, x, y, false, m.ptens); err != nil {
		return nil, nil, err
	}
	m.prog.backward(e, m.ptens)
	g = append([]float64(nil), e.g...)
	m.prog.tangents(e, coords)
	for j := range coords {
		dg := make([]float64, m.p)
		for pi, ni := range m.prog.params {
			ps := m.ptens[pi]
			copy(dg[ps.Offset:ps.Offset+ps.Size], e.adjT[ni][j*ps.Size:(j+1)*ps.Size])
		}
		out := make([]float64, m.p)
		models.ClipJVP(clip, g, dg, out)
		gt = append(gt, out)
	}
	models.ClipVector(clip, g)
	return g, gt, nil
}

// coveredOpsList is the sorted list of covered ops, for errors and docs.
func init() { sort.Strings(coveredOps) }
