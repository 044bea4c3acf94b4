package gorgonet_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/dpfil/dpfil/accounting"
	"github.com/dpfil/dpfil/data"
	"github.com/dpfil/dpfil/models"
	"github.com/dpfil/dpfil/models/gorgonet"
	"github.com/dpfil/dpfil/train"
)

// sigmoidMLP is a one-sample Gorgonia graph of a 784→h→10 MLP with sigmoid hidden
// units (an op the engine lacks): z = sigmoid(x·W1 + b1)·W2 + b2; with pow, the
// hidden units are squared by Pow (an op without a forward-over-reverse rule).
func sigmoidMLP(t testing.TB, h int, pow ...bool) gorgonet.GraphSpec {
	t.Helper()
	g := G.NewGraph()
	x := G.NewMatrix(g, tensor.Float32, G.WithShape(1, 784), G.WithName("x"))
	y := G.NewMatrix(g, tensor.Float32, G.WithShape(1, 10), G.WithName("y"))
	w1 := G.NewMatrix(g, tensor.Float32, G.WithShape(784, h), G.WithName("W1"))
	b1 := G.NewMatrix(g, tensor.Float32, G.WithShape(1, h), G.WithName("b1"))
	w2 := G.NewMatrix(g, tensor.Float32, G.WithShape(h, 10), G.WithName("W2"))
	b2 := G.NewMatrix(g, tensor.Float32, G.WithShape(1, 10), G.WithName("b2"))
	a := G.Must(G.Sigmoid(G.Must(G.Add(G.Must(G.Mul(x, w1)), b1))))
	if len(pow) > 0 && pow[0] {
		a = G.Must(G.Pow(a, g.AddNode(G.NewConstant(float32(2), G.WithName("two")))))
	}
	z := G.Must(G.Add(G.Must(G.Mul(a, w2)), b2))
	loss, err := gorgonet.CrossEntropy(z, y)
	if err != nil {
		t.Fatal(err)
	}
	return gorgonet.GraphSpec{Name: "sigmoid-mlp", Graph: g, Input: x, InputShape: models.Shape{C: 1, H: 28, W: 28},
		Label: y, Classes: 10, Logits: z, Loss: loss, Params: []*G.Node{w1, b1, w2, b2}}
}

// graphRunConfig is a small private run on the embedded MNIST: T = 120 steps of
// Poisson batches of expected size 64 from 2 000 samples, σ = 1, C = 1, FIL off.
func graphRunConfig() train.Config {
	cfg := train.DefaultConfig()
	cfg.TrainSubset, cfg.Steps, cfg.Batch, cfg.LR, cfg.Momentum = 2000, 120, 64, 0.5, 0.9
	cfg.Sigma, cfg.Clip, cfg.FILCoords = 1, 1, 0
	return cfg
}

// TestGraphModelTrainsPrivately: the sigmoid MLP, given as a Gorgonia graph, trains
// with DP-SGD through train.Run on the embedded MNIST well above chance; its privacy
// report is the accountant's for its ledger and equals an engine model's run with
// the same (q, σ, T, sampling, adjacency); the result names the graph and holds no
// FIL numbers; and asking for FIL of a graph with an op without a tangent rule
// (Pow) fails before training with ErrNoSecondOrder, writing no result files.
func TestGraphModelTrainsPrivately(t *testing.T) {
	split, err := data.Load("mnist-embedded", data.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := gorgonet.FromGraph(sigmoidMLP(t, 16))
	if err != nil {
		t.Fatal(err)
	}
	cfg := graphRunConfig().WithModel(m)

	pm, err := gorgonet.FromGraph(sigmoidMLP(t, 16, true))
	if err != nil {
		t.Fatal(err)
	}
	fcfg := graphRunConfig().WithModel(pm)
	fcfg.FILCoords = 50
	fdir := filepath.Join(t.TempDir(), "fil")
	if _, err := train.Run(context.Background(), fcfg, train.Options{Model: pm, Data: split, Out: fdir}); !errors.Is(err, gorgonet.ErrNoSecondOrder) {
		t.Fatalf("FIL requested: err = %v, want ErrNoSecondOrder", err)
	}
	for _, f := range []string{train.ResultFile, train.DFILFile, train.ParamsFile, train.ParamsNPZFile, train.CheckpointFile} {
		if _, err := os.Stat(filepath.Join(fdir, f)); err == nil {
			t.Errorf("the refused FIL run wrote %s", f)
		}
	}

	dir := filepath.Join(t.TempDir(), "run")
	res, err := train.Run(context.Background(), cfg, train.Options{Model: m, Data: split, Out: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: test accuracy %.3f, ε = %.3g (%s), %.1f s", res.Config.Model, res.TestAccuracy, res.Epsilon, res.Privacy.Accountant, res.WallSeconds)
	if !(res.TestAccuracy > 0.6) {
		t.Errorf("test accuracy %.3f, want well above chance (0.1)", res.TestAccuracy)
	}
	if res.Config.Model != m.Arch().Name || res.Arch.Name != m.Arch().Name || res.FIL || res.DFILPath != "" {
		t.Errorf("result: model %q, arch %q, fil %v %q", res.Config.Model, res.Arch.Name, res.FIL, res.DFILPath)
	}
	if res.Privacy == nil || res.Privacy.EpsilonRDP == nil || res.Privacy.EpsilonPLD == nil || !(res.Epsilon > 0 && res.Epsilon < 100) {
		t.Fatalf("privacy report %+v", res.Privacy)
	}
	want, err := accounting.NewReport(res.Repeats[0].Ledger, accounting.ReportOptions{Delta: cfg.Delta, Accountant: cfg.Accountant,
		FILDelta: res.FILDelta, ClipConstant: res.ClipConstant})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(res.Privacy)
	if w, _ := json.Marshal(want); string(got) != string(w) {
		t.Errorf("privacy report\n%s\nis not the accountant's for the ledger\n%s", got, w)
	}
	// An engine model with the same q, σ, T, sampling and adjacency: the same report.
	ecfg := graphRunConfig()
	ecfg.Model, ecfg.Steps = "linear", cfg.Steps
	eres, err := train.Run(context.Background(), ecfg, train.Options{Data: split})
	if err != nil {
		t.Fatal(err)
	}
	if e, _ := json.Marshal(eres.Privacy); string(got) != string(e) {
		t.Errorf("graph run's privacy report\n%s\ndiffers from the engine run's\n%s", got, e)
	}
}
