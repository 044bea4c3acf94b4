package figures

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpfil/dpfil/internal/npy"
	"github.com/dpfil/dpfil/train"
)

// writeDiag writes a diagnostics directory in the format of train/perturbdiag.go:
// repeats × steps records of n members, m = 4 vectors of k = 2 columns. The base
// vectors are (±3, 0), (0, ±1) (PCA variances 6 and 2/3), the perturbation of member
// s is (s+1)·(1, 1), the final (base + perturbation)/2; the accuracy of repeat r at
// step t is 0.5 + 0.1·t + 0.01·r, dFIL max t + r, mean t/2, median t/4.
func writeDiag(t *testing.T, dir string, repeats, steps, n int) {
	t.Helper()
	const m, k = 4, 2
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	base := []float64{3, 0, -3, 0, 0, 1, 0, -1}
	for r := 0; r < repeats; r++ {
		for st := 1; st <= steps; st++ {
			stem := fmt.Sprintf("r%d-step%04d", r, st)
			pert, fin := make([]float32, m*k), make([]float32, m*k)
			b32 := make([]float32, m*k)
			for s := 0; s < m; s++ {
				for j := 0; j < k; j++ {
					b32[s*k+j] = float32(base[s*k+j])
					pert[s*k+j] = float32(s + 1)
					fin[s*k+j] = float32((base[s*k+j] + float64(s+1)) / 2)
				}
			}
			bn, pn, fn, cs := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
			for s := range bn {
				bn[s], pn[s], fn[s], cs[s] = float64(s+st), 2*float64(s+1), 1, math.NaN()
				if s > 0 {
					cs[s] = 0.5
				}
			}
			var entries []npy.Entry
			add := func(name string, b []byte, err error) {
				if err != nil {
					t.Fatal(err)
				}
				entries = append(entries, npy.Entry{Name: name, NPY: b})
			}
			for name, v := range map[string][]float64{"base_norm": bn, "perturb_norm": pn, "final_norm": fn, "cosine": cs} {
				b, err := npy.EncodeFloat64([]int{n}, v)
				add(name, b, err)
			}
			for name, v := range map[string][]float32{"base": b32, "perturb": pert, "final": fin} {
				b, err := npy.EncodeFloat32([]int{m, k}, v)
				add(name, b, err)
			}
			b, err := npy.EncodeInt64([]int{k}, []int{3, 7})
			add("columns", b, err)
			var buf bytes.Buffer
			if err := npy.WriteNPZ(&buf, entries); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, stem+".npz"), buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			mx, mean, med, eps := float64(st+r), float64(st)/2, float64(st)/4, 10*float64(st)
			rec := train.PerturbDiagStep{Repeat: r, Step: st, Samples: n, Vectors: m, Params: 10, Columns: k, Perturbed: true, Lambda: 1000,
				Standardised: true, TestAccuracy: 0.5 + 0.1*float64(st) + 0.01*float64(r), DFILMax: &mx, DFILMean: &mean, DFILMedian: &med,
				Epsilon: &eps, Accountant: "rdp", Delta: 1e-5, Arrays: stem + ".npz"}
			js, err := json.Marshal(rec)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, stem+".json"), js, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestWritePerturbDiag draws a generated diagnostics directory: the figures exist at
// their sizes, and the report holds the numbers of the files (norm means, cosine
// spread without the NaN, the closed-form PCA of the base vectors) and the mean and
// sample standard deviation over repeats per step.
func TestWritePerturbDiag(t *testing.T) {
	run := t.TempDir()
	writeDiag(t, filepath.Join(run, train.PerturbDiagDir), 3, 2, 6)
	out := filepath.Join(t.TempDir(), "figs")
	rep, err := WritePerturbDiag(PerturbDiagRequest{Dir: run, OutDir: out, Prefix: "x-", Steps: []int{1}, Repeats: []int{0, 2}, Title: "test"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"x-r0-step1.png", "x-r0-norms.png", "x-r0-accuracy-dfil.png", "x-r2-step1.png", "x-r2-norms.png", "x-r2-accuracy-dfil.png"}
	if len(rep.Files) != len(want) {
		t.Fatalf("files %v, want %v", rep.Files, want)
	}
	for i, f := range rep.Files {
		if filepath.Base(f) != want[i] {
			t.Fatalf("files %v, want %v", rep.Files, want)
		}
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := png.DecodeConfig(fh)
		fh.Close()
		if err != nil || cfg.Width < 100 || cfg.Height < 100 {
			t.Fatalf("%s: %v %dx%d", f, err, cfg.Width, cfg.Height)
		}
	}
	if len(rep.Repeats) != 3 || rep.Repeats[1].NormsFigure != "" || len(rep.Repeats[1].Steps) != 2 {
		t.Fatalf("repeat 1 is reported but not drawn: %+v", rep.Repeats[1])
	}
	s := rep.Repeats[0].Steps[0]
	if s.BaseNorm.Mean != 3.5 || s.PerturbNorm.Mean != 7 || s.FinalNorm.Std != 0 || s.Cosine.N != 5 || s.Cosine.Dropped != 1 || s.Cosine.Mean != 0.5 {
		t.Fatalf("step 1 spreads %+v %+v %+v %+v", s.BaseNorm, s.PerturbNorm, s.FinalNorm, s.Cosine)
	}
	if s.PCABase == nil || math.Abs(s.PCABase.Variance[0]-6) > 1e-9 || math.Abs(s.PCABase.Explained[1]-0.1) > 1e-9 {
		t.Fatalf("PCA of the base vectors %+v, want variances 6, 2/3", s.PCABase)
	}
	if p := s.PCAPerturb; p == nil || math.Abs(p.Explained[0]-1) > 1e-9 { // all on the line (1, 1)
		t.Fatalf("PCA of the perturbations %+v, want one component", p)
	}
	if rep.Repeats[0].Steps[1].PCABase != nil {
		t.Fatal("step 2 was not drawn but has a PCA")
	}
	a := rep.Across[1] // step 2: accuracy 0.7, 0.71, 0.72; dFIL max 2, 3, 4
	if a.Step != 2 || a.Repeats != 3 || math.Abs(a.Accuracy.Mean-0.71) > 1e-12 || a.Accuracy.Std == nil || math.Abs(*a.Accuracy.Std-0.01) > 1e-12 ||
		a.DFILMax == nil || a.DFILMax.Mean != 3 || math.Abs(*a.DFILMax.Std-1) > 1e-12 || *a.DFILMean.Std != 0 {
		t.Fatalf("across repeats at step 2: %+v", a)
	}
	var text bytes.Buffer
	rep.WriteText(&text)
	if !strings.Contains(text.String(), "step 2 (3 repeats): accuracy 0.71 (0.01), dFIL max 3 (1)") {
		t.Fatalf("text report:\n%s", text.String())
	}
}

// Missing or corrupt files, gaps and bad requests are refused with errors that name
// the file and the problem.
func TestWritePerturbDiagBadInput(t *testing.T) {
	cases := []struct {
		name  string
		spoil func(dir string) error
		req   func(r *PerturbDiagRequest)
		want  string
	}{
		{"no directory", func(dir string) error { return os.RemoveAll(dir) }, nil, "no such file"},
		{"no records", func(dir string) error {
			for _, n := range []string{"r0-step0001.json", "r0-step0002.json"} {
				if err := os.Remove(filepath.Join(dir, n)); err != nil {
					return err
				}
			}
			return nil
		}, nil, "holds no r<repeat>-step<t>.json"},
		{"gap", func(dir string) error { return os.Remove(filepath.Join(dir, "r0-step0001.json")) }, nil, "step 1 was expected"},
		{"missing arrays", func(dir string) error { return os.Remove(filepath.Join(dir, "r0-step0002.npz")) }, nil, "r0-step0002.npz: no such file"},
		{"corrupt arrays", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, "r0-step0001.npz"), []byte("PK\x03\x04 not a zip"), 0o644)
		}, nil, "r0-step0001.npz"},
		{"corrupt record", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, "r0-step0001.json"), []byte(`{"repeat": 0, "step": `), 0o644)
		}, nil, "r0-step0001.json"},
		{"record of another step", func(dir string) error {
			b, err := os.ReadFile(filepath.Join(dir, "r0-step0002.json"))
			if err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(dir, "r0-step0001.json"), b, 0o644)
		}, nil, "does not fit its name"},
		{"wrong shape", func(dir string) error {
			b, err := os.ReadFile(filepath.Join(dir, "r0-step0001.json"))
			if err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(dir, "r0-step0001.json"), bytes.Replace(b, []byte(`"samples":6`), []byte(`"samples":5`), 1), 0o644)
		}, nil, `"base_norm" is <f8 [6], want <f8 [5]`},
		{"unknown repeat", nil, func(r *PerturbDiagRequest) { r.Repeats = []int{4} }, "no repeat 4"},
		{"unknown step", nil, func(r *PerturbDiagRequest) { r.Steps = []int{3} }, "no step 3"},
		{"no output directory", nil, func(r *PerturbDiagRequest) { r.OutDir = "" }, "--out-dir"},
		{"bad format", nil, func(r *PerturbDiagRequest) { r.Format = "gif" }, "unsupported extension"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeDiag(t, dir, 1, 2, 6)
			if c.spoil != nil {
				if err := c.spoil(dir); err != nil {
					t.Fatal(err)
				}
			}
			req := PerturbDiagRequest{Dir: dir, OutDir: t.TempDir()}
			if c.req != nil {
				c.req(&req)
			}
			_, err := WritePerturbDiag(req)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}
