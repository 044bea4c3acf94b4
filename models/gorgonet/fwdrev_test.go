package gorgonet

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/dpfil/dpfil/models"
)

// gb builds a one-sample test graph: an input of shape xs, parameters made by
// param, a body, then flatten → dense(K) → softmax cross-entropy (or the case's
// own loss).
type gb struct {
	t      testing.TB
	g      *G.ExprGraph
	x, y   *G.Node
	params []*G.Node
}

func (b *gb) param(name string, shape ...int) *G.Node {
	n := G.NewTensor(b.g, G.Float64, len(shape), G.WithShape(shape...), G.WithName(name))
	b.params = append(b.params, n)
	return n
}

func (b *gb) must(n *G.Node, err error) *G.Node {
	b.t.Helper()
	if err != nil {
		b.t.Fatal(err)
	}
	return n
}

func (b *gb) konst(name string, v float64) *G.Node {
	return b.g.AddNode(G.NewConstant(v, G.WithName(name)))
}

// dense is h (any shape) flattened to (1, F), times W (F, out), plus b (1, out).
func (b *gb) dense(name string, h *G.Node, out int) *G.Node {
	F := h.Shape().TotalSize()
	if h.Dims() != 2 || h.Shape()[0] != 1 {
		h = b.must(G.Reshape(h, tensor.Shape{1, F}))
	}
	w := b.param(name+".W", F, out)
	bb := b.param(name+".b", 1, out)
	return b.must(G.Add(b.must(G.Mul(h, w)), bb))
}

type opCase struct {
	name string
	xs   []int // input node shape
	body func(b *gb, x *G.Node) *G.Node
	loss func(b *gb, z, y *G.Node) *G.Node // nil: CrossEntropy
	// gorgoniaWrong: Gorgonia's own forward or gradient is wrong for an op of the
	// case (AveragePool2D), so it is not used as a reference there.
	gorgoniaWrong bool
}

const testK = 3

func (c opCase) spec(t testing.TB) GraphSpec {
	t.Helper()
	b := &gb{t: t, g: G.NewGraph()}
	b.x = G.NewTensor(b.g, G.Float64, len(c.xs), G.WithShape(c.xs...), G.WithName("x"))
	b.y = G.NewMatrix(b.g, G.Float64, G.WithShape(1, testK), G.WithName("y"))
	h := c.body(b, b.x)
	z := b.dense("out", h, testK)
	var loss *G.Node
	if c.loss != nil {
		loss = c.loss(b, z, b.y)
	} else {
		var err error
		if loss, err = CrossEntropy(z, b.y); err != nil {
			t.Fatal(err)
		}
	}
	D := 1
	for _, v := range c.xs {
		D *= v
	}
	in := models.Shape{C: 1, H: 1, W: D}
	if len(c.xs) == 4 {
		in = models.Shape{C: c.xs[1], H: c.xs[2], W: c.xs[3]}
	}
	return GraphSpec{Name: c.name, Graph: b.g, Input: b.x, InputShape: in, Label: b.y, Classes: testK,
		Logits: z, Loss: loss, Params: b.params}
}

// affine is x·W + b for a (1, D) input.
func (b *gb) affine(name string, x *G.Node, out int) *G.Node { return b.dense(name, x, out) }

func unaryCase(name string, f func(*G.Node) (*G.Node, error), positive bool) opCase {
	return opCase{name: name, xs: []int{1, 5}, body: func(b *gb, x *G.Node) *G.Node {
		a := b.affine("l1", x, 4)
		if positive {
			a = b.must(G.Exp(a))
		}
		return b.must(f(a))
	}}
}

func eluOf(x *G.Node) (*G.Node, error) { // relu(x) + expm1(x − relu(x)), as models/oracle
	r, err := G.Rectify(x)
	if err != nil {
		return nil, err
	}
	neg, err := G.Sub(x, r)
	if err != nil {
		return nil, err
	}
	e, err := G.Expm1(neg)
	if err != nil {
		return nil, err
	}
	return G.Add(r, e)
}

