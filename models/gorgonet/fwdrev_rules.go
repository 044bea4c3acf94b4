package gorgonet

import (
	"fmt"
	"math"
	"reflect"
	"strings"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// rule is the forward-over-reverse of one op (see fwdrev.go). Node i's inputs are
// pr.nodes[i].in; e.tanOf(c) is nil where input c carries no tangent and e.adj[c]
// nil where it needs no adjoint. tangent writes node i's tangent; backward and
// backwardTangent ADD to the inputs' adjoints and adjoint tangents.
type rule interface {
	forward(e *env, pr *program, i int)
	tangent(e *env, pr *program, i int)
	backward(e *env, pr *program, i int)
	backwardTangent(e *env, pr *program, i int)
	// constOut: the output is locally constant in the inputs (comparisons, sizes):
	// it carries no tangent and passes no adjoint back.
	constOut() bool
}

// coveredOps names the Gorgonia ops with a rule (docs/architecture.md has the table).
var coveredOps = []string{
	"+", "-", "⊙ (HadamardProd, Mul by a scalar)", "÷", "<, >, <=, >=, ==, != (retSame, derivative 0; Rectify)",
	"tanh", "sigmoid", "softplus", "exp", "ln", "log1p", "expm1", "square", "sqrt", "cube", "inv", "neg", "abs",
	"A × B (Mul, transposed operands)", "A × b (matrix-vector)", "a ⋅ b (vector dot)", "a ⊗ b (outer product)",
	"Reshape", "Slice", "Concat", "Transpose", "Repeat/SizeOf (Broadcast*)", "Σ (Sum)", "MaxAlong (Max)",
	"Softmax", "LogSoftmax", "im2col (Conv2d)", "MaxPool2D (no padding)", "AveragePool2D (no padding; the true kernel mean)",
}

// isConstOp reports Gorgonia's constant ops (leaves with a value).
func isConstOp(op G.Op) bool {
	switch reflect.Indirect(reflect.ValueOf(op)).Type().Name() {
	case "constantScalar", "constantTensor":
		return true
	}
	return false
}

// opField reads an unexported integer, bool or []int field of a Gorgonia op.
func opField(op G.Op, name string) reflect.Value {
	return reflect.Indirect(reflect.ValueOf(op)).FieldByName(name)
}

func intField(op G.Op, name string) (int, error) {
	f := opField(op, name)
	if !f.IsValid() {
		return 0, fmt.Errorf("op has no field %s", name)
	}
	switch f.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return int(f.Int()), nil
	}
	return 0, fmt.Errorf("field %s is %v", name, f.Kind())
}

func intsField(op G.Op, name string) ([]int, error) {
	f := opField(op, name)
	if !f.IsValid() || f.Kind() != reflect.Slice {
		return nil, fmt.Errorf("op has no []int field %s", name)
	}
	out := make([]int, f.Len())
	for i := range out {
		out[i] = int(f.Index(i).Int())
	}
	return out, nil
}

func boolField(op G.Op, name string) (bool, error) {
	f := opField(op, name)
	if !f.IsValid() || f.Kind() != reflect.Bool {
		return false, fmt.Errorf("op has no bool field %s", name)
	}
	return f.Bool(), nil
}

// ruleOf returns the rule of op node n with program inputs in.
func ruleOf(g *G.ExprGraph, n *G.Node, pr *program, in []int) (rule, error) {
	op := n.Op()
	name := reflect.Indirect(reflect.ValueOf(op)).Type().Name()
	inShape := func(j int) []int { return pr.nodes[in[j]].shape }
	out := []int(n.Shape())
	size := func(s []int) int {
		t := 1
		for _, v := range s {
			t *= v
		}
		return t
	}
	switch name {
	case "elemUnaryOp":
		u, err := unaryOf(op.String())
		if err != nil {
			return nil, err
		}
		return u, nil
	case "elemBinOp":
		f := strings.Fields(op.String())
		if len(f) != 2 || len(in) != 2 {
			return nil, fmt.Errorf("unrecognised binary op")
		}
		na, nb, no := size(inShape(0)), size(inShape(1)), max(1, size(out))
		if (na != no && na != 1) || (nb != no && nb != 1) {
			return nil, fmt.Errorf("operand sizes %d and %d for %d outputs", na, nb, no)
		}
		switch f[0] {
		case "+", "-", "⊙", "÷":
			return binRule{op: f[0]}, nil
		case "<", ">", "<=", ">=", "==", "!=":
			if f[1] != "true" {
				return nil, fmt.Errorf("comparison with a boolean result (only retSame comparisons, as in Rectify)")
			}
			return cmpRule{op: f[0]}, nil
		}
		return nil, fmt.Errorf("no rule for elementwise %s", f[0])
	case "sizeOp":
		ax, err := intField(op, "axis")
		if err != nil {
			return nil, err
		}
		s := inShape(0)
		if ax < 0 || ax >= len(s) {
			return nil, fmt.Errorf("SizeOf axis %d of shape %v", ax, s)
		}
		return sizeRule{v: float64(s[ax])}, nil
	case "reshapeOp":
		return identRule{}, nil
	case "linAlgBinOp":
		return matmulOf(op, inShape(0), inShape(1), out)
	case "sliceOp":
		return sliceOf(op, inShape(0), out)
	case "concatOp":
		ax, err := intField(op, "axis")
		if err != nil {
			return nil, err
		}
		var shapes [][]int
		for j := range in {
			shapes = append(shapes, inShape(j))
		}
		return concatOf(ax, shapes, out)
	case "transposeOp":
		pat, err := intsField(op, "pattern")
		if err != nil {
			return nil, err
		}
		return transposeOf(pat, inShape(0), out)
	case "repeatOp":
		ax, err := intField(op, "along")
		if err != nil {
			return nil, err
		}
		return repeatOf(ax, inShape(0), out)
	case "sumOp", "maxOp":
		along, err := intsField(op, "along")
		if err != nil {
			return nil, err
		}
		return reduceOf(along, inShape(0), out, name == "maxOp")
	case "softmaxOp":
		ax, err := intField(op, "axis")
		if err != nil {
			return nil, err
		}
		isLog, err := boolField(op, "isLog")
		if err != nil {
			return nil, err
		}
		return softmaxOf(ax, isLog, inShape(0))
	case "im2colOp":
		return im2colOf(op, inShape(0), out)
	case "maxPoolOp", "avgPoolOp":
		return poolOf(op, name == "maxPoolOp", inShape(0), out)
	}
	return nil, fmt.Errorf("no rule for Gorgonia op type %s", name)
}

