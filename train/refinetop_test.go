package train_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpfil/dpfil/train"
)

// TestFILRefineTopInResult: a run trained with fil_refine_top carries the same
// two-stage estimate as 'account fil-refine' on the recorded run (an independent
// call on the directory), in result.json and its Metrics, and a finished run that
// lacks it (interrupted refinement) gets it when resumed, without retraining.
func TestFILRefineTopInResult(t *testing.T) {
	cfg := refineConfig(2)
	cfg.FILRefineTop = 7
	dir := filepath.Join(t.TempDir(), "run")
	res, err := train.RunWithTranscript(context.Background(), cfg, train.Options{Out: dir}, false)
	if err != nil {
		t.Fatal(err)
	}
	ts := res.FILTwoStage
	if ts == nil {
		t.Fatal("no fil_two_stage in the result")
	}
	rep, err := train.RefineRun(train.RefineRequest{Run: dir, Top: 7, Seed: cfg.Seed})
	if err != nil {
		t.Fatal(err)
	}
	if ts.Max != rep.Max || ts.ArgMax != rep.ArgMax || ts.MSEBoundMax != 1/rep.Max || ts.Top != 7 || ts.ScreenMaxExact != rep.ScreenMaxExact {
		t.Errorf("fil_two_stage %+v, fil-refine max %v argmax %d screen_max_exact %v", ts, rep.Max, rep.ArgMax, rep.ScreenMaxExact)
	}
	if ts.CI == nil || rep.CI == nil || *ts.CI != *rep.CI {
		t.Errorf("CI %+v, fil-refine's %+v", ts.CI, rep.CI)
	}
	ge1 := 0
	for _, s := range rep.Refined {
		if s.Exact >= 1 {
			ge1++
		}
	}
	if ts.RefinedAtLeastOne != ge1 {
		t.Errorf("refined_dfil_ge_1 = %d, want %d", ts.RefinedAtLeastOne, ge1)
	}
	var onDisk train.RefineReport
	b, err := os.ReadFile(filepath.Join(dir, train.FILRefineFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &onDisk); err != nil || onDisk.Max != rep.Max || len(onDisk.Refined) != 7 {
		t.Fatalf("%s: max %v, %d refined (err %v)", train.FILRefineFile, onDisk.Max, len(onDisk.Refined), err)
	}
	back, err := train.ReadResult(dir)
	if err != nil {
		t.Fatal(err)
	}
	if back.FILTwoStage == nil || back.FILTwoStage.Max != ts.Max {
		t.Fatalf("result.json's fil_two_stage %+v, want max %v", back.FILTwoStage, ts.Max)
	}
	if m := back.Metrics(); m.MSEBoundFILTwoStage != 1/rep.Max {
		t.Errorf("Metrics().MSEBoundFILTwoStage = %v, want %v", m.MSEBoundFILTwoStage, 1/rep.Max)
	}
	raw, _ := os.ReadFile(filepath.Join(dir, train.ResultFile))
	var m train.Metrics
	if err := json.Unmarshal(raw, &m); err != nil || m.MSEBoundFILTwoStage != 1/rep.Max {
		t.Errorf("Metrics read from result.json: two-stage %v (err %v), want %v", m.MSEBoundFILTwoStage, err, 1/rep.Max)
	}
	mb, _ := json.Marshal(m)
	var m2 train.Metrics
	if err := json.Unmarshal(mb, &m2); err != nil || m2 != m {
		t.Errorf("Metrics round trip: %+v → %s → %+v (err %v)", m, mb, m2, err)
	}

	// Drop the estimate, as if the refinement had been interrupted: resuming adds it.
	back.FILTwoStage = nil
	if err := train.WriteResult(dir, back); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, train.FILRefineFile))
	again, err := train.RunWithTranscript(context.Background(), cfg, train.Options{Out: dir, Resume: true}, false)
	if err != nil {
		t.Fatal(err)
	}
	if again.FILTwoStage == nil || again.FILTwoStage.Max != ts.Max || again.StepSeconds != res.StepSeconds {
		t.Errorf("resumed: fil_two_stage %+v (want max %v), step seconds %v (want %v: not retrained)", again.FILTwoStage, ts.Max, again.StepSeconds, res.StepSeconds)
	}
	if _, err := os.Stat(filepath.Join(dir, train.FILRefineFile)); err != nil {
		t.Errorf("resumed: %v", err)
	}
}

// TestFILRefineTopRefused: settings whose screen cannot be refined are refused
// before training, and train.Run (which records no transcript) refuses it.
func TestFILRefineTopRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*train.Config)
		want string
	}{
		{"negative", func(c *train.Config) { c.FILRefineTop = -1 }, "fil_refine_top = -1"},
		{"no-fil", func(c *train.Config) { c.FILCoords = 0 }, "fil_coords > 0"},
		{"exact", func(c *train.Config) { c.FILExact = true }, "fil_coords > 0 without fil_exact"},
		{"subsampled", func(c *train.Config) { c.FILRate = 0.3 }, "fil_rate = 0.3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := refineConfig(1)
			cfg.FILRefineTop = 5
			tc.mod(&cfg)
			_, err := train.RunWithTranscript(context.Background(), cfg, train.Options{Out: filepath.Join(t.TempDir(), "r")}, false)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
	cfg := refineConfig(1)
	cfg.FILRefineTop = 5
	if _, err := train.Run(context.Background(), cfg, train.Options{Out: filepath.Join(t.TempDir(), "r")}); err == nil || !strings.Contains(err.Error(), "RunWithTranscript") {
		t.Errorf("train.Run with fil_refine_top: err = %v", err)
	}
	if _, err := train.RunWithTranscript(context.Background(), cfg, train.Options{}, false); err == nil || errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "run directory") {
		t.Errorf("no run directory: err = %v", err)
	}
}