func convBias(b *gb, name string, x *G.Node, out, k, stride, pad int) *G.Node {
	C := x.Shape()[1]
	w := b.param(name+".W", out, C, k, k)
	c := b.must(G.Conv2d(x, w, tensor.Shape{k, k}, []int{pad, pad}, []int{stride, stride}, []int{1, 1}))
	bias := b.param(name+".b", 1, out, 1, 1)
	return b.must(G.BroadcastAdd(c, bias, nil, []byte{0, 2, 3}))
}

// opCases: every covered op alone (behind one affine or conv layer so that it
// sees parameters and the input) and composed.
func opCases() []opCase {
	cs := []opCase{
		{name: "matmul-add", xs: []int{1, 5}, body: func(b *gb, x *G.Node) *G.Node { return b.affine("l1", x, 4) }},
		{name: "matvec-transposed", xs: []int{5}, body: func(b *gb, x *G.Node) *G.Node {
			w := b.param("W", 4, 5)
			v := b.param("V", 5, 3)
			a := b.must(G.Tanh(b.must(G.Mul(w, x))))    // W·x
			c := b.must(G.Sigmoid(b.must(G.Mul(x, v)))) // Vᵀ·x
			return b.must(G.Concat(0, a, c))
		}},
		// Gorgonia's own gradient of OuterProd fails to run (a shape mismatch in its
		// backward), so only the finite differences of the program are the reference.
		{name: "dot-outer", xs: []int{5}, gorgoniaWrong: true, body: func(b *gb, x *G.Node) *G.Node {
			v := b.param("v", 5)
			u := b.param("u", 3)
			s := b.must(G.Mul(x, v)) // scalar x⋅v
			o := b.must(G.OuterProd(b.must(G.Tanh(x)), u))
			return b.must(G.Add(o, b.must(G.Square(s))))
		}},
		{name: "elementwise-arith", xs: []int{1, 5}, body: func(b *gb, x *G.Node) *G.Node {
			a := b.affine("l1", x, 4)
			c := b.affine("l2", x, 4)
			p := b.must(G.HadamardProd(a, c))
			q := b.must(G.HadamardDiv(a, b.must(G.Add(b.must(G.Square(c)), b.konst("two", 2)))))
			r := b.must(G.Sub(p, q))
			return b.must(G.Mul(r, b.konst("half", 0.5)))
		}},
		{name: "broadcast", xs: []int{1, 6}, body: func(b *gb, x *G.Node) *G.Node {
			a := b.must(G.Reshape(b.affine("l1", x, 6), tensor.Shape{2, 3}))
			row := b.param("row", 1, 3)
			col := b.param("col", 2, 1)
			s := b.must(G.BroadcastHadamardProd(a, row, nil, []byte{0}))
			return b.must(G.Tanh(b.must(G.BroadcastSub(s, col, nil, []byte{1}))))
		}},
		unaryCase("tanh", G.Tanh, false),
		unaryCase("sigmoid", G.Sigmoid, false),
		unaryCase("softplus", G.Softplus, false),
		unaryCase("relu", G.Rectify, false),
		unaryCase("elu", eluOf, false),
		unaryCase("exp", G.Exp, false),
		unaryCase("log", G.Log, true),
		unaryCase("square", G.Square, false),
		unaryCase("sqrt", G.Sqrt, true),
		unaryCase("cube", G.Cube, false),
		unaryCase("inverse", G.Inverse, true),
		unaryCase("neg", G.Neg, false),
		unaryCase("abs", G.Abs, false),
		unaryCase("expm1", G.Expm1, false),
		unaryCase("log1p", G.Log1p, true),
		{name: "reshape-slice-concat", xs: []int{1, 5}, body: func(b *gb, x *G.Node) *G.Node {
			r := b.must(G.Reshape(b.must(G.Tanh(b.affine("l1", x, 6))), tensor.Shape{2, 3}))
			s1 := b.must(G.Slice(r, G.S(0)))               // (3)
			s2 := b.must(G.Slice(r, nil, G.S(1, 3)))       // (2, 2)
			s3 := b.must(G.Slice(x, nil, G.S(0, 4, 2)))    // (1, 2), a step of 2 on the input
			s1 = b.must(G.Reshape(s1, tensor.Shape{1, 3})) // (1, 3)
			s2 = b.must(G.Reshape(s2, tensor.Shape{1, 4}))
			return b.must(G.Concat(1, s1, s2, b.must(G.Square(s3))))
		}},
		{name: "sum-mean-max", xs: []int{1, 5}, body: func(b *gb, x *G.Node) *G.Node {
			r := b.must(G.Reshape(b.must(G.Tanh(b.affine("l1", x, 6))), tensor.Shape{2, 3}))
			s := b.must(G.Sum(r, 1))                               // (2)
			m := b.must(G.Mean(b.must(G.Square(r))))               // scalar
			mx := b.must(G.Max(r, 0))                              // (3)
			h := b.must(G.Concat(0, b.must(G.Add(s, m)), mx))      // (5)
			return b.must(G.HadamardProd(h, b.must(G.Sigmoid(h)))) // a nonlinearity after
		}},
		{name: "transpose", xs: []int{1, 6}, body: func(b *gb, x *G.Node) *G.Node {
			r := b.must(G.Reshape(b.affine("l1", x, 6), tensor.Shape{2, 3}))
			w := b.param("W", 2, 4)
			return b.must(G.Tanh(b.must(G.Mul(b.must(G.Transpose(r)), w)))) // (3, 4)
		}},
		{name: "softmax-hidden", xs: []int{1, 5}, body: func(b *gb, x *G.Node) *G.Node {
			return b.must(G.SoftMax(b.affine("l1", x, 4)))
		}},
		{name: "logsoftmax-loss", xs: []int{1, 5}, body: func(b *gb, x *G.Node) *G.Node {
			return b.must(G.Tanh(b.affine("l1", x, 4)))
		}, loss: func(b *gb, z, y *G.Node) *G.Node {
			return b.must(G.Neg(b.must(G.Sum(b.must(G.HadamardProd(b.must(G.LogSoftMax(z)), y))))))
		}},
		{name: "conv2d", xs: []int{1, 2, 5, 5}, body: func(b *gb, x *G.Node) *G.Node {
			return b.must(G.Tanh(convBias(b, "c1", x, 3, 3, 2, 1)))
		}},
		{name: "maxpool", xs: []int{1, 2, 6, 6}, body: func(b *gb, x *G.Node) *G.Node {
			c := b.must(G.Tanh(convBias(b, "c1", x, 3, 3, 1, 1)))
			return b.must(G.MaxPool2D(c, tensor.Shape{2, 2}, []int{0, 0}, []int{2, 2}))
		}},
		{name: "avgpool", xs: []int{1, 2, 5, 5}, gorgoniaWrong: true, body: func(b *gb, x *G.Node) *G.Node {
			c := b.must(G.Tanh(convBias(b, "c1", x, 2, 3, 1, 0)))
			return b.must(G.AveragePool2D(c, tensor.Shape{2, 2}, []int{0, 0}, []int{1, 1}))
		}},
		{name: "residual-sigmoid-maxpool", xs: []int{1, 1, 6, 6}, body: residualBody},
		// A parameter-only branch (weight normalisation W/‖W‖): nodes with adjoints
		// but no input tangent.
		{name: "weight-norm", xs: []int{1, 5}, body: func(b *gb, x *G.Node) *G.Node {
			w := b.param("V", 5, 4)
			nrm := b.must(G.Sqrt(b.must(G.Sum(b.must(G.Square(w))))))
			wn := b.must(G.HadamardDiv(w, nrm))
			return b.must(G.Tanh(b.must(G.Mul(x, wn))))
		}},
	}
	return cs
}

