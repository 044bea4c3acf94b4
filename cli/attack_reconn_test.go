package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAttackReconnCommand(t *testing.T) {
	out, stderr, err := execCLI(t, "attack", "reconn", "--quiet", "--json", "--fixed", "9", "--pool", "20", "--shadows", "6",
		"--targets", "2", "--steps", "2", "--fil-coords", "2", "--reconstructor", "ridge", "--out", t.TempDir())
	if err != nil {
		t.Fatalf("attack reconn: %v\n%s", err, stderr)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("invalid JSON: %v\n%s", err, out)
	}
	if m["shadows"].(float64) != 6 || len(m["targets"].([]any)) != 2 || len(m["files"].([]any)) != 2 {
		t.Fatalf("result: %v", m)
	}
	sh, _ := m["shadow_training"].(map[string]any)
	if sh["trainer"] != "batched" || sh["trained"].(float64) != 6 || !(sh["shadows_per_second"].(float64) > 0) {
		t.Errorf("shadow_training: %v", sh)
	}
	for _, k := range []string{"mean_ssim", "mean_baseline_ssim", "mean_prior_mean_mse", "mean_nearest_mse"} {
		if v, ok := m[k].(float64); !ok || !(v > -1 && v < 1) {
			t.Errorf("%s = %v", k, m[k])
		}
	}
	human, _, err := execCLI(t, "attack", "reconn", "--quiet", "--fixed", "9", "--pool", "20", "--shadows", "3",
		"--targets", "1", "--steps", "1", "--fil-coords", "0", "--rec-epochs", "2", "--hidden", "4")
	if err != nil || !strings.Contains(human, "RecoNN on mnist-embedded") {
		t.Fatalf("human output: %v\n%s", err, human)
	}
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--repeats", "2"}, "repeats"},
		{[]string{"--fixed", "0"}, "known set"},
		{[]string{"--fixed", "100000"}, "leaves no pool"},
		{[]string{"--shadows", "0"}, "at least 2 shadow"},
		{[]string{"--reconstructor", "gan"}, "reconstructor"},
		{[]string{"--targets", "100000"}, "test samples"},
		{[]string{"--shadow-trainer", "gpu"}, "shadow trainer"},
		{[]string{"--shadow-trainer", "batched", "--batch", "5"}, "full training set"},
		{[]string{"--shadow-trainer", "batched", "--model", "mnist-cnn"}, "is not Flatten"},
		{[]string{"--shadow-trainer", "batched", "--optimizer", "adam"}, `optimizer "adam" needs train.Run`},
		{[]string{"--optimizer", "adam", "--momentum", "0.5"}, "momentum = 0.5 is momentum SGD's"},
	} {
		args := append([]string{"attack", "reconn", "--quiet", "--fixed", "9", "--pool", "20", "--shadows", "2", "--steps", "1", "--fil-coords", "0"}, tc.args...)
		if _, _, err := execCLI(t, args...); err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("attack reconn %v: error %v, want one saying %q", tc.args, err, tc.msg)
		}
	}
}

// --optimizer adam reaches the shadow and target models: auto picks the engine
// trainer (the batched one updates with momentum SGD).
func TestAttackReconnAdam(t *testing.T) {
	out, stderr, err := execCLI(t, "attack", "reconn", "--quiet", "--json", "--fixed", "9", "--pool", "20", "--shadows", "3",
		"--targets", "1", "--steps", "2", "--fil-coords", "0", "--reconstructor", "ridge", "--optimizer", "adam", "--lr", "0.01")
	if err != nil {
		t.Fatalf("attack reconn --optimizer adam: %v\n%s", err, stderr)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("invalid JSON: %v\n%s", err, out)
	}
	if sh, _ := m["shadow_training"].(map[string]any); sh["trainer"] != "engine" {
		t.Fatalf("shadow_training: %v", sh)
	}
	if !strings.Contains(out, `"optimizer":"adam"`) && !strings.Contains(out, `"optimizer": "adam"`) {
		t.Fatalf("the report does not record the optimizer:\n%s", out)
	}
}

