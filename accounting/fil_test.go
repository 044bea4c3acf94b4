package accounting

import (
	"encoding/json"
	"fmt"
	"math"
	"testing"
)

func TestKappa(t *testing.T) {
	tests := []struct {
		name               string
		q, sigma, c, delta float64
	}{
		{"typical", 0.004, 1.1, 1, 1e-9},
		{"smooth clip", 0.05, 2, 1.115, 1e-7},
		{"full batch", 1, 1, 1, 1e-5},
		{"no sampling", 0, 1, 1, 1e-5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k, err := KappaClassic(KappaParams{Q: tc.q, Sigma: tc.sigma, ClipConstant: tc.c, DeltaF: tc.delta})
			if err != nil {
				t.Fatal(err)
			}
			// Independent evaluation: κ = 1/(1 + (1/q − 1)e^{−ε₀}).
			eps0 := 2 * tc.c * math.Sqrt(2*math.Log(1.25/tc.delta)) / tc.sigma
			want := 0.0
			if tc.q > 0 {
				want = 1 / (1 + (1/tc.q-1)*math.Exp(-eps0))
			}
			if math.Abs(k-want) > 1e-14 {
				t.Errorf("κ = %v, want %v", k, want)
			}
			if k < tc.q-1e-15 || k > 1 {
				t.Errorf("κ = %v outside [q, 1]", k)
			}
		})
	}
	// Hand-computed: δ_f = 1.25e^{−2} gives ε₀ = 2·√(2·2)/σ = 2 at σ = 2, so
	// κ = 0.5/(0.5 + 0.5e^{−2}) = 1/(1 + e^{−2}) = 0.8807970779778823.
	if k, _ := KappaClassic(KappaParams{Q: 0.5, Sigma: 2, ClipConstant: 1, DeltaF: 1.25 * math.Exp(-2)}); math.Abs(k-0.8807970779778823) > 1e-15 {
		t.Errorf("hand-computed κ: got %v", k)
	}
	// κ grows as σ shrinks (ε₀ grows) and as q grows.
	k1, _ := Kappa(KappaParams{Q: 0.01, Sigma: 5, ClipConstant: 1, DeltaF: 1e-6})
	k2, _ := Kappa(KappaParams{Q: 0.01, Sigma: 1, ClipConstant: 1, DeltaF: 1e-6})
	k3, _ := Kappa(KappaParams{Q: 0.02, Sigma: 1, ClipConstant: 1, DeltaF: 1e-6})
	if !(k1 < k2 && k2 < k3) {
		t.Errorf("κ not monotone: %v %v %v", k1, k2, k3)
	}
	for _, bad := range [][4]float64{{-0.1, 1, 1, 1e-5}, {1.1, 1, 1, 1e-5}, {0.1, 0, 1, 1e-5}, {0.1, 1, 0, 1e-5},
		{0.1, 1, 1, 0}, {0.1, 1, 1, 1}, {math.NaN(), 1, 1, 1e-5}, {0.1, 1, math.Inf(1), 1e-5}} {
		if _, err := Kappa(KappaParams{Q: bad[0], Sigma: bad[1], ClipConstant: bad[2], DeltaF: bad[3]}); err == nil {
			t.Errorf("Kappa%v: want an error", bad)
		}
		if _, err := KappaClassic(KappaParams{Q: bad[0], Sigma: bad[1], ClipConstant: bad[2], DeltaF: bad[3]}); err == nil {
			t.Errorf("KappaClassic%v: want an error", bad)
		}
	}
	if d := DefaultFILDelta(100, 1000); d != 1e-5 {
		t.Errorf("DefaultFILDelta = %v", d)
	}
	if !math.IsNaN(DefaultFILDelta(0, 10)) {
		t.Error("DefaultFILDelta(0, 10) should be NaN")
	}
}

func TestFILAccumulates(t *testing.T) {
	f, err := NewFIL(5, 4, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		idx []int
		tr  []float64
	}{
		{[]int{0, 2}, []float64{8, 4}},
		{[]int{2, 3}, []float64{2, 0}},
		{[]int{0}, []float64{1}},
	}
	for _, s := range steps {
		if err := f.AddStep(s.idx, s.tr); err != nil {
			t.Fatal(err)
		}
	}
	want := []float64{0.5 * 9 / 4, 0, 0.5 * 6 / 4, 0, 0}
	got := f.DFIL()
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-15 {
			t.Errorf("dFIL[%d] = %v, want %v", i, got[i], want[i])
		}
	}
	if f.Steps != 3 {
		t.Errorf("Steps = %d", f.Steps)
	}
	got[0] = 99 // DFIL returns a copy
	if f.DFIL()[0] == 99 {
		t.Error("DFIL must return a copy")
	}
	// Checkpoint round trip through JSON.
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	var g FIL
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	if err := g.AddStep([]int{4}, []float64{4}); err != nil {
		t.Fatal(err)
	}
	if g.DFIL()[4] != 0.5 || g.DFIL()[0] != want[0] {
		t.Errorf("restored accountant: %v", g.DFIL())
	}
}

func TestFILErrors(t *testing.T) {
	if _, err := NewFIL(0, 3, 0.5); err == nil {
		t.Error("n=0: want an error")
	}
	if _, err := NewFIL(3, 0, 0.5); err == nil {
		t.Error("d=0: want an error")
	}
	if _, err := NewFIL(3, 3, 1.5); err == nil {
		t.Error("kappa=1.5: want an error")
	}
	f, _ := NewFIL(3, 2, 1)
	tests := []struct {
		name string
		idx  []int
		tr   []float64
	}{
		{"length mismatch", []int{0, 1}, []float64{1}},
		{"index high", []int{3}, []float64{1}},
		{"index negative", []int{-1}, []float64{1}},
		{"NaN trace", []int{0}, []float64{math.NaN()}},
		{"Inf trace", []int{0}, []float64{math.Inf(1)}},
		{"negative trace", []int{1, 0}, []float64{1, -1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := f.AddStep(tc.idx, tc.tr); err == nil {
				t.Error("want an error")
			}
		})
	}
	for _, v := range f.DFIL() {
		if v != 0 {
			t.Fatalf("failed steps changed the accountant: %v", f.DFIL())
		}
	}
}

func TestMeanDFIL(t *testing.T) {
	m, err := MeanDFIL([]float64{1, 2, 0}, []float64{3, 2, 1})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(m) != "[2 2 0.5]" {
		t.Errorf("mean = %v", m)
	}
	for _, bad := range [][][]float64{{}, {{}}, {{1, 2}, {1}}, {{1, math.NaN()}}, {{-1}}} {
		if _, err := MeanDFIL(bad...); err == nil {
			t.Errorf("MeanDFIL(%v): want an error", bad)
		}
	}
}
