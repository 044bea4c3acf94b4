package sweep

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGridArchFile runs a tiny real sweep over two architecture files named by the
// grid (arch: FILE, relative to the grid file, as train --arch takes them): each run
// trains its file's network, and the records name it.
func TestGridArchFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("nets/flat.yaml", "name: flat\nlayers: [flatten, {kind: dense}]\n")
	write("nets/hidden.json", `{"name": "hidden", "layers": ["flatten", {"kind": "dense", "out": 8}, "tanh", {"kind": "dense"}]}`)
	write("grids/g.yaml", `
name: archs
base: {dataset: mnist-embedded, train_subset: 100, batch: 20, steps: 4, fil_coords: 2, sigma: 1}
grid: {arch: [../nets/flat.yaml, ../nets/hidden.json]}
`)
	wd, _ := os.Getwd()
	if err := os.Chdir(t.TempDir()); err != nil { // relative to the grid file, not here
		t.Fatal(err)
	}
	defer os.Chdir(wd)
	g, err := LoadGrid(filepath.Join(dir, "grids", "g.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := g.Jobs()
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 2 || jobs[0].Config.Model != "flat" || jobs[1].Config.Model != "hidden" ||
		jobs[0].Config.Arch == nil || len(jobs[1].Config.Arch.Layers) != 4 || jobs[0].Hash == jobs[1].Hash {
		t.Fatalf("jobs: %+v", jobs)
	}
	out := t.TempDir()
	if _, err := Run(context.Background(), jobs, Options{Out: out, Runner: TrainRunner(nil)}); err != nil {
		t.Fatal(err)
	}
	recs, bad, err := ReadResults(ResultsPath(out))
	if err != nil || len(bad) != 0 || len(recs) != 2 {
		t.Fatalf("results: %d records, %v, %v", len(recs), bad, err)
	}
	for _, r := range recs {
		var res struct {
			Config struct {
				Model string `json:"model"`
			} `json:"config"`
			Arch struct {
				Name   string `json:"name"`
				Layers []any  `json:"layers"`
			} `json:"arch"`
			TestAccuracy float64 `json:"test_accuracy"`
		}
		if err := json.Unmarshal(r.Result, &res); err != nil {
			t.Fatal(err)
		}
		if res.Config.Model != res.Arch.Name || (res.Arch.Name != "flat" && res.Arch.Name != "hidden") || len(res.Arch.Layers) == 0 {
			t.Errorf("record %s ran %q with arch %q (%d layers)", r.Hash, res.Config.Model, res.Arch.Name, len(res.Arch.Layers))
		}
	}
}

// TestGridArchFileErrors checks the messages of a grid's arch key that cannot be used.
func TestGridArchFileErrors(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.yaml"), []byte("name: a\nlayers: [flatten, {kind: dense}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, grid, want string }{
		{"missing file", "base: {arch: nope.yaml}\n", "arch nope.yaml (relative to the grid file)"},
		{"not a path", "base: {arch: 3}\n", "want the path of an architecture file"},
		{"bad file", "base: {arch: g.yaml}\n", "arch g.yaml"},
		{"model differs", "base: {arch: a.yaml, model: mnist-cnn}\n", `model = "mnist-cnn" but arch is "a"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(dir, "g.yaml")
			if err := os.WriteFile(p, []byte("name: g\n"+c.grid), 0o644); err != nil {
				t.Fatal(err)
			}
			g, err := LoadGrid(p)
			if err == nil {
				_, err = g.Jobs()
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
}

// TestPlanArchFiles checks that a Slurm plan of a grid with an arch file names the
// grid file (the jobs read the arch beside it), and that a Kubernetes plan, whose
// ConfigMap carries the grid file only, is refused with the reason.
func TestPlanArchFiles(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.yaml"), []byte("name: a\nlayers: [flatten, {kind: dense}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	grid := filepath.Join(dir, "g.yaml")
	if err := os.WriteFile(grid, []byte("name: g\nbase: {arch: a.yaml, steps: 2}\ngrid: {sigma: [1, 2]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := Expand(grid)
	if err != nil {
		t.Fatal(err)
	}
	p, err := e.Plan(PlanRequest{PlanOptions: PlanOptions{Shards: 2}})
	if err != nil || !strings.Contains(p.Text, grid) {
		t.Fatalf("slurm plan: %v\n%v", err, p)
	}
	_, err = e.Plan(PlanRequest{PlanOptions: PlanOptions{Shards: 2, Image: "img"}, Kubernetes: true})
	if err == nil || !strings.Contains(err.Error(), "a.yaml") || !strings.Contains(err.Error(), "ConfigMap") {
		t.Fatalf("k8s plan: %v", err)
	}
}