// --public draws a fixed public pool that every model gets, so that --perturb-net
// (Edmunds's FIM) runs in the attack; the report gives its size.
func TestAttackReconnPublic(t *testing.T) {
	base := []string{"attack", "reconn", "--quiet", "--fixed", "9", "--pool", "20", "--steps", "1", "--fil-coords", "0",
		"--model", "linear", "--same-init", "--prune-fraction", "0.5", "--pretrain-steps", "-1", "--reconstructor", "ridge"}
	out, stderr, err := execCLI(t, append(base, "--json", "--public", "50", "--perturb-net", "--perturb-steps", "1",
		"--perturb-batch", "8", "--perturb-hidden", "4", "--shadows", "4", "--targets", "2")...)
	if err != nil {
		t.Fatalf("attack reconn --public: %v\n%s", err, stderr)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("invalid JSON: %v\n%s", err, out)
	}
	sh, _ := m["shadow_training"].(map[string]any)
	rc, _ := m["recipe"].(map[string]any)
	tu, _ := rc["tuning"].(map[string]any)
	if m["public"] != 50.0 || m["public_disjoint"] != true || m["pool"] != 20.0 || sh["trainer"] != "engine" || tu["public_external"] != true || tu["perturb_net"] != true {
		t.Fatalf("public %v, disjoint %v, pool %v, trainer %v, recipe tuning %v", m["public"], m["public_disjoint"], m["pool"], sh["trainer"], tu)
	}
	human, _, err := execCLI(t, append(base, "--public", "50", "--perturb-net", "--perturb-steps", "1", "--perturb-hidden", "4", "--shadows", "3", "--targets", "1")...)
	if err != nil || !strings.Contains(human, "public pool: 50 training samples (disjoint") {
		t.Fatalf("human output: %v\n%s", err, human)
	}
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--public", "50", "--perturb-net", "--shadow-trainer", "batched"}, "batched does not train with a public pool"},
		{[]string{"--perturb-net"}, "--public N"},
		{[]string{"--public", "50", "--perturb-net", "--pretrain-public", "0.5"}, "pretrain_public"},
		{[]string{"--public", "100000", "--perturb-net"}, "leave no prior pool"},
		{[]string{"--public", "7980", "--perturb-net"}, "exceed the"},
	} {
		if _, _, err := execCLI(t, append(append(base, "--shadows", "2", "--targets", "1"), tc.args...)...); err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("attack reconn %v: error %v, want one saying %q", tc.args, err, tc.msg)
		}
	}
}

// --arch trains an architecture file's model: one logit against a fixed zero
// (zero_logit) on binary digits, with the batched shadow trainer; --arch and --model
// together are refused.
func TestAttackReconnArchFile(t *testing.T) {
	arch := filepath.Join(t.TempDir(), "logit.yaml")
	if err := os.WriteFile(arch, []byte("name: one-logit\nlayers:\n  - flatten\n  - {kind: dense, out: 1}\n  - zero_logit\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, err := execCLI(t, "attack", "reconn", "--quiet", "--json", "--dataset", "mnist01-embedded", "--arch", arch,
		"--fixed", "9", "--pool", "20", "--shadows", "6", "--targets", "2", "--steps", "2", "--fil-coords", "2", "--reconstructor", "ridge")
	if err != nil {
		t.Fatalf("attack reconn --arch: %v\n%s", err, stderr)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("invalid JSON: %v\n%s", err, out)
	}
	sh, _ := m["shadow_training"].(map[string]any)
	rc, _ := m["recipe"].(map[string]any)
	if sh["trainer"] != "batched" || rc["model"] != "one-logit" {
		t.Fatalf("trainer %v, recipe model %v", sh["trainer"], rc["model"])
	}
	if _, _, err := execCLI(t, "attack", "reconn", "--quiet", "--arch", arch, "--model", "linear"); err == nil {
		t.Error("--arch with --model was accepted")
	}
}
