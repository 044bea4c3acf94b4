package fil

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dpfil/dpfil/internal/npy"
)

func TestSummarize(t *testing.T) {
	// 0, 1, …, 100: quantile p is 100p exactly with linear interpolation.
	x := make([]float64, 101)
	for i := range x {
		x[100-i] = float64(i)
	}
	s := Summarize(x)
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
	s2 := Summarize([]float64{2, 1})
	if s2.Median != 1.5 || s2.Quantiles["p25"] != 1.25 {
		t.Errorf("two-point summary %+v", s2)
	}
	// All zero: infinite bounds encode as null.
	z := Summarize([]float64{0, 0})
	b, err := json.Marshal(z)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"mse_bound_max":null`) {
		t.Errorf("JSON %s", b)
	}
	if e := Summarize(nil); e.Count != 0 || !math.IsNaN(e.Max) {
		t.Errorf("empty summary %+v", e)
	}
}

func TestDFILFileRoundTrip(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "dfil.npy")
	x := []float64{0, 1.5, 1e-300, 3e10}
	if err := Save(p, x); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	// Header: magic, v1.0, 64-byte-aligned, numpy's dict spelling.
	if !bytes.HasPrefix(b, []byte("\x93NUMPY\x01\x00")) || (len(b)-8*len(x))%64 != 0 ||
		!bytes.Contains(b, []byte("{'descr': '<f8', 'fortran_order': False, 'shape': (4,), }")) {
		t.Errorf("unexpected npy layout %q", b[:min(len(b), 80)])
	}
	y, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(y) != fmt.Sprint(x) {
		t.Errorf("round trip %v", y)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("temporary files left behind: %v", ents)
	}
	if err := Save(filepath.Join(dir, "bad.npy"), []float64{math.NaN()}); err == nil {
		t.Error("saving NaN: want an error")
	}
	if err := Save(filepath.Join(dir, "no", "such", "dir.npy"), x); err == nil {
		t.Error("saving into a missing directory: want an error")
	}
}

func TestLoadCorrupt(t *testing.T) {
	g, err := npy.EncodeFloat64([]int{3}, []float64{1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
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
			x, err := Load(p)
			if tc.ok && err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if !tc.ok && err == nil {
				t.Fatalf("want an error, got %v", x)
			}
		})
	}
	if x, _ := Load(filepath.Join(dir, "f1.npy")); fmt.Sprint(x) != "[1 2]" {
		t.Errorf("float32 file read as %v", x)
	}
	if _, err := Load(filepath.Join(dir, "missing.npy")); err == nil {
		t.Error("missing file: want an error")
	}
}

// Repeated runs' files merge by the per-sample mean into out, summarised.
func TestSummarizeFiles(t *testing.T) {
	dir := t.TempDir()
	a, b, out := filepath.Join(dir, "a.npy"), filepath.Join(dir, "b.npy"), filepath.Join(dir, "m.npy")
	_ = Save(a, []float64{1, 2, 4})
	_ = Save(b, []float64{3, 2, 0})
	s, err := SummarizeFiles([]string{a, b}, out)
	if err != nil {
		t.Fatal(err)
	}
	merged, err := Load(out)
	if err != nil || !slices.Equal(merged, []float64{2, 2, 2}) || s.Runs != 2 || s.Summary.Max != 2 || s.Summary.MSEBoundMax != 0.5 {
		t.Errorf("merged %v (%v), summary %+v", merged, err, s)
	}
	// √dFIL per file, then averaged: a = 1, √2, 2 (max 2, median √2); b = √3, √2, 0
	// (max √3, median √2).
	if q := s.SqrtDFIL; q.Runs != 2 || math.Abs(q.Max-(2+math.Sqrt(3))/2) > 1e-15 || math.Abs(q.Median-math.Sqrt(2)) > 1e-15 ||
		math.Abs(q.Mean-(3+2*math.Sqrt(2)+math.Sqrt(3))/6) > 1e-15 {
		t.Errorf("sqrt_dfil %+v", q)
	}
	var w strings.Builder
	s.WriteText(&w)
	if !strings.Contains(w.String(), "3 samples, 2 run(s)") || !strings.Contains(w.String(), "1/max = 0.5") || !strings.Contains(w.String(), "√dFIL per sample") {
		t.Errorf("text %q", w.String())
	}
	if _, err := SummarizeFiles(nil, ""); err == nil || !strings.Contains(err.Error(), "no files") {
		t.Errorf("no files: %v", err)
	}
	if _, err := SummarizeFiles([]string{a, filepath.Join(dir, "short.npy")}, ""); err == nil {
		t.Error("missing file: want an error")
	}
}

// TestSqrtSummary checks the √dFIL statistics against hand computations: per run the
// mean, median and max of the square roots, then averaged over runs — not the root of
// the merged runs' statistics.
func TestSqrtSummary(t *testing.T) {
	cases := []struct {
		name              string
		runs              [][]float64
		mean, median, max float64
	}{
		{"one run, odd", [][]float64{{9, 0, 4}}, 5.0 / 3, 2, 3},
		{"one run, even", [][]float64{{16, 1, 0, 9}}, 2, 2, 4},
		// run 1: √ = 0,1,2,3 → mean 1.5, median 1.5, max 3; run 2: √ = 2,2,4,0 →
		// mean 2, median 2, max 4.
		{"two runs", [][]float64{{0, 1, 4, 9}, {4, 4, 16, 0}}, 1.75, 1.75, 3.5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SqrtSummary(tc.runs...)
			if err != nil {
				t.Fatal(err)
			}
			if got.Runs != len(tc.runs) || math.Abs(got.Mean-tc.mean) > 1e-15 || math.Abs(got.Median-tc.median) > 1e-15 || math.Abs(got.Max-tc.max) > 1e-15 {
				t.Errorf("got %+v, want mean %v median %v max %v", got, tc.mean, tc.median, tc.max)
			}
		})
	}
	// The root of the merged statistic differs: √(mean of the merged max) = √12.5 ≠ 3.5.
	merged := Summarize([]float64{2, 2.5, 10, 4.5})
	if got, _ := SqrtSummary([]float64{0, 1, 4, 9}, []float64{4, 4, 16, 0}); math.Abs(math.Sqrt(merged.Max)-got.Max) < 0.01 {
		t.Errorf("√ of merged max %v equals the per-run statistic %v", math.Sqrt(merged.Max), got.Max)
	}
	for _, bad := range [][][]float64{nil, {{}}, {{1, 2}, {1}}, {{1, -1}}, {{math.NaN()}}, {{math.Inf(1)}}} {
		if _, err := SqrtSummary(bad...); err == nil {
			t.Errorf("SqrtSummary(%v): no error", bad)
		}
	}
}
