package accounting

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
)

// Events describe what a training run released, the way dp_accounting's DpEvents do:
// the trainer emits them, and every accountant (RDP, PLD, the FIL factor κ) derives
// its numbers from the same events. Noise multipliers are relative to the per-record
// L2 sensitivity under add-remove (a clipped gradient of norm ≤ 1; with smooth
// clipping the trainer passes σ/c); replace-one doubles the sensitivity.

// Event is one privacy event: GaussianEvent, PoissonSampledEvent,
// SampledWithoutReplacementEvent, ShuffledEpochEvent, SelfComposedEvent or
// ComposedEvent.
type Event interface{ kind() string }

// GaussianEvent is one release of a sum with added N(0, (σ·sensitivity)²) noise.
type GaussianEvent struct{ NoiseMultiplier float64 }

// PoissonSampledEvent is a Gaussian release of a batch that holds each record
// independently with probability Q.
type PoissonSampledEvent struct {
	Q     float64
	Event GaussianEvent
}

// SampledWithoutReplacementEvent is a Gaussian release of a uniformly drawn subset of
// fixed size B of the N records (Q = B/N), drawn independently at every step.
type SampledWithoutReplacementEvent struct {
	Q     float64
	Event GaussianEvent
}

// ShuffledEpochEvent is one epoch of Steps Gaussian releases of consecutive batches of
// one random permutation (batch B, Q = B/N): every record is in at most one of them.
type ShuffledEpochEvent struct {
	Q     float64
	Steps int
	Event GaussianEvent
}

// SelfComposedEvent is Count repetitions of Event.
type SelfComposedEvent struct {
	Event Event
	Count int
}

// ComposedEvent is the events in order.
type ComposedEvent struct{ Events []Event }

func (GaussianEvent) kind() string                  { return "gaussian" }
func (PoissonSampledEvent) kind() string            { return "poisson_sampled" }
func (SampledWithoutReplacementEvent) kind() string { return "sampled_without_replacement" }
func (ShuffledEpochEvent) kind() string             { return "shuffled_epoch" }
func (SelfComposedEvent) kind() string              { return "self_composed" }
func (ComposedEvent) kind() string                  { return "composed" }

// ShuffleAccounting says how a ShuffledEpochEvent is accounted.
type ShuffleAccounting int

const (
	// ShuffleRigorous claims no amplification: an epoch is one Gaussian release of
	// each record (sensitivity 1 add-remove, 2 replace-one). A valid bound.
	ShuffleRigorous ShuffleAccounting = iota
	// ShufflePoissonApprox accounts each step as Poisson sampling at rate Q, the
	// customary approximation (the papers'); not a proven bound.
	ShufflePoissonApprox
)

// String names the shuffle accounting.
func (s ShuffleAccounting) String() string {
	if s == ShufflePoissonApprox {
		return "poisson-approximation"
	}
	return "no-amplification"
}

// checkEvent validates an event tree.
func checkEvent(e Event) error {
	switch ev := e.(type) {
	case GaussianEvent:
		if math.IsNaN(ev.NoiseMultiplier) || math.IsInf(ev.NoiseMultiplier, 0) || ev.NoiseMultiplier <= 0 {
			return fmt.Errorf("gaussian event: noise multiplier %v must be finite and > 0", ev.NoiseMultiplier)
		}
	case PoissonSampledEvent:
		if err := checkQSigma(ev.Q, ev.Event.NoiseMultiplier); err != nil {
			return fmt.Errorf("poisson-sampled event: %w", err)
		}
	case SampledWithoutReplacementEvent:
		if err := checkQSigma(ev.Q, ev.Event.NoiseMultiplier); err != nil {
			return fmt.Errorf("sampled-without-replacement event: %w", err)
		}
	case ShuffledEpochEvent:
		if err := checkQSigma(ev.Q, ev.Event.NoiseMultiplier); err != nil {
			return fmt.Errorf("shuffled-epoch event: %w", err)
		}
		if ev.Steps < 1 || float64(ev.Steps)*ev.Q > 1+1e-12 {
			return fmt.Errorf("shuffled-epoch event: %d steps of rate %v do not fit in one epoch", ev.Steps, ev.Q)
		}
	case SelfComposedEvent:
		if ev.Count < 0 {
			return fmt.Errorf("self-composed event: count %d must be ≥ 0", ev.Count)
		}
		return checkEvent(ev.Event)
	case ComposedEvent:
		for i, x := range ev.Events {
			if err := checkEvent(x); err != nil {
				return fmt.Errorf("composed event %d: %w", i, err)
			}
		}
	case nil:
		return errors.New("nil privacy event")
	default:
		return fmt.Errorf("unsupported privacy event %T", e)
	}
	return nil
}

