package attack

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// MLP is a hand-derived float64 implementation of the two-layer network of Hayes et
// al. (d → Hidden → ELU → Classes, softmax cross-entropy), in the flat parameter layout
// of the models package: W1 [Hidden][d], b1 [Hidden], W2 [Classes][Hidden], b2
// [Classes]. With d = 784, Hidden = 10, Classes = 10 it is the models "mlp"
// architecture. Besides per-sample gradients it provides the exact input gradient of
// ⟨u, ∇_θ ℓ(θ, x)⟩, a mixed second derivative, which the gradient-based
// reconstruction attack needs. It is tested against float64 finite differences and
// against the models engine.
//
// An MLP holds no scratch state; its methods are safe for concurrent use.
type MLP struct {
	D, Hidden, Classes int
}

// NewMLP returns the network d → hidden → ELU → classes.
func NewMLP(d, hidden, classes int) (MLP, error) {
	if d <= 0 || hidden <= 0 || classes < 2 {
		return MLP{}, fmt.Errorf("mlp: need d > 0, hidden > 0 and classes ≥ 2, got %d, %d, %d", d, hidden, classes)
	}
	return MLP{D: d, Hidden: hidden, Classes: classes}, nil
}

// NumParams is the length of the flat parameter vector.
func (m MLP) NumParams() int {
	return m.Hidden*m.D + m.Hidden + m.Classes*m.Hidden + m.Classes
}

// InputDim is d.
func (m MLP) InputDim() int { return m.D }

// NumClasses is the number of classes.
func (m MLP) NumClasses() int { return m.Classes }

// Init draws parameters from seed: Glorot-normal weights and N(0, 1e-12) biases (the
// stax defaults).
func (m MLP) Init(seed uint64) []float64 {
	r := rand.New(rand.NewPCG(seed, 0x6d6c70))
	p := make([]float64, m.NumParams())
	w1, b1, w2, b2 := m.split(p)
	s1 := math.Sqrt(2 / float64(m.D+m.Hidden))
	for i := range w1 {
		w1[i] = s1 * r.NormFloat64()
	}
	for i := range b1 {
		b1[i] = 1e-6 * r.NormFloat64()
	}
	s2 := math.Sqrt(2 / float64(m.Hidden+m.Classes))
	for i := range w2 {
		w2[i] = s2 * r.NormFloat64()
	}
	for i := range b2 {
		b2[i] = 1e-6 * r.NormFloat64()
	}
	return p
}

func (m MLP) split(p []float64) (w1, b1, w2, b2 []float64) {
	o := 0
	w1 = p[o : o+m.Hidden*m.D]
	o += m.Hidden * m.D
	b1 = p[o : o+m.Hidden]
	o += m.Hidden
	w2 = p[o : o+m.Classes*m.Hidden]
	o += m.Classes * m.Hidden
	b2 = p[o : o+m.Classes]
	return
}

func (m MLP) check(params, x []float64, y []int, n int) error {
	if len(params) != m.NumParams() {
		return fmt.Errorf("mlp: %d parameters, want %d", len(params), m.NumParams())
	}
	if n < 0 || len(x) != n*m.D {
		return fmt.Errorf("mlp: %d input values for %d samples of %d", len(x), n, m.D)
	}
	if len(y) != n {
		return fmt.Errorf("mlp: %d labels for %d samples", len(y), n)
	}
	for _, c := range y {
		if c < 0 || c >= m.Classes {
			return fmt.Errorf("mlp: label %d outside [0,%d)", c, m.Classes)
		}
	}
	return nil
}

func elu(h float64) (a, d1, d2 float64) {
	if h > 0 {
		return h, 1, 0
	}
	e := math.Exp(h)
	return e - 1, e, e
}

