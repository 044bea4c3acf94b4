package oracle

import (
	G "gorgonia.org/gorgonia"

	"github.com/dpfil/dpfil/models"
)

func init() { registerNode(models.KindReLU, reluNode) }

// reluNode is Gorgonia's Rectify.
func reluNode(_ *Layer, h *G.Node) (*G.Node, error) { return G.Rectify(h) }
