package oracle

import (
	"fmt"

	"github.com/dpfil/dpfil/models"
)

// PerSample computes per-sample gradients by Gorgonia's fastest honest route: one
// batch-1 graph, compiled once, run once per sample (the tape machine is reset and the
// sample's input and label are rebound between runs). It is the entry point of the
// Gorgonia side of `dpfil bench engine`. A PerSample is not safe for concurrent use.
type PerSample struct {
	gr *Graph
}

// NewPerSample builds and compiles the batch-1 graph of arch.
func NewPerSample(arch models.Arch) (*PerSample, error) {
	gr, err := Build(arch, 1)
	if err != nil {
		return nil, err
	}
	return &PerSample{gr: gr}, nil
}

// NumParams is the length of the flat parameter vector.
func (p *PerSample) NumParams() int { return p.gr.nparams }

// Run returns the batch×P per-sample gradients of the softmax cross-entropy of each
// sample (row i is ∇_θ ℓ(x_i, y_i)) and the batch per-sample losses.
func (p *PerSample) Run(params, x []float64, y []int, batch int) (grads, losses []float64, err error) {
	if batch <= 0 {
		return nil, nil, fmt.Errorf("oracle: batch must be positive, got %d", batch)
	}
	d := p.gr.arch.InputDim()
	if len(x) != batch*d {
		return nil, nil, fmt.Errorf("oracle: x has %d values, want batch %d × %d", len(x), batch, d)
	}
	if len(y) != batch {
		return nil, nil, fmt.Errorf("oracle: %d labels for batch %d", len(y), batch)
	}
	P := p.gr.nparams
	grads = make([]float64, batch*P)
	losses = make([]float64, batch)
	for i := 0; i < batch; i++ {
		if err := p.gr.gradInto(params, x[i*d:(i+1)*d], y[i:i+1], grads[i*P:(i+1)*P], losses[i:i+1]); err != nil {
			return nil, nil, fmt.Errorf("sample %d: %w", i, err)
		}
	}
	return grads, losses, nil
}

// PerSampleGrads builds the batch-1 graph of arch and returns the per-sample gradients
// (batch×P) and losses of the batch; see PerSample.Run. To run many batches, build a
// PerSample once instead.
func PerSampleGrads(arch models.Arch, params, x []float64, y []int, batch int) (grads, losses []float64, err error) {
	p, err := NewPerSample(arch)
	if err != nil {
		return nil, nil, err
	}
	return p.Run(params, x, y, batch)
}
