package gorgonet_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	G "gorgonia.org/gorgonia"

	"github.com/dpfil/dpfil/data"
	"github.com/dpfil/dpfil/models"
	"github.com/dpfil/dpfil/models/gorgonet"
	"github.com/dpfil/dpfil/train"
)

// residualNet is a user's network written in Gorgonia: conv → sigmoid → a residual
// conv block → 2×2 max-pool → dense, on 28×28 MNIST digits. The same code builds the
// same graph, and so the same architecture name (its fingerprint), every time.
func residualNet() (gorgonet.GraphSpec, error) {
	g := G.NewGraph()
	x := G.NewTensor(g, G.Float32, 4, G.WithShape(1, 1, 28, 28), G.WithName("x"))
	y := G.NewMatrix(g, G.Float32, G.WithShape(1, 10), G.WithName("y"))
	w1 := G.NewTensor(g, G.Float32, 4, G.WithShape(4, 1, 3, 3), G.WithName("conv1.W"))
	b1 := G.NewTensor(g, G.Float32, 4, G.WithShape(1, 4, 1, 1), G.WithName("conv1.b"))
	w2 := G.NewTensor(g, G.Float32, 4, G.WithShape(4, 4, 3, 3), G.WithName("conv2.W"))
	w3 := G.NewMatrix(g, G.Float32, G.WithShape(4*14*14, 10), G.WithName("dense.W"))
	b3 := G.NewMatrix(g, G.Float32, G.WithShape(1, 10), G.WithName("dense.b"))
	conv := func(h, w *G.Node) *G.Node { // 3×3, stride 1, padding 1: the shape is kept
		return G.Must(G.Conv2d(h, w, []int{3, 3}, []int{1, 1}, []int{1, 1}, []int{1, 1}))
	}
	a := G.Must(G.Sigmoid(G.Must(G.BroadcastAdd(conv(x, w1), b1, nil, []byte{0, 2, 3}))))
	r := G.Must(G.Add(a, G.Must(G.Tanh(conv(a, w2))))) // the residual connection
	p := G.Must(G.MaxPool2D(r, []int{2, 2}, []int{0, 0}, []int{2, 2}))
	z := G.Must(G.Add(G.Must(G.Mul(G.Must(G.Reshape(p, []int{1, 4 * 14 * 14})), w3)), b3))
	loss, err := gorgonet.CrossEntropy(z, y)
	if err != nil {
		return gorgonet.GraphSpec{}, err
	}
	return gorgonet.GraphSpec{Name: "residual-sigmoid", Graph: g, Input: x, InputShape: models.Shape{C: 1, H: 28, W: 28},
		Label: y, Classes: 10, Logits: z, Loss: loss, Params: []*G.Node{w1, b1, w2, w3, b3}}, nil
}

// Train a Gorgonia-defined network (sigmoid, a residual connection, max-pool) with
// DP-SGD and per-sample FIL into a run directory, then reload the run: rebuild the
// graph from the same code (its architecture name, with the graph's fingerprint,
// must match the run's), read the final parameters and evaluate them, reproducing
// the reported test accuracy exactly. Gorgonia v0.9.18 cannot serialise a graph's
// ops, so a run stores the name and the parameters, and the graph is rebuilt from
// its Go code.
func ExampleFromGraph_reload() {
	split, err := data.Load("mnist-embedded", data.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	spec, err := residualNet()
	if err != nil {
		fmt.Println(err)
		return
	}
	m, err := gorgonet.FromGraph(spec)
	if err != nil {
		fmt.Println(err)
		return
	}
	dir, err := os.MkdirTemp("", "graph-run")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	cfg := train.DefaultConfig().WithModel(m)
	cfg.TrainSubset, cfg.Steps, cfg.Batch, cfg.LR, cfg.Sigma, cfg.FILCoords = 300, 10, 30, 0.3, 1, 5
	res, err := train.Run(context.Background(), cfg, train.Options{Model: m, Data: split, Out: dir})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("trained %s with FIL: %v, dFIL of %d samples, worst > 0: %v\n", res.Config.Model, res.FIL, len(res.DFIL), res.DFILMax > 0)

	// Reload: the same code gives the same graph and name.
	again, err := residualNet()
	if err != nil {
		fmt.Println(err)
		return
	}
	m2, err := gorgonet.FromGraph(again)
	if err != nil {
		fmt.Println(err)
		return
	}
	saved, err := train.ReadResult(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	params, err := train.LoadParams(filepath.Join(dir, train.ParamsFile))
	if err != nil {
		fmt.Println(err)
		return
	}
	ev, err := train.Evaluate(m2, params, split.Test)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("same model:", saved.Config.Model == m2.Arch().Name)
	fmt.Println("test accuracy reproduced:", ev.Accuracy == saved.TestAccuracy)
	// Output:
	// trained gorgonia-graph:residual-sigmoid@09a78ecbcc39 with FIL: true, dFIL of 300 samples, worst > 0: true
	// same model: true
	// test accuracy reproduced: true
}
