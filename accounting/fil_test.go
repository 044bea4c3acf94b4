package accounting

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
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

func TestSummarizeDFIL(t *testing.T) {
	// 0, 1, …, 100: quantile p is 100p exactly with linear interpolation.
	x := make([]float64, 101)
	for i := range x {
		x[100-i] = float64(i)
	}
	s := SummarizeDFIL(x)
	if s.Count != 101 || s.Max != 100 || s.Min != 0 || s.Median != 50 || s.Mean != 50 {
		t.Errorf("summary %+v", s)
	}
	for k, want := range map[string]float64{"p01": 1, "p05": 5, "p25": 25, "p90": 90, "p99": 99} {
		if math.Abs(s.Quantiles[k]-want) > 1e-12 {
			t.Errorf("%s = %v, want %v", k, s.Quantiles[k], want)
		}
	}
	if s.MSEBoundMax != 0.01 || s.MSEBoundMedian != 0.02 {
		t.Errorf("bounds %v %v", s.MSEBoundMax, s.MSEBoundMedian)
	}
	// Interpolation between order statistics: [1, 2] has median 1.5, p25 1.25.
	s2 := SummarizeDFIL([]float64{2, 1})
	if s2.Median != 1.5 || s2.Quantiles["p25"] != 1.25 {
		t.Errorf("two-point summary %+v", s2)
	}
	// All zero: infinite bounds encode as null.
	z := SummarizeDFIL([]float64{0, 0})
	b, err := json.Marshal(z)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"mse_bound_max":null`) {
		t.Errorf("JSON %s", b)
	}
	if e := SummarizeDFIL(nil); e.Count != 0 || !math.IsNaN(e.Max) {
		t.Errorf("empty summary %+v", e)
	}
}

func TestDFILFileRoundTrip(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "dfil.npy")
	x := []float64{0, 1.5, 1e-300, 3e10}
	if err := SaveDFIL(p, x); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	// Header: magic, v1.0, 64-byte-aligned, numpy's dict spelling.
	if !bytes.HasPrefix(b, []byte("\x93NUMPY\x01\x00")) || (len(b)-8*len(x))%64 != 0 ||
		!bytes.Contains(b, []byte("{'descr': '<f8', 'fortran_order': False, 'shape': (4,), }")) {
		t.Errorf("unexpected npy layout %q", b[:min(len(b), 80)])
	}
	y, err := LoadDFIL(p)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(y) != fmt.Sprint(x) {
		t.Errorf("round trip %v", y)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("temporary files left behind: %v", ents)
	}
	if err := SaveDFIL(filepath.Join(dir, "bad.npy"), []float64{math.NaN()}); err == nil {
		t.Error("saving NaN: want an error")
	}
	if err := SaveDFIL(filepath.Join(dir, "no", "such", "dir.npy"), x); err == nil {
		t.Error("saving into a missing directory: want an error")
	}
}

func TestLoadDFILCorrupt(t *testing.T) {
	var good bytes.Buffer
	if err := EncodeNPY(&good, []float64{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	g := good.Bytes()
	hdr := func(h string) []byte {
		b := []byte("\x93NUMPY\x01\x00")
		b = append(b, byte(len(h)), byte(len(h)>>8))
		return append(b, h...)
	}
	f32 := append(hdr("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n"), 0, 0, 0x80, 0x3f, 0, 0, 0, 0x40)
	tests := []struct {
		name string
		data []byte
		ok   bool
	}{
		{"good", g, true},
		{"float32", f32, true},
		{"empty", nil, false},
		{"bad magic", append([]byte("XNUMPY"), g[6:]...), false},
		{"truncated data", g[:len(g)-3], false},
		{"trailing bytes", append(append([]byte{}, g...), 1), false},
		{"truncated header", g[:20], false},
		{"int dtype", append(hdr("{'descr': '<i8', 'fortran_order': False, 'shape': (1,), }\n"), make([]byte, 8)...), false},
		{"big endian", append(hdr("{'descr': '>f8', 'fortran_order': False, 'shape': (1,), }\n"), make([]byte, 8)...), false},
		{"matrix", append(hdr("{'descr': '<f8', 'fortran_order': False, 'shape': (1, 2), }\n"), make([]byte, 16)...), false},
		{"no shape", append(hdr("{'descr': '<f8', 'fortran_order': False}\n"), make([]byte, 8)...), false},
		{"version 9", append([]byte("\x93NUMPY\x09\x00"), g[8:]...), false},
		{"NaN value", append(hdr("{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }\n"), 1, 0, 0, 0, 0, 0, 0xf8, 0x7f), false},
		{"negative value", append(hdr("{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }\n"), 0, 0, 0, 0, 0, 0, 0xf0, 0xbf), false},
		{"huge shape", append(hdr("{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999,), }\n"), make([]byte, 8)...), false},
	}
	dir := t.TempDir()
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, fmt.Sprintf("f%d.npy", i))
			if err := os.WriteFile(p, tc.data, 0o644); err != nil {
				t.Fatal(err)
			}
			x, err := LoadDFIL(p)
			if tc.ok && err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if !tc.ok && err == nil {
				t.Fatalf("want an error, got %v", x)
			}
		})
	}
	if x, _ := LoadDFIL(filepath.Join(dir, "f1.npy")); fmt.Sprint(x) != "[1 2]" {
		t.Errorf("float32 file read as %v", x)
	}
	if _, err := LoadDFIL(filepath.Join(dir, "missing.npy")); err == nil {
		t.Error("missing file: want an error")
	}
}
