package attack

import (
	"math"
	"math/rand/v2"
	"testing"
)

func testMLPInputs(t *testing.T, m MLP, n int, seed uint64) (params, x []float64, y []int) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 1))
	params = m.Init(seed)
	// bigger biases so some ELU units sit on each side of 0
	for i := range params {
		params[i] += 0.3 * r.NormFloat64()
	}
	x = make([]float64, n*m.D)
	for i := range x {
		x[i] = r.Float64()
	}
	y = make([]int, n)
	for i := range y {
		y[i] = r.IntN(m.Classes)
	}
	return
}

func mlpLoss(t *testing.T, m MLP, params, x []float64, y int) float64 {
	t.Helper()
	g := make([]float64, m.NumParams())
	l := make([]float64, 1)
	if err := m.PerSampleGrads(params, x, []int{y}, 1, g, l); err != nil {
		t.Fatal(err)
	}
	return l[0]
}

func TestMLPGradFiniteDifferences(t *testing.T) {
	m, err := NewMLP(12, 5, 4)
	if err != nil {
		t.Fatal(err)
	}
	params, x, y := testMLPInputs(t, m, 3, 7)
	P := m.NumParams()
	g := make([]float64, 3*P)
	if err := m.PerSampleGrads(params, x, y, 3, g, nil); err != nil {
		t.Fatal(err)
	}
	const h = 1e-6
	for s := 0; s < 3; s++ {
		xs := x[s*m.D : (s+1)*m.D]
		for i := 0; i < P; i++ {
			pp := append([]float64(nil), params...)
			pp[i] += h
			lp := mlpLoss(t, m, pp, xs, y[s])
			pp[i] -= 2 * h
			lm := mlpLoss(t, m, pp, xs, y[s])
			fd := (lp - lm) / (2 * h)
			if d := math.Abs(fd - g[s*P+i]); d > 1e-7*(1+math.Abs(fd)) {
				t.Fatalf("sample %d param %d: grad %v, finite difference %v", s, i, g[s*P+i], fd)
			}
		}
	}
}

// clippedDot is ⟨v, clip_C(∇_θ ℓ(θ, x, y))⟩ computed from PerSampleGrads only.
func clippedDot(t *testing.T, m MLP, params, x []float64, y int, v []float64, c float64) float64 {
	t.Helper()
	g := make([]float64, m.NumParams())
	if err := m.PerSampleGrads(params, x, []int{y}, 1, g, nil); err != nil {
		t.Fatal(err)
	}
	n := 0.0
	for _, gi := range g {
		n += gi * gi
	}
	s := math.Min(1, c/math.Sqrt(n))
	d := 0.0
	for i := range g {
		d += v[i] * g[i] * s
	}
	return d
}

func TestClippedDotInputGradFiniteDifferences(t *testing.T) {
	m, err := NewMLP(10, 6, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		clip float64
	}{{"clipped", 0.05}, {"unclipped", 1e3}} {
		t.Run(tc.name, func(t *testing.T) {
			params, x, y := testMLPInputs(t, m, 1, 11)
			r := rand.New(rand.NewPCG(3, 3))
			v := make([]float64, m.NumParams())
			for i := range v {
				v[i] = r.NormFloat64()
			}
			c := make([]float64, m.NumParams())
			dx := make([]float64, m.D)
			if err := m.ClippedDotInputGrad(params, x, y[0], v, tc.clip, c, dx); err != nil {
				t.Fatal(err)
			}
			want := clippedDot(t, m, params, x, y[0], v, tc.clip)
			got := 0.0
			for i := range v {
				got += v[i] * c[i]
			}
			if math.Abs(got-want) > 1e-12*(1+math.Abs(want)) {
				t.Fatalf("clipped gradient: dot %v, want %v", got, want)
			}
			const h = 1e-6
			for i := range x {
				xp := append([]float64(nil), x...)
				xp[i] += h
				fp := clippedDot(t, m, params, xp, y[0], v, tc.clip)
				xp[i] -= 2 * h
				fm := clippedDot(t, m, params, xp, y[0], v, tc.clip)
				fd := (fp - fm) / (2 * h)
				if d := math.Abs(fd - dx[i]); d > 1e-6*(1+math.Abs(fd)) {
					t.Fatalf("pixel %d: input gradient %v, finite difference %v", i, dx[i], fd)
				}
			}
		})
	}
}

func TestMLPBadInput(t *testing.T) {
	m, _ := NewMLP(4, 3, 2)
	p := m.Init(1)
	g := make([]float64, m.NumParams())
	for _, tc := range []struct {
		name   string
		params []float64
		x      []float64
		y      []int
	}{
		{"short params", p[:3], make([]float64, 4), []int{0}},
		{"short x", p, make([]float64, 3), []int{0}},
		{"bad label", p, make([]float64, 4), []int{2}},
		{"negative label", p, make([]float64, 4), []int{-1}},
	} {
		if err := m.PerSampleGrads(tc.params, tc.x, tc.y, 1, g, nil); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
	if _, err := NewMLP(0, 3, 2); err == nil {
		t.Error("NewMLP(0,…): no error")
	}
	if err := m.ClippedDotInputGrad(p, make([]float64, 4), 0, g, 0, g, make([]float64, 4)); err == nil {
		t.Error("clip 0: no error")
	}
}

func TestClippedGradSumMatchesPerSample(t *testing.T) {
	m, _ := NewMLP(15, 4, 3)
	params, x, y := testMLPInputs(t, m, 6, 21)
	P := m.NumParams()
	for _, clip := range []float64{0.05, 1, 1e3} {
		g := make([]float64, 6*P)
		l := make([]float64, 6)
		if err := m.PerSampleGrads(params, x, y, 6, g, l); err != nil {
			t.Fatal(err)
		}
		clipRows(g, 6, P, clip, nil)
		want := make([]float64, P)
		wl := 0.0
		for s := 0; s < 6; s++ {
			for i := range want {
				want[i] += g[s*P+i]
			}
			wl += l[s]
		}
		got := make([]float64, P)
		gl, err := m.ClippedGradSum(params, x, y, 6, clip, got)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(gl-wl) > 1e-12*wl {
			t.Fatalf("clip %v: loss %v, want %v", clip, gl, wl)
		}
		for i := range want {
			if math.Abs(got[i]-want[i]) > 1e-12*(1+math.Abs(want[i])) {
				t.Fatalf("clip %v: sum[%d] = %v, want %v", clip, i, got[i], want[i])
			}
		}
	}
	if _, err := m.ClippedGradSum(params, x, y, 6, 0, make([]float64, P)); err == nil {
		t.Error("clip 0: no error")
	}
}

func BenchmarkClippedGradSumMLP(b *testing.B) {
	m, _ := NewMLP(784, 10, 10)
	r := rand.New(rand.NewPCG(1, 1))
	const n = 64
	x := make([]float64, n*784)
	for i := range x {
		x[i] = r.Float64()
	}
	y := make([]int, n)
	params := m.Init(1)
	sum := make([]float64, m.NumParams())
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := m.ClippedGradSum(params, x, y, n, 0.1, sum); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "samples/s")
}
