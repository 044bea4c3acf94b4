package models

import (
	"math"
	"math/rand/v2"
	"testing"
)

// backendCase is one float64 backend under test. Every numeric test of the engine
// runs against each entry; a device backend adds itself here (in a build-tagged
// file) so that the same suite checks it against the float64 references.
type backendCase struct {
	name string
	new  func() Backend[float64]
	// budget, when positive, shrinks the networks' chunk memory so that batches are
	// split into many chunks and tangent directions into several passes.
	budget int
}

func backends64() []backendCase {
	return []backendCase{
		{name: "cpu", new: NewCPUBackend[float64]},
		{name: "cpu-1worker", new: func() Backend[float64] { return &cpuBackend[float64]{workers: 1} }},
		{name: "cpu-smallchunks", new: NewCPUBackend[float64], budget: 20000},
	}
}

// tinyConv is a small network with every layer kind, for exhaustive checks.
func tinyConv() Arch {
	return Arch{Name: "tiny-conv", Input: Shape{C: 2, H: 7, W: 6}, Classes: 3, Layers: []LayerSpec{
		{Kind: KindNormalize, Mean: []float64{0.4, 0.6}, Std: []float64{0.3, 0.5}},
		{Kind: KindConv, Out: 3, KH: 3, KW: 2, Stride: 2, PadT: 1, PadB: 2, PadL: 0, PadR: 1},
		layerTanh,
		AvgPool(2, 1),
		Conv(2, 2, 1, 0),
		layerELU,
		layerFlatten,
		Dense(4),
		layerTanh,
		Dense(3),
	}}
}

// testArchs returns the networks checked end to end with the batch to use.
func testArchs(t *testing.T) []struct {
	arch  Arch
	batch int
} {
	t.Helper()
	var out []struct {
		arch  Arch
		batch int
	}
	out = append(out, struct {
		arch  Arch
		batch int
	}{tinyConv(), 3})
	for _, name := range []string{"linear", "mlp", "mnist-cnn", "mnist-cnn-3x3", "cifar-cnn"} {
		a, err := ArchByName(name)
		if err != nil {
			t.Fatal(err)
		}
		b := 3
		if name == "cifar-cnn" {
			b = 1
		}
		out = append(out, struct {
			arch  Arch
			batch int
		}{a, b})
	}
	return out
}

func newNet64(t *testing.T, arch Arch, bc backendCase) *Network[float64] {
	t.Helper()
	n, err := NewNetwork(arch, bc.new())
	if err != nil {
		t.Fatal(err)
	}
	if bc.budget > 0 {
		n.budget = bc.budget
	}
	return n
}

// randomProblem draws parameters (the stax init, with biases enlarged so that they
// matter), inputs in [0,1] and labels.
func randomProblem(arch Arch, batch int, seed uint64) (params, x []float64, y []int) {
	rng := rand.New(rand.NewPCG(seed, 7))
	params = InitParams(arch, seed)
	ps, _ := arch.Params()
	for _, p := range ps {
		if len(p.Dims) == 1 {
			for i := p.Offset; i < p.Offset+p.Size; i++ {
				params[i] = 0.1 * rng.NormFloat64()
			}
		}
	}
	x = make([]float64, batch*arch.InputDim())
	for i := range x {
		x[i] = rng.Float64()
	}
	y = make([]int, batch)
	for i := range y {
		y[i] = rng.IntN(arch.Classes)
	}
	return params, x, y
}

// refLoss is an independent float64 softmax cross-entropy of one logit row.
func refLoss(z []float64, y int) float64 {
	m := math.Inf(-1)
	for _, v := range z {
		m = math.Max(m, v)
	}
	var s float64
	for _, v := range z {
		s += math.Exp(v - m)
	}
	return m + math.Log(s) - z[y]
}

// sampleLoss evaluates sample s's loss with the network's forward pass only.
func sampleLoss(t *testing.T, n *Network[float64], params, x []float64, y int) float64 {
	t.Helper()
	z, err := n.Forward(params, x, 1)
	if err != nil {
		t.Fatal(err)
	}
	return refLoss(z, y)
}

// randVec returns a random unit vector.
func randVec(rng *rand.Rand, n int) []float64 {
	v := make([]float64, n)
	var ss float64
	for i := range v {
		v[i] = rng.NormFloat64()
		ss += v[i] * v[i]
	}
	for i := range v {
		v[i] /= math.Sqrt(ss)
	}
	return v
}

func axpy(a float64, x, y []float64) []float64 {
	out := make([]float64, len(y))
	for i := range y {
		out[i] = y[i] + a*x[i]
	}
	return out
}

