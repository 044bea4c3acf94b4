package gorgonet

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"syscall"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/dpfil/dpfil/models"
)

// resNet is a one-sample Gorgonia graph with ops the engine lacks — sigmoid,
// softplus and a residual add — on d inputs, h hidden units and k classes:
//
//	a1 = sigmoid(x·W1 + b1), a2 = a1 + softplus(a1·W2 + b2), z = a2·W3 + b3,
//
// loss = CrossEntropy(z, y); parameters W1 (d,h), b1 (1,h), W2 (h,h), b2 (1,h),
// W3 (h,k), b3 (1,k) in that order.
func resNet(t *testing.T, dt tensor.Dtype, d, h, k int) GraphSpec {
	t.Helper()
	g := G.NewGraph()
	x := G.NewMatrix(g, dt, G.WithShape(1, d), G.WithName("x"))
	y := G.NewMatrix(g, dt, G.WithShape(1, k), G.WithName("y"))
	w1 := G.NewMatrix(g, dt, G.WithShape(d, h), G.WithName("W1"))
	b1 := G.NewMatrix(g, dt, G.WithShape(1, h), G.WithName("b1"))
	w2 := G.NewMatrix(g, dt, G.WithShape(h, h), G.WithName("W2"))
	b2 := G.NewMatrix(g, dt, G.WithShape(1, h), G.WithName("b2"))
	w3 := G.NewMatrix(g, dt, G.WithShape(h, k), G.WithName("W3"))
	b3 := G.NewMatrix(g, dt, G.WithShape(1, k), G.WithName("b3"))
	a1 := G.Must(G.Sigmoid(G.Must(G.Add(G.Must(G.Mul(x, w1)), b1))))
	a2 := G.Must(G.Add(a1, G.Must(G.Softplus(G.Must(G.Add(G.Must(G.Mul(a1, w2)), b2))))))
	z := G.Must(G.Add(G.Must(G.Mul(a2, w3)), b3))
	loss, err := CrossEntropy(z, y)
	if err != nil {
		t.Fatal(err)
	}
	return GraphSpec{Name: "res-sigmoid", Graph: g, Input: x, InputShape: models.Shape{C: 1, H: 1, W: d},
		Label: y, Classes: k, Logits: z, Loss: loss, Params: []*G.Node{w1, b1, w2, b2, w3, b3}}
}

// resNetLoss is resNet's forward pass written by hand in float64 (the independent
// reference): the loss of one sample and its logits.
func resNetLoss(p, x []float64, y, d, h, k int) (float64, []float64) {
	off := 0
	take := func(n int) []float64 { v := p[off : off+n]; off += n; return v }
	w1, b1, w2, b2, w3, b3 := take(d*h), take(h), take(h*h), take(h), take(h*k), take(k)
	a1 := make([]float64, h)
	for j := 0; j < h; j++ {
		s := b1[j]
		for i := 0; i < d; i++ {
			s += x[i] * w1[i*h+j]
		}
		a1[j] = 1 / (1 + math.Exp(-s))
	}
	a2 := make([]float64, h)
	for j := 0; j < h; j++ {
		s := b2[j]
		for i := 0; i < h; i++ {
			s += a1[i] * w2[i*h+j]
		}
		a2[j] = a1[j] + math.Log1p(math.Exp(s))
	}
	z := make([]float64, k)
	mx := math.Inf(-1)
	for c := 0; c < k; c++ {
		z[c] = b3[c]
		for i := 0; i < h; i++ {
			z[c] += a2[i] * w3[i*k+c]
		}
		mx = math.Max(mx, z[c])
	}
	se := 0.0
	for _, v := range z {
		se += math.Exp(v - mx)
	}
	return mx + math.Log(se) - z[y], z
}

// clipRef clips g by hand: g·min(1, C/‖g‖) or g/(GELU(‖g‖/C − 1) + 1) with the
// exact GELU u·Φ(u).
func clipRef(c models.Clip, g []float64) []float64 {
	var ss float64
	for _, v := range g {
		ss += v * v
	}
	nrm := math.Sqrt(ss)
	s := 1.0
	if c.Mode == models.ClipHard {
		if nrm > c.C {
			s = c.C / nrm
		}
	} else {
		u := nrm/c.C - 1
		s = 1 / (u*0.5*math.Erfc(-u/math.Sqrt2) + 1)
	}
	out := make([]float64, len(g))
	for i, v := range g {
		out[i] = s * v
	}
	return out
}

