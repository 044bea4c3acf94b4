package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestTrainOptimizerFlags: --optimizer adam trains with torch's β1, β2, ε unless
// given and momentum 0 (the config records them), the human summary names them,
// and bad values or --momentum with adam are refused with clear errors.
func TestTrainOptimizerFlags(t *testing.T) {
	dir := t.TempDir()
	base := []string{"train", "--model", "linear", "--steps", "3", "--batch", "40", "--train-subset", "120", "--fil-coords", "0", "--quiet"}
	run := func(name string, extra ...string) (map[string]any, error) {
		out, err := runTrainCLI(t, append(append(append([]string(nil), base...), "--json", "--out", filepath.Join(dir, name)), extra...)...)
		if err != nil {
			return nil, err
		}
		var res map[string]any
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("invalid JSON: %v\n%s", err, out)
		}
		return res["config"].(map[string]any), nil
	}
	cfg, err := run("adam", "--optimizer", "adam", "--lr", "0.01")
	if err != nil {
		t.Fatal(err)
	}
	if cfg["optimizer"] != "adam" || cfg["adam_beta1"] != 0.9 || cfg["adam_beta2"] != 0.999 || cfg["adam_eps"] != 1e-8 || cfg["momentum"] != 0.0 {
		t.Fatalf("adam config %v", cfg)
	}
	cfg, err = run("adam-set", "--optimizer", "adam", "--adam-beta1", "0.5", "--adam-beta2", "0.9", "--adam-eps", "1e-6", "--momentum", "0")
	if err != nil {
		t.Fatal(err)
	}
	if cfg["adam_beta1"] != 0.5 || cfg["adam_beta2"] != 0.9 || cfg["adam_eps"] != 1e-6 {
		t.Fatalf("adam config with flags %v", cfg)
	}
	cfg, err = run("sgd")
	if err != nil {
		t.Fatal(err)
	}
	for k := range cfg {
		if k == "optimizer" || strings.HasPrefix(k, "adam_") {
			t.Fatalf("default run's config has %q: %v", k, cfg)
		}
	}
	human, err := runTrainCLI(t, append(append([]string(nil), base...), "--out", filepath.Join(dir, "human"), "--optimizer", "adam", "--lr", "0.01")...)
	if err != nil || !strings.Contains(human, "lr 0.01, adam β1 0.9 β2 0.999 ε 1e-08") {
		t.Fatalf("human summary: %v\n%s", err, human)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--optimizer", "adam", "--momentum", "0.9"}, "momentum = 0.9 is momentum SGD's"},
		{[]string{"--optimizer", "rmsprop"}, `optimizer = "rmsprop"`},
		{[]string{"--optimizer", "adam", "--adam-beta1", "1"}, "adam_beta1 = 1 must be in [0, 1)"},
		{[]string{"--optimizer", "adam", "--adam-beta2", "-0.1"}, "adam_beta2"},
		{[]string{"--optimizer", "adam", "--adam-eps", "0"}, "adam_eps = 0 must be positive"},
		{[]string{"--adam-beta1", "0.8"}, "are Adam's"},
	} {
		_, err := runTrainCLI(t, append(append(append([]string(nil), base...), "--out", filepath.Join(dir, "bad")), tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error mentioning %q", tc.args, err, tc.want)
		}
	}
}