// fwd holds one sample's forward/backward quantities.
type fwd struct {
	h, a, d1, d2 []float64 // pre-activation, ELU, ELU', ELU''
	p, do, da    []float64 // softmax, δo = p − e_y, δa = W2ᵀδo
	dh           []float64 // δh = δa ⊙ ELU'
	loss         float64
}

func (m MLP) newFwd() *fwd {
	return &fwd{
		h: make([]float64, m.Hidden), a: make([]float64, m.Hidden), d1: make([]float64, m.Hidden),
		d2: make([]float64, m.Hidden), p: make([]float64, m.Classes), do: make([]float64, m.Classes),
		da: make([]float64, m.Hidden), dh: make([]float64, m.Hidden),
	}
}

// run computes the forward pass and the backward deltas of one sample.
func (m MLP) run(params, x []float64, y int, f *fwd) {
	w1, b1, w2, b2 := m.split(params)
	for j := 0; j < m.Hidden; j++ {
		row := w1[j*m.D : (j+1)*m.D]
		s := b1[j]
		for i, xi := range x {
			s += row[i] * xi
		}
		f.h[j] = s
		f.a[j], f.d1[j], f.d2[j] = elu(s)
	}
	mx := math.Inf(-1)
	for k := 0; k < m.Classes; k++ {
		row := w2[k*m.Hidden : (k+1)*m.Hidden]
		s := b2[k]
		for j, aj := range f.a {
			s += row[j] * aj
		}
		f.p[k] = s
		mx = math.Max(mx, s)
	}
	z := 0.0
	for k := range f.p {
		f.p[k] = math.Exp(f.p[k] - mx)
		z += f.p[k]
	}
	for k := range f.p {
		f.p[k] /= z
		f.do[k] = f.p[k]
	}
	f.do[y] -= 1
	f.loss = -math.Log(math.Max(f.p[y], math.SmallestNonzeroFloat64))
	for j := range f.da {
		f.da[j] = 0
	}
	for k, dk := range f.do {
		row := w2[k*m.Hidden : (k+1)*m.Hidden]
		for j := range f.da {
			f.da[j] += row[j] * dk
		}
	}
	for j := range f.dh {
		f.dh[j] = f.da[j] * f.d1[j]
	}
}

// writeGrad writes the parameter gradient of f's sample (input x) to g.
func (m MLP) writeGrad(x []float64, f *fwd, g []float64) {
	gw1, gb1, gw2, gb2 := m.split(g)
	for j, dj := range f.dh {
		row := gw1[j*m.D : (j+1)*m.D]
		for i, xi := range x {
			row[i] = dj * xi
		}
		gb1[j] = dj
	}
	for k, dk := range f.do {
		row := gw2[k*m.Hidden : (k+1)*m.Hidden]
		for j, aj := range f.a {
			row[j] = dk * aj
		}
		gb2[k] = dk
	}
}

// PerSampleGrads writes the loss gradient of each of the n samples to grads (n×P,
// row-major) and their losses to losses (may be nil).
func (m MLP) PerSampleGrads(params, x []float64, y []int, n int, grads, losses []float64) error {
	if err := m.check(params, x, y, n); err != nil {
		return err
	}
	p := m.NumParams()
	if len(grads) != n*p {
		return fmt.Errorf("mlp: grads has %d values, want %d", len(grads), n*p)
	}
	if losses != nil && len(losses) != n {
		return fmt.Errorf("mlp: losses has %d values, want %d", len(losses), n)
	}
	f := m.newFwd()
	for s := 0; s < n; s++ {
		xs := x[s*m.D : (s+1)*m.D]
		m.run(params, xs, y[s], f)
		m.writeGrad(xs, f, grads[s*p:(s+1)*p])
		if losses != nil {
			losses[s] = f.loss
		}
	}
	return nil
}

