package train

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"

	"github.com/dpfil/dpfil/models"
)

// repeat returns the tuning state of the repeat with this init seed: the model's
// initialisation, pretrained without privacy on the public part (Edmunds 2024,
// Algorithm 1 lines 3–6), then pruned by magnitude and frozen. Deterministic in the seed (the
// pretraining batches come from their own stream), so a resumed run recomputes it.
func (tu *tuning) repeat(seed uint64) (*tunedRepeat, error) {
	if tr, ok := tu.cache[seed]; ok {
		return tr, nil
	}
	init := tu.base.Init(seed)
	if len(init) != tu.p {
		return nil, fmt.Errorf("model init returned %d parameters, want %d", len(init), tu.p)
	}
	params := make([]float64, tu.p)
	for i, v := range init {
		params[i] = float64(v)
	}
	if tu.steps > 0 {
		if err := tu.pretrain(params, seed); err != nil {
			return nil, err
		}
	}
	tr := &tunedRepeat{}
	if mask, n := tu.releaseMask(params); mask != nil {
		tr.mask, tr.nFrozen = mask, n
		if tu.cfg.PruneMode == PruneZero {
			pruned := tu.pruneSet(params)
			for i := range params {
				if pruned[i] {
					params[i] = 0
				}
			}
		}
	}
	tr.params = make([]float32, tu.p)
	for i, v := range params {
		tr.params[i] = float32(v)
	}
	if tu.steps > 0 && tu.test != nil && tu.test.N > 0 {
		ev, err := evaluate(tu.base, tr.params, tu.test, tu.classes)
		if err != nil {
			return nil, fmt.Errorf("pretraining: %w", err)
		}
		tr.acc = ev.Accuracy
	}
	clear(tu.cache) // one repeat at a time
	tu.cache[seed] = tr
	return tr, nil
}

// pretrain runs the non-private phase: the run's optimizer (Config.Optimizer:
// momentum SGD, or Adam with the run's β1, β2, ε, fresh moments) at the pretraining
// rate and weight decay (L2, as the optimizers apply it), on the mean (unclipped) loss gradient of
// mini-batches drawn uniformly without replacement from the public part. The private
// phase starts its own optimizer state afresh.
func (tu *tuning) pretrain(params []float64, seed uint64) error {
	pub := tu.public
	d := pub.Dim()
	rng := rand.New(newStream(seed, 0, streamTuneDraws))
	opt := newOptimizer(tu.runCfg, tu.lr, tu.wd, tu.p)
	p32 := make([]float32, tu.p)
	sum := make([]float32, tu.p)
	grad := make([]float64, tu.p)
	x := make([]float32, tu.batch*d)
	y := make([]int, tu.batch)
	losses := make([]float64, tu.batch)
	// A hard clip at a norm no gradient reaches leaves the gradients as they are.
	noClip := models.Clip{Mode: models.ClipHard, C: math.MaxFloat32}
	for t := 0; t < tu.steps; t++ {
		for i, v := range params {
			p32[i] = float32(v)
		}
		// Floyd's sample of batch distinct indices.
		idx := sampleDistinct(rng, pub.N, tu.batch)
		for j, i := range idx {
			copy(x[j*d:(j+1)*d], pub.Image(i))
			y[j] = pub.Labels[i]
		}
		if err := tu.base.ClippedGradSum(p32, x, y, noClip, sum, losses); err != nil {
			return fmt.Errorf("pretraining step %d: %w", t+1, err)
		}
		for i, v := range sum {
			grad[i] = float64(v) / float64(tu.batch)
		}
		opt.step(params, grad)
		for i, v := range params {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("pretraining step %d: %w (parameter %d is %v); lower pretrain_lr", t+1, ErrDiverged, i, v)
			}
		}
	}
	return nil
}

// sampleDistinct returns k distinct indices of [0, n) in increasing order (Floyd).
func sampleDistinct(rng *rand.Rand, n, k int) []int {
	seen := make(map[int]bool, k)
	out := make([]int, 0, k)
	for j := n - k; j < n; j++ {
		t := rng.IntN(j + 1)
		if seen[t] {
			t = j
		}
		seen[t] = true
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// pruneSet marks the ⌊PruneFraction·P⌋ parameters of smallest magnitude among those
// not frozen by Freeze (ties broken by index, deterministic).
func (tu *tuning) pruneSet(params []float64) []bool {
	out := make([]bool, tu.p)
	k := int(math.Floor(tu.cfg.PruneFraction * float64(tu.p)))
	if k == 0 {
		return out
	}
	var cand []int
	for i := range params {
		if tu.frozen == nil || !tu.frozen[i] {
			cand = append(cand, i)
		}
	}
	sort.SliceStable(cand, func(a, b int) bool { return math.Abs(params[cand[a]]) < math.Abs(params[cand[b]]) })
	k = min(k, len(cand)-1) // keep at least one parameter trainable
	for _, i := range cand[:k] {
		out[i] = true
	}
	return out
}

// releaseMask returns the released coordinates (true = trained and released) and the
// number frozen, or nil when nothing is frozen.
func (tu *tuning) releaseMask(params []float64) ([]bool, int) {
	if tu.frozen == nil && tu.cfg.PruneFraction == 0 {
		return nil, 0
	}
	pruned := tu.pruneSet(params)
	mask := make([]bool, tu.p)
	n := 0
	for i := range mask {
		frozen := pruned[i] || tu.frozen != nil && tu.frozen[i]
		mask[i] = !frozen
		if frozen {
			n++
		}
	}
	return mask, n
}