// ---- identity (Reshape) ----

type identRule struct{}

func (identRule) constOut() bool { return false }
func (identRule) forward(e *env, pr *program, i int) {
	copy(e.val[i], e.val[pr.nodes[i].in[0]])
}
func (identRule) tangent(e *env, pr *program, i int) {
	copy(e.tanOf(i), e.tanOf(pr.nodes[i].in[0]))
}
func (identRule) backward(e *env, pr *program, i int) {
	if d := e.adj[pr.nodes[i].in[0]]; d != nil {
		addTo(d, e.adj[i])
	}
}
func (identRule) backwardTangent(e *env, pr *program, i int) {
	if d := e.adjTOf(pr.nodes[i].in[0]); d != nil {
		addTo(d, e.adjTOf(i))
	}
}

func addTo(dst, src []float64) {
	for j, v := range src {
		dst[j] += v
	}
}

// ---- sparse linear maps (Slice, Concat, Transpose, Repeat, Sum, im2col, average
// pooling): out[o] = Σ_{e ∈ row o} w_e · in_{from_e}[src_e] ----

type linRule struct {
	start []int32 // row o is entries start[o]..start[o+1]
	from  []int32 // which input
	src   []int32
	w     []float64 // nil: all 1
	// gather: out[o] = in₀[gather[o]] (−1: 0) when every row has at most one entry,
	// of input 0, with weight 1 (Slice, Transpose, Repeat, im2col, one-input
	// Reshape-like maps); nil otherwise.
	gather []int32
}

// finish sets the gather fast path when the map allows it.
func (r *linRule) finish() *linRule {
	if r.w != nil {
		return r
	}
	no := len(r.start) - 1
	g := make([]int32, no)
	for o := 0; o < no; o++ {
		switch r.start[o+1] - r.start[o] {
		case 0:
			g[o] = -1
		case 1:
			j := r.start[o]
			if r.from[j] != 0 {
				return r
			}
			g[o] = r.src[j]
		default:
			return r
		}
	}
	r.gather = g
	return r
}

type linBuilder struct{ r linRule }

func (b *linBuilder) add(from, src int, w float64) {
	b.r.from = append(b.r.from, int32(from))
	b.r.src = append(b.r.src, int32(src))
	if b.r.w != nil || w != 1 {
		if b.r.w == nil {
			b.r.w = make([]float64, len(b.r.src)-1, cap(b.r.src))
			for j := range b.r.w {
				b.r.w[j] = 1
			}
		}
		b.r.w = append(b.r.w, w)
	}
}
func (b *linBuilder) endRow()    { b.r.start = append(b.r.start, int32(len(b.r.src))) }
func newLinBuilder() *linBuilder { return &linBuilder{r: linRule{start: []int32{0}}} }

func (r *linRule) wt(j int) float64 {
	if r.w == nil {
		return 1
	}
	return r.w[j]
}

func (*linRule) constOut() bool { return false }
func (r *linRule) forward(e *env, pr *program, i int) {
	in := pr.nodes[i].in
	y := e.val[i]
	if r.gather != nil {
		gather(r.gather, y, e.val[in[0]])
		return
	}
	for o := range y {
		var s float64
		for j := r.start[o]; j < r.start[o+1]; j++ {
			s += r.wt(int(j)) * e.val[in[r.from[j]]][r.src[j]]
		}
		y[o] = s
	}
}
func (r *linRule) tangent(e *env, pr *program, i int) {
	in := pr.nodes[i].in
	ty := e.tanOf(i)
	no := len(e.val[i])
	if r.gather != nil {
		tx := e.tanOf(in[0])
		ni := len(e.val[in[0]])
		for q := 0; q < e.k; q++ {
			gather(r.gather, ty[q*no:(q+1)*no], tx[q*ni:(q+1)*ni])
		}
		return
	}
	clear(ty)
	for q := 0; q < e.k; q++ {
		for o := 0; o < no; o++ {
			var s float64
			for j := r.start[o]; j < r.start[o+1]; j++ {
				c := in[r.from[j]]
				if t := e.tan[c]; t != nil {
					s += r.wt(int(j)) * t[q*len(e.val[c])+int(r.src[j])]
				}
			}
			ty[q*no+o] = s
		}
	}
}
func (r *linRule) backward(e *env, pr *program, i int) {
	in := pr.nodes[i].in
	dy := e.adj[i]
	if r.gather != nil {
		if d := e.adj[in[0]]; d != nil {
			scatterAdd(r.gather, d, dy)
		}
		return
	}
	for o, v := range dy {
		for j := r.start[o]; j < r.start[o+1]; j++ {
			if d := e.adj[in[r.from[j]]]; d != nil {
				d[r.src[j]] += r.wt(int(j)) * v
			}
		}
	}
}
func (r *linRule) backwardTangent(e *env, pr *program, i int) {
	in := pr.nodes[i].in
	dty := e.adjTOf(i)
	no := len(e.val[i])
	if r.gather != nil {
		d := e.adjTOf(in[0])
		if d == nil {
			return
		}
		ni := len(e.val[in[0]])
		for q := 0; q < e.k; q++ {
			scatterAdd(r.gather, d[q*ni:(q+1)*ni], dty[q*no:(q+1)*no])
		}
		return
	}
	for q := 0; q < e.k; q++ {
		for o := 0; o < no; o++ {
			v := dty[q*no+o]
			for j := r.start[o]; j < r.start[o+1]; j++ {
				c := in[r.from[j]]
				if d := e.adjT[c]; d != nil {
					d[q*len(e.val[c])+int(r.src[j])] += r.wt(int(j)) * v
				}
			}
		}
	}
}