// Logits writes the n×Classes logits of x to out.
func (m MLP) Logits(params, x []float64, n int, out []float64) error {
	if err := m.check(params, x, make([]int, n), n); err != nil {
		return err
	}
	if len(out) != n*m.Classes {
		return fmt.Errorf("mlp: logits buffer has %d values, want %d", len(out), n*m.Classes)
	}
	w1, b1, w2, b2 := m.split(params)
	a := make([]float64, m.Hidden)
	for s := 0; s < n; s++ {
		xs := x[s*m.D : (s+1)*m.D]
		for j := range a {
			row := w1[j*m.D : (j+1)*m.D]
			v := b1[j]
			for i, xi := range xs {
				v += row[i] * xi
			}
			a[j], _, _ = elu(v)
		}
		for k := 0; k < m.Classes; k++ {
			row := w2[k*m.Hidden : (k+1)*m.Hidden]
			v := b2[k]
			for j, aj := range a {
				v += row[j] * aj
			}
			out[s*m.Classes+k] = v
		}
	}
	return nil
}

// ClippedDotInputGrad returns, for one sample (x, y), the clipped gradient
// c = clip_C(∇_θ ℓ(θ, x, y)) = g·min(1, C/‖g‖) (written to clipped, len P) and the exact
// gradient with respect to x of ⟨v, c⟩ (written to dx, len d). This is the
// ∂/∂x of the gradient-matching loss of the gradient-based attack: with
// s = min(1, C/‖g‖), ∂⟨v, c⟩/∂x = Jᵀu where J = ∂g/∂x and u = s·v when ‖g‖ ≤ C, and
// u = s·v − C⟨v,g⟩/‖g‖³·g otherwise.
func (m MLP) ClippedDotInputGrad(params, x []float64, y int, v []float64, clip float64, clipped, dx []float64) error {
	if err := m.check(params, x, []int{y}, 1); err != nil {
		return err
	}
	p := m.NumParams()
	if len(v) != p || len(clipped) != p || len(dx) != m.D {
		return fmt.Errorf("mlp: clipped-dot buffers have lengths %d, %d, %d; want %d, %d, %d", len(v), len(clipped), len(dx), p, p, m.D)
	}
	if !(clip > 0) || math.IsInf(clip, 0) {
		return fmt.Errorf("mlp: clip norm must be positive and finite, got %v", clip)
	}
	f := m.newFwd()
	m.run(params, x, y, f)
	m.writeGrad(x, f, clipped)
	nrm, vg := 0.0, 0.0
	for i, gi := range clipped {
		nrm += gi * gi
		vg += v[i] * gi
	}
	nrm = math.Sqrt(nrm)
	u := make([]float64, p)
	if nrm <= clip {
		copy(u, v)
	} else {
		s := clip / nrm
		c := clip * vg / (nrm * nrm * nrm)
		for i := range u {
			u[i] = s*v[i] - c*clipped[i]
		}
		for i := range clipped {
			clipped[i] *= s
		}
	}
	m.inputVJP(params, x, f, u, dx)
	return nil
}

