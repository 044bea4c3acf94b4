package cli

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runAttackCLI runs `dpfil attack …` and returns stdout and the error.
func runAttackCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, _, err := execCLI(t, append([]string{"attack"}, args...)...)
	return out, err
}

// a tiny game on the embedded MNIST: fast enough for tests
var tinyGame = []string{"--known", "30", "--steps", "4", "--prior-size", "4", "--trials", "6", "--quiet", "--workers", "2"}

func decodeObj(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("output is not one JSON object: %v\n%s", err, s)
	}
	return m
}

func TestAttackGameJSON(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		eps  float64 // expected ε (0: computed from σ)
	}{
		{"epsilon", []string{"--epsilon", "8"}, 8},
		{"sigma poisson", []string{"--sigma", "2", "--q", "0.5", "--rero-samples", "20000"}, 0},
		{"loglik", []string{"--epsilon", "50", "--attack", "loglik"}, 50},
		{"tuned lr", []string{"--epsilon", "8", "--tune-lr", "0.1,5", "--tune-trials", "2"}, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runAttackCLI(t, append(append([]string{"game", "--json"}, tinyGame...), tc.args...)...)
			if err != nil {
				t.Fatal(err)
			}
			m := decodeObj(t, out)
			for _, k := range []string{"success_rate", "success_ci", "gamma", "gamma_rdp", "epsilon", "sigma", "trials", "attacks"} {
				if _, ok := m[k]; !ok {
					t.Fatalf("JSON lacks %q: %s", k, out)
				}
			}
			rate := m["success_rate"].(float64)
			ci := m["success_ci"].([]any)
			lo, hi := ci[0].(float64), ci[1].(float64)
			if !(lo <= rate && rate <= hi && lo >= 0 && hi <= 1) {
				t.Fatalf("success %v outside its CI [%v, %v]", rate, lo, hi)
			}
			if m["trials"].(float64) != 6 {
				t.Fatalf("trials %v, want 6", m["trials"])
			}
			g, gr := m["gamma"].(float64), m["gamma_rdp"].(float64)
			if !(g > 0.25 && g <= 1 && gr >= g-0.02) {
				t.Fatalf("γ = %v, RDP γ = %v (κ = 0.25)", g, gr)
			}
			if tc.eps > 0 && math.Abs(m["epsilon"].(float64)-tc.eps) > 1e-3*tc.eps {
				t.Fatalf("ε = %v, want %v", m["epsilon"], tc.eps)
			}
			if !(m["sigma"].(float64) > 0) {
				t.Fatalf("σ = %v", m["sigma"])
			}
			if tu, ok := m["lr_tuning"].(map[string]any); ok != (tc.name == "tuned lr") {
				t.Fatalf("lr_tuning %v", m["lr_tuning"])
			} else if ok && (tu["chosen"] != m["lr"] || len(tu["candidates"].([]any)) != 2) {
				t.Fatalf("lr %v, tuning %v", m["lr"], tu)
			}
		})
	}
}

