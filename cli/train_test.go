package cli

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpfil/dpfil/train"
)

// runTrainCLI executes the command tree with args and returns stdout and the error.
func runTrainCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, _, err := execCLI(t, args...)
	return out, err
}

func TestTrainJSON(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	out, err := runTrainCLI(t, "train", "--model", "linear", "--steps", "4", "--batch", "50", "--train-subset", "300",
		"--fil-coords", "3", "--sigma", "1.2", "--seed", "3", "--json", "--quiet", "--out", dir)
	if err != nil {
		t.Fatal(err)
	}
	var res map[string]any
	dec := json.NewDecoder(strings.NewReader(out))
	if err := dec.Decode(&res); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, out)
	}
	if dec.More() {
		t.Fatal("more than one JSON value on stdout")
	}
	cfg := res["config"].(map[string]any)
	if cfg["model"] != "linear" || cfg["sigma"] != 1.2 || cfg["train_subset"] != 300.0 {
		t.Fatalf("config %v", cfg)
	}
	acc := res["test_accuracy"].(float64)
	eps := res["epsilon"].(float64)
	if !(acc >= 0 && acc <= 1) || !(eps > 0) || res["dfil_max"].(float64) <= 0 {
		t.Fatalf("accuracy %v, epsilon %v, dfil_max %v", acc, eps, res["dfil_max"])
	}
	if b := res["mse_bound_fil_max"].(float64); math.Abs(b*res["dfil_max"].(float64)-1) > 1e-12 {
		t.Fatalf("mse_bound_fil_max %v is not 1/dfil_max", b)
	}
	if st, wall, sps := res["step_seconds"].(float64), res["wall_seconds"].(float64), res["samples_per_sec"].(float64); !(st > 0 && st <= wall && sps > 0) {
		t.Fatalf("timings: step %v s, wall %v s, %v samples/s", st, wall, sps)
	}
	for _, f := range []string{"result.json", "dfil.npy", "params.npy"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatalf("missing %s: %v", f, err)
		}
	}
	for _, f := range []string{".lock", "checkpoint.bin"} {
		if _, err := os.Stat(filepath.Join(dir, f)); !os.IsNotExist(err) {
			t.Errorf("the finished run left %s behind", f)
		}
	}
	// The run directory now holds a finished run: --resume returns it unchanged.
	out2, err := runTrainCLI(t, "train", "--resume", dir, "--json", "--quiet")
	if err != nil {
		t.Fatal(err)
	}
	var res2 map[string]any
	if err := json.Unmarshal([]byte(out2), &res2); err != nil || res2["test_accuracy"] != acc {
		t.Fatalf("resume of a finished run: %v, %v", err, res2["test_accuracy"])
	}
	// … and running into it again without --resume is refused.
	if _, err := runTrainCLI(t, "train", "--model", "linear", "--steps", "4", "--batch", "50", "--train-subset", "300", "--quiet", "--out", dir); err == nil {
		t.Fatal("a second run into a finished run directory must fail")
	}
}

func TestTrainHuman(t *testing.T) {
	out, err := runTrainCLI(t, "train", "--model", "linear", "--epochs", "0.5", "--batch", "100", "--train-subset", "400",
		"--fil-coords", "0", "--quiet", "--out", filepath.Join(t.TempDir(), "r"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"test accuracy", "RDP", "ε =", "FIL                off", "2 steps"} {
		if !strings.Contains(out, want) {
			t.Fatalf("summary lacks %q:\n%s", want, out)
		}
	}
}

func TestTrainDescribe(t *testing.T) {
	out, err := runTrainCLI(t, "train", "--describe", "--model", "mnist-cnn")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"parameters: 26010", "conv 16×8x8 stride 2", "avgpool 2x2 stride 1", "Glorot"} {
		if !strings.Contains(out, want) {
			t.Fatalf("describe lacks %q:\n%s", want, out)
		}
	}
}

