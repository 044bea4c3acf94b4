package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
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

// TestTrainFlagGroups checks that every flag of train is in exactly one group of
// its --help, that no group names a flag train lacks, and that the help shows each
// flag once, under the group titles.
func TestTrainFlagGroups(t *testing.T) {
	cmd := newTrainCmd(Options{})
	cmd.InitDefaultHelpFlag()
	in := map[string]int{}
	for _, g := range trainFlagGroups() {
		for _, n := range g.Flags {
			in[n]++
			if cmd.LocalFlags().Lookup(n) == nil {
				t.Errorf("group %q names --%s, which train lacks", g.Title, n)
			}
		}
	}
	total := 0
	cmd.LocalFlags().VisitAll(func(f *pflag.Flag) {
		total++
		if in[f.Name] != 1 {
			t.Errorf("--%s is in %d groups, want exactly 1", f.Name, in[f.Name])
		}
	})
	if total < 45 {
		t.Errorf("train has %d flags; expected about 49", total)
	}
	help, _, err := execCLI(t, "train", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range trainFlagGroups() {
		if !strings.Contains(help, "\n"+g.Title+":\n") {
			t.Errorf("train --help lacks the section %q", g.Title)
		}
	}
	if strings.Contains(help, "Other flags") {
		t.Errorf("train --help has ungrouped flags:\n%s", help)
	}
	cmd.LocalFlags().VisitAll(func(f *pflag.Flag) {
		if n := strings.Count(help, "--"+f.Name+" ") + strings.Count(help, "--"+f.Name+"\n"); n < 1 {
			t.Errorf("train --help does not list --%s", f.Name)
		}
	})
	if i, j := strings.Index(help, "Model and data:"), strings.Index(help, "Tuning ("); i < 0 || j < i {
		t.Errorf("sections out of order")
	}
	// attack reconn takes the training recipe's flags too: grouped the same way.
	reconn, _, err := execCLI(t, "attack", "reconn", "--help")
	if err != nil || strings.Contains(reconn, "Other flags") || !strings.Contains(reconn, "\nAttack (RecoNN):\n") || !strings.Contains(reconn, "\nDP-SGD:\n") {
		t.Errorf("attack reconn --help: %v\n%s", err, reconn)
	}
}

// TestVersionFlag checks that dpfil --version prints what dpfil version prints.
func TestVersionFlag(t *testing.T) {
	flag, _, err := execCLI(t, "--version")
	if err != nil {
		t.Fatal(err)
	}
	cmd, _, err := execCLI(t, "version")
	if err != nil {
		t.Fatal(err)
	}
	if flag != cmd || !strings.HasPrefix(flag, "dpfil ") {
		t.Errorf("--version %q, version %q", flag, cmd)
	}
}

// TestDidYouMean checks the suggestions for misspelt commands (at every level) and
// flags, and that a command group with an unknown subcommand fails instead of
// printing its help.
func TestDidYouMean(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"trian"}, "train"},
		{[]string{"account", "fli"}, `unknown command "fli" for "dpfil account"; did you mean fil`},
		{[]string{"plot", "paretoo"}, `unknown command "paretoo" for "dpfil plot"; did you mean pareto?`},
		{[]string{"sweep", "rn", "g.yaml"}, "did you mean run?"},
		{[]string{"data", "inf"}, "did you mean info?"},
		{[]string{"glm", "zzzzz"}, `unknown command "zzzzz" for "dpfil glm"`},
		{[]string{"train", "--sigam", "1"}, "unknown flag: --sigam; did you mean --sigma?"},
		{[]string{"train", "--fil-cords=2"}, "did you mean --fil-coords?"},
		{[]string{"account", "rdp", "--stpes", "3"}, "did you mean --steps?"},
		{[]string{"train", "--zzzzzz"}, "unknown flag: --zzzzzz (see 'dpfil train --help')"},
		{[]string{"train", "--steps", "3", "extra"}, `"dpfil train" takes no arguments, got "extra"`},
		{[]string{"account", "rdp", "0.01"}, `"dpfil account rdp" takes no arguments, got "0.01"`},
	} {
		_, _, err := execCLI(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.args, err, c.want)
		}
	}
	if out, _, err := execCLI(t, "plot"); err != nil || !strings.Contains(out, "pareto") {
		t.Errorf("plot without a subcommand: %v\n%s", err, out)
	}
}

// TestAccountFILArgs summarises a dfil.npy given as an argument (what 'account fil
// runs/a/dfil.npy' means) and a run directory, and refuses no input.
func TestAccountFILArgs(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	if _, _, err := execCLI(t, "train", "--model", "linear", "--train-subset", "60", "--batch", "20", "--steps", "2",
		"--fil-coords", "3", "--out", run, "--quiet"); err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{filepath.Join(run, "dfil.npy"), run} {
		out, _, err := execCLI(t, "account", "fil", in, "--json")
		if err != nil {
			t.Fatal(err)
		}
		var rep struct {
			Estimator string `json:"estimator"`
			Summary   struct {
				Count       int      `json:"count"`
				MSEBoundMax *float64 `json:"mse_bound_max"`
			} `json:"summary"`
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatal(err)
		}
		if rep.Summary.Count != 60 || rep.Summary.MSEBoundMax == nil || !strings.Contains(rep.Estimator, "k = 3 of d = 784") {
			t.Errorf("account fil %s: %s", in, out)
		}
	}
	human, _, err := execCLI(t, "account", "fil", run)
	if err != nil || !strings.Contains(human, "dFIL estimator: random-coordinate estimate") || !strings.Contains(human, "Theorem 2") {
		t.Errorf("human: %v\n%s", err, human)
	}
	if _, _, err := execCLI(t, "account", "fil"); err == nil || !strings.Contains(err.Error(), "dfil.npy") {
		t.Errorf("no input: %v", err)
	}
}

// TestMakeTestSaysWhatItDoes checks that every command of the Makefile's test
// target is preceded by an echo saying what comes (make test is otherwise silent for
// minutes), that go test runs without -v (one line per package as each finishes),
// and that the README states its duration and its MNIST download.
func TestMakeTestSaysWhatItDoes(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	var recipe []string
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, "test:"):
			in = true
		case in && strings.HasPrefix(line, "\t"):
			recipe = append(recipe, strings.TrimSpace(line))
		case in:
			in = false
		}
	}
	if len(recipe) < 8 {
		t.Fatalf("test recipe: %q", recipe)
	}
	said, tested := false, false
	for _, l := range recipe {
		if strings.HasPrefix(l, "@echo ") {
			said = true
			continue
		}
		if !said {
			t.Errorf("make test runs %q without saying first what it does", l)
		}
		said = false
		if strings.Contains(l, "$(GO) test") {
			tested = true
			if strings.Contains(l, " -v") || strings.Contains(l, "TESTFLAGS") && strings.Contains(string(b), "TESTFLAGS ?= -v") {
				t.Errorf("go test with -v buries the per-package lines: %q", l)
			}
		}
	}
	if !tested || !strings.Contains(recipe[0], "about 6 minutes on an idle 2-core machine") {
		t.Errorf("test recipe: %q", recipe)
	}
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"`make test` takes about 6 minutes on an idle 2-core machine", "downloads the full\nMNIST"} {
		if !strings.Contains(string(readme), w) {
			t.Errorf("README lacks %q", w)
		}
	}
}