func maxRelErr(a, b []float64) float64 {
	var num, den float64
	for i := range b {
		num = math.Max(num, math.Abs(a[i]-b[i]))
		den = math.Max(den, math.Abs(b[i]))
	}
	if den == 0 {
		return num
	}
	return num / den
}

func randomPoint(m *GraphModel, n int, seed uint64) (p, x []float64, y []int) {
	rng := rand.New(rand.NewPCG(seed, 99))
	p = m.Init64(seed)
	for i := range p {
		p[i] += 0.3 * rng.NormFloat64()
	}
	x = make([]float64, n*m.InputDim())
	for i := range x {
		x[i] = rng.Float64()
	}
	y = make([]int, n)
	for i := range y {
		y[i] = rng.IntN(m.Arch().Classes)
	}
	return p, x, y
}

// TestGraphClippedGradsMatchFiniteDifferences: per sample, the graph route's clipped
// gradient equals the clipped float64 central finite-difference gradient of the
// hand-written forward pass, for hard clipping (active and inactive) and smooth
// clipping; the losses and logits equal the hand-written ones.
func TestGraphClippedGradsMatchFiniteDifferences(t *testing.T) {
	const d, h, k, n = 6, 5, 3, 4
	for _, c := range []models.Clip{
		{Mode: models.ClipHard, C: 0.05},
		{Mode: models.ClipHard, C: 100},
		{Mode: models.ClipSmooth, C: 0.3},
		{Mode: models.ClipSmooth, C: 0.3, GELU: models.GELUTanh},
	} {
		m, err := FromGraph(resNet(t, tensor.Float64, d, h, k))
		if err != nil {
			t.Fatal(err)
		}
		p, x, y := randomPoint(m, n, 3)
		P := m.NumParams()
		if P != d*h+h+h*h+h+h*k+k {
			t.Fatalf("NumParams = %d", P)
		}
		var ce float64
		if c.GELU == models.GELUTanh { // the reference clips with the exact GELU
			ce = 1e-3
		}
		want := make([]float64, P)
		var clipped int
		for i := 0; i < n; i++ {
			xi := x[i*d : (i+1)*d]
			fd := make([]float64, P)
			q := append([]float64(nil), p...)
			for j := range q {
				const e = 1e-5
				q[j] = p[j] + e
				lp, _ := resNetLoss(q, xi, y[i], d, h, k)
				q[j] = p[j] - e
				lm, _ := resNetLoss(q, xi, y[i], d, h, k)
				q[j] = p[j]
				fd[j] = (lp - lm) / (2 * e)
			}
			ref := clipRef(c, fd)
			got, loss := make([]float64, P), make([]float64, 1)
			if err := m.ClippedGradSum64(p, xi, y[i:i+1], c, got, loss); err != nil {
				t.Fatal(err)
			}
			if e := maxRelErr(got, ref); !(e < 1e-7+ce) {
				t.Errorf("clip %+v sample %d: clipped gradient rel. error %.3g vs finite differences", c, i, e)
			}
			if maxRelErr(ref, fd) > 1e-12 {
				clipped++
			}
			wl, wz := resNetLoss(p, xi, y[i], d, h, k)
			if math.Abs(loss[0]-wl) > 1e-12*math.Max(1, wl) {
				t.Errorf("sample %d: loss %v, hand-written %v", i, loss[0], wl)
			}
			z := make([]float64, k)
			if err := m.Logits64(p, xi, 1, z); err != nil {
				t.Fatal(err)
			}
			if e := maxRelErr(z, wz); e > 1e-12 {
				t.Errorf("sample %d: logits %v, hand-written %v", i, z, wz)
			}
			for j := range want {
				want[j] += got[j]
			}
		}
		if (c.C > 1) == (clipped > 0) {
			t.Errorf("clip %+v: %d of %d samples clipped", c, clipped, n)
		}
		// The batch sum is the sum of the single-sample runs.
		sum, losses := make([]float64, P), make([]float64, n)
		if err := m.ClippedGradSum64(p, x, y, c, sum, losses); err != nil {
			t.Fatal(err)
		}
		if e := maxRelErr(sum, want); e > 1e-13 {
			t.Errorf("clip %+v: batch sum differs from the per-sample sums by %.3g", c, e)
		}
	}
}