func TestTrainErrors(t *testing.T) {
	t.Setenv("DPFIL_DATA", t.TempDir())
	t.Setenv("DPFIL_MIRROR", "http://127.0.0.1:1/") // refused at once: no network
	base := []string{"train", "--model", "linear", "--steps", "2", "--batch", "10", "--train-subset", "100", "--quiet"}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"batch>N", []string{"--batch", "200"}, "exceeds"},
		{"sigma<0", []string{"--sigma", "-1"}, "sigma"},
		{"clip=0", []string{"--clip", "0"}, "clip"},
		{"lr=0", []string{"--lr", "0"}, "lr"},
		{"lr<0", []string{"--lr", "-0.1"}, "lr"},
		{"unknown-model", []string{"--model", "vgg"}, "unknown model"},
		{"unknown-dataset", []string{"--dataset", "imagenet"}, "imagenet"},
		{"missing-dataset", []string{"--dataset", "cifar10", "--data-dir", "EMPTY"}, "cifar10"},
		{"cuda", []string{"--device", "cuda"}, "CUDA"},
		{"fil-no-noise", []string{"--sigma", "0", "--fil-coords", "5"}, "sigma"},
		{"clip-mode", []string{"--clip-mode", "soft"}, "clip_mode"},
		{"clip-algo-unknown", []string{"--clip-algo", "fast"}, "clip_algo"},
		{"clip-algo-ghost-fil", []string{"--clip-algo", "ghost", "--fil-coords", "5"}, "FIL (fil_coords = 5"},
		{"clip-algo-auto-fil-exact", []string{"--clip-algo", "auto", "--fil-coords", "0", "--fil-exact"}, "per-sample engine"},
		{"clip-algo-cuda", []string{"--clip-algo", "ghost", "--fil-coords", "0", "--device", "cuda"}, "CPU engine only"},
		{"conv-algo-unknown", []string{"--conv-algo", "fft"}, "conv_algo"},
		{"conv-algo-cuda", []string{"--conv-algo", "winograd", "--device", "cuda"}, "CPU engine only"},
		{"steps-and-epochs", []string{"--epochs", "1"}, "not both"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string(nil), base...)
			for _, a := range tc.args {
				if a == "EMPTY" {
					a = t.TempDir()
				}
				args = append(args, a)
			}
			out := filepath.Join(t.TempDir(), "r")
			args = append(args, "--out", out)
			_, err := runTrainCLI(t, args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error mentioning %q", err, tc.want)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("the failed start left its run directory %s behind", out)
			}
		})
	}
	if _, err := runTrainCLI(t, "train", "--resume", t.TempDir(), "--sigma", "2"); err == nil || !strings.Contains(err.Error(), "[resume sigma]") {
		t.Fatalf("--resume with config flags: %v", err)
	}
	if _, err := runTrainCLI(t, "train", "--resume", t.TempDir()); err == nil {
		t.Fatal("--resume of an empty directory must fail")
	}
}

