package attack

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dpfil/dpfil/models"
)

// The hand-derived MLP and the models engine are independent implementations of the
// same network: their per-sample gradients and clipped-dot input gradients must agree.
func TestMLPMatchesEngine(t *testing.T) {
	arch, err := models.ArchByName("mlp")
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewEngineNet(arch)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := NewMLP(784, 10, 10)
	if e.NumParams() != m.NumParams() || e.InputDim() != m.InputDim() {
		t.Fatalf("engine P=%d d=%d, MLP P=%d d=%d", e.NumParams(), e.InputDim(), m.NumParams(), m.InputDim())
	}
	r := rand.New(rand.NewPCG(2, 2))
	params := e.Init(3)
	for i := range params {
		params[i] += 0.05 * r.NormFloat64()
	}
	const n = 4
	x := make([]float64, n*784)
	for i := range x {
		x[i] = r.Float64()
	}
	y := []int{0, 3, 7, 9}
	P := m.NumParams()
	ge, gm := make([]float64, n*P), make([]float64, n*P)
	le, lm := make([]float64, n), make([]float64, n)
	if err := e.PerSampleGrads(params, x, y, n, ge, le); err != nil {
		t.Fatal(err)
	}
	if err := m.PerSampleGrads(params, x, y, n, gm, lm); err != nil {
		t.Fatal(err)
	}
	for i := range ge {
		if math.Abs(ge[i]-gm[i]) > 1e-9*(1+math.Abs(gm[i])) {
			t.Fatalf("gradient %d: engine %v, MLP %v", i, ge[i], gm[i])
		}
	}
	for i := range le {
		if math.Abs(le[i]-lm[i]) > 1e-10 {
			t.Fatalf("loss %d: engine %v, MLP %v", i, le[i], lm[i])
		}
	}
	lgE, lgM := make([]float64, n*10), make([]float64, n*10)
	if err := e.Logits(params, x, n, lgE); err != nil {
		t.Fatal(err)
	}
	if err := m.Logits(params, x, n, lgM); err != nil {
		t.Fatal(err)
	}
	for i := range lgE {
		if math.Abs(lgE[i]-lgM[i]) > 1e-10*(1+math.Abs(lgM[i])) {
			t.Fatalf("logit %d: engine %v, MLP %v", i, lgE[i], lgM[i])
		}
	}
	v := make([]float64, P)
	for i := range v {
		v[i] = r.NormFloat64()
	}
	for _, clip := range []float64{0.01, 1e3} {
		ce, cm := make([]float64, P), make([]float64, P)
		de, dm := make([]float64, 784), make([]float64, 784)
		if err := e.ClippedDotInputGrad(params, x[:784], y[0], v, clip, ce, de); err != nil {
			t.Fatal(err)
		}
		if err := m.ClippedDotInputGrad(params, x[:784], y[0], v, clip, cm, dm); err != nil {
			t.Fatal(err)
		}
		for i := range de {
			if math.Abs(de[i]-dm[i]) > 1e-8*(1+math.Abs(dm[i])) {
				t.Fatalf("clip %v pixel %d: engine %v, MLP %v", clip, i, de[i], dm[i])
			}
		}
		for i := range ce {
			if math.Abs(ce[i]-cm[i]) > 1e-9*(1+math.Abs(cm[i])) {
				t.Fatalf("clip %v clipped grad %d: engine %v, MLP %v", clip, i, ce[i], cm[i])
			}
		}
	}
}

func benchGrads(b *testing.B, net Net) {
	r := rand.New(rand.NewPCG(1, 1))
	const n = 64
	x := make([]float64, n*784)
	for i := range x {
		x[i] = r.Float64()
	}
	y := make([]int, n)
	m, _ := NewMLP(784, 10, 10)
	params := m.Init(1)
	g := make([]float64, n*net.NumParams())
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := net.PerSampleGrads(params, x, y, n, g, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "samples/s")
}

func BenchmarkPerSampleGradsMLP(b *testing.B) {
	m, _ := NewMLP(784, 10, 10)
	benchGrads(b, m)
}

func BenchmarkPerSampleGradsEngine(b *testing.B) {
	arch, _ := models.ArchByName("mlp")
	e, err := NewEngineNet(arch)
	if err != nil {
		b.Fatal(err)
	}
	benchGrads(b, e)
}

// TestEngineNetRefusesWrongBuffers checks that Logits and ClippedDotInputGrad reject
// an output buffer of the wrong length, naming it, instead of writing part of it.
func TestEngineNetRefusesWrongBuffers(t *testing.T) {
	arch, err := models.ArchByName("mlp")
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewEngineNet(arch)
	if err != nil {
		t.Fatal(err)
	}
	params, x := e.Init(1), make([]float64, e.InputDim())
	if err := e.Logits(params, x, 1, make([]float64, 9)); err == nil || err.Error() != "attack: logits buffer has 9 values, want 10" {
		t.Errorf("short logits buffer: %v", err)
	}
	v, clipped := make([]float64, e.NumParams()), make([]float64, e.NumParams())
	v[0] = 1
	err = e.ClippedDotInputGrad(params, x, 3, v, 1, clipped, make([]float64, e.InputDim()+1))
	if want := "attack: input gradient buffer has 785 values, want 784"; err == nil || err.Error() != want {
		t.Errorf("long input-gradient buffer: %v, want %q", err, want)
	}
	out := make([]float64, 10)
	if err := e.Logits(params, x, 1, out); err != nil {
		t.Fatal(err)
	}
}