// TestGraphFloat32: a float32 graph gives the float64 graph's clipped sum to float32
// accuracy, through the float32 Model interface.
func TestGraphFloat32(t *testing.T) {
	const d, h, k, n = 6, 5, 3, 8
	m64, err := FromGraph(resNet(t, tensor.Float64, d, h, k))
	if err != nil {
		t.Fatal(err)
	}
	m32, err := FromGraph(resNet(t, tensor.Float32, d, h, k))
	if err != nil {
		t.Fatal(err)
	}
	if m32.Fingerprint() == m64.Fingerprint() {
		t.Error("float32 and float64 graphs have the same fingerprint")
	}
	p, x, y := randomPoint(m64, n, 5)
	c := models.Clip{Mode: models.ClipSmooth, C: 0.5}
	want, wl := make([]float64, len(p)), make([]float64, n)
	if err := m64.ClippedGradSum64(p, x, y, c, want, wl); err != nil {
		t.Fatal(err)
	}
	p32, x32 := make([]float32, len(p)), make([]float32, len(x))
	for i, v := range p {
		p32[i] = float32(v)
	}
	for i, v := range x {
		x32[i] = float32(v)
	}
	got, gl := make([]float32, len(p)), make([]float64, n)
	if err := m32.ClippedGradSum(p32, x32, y, c, got, gl); err != nil {
		t.Fatal(err)
	}
	g64 := make([]float64, len(got))
	for i, v := range got {
		g64[i] = float64(v)
	}
	if e := maxRelErr(g64, want); e > 1e-5 {
		t.Errorf("float32 graph: rel. error %.3g", e)
	}
	if e := maxRelErr(gl, wl); e > 1e-5 {
		t.Errorf("float32 graph losses: rel. error %.3g", e)
	}
}

// denseTanh is the engine's flatten → dense(h) → tanh → dense(k) on d inputs, written
// as a Gorgonia graph of dtype dt in the engine's parameter layout: W1 (h,d), b1 (h),
// W2 (k,h), b2 (k), z = W2·tanh(W1·x + b1) + b2 with x a vector.
func denseTanh(t testing.TB, d, h, k int, dt ...tensor.Dtype) GraphSpec {
	t.Helper()
	typ := tensor.Float64
	if len(dt) > 0 {
		typ = dt[0]
	}
	g := G.NewGraph()
	x := G.NewVector(g, typ, G.WithShape(d), G.WithName("x"))
	y := G.NewVector(g, typ, G.WithShape(k), G.WithName("y"))
	w1 := G.NewMatrix(g, typ, G.WithShape(h, d), G.WithName("dense1.W"))
	b1 := G.NewVector(g, typ, G.WithShape(h), G.WithName("dense1.b"))
	w2 := G.NewMatrix(g, typ, G.WithShape(k, h), G.WithName("dense3.W"))
	b2 := G.NewVector(g, typ, G.WithShape(k), G.WithName("dense3.b"))
	a := G.Must(G.Tanh(G.Must(G.Add(G.Must(G.Mul(w1, x)), b1))))
	z := G.Must(G.Add(G.Must(G.Mul(w2, a)), b2))
	loss, err := CrossEntropy(z, y)
	if err != nil {
		t.Fatal(err)
	}
	return GraphSpec{Name: "dense-tanh", Graph: g, Input: x, InputShape: models.Shape{C: 1, H: 1, W: d},
		Label: y, Classes: k, Logits: z, Loss: loss, Params: []*G.Node{w1, b1, w2, b2}}
}

func denseTanhArch(d, h, k int) models.Arch {
	return models.Arch{Name: "dense-tanh", Input: models.Shape{C: 1, H: 1, W: d}, Classes: k,
		Layers: []models.LayerSpec{{Kind: models.KindFlatten}, models.Dense(h), {Kind: models.KindTanh}, models.Dense(k)}}
}

