// Command gorgonia-fil is a template for a model written in plain Gorgonia and
// trained with dpfil's library: DP-SGD with per-sample FIL, from a Go program of
// your own (`go run ./examples/gorgonia-fil --steps 50 --out run1`). The network —
// conv → sigmoid → a residual conv block → max-pool → dense — uses ops dpfil's
// engine does not have; gorgonet.FromGraph gives it exact per-sample gradients and
// FIL by its own forward-over-reverse rules (docs/architecture.md has the table of
// covered ops). It prints one JSON object: the model's name (with the graph's
// fingerprint), ε, and the dFIL summary.
//
// The dpfil CLI cannot load such a model by itself (a Gorgonia graph is Go code, not
// a file): rebuild the graph from the same code to evaluate a saved run (see
// gorgonet's ExampleFromGraph_reload).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"

	G "gorgonia.org/gorgonia"

	"github.com/dpfil/dpfil/data"
	"github.com/dpfil/dpfil/models"
	"github.com/dpfil/dpfil/models/gorgonet"
	"github.com/dpfil/dpfil/train"
)

// network builds the one-sample graph (28×28 gray digits, 10 classes).
func network(ch int) (gorgonet.GraphSpec, error) {
	g := G.NewGraph()
	x := G.NewTensor(g, G.Float32, 4, G.WithShape(1, 1, 28, 28), G.WithName("x"))
	y := G.NewMatrix(g, G.Float32, G.WithShape(1, 10), G.WithName("y"))
	w1 := G.NewTensor(g, G.Float32, 4, G.WithShape(ch, 1, 3, 3), G.WithName("conv1.W"))
	b1 := G.NewTensor(g, G.Float32, 4, G.WithShape(1, ch, 1, 1), G.WithName("conv1.b"))
	w2 := G.NewTensor(g, G.Float32, 4, G.WithShape(ch, ch, 3, 3), G.WithName("conv2.W"))
	w3 := G.NewMatrix(g, G.Float32, G.WithShape(ch*14*14, 10), G.WithName("dense.W"))
	b3 := G.NewMatrix(g, G.Float32, G.WithShape(1, 10), G.WithName("dense.b"))
	var err error
	must := func(n *G.Node, e error) *G.Node {
		if err == nil {
			err = e
		}
		return n
	}
	conv := func(h, w *G.Node) *G.Node { // 3×3, stride 1, padding 1
		return must(G.Conv2d(h, w, []int{3, 3}, []int{1, 1}, []int{1, 1}, []int{1, 1}))
	}
	a := must(G.Sigmoid(must(G.BroadcastAdd(conv(x, w1), b1, nil, []byte{0, 2, 3}))))
	if err != nil {
		return gorgonet.GraphSpec{}, err
	}
	r := must(G.Add(a, must(G.Tanh(conv(a, w2))))) // residual connection
	if err != nil {
		return gorgonet.GraphSpec{}, err
	}
	p := must(G.MaxPool2D(r, []int{2, 2}, []int{0, 0}, []int{2, 2}))
	if err != nil {
		return gorgonet.GraphSpec{}, err
	}
	z := must(G.Add(must(G.Mul(must(G.Reshape(p, []int{1, ch * 14 * 14})), w3)), b3))
	if err != nil {
		return gorgonet.GraphSpec{}, err
	}
	loss, err := gorgonet.CrossEntropy(z, y)
	if err != nil {
		return gorgonet.GraphSpec{}, err
	}
	return gorgonet.GraphSpec{Name: "residual-sigmoid", Graph: g, Input: x, InputShape: models.Shape{C: 1, H: 28, W: 28},
		Label: y, Classes: 10, Logits: z, Loss: loss, Params: []*G.Node{w1, b1, w2, w3, b3}}, nil
}

// summary is what the command prints.
type summary struct {
	Model        string  `json:"model"`
	Steps        int     `json:"steps"`
	TestAccuracy float64 `json:"test_accuracy"`
	Epsilon      float64 `json:"epsilon"`
	Delta        float64 `json:"delta"`
	Accountant   string  `json:"accountant"`
	Sampling     string  `json:"sampling"`
	Adjacency    string  `json:"adjacency"`
	FILCoords    int     `json:"fil_coords"`
	DFILMax      float64 `json:"dfil_max"`
	DFILMedian   float64 `json:"dfil_median"`
	Out          string  `json:"out,omitempty"`
}

// run trains the network and returns the summary.
func run(args []string) (*summary, error) {
	fs := flag.NewFlagSet("gorgonia-fil", flag.ContinueOnError)
	steps := fs.Int("steps", 100, "DP-SGD steps")
	subset := fs.Int("train-subset", 1000, "training samples of the embedded MNIST used")
	coords := fs.Int("fil-coords", 20, "FIL coordinates per sample and step")
	channels := fs.Int("channels", 4, "convolution channels")
	out := fs.String("out", "", "run directory (result.json, dfil.npy, params); empty: write nothing")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	spec, err := network(*channels)
	if err != nil {
		return nil, fmt.Errorf("building the graph: %w", err)
	}
	m, err := gorgonet.FromGraph(spec)
	if err != nil {
		return nil, err
	}
	split, err := data.Load("mnist-embedded", data.Options{})
	if err != nil {
		return nil, err
	}
	cfg := train.DefaultConfig().WithModel(m)
	cfg.TrainSubset, cfg.Steps, cfg.Batch, cfg.LR, cfg.Sigma, cfg.FILCoords = *subset, *steps, 50, 0.3, 1, *coords
	res, err := train.Run(context.Background(), cfg, train.Options{Model: m, Data: split, Out: *out})
	if err != nil {
		return nil, err
	}
	return &summary{Model: res.Config.Model, Steps: cfg.Steps, TestAccuracy: res.TestAccuracy, Epsilon: res.Epsilon,
		Delta: res.Config.Delta, Accountant: res.Privacy.Accountant, Sampling: res.Sampling, Adjacency: res.Privacy.Adjacency,
		FILCoords: cfg.FILCoords, DFILMax: res.DFILMax, DFILMedian: res.DFILMedian, Out: *out}, nil
}

func main() {
	s, err := run(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "gorgonia-fil:", err)
		os.Exit(1)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(s); err != nil {
		fmt.Fprintln(os.Stderr, "gorgonia-fil:", err)
		os.Exit(1)
	}
}
