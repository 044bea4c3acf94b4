package oracle

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/dpfil/dpfil/models"
)

// PerSample computes per-sample gradients by Gorgonia's fastest honest route: a
// batch-1 graph, compiled once, run once per sample (the tape machine is reset and the
// sample's input and label are rebound between runs). With several workers each owns
// its own compiled batch-1 graph and takes the next unprocessed sample until the batch
// is done, so the route uses the same cores as the engine. It is the Gorgonia side of `dpfil bench
// engine`. A PerSample is not safe for concurrent use.
type PerSample struct {
	arch   models.Arch
	graphs []*Graph // one per worker
}

// NewPerSample builds the batch-1 graph of arch with runtime.GOMAXPROCS(0) workers.
func NewPerSample(arch models.Arch) (*PerSample, error) {
	return NewPerSampleWorkers(arch, runtime.GOMAXPROCS(0))
}

// NewPerSampleWorkers builds one compiled batch-1 graph of arch per worker.
func NewPerSampleWorkers(arch models.Arch, workers int) (*PerSample, error) {
	if workers <= 0 {
		return nil, fmt.Errorf("oracle: workers must be positive, got %d", workers)
	}
	p := &PerSample{arch: arch}
	for w := 0; w < workers; w++ {
		gr, err := Build(arch, 1)
		if err != nil {
			return nil, err
		}
		p.graphs = append(p.graphs, gr)
	}
	return p, nil
}

// NumParams is the length of the flat parameter vector.
func (p *PerSample) NumParams() int { return p.graphs[0].nparams }

// Workers is the number of batch-1 graphs run concurrently.
func (p *PerSample) Workers() int { return len(p.graphs) }

// Run returns the batch×P per-sample gradients of the softmax cross-entropy of each
// sample (row i is ∇_θ ℓ(x_i, y_i)) and the batch per-sample losses.
func (p *PerSample) Run(params, x []float64, y []int, batch int) (grads, losses []float64, err error) {
	if batch <= 0 {
		return nil, nil, fmt.Errorf("oracle: batch must be positive, got %d", batch)
	}
	d := p.arch.InputDim()
	if len(x) != batch*d {
		return nil, nil, fmt.Errorf("oracle: x has %d values, want batch %d × %d", len(x), batch, d)
	}
	if len(y) != batch {
		return nil, nil, fmt.Errorf("oracle: %d labels for batch %d", len(y), batch)
	}
	P := p.NumParams()
	if err := p.graphs[0].checkParams(params); err != nil {
		return nil, nil, err
	}
	grads = make([]float64, batch*P)
	losses = make([]float64, batch)
	workers := min(len(p.graphs), batch)
	errs := make([]error, workers)
	var next atomic.Int64 // samples are handed out one at a time: no straggler idles the rest
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Go(func() {
			gr := p.graphs[w]
			gr.setParams(params) // once per batch: the tape never writes to its inputs
			for {
				i := int(next.Add(1)) - 1
				if i >= batch {
					return
				}
				err := gr.setData(x[i*d:(i+1)*d], y[i:i+1])
				if err == nil {
					err = gr.runGradInto(grads[i*P:(i+1)*P], losses[i:i+1])
				}
				if err != nil {
					errs[w] = fmt.Errorf("sample %d: %w", i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, nil, err
		}
	}
	return grads, losses, nil
}

// PerSampleGrads builds the batch-1 graph(s) of arch and returns the per-sample
// gradients (batch×P) and losses of the batch; see PerSample.Run. To run many
// batches, build a PerSample once instead.
func PerSampleGrads(arch models.Arch, params, x []float64, y []int, batch int) (grads, losses []float64, err error) {
	p, err := NewPerSample(arch)
	if err != nil {
		return nil, nil, err
	}
	return p.Run(params, x, y, batch)
}
