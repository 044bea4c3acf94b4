package oracle

import (
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/dpfil/dpfil/models"
)

func init() { registerNode(models.KindFlatten, flattenNode) }

// flattenNode reshapes to (B, C·H·W).
func flattenNode(c *Layer, h *G.Node) (*G.Node, error) {
	return G.Reshape(h, tensor.Shape{c.Batch, c.In.Size()})
}