// residualBody: conv → sigmoid → (+ conv(that), a residual) → max-pool → softplus.
func residualBody(b *gb, x *G.Node) *G.Node {
	a := b.must(G.Sigmoid(convBias(b, "c1", x, 2, 3, 1, 1)))                  // (1, 2, 6, 6)
	r := b.must(G.Add(a, b.must(G.Tanh(convBias(b, "c2", a, 2, 3, 1, 1)))))   // residual
	p := b.must(G.MaxPool2D(r, tensor.Shape{2, 2}, []int{0, 0}, []int{2, 2})) // (1, 2, 3, 3)
	return b.must(G.Softplus(p))
}

// randPoint draws parameters (Glorot + N(0, 0.3²)), inputs in [0, 1] and labels.
func randPoint(m *GraphModel, n int, seed uint64) (p, x []float64, y []int) {
	return randomPoint(m, n, seed)
}

// unclipped returns one sample's loss and gradient through the program or, when
// gorgonia, Gorgonia's tape.
func unclipped(t *testing.T, m *GraphModel, p, x []float64, y int, gorgonia bool) (float64, []float64) {
	t.Helper()
	m.gorgoniaRoute = gorgonia
	defer func() { m.gorgoniaRoute = false }()
	g, l := make([]float64, m.NumParams()), make([]float64, 1)
	if err := m.ClippedGradSum64(p, x, []int{y}, models.Clip{Mode: models.ClipHard, C: 1e300}, g, l); err != nil {
		t.Fatal(err)
	}
	return l[0], g
}