func TestAttackGameHumanAndResume(t *testing.T) {
	dir := t.TempDir()
	args := append([]string{"game", "--epsilon", "20", "--out", dir, "--record-transcripts"}, tinyGame...)
	out, err := runAttackCLI(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "ReRo γ") || !strings.Contains(out, "prior-topk") {
		t.Fatalf("human summary lacks the bound or the attacks:\n%s", out)
	}
	tr, err := filepath.Glob(filepath.Join(dir, "transcripts", "*.dpft"))
	if err != nil || len(tr) != 6 {
		t.Fatalf("%d transcripts written (%v), want 6", len(tr), err)
	}
	first, _ := os.ReadFile(filepath.Join(dir, "trials.jsonl"))
	out2, err := runAttackCLI(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := os.ReadFile(filepath.Join(dir, "trials.jsonl"))
	if !bytes.Equal(first, again) || strings.Count(string(again), "\n") != 6 {
		t.Fatal("a resumed finished run replayed trials")
	}
	if strings.Split(out, "final")[0] != strings.Split(out2, "final")[0] {
		t.Fatalf("resumed summary differs:\n%s\n%s", out, out2)
	}
	// the adversary's replay of a transcript file gives the game's guesses
	var trial0 struct {
		Trial int            `json:"trial"`
		Guess map[string]int `json:"guess"`
	}
	for _, line := range bytes.Split(bytes.TrimSpace(first), []byte("\n")) {
		if err := json.Unmarshal(line, &trial0); err != nil {
			t.Fatal(err)
		}
		if trial0.Trial == 0 {
			break
		}
	}
	if trial0.Trial != 0 {
		t.Fatal("trial 0 missing from trials.jsonl")
	}
	rep, err := runAttackCLI(t, "replay", "--json", filepath.Join(dir, "transcripts", "trial-000000.dpft"))
	if err != nil {
		t.Fatal(err)
	}
	var rr struct {
		Complete bool           `json:"complete"`
		Guess    map[string]int `json:"guess"`
	}
	if err := json.Unmarshal([]byte(rep), &rr); err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{"prior", "prior-topk", "loglik"} {
		if !rr.Complete || rr.Guess[a] != trial0.Guess[a] {
			t.Fatalf("replay %s guessed %d (complete %v), the game %d", a, rr.Guess[a], rr.Complete, trial0.Guess[a])
		}
	}
	// a corrupted transcript is rejected
	bad := filepath.Join(t.TempDir(), "bad.dpft")
	b, _ := os.ReadFile(filepath.Join(dir, "transcripts", "trial-000001.dpft"))
	b[len(b)/2] ^= 0x10
	if err := os.WriteFile(bad, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := runAttackCLI(t, "replay", bad); err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("corrupt transcript: error %v, want a checksum error", err)
	}
	// another game in the same directory is refused
	if _, err := runAttackCLI(t, append([]string{"game", "--epsilon", "3", "--out", dir}, tinyGame...)...); err == nil {
		t.Fatal("a different game reused --out")
	}
}

func TestAttackGameGradient(t *testing.T) {
	out, err := runAttackCLI(t, append([]string{"game", "--json", "--sigma", "1e-4", "--attack", "gradient", "--grad-iters", "20", "--grad-restarts", "1", "--trials", "2"}, tinyGame[:6]...)...)
	if err != nil {
		t.Fatal(err)
	}
	m := decodeObj(t, out)
	if m["attack"] != "gradient" || m["gradient_mse"] == nil {
		t.Fatalf("gradient attack result lacks its MSE: %s", out)
	}
	if mse := m["gradient_mse"].(float64); !(mse >= 0 && mse < 1) {
		t.Fatalf("gradient MSE %v", mse)
	}
}

func TestAttackGameErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"K < 2", []string{"--prior-size", "1"}, "prior size"},
		{"eval size < 0", []string{"--eval-size", "-1"}, "evaluation size -1 < 0"},
		{"eps 0", []string{"--epsilon", "0"}, "epsilon"},
		{"eps negative", []string{"--epsilon", "-1"}, "epsilon"},
		{"q 0", []string{"--q", "0"}, "sampling rate q"},
		{"q > 1", []string{"--q", "1.5"}, "sampling rate q"},
		{"eps and sigma", []string{"--epsilon", "1", "--sigma", "1"}, "[epsilon sigma]"},
		{"sigma negative", []string{"--sigma", "-1"}, "sigma"},
		{"unknown attack", []string{"--attack", "magic"}, "attack"},
		{"trials 0", []string{"--trials", "0"}, "trials"},
		{"transcripts without out", []string{"--record-transcripts"}, "--out"},
		{"unknown model", []string{"--model", "resnet"}, "resnet"},
		{"unknown dataset", []string{"--dataset", "imagenet"}, "imagenet"},
		{"lr and tune-lr", []string{"--lr", "1", "--tune-lr", "0.1,1"}, "[lr tune-lr]"},
		{"tune-lr 0", []string{"--tune-lr", "0,1"}, "tuning learning rate 0"},
		{"tune-trials 0", []string{"--tune-lr", "1", "--tune-trials", "0"}, "tuning trials 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runAttackCLI(t, append([]string{"game", "--quiet", "--trials", "1", "--steps", "1", "--known", "5"}, tc.args...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

func TestAttackSweeps(t *testing.T) {
	for _, tc := range []struct {
		cmd, values string
		extra       []string
	}{
		{"sweep-eps", "2,200", nil},
		{"sweep-k", "2,5", []string{"--epsilon", "10"}},
		{"sweep-q", "0.1,1", []string{"--rero-samples", "20000"}},
	} {
		t.Run(tc.cmd, func(t *testing.T) {
			dir := t.TempDir()
			args := append(append([]string{tc.cmd, "--json", "--values", tc.values, "--out", dir}, tinyGame...), tc.extra...)
			out, err := runAttackCLI(t, args...)
			if err != nil {
				t.Fatal(err)
			}
			m := decodeObj(t, out)
			if rs := m["results"].([]any); len(rs) != 2 {
				t.Fatalf("%d results, want 2", len(rs))
			}
			rows := readCSV(t, filepath.Join(dir, "sweep.csv"))
			// header + 2 values × 3 prior-aware attacks
			if len(rows) != 7 || rows[0][0] != "sweep" {
				t.Fatalf("CSV has %d rows: %v", len(rows), rows)
			}
			if _, err := os.Stat(filepath.Join(dir, "sweep.json")); err != nil {
				t.Fatal(err)
			}
		})
	}
	if _, err := runAttackCLI(t, "sweep-eps", "--values", "1,2", "--quiet"); err == nil {
		t.Fatal("sweep without --out: no error")
	}
	if _, err := runAttackCLI(t, "sweep-k", "--values", "2.5", "--out", t.TempDir(), "--quiet"); err == nil {
		t.Fatal("non-integer K: no error")
	}
}

// TestBadInputSameError runs the same bad input 20 times: the error names the same
// problem every time (validation runs in a fixed order, never over a map).
func TestBadInputSameError(t *testing.T) {
	for _, args := range [][]string{
		{"attack", "game", "--q", "NaN", "--delta", "NaN", "--steps", "0", "--prior-size", "1", "--quiet"},
		{"attack", "sweep-q", "--values", "2,NaN", "--q", "NaN", "--out", "unused", "--quiet"},
		{"glm", "fil", "--lambda", "NaN", "--sigma", "Inf", "--radius", "-1", "--quiet"},
		{"glm", "invert", "--lambda", "0", "--sigma", "NaN", "--trials", "0", "--loss", "x", "--quiet"},
	} {
		var first string
		for i := 0; i < 20; i++ {
			_, _, err := execCLI(t, args...)
			if err == nil {
				t.Fatalf("%v accepted", args)
			}
			if i == 0 {
				first = err.Error()
			} else if err.Error() != first {
				t.Fatalf("%v: error %q, then %q", args, first, err.Error())
			}
		}
	}
}

// TestAttackFailedStartLeavesNoDirectory: attack commands that fail before any
// trial (missing data, bad values) leave no --out directory behind.
func TestAttackFailedStartLeavesNoDirectory(t *testing.T) {
	t.Setenv("DPFIL_DATA", t.TempDir())
	t.Setenv("DPFIL_MIRROR", "http://127.0.0.1:1/") // refused at once: no network
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"game missing data", []string{"game", "--dataset", "cifar10", "--data-dir", t.TempDir(), "--epsilon", "8"}, "cifar10"},
		{"game bad q", []string{"game", "--q", "2", "--epsilon", "8"}, "q"},
		{"sweep missing data", []string{"sweep-eps", "--values", "1,2", "--dataset", "cifar10", "--data-dir", t.TempDir()}, "cifar10"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "new", "game")
			_, err := runAttackCLI(t, append(append(tc.args, "--out", out), tinyGame...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error mentioning %q", err, tc.want)
			}
			if _, serr := os.Stat(filepath.Dir(out)); !os.IsNotExist(serr) {
				t.Errorf("failed start (%v) left %s behind", err, filepath.Dir(out))
			}
		})
	}
}
