package gorgonet

import (
	"fmt"

	"gorgonia.org/tensor"

	"github.com/dpfil/dpfil/models"
)

// NamedTensor is one parameter tensor of an architecture as a tensor.Dense.
type NamedTensor struct {
	Name string // e.g. "conv0.W", "dense9.b" (models.Arch.Params)
	*tensor.Dense
}

// ParamTensors returns the parameter tensors of arch as tensor.Dense views of the
// flat vector params (no copy: writing a tensor writes params), with their shapes
// (conv W [Out InC KH KW], dense W [Out In], biases [Out]).
func ParamTensors(arch models.Arch, params []float32) ([]NamedTensor, error) {
	ps, err := arch.Params()
	if err != nil {
		return nil, err
	}
	if len(params) != arch.NumParams() {
		return nil, fmt.Errorf("%s: %d parameter values, want %d", arch.Name, len(params), arch.NumParams())
	}
	out := make([]NamedTensor, len(ps))
	for i, p := range ps {
		view := params[p.Offset : p.Offset+p.Size : p.Offset+p.Size]
		out[i] = NamedTensor{Name: p.Name, Dense: tensor.New(tensor.WithShape(p.Dims...), tensor.WithBacking(view))}
	}
	return out, nil
}