// gather writes y[o] = x[src[o]] (0 where src[o] < 0): a linRule's gather fast path.
func gather(src []int32, y, x []float64) {
	for o, s := range src {
		if s < 0 {
			y[o] = 0
		} else {
			y[o] = x[s]
		}
	}
}

// scatterAdd is gather's adjoint: dx[src[o]] += dy[o] where src[o] ≥ 0.
func scatterAdd(src []int32, dx, dy []float64) {
	for o, s := range src {
		if s >= 0 {
			dx[s] += dy[o]
		}
	}
}

func stridesOf(s []int) []int {
	st := make([]int, len(s))
	acc := 1
	for i := len(s) - 1; i >= 0; i-- {
		st[i] = acc
		acc *= s[i]
	}
	return st
}

// forEachIndex calls f with every multi-index of shape s in row-major order.
func forEachIndex(s []int, f func(ix []int)) {
	n := 1
	for _, v := range s {
		n *= v
	}
	ix := make([]int, len(s))
	for c := 0; c < n; c++ {
		f(ix)
		for a := len(s) - 1; a >= 0; a-- {
			ix[a]++
			if ix[a] < s[a] {
				break
			}
			ix[a] = 0
		}
	}
}

func eqShape(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func sliceOf(op G.Op, in, out []int) (rule, error) {
	sl, ok := op.(interface{ IsSlice() tensor.Slice })
	if !ok {
		return nil, fmt.Errorf("slice op without IsSlice")
	}
	s := sl.IsSlice()
	if s == nil {
		if !eqShape(in, out) {
			return nil, fmt.Errorf("identity slice changes shape %v → %v", in, out)
		}
		return identRule{}, nil
	}
	ax, err := intField(op, "along")
	if err != nil {
		return nil, err
	}
	if ax < 0 || ax >= len(in) {
		return nil, fmt.Errorf("slice axis %d of shape %v", ax, in)
	}
	start, end, step := s.Start(), s.End(), s.Step()
	if end <= 0 || end > in[ax] {
		end = in[ax]
	}
	index := step == 0
	if index {
		step = 1
		end = start + 1
	}
	var oshape []int
	var count int
	for i := start; i < end; i += step {
		count++
	}
	for a, v := range in {
		switch {
		case a != ax:
			oshape = append(oshape, v)
		case !index:
			oshape = append(oshape, count)
		}
	}
	if max(1, prod(oshape)) != max(1, prod(out)) {
		return nil, fmt.Errorf("slice %d:%d:%d on axis %d of %v gives %v, the node has %v", start, end, step, ax, in, oshape, out)
	}
	st := stridesOf(in)
	b := newLinBuilder()
	full := append([]int(nil), in...)
	full[ax] = count
	forEachIndex(full, func(ix []int) {
		src := 0
		for a, v := range ix {
			if a == ax {
				v = start + v*step
			}
			src += v * st[a]
		}
		b.add(0, src, 1)
		b.endRow()
	})
	return b.r.finish(), nil
}

func prod(s []int) int {
	t := 1
	for _, v := range s {
		t *= v
	}
	return t
}

func concatOf(ax int, ins [][]int, out []int) (rule, error) {
	if ax < 0 || ax >= len(out) {
		return nil, fmt.Errorf("concat axis %d of %v", ax, out)
	}
	off := make([]int, len(ins)+1)
	for j, s := range ins {
		if len(s) != len(out) {
			return nil, fmt.Errorf("concat input %v, output %v", s, out)
		}
		off[j+1] = off[j] + s[ax]
	}
	if off[len(ins)] != out[ax] {
		return nil, fmt.Errorf("concat sizes along axis %d do not add up to %v", ax, out)
	}
	b := newLinBuilder()
	forEachIndex(out, func(ix []int) {
		j := 0
		for ix[ax] >= off[j+1] {
			j++
		}
		st := stridesOf(ins[j])
		src := 0
		for a, v := range ix {
			if a == ax {
				v -= off[j]
			}
			src += v * st[a]
		}
		b.add(j, src, 1)
		b.endRow()
	})
	return b.r.finish(), nil
}

func transposeOf(pat, in, out []int) (rule, error) {
	if len(pat) != len(in) || len(out) != len(in) {
		return nil, fmt.Errorf("transpose pattern %v of %v", pat, in)
	}
	st := stridesOf(in)
	for a, p := range pat {
		if p < 0 || p >= len(in) || out[a] != in[p] {
			return nil, fmt.Errorf("transpose pattern %v of %v gives not %v", pat, in, out)
		}
	}
	b := newLinBuilder()
	forEachIndex(out, func(ix []int) {
		src := 0
		for a, v := range ix {
			src += v * st[pat[a]]
		}
		b.add(0, src, 1)
		b.endRow()
	})
	return b.r.finish(), nil
}

// repeatOf: tensor.Repeat repeats each element along ax (in[ax] → out[ax]).
func repeatOf(ax int, in, out []int) (rule, error) {
	if len(in) == 0 { // a scalar repeated into a vector
		b := newLinBuilder()
		for o := 0; o < prod(out); o++ {
			b.add(0, 0, 1)
			b.endRow()
		}
		return b.r.finish(), nil
	}
	if len(in) != len(out) || ax < 0 || ax >= len(in) || in[ax] == 0 || out[ax]%in[ax] != 0 {
		return nil, fmt.Errorf("repeat along %d of %v into %v", ax, in, out)
	}
	reps := out[ax] / in[ax]
	st := stridesOf(in)
	b := newLinBuilder()
	forEachIndex(out, func(ix []int) {
		src := 0
		for a, v := range ix {
			if a == ax {
				v /= reps
			}
			src += v * st[a]
		}
		b.add(0, src, 1)
		b.endRow()
	})
	return b.r.finish(), nil
}

// reduceOf is Σ (or max) along the axes, which are removed from the shape.
func reduceOf(along, in, out []int, isMax bool) (rule, error) {
	red := make([]bool, len(in))
	for _, a := range along {
		if a < 0 || a >= len(in) {
			return nil, fmt.Errorf("reduction axis %d of %v", a, in)
		}
		red[a] = true
	}
	var keep []int
	for a, v := range in {
		if !red[a] {
			keep = append(keep, v)
		}
	}
	if max(1, prod(keep)) != max(1, prod(out)) {
		return nil, fmt.Errorf("reduction along %v of %v gives %v, the node has %v", along, in, keep, out)
	}
	rows := make([][]int32, max(1, prod(keep)))
	kst := stridesOf(keep)
	i := 0
	forEachIndex(in, func(ix []int) {
		o, k := 0, 0
		for a, v := range ix {
			if !red[a] {
				o += v * kst[k]
				k++
			}
		}
		rows[o] = append(rows[o], int32(i))
		i++
	})
	b := newLinBuilder()
	for _, r := range rows {
		for _, s := range r {
			b.add(0, int(s), 1)
		}
		b.endRow()
	}
	if isMax {
		return &selRule{lin: b.r}, nil
	}
	return b.r.finish(), nil
}

// ---- selections (Max, MaxPool2D): out[o] = in[argmax over row o's candidates],
// the first maximum; piecewise linear, so no second-order term ----

type selRule struct{ lin linRule }

func (*selRule) constOut() bool { return false }
func (r *selRule) forward(e *env, pr *program, i int) {
	x := e.val[pr.nodes[i].in[0]]
	y := e.val[i]
	if len(e.idx[i]) != len(y) {
		e.idx[i] = make([]int, len(y))
	}
	for o := range y {
		best, arg := math.Inf(-1), -1
		for j := r.lin.start[o]; j < r.lin.start[o+1]; j++ {
			if v := x[r.lin.src[j]]; v > best || arg < 0 {
				best, arg = v, int(r.lin.src[j])
			}
		}
		y[o], e.idx[i][o] = best, arg
	}
}
func (r *selRule) tangent(e *env, pr *program, i int) {
	c := pr.nodes[i].in[0]
	tx, ty := e.tanOf(c), e.tanOf(i)
	ni, no := len(e.val[c]), len(e.val[i])
	for q := 0; q < e.k; q++ {
		for o, s := range e.idx[i] {
			ty[q*no+o] = tx[q*ni+s]
		}
	}
}
func (r *selRule) backward(e *env, pr *program, i int) {
	d := e.adj[pr.nodes[i].in[0]]
	if d == nil {
		return
	}
	for o, s := range e.idx[i] {
		d[s] += e.adj[i][o]
	}
}
func (r *selRule) backwardTangent(e *env, pr *program, i int) {
	c := pr.nodes[i].in[0]
	d := e.adjTOf(c)
	if d == nil {
		return
	}
	dt := e.adjTOf(i)
	ni, no := len(e.val[c]), len(e.val[i])
	for q := 0; q < e.k; q++ {
		for o, s := range e.idx[i] {
			d[q*ni+s] += dt[q*no+o]
		}
	}
}

// ---- convolution patches and pooling ----

func im2colOf(op G.Op, in, out []int) (rule, error) {
	var p [8]int
	for j, f := range []string{"h", "w", "padH", "padW", "strideH", "strideW", "dilationH", "dilationW"} {
		v, err := intField(op, f)
		if err != nil {
			return nil, err
		}
		p[j] = v
	}
	kh, kw, ph, pw, sh, sw, dh, dw := p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7]
	if len(in) != 4 || len(out) != 4 {
		return nil, fmt.Errorf("im2col of %v (want (B, C, H, W))", in)
	}
	B, C, H, W := in[0], in[1], in[2], in[3]
	oh, ow := out[1], out[2]
	if out[0] != B || out[3] != C*kh*kw || oh != (H+2*ph-(dh*(kh-1)+1))/sh+1 || ow != (W+2*pw-(dw*(kw-1)+1))/sw+1 {
		return nil, fmt.Errorf("im2col output %v for input %v", out, in)
	}
	b := newLinBuilder()
	for bi := 0; bi < B; bi++ {
		for r := 0; r < oh; r++ {
			for c := 0; c < ow; c++ {
				for ch := 0; ch < C; ch++ {
					for i := 0; i < kh; i++ {
						for j := 0; j < kw; j++ {
							y, x := -ph+i*dh+r*sh, -pw+j*dw+c*sw
							if y >= 0 && y < H && x >= 0 && x < W {
								b.add(0, ((bi*C+ch)*H+y)*W+x, 1)
							}
							b.endRow()
						}
					}
				}
			}
		}
	}
	return b.r.finish(), nil
}

