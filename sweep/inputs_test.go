package sweep

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpfil/dpfil/train"
)

// TestReadInputsRunsAndSweeps reads the results of a real 2-run sweep and of a
// standalone run in every form plot pareto takes, alone and mixed: the sweep
// directory, its results.jsonl, the run directory, its result.json, the sweep's
// runs/ directory (a directory of run directories); a sweep's run read beside the
// sweep is the same record (a duplicate, not a conflict).
func TestReadInputsRunsAndSweeps(t *testing.T) {
	g, err := ParseGrid([]byte("name: t\nbase: {model: linear, train_subset: 100, batch: 20, steps: 3, fil_coords: 2}\ngrid: {sigma: [0.5, 2]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := g.Jobs()
	if err != nil {
		t.Fatal(err)
	}
	sw := t.TempDir()
	if _, err := Run(context.Background(), jobs, Options{Out: sw, Runner: TrainRunner(nil)}); err != nil {
		t.Fatal(err)
	}
	cfg := jobs[0].Config
	cfg.Sigma = 1
	run := filepath.Join(t.TempDir(), "solo")
	res, err := train.Run(context.Background(), cfg, train.Options{Out: run})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		inputs []string
		unique int
		dups   int
	}{
		{"sweep dir", []string{sw}, 2, 0},
		{"results.jsonl", []string{ResultsPath(sw)}, 2, 0},
		{"run dir", []string{run}, 1, 0},
		{"result.json", []string{filepath.Join(run, train.ResultFile)}, 1, 0},
		{"dir of run dirs", []string{filepath.Join(sw, "runs")}, 2, 0},
		{"mix", []string{run, ResultsPath(sw)}, 3, 0},
		{"sweep and its runs", []string{sw, filepath.Join(sw, "runs", jobs[1].Hash)}, 2, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			recs, rep, err := ReadInputs(c.inputs)
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) != c.unique || rep.Duplicates != c.dups || len(rep.Conflicts) != 0 {
				t.Fatalf("%d records, report %+v", len(recs), rep)
			}
			for _, r := range recs {
				m, err := r.Metrics()
				if err != nil {
					t.Fatal(err)
				}
				if r.Hash == cfg.Hash() && (m.TestAccuracy != res.TestAccuracy || m.Epsilon != res.Epsilon || r.Index != -1) {
					t.Fatalf("standalone run read as %+v (index %d), want accuracy %v ε %v", m, r.Index, res.TestAccuracy, res.Epsilon)
				}
			}
		})
	}
}

// TestReadInputsRunErrors checks the messages for a run directory that has no
// result: unfinished (a checkpoint) or not a run at all.
func TestReadInputsRunErrors(t *testing.T) {
	unfinished := t.TempDir()
	if err := os.WriteFile(filepath.Join(unfinished, train.CheckpointFile), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	notRun := filepath.Join(other, "x.json")
	if err := os.WriteFile(notRun, []byte(`{"a": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ in, want string }{
		{unfinished, "unfinished run"},
		{unfinished, "dpfil train --resume " + unfinished},
		{t.TempDir(), "holds no results.jsonl (a sweep directory), result.json (a run directory) or run directories"},
		{filepath.Join(other, "none"), "no such file"},
		{notRun, "no usable record"},
	} {
		_, _, err := ReadInputs([]string{c.in})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.in, err, c.want)
		}
	}
}
