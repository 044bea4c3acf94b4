package train

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEvalUnfinishedRun checks what eval (and predict, through LoadRun) says about a
// directory that holds no finished run: an interrupted run says how far it got and
// how to resume it, instead of "open …/result.json: no such file".
func TestEvalUnfinishedRun(t *testing.T) {
	split := imageToyData(60, 20, 4)
	cfg := DefaultConfig()
	cfg.Model, cfg.Dataset, cfg.Batch, cfg.Steps, cfg.FILCoords, cfg.Sigma = "linear", "toy", 10, 8, 2, 1
	killed := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := Run(ctx, cfg, Options{Out: killed, Data: split, CheckpointEvery: 1, Progress: func(e Event) {
		if e.Step == 3 {
			cancel()
		}
	}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("killed run: %v", err)
	}
	sweepDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(sweepDir, "results.jsonl"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		dir  string
		want []string
	}{
		{killed, []string{"run " + killed + " is unfinished", "repeat 1 of 1 at step 3 of 8", "resume it with 'dpfil train --resume " + killed + "'"}},
		{sweepDir, []string{"is a sweep directory", filepath.Join(sweepDir, "runs", "<hash>")}},
		{t.TempDir(), []string{"holds no run (no result.json or checkpoint.bin)"}},
		{filepath.Join(killed, "nope"), []string{"does not exist"}},
		{file, []string{"is a file, not a run directory"}},
	} {
		_, err := EvaluateRun(EvalRequest{Run: c.dir})
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("eval %s: %v, want %q", c.dir, err, w)
			}
		}
		if err != nil && strings.Contains(err.Error(), "no such file") {
			t.Errorf("eval %s: %v shows the raw open error", c.dir, err)
		}
	}
	if _, err := Predict(PredictRequest{Run: killed, Files: []string{"x.png"}}); err == nil || !strings.Contains(err.Error(), "dpfil train --resume") {
		t.Errorf("predict on an unfinished run: %v", err)
	}
}