// inputVJP writes ∂⟨u, ∇_θ ℓ(θ, x)⟩/∂x to dx, given the forward quantities f of x.
func (m MLP) inputVJP(params, x []float64, f *fwd, u, dx []float64) {
	w1, _, w2, _ := m.split(params)
	u1, ub1, u2, ub2 := m.split(u)
	H, K := m.Hidden, m.Classes
	// φ = δhᵀ r + δoᵀ mm with r = U1 x + u_b1, mm = U2 a + u_b2.
	r := make([]float64, H)
	for j := 0; j < H; j++ {
		row := u1[j*m.D : (j+1)*m.D]
		s := ub1[j]
		for i, xi := range x {
			s += row[i] * xi
		}
		r[j] = s
	}
	mm := make([]float64, K)
	for k := 0; k < K; k++ {
		row := u2[k*H : (k+1)*H]
		s := ub2[k]
		for j, aj := range f.a {
			s += row[j] * aj
		}
		mm[k] = s
	}
	adjH := make([]float64, H)
	adjA := make([]float64, H)
	adjDo := make([]float64, K)
	for j := 0; j < H; j++ {
		// δh = δa ⊙ ELU'(h): ∂/∂ELU' = r⊙δa, and ELU' depends on h through ELU''.
		adjH[j] = r[j] * f.da[j] * f.d2[j]
	}
	copy(adjDo, mm)
	for k := 0; k < K; k++ {
		row := w2[k*H : (k+1)*H]
		s := 0.0
		for j := 0; j < H; j++ {
			s += row[j] * r[j] * f.d1[j] // δa = W2ᵀδo
		}
		adjDo[k] += s
	}
	for k := 0; k < K; k++ { // mm = U2 a + u_b2
		row := u2[k*H : (k+1)*H]
		for j := 0; j < H; j++ {
			adjA[j] += row[j] * f.do[k]
		}
	}
	// δo = softmax(o) − e_y: adj o = (diag p − p pᵀ) adj δo.
	pd := 0.0
	for k := 0; k < K; k++ {
		pd += f.p[k] * adjDo[k]
	}
	for k := 0; k < K; k++ {
		ao := f.p[k] * (adjDo[k] - pd)
		row := w2[k*H : (k+1)*H]
		for j := 0; j < H; j++ {
			adjA[j] += row[j] * ao
		}
	}
	for j := 0; j < H; j++ {
		adjH[j] += adjA[j] * f.d1[j]
	}
	for i := range dx {
		dx[i] = 0
	}
	for j := 0; j < H; j++ {
		w := w1[j*m.D : (j+1)*m.D]
		uu := u1[j*m.D : (j+1)*m.D]
		a, b := adjH[j], f.dh[j]
		for i := range dx {
			dx[i] += w[i]*a + uu[i]*b
		}
	}
}

// ClippedGradSum adds Σ_s clip_C(∇_θ ℓ(θ, x_s, y_s)) over the n samples to sum (len P)
// and returns the sum of their losses, without materialising per-sample gradients:
// ‖g_s‖² = ‖δh‖²(‖x‖² + 1) + ‖δo‖²(‖a‖² + 1) for this network.
func (m MLP) ClippedGradSum(params, x []float64, y []int, n int, clip float64, sum []float64) (float64, error) {
	if err := m.check(params, x, y, n); err != nil {
		return 0, err
	}
	if len(sum) != m.NumParams() {
		return 0, fmt.Errorf("mlp: sum has %d values, want %d", len(sum), m.NumParams())
	}
	if !(clip > 0) || math.IsInf(clip, 0) {
		return 0, fmt.Errorf("mlp: clip norm must be positive and finite, got %v", clip)
	}
	sw1, sb1, sw2, sb2 := m.split(sum)
	f := m.newFwd()
	loss := 0.0
	for s := 0; s < n; s++ {
		xs := x[s*m.D : (s+1)*m.D]
		m.run(params, xs, y[s], f)
		loss += f.loss
		xx, hh, oo, aa := 0.0, 0.0, 0.0, 0.0
		for _, v := range xs {
			xx += v * v
		}
		for j := range f.dh {
			hh += f.dh[j] * f.dh[j]
			aa += f.a[j] * f.a[j]
		}
		for _, v := range f.do {
			oo += v * v
		}
		nrm := math.Sqrt(hh*(xx+1) + oo*(aa+1))
		sc := 1.0
		if nrm > clip {
			sc = clip / nrm
		}
		for j, dj := range f.dh {
			c := sc * dj
			row := sw1[j*m.D : (j+1)*m.D]
			for i, xi := range xs {
				row[i] += c * xi
			}
			sb1[j] += c
		}
		for k, dk := range f.do {
			c := sc * dk
			row := sw2[k*m.Hidden : (k+1)*m.Hidden]
			for j, aj := range f.a {
				row[j] += c * aj
			}
			sb2[k] += c
		}
	}
	return loss, nil
}
