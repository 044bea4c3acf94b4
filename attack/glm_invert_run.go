package attack

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sort"
	"sync"

	"github.com/dpfil/dpfil/glm"
	"github.com/dpfil/dpfil/internal/splitmix"
)

// InversionOptions configures a Monte Carlo attribute-inversion experiment.
type InversionOptions struct {
	Sigma   float64         // output-perturbation noise σ > 0 (0 only with NoiseFree)
	Prior   *AttributePrior // the attacked columns and what the adversary knows of them
	Targets []int           // attacked rows
	Trials  int             // independent releases w̃ = w* + N(0, σ²I) per target
	Seed    uint64          // the releases' noise
	// SharedReleases attacks every target in the same Trials releases (one release
	// exposes all rows, as in deployment); by default each target gets its own releases
	// (drawn from Seed and its position), so the per-target MSEs are independent
	// Monte Carlo estimates.
	SharedReleases bool
	// NoiseFree attacks the exact minimiser w* (σ = 0): the white-box attack must then
	// recover the attribute exactly when it is identified.
	NoiseFree bool
	Attack    WhiteBoxOptions
	Workers   int            // default GOMAXPROCS
	Progress  func(done int) // called with the number of (target, trial) pairs finished
	Stop      func() error   // polled between targets; a non-nil error aborts
	Predict   bool           // compute the FIL predictions (needs σ > 0)
	// DecileKey, if set (one value per target, in Targets order), is what the targets
	// are grouped into deciles by instead of the attacked model's η²: Hannun et al.
	// (2021, Fig. 7b, d) sort the examples by their initial η (before IRFIL).
	DecileKey []float64
	Logf      func(string, ...any)
}

// InversionTarget is one attacked row: its true attribute, the FIL prediction and the
// realised errors of the three adversaries over the trials.
type InversionTarget struct {
	Row  int       `json:"row"`
	True []float64 `json:"true"`
	glm.Prediction
	// The scores averaged over trials.
	InversionScores
	// WhiteResidual is the mean final ‖w̃ − f(x̂)‖ of the white-box attack.
	WhiteResidual float64
}

// InversionScores are the three adversaries' errors on one attribute: the
// per-coordinate MSE ‖x̂ − x‖²/|S| and (discrete attributes) whether the exact value
// was recovered, for the white-box, black-box and baseline guesses; summed over
// trials or targets, then divided by their number (a mean, an accuracy).
type InversionScores struct {
	WhiteMSE, BlackMSE, BaselineMSE float64
	WhiteAcc, BlackAcc, BaselineAcc float64
}

// scoreGuesses scores the white-box, black-box and baseline guesses of the true
// attribute value (|S| = len(truth) coordinates).
func scoreGuesses(white, black, baseline, truth []float64) InversionScores {
	sqErr := func(a []float64) float64 {
		e := 0.0
		for c := range a {
			e += (a[c] - truth[c]) * (a[c] - truth[c])
		}
		return e / float64(len(truth))
	}
	same := func(a []float64) float64 {
		for c := range a {
			if a[c] != truth[c] {
				return 0
			}
		}
		return 1
	}
	return InversionScores{sqErr(white), sqErr(black), sqErr(baseline), same(white), same(black), same(baseline)}
}

// add adds o to s, score by score.
func (s *InversionScores) add(o InversionScores) {
	s.WhiteMSE += o.WhiteMSE
	s.BlackMSE += o.BlackMSE
	s.BaselineMSE += o.BaselineMSE
	s.WhiteAcc += o.WhiteAcc
	s.BlackAcc += o.BlackAcc
	s.BaselineAcc += o.BaselineAcc
}

// div divides every score by n (sums into means).
func (s *InversionScores) div(n float64) {
	s.WhiteMSE /= n
	s.BlackMSE /= n
	s.BaselineMSE /= n
	s.WhiteAcc /= n
	s.BlackAcc /= n
	s.BaselineAcc /= n
}

