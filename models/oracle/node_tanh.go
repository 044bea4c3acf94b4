package oracle

import (
	G "gorgonia.org/gorgonia"

	"github.com/dpfil/dpfil/models"
)

func init() { registerNode(models.KindTanh, tanhNode) }

// tanhNode is Gorgonia's Tanh.
func tanhNode(_ *Layer, h *G.Node) (*G.Node, error) { return G.Tanh(h) }
