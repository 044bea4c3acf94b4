package accounting

import "fmt"

// PLDAccountant composes events into a privacy-loss-distribution accountant (PLD)
// under one adjacency; shuffled epochs are accounted as Shuffle says.
type PLDAccountant struct {
	Shuffle  ShuffleAccounting
	pld      *PLD
	sampling string // of the composed events (samplingOf)
}

// NewPLDAccountant returns an empty accountant; cfg nil means the PLD defaults.
func NewPLDAccountant(adj Adjacency, shuffle ShuffleAccounting, cfg *PLDConfig) *PLDAccountant {
	return &PLDAccountant{Shuffle: shuffle, pld: NewPLD(adj, cfg)}
}

// Compose adds an event (validated first; on error the accountant is unchanged).
func (a *PLDAccountant) Compose(e Event) error {
	steps, err := a.validSteps(e)
	if err != nil {
		return err
	}
	for _, s := range steps {
		if err := a.pld.add(s); err != nil {
			return fmt.Errorf("PLD accountant: %w", err)
		}
	}
	a.sampling = mergeSampling(a.sampling, samplingOf(e))
	return nil
}

// validSteps checks e and returns its PLD steps, each valid under the adjacency.
func (a *PLDAccountant) validSteps(e Event) ([]PLDStep, error) {
	if err := checkEvent(e); err != nil {
		return nil, err
	}
	if err := checkAdjacency(a.pld.Adjacency); err != nil {
		return nil, err
	}
	var steps []PLDStep
	if err := a.steps(e, 1, &steps); err != nil {
		return nil, err
	}
	for _, s := range steps {
		if err := validateStep(a.pld.Adjacency, s); err != nil {
			return nil, fmt.Errorf("PLD accountant: %w", err)
		}
	}
	return steps, nil
}

func (a *PLDAccountant) steps(e Event, count int, out *[]PLDStep) error {
	switch ev := e.(type) {
	case GaussianEvent:
		*out = append(*out, PLDStep{Mechanism: PLDGaussian, Q: 1, Sigma: ev.NoiseMultiplier, Steps: count})
	case PoissonSampledEvent:
		*out = append(*out, PLDStep{Mechanism: PLDPoissonGaussian, Q: ev.Q, Sigma: ev.Event.NoiseMultiplier, Steps: count})
	case SampledWithoutReplacementEvent:
		*out = append(*out, PLDStep{Mechanism: PLDUniformGaussian, Q: ev.Q, Sigma: ev.Event.NoiseMultiplier, Steps: count})
	case ShuffledEpochEvent:
		if a.Shuffle == ShufflePoissonApprox {
			*out = append(*out, PLDStep{Mechanism: PLDPoissonGaussian, Q: ev.Q, Sigma: ev.Event.NoiseMultiplier, Steps: count * ev.Steps})
		} else {
			*out = append(*out, PLDStep{Mechanism: PLDGaussian, Q: 1, Sigma: ev.Event.NoiseMultiplier, Steps: count})
		}
	case SelfComposedEvent:
		return a.steps(ev.Event, count*ev.Count, out)
	case ComposedEvent:
		for _, x := range ev.Events {
			if err := a.steps(x, count, out); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("unsupported privacy event %T", e)
	}
	return nil
}