func clippedOf(t *testing.T, m *GraphModel, p, x []float64, y int, c models.Clip, gorgonia bool) []float64 {
	t.Helper()
	m.gorgoniaRoute = gorgonia
	defer func() { m.gorgoniaRoute = false }()
	g, l := make([]float64, m.NumParams()), make([]float64, 1)
	if err := m.ClippedGradSum64(p, x, []int{y}, c, g, l); err != nil {
		t.Fatal(err)
	}
	return g
}

func norm2(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x * x
	}
	return math.Sqrt(s)
}

// TestTangentRulesFiniteDifferences checks every op rule, alone and composed, in
// both clip modes: (1) the program's loss and gradient equal Gorgonia's (where
// Gorgonia is right) and the float64 central finite differences of the program's
// loss; (2) the tangents J e_j of the clipped gradient for every input coordinate j
// equal the central finite differences of the clipped gradient (Gorgonia's, where
// Gorgonia is right); (3) FILSqNorms64 over all coordinates is ‖J‖_F² of the
// finite-difference Jacobian.
func TestTangentRulesFiniteDifferences(t *testing.T) {
	for _, oc := range opCases() {
		t.Run(oc.name, func(t *testing.T) {
			m, err := FromGraph(oc.spec(t))
			if err != nil {
				t.Fatal(err)
			}
			if err := m.SecondOrderErr(); err != nil {
				t.Fatal(err)
			}
			p, xs, ys := randPoint(m, 2, 7)
			D, P := m.InputDim(), m.NumParams()
			for s := 0; s < 2; s++ {
				x, y := xs[s*D:(s+1)*D], ys[s]
				loss, g := unclipped(t, m, p, x, y, false)
				if !oc.gorgoniaWrong {
					gl, gg := unclipped(t, m, p, x, y, true)
					if math.Abs(loss-gl) > 1e-12*math.Max(1, math.Abs(gl)) {
						t.Errorf("sample %d: loss %v, Gorgonia %v", s, loss, gl)
					}
					if e := maxRelErr(g, gg); !(e < 1e-10) {
						t.Errorf("sample %d: gradient rel. error %.3g vs Gorgonia", s, e)
					}
				}
				fd := make([]float64, P)
				q := append([]float64(nil), p...)
				for j := range q {
					const h = 1e-6
					q[j] = p[j] + h
					lp, _ := unclipped(t, m, q, x, y, false)
					q[j] = p[j] - h
					lm, _ := unclipped(t, m, q, x, y, false)
					q[j] = p[j]
					fd[j] = (lp - lm) / (2 * h)
				}
				if e := maxRelErr(g, fd); !(e < 1e-6) {
					t.Errorf("sample %d: gradient rel. error %.3g vs finite differences of the loss", s, e)
				}
				gn := norm2(g)
				for _, c := range []models.Clip{
					{Mode: models.ClipHard, C: 0.4 * gn},
					{Mode: models.ClipHard, C: 3 * gn},
					{Mode: models.ClipSmooth, C: 0.7 * gn},
				} {
					coords := make([]int, D)
					for j := range coords {
						coords[j] = j
					}
					gc, gt, err := m.progClippedGradTangents(p, x, y, c, coords)
					if err != nil {
						t.Fatal(err)
					}
					ref := clippedOf(t, m, p, x, y, c, !oc.gorgoniaWrong)
					if e := maxRelErr(gc, ref); !(e < 1e-10) {
						t.Errorf("sample %d clip %+v: clipped gradient rel. error %.3g", s, c, e)
					}
					var worst, scale, fro float64
					xp := append([]float64(nil), x...)
					for j := 0; j < D; j++ {
						const h = 1e-5
						xp[j] = x[j] + h
						gp := clippedOf(t, m, p, xp, y, c, !oc.gorgoniaWrong)
						xp[j] = x[j] - h
						gm := clippedOf(t, m, p, xp, y, c, !oc.gorgoniaWrong)
						xp[j] = x[j]
						for i := range gp {
							d := (gp[i] - gm[i]) / (2 * h)
							fro += d * d
							worst = math.Max(worst, math.Abs(d-gt[j][i]))
							scale = math.Max(scale, math.Abs(d))
						}
					}
					if scale == 0 {
						t.Fatalf("sample %d clip %+v: the Jacobian is zero", s, c)
					}
					if e := worst / scale; !(e < 2e-6) {
						t.Errorf("sample %d clip %+v: tangent rel. error %.3g vs finite differences (max |J| %.3g)", s, c, e, scale)
					}
					out := []float64{0}
					if err := m.FILSqNorms64(p, x, []int{y}, c, [][]int{coords}, out); err != nil {
						t.Fatal(err)
					}
					if e := math.Abs(out[0]-fro) / fro; !(e < 1e-5) {
						t.Errorf("sample %d clip %+v: FILSqNorms64 %v, ‖J‖_F² by finite differences %v", s, c, out[0], fro)
					}
				}
			}
		})
	}
}

