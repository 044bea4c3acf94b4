package train_test

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dpfil/dpfil/data"
	"github.com/dpfil/dpfil/internal/npy"
	"github.com/dpfil/dpfil/models"
	"github.com/dpfil/dpfil/train"
)

// TestEvaluateRunAndPredict trains a small run, evaluates it (which must reproduce
// the run's test accuracy exactly) and classifies its test set with Predict, whose
// argmax predictions must count the same number of correct answers.
func TestEvaluateRunAndPredict(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	cfg := train.DefaultConfig()
	cfg.Model, cfg.TrainSubset, cfg.Batch, cfg.Steps, cfg.FILCoords, cfg.Seed = "linear", 300, 50, 6, 0, 2
	res, err := train.Run(context.Background(), cfg, train.Options{Out: dir})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := train.EvaluateRun(train.EvalRequest{Run: dir})
	if err != nil {
		t.Fatal(err)
	}
	if ev.Reproduced == nil || !*ev.Reproduced || ev.Eval.Accuracy != res.TestAccuracy || ev.Dataset != cfg.Dataset || ev.Split != "test" || ev.Model != "linear" {
		t.Fatalf("eval %+v, run accuracy %v", ev, res.TestAccuracy)
	}
	tr, err := train.EvaluateRun(train.EvalRequest{Run: dir, Split: "train"})
	if err != nil || tr.Reported != nil || tr.Split != "train" {
		t.Fatalf("train split: %v, %+v", err, tr)
	}

	split, err := data.Load(cfg.Dataset, data.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ts := split.Test
	b, err := npy.EncodeFloat32([]int{ts.N, ts.C, ts.H, ts.W}, ts.Images)
	if err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(t.TempDir(), "test.npy")
	if err := os.WriteFile(in, b, 0o644); err != nil {
		t.Fatal(err)
	}
	pr, err := train.Predict(train.PredictRequest{Run: dir, Files: []string{in}})
	if err != nil {
		t.Fatal(err)
	}
	if len(pr.Predictions) != ts.N {
		t.Fatalf("%d predictions for %d inputs", len(pr.Predictions), ts.N)
	}
	correct := 0
	for i, p := range pr.Predictions {
		sum := 0.0
		for _, v := range p.Probs {
			sum += v
		}
		top := p.Top(3)
		if math.Abs(sum-1) > 1e-12 || p.Index != i || p.Prob != p.Probs[p.Class] || top[0] != p.Class || p.Probs[top[1]] < p.Probs[top[2]] || p.Probs[top[0]] < p.Probs[top[1]] {
			t.Fatalf("prediction %d: %+v (top %v)", i, p, top)
		}
		if p.Class == ts.Labels[i] {
			correct++
		}
	}
	if acc := float64(correct) / float64(ts.N); math.Abs(acc-ev.Eval.Accuracy) > 0.5/float64(ts.N) {
		t.Errorf("Predict's accuracy %v, Evaluate's %v", acc, ev.Eval.Accuracy)
	}
	if w := pr.Predictions[3].Where(); w != in+"[3]" {
		t.Errorf("Where = %q", w)
	}
}

func TestEvalPredictErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope")
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"eval no run", second(train.EvaluateRun(train.EvalRequest{})), "no run directory"},
		{"eval bad split", second(train.EvaluateRun(train.EvalRequest{Run: missing, Split: "val"})), `split "val"`},
		{"eval missing run", second(train.EvaluateRun(train.EvalRequest{Run: missing})), "nope"},
		{"predict no run", second(train.Predict(train.PredictRequest{})), "no run directory"},
		{"predict missing run", second(train.Predict(train.PredictRequest{Run: missing})), "nope"},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", tc.name, tc.err, tc.want)
		}
	}
}

func second[T any](_ T, err error) error { return err }

func TestResolveArchAndPrepareConfig(t *testing.T) {
	cfg := train.DefaultConfig()
	cfg.Model = "mlp"
	a, err := train.ResolveArch(cfg, "", nil)
	if err != nil || a.Name != "mlp" {
		t.Fatalf("built-in: %v, %v", a.Name, err)
	}
	spec := filepath.Join(t.TempDir(), "tiny.yaml")
	if err := os.WriteFile(spec, []byte("name: tiny\nlayers:\n  - flatten\n  - {kind: dense}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// No input shape or classes in the file: the dataset's (MNIST: 1x28x28, 10).
	a, err = train.ResolveArch(cfg, spec, nil)
	if err != nil || a.Name != "tiny" || a.Input != (models.Shape{C: 1, H: 28, W: 28}) || a.Classes != 10 || a.NumParams() != 7850 {
		t.Fatalf("from file: %+v, %v", a, err)
	}
	c2, err := train.PrepareConfig(cfg, spec, nil)
	if err != nil || c2.Model != "tiny" || c2.Arch == nil || c2.DataSHA256 != "" {
		t.Fatalf("prepared %+v, %v", c2, err)
	}
	if _, err := train.ResolveArch(cfg, filepath.Join(t.TempDir(), "nope.yaml"), nil); err == nil {
		t.Error("missing architecture file: no error")
	}
}

func TestDescribeBinary(t *testing.T) {
	b := train.DescribeBinary()
	v := train.Version()
	if b.GoVersion == "" || b.OS == "" || b.Arch == "" || b.Commit != v.Revision || b.Version == "" ||
		slices.Contains([]string{"(devel)", "unknown"}, b.Version) {
		t.Errorf("binary %+v, version %+v", b, v)
	}
}