func poolOf(op G.Op, isMax bool, in, out []int) (rule, error) {
	var p [8]int
	for j, f := range []string{"h", "w", "padNorth", "padSouth", "padWest", "padEast", "strideH", "strideW"} {
		v, err := intField(op, f)
		if err != nil {
			return nil, err
		}
		p[j] = v
	}
	kh, kw, sh, sw := p[0], p[1], p[6], p[7]
	if p[2] != 0 || p[3] != 0 || p[4] != 0 || p[5] != 0 {
		return nil, fmt.Errorf("pooling with padding (pad the input with Concat of zeros instead)")
	}
	if len(in) != 4 || len(out) != 4 {
		return nil, fmt.Errorf("pooling of %v", in)
	}
	B, C, H, W := in[0], in[1], in[2], in[3]
	oh, ow := (H-kh)/sh+1, (W-kw)/sw+1
	if out[0] != B || out[1] != C || out[2] != oh || out[3] != ow {
		return nil, fmt.Errorf("pooling %dx%d stride %d,%d of %v gives (%d, %d, %d, %d), the node has %v", kh, kw, sh, sw, in, B, C, oh, ow, out)
	}
	b := newLinBuilder()
	w := 1 / float64(kh*kw)
	if isMax {
		w = 1
	}
	for bc := 0; bc < B*C; bc++ {
		for r := 0; r < oh; r++ {
			for c := 0; c < ow; c++ {
				for i := 0; i < kh; i++ {
					for j := 0; j < kw; j++ {
						b.add(0, (bc*H+r*sh+i)*W+c*sw+j, w)
					}
				}
				b.endRow()
			}
		}
	}
	if isMax {
		return &selRule{lin: b.r}, nil
	}
	return b.r.finish(), nil
}

