package gorgonet

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/dpfil/dpfil/models"
	"github.com/dpfil/dpfil/models/oracle"
)

// ArchGraph returns an engine architecture as a one-sample Gorgonia graph spec
// (float64; each layer from its kind's registered nodes in models/oracle, loss
// CrossEntropy), ready for FromGraph, and ToGraph, which maps the engine's flat
// parameter vector to the graph's: the graph holds a dense layer's weight
// transposed, (In, Out), so that it multiplies without a Transpose op. FIL does not
// depend on the layout (norms and dot products over all parameters), so the engine's
// and the graph's FILSqNorms agree on mapped parameters.
func ArchGraph(arch models.Arch) (spec GraphSpec, toGraph func(engine []float64) []float64, err error) {
	pts, err := arch.Params()
	if err != nil {
		return GraphSpec{}, nil, fmt.Errorf("gorgonet: %w", err)
	}
	gr, err := oracle.NewGraph(arch.Name, arch.Input, arch.Classes, 1)
	if err != nil {
		return GraphSpec{}, nil, fmt.Errorf("gorgonet: %w", err)
	}
	h := gr.Input()
	for _, l := range arch.Layers {
		if h, err = gr.Append(l, h); err != nil {
			return GraphSpec{}, nil, fmt.Errorf("gorgonet: %w", err)
		}
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("gorgonet: %s: gorgonia panicked: %v", arch.Name, r)
		}
	}()
	K := arch.Classes
	if h.Dims() != 2 {
		if h, err = G.Reshape(h, tensor.Shape{1, K}); err != nil {
			return GraphSpec{}, nil, fmt.Errorf("gorgonet: %s: logits: %w", arch.Name, err)
		}
	}
	loss, err := CrossEntropy(h, gr.Labels())
	if err != nil {
		return GraphSpec{}, nil, err
	}
	nodes := gr.ParamNodes()
	if len(nodes) != len(pts) {
		return GraphSpec{}, nil, fmt.Errorf("gorgonet: %s: %d parameter nodes for %d tensors", arch.Name, len(nodes), len(pts))
	}
	trans := make([]bool, len(pts))
	for i, ps := range pts {
		sh := nodes[i].Shape()
		switch {
		case arch.Layers[ps.Layer].Kind == models.KindDense && ps.Tensor == 0 && len(ps.Dims) == 2 && sh.Eq(tensor.Shape{ps.Dims[1], ps.Dims[0]}):
			trans[i] = true
		case sh.TotalSize() != ps.Size:
			return GraphSpec{}, nil, fmt.Errorf("gorgonet: %s: parameter node %s has shape %v for tensor %v", arch.Name, nodes[i].Name(), sh, ps.Dims)
		}
	}
	toGraph = func(engine []float64) []float64 {
		out := make([]float64, len(engine))
		for i, ps := range pts {
			src, dst := engine[ps.Offset:ps.Offset+ps.Size], out[ps.Offset:ps.Offset+ps.Size]
			if !trans[i] {
				copy(dst, src)
				continue
			}
			r, c := ps.Dims[0], ps.Dims[1]
			for o := 0; o < r; o++ {
				for j := 0; j < c; j++ {
					dst[j*r+o] = src[o*c+j]
				}
			}
		}
		return out
	}
	spec = GraphSpec{Name: arch.Name, Graph: gr.ExprGraph(), Input: gr.Input(), InputShape: arch.Input, Label: gr.Labels(),
		Classes: K, Logits: h, Loss: loss, Params: nodes}
	return spec, toGraph, nil
}