// TestGraphEqualsEngine: the same dense tanh network as a Gorgonia graph and as an
// engine architecture gives the same clipped gradient sum, losses and logits in
// float64 (1e-10), for hard and smooth clipping, and the same bits on a second call.
func TestGraphEqualsEngine(t *testing.T) {
	const d, h, k, n = 12, 7, 4, 9
	m, err := FromGraph(denseTanh(t, d, h, k))
	if err != nil {
		t.Fatal(err)
	}
	arch := denseTanhArch(d, h, k)
	net, err := models.NewNetwork(arch, models.NewCPUBackend[float64]())
	if err != nil {
		t.Fatal(err)
	}
	if m.NumParams() != net.NumParams() || m.InputDim() != net.InputDim() {
		t.Fatalf("graph %d params %d inputs, engine %d %d", m.NumParams(), m.InputDim(), net.NumParams(), net.InputDim())
	}
	p, x, y := RandomPoint(arch, n, 11)
	for _, c := range []models.Clip{{Mode: models.ClipHard, C: 0.2}, {Mode: models.ClipSmooth, C: 0.5}, {Mode: models.ClipHard, C: 1e3}} {
		gs, gl := make([]float64, len(p)), make([]float64, n)
		if err := m.ClippedGradSum64(p, x, y, c, gs, gl); err != nil {
			t.Fatal(err)
		}
		g2, l2 := make([]float64, len(p)), make([]float64, n)
		if err := m.ClippedGradSum64(p, x, y, c, g2, l2); err != nil {
			t.Fatal(err)
		}
		if maxRelErr(g2, gs) != 0 || maxRelErr(l2, gl) != 0 {
			t.Errorf("clip %+v: a second call differs", c)
		}
		es, el := make([]float64, len(p)), make([]float64, n)
		if err := net.ClippedGradSum(p, x, y, n, c, es, el); err != nil {
			t.Fatal(err)
		}
		if e := maxRelErr(gs, es); !(e < 1e-10) {
			t.Errorf("clip %+v: graph vs engine clipped sum rel. error %.3g", c, e)
		}
		if e := maxRelErr(gl, el); !(e < 1e-10) {
			t.Errorf("clip %+v: losses rel. error %.3g", c, e)
		}
	}
	gz := make([]float64, n*k)
	if err := m.Logits64(p, x, n, gz); err != nil {
		t.Fatal(err)
	}
	ez, err := net.Forward(p, x, n)
	if err != nil {
		t.Fatal(err)
	}
	if e := maxRelErr(gz, ez); !(e < 1e-12) {
		t.Errorf("logits rel. error %.3g", e)
	}
}

// TestGraphNoSecondOrder: through the float32 Model interface, a graph with an op
// that has no forward-over-reverse rule (Pow) refuses FIL with ErrNoSecondOrder,
// says why, and writes nothing; a graph of covered ops computes it.
func TestGraphNoSecondOrder(t *testing.T) {
	oc := opCase{name: "pow", xs: []int{1, 4}, body: func(b *gb, x *G.Node) *G.Node {
		return b.must(G.Pow(b.must(G.Exp(b.affine("l1", x, 3))), b.konst("two", 2)))
	}}
	m, err := FromGraph(oc.spec(t))
	if err != nil {
		t.Fatal(err)
	}
	var _ models.FirstOrderOnly = m
	out := []float64{-1}
	err = m.FILSqNorms(m.Init(1), make([]float32, 4), []int{1}, models.Clip{C: 1}, [][]int{{0}}, out)
	if !errors.Is(err, ErrNoSecondOrder) || !errors.Is(m.SecondOrderErr(), ErrNoSecondOrder) {
		t.Fatalf("FILSqNorms: %v", err)
	}
	if !strings.Contains(err.Error(), "second-order") || !strings.Contains(err.Error(), "Grad") || !strings.Contains(err.Error(), "^") {
		t.Errorf("the error does not say why: %v", err)
	}
	if out[0] != -1 {
		t.Errorf("FILSqNorms wrote %v", out)
	}
	ok, err := FromGraph(denseTanh(t, 4, 3, 2))
	if err != nil {
		t.Fatal(err)
	}
	if err := ok.SecondOrderErr(); err != nil {
		t.Fatal(err)
	}
	if err := ok.FILSqNorms(ok.Init(1), []float32{0.1, 0.2, 0.3, 0.4}, []int{1}, models.Clip{C: 1}, [][]int{{0, 3}}, out); err != nil || !(out[0] > 0) {
		t.Errorf("covered ops: FILSqNorms %v, %v", out, err)
	}
}

