package attack

import (
	"fmt"

	"github.com/dpfil/dpfil/transcript"
)

// ReplayReport is the outcome of Replay: the prior-aware attacks' guesses on a
// recorded transcript.
type ReplayReport struct {
	Transcript string         `json:"transcript"`
	Complete   bool           `json:"complete"` // false: recovered from a crashed write
	Steps      int            `json:"steps"`
	Prior      []int          `json:"prior"`
	Guess      map[string]int `json:"guess"`       // per attack: guessed position in the prior
	GuessIndex map[string]int `json:"guess_index"` // per attack: guessed dataset index
	// Header is the transcript's header (model, dataset, q, σ, C).
	Header transcript.Header `json:"-"`
}

// Replay runs the prior-aware attacks on the transcript file at path as the informed
// adversary would, from the file and the dataset alone: it verifies the file (a file
// cut short by a crash is used up to its last good record), loads the dataset named
// in the header from dataDir and checks its fingerprint, rebuilds θ_t from θ₀ and the
// released gradients, subtracts the clipped gradients of the known points D₋ and
// scores the prior's candidates (PriorScores, Decide).
func Replay(path, dataDir string) (*ReplayReport, error) {
	tr, err := transcript.Open(path)
	if err != nil {
		return nil, err
	}
	h := tr.Header
	if len(h.Prior) < 2 {
		return nil, fmt.Errorf("transcript %s has no prior to attack", path)
	}
	if len(tr.Steps) == 0 {
		return nil, fmt.Errorf("transcript %s holds no steps", path)
	}
	pools, err := LoadPools(h.Dataset, dataDir)
	if err != nil {
		return nil, err
	}
	pool := pools.Train
	if h.DatasetSHA256 != "" && h.DatasetSHA256 != pools.Fingerprint {
		return nil, fmt.Errorf("dataset %s has fingerprint %s, the transcript was recorded on %s", h.Dataset, pools.Fingerprint, h.DatasetSHA256)
	}
	newNet, _, err := NetFactory(h.Model, pool.D)
	if err != nil {
		return nil, err
	}
	net := newNet()
	kx, ky, err := pool.gather(h.Known)
	if err != nil {
		return nil, err
	}
	obs, err := Observations(tr, net, kx, ky)
	if err != nil {
		return nil, err
	}
	px, py, err := pool.gather(h.Prior)
	if err != nil {
		return nil, err
	}
	sc, err := PriorScores(net, obs, px, py, h.Clip)
	if err != nil {
		return nil, err
	}
	guess, err := Decide(sc, h.Q, h.Sigma)
	if err != nil {
		return nil, err
	}
	r := &ReplayReport{Transcript: path, Complete: tr.Complete, Steps: len(tr.Steps), Prior: h.Prior,
		Guess: guess, GuessIndex: map[string]int{}, Header: h}
	for a, g := range guess {
		r.GuessIndex[a] = h.Prior[g]
	}
	return r, nil
}

// gather returns the images and labels of the pool's samples idx, in order.
func (p Pool) gather(idx []int) ([]float64, []int, error) {
	var x []float64
	var y []int
	for _, i := range idx {
		if i < 0 || i >= p.N() {
			return nil, nil, fmt.Errorf("transcript names sample %d, the dataset has %d", i, p.N())
		}
		x = p.AppendImages(x, i, i+1)
		y = append(y, p.Y[i])
	}
	return x, y, nil
}