// ---- sizes and comparisons: locally constant ----

type sizeRule struct{ v float64 }

func (sizeRule) constOut() bool                      { return true }
func (r sizeRule) forward(e *env, _ *program, i int) { e.val[i][0] = r.v }
func (sizeRule) tangent(*env, *program, int)         {}
func (sizeRule) backward(*env, *program, int)        {}
func (sizeRule) backwardTangent(*env, *program, int) {}
func (cmpRule) constOut() bool                       { return true }
func (cmpRule) tangent(*env, *program, int)          {}
func (cmpRule) backward(*env, *program, int)         {}
func (cmpRule) backwardTangent(*env, *program, int)  {}
func bcast(v []float64, i int) float64               { return v[i%len(v)] } // len 1 or n
func (r cmpRule) forward(e *env, pr *program, i int) {
	in := pr.nodes[i].in
	a, b := e.val[in[0]], e.val[in[1]]
	for o := range e.val[i] {
		x, y := bcast(a, o), bcast(b, o)
		var t bool
		switch r.op {
		case "<":
			t = x < y
		case ">":
			t = x > y
		case "<=":
			t = x <= y
		case ">=":
			t = x >= y
		case "==":
			t = x == y
		case "!=":
			t = x != y
		}
		e.val[i][o] = 0
		if t {
			e.val[i][o] = 1
		}
	}
}

type cmpRule struct{ op string }

// ---- elementwise binary arithmetic (same shapes, or a scalar operand) ----

type binRule struct{ op string }

func (binRule) constOut() bool { return false }
func (r binRule) forward(e *env, pr *program, i int) {
	in := pr.nodes[i].in
	a, b, y := e.val[in[0]], e.val[in[1]], e.val[i]
	for o := range y {
		x, z := bcast(a, o), bcast(b, o)
		switch r.op {
		case "+":
			y[o] = x + z
		case "-":
			y[o] = x - z
		case "⊙":
			y[o] = x * z
		case "÷":
			y[o] = x / z
		}
	}
}

// tangentAt returns input c's tangent value for direction q at output o (0 if none).
func tangentAt(e *env, c, q, o int) float64 {
	t := e.tan[c]
	if t == nil {
		return 0
	}
	n := len(e.val[c])
	return t[q*n+o%n]
}

func (r binRule) tangent(e *env, pr *program, i int) {
	in := pr.nodes[i].in
	a, b := e.val[in[0]], e.val[in[1]]
	ty := e.tanOf(i)
	no := len(e.val[i])
	for q := 0; q < e.k; q++ {
		for o := 0; o < no; o++ {
			ta, tb := tangentAt(e, in[0], q, o), tangentAt(e, in[1], q, o)
			x, z := bcast(a, o), bcast(b, o)
			var v float64
			switch r.op {
			case "+":
				v = ta + tb
			case "-":
				v = ta - tb
			case "⊙":
				v = ta*z + x*tb
			case "÷":
				v = ta/z - x*tb/(z*z)
			}
			ty[q*no+o] = v
		}
	}
}

// partials returns ∂y/∂a and ∂y/∂b at output o.
func (r binRule) partials(x, z float64) (pa, pb float64) {
	switch r.op {
	case "+":
		return 1, 1
	case "-":
		return 1, -1
	case "⊙":
		return z, x
	default: // ÷
		return 1 / z, -x / (z * z)
	}
}

func (r binRule) backward(e *env, pr *program, i int) {
	in := pr.nodes[i].in
	a, b, dy := e.val[in[0]], e.val[in[1]], e.adj[i]
	da, db := e.adj[in[0]], e.adj[in[1]]
	for o, d := range dy {
		pa, pb := r.partials(bcast(a, o), bcast(b, o))
		if da != nil {
			da[o%len(da)] += pa * d
		}
		if db != nil {
			db[o%len(db)] += pb * d
		}
	}
}

// backwardTangent: δ̇a += ∂y/∂a·δ̇y + (d/dε ∂y/∂a)·δy, likewise for b.
func (r binRule) backwardTangent(e *env, pr *program, i int) {
	in := pr.nodes[i].in
	a, b, dy := e.val[in[0]], e.val[in[1]], e.adj[i]
	dta, dtb := e.adjTOf(in[0]), e.adjTOf(in[1])
	dty := e.adjTOf(i)
	no := len(dy)
	na, nb := len(a), len(b)
	for q := 0; q < e.k; q++ {
		for o := 0; o < no; o++ {
			x, z := bcast(a, o), bcast(b, o)
			pa, pb := r.partials(x, z)
			d, dt := dy[o], dty[q*no+o]
			ta, tb := tangentAt(e, in[0], q, o), tangentAt(e, in[1], q, o)
			var ppa, ppb float64 // tangents of the partials
			switch r.op {
			case "⊙":
				ppa, ppb = tb, ta
			case "÷":
				ppa = -tb / (z * z)
				ppb = -ta/(z*z) + 2*x*tb/(z*z*z)
			}
			if dta != nil {
				dta[q*na+o%na] += pa*dt + ppa*d
			}
			if dtb != nil {
				dtb[q*nb+o%nb] += pb*dt + ppb*d
			}
		}
	}
}

// ---- elementwise unary functions: y = f(x), f′ and f″ from x and y ----

type unaryRule struct {
	name string
	f    func(x float64) float64
	d    func(x, y float64) (d1, d2 float64)
}

func sigmoid(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}

func softplus(x float64) float64 {
	if x > 0 {
		return x + math.Log1p(math.Exp(-x))
	}
	return math.Log1p(math.Exp(x))
}