// TestGraphInit: Glorot draws are seeded (same seed, same draw; different seeds
// differ), within ±√(6/(fan_in+fan_out)), biases zero; InitValues returns the nodes'
// values whatever the seed; the fingerprint (and so the architecture name) depends
// on the init mode, the initial values and the ops.
func TestGraphInit(t *testing.T) {
	const d, h, k = 6, 5, 3
	m, err := FromGraph(resNet(t, tensor.Float64, d, h, k))
	if err != nil {
		t.Fatal(err)
	}
	a, b, c := m.Init64(1), m.Init64(1), m.Init64(2)
	if maxRelErr(a, b) != 0 || maxRelErr(a, c) == 0 {
		t.Error("Init64 is not a deterministic function of the seed")
	}
	for _, ps := range m.ParamTensors() {
		lim := 0.0
		if ps.Dims[0] > 1 && ps.Dims[1] > 1 {
			lim = math.Sqrt(6 / float64(ps.Dims[0]+ps.Dims[1]))
		}
		var mx float64
		for _, v := range a[ps.Offset : ps.Offset+ps.Size] {
			mx = math.Max(mx, math.Abs(v))
		}
		if mx > lim || lim > 0 && mx < lim/2 {
			t.Errorf("%s %v: max |init| %v, limit %v", ps.Name, ps.Dims, mx, lim)
		}
	}
	if !strings.HasPrefix(m.Arch().Name, GraphArchPrefix+"res-sigmoid@") || len(m.Arch().Layers) != 0 {
		t.Errorf("arch %+v", m.Arch())
	}
	again, err := FromGraph(resNet(t, tensor.Float64, d, h, k))
	if err != nil {
		t.Fatal(err)
	}
	if again.Arch().Name != m.Arch().Name {
		t.Errorf("the same graph built twice: %s and %s", again.Arch().Name, m.Arch().Name)
	}
	s := denseTanh(t, d, h, k)
	for i, n := range s.Params {
		v := make([]float64, n.Shape().TotalSize())
		for j := range v {
			v[j] = float64(10*i + j)
		}
		if err := G.Let(n, tensor.New(tensor.WithShape(n.Shape()...), tensor.WithBacking(v))); err != nil {
			t.Fatal(err)
		}
	}
	s.Init = InitValues
	mv, err := FromGraph(s)
	if err != nil {
		t.Fatal(err)
	}
	if v1, v2 := mv.Init64(1), mv.Init64(7); maxRelErr(v1, v2) != 0 || v1[1] != 1 || v1[len(v1)-1] != float64(10*3+k-1) {
		t.Errorf("InitValues: %v", v1)
	}
	mg, err := FromGraph(denseTanh(t, d, h, k))
	if err != nil {
		t.Fatal(err)
	}
	if mg.Fingerprint() == mv.Fingerprint() {
		t.Error("InitValues and InitGlorot graphs have the same fingerprint")
	}
	// A different op (sigmoid instead of tanh) changes the fingerprint.
	other := denseTanh(t, d, h, k)
	if mo, err := FromGraph(other); err != nil || mo.Fingerprint() != mg.Fingerprint() {
		t.Fatalf("rebuilt dense-tanh: %v, %v", err, mo)
	}
	if ms := sigmoidVariant(t, d, h, k); ms.Fingerprint() == mg.Fingerprint() {
		t.Error("tanh and sigmoid graphs have the same fingerprint")
	}
}

