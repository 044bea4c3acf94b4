package attack

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
)

// TuneFirstTrial is the index of the first tuning trial: tuning trials are numbered
// from here, so their priors, targets and noise are drawn apart from the game's own
// trials 0 … Trials−1 (each trial's draws depend only on the seed and its index).
const TuneFirstTrial = 1 << 30

// TuneCriterion is what GameSpec.TuneLR maximises.
const TuneCriterion = "test_accuracy"

// LRCandidate is one learning rate tried by the tuning (means over its trials).
type LRCandidate struct {
	LR       float64 `json:"lr"`
	Diverged bool    `json:"diverged,omitempty"` // some trial ended with non-finite parameters; never chosen
	// TestAccuracy, FinalLoss, ClippedNorm and ClippedFraction are means over the
	// tuning trials (zero when diverged).
	TestAccuracy    float64 `json:"test_accuracy"`
	FinalLoss       float64 `json:"final_loss"`
	ClippedNorm     float64 `json:"clipped_norm"`
	ClippedFraction float64 `json:"clipped_fraction"`
}

// LRTuning records how a game's learning rate was chosen: Hayes et al. (2023, App. A)
// "select the learning rate by sweeping over a range of values between 0.001 and 100"
// for each ε. Every candidate plays Trials trials of the same game (same D₋, θ₀, σ,
// q, T, C) numbered from TuneFirstTrial; the candidate with the highest mean test
// accuracy is chosen (the first listed among equals).
type LRTuning struct {
	Criterion  string        `json:"criterion"`
	Trials     int           `json:"trials"`
	FirstTrial int           `json:"first_trial"`
	Candidates []LRCandidate `json:"candidates"`
	Chosen     float64       `json:"chosen"`
}

// validateTuning rejects impossible learning-rate grids.
func (s GameSpec) validateTuning() error {
	if len(s.TuneLR) == 0 {
		return nil
	}
	if s.TuneTrials < 1 {
		return fmt.Errorf("attack game: tuning trials %d < 1", s.TuneTrials)
	}
	if s.Trials > TuneFirstTrial {
		return fmt.Errorf("attack game: %d trials overlap the tuning trials (numbered from %d)", s.Trials, TuneFirstTrial)
	}
	for i, lr := range s.TuneLR {
		if !(lr > 0) || math.IsInf(lr, 0) {
			return fmt.Errorf("attack game: tuning learning rate %v must be positive and finite", lr)
		}
		if slices.Contains(s.TuneLR[:i], lr) {
			return fmt.Errorf("attack game: tuning learning rate %v listed twice", lr)
		}
	}
	return nil
}

// tuneLR plays spec's game at each learning rate of spec.TuneLR for spec.TuneTrials
// tuning trials and returns the record, its Chosen the most accurate.
func tuneLR(ctx context.Context, spec GameSpec, sigma, eps float64, pools *Pools) (*LRTuning, error) {
	if pools.Test.N() == 0 {
		return nil, fmt.Errorf("attack game: tuning the learning rate needs a test split (dataset %s has none)", spec.Dataset)
	}
	tu := &LRTuning{Criterion: TuneCriterion, Trials: spec.TuneTrials, FirstTrial: TuneFirstTrial}
	best := -1
	for _, lr := range spec.TuneLR {
		s := spec
		s.LR, s.Attack = lr, AttackPrior // the gradient attack's reconstructions are not needed here
		g, err := newSpecGame(s, sigma, pools)
		if err != nil {
			return nil, err
		}
		opt := RunOptions{Trials: spec.TuneTrials, First: TuneFirstTrial, Workers: spec.Workers}
		if spec.Progress != nil {
			phase := fmt.Sprintf("tune lr=%g", lr)
			opt.Progress = func(done int, _ *TrialResult) {
				spec.Progress(GameProgress{Epsilon: eps, Done: done, Trials: spec.TuneTrials, Attack: spec.Attack, PriorSize: spec.PriorSize, Phase: phase})
			}
		}
		res, err := g.Run(ctx, opt)
		c := LRCandidate{LR: lr}
		switch {
		case errors.Is(err, ErrDiverged):
			c.Diverged = true
		case err != nil:
			return nil, fmt.Errorf("tune learning rate %g: %w", lr, err)
		default:
			var m GameReport // the game's own means over trials
			m.meanTrials(res)
			if m.TestAccuracy == nil {
				return nil, fmt.Errorf("tune learning rate %g: the trials have no test accuracy", lr)
			}
			c.TestAccuracy, c.FinalLoss = *m.TestAccuracy, m.FinalLoss
			c.ClippedNorm, c.ClippedFraction = m.ClippedNorm, m.ClippedFraction
			if best < 0 || c.TestAccuracy > tu.Candidates[best].TestAccuracy {
				best = len(tu.Candidates)
			}
		}
		tu.Candidates = append(tu.Candidates, c)
	}
	if best < 0 {
		return nil, fmt.Errorf("attack game: training diverged at every tuning learning rate %v", spec.TuneLR)
	}
	tu.Chosen = tu.Candidates[best].LR
	return tu, nil
}