// InversionResult is the outcome of RunInversion.
type InversionResult struct {
	Targets []InversionTarget
	Trials  int
	// The targets' scores averaged over targets.
	InversionScores
	// Mean predictions over the targets with finite values.
	MeanCRB, MeanBoundDFIL, MeanEtaSq float64
	// Deciles groups the targets by η² of the attribute (Hannun et al. 2021, Fig. 7: accuracy
	// per η decile), or by InversionOptions.DecileKey, lowest first.
	Deciles []InversionDecile
}

// InversionDecile is one η-decile of the targets. EtaSqLo and EtaSqHi bound the
// grouping key (η² of the attacked model, or the DecileKey); EtaSqMean is the mean η²
// of the attacked model over the group.
type InversionDecile struct {
	EtaSqLo   float64 `json:"eta_sq_lo"`
	EtaSqHi   float64 `json:"eta_sq_hi"`
	EtaSqMean float64 `json:"eta_sq_mean"`
	N         int     `json:"n"`
	WhiteAcc  float64 `json:"white_box_accuracy"`
	BlackAcc  float64 `json:"black_box_accuracy"`
	WhiteMSE  float64 `json:"white_box_mse"`
	CRB       float64 `json:"crb"` // mean finite CRB of the group
}

// RunInversion draws Trials releases from Seed and attacks every target in each with
// the white-box, black-box and baseline (prior mode / mean) adversaries.
func RunInversion(iv *glm.Inverter, opt InversionOptions) (*InversionResult, error) {
	if opt.Prior == nil {
		return nil, errors.New("inversion: no prior")
	}
	if err := iv.CheckCols(opt.Prior.Cols); err != nil {
		return nil, err
	}
	if opt.NoiseFree {
		opt.Sigma = 0
		if opt.Predict {
			return nil, errors.New("inversion: FIL predictions need σ > 0")
		}
	} else if !(opt.Sigma > 0) || math.IsInf(opt.Sigma, 0) {
		return nil, fmt.Errorf("inversion: sigma must be positive and finite, got %v", opt.Sigma)
	}
	if opt.Trials < 1 {
		return nil, fmt.Errorf("inversion: trials must be ≥ 1, got %d", opt.Trials)
	}
	if len(opt.Targets) == 0 {
		return nil, errors.New("inversion: no target rows")
	}
	if opt.DecileKey != nil && len(opt.DecileKey) != len(opt.Targets) {
		return nil, fmt.Errorf("inversion: %d decile keys for %d targets", len(opt.DecileKey), len(opt.Targets))
	}
	for _, i := range opt.Targets {
		if i < 0 || i >= iv.N {
			return nil, fmt.Errorf("inversion: target row %d outside [0,%d)", i, iv.N)
		}
	}
	p := iv.P
	draw := func(seed uint64) ([][]float64, []float64) {
		rng := rand.New(rand.NewPCG(seed, seed^0x2545f4914f6cdd1d))
		releases := make([][]float64, opt.Trials)
		s2 := make([]float64, opt.Trials)
		for r := range releases {
			w := make([]float64, p)
			for a := range w {
				w[a] = iv.W[a] + opt.Sigma*rng.NormFloat64()
			}
			releases[r] = w
			s2[r] = iv.ResidualVariance(w)
		}
		return releases, s2
	}
	var shared [][]float64
	var sharedScale []float64
	if opt.SharedReleases {
		shared, sharedScale = draw(opt.Seed)
	}
	cols := opt.Prior.Cols
	baseline := opt.Prior.Mean
	if opt.Prior.Discrete() {
		baseline = opt.Prior.Mode()
	}
	res := &InversionResult{Targets: make([]InversionTarget, len(opt.Targets)), Trials: opt.Trials}
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, len(opt.Targets))
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
		next     int
	)
	for wk := 0; wk < workers; wk++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				if firstErr != nil || next >= len(opt.Targets) {
					mu.Unlock()
					return
				}
				k := next
				next++
				mu.Unlock()
				if opt.Stop != nil {
					if err := opt.Stop(); err != nil {
						mu.Lock()
						if firstErr == nil {
							firstErr = err
						}
						mu.Unlock()
						return
					}
				}
				i := opt.Targets[k]
				releases, s2 := shared, sharedScale
				if !opt.SharedReleases {
					releases, s2 = draw(opt.Seed ^ (uint64(k)+1)*splitmix.Golden)
				}
				tg := InversionTarget{Row: i, True: make([]float64, len(cols))}
				for c, col := range cols {
					tg.True[c] = iv.Table().Row(i)[col]
				}
				var err error
				if opt.Predict {
					tg.Prediction, err = iv.Predict(i, cols, opt.Sigma)
				}
				for r := 0; r < opt.Trials && err == nil; r++ {
					var wb, bb []float64
					var resid float64
					if wb, resid, err = WhiteBox(iv, i, releases[r], opt.Prior, opt.Attack); err != nil {
						break
					}
					if bb, err = BlackBox(iv, i, releases[r], opt.Prior, s2[r]); err != nil {
						break
					}
					tg.add(scoreGuesses(wb, bb, baseline, tg.True))
					tg.WhiteResidual += resid
					if opt.Progress != nil {
						opt.Progress(1)
					}
				}
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("target row %d: %w", i, err)
					}
					mu.Unlock()
					return
				}
				t := float64(opt.Trials)
				tg.div(t)
				tg.WhiteResidual /= t
				res.Targets[k] = tg
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	n := float64(len(res.Targets))
	nc, nd := 0, 0
	for _, tg := range res.Targets {
		res.add(tg.InversionScores)
		if opt.Predict {
			if !math.IsInf(tg.CRB, 0) {
				res.MeanCRB += tg.CRB
				nc++
			}
			res.MeanBoundDFIL += tg.BoundDFIL
			res.MeanEtaSq += tg.EtaSq
			nd++
		}
	}
	res.div(n)
	if nc > 0 {
		res.MeanCRB /= float64(nc)
	} else {
		res.MeanCRB = math.Inf(1)
	}
	if nd > 0 {
		res.MeanBoundDFIL /= float64(nd)
		res.MeanEtaSq /= float64(nd)
		key := opt.DecileKey
		if key == nil {
			key = make([]float64, len(res.Targets))
			for k, tg := range res.Targets {
				key[k] = tg.EtaSq
			}
		}
		res.Deciles = inversionDeciles(res.Targets, key)
	}
	return res, nil
}

