package oracle

import (
	"github.com/dpfil/dpfil/models"
)

// PerSampleRoute prepares the oracle's per-sample gradients of arch at params on
// the batch x, y (Gorgonia's fastest honest route: compiled batch-1 graphs, one per
// worker, float64) for timing; each call of the returned function processes a slice
// of the batch and says how many samples. It is the baseline of
// enginebench.Request.OracleRoute (dpfil bench engine --oracle).
func PerSampleRoute(arch models.Arch, params, x []float32, y []int) (func() (int, error), error) {
	ps, err := NewPerSample(arch)
	if err != nil {
		return nil, err
	}
	p64 := make([]float64, len(params))
	for i, v := range params {
		p64[i] = float64(v)
	}
	d := arch.InputDim()
	chunk := min(len(y), 4*ps.Workers())
	x64 := make([]float64, chunk*d)
	for i := range x64 {
		x64[i] = float64(x[i])
	}
	return func() (int, error) {
		_, _, err := ps.Run(p64, x64, y[:chunk], chunk)
		return chunk, err
	}, nil
}
