package glm

import (
	"fmt"
	"math"
)

// AttributeIRFILStep is one iteration of attribute-level IRFIL.
type AttributeIRFILStep struct {
	Iter    int     `json:"iter"`
	EtaMean float64 `json:"eta_mean"` // mean attribute-level η over the rows
	EtaStd  float64 `json:"eta_std"`
	Spread  float64 `json:"spread"` // std/mean
}

// AttributeIRFIL runs Hannun et al. 2021, Algorithm 1 with the attribute-level η of columns cols
// (Hannun et al. 2021, Sec. 6.4, Fig. 7: "η specific to the attribute under attack"): starting
// from ω = 1 it fits, computes η_i = ‖J_S,i‖₂/σ and sets ω_i ← n(ω_i/η_i)/Σ_j ω_j/η_j,
// iters times. It returns the final weights (to refit with InvertConfig.Weights) and
// the per-iteration spread of η.
func AttributeIRFIL(t *Table, cfg InvertConfig, cols []int, sigma float64, iters int) ([]float64, []AttributeIRFILStep, error) {
	if iters < 0 {
		return nil, nil, fmt.Errorf("attribute IRFIL: iterations must be ≥ 0, got %d", iters)
	}
	w := make([]float64, t.N)
	for i := range w {
		w[i] = 1
	}
	var steps []AttributeIRFILStep
	for it := 0; ; it++ {
		c := cfg
		c.Weights = w
		iv, err := NewInverter(t, c)
		if err != nil {
			return nil, nil, fmt.Errorf("attribute IRFIL iteration %d: %w", it, err)
		}
		eta := make([]float64, t.N)
		st := AttributeIRFILStep{Iter: it}
		for i := range eta {
			j, err := iv.Jacobian(i, cols, false)
			if err != nil {
				return nil, nil, err
			}
			eta[i] = spectralNorm(j) / sigma
			st.EtaMean += eta[i] / float64(t.N)
		}
		for _, e := range eta {
			st.EtaStd += (e - st.EtaMean) * (e - st.EtaMean) / float64(t.N)
		}
		st.EtaStd = math.Sqrt(st.EtaStd)
		st.Spread = st.EtaStd / st.EtaMean
		steps = append(steps, st)
		if it == iters {
			return w, steps, nil
		}
		next := make([]float64, t.N)
		sum := 0.0
		for i, e := range eta {
			if !(e > 0) {
				return nil, nil, fmt.Errorf("attribute IRFIL iteration %d: row %d has η = %v; cannot reweight", it, i, e)
			}
			next[i] = w[i] / e
			sum += next[i]
		}
		for i := range next {
			next[i] *= float64(t.N) / sum
		}
		w = next
	}
}
