package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// walkCommands calls fn for c and every command below it.
func walkCommands(c *cobra.Command, fn func(*cobra.Command)) {
	fn(c)
	for _, s := range c.Commands() {
		walkCommands(s, fn)
	}
}

// TestDatasetFlagsNameUserForms checks that every --dataset flag of the command tree
// says how to name your own data (npz:, npy:, imagefolder:, idx:), and that 'data
// --help' describes the forms.
func TestDatasetFlagsNameUserForms(t *testing.T) {
	n := 0
	walkCommands(newRootCmd(), func(c *cobra.Command) {
		f := c.Flags().Lookup("dataset")
		if f == nil {
			return
		}
		n++
		for _, form := range []string{"npz:", "npy:", "imagefolder:", "idx:"} {
			if !strings.Contains(f.Usage, form) {
				t.Errorf("%s --dataset usage lacks %s: %q", c.CommandPath(), form, f.Usage)
			}
		}
	})
	if n < 8 {
		t.Errorf("found %d --dataset flags, want at least 8 (train, eval, data info/fetch, attack, glm, plot images…)", n)
	}
	out, _, err := execCLI(t, "data", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"npz:FILE.npz", "npy:DIR", "imagefolder:DIR", "idx:DIR"} {
		if !strings.Contains(out, w) {
			t.Errorf("data --help lacks %s", w)
		}
	}
}

// TestDatasetPathSuggestsForm checks the CLI's answer to a bare file as --dataset.
func TestDatasetPathSuggestsForm(t *testing.T) {
	_, _, err := execCLI(t, "data", "info", "--dataset", "my.npz")
	if err == nil || !strings.Contains(err.Error(), "did you mean npz:my.npz?") || !strings.Contains(err.Error(), "imagefolder:DIR") {
		t.Fatalf("data info --dataset my.npz: %v", err)
	}
}

// TestPlotParetoRunInputs draws a Pareto plot from a run directory, a result.json
// and a results.jsonl together (three runs), and checks that an unfinished run is
// answered with how to resume it.
func TestPlotParetoRunInputs(t *testing.T) {
	dir := t.TempDir()
	result := func(acc, bound float64, seed int) string {
		return fmt.Sprintf(`{"config": {"model": "linear", "seed": %d}, "test_accuracy": %v, "epsilon": 3, "mse_bound_rdp": %v, "mse_bound_fil_max": %v, "mse_bound_fil_median": %v}`,
			seed, acc, bound, 10*bound, 100*bound)
	}
	mustWrite(t, filepath.Join(dir, "runA", "result.json"), result(0.7, 0.01, 1))
	mustWrite(t, filepath.Join(dir, "b.json"), "\n"+result(0.8, 0.001, 2)+"\n")
	mustWrite(t, filepath.Join(dir, "sw", "results.jsonl"),
		`{"hash":"h1","index":0,"config":{},"result":{"test_accuracy":0.6,"mse_bound_rdp":0.1,"mse_bound_fil_max":1,"mse_bound_fil_median":10}}`+"\n")
	out, _, err := execCLI(t, "plot", "pareto", filepath.Join(dir, "runA"), filepath.Join(dir, "b.json"), filepath.Join(dir, "sw"),
		"-o", filepath.Join(dir, "p.png"), "--json")
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Records int `json:"records"`
		Series  []struct {
			Points int `json:"points"`
		} `json:"series"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Records != 3 || len(rep.Series) != 3 || rep.Series[0].Points != 3 {
		t.Fatalf("report %s", out)
	}
	mustWrite(t, filepath.Join(dir, "unfinished", "checkpoint.bin"), "x")
	_, _, err = execCLI(t, "plot", "pareto", filepath.Join(dir, "unfinished"), "-o", filepath.Join(dir, "q.png"))
	if err == nil || !strings.Contains(err.Error(), "dpfil train --resume") {
		t.Fatalf("unfinished run: %v", err)
	}
}

// mustWrite writes text to path, creating its directory.
func mustWrite(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