// inversionDeciles groups the targets into (up to) ten groups of equal size by key
// (one value per target).
func inversionDeciles(ts []InversionTarget, key []float64) []InversionDecile {
	order := make([]int, len(ts))
	for k := range order {
		order[k] = k
	}
	sort.SliceStable(order, func(a, b int) bool { return key[order[a]] < key[order[b]] })
	groups := min(10, len(ts))
	var out []InversionDecile
	for g := 0; g < groups; g++ {
		lo, hi := g*len(ts)/groups, (g+1)*len(ts)/groups
		if lo >= hi {
			continue
		}
		d := InversionDecile{EtaSqLo: key[order[lo]], EtaSqHi: key[order[hi-1]], N: hi - lo}
		nc := 0
		for _, k := range order[lo:hi] {
			t := ts[k]
			d.WhiteAcc += t.WhiteAcc / float64(d.N)
			d.BlackAcc += t.BlackAcc / float64(d.N)
			d.WhiteMSE += t.WhiteMSE / float64(d.N)
			d.EtaSqMean += t.EtaSq / float64(d.N)
			if !math.IsInf(t.CRB, 0) {
				d.CRB += t.CRB
				nc++
			}
		}
		if nc > 0 {
			d.CRB /= float64(nc)
		} else {
			d.CRB = math.Inf(1)
		}
		out = append(out, d)
	}
	return out
}
