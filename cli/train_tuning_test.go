package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

func TestTrainTuningFlags(t *testing.T) {
	dir := t.TempDir()
	out, err := runTrainCLI(t, "train", "--model", "mlp", "--steps", "3", "--batch", "40", "--train-subset", "200",
		"--fil-coords", "2", "--sigma", "1", "--json", "--quiet", "--out", filepath.Join(dir, "a"),
		"--pretrain-public", "0.5", "--pretrain-steps", "4", "--prune-fraction", "0.3", "--noise-rank", "2", "--noise-samples", "8")
	if err != nil {
		t.Fatal(err)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("invalid JSON: %v\n%s", err, out)
	}
	tu, ok := res["tuning"].(map[string]any)
	if !ok || tu["n_public"].(float64) != 100 || tu["frozen_params"].(float64) != 2388 || tu["noise"] == nil {
		t.Fatalf("tuning: %v", res["tuning"])
	}
	if cfg := res["config"].(map[string]any); cfg["tuning"] == nil {
		t.Fatalf("config lacks tuning: %v", cfg)
	}
	human, err := runTrainCLI(t, "train", "--model", "mlp", "--steps", "2", "--batch", "40", "--train-subset", "200",
		"--fil-coords", "0", "--quiet", "--out", filepath.Join(dir, "b"), "--pretrain-public", "0.5", "--pretrain-steps", "2", "--freeze", "dense1")
	if err != nil || !strings.Contains(human, "tuning             public 100 / private 100") || !strings.Contains(human, "7850 of 7960 parameters frozen (dense1.W,dense1.b)") {
		t.Fatalf("human summary: %v\n%s", err, human)
	}
	// Without the tuning flags the config has no "tuning" key (hashes unchanged).
	plain, err := runTrainCLI(t, "train", "--model", "linear", "--steps", "1", "--batch", "40", "--train-subset", "100",
		"--fil-coords", "0", "--json", "--quiet", "--out", filepath.Join(dir, "c"))
	if err != nil || strings.Contains(plain, `"tuning"`) {
		t.Fatalf("plain run mentions tuning: %v", err)
	}
	if _, err := runTrainCLI(t, "train", "--model", "mlp", "--steps", "1", "--quiet", "--out", filepath.Join(dir, "d"), "--noise-rank", "2"); err == nil {
		t.Fatal("learned noise without public data accepted")
	}
}

// --perturb-net runs end to end through the CLI (JSON and text report say ε is
// unchanged) and is refused without a public split.
func TestTrainPerturbNetFlags(t *testing.T) {
	dir := t.TempDir()
	args := []string{"train", "--model", "linear", "--steps", "2", "--batch", "40", "--train-subset", "200",
		"--fil-coords", "2", "--sigma", "1", "--quiet", "--pretrain-public", "0.5", "--pretrain-steps", "2",
		"--perturb-net", "--perturb-steps", "1", "--perturb-batch", "8", "--perturb-hidden", "2"}
	out, err := runTrainCLI(t, append(args, "--json", "--out", filepath.Join(dir, "a"))...)
	if err != nil {
		t.Fatal(err)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("invalid JSON: %v\n%s", err, out)
	}
	pe, ok := res["tuning"].(map[string]any)["perturb"].(map[string]any)
	if !ok || pe["refreshes"].(float64) != 2 || !strings.Contains(pe["privacy"].(string), "ε is that of the same run without g_φ") {
		t.Fatalf("tuning.perturb: %v", res["tuning"])
	}
	human, err := runTrainCLI(t, append(args, "--out", filepath.Join(dir, "b"))...)
	if err != nil || !strings.Contains(human, "g_φ privacy") {
		t.Fatalf("human summary: %v\n%s", err, human)
	}
	_, err = runTrainCLI(t, "train", "--model", "linear", "--steps", "1", "--quiet", "--out", filepath.Join(dir, "c"), "--perturb-net")
	if err == nil || !strings.Contains(err.Error(), "public split") {
		t.Fatalf("--perturb-net without --pretrain-public: %v", err)
	}
}
