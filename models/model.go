package models

import "fmt"

// netModel adapts a float32 Network to the Model interface.
type netModel struct {
	net *Network[float32]
}

// NewCPUModel returns arch as a float32 Model on the CPU backend.
func NewCPUModel(arch Arch) (Model, error) {
	return NewModel(arch, NewCPUBackend[float32]())
}

// NewModel returns arch as a float32 Model on the given backend.
func NewModel(arch Arch, be Backend[float32]) (Model, error) {
	net, err := NewNetwork(arch, be)
	if err != nil {
		return nil, fmt.Errorf("new model: %w", err)
	}
	return &netModel{net: net}, nil
}

func (m *netModel) Arch() Arch     { return m.net.arch }
func (m *netModel) NumParams() int { return m.net.p }
func (m *netModel) InputDim() int  { return m.net.d }

// Network exposes the underlying float32 network (tangents, input gradients, the FIL
// input space): a Model from NewModel or NewCPUModel satisfies
// interface{ Network() *Network[float32] }.
func (m *netModel) Network() *Network[float32] { return m.net }

func (m *netModel) Init(seed uint64) []float32 {
	p := InitParams(m.net.arch, seed)
	out := make([]float32, len(p))
	for i, v := range p {
		out[i] = float32(v)
	}
	return out
}

func (m *netModel) Logits(params, x []float32, n int, out []float32) error {
	return m.net.ForwardInto(params, x, n, out)
}

func (m *netModel) ClippedGradSum(params, x []float32, y []int, clip Clip, sum []float32, losses []float64) error {
	return m.net.ClippedGradSum(params, x, y, len(y), clip, sum, losses)
}

func (m *netModel) FILSqNorms(params, x []float32, y []int, clip Clip, coords [][]int, out []float64) error {
	return m.net.FILSqNorms(params, x, y, len(y), clip, coords, out)
}
