package oracle

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/dpfil/dpfil/models"
)

func init() { registerNode(models.KindZeroLogit, zeroLogitNode) }

// zeroLogitNode concatenates a named zero column to the (B, C) input.
func zeroLogitNode(c *Layer, h *G.Node) (*G.Node, error) {
	var err error
	if h.Dims() != 2 {
		if h, err = G.Reshape(h, tensor.Shape{c.Batch, c.In.Size()}); err != nil {
			return nil, fmt.Errorf("input: %w", err)
		}
	}
	t := tensor.New(tensor.WithShape(c.Batch, 1), tensor.Of(h.Dtype()))
	zero := c.Graph.AddNode(G.NewConstant(t, G.WithName(fmt.Sprintf("zero_logit%d", c.Index))))
	return G.Concat(1, h, zero)
}
