package oracle

import (
	G "gorgonia.org/gorgonia"

	"github.com/dpfil/dpfil/models"
)

func init() { registerNode(models.KindELU, eluNode) }

// eluNode builds ELU from primitives (Gorgonia has none): relu(x) + expm1(x − relu(x)).
func eluNode(_ *Layer, x *G.Node) (*G.Node, error) {
	r, err := G.Rectify(x)
	if err != nil {
		return nil, err
	}
	neg, err := G.Sub(x, r) // min(x, 0)
	if err != nil {
		return nil, err
	}
	e, err := G.Expm1(neg)
	if err != nil {
		return nil, err
	}
	return G.Add(r, e)
}