var unaryRules = map[string]unaryRule{
	"tanh":     {f: math.Tanh, d: func(_, y float64) (float64, float64) { return 1 - y*y, -2 * y * (1 - y*y) }},
	"sigmoid":  {f: sigmoid, d: func(_, y float64) (float64, float64) { return y * (1 - y), y * (1 - y) * (1 - 2*y) }},
	"softplus": {f: softplus, d: func(x, _ float64) (float64, float64) { s := sigmoid(x); return s, s * (1 - s) }},
	"exp":      {f: math.Exp, d: func(_, y float64) (float64, float64) { return y, y }},
	"ln":       {f: math.Log, d: func(x, _ float64) (float64, float64) { return 1 / x, -1 / (x * x) }},
	"log1p":    {f: math.Log1p, d: func(x, _ float64) (float64, float64) { return 1 / (1 + x), -1 / ((1 + x) * (1 + x)) }},
	"expm1":    {f: math.Expm1, d: func(x, _ float64) (float64, float64) { e := math.Exp(x); return e, e }},
	"square":   {f: func(x float64) float64 { return x * x }, d: func(x, _ float64) (float64, float64) { return 2 * x, 2 }},
	"sqrt":     {f: math.Sqrt, d: func(_, y float64) (float64, float64) { return 0.5 / y, -0.25 / (y * y * y) }},
	"cube":     {f: func(x float64) float64 { return x * x * x }, d: func(x, _ float64) (float64, float64) { return 3 * x * x, 6 * x }},
	"inv":      {f: func(x float64) float64 { return 1 / x }, d: func(_, y float64) (float64, float64) { return -y * y, 2 * y * y * y }},
	"neg":      {f: func(x float64) float64 { return -x }, d: func(_, _ float64) (float64, float64) { return -1, 0 }},
	"abs": {f: math.Abs, d: func(x, _ float64) (float64, float64) {
		if x < 0 {
			return -1, 0
		}
		return 1, 0
	}},
}

func unaryOf(s string) (rule, error) {
	u, ok := unaryRules[s]
	if !ok {
		return nil, fmt.Errorf("no rule for elementwise %s", s)
	}
	u.name = s
	return u, nil
}

func (unaryRule) constOut() bool { return false }
func (u unaryRule) forward(e *env, pr *program, i int) {
	x := e.val[pr.nodes[i].in[0]]
	for o, v := range x {
		e.val[i][o] = u.f(v)
	}
}
func (u unaryRule) tangent(e *env, pr *program, i int) {
	c := pr.nodes[i].in[0]
	x, y, tx, ty := e.val[c], e.val[i], e.tanOf(c), e.tanOf(i)
	n := len(x)
	for o := range x {
		d1, _ := u.d(x[o], y[o])
		for q := 0; q < e.k; q++ {
			ty[q*n+o] = d1 * tx[q*n+o]
		}
	}
}
func (u unaryRule) backward(e *env, pr *program, i int) {
	c := pr.nodes[i].in[0]
	dx := e.adj[c]
	if dx == nil {
		return
	}
	x, y := e.val[c], e.val[i]
	for o, d := range e.adj[i] {
		d1, _ := u.d(x[o], y[o])
		dx[o] += d1 * d
	}
}
func (u unaryRule) backwardTangent(e *env, pr *program, i int) {
	c := pr.nodes[i].in[0]
	dtx := e.adjTOf(c)
	if dtx == nil {
		return
	}
	x, y, tx, dy, dty := e.val[c], e.val[i], e.tanOf(c), e.adj[i], e.adjTOf(i)
	n := len(x)
	for o := range x {
		d1, d2 := u.d(x[o], y[o])
		for q := 0; q < e.k; q++ {
			v := d1 * dty[q*n+o]
			if tx != nil {
				v += d2 * tx[q*n+o] * dy[o]
			}
			dtx[q*n+o] += v
		}
	}
}

// ---- softmax and log-softmax along one axis ----

type softmaxRule struct {
	outer, n, inner int
	log             bool
}

func softmaxOf(axis int, isLog bool, in []int) (rule, error) {
	d := len(in)
	ax := d - 1
	if d == 1 || d == 2 && in[1] == 1 {
		ax = 0
	}
	if axis != -1 {
		ax = axis
	}
	if d == 0 || ax < 0 || ax >= d {
		return nil, fmt.Errorf("softmax axis %d of %v", axis, in)
	}
	return softmaxRule{outer: prod(in[:ax]), n: in[ax], inner: prod(in[ax+1:]), log: isLog}, nil
}

func (softmaxRule) constOut() bool { return false }

// each calls f with the flat indices of every softmax group.
func (r softmaxRule) each(f func(ix func(j int) int)) {
	for a := 0; a < r.outer; a++ {
		for b := 0; b < r.inner; b++ {
			base := a*r.n*r.inner + b
			f(func(j int) int { return base + j*r.inner })
		}
	}
}

func (r softmaxRule) forward(e *env, pr *program, i int) {
	x, y := e.val[pr.nodes[i].in[0]], e.val[i]
	r.each(func(ix func(int) int) {
		m := math.Inf(-1)
		for j := 0; j < r.n; j++ {
			m = math.Max(m, x[ix(j)])
		}
		var s float64
		for j := 0; j < r.n; j++ {
			s += math.Exp(x[ix(j)] - m)
		}
		lse := m + math.Log(s)
		for j := 0; j < r.n; j++ {
			if r.log {
				y[ix(j)] = x[ix(j)] - lse
			} else {
				y[ix(j)] = math.Exp(x[ix(j)] - lse)
			}
		}
	})
}

// prob is the softmax probability at flat index p.
func (r softmaxRule) prob(y []float64, p int) float64 {
	if r.log {
		return math.Exp(y[p])
	}
	return y[p]
}