// TestAvgPoolIsTheKernelMean: the program's AveragePool2D is the mean over the
// kernel window (Gorgonia v0.9.18's own divides by the input width), checked on a
// graph whose logits are the pooled input itself.
func TestAvgPoolIsTheKernelMean(t *testing.T) {
	g := G.NewGraph()
	x := G.NewTensor(g, G.Float64, 4, G.WithShape(1, 1, 3, 4), G.WithName("x"))
	y := G.NewMatrix(g, G.Float64, G.WithShape(1, 6), G.WithName("y"))
	w := G.NewMatrix(g, G.Float64, G.WithShape(1, 6), G.WithName("w"))
	ap := G.Must(G.AveragePool2D(x, tensor.Shape{2, 2}, []int{0, 0}, []int{1, 1})) // (1, 1, 2, 3)
	z := G.Must(G.HadamardProd(G.Must(G.Reshape(ap, tensor.Shape{1, 6})), w))
	loss, err := CrossEntropy(z, y)
	if err != nil {
		t.Fatal(err)
	}
	m, err := FromGraph(GraphSpec{Name: "avg", Graph: g, Input: x, InputShape: models.Shape{C: 1, H: 3, W: 4}, Label: y, Classes: 6,
		Logits: z, Loss: loss, Params: []*G.Node{w}})
	if err != nil {
		t.Fatal(err)
	}
	xv := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	p := []float64{1, 1, 1, 1, 1, 1}
	out := make([]float64, 6)
	if err := m.Logits64(p, xv, 1, out); err != nil {
		t.Fatal(err)
	}
	want := []float64{3.5, 4.5, 5.5, 7.5, 8.5, 9.5}
	if maxRelErr(out, want) > 1e-15 {
		t.Errorf("pooled %v, want %v", out, want)
	}
}

