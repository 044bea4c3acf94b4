package oracle

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/dpfil/dpfil/models"
)

func init() { registerNode(models.KindNormalize, normalizeNode) }

// normalizeNode binds mean and std to named input nodes that are never differentiated:
// Gorgonia identifies constant tensors by their printed value, which is truncated
// for long vectors, so distinct constants could be merged (pinned in gorgonia_defects_test.go).
func normalizeNode(c *Layer, h *G.Node) (*G.Node, error) {
	C := c.In.C
	mean := append([]float64(nil), c.Spec.Mean...)
	std := append([]float64(nil), c.Spec.Std...)
	mc := G.NewTensor(c.Graph, G.Float64, 4, G.WithShape(1, C, 1, 1), G.WithName(fmt.Sprintf("normalize%d_mean", c.Index)),
		G.WithValue(tensor.New(tensor.WithShape(1, C, 1, 1), tensor.WithBacking(mean))))
	sc := G.NewTensor(c.Graph, G.Float64, 4, G.WithShape(1, C, 1, 1), G.WithName(fmt.Sprintf("normalize%d_std", c.Index)),
		G.WithValue(tensor.New(tensor.WithShape(1, C, 1, 1), tensor.WithBacking(std))))
	d, err := G.BroadcastSub(h, mc, nil, []byte{0, 2, 3})
	if err != nil {
		return nil, err
	}
	return G.BroadcastHadamardDiv(d, sc, nil, []byte{0, 2, 3})
}