// tangent: softmax ṡ = s⊙(ẋ − ⟨s, ẋ⟩); log-softmax l̇ = ẋ − ⟨s, ẋ⟩.
func (r softmaxRule) tangent(e *env, pr *program, i int) {
	c := pr.nodes[i].in[0]
	y, tx, ty := e.val[i], e.tanOf(c), e.tanOf(i)
	n := len(y)
	for q := 0; q < e.k; q++ {
		r.each(func(ix func(int) int) {
			var m float64
			for j := 0; j < r.n; j++ {
				m += r.prob(y, ix(j)) * tx[q*n+ix(j)]
			}
			for j := 0; j < r.n; j++ {
				p := ix(j)
				if r.log {
					ty[q*n+p] = tx[q*n+p] - m
				} else {
					ty[q*n+p] = y[p] * (tx[q*n+p] - m)
				}
			}
		})
	}
}

// backward: softmax δx = s⊙(δs − ⟨s, δs⟩); log-softmax δx = δl − s·Σδl.
func (r softmaxRule) backward(e *env, pr *program, i int) {
	c := pr.nodes[i].in[0]
	dx := e.adj[c]
	if dx == nil {
		return
	}
	y, dy := e.val[i], e.adj[i]
	r.each(func(ix func(int) int) {
		var m float64
		for j := 0; j < r.n; j++ {
			if r.log {
				m += dy[ix(j)]
			} else {
				m += y[ix(j)] * dy[ix(j)]
			}
		}
		for j := 0; j < r.n; j++ {
			p := ix(j)
			if r.log {
				dx[p] += dy[p] - r.prob(y, p)*m
			} else {
				dx[p] += y[p] * (dy[p] - m)
			}
		}
	})
}

// backwardTangent differentiates backward along the direction: with ṡ the
// probabilities' tangent, softmax δ̇x = ṡ⊙(δs − ⟨s,δs⟩) + s⊙(δ̇s − ⟨ṡ,δs⟩ − ⟨s,δ̇s⟩);
// log-softmax δ̇x = δ̇l − ṡ·Σδl − s·Σδ̇l.
func (r softmaxRule) backwardTangent(e *env, pr *program, i int) {
	c := pr.nodes[i].in[0]
	dtx := e.adjTOf(c)
	if dtx == nil {
		return
	}
	y, dy, dty, ty := e.val[i], e.adj[i], e.adjTOf(i), e.tanOf(i)
	n := len(y)
	for q := 0; q < e.k; q++ {
		r.each(func(ix func(int) int) {
			// ṡ at p: softmax: ty; log-softmax: s·l̇. Zero when no tangent.
			sdot := func(p int) float64 {
				if ty == nil {
					return 0
				}
				if r.log {
					return r.prob(y, p) * ty[q*n+p]
				}
				return ty[q*n+p]
			}
			if r.log {
				var m, mt float64
				for j := 0; j < r.n; j++ {
					m += dy[ix(j)]
					mt += dty[q*n+ix(j)]
				}
				for j := 0; j < r.n; j++ {
					p := ix(j)
					dtx[q*n+p] += dty[q*n+p] - sdot(p)*m - r.prob(y, p)*mt
				}
				return
			}
			var m, ms, mt float64
			for j := 0; j < r.n; j++ {
				p := ix(j)
				m += y[p] * dy[p]
				ms += sdot(p) * dy[p]
				mt += y[p] * dty[q*n+p]
			}
			for j := 0; j < r.n; j++ {
				p := ix(j)
				dtx[q*n+p] += sdot(p)*(dy[p]-m) + y[p]*(dty[q*n+p]-ms-mt)
			}
		})
	}
}

// ---- matrix products: C = op(A)·op(B), op = identity or transpose ----

type mmRule struct {
	m, p, n  int // op(A) m×p, op(B) p×n
	lda, ldb int // stored row lengths of A and B
	tA, tB   bool
}

func matmulOf(op G.Op, a, b, out []int) (rule, error) {
	kind := opField(op, "āBinaryOperator")
	if !kind.IsValid() {
		return nil, fmt.Errorf("linear-algebra op without an operator")
	}
	tA, err := boolField(op, "transA")
	if err != nil {
		return nil, err
	}
	tB, err := boolField(op, "transB")
	if err != nil {
		return nil, err
	}
	r := mmRule{tA: tA, tB: tB}
	mat := func(s []int) (int, int, error) {
		if len(s) != 2 {
			return 0, 0, fmt.Errorf("operand shape %v is not a matrix", s)
		}
		return s[0], s[1], nil
	}
	switch kind.Uint() {
	case 0: // matMulOperator
		ar, ac, err := mat(a)
		if err != nil {
			return nil, err
		}
		br, bc, err := mat(b)
		if err != nil {
			return nil, err
		}
		r.lda, r.ldb = ac, bc
		r.m, r.p = ar, ac
		if tA {
			r.m, r.p = ac, ar
		}
		r.n = bc
		if tB {
			r.n = br
		}
	case 1: // matVecMulOperator: A (matrix) × b (vector)
		ar, ac, err := mat(a)
		if err != nil {
			return nil, err
		}
		r.lda, r.ldb = ac, 1
		r.m, r.p, r.n = ar, ac, 1
		if tA {
			r.m, r.p = ac, ar
		}
		r.tB = false
	case 2: // vecDotOperator: a ⋅ b
		r.m, r.p, r.n = 1, prod(a), 1
		r.lda, r.ldb, r.tA, r.tB = r.p, 1, false, false
		if prod(b) != r.p {
			return nil, fmt.Errorf("dot of %v and %v", a, b)
		}
	case 3: // outerProdOperator: a ⊗ b
		r.m, r.p, r.n = prod(a), 1, prod(b)
		r.lda, r.ldb, r.tA, r.tB = 1, r.n, false, false
	default:
		return nil, fmt.Errorf("no rule for batched matrix products")
	}
	if max(1, prod(out)) != r.m*r.n {
		return nil, fmt.Errorf("product %dx%d · %dx%d, the node has %v", r.m, r.p, r.p, r.n, out)
	}
	return r, nil
}

// mul adds op(A)·op(B) to C (m×n, row length n).
func (r mmRule) mul(A, B, C []float64) { r.mulS(A, B, C, false) }

// gemmD is gemmS with a sparsity flag.
func gemmD(sparse, tA, tB bool, m, n, p int, A []float64, lda int, B []float64, ldb int, C []float64, ldc int) {
	gemmS(sparse, false, tA, tB, m, n, p, A, lda, B, ldb, C, ldc)
}

