package cli

import (
	"encoding/json"
	"path/filepath"
	"slices"
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

// --perturb-epochs/--perturb-epoch-decay/--perturb-min-epochs run the thesis's g_φ
// schedule: refreshes of 3, 2, 1, 1 epochs, each ⌈100 public / 32⌉ = 4 Adam steps,
// recorded in the JSON series and the text report; conflicting settings are refused.
func TestTrainPerturbEpochFlags(t *testing.T) {
	dir := t.TempDir()
	args := []string{"train", "--model", "linear", "--steps", "4", "--batch", "40", "--train-subset", "200",
		"--fil-coords", "2", "--sigma", "1", "--quiet", "--pretrain-public", "0.5", "--pretrain-steps", "2",
		"--perturb-net", "--perturb-batch", "32", "--perturb-hidden", "2",
		"--perturb-epochs", "3", "--perturb-epoch-decay", "1", "--perturb-min-epochs", "1"}
	out, err := runTrainCLI(t, append(args, "--json", "--out", filepath.Join(dir, "a"))...)
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Tuning struct {
			Perturb struct {
				Epochs     int `json:"epochs"`
				EpochDecay int `json:"epoch_decay"`
				MinEpochs  int `json:"min_epochs"`
				AdamSteps  int `json:"adam_steps"`
				Refreshes  int `json:"refreshes"`
				Series     []struct {
					Step      int `json:"step"`
					Epochs    int `json:"epochs"`
					AdamSteps int `json:"adam_steps"`
				} `json:"series"`
			} `json:"perturb"`
		} `json:"tuning"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("invalid JSON: %v\n%s", err, out)
	}
	pe := res.Tuning.Perturb
	if pe.Epochs != 3 || pe.EpochDecay != 1 || pe.MinEpochs != 1 || pe.Refreshes != 4 || pe.AdamSteps != 28 || len(pe.Series) != 4 {
		t.Fatalf("tuning.perturb %+v: want the schedule 3/1/1, 4 refreshes, 28 Adam steps", pe)
	}
	for i, want := range []int{3, 2, 1, 1} {
		if s := pe.Series[i]; s.Step != i+1 || s.Epochs != want || s.AdamSteps != 4*want {
			t.Errorf("refresh %d: %+v, want step %d, %d epochs, %d Adam steps", i, s, i+1, want, 4*want)
		}
	}
	human, err := runTrainCLI(t, append(args, "--out", filepath.Join(dir, "b"))...)
	if err != nil || !strings.Contains(human, "3 epochs, then 1 fewer per refresh down to 1 (28 Adam steps in all)") {
		t.Fatalf("human summary: %v\n%s", err, human)
	}
	for _, c := range []struct {
		extra []string
		want  string
	}{
		{[]string{"--perturb-steps", "5"}, "set one of them"},
		{[]string{"--perturb-min-epochs", "4"}, "perturb_min_epochs = 4 must be ≤ perturb_epochs = 3"},
		{[]string{"--perturb-epoch-decay", "-1"}, "must be ≥ 0"},
	} {
		_, err := runTrainCLI(t, append(append(slices.Clone(args), c.extra...), "--out", filepath.Join(dir, "c"))...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one containing %q", c.extra, err, c.want)
		}
	}
}

// --perturb-lambda-decay/--perturb-min-lambda run the thesis code's λ schedule:
// λ = 1000, 600, 200, 50 over four refreshes (decay 400, floor 50), in the JSON series
// and the text report; g_φ trains with it (the refreshes after the first differ from
// a run at fixed λ = 1000, the first does not); bad settings are refused.
func TestTrainPerturbLambdaDecayFlags(t *testing.T) {
	dir := t.TempDir()
	args := []string{"train", "--model", "linear", "--steps", "4", "--batch", "40", "--train-subset", "200",
		"--fil-coords", "2", "--sigma", "1", "--quiet", "--pretrain-public", "0.5", "--pretrain-steps", "2",
		"--perturb-net", "--perturb-arch", "constant", "--perturb-batch", "32", "--perturb-steps", "3"}
	type series struct {
		Lambda      float64 `json:"lambda"`
		Loss        float64 `json:"loss"`
		PerturbNorm float64 `json:"perturb_norm"`
	}
	run := func(name string, extra ...string) (lam, decay, floor float64, ser []series) {
		t.Helper()
		out, err := runTrainCLI(t, append(append(slices.Clone(args), extra...), "--json", "--out", filepath.Join(dir, name))...)
		if err != nil {
			t.Fatal(err)
		}
		var res struct {
			Tuning struct {
				Perturb struct {
					Lambda      float64  `json:"lambda"`
					LambdaDecay float64  `json:"lambda_decay"`
					MinLambda   float64  `json:"min_lambda"`
					Series      []series `json:"series"`
				} `json:"perturb"`
			} `json:"tuning"`
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("invalid JSON: %v\n%s", err, out)
		}
		p := res.Tuning.Perturb
		return p.Lambda, p.LambdaDecay, p.MinLambda, p.Series
	}
	lam, decay, floor, dec := run("decay", "--perturb-lambda-decay", "400", "--perturb-min-lambda", "50")
	if lam != 1000 || decay != 400 || floor != 50 || len(dec) != 4 {
		t.Fatalf("tuning.perturb: λ %v, decay %v, floor %v, %d refreshes; want 1000, 400, 50, 4", lam, decay, floor, len(dec))
	}
	for i, want := range []float64{1000, 600, 200, 50} {
		if dec[i].Lambda != want {
			t.Errorf("refresh %d: λ = %v, want %v", i, dec[i].Lambda, want)
		}
	}
	lam, decay, _, fixed := run("fixed")
	if lam != 1000 || decay != 0 || len(fixed) != 4 || fixed[3].Lambda != 1000 {
		t.Fatalf("fixed λ: %v, decay %v, series %+v", lam, decay, fixed)
	}
	if dec[0] != fixed[0] {
		t.Errorf("first refresh (λ = 1000 in both) differs: %+v vs %+v", dec[0], fixed[0])
	}
	for i := 1; i < 4; i++ {
		if dec[i].Loss == fixed[i].Loss {
			t.Errorf("refresh %d: the same public loss %v at λ %v and 1000: g_φ did not train with the schedule", i, dec[i].Loss, dec[i].Lambda)
		}
	}
	human, err := runTrainCLI(t, append(slices.Clone(args), "--perturb-lambda-decay", "400", "--perturb-min-lambda", "50", "--out", filepath.Join(dir, "h"))...)
	if err != nil || !strings.Contains(human, "λ=1000, then 400 less per refresh down to 50") {
		t.Fatalf("human summary: %v\n%s", err, human)
	}
	for _, c := range []struct {
		extra []string
		want  string
	}{
		{[]string{"--perturb-lambda-decay", "-1"}, "must be finite and ≥ 0"},
		{[]string{"--perturb-lambda-decay", "NaN"}, "must be finite and ≥ 0"},
		{[]string{"--perturb-min-lambda", "10"}, "set perturb_lambda_decay > 0"},
		{[]string{"--perturb-lambda-decay", "100", "--perturb-min-lambda", "2000"}, "perturb_min_lambda = 2000 must be ≤ perturb_lambda = 1000"},
	} {
		_, err := runTrainCLI(t, append(append(slices.Clone(args), c.extra...), "--out", filepath.Join(dir, "c"))...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one containing %q", c.extra, err, c.want)
		}
	}
	noNet := []string{"train", "--model", "linear", "--steps", "1", "--quiet", "--perturb-lambda-decay", "100", "--out", filepath.Join(dir, "n")}
	if _, err := runTrainCLI(t, noNet...); err == nil || !strings.Contains(err.Error(), "need perturb_net") {
		t.Errorf("--perturb-lambda-decay without --perturb-net: %v", err)
	}
}

// TestTrainPerturbRestandardiseFlag checks --perturb-restandardise reaches the run: the
// config records it, the refreshes' gradient-block scales are refitted, and with
// --perturb-no-standardise it is refused.
func TestTrainPerturbRestandardiseFlag(t *testing.T) {
	dir := t.TempDir()
	args := []string{"train", "--model", "linear", "--steps", "4", "--batch", "40", "--train-subset", "200",
		"--fil-coords", "2", "--sigma", "1", "--quiet", "--pretrain-public", "0.5", "--pretrain-steps", "2",
		"--perturb-net", "--perturb-batch", "32", "--perturb-hidden", "2", "--perturb-steps", "2", "--perturb-restandardise"}
	out, err := runTrainCLI(t, append(args, "--json", "--out", filepath.Join(dir, "a"))...)
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Config struct {
			Tuning struct {
				Restd bool `json:"perturb_restandardise"`
			} `json:"tuning"`
		} `json:"config"`
		Tuning struct {
			Perturb struct {
				Series []struct {
					InputScale [2]float64 `json:"input_scale"`
				} `json:"series"`
			} `json:"perturb"`
		} `json:"tuning"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("invalid JSON: %v\n%s", err, out)
	}
	s := res.Tuning.Perturb.Series
	if !res.Config.Tuning.Restd || len(s) != 4 || s[0].InputScale[1] == s[3].InputScale[1] {
		t.Fatalf("config.tuning.perturb_restandardise %v, series %+v: want the option recorded and the gradient scale refitted", res.Config.Tuning.Restd, s)
	}
	_, err = runTrainCLI(t, append(args, "--perturb-no-standardise", "--out", filepath.Join(dir, "b"))...)
	if err == nil || !strings.Contains(err.Error(), "exclude each other") {
		t.Fatalf("--perturb-no-standardise with --perturb-restandardise: %v", err)
	}
}