func TestDemoJSON(t *testing.T) {
	out, err := runTrainCLI(t, "demo", "--steps", "2", "--fil-coords", "2", "--json", "--quiet")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Result  map[string]any `json:"result"`
		Reading string         `json:"reading"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("demo JSON: %v\n%s", err, out)
	}
	cfg := got.Result["config"].(map[string]any)
	if cfg["model"] != "mnist-cnn" || cfg["dataset"] != "mnist-embedded" || cfg["steps"] != 2.0 || cfg["clip_mode"] != "smooth" {
		t.Fatalf("demo config %v", cfg)
	}
	if got.Result["fil"] != true || !(got.Result["mse_bound_rdp"].(float64) > 0) || !strings.Contains(got.Reading, "MSE = 1") {
		t.Fatalf("demo result %v / %q", got.Result["fil"], got.Reading)
	}
}

// TestTrainFlagValidation: flags whose value makes no sense are refused.
func TestTrainFlagValidation(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--checkpoint-every", "-1"}, "--checkpoint-every"},
		{[]string{"--fil-coords", "5000"}, "fil_exact"},
		{[]string{"--sigma", "1", "--target-epsilon", "2"}, "none of the others"},
		{[]string{"--accountant", "moments"}, "accountant"},
		{[]string{"--sampling", "bernoulli"}, "sampling"},
	} {
		args := append([]string{"train", "--model", "linear", "--steps", "2", "--batch", "10", "--train-subset", "50", "--quiet", "--out", t.TempDir()}, tc.args...)
		if _, err := runTrainCLI(t, args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one mentioning %q", tc.args, err, tc.want)
		}
	}
}

func TestDemoHuman(t *testing.T) {
	out, err := runTrainCLI(t, "demo", "--steps", "1", "--fil-coords", "1", "--quiet")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"test accuracy", "MSE lower bounds: RDP", "FIL worst sample", "perfect privacy",
		"κ (kappa)", "+Inf means no leakage", "docs/accounting.md", "median bound +Inf: more than half"} {
		if !strings.Contains(out, want) {
			t.Fatalf("demo output lacks %q:\n%s", want, out)
		}
	}
	// Issue 27: clean headlines — c is explained where it is shown, the paper's
	// add-remove value sits on its own labelled line.
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "c = 1.115") && !strings.Contains(l, "smooth clipping bounds a clipped gradient by c·C") {
			t.Errorf("c unexplained: %q", l)
		}
		if strings.HasPrefix(l, "Theorem 1 (RDP)") && (strings.Contains(l, "paper") || strings.Contains(l, "not a valid")) {
			t.Errorf("Theorem 1 headline carries the paper's value: %q", l)
		}
	}
	if !strings.Contains(out, "smooth clipping bounds a clipped gradient by c·C, c = 1.115") {
		t.Errorf("c not explained:\n%s", out)
	}
}

// The same bad input names the same flag in every run (cobra checks its flag groups
// in sorted order; eval and bench validate in a fixed order).
func TestTrainEvalBenchErrorsDeterministic(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"train", "--resume", dir, "--sigma", "2", "--lr", "1", "--batch", "3", "--arch", "x.yaml"},
		{"eval", "--run", dir, "--split", "val", "--repeat", "-1"},
		{"bench", "engine", "--batch", "0", "--coords", "0", "--seconds", "-1", "--fil-batch", "-1", "--model", "nope"},
	} {
		first := ""
		for i := 0; i < 20; i++ {
			_, _, err := execCLI(t, args...)
			if err == nil {
				t.Fatalf("%v: want an error", args)
			}
			if i == 0 {
				first = err.Error()
			} else if err.Error() != first {
				t.Fatalf("%v: run %d says %q, run 0 said %q", args, i, err, first)
			}
		}
	}
}

// Issue 27: an impossible --target-epsilon (0, negative, NaN, +Inf) is refused as
// 'account' refuses it, instead of training without noise.
func TestTrainTargetEpsilonImpossible(t *testing.T) {
	for _, v := range []string{"0", "-1", "NaN", "+Inf"} {
		dir := filepath.Join(t.TempDir(), "run")
		out, err := runTrainCLI(t, "train", "--model", "linear", "--dataset", "mnist-embedded", "--steps", "1", "--batch", "50",
			"--train-subset", "100", "--target-epsilon", v, "--quiet", "--out", dir)
		if err == nil || !strings.Contains(err.Error(), "--target-epsilon") || strings.Contains(out, "privacy") {
			t.Errorf("--target-epsilon %s: error %v, output %q", v, err, out)
		}
		if _, serr := os.Stat(filepath.Join(dir, "result.json")); serr == nil {
			t.Errorf("--target-epsilon %s: a run was written", v)
		}
	}
}

// TestTrainClipAlgo runs train with --clip-algo auto (FIL off) and checks that the
// result records it, and that the default run's configuration has no clip_algo key
// (so the hashes of existing configurations do not change).
func TestTrainClipAlgo(t *testing.T) {
	base := []string{"train", "--model", "mlp", "--steps", "2", "--batch", "20", "--train-subset", "100", "--fil-coords", "0", "--json", "--quiet"}
	for _, algo := range []string{"", "auto"} {
		args := append([]string(nil), base...)
		if algo != "" {
			args = append(args, "--clip-algo", algo)
		}
		args = append(args, "--out", filepath.Join(t.TempDir(), "r"))
		out, err := runTrainCLI(t, args...)
		if err != nil {
			t.Fatal(err)
		}
		var res map[string]any
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		got, has := res["config"].(map[string]any)["clip_algo"]
		if (algo == "" && has) || (algo != "" && got != algo) {
			t.Errorf("--clip-algo %q: config.clip_algo = %v (present %v)", algo, got, has)
		}
	}
	// The human summary names a non-default algorithm.
	out, err := runTrainCLI(t, "train", "--model", "linear", "--steps", "1", "--batch", "20", "--train-subset", "100", "--fil-coords", "0",
		"--clip-algo", "ghost", "--quiet", "--out", filepath.Join(t.TempDir(), "r"))
	if err != nil || !strings.Contains(out, "(smooth clipping, ghost norms)") {
		t.Fatalf("human summary with --clip-algo ghost: %v\n%s", err, out)
	}
}

// TestTrainConvAlgo trains an --arch model with a 3×3 stride-1 conv layer with
// --conv-algo winograd and direct, under per-sample clipping (FIL on: it keeps
// direct convolutions) and under --clip-algo auto (FIL off; the conv layer forms
// per-sample gradients, as Winograd), and checks that the result records the
// algorithm, that the default run's configuration has no conv_algo key, and that
// each pair reaches the same final loss to float32 rounding (and not
// bit-identically: Winograd ran).
func TestTrainConvAlgo(t *testing.T) {
	dir := t.TempDir()
	arch := filepath.Join(dir, "a.yaml")
	if err := os.WriteFile(arch, []byte("name: wino\nlayers:\n  - {kind: conv, out: 4, kernel: 3, padding: same}\n  - tanh\n  - {kind: avgpool, kernel: 2, stride: 2}\n  - flatten\n  - {kind: dense}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var losses []float64
	cases := []struct{ algo, clip string }{{"", ""}, {"winograd", ""}, {"winograd4", ""}, {"", "auto"}, {"winograd", "auto"}, {"winograd4", "auto"}}
	for _, tc := range cases {
		algo := tc.algo
		fil := "2"
		if tc.clip != "" {
			fil = "0"
		}
		args := []string{"train", "--arch", arch, "--steps", "2", "--batch", "10", "--train-subset", "50", "--fil-coords", fil, "--json", "--quiet",
			"--out", filepath.Join(t.TempDir(), "r")}
		if algo != "" {
			args = append(args, "--conv-algo", algo)
		}
		if tc.clip != "" {
			args = append(args, "--clip-algo", tc.clip)
		}
		out, err := runTrainCLI(t, args...)
		if err != nil {
			t.Fatal(err)
		}
		var res map[string]any
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		got, has := res["config"].(map[string]any)["conv_algo"]
		if (algo == "" && has) || (algo != "" && got != algo) {
			t.Errorf("--conv-algo %q: config.conv_algo = %v (present %v)", algo, got, has)
		}
		l, ok := res["train_loss"].(float64)
		if !ok {
			t.Fatalf("no train_loss in %s", out)
		}
		losses = append(losses, l)
	}
	for i, tc := range cases {
		base := i / 3 * 3 // the direct run of the same clip algorithm
		if i == base {
			continue
		}
		if a, b := losses[base], losses[i]; math.Abs(a-b) > 1e-4*(1+math.Abs(a)) || a == b {
			t.Errorf("clip algorithm %q: final train loss %v direct, %v %s: want equal to float32 rounding, not bit-identical", tc.clip, a, b, tc.algo)
		}
	}
}

// TestTrainContinue reruns one command line with --continue: into an empty
// directory it starts the run, into one holding that configuration's checkpoint it
// continues to the uninterrupted run's result (parameters byte for byte), into a
// finished run it prints that result; another configuration's run is refused, and
// --continue with --resume too.
func TestTrainContinue(t *testing.T) {
	args := func(out string, extra ...string) []string {
		a := []string{"train", "--model", "linear", "--steps", "6", "--batch", "50", "--train-subset", "300",
			"--fil-coords", "3", "--sigma", "1.2", "--seed", "5", "--json", "--continue", "--out", out}
		return append(a, extra...)
	}
	tmp := t.TempDir()
	ref, killed := filepath.Join(tmp, "ref"), filepath.Join(tmp, "killed")
	want, err := runTrainCLI(t, args(ref)...) // an empty directory: starts
	if err != nil {
		t.Fatal(err)
	}
	// Interrupt the same configuration after its third step.
	cfg, err := train.LoadRunConfig(ref)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err = train.Run(ctx, cfg, train.Options{Out: killed, CheckpointEvery: 1, Progress: func(e train.Event) {
		if e.Step == 3 {
			cancel()
		}
	}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: %v", err)
	}
	if _, err := os.Stat(filepath.Join(killed, "checkpoint.bin")); err != nil {
		t.Fatalf("no checkpoint: %v", err)
	}
	field := func(out string) (float64, float64, float64) {
		t.Helper()
		var r struct {
			Acc  float64 `json:"test_accuracy"`
			Eps  float64 `json:"epsilon"`
			DFIL float64 `json:"dfil_max"`
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, out)
		}
		return r.Acc, r.Eps, r.DFIL
	}
	wa, we, wd := field(want)
	for _, pass := range []struct{ name, log string }{{"continued", "resuming " + killed}, {"finished", "already finished"}} {
		got, stderr, err := execCLI(t, args(killed)...)
		if err != nil {
			t.Fatalf("%s: %v", pass.name, err)
		}
		if !strings.Contains(stderr, pass.log) {
			t.Fatalf("%s: the log lacks %q:\n%s", pass.name, pass.log, stderr)
		}
		if a, e, d := field(got); a != wa || e != we || d != wd {
			t.Fatalf("%s: accuracy, ε, dFIL max %v %v %v, uninterrupted %v %v %v", pass.name, a, e, d, wa, we, wd)
		}
		p1, err1 := os.ReadFile(filepath.Join(ref, "params.npy"))
		p2, err2 := os.ReadFile(filepath.Join(killed, "params.npy"))
		if err1 != nil || err2 != nil || string(p1) != string(p2) {
			t.Fatalf("%s: parameters differ from the uninterrupted run's (%v, %v)", pass.name, err1, err2)
		}
	}
	if _, err := runTrainCLI(t, args(killed, "--sigma", "1.3")...); err == nil || !strings.Contains(err.Error(), "different config") {
		t.Fatalf("--continue into another configuration's run: %v", err)
	}
	if _, err := runTrainCLI(t, "train", "--continue", "--resume", killed); err == nil || !strings.Contains(err.Error(), "[continue resume]") && !strings.Contains(err.Error(), "[resume continue]") {
		t.Fatalf("--continue with --resume: %v", err)
	}
}
