package attack

import (
	"fmt"

	"github.com/dpfil/dpfil/transcript"
)

// Observations replays transcript tr as the informed adversary: θ_t from θ₀ and the
// released gradients, and ḡ_t = g_t − Σ clip_C(∇ℓ(θ_t, z)) over the known points z in
// step t's batch. knownX/knownY are D₋ in the header's Known order.
func Observations(tr *transcript.Transcript, net Net, knownX []float64, knownY []int) ([]Observation, error) {
	h := tr.Header
	P := h.NumParams
	if len(h.Known) > 0 && h.ClipMode != "hard" {
		return nil, fmt.Errorf("replay: the known points' gradients are subtracted with hard clipping, the transcript used %q clipping", h.ClipMode)
	}
	if net == nil {
		return nil, fmt.Errorf("replay: no network")
	}
	if net.NumParams() != P {
		return nil, fmt.Errorf("replay: network has %d parameters, transcript %d", net.NumParams(), P)
	}
	d := net.InputDim()
	if len(knownY) != len(h.Known) || len(knownX) != len(knownY)*d {
		return nil, fmt.Errorf("replay: %d known points given, transcript has %d", len(knownY), len(h.Known))
	}
	rp := tr.NewReplayer()
	theta := rp.Theta()
	grads := make([]float64, gradChunk*P)
	obs := make([]Observation, 0, len(tr.Steps))
	for _, s := range tr.Steps {
		o := Observation{Theta: append([]float64(nil), theta...), GBar: make([]float64, P)}
		for i, v := range s.Released {
			o.GBar[i] = float64(v)
		}
		var x []float64
		var y []int
		flush := func() error {
			n := len(y)
			if n == 0 {
				return nil
			}
			if err := net.PerSampleGrads(theta, x, y, n, grads[:n*P], nil); err != nil {
				return fmt.Errorf("replay step %d: %w", s.T, err)
			}
			clipRows(grads, n, P, h.Clip, nil)
			for k := 0; k < n; k++ {
				for i, v := range grads[k*P : (k+1)*P] {
					o.GBar[i] -= v
				}
			}
			x, y = x[:0], y[:0]
			return nil
		}
		for j := range knownY {
			if s.KnownMember != nil && !s.KnownMember[j] {
				continue
			}
			x = append(x, knownX[j*d:(j+1)*d]...)
			y = append(y, knownY[j])
			if len(y) == gradChunk {
				if err := flush(); err != nil {
					return nil, err
				}
			}
		}
		if err := flush(); err != nil {
			return nil, err
		}
		obs = append(obs, o)
		rp.Step(s.Released)
	}
	return obs, nil
}

// PriorScores computes the prior-aware attacks' statistics (see Scores) of the
// candidates (x, y) (K samples) from the observations.
func PriorScores(net Net, obs []Observation, x []float64, y []int, clip float64) (Scores, error) {
	K, P := len(y), net.NumParams()
	if K == 0 || len(x) != K*net.InputDim() {
		return Scores{}, fmt.Errorf("prior scores: %d candidates with %d values", K, len(x))
	}
	ci := make([]float64, K*P)
	norms := make([]float64, K)
	sc := Scores{}
	c2 := clip * clip
	for t, o := range obs {
		if len(o.GBar) != P {
			return Scores{}, fmt.Errorf("prior scores: step %d observation has %d values, want %d", t, len(o.GBar), P)
		}
		if err := net.PerSampleGrads(o.Theta, x, y, K, ci, nil); err != nil {
			return Scores{}, fmt.Errorf("prior scores step %d: %w", t, err)
		}
		clipRows(ci, K, P, clip, norms)
		dot := make([]float64, K)
		nsq := make([]float64, K)
		for k := 0; k < K; k++ {
			d := 0.0
			for i, v := range ci[k*P : (k+1)*P] {
				d += v * o.GBar[i]
			}
			dot[k] = d / c2
			nsq[k] = norms[k] * norms[k] / c2
		}
		sc.Dot = append(sc.Dot, dot)
		sc.NormSq = append(sc.NormSq, nsq)
	}
	return sc, nil
}

// Decide applies the prior-aware attacks (Algorithm 2, Algorithm 3 with top ⌈qT⌉
// terms, App. G log-likelihood) to scores and returns each one's guessed candidate.
func Decide(s Scores, q, sigma float64) (map[string]int, error) {
	if len(s.Dot) == 0 || len(s.Dot[0]) == 0 || len(s.NormSq) != len(s.Dot) {
		return nil, fmt.Errorf("decide: empty or malformed scores")
	}
	for t := range s.Dot {
		if len(s.Dot[t]) != len(s.Dot[0]) || len(s.NormSq[t]) != len(s.Dot[0]) {
			return nil, fmt.Errorf("decide: step %d scores %d/%d candidates, want %d", t, len(s.Dot[t]), len(s.NormSq[t]), len(s.Dot[0]))
		}
	}
	if !(q > 0 && q <= 1) || !(sigma >= 0) {
		return nil, fmt.Errorf("decide: q = %v, σ = %v out of range", q, sigma)
	}
	c := GameConfig{Q: q, Steps: len(s.Dot)}
	return decide(s, q, sigma, c.TopK()), nil
}