// mulS is mul, skipping zeros when sparse (tangent operands).
func (r mmRule) mulS(A, B, C []float64, sparse bool) {
	gemmD(sparse, r.tA, r.tB, r.m, r.n, r.p, A, r.lda, B, r.ldb, C, r.n)
}

// gradA adds the adjoint of A for output adjoint D to dA (stored like A).
func (r mmRule) gradA(D, B, dA []float64) { r.gradAS(D, B, dA, false) }

func (r mmRule) gradAS(D, B, dA []float64, sparse bool) {
	if !r.tA { // dA (m×p) += D·op(B)ᵀ
		gemmD(sparse, false, !r.tB, r.m, r.p, r.n, D, r.n, B, r.ldb, dA, r.lda)
	} else { // dA (p×m) += op(B)·Dᵀ
		gemmD(sparse, r.tB, true, r.p, r.m, r.n, B, r.ldb, D, r.n, dA, r.lda)
	}
}

// gradB adds the adjoint of B for output adjoint D to dB (stored like B).
func (r mmRule) gradB(A, D, dB []float64) { r.gradBS(A, D, dB, false) }

func (r mmRule) gradBS(A, D, dB []float64, sparse bool) {
	if !r.tB { // dB (p×n) += op(A)ᵀ·D
		gemmD(sparse, !r.tA, false, r.p, r.n, r.m, A, r.lda, D, r.n, dB, r.ldb)
	} else { // dB (n×p) += Dᵀ·op(A)
		gemmD(sparse, true, r.tA, r.n, r.p, r.m, D, r.n, A, r.lda, dB, r.ldb)
	}
}

func (mmRule) constOut() bool { return false }
func (r mmRule) forward(e *env, pr *program, i int) {
	in := pr.nodes[i].in
	clear(e.val[i])
	r.mul(e.val[in[0]], e.val[in[1]], e.val[i])
}
func (r mmRule) tangent(e *env, pr *program, i int) {
	in := pr.nodes[i].in
	A, B := e.val[in[0]], e.val[in[1]]
	tA, tB, tC := e.tanOf(in[0]), e.tanOf(in[1]), e.tanOf(i)
	clear(tC)
	na, nb, nc := len(A), len(B), r.m*r.n
	if tA != nil && !r.tA { // all directions in one product: (k·m × p)·op(B)
		gemm(false, r.tB, e.k*r.m, r.n, r.p, tA, r.lda, B, r.ldb, tC, r.n)
		tA = nil
	}
	if tB != nil && r.n == 1 { // op(B) is a column: Ċ (k × m) = Ḃ (k × p)·op(A)ᵀ
		gemm(false, !r.tA, e.k, r.m, r.p, tB, r.p, A, r.lda, tC, r.m)
		tB = nil
	}
	for q := 0; q < e.k; q++ {
		if tA != nil {
			r.mulS(tA[q*na:(q+1)*na], B, tC[q*nc:(q+1)*nc], true)
		}
		if tB != nil {
			r.mulS(A, tB[q*nb:(q+1)*nb], tC[q*nc:(q+1)*nc], true)
		}
	}
}
func (r mmRule) backward(e *env, pr *program, i int) {
	in := pr.nodes[i].in
	A, B, D := e.val[in[0]], e.val[in[1]], e.adj[i]
	if dA := e.adj[in[0]]; dA != nil {
		r.gradA(D, B, dA)
	}
	if dB := e.adj[in[1]]; dB != nil {
		r.gradB(A, D, dB)
	}
}
func (r mmRule) backwardTangent(e *env, pr *program, i int) {
	in := pr.nodes[i].in
	A, B, D := e.val[in[0]], e.val[in[1]], e.adj[i]
	tA, tB, dtC := e.tanOf(in[0]), e.tanOf(in[1]), e.adjTOf(i)
	dtA, dtB := e.adjTOf(in[0]), e.adjTOf(in[1])
	na, nb, nc := len(A), len(B), r.m*r.n
	// The first contribution to an input whose only consumer is this product
	// overwrites its adjoint tangent (tangents() did not clear it).
	owA, owB := pr.nodes[in[0]].ownAdjT, pr.nodes[in[1]].ownAdjT
	if dtA != nil {
		if !r.tA { // all directions at once: (k·m × n)·op(B)ᵀ
			gemmS(false, owA, false, !r.tB, e.k*r.m, r.p, r.n, dtC, r.n, B, r.ldb, dtA, r.lda)
		}
		for q := 0; q < e.k; q++ {
			if r.tA { // dA (p×m) += op(B)·Dᵀ
				gemmS(false, owA, r.tB, true, r.p, r.m, r.n, B, r.ldb, dtC[q*nc:(q+1)*nc], r.n, dtA[q*na:(q+1)*na], r.lda)
			}
			if tB != nil {
				r.gradAS(D, tB[q*nb:(q+1)*nb], dtA[q*na:(q+1)*na], true)
			}
		}
	}
	if dtB != nil {
		stacked := r.n == 1
		if stacked { // op(B) is a column: δ̇B (k × p) += δ̇C (k × m)·op(A)
			gemmS(false, owB, false, r.tA, e.k, r.p, r.m, dtC, r.m, A, r.lda, dtB, r.p)
		}
		for q := 0; q < e.k; q++ {
			if !stacked {
				dc, db := dtC[q*nc:(q+1)*nc], dtB[q*nb:(q+1)*nb]
				if !r.tB { // dB (p×n) += op(A)ᵀ·D
					gemmS(false, owB, !r.tA, false, r.p, r.n, r.m, A, r.lda, dc, r.n, db, r.ldb)
				} else { // dB (n×p) += Dᵀ·op(A)
					gemmS(false, owB, true, r.tA, r.n, r.p, r.m, dc, r.n, A, r.lda, db, r.ldb)
				}
			}
			if tA != nil {
				r.gradBS(tA[q*na:(q+1)*na], D, dtB[q*nb:(q+1)*nb], true)
			}
		}
	}
}
