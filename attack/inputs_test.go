package attack

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
)

// TestMappedMLPIsMLPAtMappedInputs: under the symmetric range the network's losses,
// per-sample gradients, clipped sums and logits are the MLP's at 2x − 1 (computed
// here apart), bit for bit, and its input gradient is that of x ↦ ⟨v, clip(∇_θℓ(θ,
// 2x − 1))⟩ by float64 central differences in x; the unit range is the MLP itself.
func TestMappedMLPIsMLPAtMappedInputs(t *testing.T) {
	m, err := NewMLP(12, 5, 4)
	if err != nil {
		t.Fatal(err)
	}
	const n = 3
	params, x, y := testMLPInputs(t, m, n, 7)
	z := make([]float64, len(x))
	for i, v := range x {
		z[i] = 2*v - 1
	}
	newNet, err := withInputs(m, InputsSymmetric)
	if err != nil {
		t.Fatal(err)
	}
	net := newNet()
	P := m.NumParams()
	equal := func(what string, got, want []float64) {
		t.Helper()
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("%s[%d] = %v, the MLP at 2x − 1 gives %v", what, i, got[i], want[i])
			}
		}
	}
	g, l := make([]float64, n*P), make([]float64, n)
	gw, lw := make([]float64, n*P), make([]float64, n)
	if err := net.PerSampleGrads(params, x, y, n, g, l); err != nil {
		t.Fatal(err)
	}
	if err := m.PerSampleGrads(params, z, y, n, gw, lw); err != nil {
		t.Fatal(err)
	}
	equal("gradient", g, gw)
	equal("loss", l, lw)
	g0 := make([]float64, n*P)
	if err := m.PerSampleGrads(params, x, y, n, g0, nil); err != nil {
		t.Fatal(err)
	}
	if g0[0] == g[0] && g0[1] == g[1] {
		t.Fatal("the map changed nothing")
	}
	lg, lgw := make([]float64, n*m.Classes), make([]float64, n*m.Classes)
	if err := net.(Logitser).Logits(params, x, n, lg); err != nil {
		t.Fatal(err)
	}
	if err := m.Logits(params, z, n, lgw); err != nil {
		t.Fatal(err)
	}
	equal("logit", lg, lgw)
	s, sw := make([]float64, P), make([]float64, P)
	ls, err := net.(ClippedSummer).ClippedGradSum(params, x, y, n, 0.05, s)
	if err != nil {
		t.Fatal(err)
	}
	lsw, err := m.ClippedGradSum(params, z, y, n, 0.05, sw)
	if err != nil || ls != lsw {
		t.Fatalf("clipped sum loss %v, want %v (%v)", ls, lsw, err)
	}
	equal("clipped sum", s, sw)

	// The input gradient, in the unmapped x.
	r := rand.New(rand.NewPCG(3, 3))
	v := make([]float64, P)
	for i := range v {
		v[i] = r.NormFloat64()
	}
	x0 := x[:m.D]
	dot := func(xs []float64) float64 {
		gg := make([]float64, P)
		if err := net.PerSampleGrads(params, xs, y[:1], 1, gg, nil); err != nil {
			t.Fatal(err)
		}
		nn := 0.0
		for _, gi := range gg {
			nn += gi * gi
		}
		sc := math.Min(1, 0.05/math.Sqrt(nn))
		d := 0.0
		for i := range gg {
			d += v[i] * gg[i] * sc
		}
		return d
	}
	c, dx := make([]float64, P), make([]float64, m.D)
	if err := net.(InputGrader).ClippedDotInputGrad(params, x0, y[0], v, 0.05, c, dx); err != nil {
		t.Fatal(err)
	}
	const h = 1e-6
	for i := range x0 {
		xp := append([]float64(nil), x0...)
		xp[i] += h
		fp := dot(xp)
		xp[i] -= 2 * h
		fd := (fp - dot(xp)) / (2 * h)
		if math.Abs(fd-dx[i]) > 1e-6*(1+math.Abs(fd)) {
			t.Fatalf("pixel %d: input gradient %v, finite difference %v", i, dx[i], fd)
		}
	}
	for _, r := range []string{"", InputsUnit} {
		f, err := withInputs(m, r)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := f().(MLP); !ok {
			t.Errorf("range %q: %T, want the MLP itself", r, f())
		}
	}
	if _, err := withInputs(m, "pm1"); err == nil {
		t.Error("unknown range accepted")
	}
	if _, _, err := netFactory("linear", 0, InputsSymmetric, 784); err == nil {
		t.Error("symmetric inputs accepted for an engine model")
	}
}

// TestSymmetricInputsClipMore plays the same small game on the embedded MNIST with
// [0,1] and [−1,1] inputs: the mapped inputs are larger (MNIST's background is 0), so
// more candidates' gradients reach C — the mechanism the range exists for — and the
// report and game.json name the range.
func TestSymmetricInputsClipMore(t *testing.T) {
	frac := map[string]float64{}
	for _, in := range []string{InputsUnit, InputsSymmetric} {
		s := DefaultGameSpec()
		s.Known, s.Steps, s.Trials, s.Workers, s.Epsilon, s.Clip, s.LR, s.Inputs = 99, 40, 4, 2, 100, 1, 3, in
		s.Out = t.TempDir()
		r, err := PlayGame(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		frac[in] = r.ClippedFraction
		if want := map[string]string{InputsUnit: "", InputsSymmetric: InputsSymmetric}[in]; r.Inputs != want {
			t.Errorf("%s: report inputs %q, want %q", in, r.Inputs, want)
		}
		if in == InputsSymmetric { // a resumed run with [0,1] inputs is refused
			s.Inputs = InputsUnit
			if _, err := PlayGame(context.Background(), s); err == nil {
				t.Error("resuming a symmetric-input game with unit inputs was accepted")
			}
		}
	}
	t.Logf("clipped fraction: [0,1] %.3f, [−1,1] %.3f", frac[InputsUnit], frac[InputsSymmetric])
	if !(frac[InputsSymmetric] > frac[InputsUnit]+0.1) {
		t.Fatalf("clipped fraction %v with [−1,1] inputs, %v with [0,1]: want clearly more", frac[InputsSymmetric], frac[InputsUnit])
	}
}

// TestSymmetricInputsNormRatio: over the embedded MNIST's training digits the mean of
// ‖2x − 1‖ / ‖x‖ is 3.03 (the figure docs/attacks.md and docs/results.md quote), the
// factor by which the symmetric range scales a first-layer gradient's input side.
func TestSymmetricInputsNormRatio(t *testing.T) {
	pools, err := LoadPools("mnist-embedded", "")
	if err != nil {
		t.Fatal(err)
	}
	p := pools.Train
	x := make([]float64, p.D)
	sum := 0.0
	for i := 0; i < p.N(); i++ {
		p.ImageInto(i, x)
		a, b := 0.0, 0.0
		for _, v := range x {
			a += v * v
			b += (2*v - 1) * (2*v - 1)
		}
		sum += math.Sqrt(b / a)
	}
	if r := sum / float64(p.N()); math.Abs(r-3.03) > 0.005 {
		t.Fatalf("mean ‖2x − 1‖/‖x‖ = %.4f over %d digits, docs quote 3.03", r, p.N())
	}
}
