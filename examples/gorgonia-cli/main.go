// Command gorgonia-cli is the dpfil command line plus a model of your own written in
// Gorgonia: conv → sigmoid → a residual conv block → 2×2 max-pool → dense, on 28×28
// gray digits, registered as "my-graph". Every dpfil command works, and train, eval,
// predict and sweep grids take --model my-graph (model: my-graph) as they take a
// built-in architecture:
//
//	go run ./examples/gorgonia-cli train --model my-graph --fil-coords 4 --steps 50 --out runs/g
//	go run ./examples/gorgonia-cli eval --run runs/g
//
// A Gorgonia graph is Go code, not a file: a run records the model's name with the
// graph's fingerprint (gorgonia-graph:my-graph@…), and eval and predict rebuild the
// graph from this code. The dpfil binary itself, or a program whose graph changed,
// refuses such a run and names the model it was trained with.
package main

import (
	G "gorgonia.org/gorgonia"

	"github.com/dpfil/dpfil/cli"
	"github.com/dpfil/dpfil/models"
	"github.com/dpfil/dpfil/models/gorgonet"
	"github.com/dpfil/dpfil/train"
)

// myGraph builds the model from its one-sample Gorgonia graph. The same code builds
// the same graph, and so the same name and fingerprint, every time.
func myGraph() (models.Model, error) {
	const ch = 4 // convolution channels
	g := G.NewGraph()
	x := G.NewTensor(g, G.Float32, 4, G.WithShape(1, 1, 28, 28), G.WithName("x"))
	y := G.NewMatrix(g, G.Float32, G.WithShape(1, 10), G.WithName("y"))
	w1 := G.NewTensor(g, G.Float32, 4, G.WithShape(ch, 1, 3, 3), G.WithName("conv1.W"))
	b1 := G.NewTensor(g, G.Float32, 4, G.WithShape(1, ch, 1, 1), G.WithName("conv1.b"))
	w2 := G.NewTensor(g, G.Float32, 4, G.WithShape(ch, ch, 3, 3), G.WithName("conv2.W"))
	w3 := G.NewMatrix(g, G.Float32, G.WithShape(ch*14*14, 10), G.WithName("dense.W"))
	b3 := G.NewMatrix(g, G.Float32, G.WithShape(1, 10), G.WithName("dense.b"))
	var err error
	must := func(n *G.Node, e error) *G.Node { // keeps the first error
		if err == nil {
			err = e
		}
		return n
	}
	conv := func(h, w *G.Node) *G.Node { // 3×3, stride 1, padding 1: the shape is kept
		if err != nil {
			return nil
		}
		return must(G.Conv2d(h, w, []int{3, 3}, []int{1, 1}, []int{1, 1}, []int{1, 1}))
	}
	a := must(G.Sigmoid(must(G.BroadcastAdd(conv(x, w1), b1, nil, []byte{0, 2, 3}))))
	if err != nil {
		return nil, err
	}
	r := must(G.Add(a, must(G.Tanh(conv(a, w2))))) // the residual connection
	if err != nil {
		return nil, err
	}
	p := must(G.MaxPool2D(r, []int{2, 2}, []int{0, 0}, []int{2, 2}))
	if err != nil {
		return nil, err
	}
	z := must(G.Add(must(G.Mul(must(G.Reshape(p, []int{1, ch * 14 * 14})), w3)), b3))
	if err != nil {
		return nil, err
	}
	loss, err := gorgonet.CrossEntropy(z, y)
	if err != nil {
		return nil, err
	}
	m, err := gorgonet.FromGraph(gorgonet.GraphSpec{Name: "my-graph", Graph: g, Input: x,
		InputShape: models.Shape{C: 1, H: 28, W: 28}, Label: y, Classes: 10, Logits: z, Loss: loss,
		Params: []*G.Node{w1, b1, w2, w3, b3}})
	if err != nil {
		return nil, err
	}
	return m, nil
}

func main() {
	cli.Main(cli.Options{Models: train.Registry{"my-graph": myGraph}})
}