func sigmoidVariant(t *testing.T, d, h, k int) *GraphModel {
	g := G.NewGraph()
	x := G.NewVector(g, G.Float64, G.WithShape(d), G.WithName("x"))
	y := G.NewVector(g, G.Float64, G.WithShape(k), G.WithName("y"))
	w1 := G.NewMatrix(g, G.Float64, G.WithShape(h, d), G.WithName("dense1.W"))
	b1 := G.NewVector(g, G.Float64, G.WithShape(h), G.WithName("dense1.b"))
	w2 := G.NewMatrix(g, G.Float64, G.WithShape(k, h), G.WithName("dense3.W"))
	b2 := G.NewVector(g, G.Float64, G.WithShape(k), G.WithName("dense3.b"))
	a := G.Must(G.Sigmoid(G.Must(G.Add(G.Must(G.Mul(w1, x)), b1))))
	z := G.Must(G.Add(G.Must(G.Mul(w2, a)), b2))
	loss, err := CrossEntropy(z, y)
	if err != nil {
		t.Fatal(err)
	}
	m, err := FromGraph(GraphSpec{Name: "dense-tanh", Graph: g, Input: x, InputShape: models.Shape{C: 1, H: 1, W: d},
		Label: y, Classes: k, Logits: z, Loss: loss, Params: []*G.Node{w1, b1, w2, b2}})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestFromGraphErrors: bad graphs give errors that name the problem, never panics.
func TestFromGraphErrors(t *testing.T) {
	const d, h, k = 4, 3, 2
	for _, c := range []struct {
		name string
		edit func(s *GraphSpec)
		want string
	}{
		{"non-scalar loss", func(s *GraphSpec) { s.Loss = s.Logits }, "want a scalar"},
		{"parameter of another graph", func(s *GraphSpec) {
			s.Params[1] = G.NewVector(G.NewGraph(), G.Float64, G.WithShape(h), G.WithName("stray"))
		}, "not in the graph"},
		{"wrong input shape", func(s *GraphSpec) { s.InputShape = models.Shape{C: 1, H: 1, W: d + 1} }, "input node x has shape (4)"},
		{"wrong classes", func(s *GraphSpec) { s.Classes = k + 1 }, "label node y has shape"},
		{"parameter computed by an op", func(s *GraphSpec) { s.Params[0] = s.Logits }, "computed by an op"},
		{"parameter is the input", func(s *GraphSpec) { s.Params[0] = s.Input }, "is the input"},
		{"parameter twice", func(s *GraphSpec) { s.Params[2] = s.Params[0] }, "is parameter 0"},
		{"duplicate names", func(s *GraphSpec) {
			s.Params = append(s.Params, G.NewVector(s.Graph, G.Float64, G.WithShape(2), G.WithName("dense1.W")))
		}, "used twice"},
		{"unused parameter", func(s *GraphSpec) {
			s.Params = append(s.Params, G.NewVector(s.Graph, G.Float64, G.WithShape(2), G.WithName("unused")))
		}, "does not reach the loss"},
		{"loss ignores the label", func(s *GraphSpec) {
			l, err := G.Sum(G.Must(G.Square(s.Logits)))
			if err != nil {
				t.Fatal(err)
			}
			s.Loss = l
		}, "depend on the input and the label"},
		{"scalar parameter", func(s *GraphSpec) {
			s.Params = append(s.Params, G.NewScalar(s.Graph, G.Float64, G.WithName("s")))
		}, "is a scalar"},
		{"logits use the label", func(s *GraphSpec) { s.Logits = G.Must(G.Add(s.Logits, s.Label)) }, "depend on the label"},
		{"already differentiated", func(s *GraphSpec) {
			if _, err := G.Grad(s.Loss, s.Params...); err != nil {
				t.Fatal(err)
			}
		}, "already holds gradient nodes"},
		{"bad name", func(s *GraphSpec) { s.Name = "a:b" }, "name must be"},
		{"no params", func(s *GraphSpec) { s.Params = nil }, "no parameters"},
		{"no loss", func(s *GraphSpec) { s.Loss = nil }, "no loss node"},
		{"no graph", func(s *GraphSpec) { s.Graph = nil }, "no graph"},
		{"InitValues without values", func(s *GraphSpec) { s.Init = InitValues }, "has no value"},
		{"float32 input", func(s *GraphSpec) {
			s.Input = G.NewVector(s.Graph, G.Float32, G.WithShape(d), G.WithName("x32"))
		}, "dtype float32"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := denseTanh(t, d, h, k)
			c.edit(&s)
			m, err := FromGraph(s)
			if err == nil {
				t.Fatalf("no error (model %v)", m.Arch().Name)
			}
			if !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "gorgonet: graph") {
				t.Errorf("error %q does not say %q", err, c.want)
			}
			if testing.Verbose() {
				t.Log(err)
			}
		})
	}
}

