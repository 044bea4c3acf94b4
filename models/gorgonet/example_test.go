package gorgonet_test

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/dpfil/dpfil/models"
	"github.com/dpfil/dpfil/models/gorgonet"
	"github.com/dpfil/dpfil/train"
)

// Define a network in Gorgonia, check it against Gorgonia's own per-sample
// gradients, and train it privately (DP-SGD) with FIL accounting on the embedded
// MNIST for a few steps: ε from the privacy accountant, dFIL and its MSE bounds
// from the engine's second-order passes (which Gorgonia cannot compute correctly).
//
// README.md shows trainSmallCNN, its imports and this output as a complete program
// (package main, log.Fatal on error); TestREADMELibrarySnippet keeps them equal.
func Example() {
	if err := trainSmallCNN(os.Stdout); err != nil {
		fmt.Println(err)
	}
	// Output:
	// mnist-small: 7 layers, 13114 parameters, Gorgonia graph with 125 nodes; engine = Gorgonia: true
	// ε = 7.2 at δ = 1e-05 (pld accountant, poisson sampling)
	// dFIL max 0.036, median 0.0083 → MSE ≥ 28 (worst sample), 1.2e+02 (median sample)
	// recorded: model mnist-small, arch hash 3116f92cd063ea41
}

// trainSmallCNN builds a small CNN in Gorgonia, checks the engine against it and
// trains it privately on 200 embedded MNIST digits, writing what it got to w.
func trainSmallCNN(w io.Writer) error {
	b := gorgonet.New("mnist-small", models.Shape{C: 1, H: 28, W: 28}, 10)
	h := b.Conv(b.Input(), 8, 5, 2, gorgonet.Same) // a real *gorgonia.Node
	h = b.AvgPool(b.Tanh(h), 2, 2)
	h = b.ReLU(b.Dense(b.Flatten(h), 32))
	net, err := b.Build(b.Dense(h, 10)) // checks the engine against Gorgonia in float64
	if err != nil {
		return fmt.Errorf("build the network: %w", err)
	}
	fmt.Fprintf(w, "%s: %d layers, %d parameters, Gorgonia graph with %d nodes; engine = Gorgonia: %v\n",
		net.Arch.Name, len(net.Arch.Layers), net.Arch.NumParams(), len(net.Graph.ExprGraph().AllNodes()), net.Check.GradRelErr < 1e-9)

	cfg := train.DefaultConfig().WithArch(net.Spec())
	cfg.TrainSubset, cfg.Steps, cfg.Batch, cfg.Sigma, cfg.FILCoords = 200, 10, 50, 1, 10
	res, err := train.Run(context.Background(), cfg, train.Options{})
	if err != nil {
		return fmt.Errorf("train: %w", err)
	}
	fmt.Fprintf(w, "ε = %.3g at δ = %g (%s accountant, %s sampling)\n", res.Epsilon, res.Config.Delta, res.Privacy.Accountant, res.Sampling)
	fmt.Fprintf(w, "dFIL max %.2g, median %.2g → MSE ≥ %.2g (worst sample), %.2g (median sample)\n",
		res.DFILMax, res.DFILMedian, res.MSEBoundFILMax, res.MSEBoundFILMedian)
	fmt.Fprintf(w, "recorded: model %s, arch hash %s\n", res.Config.Model, res.ArchHash)
	return nil
}