// Ledger records a run's events in order, merging repeats of the same event into one
// SelfComposedEvent, so that a run of T identical steps is one entry. It is what the
// trainer checkpoints and what its ε is derived from.
type Ledger struct{ Events []Event }

// Add appends count repetitions of e (merged with the last entry when equal).
func (l *Ledger) Add(e Event, count int) error {
	if count < 0 {
		return fmt.Errorf("ledger: count %d must be ≥ 0", count)
	}
	if err := checkEvent(e); err != nil {
		return err
	}
	if count == 0 {
		return nil
	}
	if n := len(l.Events); n > 0 {
		if last, ok := l.Events[n-1].(SelfComposedEvent); ok && eventsEqual(last.Event, e) {
			last.Count += count
			l.Events[n-1] = last
			return nil
		}
	}
	l.Events = append(l.Events, SelfComposedEvent{Event: e, Count: count})
	return nil
}

// Event returns the whole ledger as one ComposedEvent.
func (l *Ledger) Event() ComposedEvent {
	return ComposedEvent{Events: append([]Event(nil), l.Events...)}
}

// Equal reports whether the two ledgers hold the same events in the same order
// (the same entries: Add merges repeats alike in both).
func (l Ledger) Equal(m Ledger) bool {
	return len(l.Events) == len(m.Events) && eventsEqual(ComposedEvent{l.Events}, ComposedEvent{m.Events})
}

// eventsEqual compares two event trees field by field.
func eventsEqual(a, b Event) bool {
	switch x := a.(type) {
	case GaussianEvent, PoissonSampledEvent, SampledWithoutReplacementEvent, ShuffledEpochEvent:
		return a == b // comparable structs of numbers; == also checks the kind
	case SelfComposedEvent:
		y, ok := b.(SelfComposedEvent)
		return ok && x.Count == y.Count && eventsEqual(x.Event, y.Event)
	case ComposedEvent:
		y, ok := b.(ComposedEvent)
		if !ok || len(x.Events) != len(y.Events) {
			return false
		}
		for i := range x.Events {
			if !eventsEqual(x.Events[i], y.Events[i]) {
				return false
			}
		}
		return true
	}
	return false
}

// eventJSON is the tagged JSON form of every event kind.
type eventJSON struct {
	Kind            string      `json:"kind"`
	NoiseMultiplier float64     `json:"noise_multiplier,omitempty"`
	Q               float64     `json:"q,omitempty"`
	Steps           int         `json:"steps,omitempty"`
	Count           int         `json:"count,omitempty"`
	Event           *eventJSON  `json:"event,omitempty"`
	Events          []eventJSON `json:"events,omitempty"`
}

func toJSON(e Event) (eventJSON, error) {
	j := eventJSON{}
	if e == nil {
		return j, errors.New("nil privacy event")
	}
	j.Kind = e.kind()
	switch ev := e.(type) {
	case GaussianEvent:
		j.NoiseMultiplier = ev.NoiseMultiplier
	case PoissonSampledEvent:
		j.Q, j.NoiseMultiplier = ev.Q, ev.Event.NoiseMultiplier
	case SampledWithoutReplacementEvent:
		j.Q, j.NoiseMultiplier = ev.Q, ev.Event.NoiseMultiplier
	case ShuffledEpochEvent:
		j.Q, j.Steps, j.NoiseMultiplier = ev.Q, ev.Steps, ev.Event.NoiseMultiplier
	case SelfComposedEvent:
		in, err := toJSON(ev.Event)
		if err != nil {
			return j, err
		}
		j.Count, j.Event = ev.Count, &in
	case ComposedEvent:
		j.Events = []eventJSON{}
		for _, x := range ev.Events {
			in, err := toJSON(x)
			if err != nil {
				return j, err
			}
			j.Events = append(j.Events, in)
		}
	}
	return j, nil
}