// TestGraphModelBadCalls: wrong buffer sizes, labels and non-finite inputs are errors.
func TestGraphModelBadCalls(t *testing.T) {
	m, err := FromGraph(denseTanh(t, 4, 3, 2))
	if err != nil {
		t.Fatal(err)
	}
	p := m.Init(1)
	x := make([]float32, 8)
	sum, losses := make([]float32, m.NumParams()), make([]float64, 2)
	c := models.Clip{Mode: models.ClipHard, C: 1}
	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"label out of range", func() error { return m.ClippedGradSum(p, x, []int{0, 2}, c, sum, losses) }},
		{"short x", func() error { return m.ClippedGradSum(p, x[:7], []int{0, 1}, c, sum, losses) }},
		{"short params", func() error { return m.ClippedGradSum(p[1:], x, []int{0, 1}, c, sum, losses) }},
		{"short sum", func() error { return m.ClippedGradSum(p, x, []int{0, 1}, c, sum[1:], losses) }},
		{"short losses", func() error { return m.ClippedGradSum(p, x, []int{0, 1}, c, sum, losses[:1]) }},
		{"bad clip", func() error { return m.ClippedGradSum(p, x, []int{0, 1}, models.Clip{C: 0}, sum, losses) }},
		{"NaN input", func() error {
			xn := append([]float32(nil), x...)
			xn[5] = float32(math.NaN())
			return m.ClippedGradSum(p, xn, []int{0, 1}, c, sum, losses)
		}},
		{"short logits", func() error { return m.Logits(p, x, 2, make([]float32, 3)) }},
	} {
		if err := tc.call(); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
	if err := m.ClippedGradSum(p, x, []int{0, 1}, c, sum, losses); err != nil {
		t.Errorf("a good call fails after bad ones: %v", err)
	}
}

// BenchmarkGraphRoute times ClippedGradSum of a batch of 64 MNIST-sized inputs on a
// 784→32→10 tanh MLP through the float32 models.Model interface: the engine
// (models.NewCPUModel, all GOMAXPROCS workers) and Gorgonia's per-sample tape route
// (float32 and float64 graphs, one tape run per sample; forced here, it is the
// fallback for graphs with ops without a forward-over-reverse rule — the program's
// own cost is BenchmarkGraphVsEngine's), in wall time and process CPU time per call.
// Run both in one process:
//
//	go test -run '^$' -bench GraphRoute -cpu 1,2 ./models/gorgonet
func BenchmarkGraphRoute(b *testing.B) {
	const d, h, k, n = 784, 32, 10, 64
	eng, err := models.NewCPUModel(denseTanhArch(d, h, k))
	if err != nil {
		b.Fatal(err)
	}
	g32, err := FromGraph(denseTanh(b, d, h, k, tensor.Float32))
	if err != nil {
		b.Fatal(err)
	}
	g64, err := FromGraph(denseTanh(b, d, h, k))
	if err != nil {
		b.Fatal(err)
	}
	g32.gorgoniaRoute, g64.gorgoniaRoute = true, true
	rng := rand.New(rand.NewPCG(1, 2))
	p := eng.Init(1)
	x := make([]float32, n*d)
	for i := range x {
		x[i] = rng.Float32()
	}
	y := make([]int, n)
	for i := range y {
		y[i] = rng.IntN(k)
	}
	c := models.Clip{Mode: models.ClipSmooth, C: 1}
	for _, r := range []struct {
		name string
		m    models.Model
	}{{"engine", eng}, {"graph-float32", g32}, {"graph-float64", g64}} {
		b.Run(r.name, func(b *testing.B) {
			sum, losses := make([]float32, len(p)), make([]float64, n)
			cpu0 := cpuTime(b)
			for i := 0; i < b.N; i++ {
				if err := r.m.ClippedGradSum(p, x, y, c, sum, losses); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpuTime(b)-cpu0)/1e6/float64(b.N), "cpu-ms/op")
		})
	}
}

// cpuTime is the process's user+system CPU time (all threads), in nanoseconds.
func cpuTime(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
