package cli

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// writeGeneratedCIFAR writes the six CIFAR-10 binary batches in their exact format and
// size (10 000 records of 1 label byte + 3 072 pixel bytes each) with generated
// content, so that the commands the coverage table of docs/results.md gives for the
// CIFAR-10 items run end to end without the real data.
func writeGeneratedCIFAR(t *testing.T, dir string) {
	t.Helper()
	const records, recBytes = 10000, 1 + 3*32*32
	names := []string{"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin", "data_batch_5.bin", "test_batch.bin"}
	buf := make([]byte, records*recBytes)
	for k, name := range names {
		x := uint32(2654435761 * uint32(k+1))
		for r := 0; r < records; r++ {
			rec := buf[r*recBytes : (r+1)*recBytes]
			rec[0] = byte((r + k) % 10)
			for j := 1; j < recBytes; j++ {
				x ^= x << 13
				x ^= x >> 17
				x ^= x << 5
				rec[j] = byte(x)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, name), buf, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCIFARCommandsOnGeneratedData runs, on generated CIFAR-10 batches of the real
// shape, the commands that reproduce Guo et al.'s Fig. 6 (cifar-cnn with FIL, then
// the top/bottom-dFIL image grid; the Fig. 5 grid runs the same training per
// configuration) at a few steps.
func TestCIFARCommandsOnGeneratedData(t *testing.T) {
	data, runs := t.TempDir(), t.TempDir()
	writeGeneratedCIFAR(t, data)
	out := filepath.Join(runs, "fig6c")
	stdout, _, err := execCLI(t, "train", "--model", "cifar-cnn", "--dataset", "cifar10", "--data-dir", data,
		"--steps", "2", "--batch", "8", "--momentum", "0.5", "--sigma", "0.5", "--lr", "0.1", "--clip", "1",
		"--fil-coords", "2", "--out", out, "--json", "--quiet")
	if err != nil {
		t.Fatalf("train cifar-cnn: %v", err)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("train --json: %v\n%s", err, stdout)
	}
	if _, err := os.Stat(filepath.Join(out, "dfil.npy")); err != nil {
		t.Fatalf("no dfil.npy: %v", err)
	}
	png := filepath.Join(runs, "fig6-cifar.png")
	if _, _, err := execCLI(t, "plot", "images", "--dfil", filepath.Join(out, "dfil.npy"), "--dataset", "cifar10",
		"--data-dir", data, "--top", "8", "--bottom", "8", "-o", png); err != nil {
		t.Fatalf("plot images: %v", err)
	}
	if st, err := os.Stat(png); err != nil || st.Size() == 0 {
		t.Fatalf("image grid: %v", err)
	}

}

// TestCIFARLinearTable33OnGeneratedData runs, on generated CIFAR-10 batches of the
// real shape, the commands of Edmunds' Table 3.3 (50 % public CIFAR-10, the linear
// model of examples/cifar-linear.yaml): DP-SGD after public pretraining, with
// magnitude pruning, and with pruning and the learned perturbation g_φ, at a few
// steps, and checks that each reports its accuracy, ε, dFIL, the public/private
// split, and (prune, FIM) the frozen half of the 30 730 parameters.
func TestCIFARLinearTable33OnGeneratedData(t *testing.T) {
	data, runs := t.TempDir(), t.TempDir()
	writeGeneratedCIFAR(t, data)
	base := []string{"train", "--arch", filepath.Join("..", "examples", "cifar-linear.yaml"), "--dataset", "cifar10", "--data-dir", data,
		"--steps", "2", "--batch", "16", "--lr", "0.01", "--sigma", "1", "--clip", "10", "--fil-coords", "2",
		"--pretrain-public", "0.5", "--pretrain-steps", "2", "--pretrain-batch", "16", "--json", "--quiet"}
	for _, tc := range []struct {
		name   string
		extra  []string
		frozen bool
	}{
		{"dpsgd", nil, false},
		{"prune", []string{"--prune-fraction", "0.5"}, true},
		{"fim", []string{"--prune-fraction", "0.5", "--perturb-net", "--perturb-steps", "1", "--perturb-lr", "1e-3"}, true},
	} {
		args := append(append(append([]string(nil), base...), tc.extra...), "--out", filepath.Join(runs, tc.name))
		stdout, _, err := execCLI(t, args...)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var res struct {
			Accuracy *float64 `json:"test_accuracy"`
			Epsilon  float64  `json:"epsilon"`
			DFILMean float64  `json:"dfil_mean"`
			Tuning   struct {
				Public  int            `json:"n_public"`
				Private int            `json:"n_private"`
				Frozen  int            `json:"frozen_params"`
				Perturb map[string]any `json:"perturb"`
			} `json:"tuning"`
		}
		if err := json.Unmarshal([]byte(stdout), &res); err != nil {
			t.Fatalf("%s: %v\n%s", tc.name, err, stdout)
		}
		tu := res.Tuning
		if res.Accuracy == nil || !(res.Epsilon > 0) || !(res.DFILMean > 0) || tu.Public != 25000 || tu.Private != 25000 {
			t.Errorf("%s: accuracy %v, ε %v, mean dFIL %v, public/private %d/%d", tc.name, res.Accuracy, res.Epsilon, res.DFILMean, tu.Public, tu.Private)
		}
		if want := 0; tc.frozen && tu.Frozen != 30730/2 || !tc.frozen && tu.Frozen != want {
			t.Errorf("%s: %d frozen parameters", tc.name, tu.Frozen)
		}
		if (tu.Perturb != nil) != (tc.name == "fim") {
			t.Errorf("%s: g_φ report %v", tc.name, tu.Perturb)
		}
	}
}

// TestCIFARAttackOnGeneratedData runs, on generated CIFAR-10 batches of the real
// shape, the command of Hayes et al.'s Fig. 2 on CIFAR-10 (attack success against
// the ReRo and RDP bounds over ε, cifar-cnn standing in for WRN-28-10) at 2 trials
// of 2 steps with |D₋| = 9, and checks that it reports both ε values with a success
// rate, the bound and a test accuracy on the --eval-size samples asked for.
func TestCIFARAttackOnGeneratedData(t *testing.T) {
	data := t.TempDir()
	writeGeneratedCIFAR(t, data)
	out := filepath.Join(t.TempDir(), "fig2c")
	stdout, _, err := execCLI(t, "attack", "sweep-eps", "--dataset", "cifar10", "--data-dir", data, "--model", "cifar-cnn",
		"--values", "1,10", "--known", "9", "--clip", "1", "--trials", "2", "--steps", "2", "--eval-size", "20",
		"--out", out, "--quiet", "--json")
	if err != nil {
		t.Fatalf("attack sweep-eps on cifar10: %v", err)
	}
	var res struct {
		Results []struct {
			Epsilon      float64  `json:"epsilon"`
			SuccessRate  *float64 `json:"success_rate"`
			Gamma        float64  `json:"gamma"`
			TestAccuracy *float64 `json:"test_accuracy"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	if len(res.Results) != 2 {
		t.Fatalf("%d results, want 2\n%s", len(res.Results), stdout)
	}
	for i, p := range res.Results {
		if p.SuccessRate == nil || !(p.Gamma > 0) || p.TestAccuracy == nil {
			t.Errorf("point %d (ε %v): success %v, γ %v, test accuracy %v", i, p.Epsilon, p.SuccessRate, p.Gamma, p.TestAccuracy)
		}
		// the mean over 2 trials of accuracies on 20 samples: a multiple of 1/40
		// (of 1/20 000 over the whole generated test split)
		if a := p.TestAccuracy; a != nil && math.Abs(*a*40-math.Round(*a*40)) > 1e-9 {
			t.Errorf("point %d: test accuracy %v is not over --eval-size 20 samples", i, *a)
		}
	}
}