func fromJSON(j eventJSON) (Event, error) {
	g := GaussianEvent{NoiseMultiplier: j.NoiseMultiplier}
	var e Event
	switch j.Kind {
	case "gaussian":
		e = g
	case "poisson_sampled":
		e = PoissonSampledEvent{Q: j.Q, Event: g}
	case "sampled_without_replacement":
		e = SampledWithoutReplacementEvent{Q: j.Q, Event: g}
	case "shuffled_epoch":
		e = ShuffledEpochEvent{Q: j.Q, Steps: j.Steps, Event: g}
	case "self_composed":
		if j.Event == nil {
			return nil, errors.New("self_composed event without its event")
		}
		in, err := fromJSON(*j.Event)
		if err != nil {
			return nil, err
		}
		e = SelfComposedEvent{Event: in, Count: j.Count}
	case "composed":
		c := ComposedEvent{}
		for _, x := range j.Events {
			in, err := fromJSON(x)
			if err != nil {
				return nil, err
			}
			c.Events = append(c.Events, in)
		}
		e = c
	default:
		return nil, fmt.Errorf("unknown privacy event kind %q", j.Kind)
	}
	return e, checkEvent(e)
}

// MarshalJSON writes the ledger as a list of tagged events.
func (l Ledger) MarshalJSON() ([]byte, error) {
	out := []eventJSON{}
	for _, e := range l.Events {
		j, err := toJSON(e)
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads and validates a ledger.
func (l *Ledger) UnmarshalJSON(b []byte) error {
	var in []eventJSON
	if err := json.Unmarshal(b, &in); err != nil {
		return fmt.Errorf("privacy ledger: %w", err)
	}
	l.Events = nil
	for i, j := range in {
		e, err := fromJSON(j)
		if err != nil {
			return fmt.Errorf("privacy ledger entry %d: %w", i, err)
		}
		l.Events = append(l.Events, e)
	}
	return nil
}

// RDPAccountant composes events into Rényi DP under one adjacency.
//
// Under add-remove it is exact for Poisson sampling (Mironov, Talwar, Zhang) at every
// order. Under replace-one it uses, at every order, the Zhu–Dong–Wang dominating pair
// for sampling without replacement (the sampled Gaussian at σ/2) and the Gaussian with
// sensitivity 2 for unamplified releases; for Poisson sampling it has only the proven
// order-2 bound (Order2StepRDP), so Epsilon fails and Order2 works.
type RDPAccountant struct {
	Adjacency  Adjacency
	Shuffle    ShuffleAccounting
	Conversion Conversion
	rdp        *RDP
	order2     float64 // proven order-2 bound, always maintained
	partial    bool    // some event has only an order-2 bound
	sampling   string  // of the composed events (samplingOf)
}

// NewRDPAccountant returns an empty accountant over orders (DefaultOrders if nil).
func NewRDPAccountant(adj Adjacency, shuffle ShuffleAccounting, orders []float64) *RDPAccountant {
	return &RDPAccountant{Adjacency: adj, Shuffle: shuffle, rdp: NewRDP(orders)}
}

// Compose adds an event (validated first; on error the accountant is unchanged).
func (a *RDPAccountant) Compose(e Event) error {
	if err := checkEvent(e); err != nil {
		return err
	}
	if err := a.rdp.validate(); err != nil {
		return err
	}
	save := append([]float64(nil), a.rdp.Values...)
	o2, partial := a.order2, a.partial
	if err := a.compose(e, 1); err != nil {
		copy(a.rdp.Values, save)
		a.order2, a.partial = o2, partial
		return err
	}
	a.sampling = mergeSampling(a.sampling, samplingOf(e))
	return nil
}

func (a *RDPAccountant) compose(e Event, count int) error {
	sens := a.Adjacency.sensitivity()
	switch ev := e.(type) {
	case GaussianEvent:
		return a.add(1, ev.NoiseMultiplier/sens, count, math.Inf(1))
	case PoissonSampledEvent:
		o2, err := Order2StepRDP(a.Adjacency, SamplingPoisson, ev.Q, ev.Event.NoiseMultiplier)
		if err != nil {
			return err
		}
		if a.Adjacency == ReplaceOne {
			a.order2 += float64(count) * o2
			a.partial = a.partial || (ev.Q > 0 && count > 0)
			return nil
		}
		return a.add(ev.Q, ev.Event.NoiseMultiplier, count, o2)
	case SampledWithoutReplacementEvent:
		o2, err := Order2StepRDP(a.Adjacency, SamplingUniform, ev.Q, ev.Event.NoiseMultiplier)
		if err != nil {
			return err
		}
		return a.add(ev.Q, ev.Event.NoiseMultiplier/2, count, o2)
	case ShuffledEpochEvent:
		if a.Shuffle == ShufflePoissonApprox {
			return a.compose(PoissonSampledEvent{Q: ev.Q, Event: ev.Event}, count*ev.Steps)
		}
		return a.compose(ev.Event, count)
	case SelfComposedEvent:
		return a.compose(ev.Event, count*ev.Count)
	case ComposedEvent:
		for _, x := range ev.Events {
			if err := a.compose(x, count); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("unsupported privacy event %T", e)
}

// add composes count sampled-Gaussian steps (q, σ) at every order; o2 is the
// order-2 value to use for Theorem 1 (+Inf: take it from the composed vector).
func (a *RDPAccountant) add(q, sigma float64, count int, o2 float64) error {
	if err := a.rdp.Compose(q, sigma, count); err != nil {
		return err
	}
	if math.IsInf(o2, 1) {
		var err error
		if o2, err = SampledGaussianRDP(q, sigma, 2); err != nil {
			return err
		}
	}
	a.order2 += float64(count) * o2
	return nil
}

// Order2 returns the composed proven order-2 RDP bound (ε₂ of Guo et al.'s Theorem 1
// when the adjacency is replace-one).
func (a *RDPAccountant) Order2() float64 { return a.order2 }

// KappaOf returns the FIL subsampling factor κ (Kappa) for one step event: a
// Poisson-sampled or sampled-without-replacement Gaussian step gets
// κ = q/(q + (1−q)e^{−ε₀}) (amplification by subsampling of the step's replace-one
// (ε₀, δ_f) guarantee; the same form holds for both samplings, Balle, Barthe &
// Gaboardi 2018); a shuffled step gets κ = 1 under ShuffleRigorous (no amplification)
// and the Poisson value under ShufflePoissonApprox; an unsampled Gaussian gets 1.
// The event's noise multiplier already includes the clip constant c.
func KappaOf(e Event, deltaF float64, shuffle ShuffleAccounting) (float64, error) {
	if err := checkEvent(e); err != nil {
		return 0, err
	}
	switch ev := e.(type) {
	case GaussianEvent:
		return 1, nil
	case PoissonSampledEvent:
		return Kappa(KappaParams{Q: ev.Q, Sigma: ev.Event.NoiseMultiplier, ClipConstant: 1, DeltaF: deltaF})
	case SampledWithoutReplacementEvent:
		return Kappa(KappaParams{Q: ev.Q, Sigma: ev.Event.NoiseMultiplier, ClipConstant: 1, DeltaF: deltaF})
	case ShuffledEpochEvent:
		if shuffle == ShufflePoissonApprox {
			return Kappa(KappaParams{Q: ev.Q, Sigma: ev.Event.NoiseMultiplier, ClipConstant: 1, DeltaF: deltaF})
		}
		return 1, nil
	case SelfComposedEvent:
		return KappaOf(ev.Event, deltaF, shuffle)
	}
	return 0, fmt.Errorf("κ is defined for one step's event, not %T", e)
}

// MarshalBinary is the JSON form (so the ledger can sit in gob checkpoints).
func (l Ledger) MarshalBinary() ([]byte, error) { return l.MarshalJSON() }

// UnmarshalBinary reads the JSON form.
func (l *Ledger) UnmarshalBinary(b []byte) error { return l.UnmarshalJSON(b) }
