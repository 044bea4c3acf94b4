package oracle

import (
	"fmt"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/dpfil/dpfil/models"
)

func init() { registerNode(models.KindConv, convNode) }

// convNode pads by concatenating named zero constants (Gorgonia's Conv2d pads only
// symmetrically), then convolves VALID and adds the bias.
func convNode(c *Layer, h *G.Node) (*G.Node, error) {
	l := c.Spec
	w := c.Param(false, l.Out, c.In.C, l.KH, l.KW)
	b := c.Param(false, 1, l.Out, 1, 1)
	h, err := Pad2D(c.Graph, h, fmt.Sprintf("pad%d", c.Index), l.PadT, l.PadB, l.PadL, l.PadR)
	if err != nil {
		return nil, fmt.Errorf("pad: %w", err)
	}
	if h, err = G.Conv2d(h, w, tensor.Shape{l.KH, l.KW}, []int{0, 0}, []int{l.Stride, l.Stride}, []int{1, 1}); err != nil {
		return nil, err
	}
	return G.BroadcastAdd(h, b, nil, []byte{0, 2, 3})
}

// Pad2D zero-pads the last two axes of h (B, C, H, W) by concatenating
// named zero constants (name+"_top_zeros", …): Gorgonia v0.9.18's Conv2d and
// pooling pad only symmetrically, so asymmetric (SAME) padding is done here and
// the convolution runs VALID.
func Pad2D(g *G.ExprGraph, h *G.Node, name string, top, bottom, left, right int) (*G.Node, error) {
	zeros := func(side string, shape ...int) *G.Node {
		t := tensor.New(tensor.WithShape(shape...), tensor.Of(h.Dtype()))
		return g.AddNode(G.NewConstant(t, G.WithName(fmt.Sprintf("%s_%s_zeros", name, side))))
	}
	sh := h.Shape()
	if len(sh) != 4 {
		return nil, fmt.Errorf("pad: want a (B, C, H, W) node, got shape %v", sh)
	}
	// pad concatenates zeros of width before and after along axis (2: rows, 3: columns).
	pad := func(axis, before, after int, sides [2]string) error {
		if before <= 0 && after <= 0 {
			return nil
		}
		shape := func(w int) []int {
			s := append([]int(nil), h.Shape()...)
			s[axis] = w
			return s
		}
		parts := G.Nodes{}
		if before > 0 {
			parts = append(parts, zeros(sides[0], shape(before)...))
		}
		parts = append(parts, h)
		if after > 0 {
			parts = append(parts, zeros(sides[1], shape(after)...))
		}
		var err error
		h, err = G.Concat(axis, parts...)
		return err
	}
	if err := pad(2, top, bottom, [2]string{"top", "bottom"}); err != nil {
		return nil, err
	}
	if err := pad(3, left, right, [2]string{"left", "right"}); err != nil {
		return nil, err
	}
	return h, nil
}