func dot(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func relErr(got, want []float64) float64 {
	var num, den float64
	for i := range got {
		d := got[i] - want[i]
		num += d * d
		den += want[i] * want[i]
	}
	if den == 0 {
		return math.Sqrt(num)
	}
	return math.Sqrt(num / den)
}

// richardson returns the O(h⁴) central difference (4·D(h/2) − D(h))/3 of a vector
// function along a direction, where f(e) evaluates the function at step e.
func richardson(f func(e float64) []float64, h float64) []float64 {
	d := func(h float64) []float64 {
		p, m := f(h), f(-h)
		out := make([]float64, len(p))
		for i := range p {
			out[i] = (p[i] - m[i]) / (2 * h)
		}
		return out
	}
	a, b := d(h), d(h/2)
	out := make([]float64, len(a))
	for i := range a {
		out[i] = (4*b[i] - a[i]) / 3
	}
	return out
}

// fdStep is the step of checkGradsFD's and checkTangentsFD's finite differences; a
// test of a piecewise-linear layer (ReLU) shrinks it so that no kink is crossed.
var fdStep = 1e-3

// TestPerSampleGradsFD checks every sample's gradient against central finite
// differences of the forward-only loss, along random parameter directions and on
// single coordinates of every parameter tensor, for every network and backend.
func TestPerSampleGradsFD(t *testing.T) {
	for _, bc := range backends64() {
		for _, tc := range testArchs(t) {
			if tc.arch.Name == "cifar-cnn" && bc.name != "cpu" {
				continue // the largest net once per suite keeps it fast
			}
			t.Run(bc.name+"/"+tc.arch.Name, func(t *testing.T) {
				n := newNet64(t, tc.arch, bc)
				params, x, y := randomProblem(tc.arch, tc.batch, 1)
				checkGradsFD(t, n, params, x, y, tc.batch)
			})
		}
	}
}

func checkGradsFD(t *testing.T, n *Network[float64], params, x []float64, y []int, batch int) {
	t.Helper()
	grads, losses, err := n.PerSampleGrads(params, x, y, batch)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(2, 2))
	P, D := n.NumParams(), n.InputDim()
	ps, _ := n.Arch().Params()
	for s := 0; s < batch; s++ {
		xs := x[s*D : (s+1)*D]
		g := grads[s*P : (s+1)*P]
		if l := sampleLoss(t, n, params, xs, y[s]); math.Abs(l-losses[s]) > 1e-12*math.Max(1, l) {
			t.Errorf("sample %d loss %v, forward gives %v", s, losses[s], l)
		}
		r := randVec(rng, P)
		fd := richardson(func(e float64) []float64 {
			return []float64{sampleLoss(t, n, axpy(e, r, params), xs, y[s])}
		}, fdStep)
		if got := dot(g, r); math.Abs(got-fd[0]) > 1e-7*math.Max(1e-3, math.Abs(fd[0])) {
			t.Errorf("sample %d: gᵀr = %v, finite difference %v", s, got, fd[0])
		}
		for _, p := range ps {
			for _, i := range []int{p.Offset, p.Offset + p.Size/2, p.Offset + p.Size - 1} {
				e := make([]float64, P)
				e[i] = 1
				fd := richardson(func(h float64) []float64 {
					return []float64{sampleLoss(t, n, axpy(h, e, params), xs, y[s])}
				}, fdStep)
				if math.Abs(g[i]-fd[0]) > 1e-7*math.Max(1e-4, math.Abs(fd[0])) {
					t.Errorf("sample %d %s[%d]: grad %v, finite difference %v", s, p.Name, i-p.Offset, g[i], fd[0])
				}
			}
		}
	}
}

// TestTangentFD checks the forward-over-reverse tangents — of the per-sample
// parameter gradients and of the input gradients — against Richardson-extrapolated
// central differences of the gradients, with seeds on the input only, on the
// parameters only, and on both, several directions per sample.
func TestTangentFD(t *testing.T) {
	for _, bc := range backends64() {
		for _, tc := range testArchs(t) {
			if tc.arch.Name == "cifar-cnn" && bc.name != "cpu" {
				continue
			}
			t.Run(bc.name+"/"+tc.arch.Name, func(t *testing.T) {
				n := newNet64(t, tc.arch, bc)
				params, x, y := randomProblem(tc.arch, tc.batch, 3)
				checkTangentsFD(t, n, params, x, y, tc.batch)
			})
		}
	}
}

