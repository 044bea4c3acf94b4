package gorgonet_test

import (
	"context"
	"fmt"

	G "gorgonia.org/gorgonia"

	"github.com/dpfil/dpfil/models"
	"github.com/dpfil/dpfil/models/gorgonet"
	"github.com/dpfil/dpfil/train"
)

// Define a network in plain Gorgonia with an op the engine lacks (softplus), train it
// privately (DP-SGD) on the embedded MNIST, and read its ε and its per-sample FIL
// (dFIL). The per-sample clipped gradients and the second-order derivatives FIL
// needs come from gorgonet's own forward-over-reverse rules for the graph's ops
// (Gorgonia v0.9.18's Grad of a Grad is wrong and is not used).
func ExampleFromGraph() {
	g := G.NewGraph()
	x := G.NewMatrix(g, G.Float32, G.WithShape(1, 784), G.WithName("x")) // one sample
	y := G.NewMatrix(g, G.Float32, G.WithShape(1, 10), G.WithName("y"))  // its one-hot label
	w1 := G.NewMatrix(g, G.Float32, G.WithShape(784, 16), G.WithName("W1"))
	b1 := G.NewMatrix(g, G.Float32, G.WithShape(1, 16), G.WithName("b1"))
	w2 := G.NewMatrix(g, G.Float32, G.WithShape(16, 10), G.WithName("W2"))
	b2 := G.NewMatrix(g, G.Float32, G.WithShape(1, 10), G.WithName("b2"))
	h := G.Must(G.Softplus(G.Must(G.Add(G.Must(G.Mul(x, w1)), b1))))
	z := G.Must(G.Add(G.Must(G.Mul(h, w2)), b2))
	loss, err := gorgonet.CrossEntropy(z, y)
	if err != nil {
		fmt.Println(err)
		return
	}
	m, err := gorgonet.FromGraph(gorgonet.GraphSpec{Name: "softplus-mlp", Graph: g,
		Input: x, InputShape: models.Shape{C: 1, H: 28, W: 28}, Label: y, Classes: 10,
		Logits: z, Loss: loss, Params: []*G.Node{w1, b1, w2, b2}})
	if err != nil {
		fmt.Println(err)
		return
	}

	fmt.Println("second-order passes:", m.SecondOrderErr() == nil)

	cfg := train.DefaultConfig().WithModel(m) // FIL on by default (fil_coords 50)
	cfg.TrainSubset, cfg.Steps, cfg.Batch, cfg.LR, cfg.Momentum, cfg.Sigma = 1000, 100, 50, 0.3, 0.9, 1
	res, err := train.Run(context.Background(), cfg, train.Options{Model: m})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s: %d parameters, test accuracy > 0.3 (chance 0.1): %v, FIL accounted: %v, dFIL per sample: %d, max > 0: %v\n",
		res.Config.Model, res.NumParams, res.TestAccuracy > 0.3, res.FIL, len(res.DFIL), res.DFILMax > 0)
	fmt.Printf("ε = %.3g at δ = %g (%s accountant, %s sampling, %s; RDP gives %.3g)\n",
		res.Epsilon, res.Config.Delta, res.Privacy.Accountant, res.Sampling, res.Privacy.Adjacency, *res.Privacy.EpsilonRDP)
	// Output:
	// second-order passes: true
	// gorgonia-graph:softplus-mlp@051fcc7afd01: 12730 parameters, test accuracy > 0.3 (chance 0.1): true, FIL accounted: true, dFIL per sample: 1000, max > 0: true
	// ε = 4.43 at δ = 1e-05 (pld accountant, poisson sampling, add-remove; RDP gives 5.13)
}
