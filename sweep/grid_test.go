package sweep

import (
	"path/filepath"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"testing"
)

func TestParseGridErrors(t *testing.T) {
	tests := []struct{ name, src, want string }{
		{"unknown top-level field", "base: {}\ngrid: {}\nbogus: 1\n", "bogus"},
		{"empty list", "grid: {sigma: []}\n", "empty value list"},
		{"duplicate value", "grid: {sigma: [1, 2, 1]}\n", "twice"},
		{"base and grid", "base: {sigma: 1}\ngrid: {sigma: [1, 2]}\n", "both base and grid"},
		{"dash and underscore spellings", "base: {clip-mode: hard, clip_mode: smooth}\n", "twice"},
		{"nested value", "base: {sigma: [1, 2]}\n", "non-scalar"},
		{"null value", "base: {sigma: }\n", "empty value"},
		{"nan", "grid: {sigma: [.nan]}\n", "non-finite"},
		{"negative repeats", "repeats: -1\n", "repeats"},
		{"repeats with seed list", "repeats: 2\ngrid: {seed: [1, 2]}\n", "seed"},
		{"not yaml", "grid: [1, 2", "parse grid"},
		{"empty file", "", "parse grid: empty file"},
		{"comments only", "# a grid\n", "parse grid: empty file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseGrid([]byte(tc.src))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ParseGrid: err = %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

func TestPointsOrderAndProduct(t *testing.T) {
	g, err := ParseGrid([]byte(`
name: t
base: {model: linear, batch: 10}
grid:
  sigma: [1, 2]
  lr: [0.1, 0.01, 0.5]
  clip-mode: [hard, smooth]
`))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := g.Keys(), []string{"clip_mode", "lr", "sigma"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("keys %v, want %v", got, want)
	}
	ps := g.Points()
	if len(ps) != 12 || g.Size() != 12 {
		t.Fatalf("%d points (size %d), want 12", len(ps), g.Size())
	}
	// Independent reference: nested loops in sorted-key order, last key fastest.
	var want []map[string]any
	for _, cm := range []any{"hard", "smooth"} {
		for _, lr := range []any{0.1, 0.01, 0.5} {
			for _, s := range []any{1, 2} {
				want = append(want, map[string]any{"model": "linear", "batch": 10, "clip_mode": cm, "lr": lr, "sigma": s})
			}
		}
	}
	if !reflect.DeepEqual(ps, want) {
		t.Fatalf("points:\n%v\nwant\n%v", ps, want)
	}
}

func TestJobs(t *testing.T) {
	g, err := ParseGrid([]byte(`
name: t
repeats: 3
base: {model: linear, batch: 10, seed: 7}
grid: {sigma: [1, 2]}
`))
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := g.Jobs()
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 6 {
		t.Fatalf("%d jobs, want 6", len(jobs))
	}
	hashes := map[string]bool{}
	for i, j := range jobs {
		if j.Index != i {
			t.Fatalf("job %d has index %d", i, j.Index)
		}
		if wantSigma := float64(1 + i/3); j.Config.Sigma != wantSigma {
			t.Fatalf("job %d sigma %v, want %v", i, j.Config.Sigma, wantSigma)
		}
		if wantSeed := uint64(7 + i%3); j.Config.Seed != wantSeed {
			t.Fatalf("job %d seed %d, want %d", i, j.Config.Seed, wantSeed)
		}
		if j.Config.Model != "linear" || j.Config.Batch != 10 {
			t.Fatalf("job %d lost base settings: %+v", i, j.Config)
		}
		if j.Hash != j.Config.Hash() || hashes[j.Hash] {
			t.Fatalf("job %d hash %q wrong or repeated", i, j.Hash)
		}
		hashes[j.Hash] = true
	}
	// Expansion is deterministic.
	again, _ := g.Jobs()
	if !reflect.DeepEqual(jobs, again) {
		t.Fatal("Jobs is not deterministic")
	}
}

func TestJobsErrors(t *testing.T) {
	tests := []struct{ name, src, want string }{
		{"unknown key", "grid: {sigmaa: [1, 2]}\n", "sigmaa"},
		{"wrong type", "base: {batch: 0.5}\n", "batch"},
		{"invalid value", "grid: {lr: [0.1, -1]}\n", "lr"},
		{"same config twice", "grid: {sigma: [1, 1.0]}\n", "same configuration"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g, err := ParseGrid([]byte(tc.src))
			if err == nil {
				_, err = g.Jobs()
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

func TestEpochsClearDefaultSteps(t *testing.T) {
	cfg, err := ConfigFromSettings(map[string]any{"epochs": 2.5})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Steps != 0 || cfg.Epochs != 2.5 {
		t.Fatalf("steps %d epochs %v, want 0 and 2.5", cfg.Steps, cfg.Epochs)
	}
}

// A grid can set the optimizer: adam starts from torch's defaults with momentum 0,
// its keys override them, and momentum SGD's momentum given with adam is refused.
func TestOptimizerSettings(t *testing.T) {
	g, err := ParseGrid([]byte("base: {lr: 0.01}\ngrid: {optimizer: [sgd, adam], seed: [1]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := g.Jobs()
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 2 || jobs[0].Config.IsAdam() || jobs[0].Config.Momentum != 0.5 || !jobs[1].Config.IsAdam() ||
		jobs[1].Config.Momentum != 0 || jobs[1].Config.AdamBeta1 != 0.9 || jobs[1].Config.AdamBeta2 != 0.999 || jobs[1].Config.AdamEps != 1e-8 {
		t.Fatalf("jobs %+v", jobs)
	}
	cfg, err := ConfigFromSettings(map[string]any{"optimizer": "adam", "adam_beta1": 0.0, "adam_eps": 1e-6})
	if err != nil || cfg.AdamBeta1 != 0 || cfg.AdamBeta2 != 0.999 || cfg.AdamEps != 1e-6 {
		t.Fatalf("adam overrides: %+v, %v", cfg, err)
	}
	for _, bad := range []map[string]any{
		{"optimizer": "adam", "momentum": 0.9},
		{"optimizer": "adamw"},
		{"adam_beta1": 0.8},
	} {
		if _, err := ConfigFromSettings(bad); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}

func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no caller")
	}
	return filepath.Dir(filepath.Dir(file))
}

func uniqFloats(jobs []Job, f func(Job) float64) []float64 {
	set := map[float64]bool{}
	for _, j := range jobs {
		set[f(j)] = true
	}
	var out []float64
	for v := range set {
		out = append(out, v)
	}
	sort.Float64s(out)
	return out
}

// The shipped Fig. 5 grids are exactly seed 000 Appendix C Tables 3 and 4.
func TestShippedFig5Grids(t *testing.T) {
	tests := []struct {
		file                 string
		model                string
		batch                int
		steps, sigma, lr, cl []float64
	}{
		{"mnist-fig5.yaml", "mnist-cnn", 600,
			[]float64{1000, 2000, 3000, 5000}, []float64{0.2, 0.5, 1, 2, 5, 10},
			[]float64{0.01, 0.03, 0.1}, []float64{1, 2, 4, 8, 16, 32}},
		{"cifar-fig5.yaml", "cifar-cnn", 200,
			[]float64{12500, 18750, 25000, 31250, 37500}, []float64{0.1, 0.2, 0.5, 1, 2},
			[]float64{0.01, 0.03, 0.1}, []float64{0.1, 0.25, 0.5, 1, 2, 4, 8, 16}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			g, err := LoadGrid(filepath.Join(repoRoot(t), "sweeps", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			jobs, err := g.Jobs()
			if err != nil {
				t.Fatal(err)
			}
			if n := len(tc.steps) * len(tc.sigma) * len(tc.lr) * len(tc.cl); len(jobs) != n {
				t.Fatalf("%d jobs, want %d", len(jobs), n)
			}
			for _, j := range jobs {
				c := j.Config
				if c.Model != tc.model || c.Batch != tc.batch || c.Momentum != 0.5 || c.Repeats != 10 || c.FILCoords != 50 || c.Delta != 1e-5 {
					t.Fatalf("fixed settings wrong: %+v", c)
				}
			}
			for _, chk := range []struct {
				name string
				f    func(Job) float64
				want []float64
			}{
				{"steps", func(j Job) float64 { return float64(j.Config.Steps) }, tc.steps},
				{"sigma", func(j Job) float64 { return j.Config.Sigma }, tc.sigma},
				{"lr", func(j Job) float64 { return j.Config.LR }, tc.lr},
				{"clip", func(j Job) float64 { return j.Config.Clip }, tc.cl},
			} {
				if got := uniqFloats(jobs, chk.f); !reflect.DeepEqual(got, chk.want) {
					t.Errorf("%s values %v, want %v", chk.name, got, chk.want)
				}
			}
		})
	}
}

func TestShippedGridsExpand(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(repoRoot(t), "sweeps", "*.yaml"))
	if err != nil || len(files) < 3 {
		t.Fatalf("sweeps/*.yaml: %v files, err %v", len(files), err)
	}
	for _, f := range files {
		g, err := LoadGrid(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := g.Jobs(); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
}

// Numbers as users write them (1e-5, .5, 1e1) and grid files in JSON both work.
func TestGridNumberSpellingsAndJSON(t *testing.T) {
	for _, src := range []string{
		"base: {delta: 1e-5, lr: .5, model: linear}\ngrid: {sigma: [1e1, 2]}\n",
		`{"base": {"delta": 1e-5, "lr": 0.5, "model": "linear"}, "grid": {"sigma": [10, 2.0]}}`,
	} {
		g, err := ParseGrid([]byte(src))
		if err != nil {
			t.Fatal(err)
		}
		jobs, err := g.Jobs()
		if err != nil {
			t.Fatal(err)
		}
		if c := jobs[0].Config; len(jobs) != 2 || c.Delta != 1e-5 || c.LR != 0.5 || c.Sigma != 10 || jobs[1].Config.Sigma != 2 {
			t.Fatalf("%q: %+v", src, jobs)
		}
	}
}
