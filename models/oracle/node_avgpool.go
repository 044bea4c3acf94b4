package oracle

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/dpfil/dpfil/models"
)

func init() { registerNode(models.KindAvgPool, avgPoolNode) }

// avgPoolNode is a depthwise convolution with a fixed, named, non-differentiated kernel
// of 1/(kh·kw), the channels folded into the batch axis: Gorgonia v0.9.18's
// AveragePool2D divides by the input width instead of the kernel area and its
// stride-2 backward is wrong (pinned in gorgonia_defects_test.go).
func avgPoolNode(c *Layer, h *G.Node) (*G.Node, error) {
	l, s := c.Spec, c.In
	k := make([]float64, l.KH*l.KW)
	for i := range k {
		k[i] = 1 / float64(l.KH*l.KW)
	}
	kt := tensor.New(tensor.WithShape(1, 1, l.KH, l.KW), tensor.WithBacking(k))
	kernel := c.Graph.AddNode(G.NewConstant(kt, G.WithName(fmt.Sprintf("avgpool%d_kernel", c.Index))))
	folded, err := G.Reshape(h, tensor.Shape{c.Batch * s.C, 1, s.H, s.W})
	if err != nil {
		return nil, err
	}
	out, err := G.Conv2d(folded, kernel, tensor.Shape{l.KH, l.KW}, []int{0, 0}, []int{l.Stride, l.Stride}, []int{1, 1})
	if err != nil {
		return nil, err
	}
	return G.Reshape(out, tensor.Shape{c.Batch, s.C, c.Out.H, c.Out.W})
}
