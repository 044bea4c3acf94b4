package oracle

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/dpfil/dpfil/models"
)

func init() { registerNode(models.KindDense, denseNode) }

// denseNode multiplies by a node holding Wᵀ (In, Out), so that no Transpose op is
// needed, and adds the bias.
func denseNode(c *Layer, h *G.Node) (*G.Node, error) {
	wt := c.Param(true, c.In.Size(), c.Spec.Out)
	b := c.Param(false, 1, c.Spec.Out)
	var err error
	if h.Dims() != 2 {
		if h, err = G.Reshape(h, tensor.Shape{c.Batch, c.In.Size()}); err != nil {
			return nil, fmt.Errorf("input: %w", err)
		}
	}
	if h, err = G.Mul(h, wt); err != nil {
		return nil, err
	}
	return G.BroadcastAdd(h, b, nil, []byte{0})
}