// TestNoTangentRuleIsNamed: an op without a rule (here Pow) makes FIL fail with an
// error that wraps ErrNoSecondOrder and ErrNoTangentRule and names the op; the
// model still trains first-order through Gorgonia's tape.
func TestNoTangentRuleIsNamed(t *testing.T) {
	oc := opCase{name: "pow", xs: []int{1, 5}, body: func(b *gb, x *G.Node) *G.Node {
		return b.must(G.Pow(b.must(G.Exp(b.affine("l1", x, 4))), b.konst("three", 3)))
	}}
	m, err := FromGraph(oc.spec(t))
	if err != nil {
		t.Fatal(err)
	}
	err = m.SecondOrderErr()
	if !errors.Is(err, ErrNoSecondOrder) || !errors.Is(err, ErrNoTangentRule) || !strings.Contains(err.Error(), `"^ false"`) {
		t.Fatalf("SecondOrderErr = %v", err)
	}
	out := []float64{-1}
	p, x, y := randPoint(m, 1, 1)
	if err := m.FILSqNorms64(p, x, y, models.Clip{C: 1}, [][]int{{0}}, out); !errors.Is(err, ErrNoSecondOrder) || out[0] != -1 {
		t.Errorf("FILSqNorms64: %v, wrote %v", err, out)
	}
	g, l := make([]float64, m.NumParams()), make([]float64, 1)
	if err := m.ClippedGradSum64(p, x, y, models.Clip{C: 1}, g, l); err != nil || norm2(g) == 0 {
		t.Errorf("first-order route: %v, ‖g‖ = %v", err, norm2(g))
	}
	t.Log(err)
}

// TestGraphWorkersIdentical: ClippedGradSum, Logits and FILSqNorms give the same
// bits for 1, 2 and 5 workers.
func TestGraphWorkersIdentical(t *testing.T) {
	oc := opCase{name: "res", xs: []int{1, 1, 6, 6}, body: residualBody}
	m, err := FromGraph(oc.spec(t))
	if err != nil {
		t.Fatal(err)
	}
	const n = 9
	p, x, y := randPoint(m, n, 3)
	rng := rand.New(rand.NewPCG(1, 2))
	coords := make([][]int, n)
	for s := range coords {
		for j := 0; j < 20+s; j++ { // more than one block of directions
			coords[s] = append(coords[s], rng.IntN(m.InputDim()))
		}
	}
	c := models.Clip{Mode: models.ClipSmooth, C: 0.1}
	var ref string
	for _, w := range []int{1, 2, 5} {
		m.SetWorkers(w)
		sum, losses, z, fil := make([]float64, m.NumParams()), make([]float64, n), make([]float64, n*testK), make([]float64, n)
		if err := m.ClippedGradSum64(p, x, y, c, sum, losses); err != nil {
			t.Fatal(err)
		}
		if err := m.Logits64(p, x, n, z); err != nil {
			t.Fatal(err)
		}
		if err := m.FILSqNorms64(p, x, y, c, coords, fil); err != nil {
			t.Fatal(err)
		}
		got := fmt.Sprint(sum, losses, z, fil)
		if ref == "" {
			ref = got
		} else if got != ref {
			t.Errorf("%d workers: results differ from 1 worker's", w)
		}
	}
}

// TestGraphNonFiniteLossIsAnError: a sample whose loss is not finite (log of a
// negative number) makes ClippedGradSum return an error naming it, with several
// workers and samples after it (no deadlock in the ordered sum), and the model
// still works on good samples afterwards.
func TestGraphNonFiniteLossIsAnError(t *testing.T) {
	m, err := FromGraph(unaryCase("log-negative", G.Log, false).spec(t))
	if err != nil {
		t.Fatal(err)
	}
	const n = 12
	p, x, y := randPoint(m, n, 2)
	for i := range p {
		p[i] = -math.Abs(p[i]) // negative pre-activations for inputs in [0, 1]
	}
	m.SetWorkers(3)
	sum, losses := make([]float64, m.NumParams()), make([]float64, n)
	err = m.ClippedGradSum64(p, x, y, models.Clip{C: 1}, sum, losses)
	if err == nil || !strings.Contains(err.Error(), "not finite") {
		t.Fatalf("err = %v", err)
	}
	for i := range p {
		p[i] = math.Abs(p[i])
	}
	if err := m.ClippedGradSum64(p, x, y, models.Clip{C: 1}, sum, losses); err != nil {
		t.Errorf("good point after a bad one: %v", err)
	}
}