// checkTangentsFD seeds tangents on the input only, on the parameters only and on
// both, two directions per sample, and compares with finite differences.
func checkTangentsFD(t *testing.T, n *Network[float64], params, x []float64, y []int, B int) {
	t.Helper()
	seeds := []struct {
		name          string
		input, params bool
	}{{"input", true, false}, {"params", false, true}, {"both", true, true}}
	P, D := n.NumParams(), n.InputDim()
	k := 2
	rng := rand.New(rand.NewPCG(4, 4))
	for _, sd := range seeds {
		var xdot, pdot []float64
		if sd.input {
			xdot = make([]float64, 0, B*k*D)
			for r := 0; r < B*k; r++ {
				xdot = append(xdot, randVec(rng, D)...)
			}
		}
		if sd.params {
			pdot = make([]float64, 0, B*k*P)
			for r := 0; r < B*k; r++ {
				pdot = append(pdot, randVec(rng, P)...)
			}
		}
		res, err := n.Tangent(params, x, y, B, k, xdot, pdot, true)
		if err != nil {
			t.Fatal(err)
		}
		for s := 0; s < B; s++ {
			for j := 0; j < k; j++ {
				row := s*k + j
				xs := x[s*D : (s+1)*D]
				at := func(e float64) ([]float64, []float64) {
					xe, pe := xs, params
					if xdot != nil {
						xe = axpy(e, xdot[row*D:(row+1)*D], xs)
					}
					if pdot != nil {
						pe = axpy(e, pdot[row*P:(row+1)*P], params)
					}
					return pe, xe
				}
				fdG := richardson(func(e float64) []float64 {
					pe, xe := at(e)
					g, _, err := n.PerSampleGrads(pe, xe, y[s:s+1], 1)
					if err != nil {
						t.Fatal(err)
					}
					return g
				}, fdStep)
				if e := relErr(res.GradDots[row*P:(row+1)*P], fdG); e > 1e-6 {
					t.Errorf("%s seeds, sample %d dir %d: gradient tangent rel. error %.3g", sd.name, s, j, e)
				}
				fdX := richardson(func(e float64) []float64 {
					pe, xe := at(e)
					g, err := n.InputGrads(pe, xe, y[s:s+1], 1)
					if err != nil {
						t.Fatal(err)
					}
					return g
				}, fdStep)
				if e := relErr(res.InputGradDots[row*D:(row+1)*D], fdX); e > 1e-6 {
					t.Errorf("%s seeds, sample %d dir %d: input-gradient tangent rel. error %.3g", sd.name, s, j, e)
				}
			}
		}
	}
}

// singleLayerArchs has one network per layer kind in which that layer alone maps
// the input to the logits.
func singleLayerArchs() []Arch {
	return []Arch{
		{Name: "conv-alone", Input: Shape{C: 2, H: 4, W: 5}, Classes: 3, Layers: []LayerSpec{
			{Kind: KindConv, Out: 3, KH: 4, KW: 5, Stride: 2, PadT: 1, PadB: 0, PadL: 1, PadR: 0}}},
		{Name: "avgpool-alone", Input: Shape{C: 3, H: 3, W: 3}, Classes: 3, Layers: []LayerSpec{AvgPool(3, 2)}},
		{Name: "tanh-alone", Input: Shape{C: 4, H: 1, W: 1}, Classes: 4, Layers: []LayerSpec{layerTanh}},
		{Name: "elu-alone", Input: Shape{C: 4, H: 1, W: 1}, Classes: 4, Layers: []LayerSpec{layerELU}},
		{Name: "dense-alone", Input: Shape{C: 5, H: 1, W: 1}, Classes: 3, Layers: []LayerSpec{Dense(3)}},
		{Name: "flatten-alone", Input: Shape{C: 3, H: 1, W: 1}, Classes: 3, Layers: []LayerSpec{layerFlatten}},
		{Name: "normalize-alone", Input: Shape{C: 3, H: 1, W: 1}, Classes: 3, Layers: []LayerSpec{
			{Kind: KindNormalize, Mean: []float64{0.1, 0.2, 0.3}, Std: []float64{0.5, 2, 0.25}}}},
	}
}

// TestLayersAloneFD runs the gradient and tangent checks on each layer by itself,
// with inputs of both signs (ELU's two branches).
func TestLayersAloneFD(t *testing.T) {
	for _, bc := range backends64() {
		for _, arch := range singleLayerArchs() {
			t.Run(bc.name+"/"+arch.Name, func(t *testing.T) {
				n := newNet64(t, arch, bc)
				params, x, y := randomProblem(arch, 3, 5)
				for i := range x {
					x[i] = 4*x[i] - 2
				}
				checkGradsFD(t, n, params, x, y, 3)
				checkTangentsFD(t, n, params, x, y, 3)
			})
		}
	}
}
