package accounting

import (
	"errors"
	"fmt"
	"math"
)

// Accountant is a privacy accountant in dp_accounting's shape: events are composed
// into it, and it answers ε(δ) and δ(ε) for everything composed so far under its
// adjacency. RDPAccountant and PLDAccountant implement it; NewReport, RunningEpsilon,
// EpsilonOf and CalibrateNoise reach both through it, so that train's report and the
// attacks' calibration are the same computation.
//
// Noise multipliers in events follow the σ/c convention (NoiseMultiplier): the
// Gaussian noise's standard deviation over the per-record L2 sensitivity under
// add-remove (the clipped-gradient bound c·C).
type Accountant interface {
	// Name is the accountant as reports spell it: AccountantRDP or AccountantPLD.
	Name() string
	// Supports says whether the accountant can give ε and δ for e under its
	// adjacency (and shuffle accounting): nil when it can, otherwise why not — an
	// unknown event kind, a sampling the adjacency does not define, or one the
	// accountant has no proven bound for. dp_accounting's supports, with the reason.
	Supports(e Event) error
	// Compose adds e (validated first; on error the accountant is unchanged).
	Compose(e Event) error
	// Epsilon is ε at δ of the composition.
	Epsilon(delta float64) (EpsilonBound, error)
	// Delta is δ at ε of the composition.
	Delta(eps float64) (DeltaBound, error)
}

// NoiseMultiplier is the convention every privacy event and accountant uses: the
// noise standard deviation over the add-remove L2 sensitivity of one record. DP-SGD
// adds N(0, σ²C²) to sums of clipped gradients of norm ≤ c·C (c = 1 for hard
// clipping, ≈ 1.115 for smooth clipping), so its noise multiplier is σ/c; σ itself
// is the "noise scale" of the trainer's flags and configs.
func NoiseMultiplier(sigma, clipConstant float64) float64 { return sigma / clipConstant }

// HoldsFor is what an accountant's ε or δ holds for.
type HoldsFor struct {
	Accountant string    `json:"accountant"` // AccountantRDP or AccountantPLD
	Adjacency  Adjacency `json:"adjacency"`
	// Sampling of the composed events: poisson, uniform, shuffle, none (unsampled
	// Gaussian releases), mixed, or "" when nothing was composed.
	Sampling string `json:"sampling"`
	// Shuffle is how shuffled epochs were accounted (only when Sampling is shuffle
	// or mixed).
	Shuffle string `json:"shuffle_accounting,omitempty"`
	// Order and Conversion (RDP): the optimal Rényi order and the RDP → (ε, δ)
	// conversion.
	Order      float64 `json:"order,omitempty"`
	Conversion string  `json:"conversion,omitempty"`
	// Interval (PLD): the discretisation interval of the privacy loss.
	Interval float64 `json:"interval,omitempty"`
}

// EpsilonBound is an accountant's ε and what it holds for.
type EpsilonBound struct {
	// Epsilon is a proven upper bound on ε at Delta (PLD: the pessimistic
	// discretisation).
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
	// Lower (PLD only) is the optimistic discretisation's ε: the exact ε of the
	// dominating pairs is ≥ Lower. Nil for RDP.
	Lower *float64 `json:"epsilon_lower,omitempty"`
	HoldsFor
}

// DeltaBound is an accountant's δ at Epsilon and what it holds for.
type DeltaBound struct {
	Delta   float64  `json:"delta"` // proven upper bound
	Epsilon float64  `json:"epsilon"`
	Lower   *float64 `json:"delta_lower,omitempty"` // PLD: the exact δ is ≥ this
	HoldsFor
}

// NewAccountant returns an empty accountant by name (AccountantRDP with the
// default orders and the improved conversion, or AccountantPLD with the default
// discretisation) under adj, accounting shuffled epochs as shuffle says.
func NewAccountant(name string, adj Adjacency, shuffle ShuffleAccounting) (Accountant, error) {
	if err := checkAdjacency(adj); err != nil {
		return nil, err
	}
	switch name {
	case AccountantRDP:
		return NewRDPAccountant(adj, shuffle, nil), nil
	case AccountantPLD:
		return NewPLDAccountant(adj, shuffle, nil), nil
	}
	return nil, fmt.Errorf("unknown accountant %q (want %s or %s)", name, AccountantRDP, AccountantPLD)
}

// Sampling names of EpsilonBound.Sampling beyond Sampling's own.
const (
	samplingNone  = "none"
	samplingMixed = "mixed"
)

// samplingOf names the sampling of an event tree ("" when it holds no release).
func samplingOf(e Event) string {
	switch ev := e.(type) {
	case GaussianEvent:
		return samplingNone
	case PoissonSampledEvent:
		return SamplingPoisson.String()
	case SampledWithoutReplacementEvent:
		return SamplingUniform.String()
	case ShuffledEpochEvent:
		return SamplingShuffle.String()
	case SelfComposedEvent:
		return samplingOf(ev.Event)
	case ComposedEvent:
		s := ""
		for _, x := range ev.Events {
			s = mergeSampling(s, samplingOf(x))
		}
		return s
	}
	return ""
}

// mergeSampling is the sampling of two compositions in sequence.
func mergeSampling(a, b string) string {
	switch {
	case a == "" || a == b:
		return b
	case b == "":
		return a
	}
	return samplingMixed
}

// shuffleName is EpsilonBound.Shuffle for a composition's sampling.
func shuffleName(sampling string, sh ShuffleAccounting) string {
	if sampling == SamplingShuffle.String() || sampling == samplingMixed {
		return sh.String()
	}
	return ""
}

var (
	_ Accountant = (*RDPAccountant)(nil)
	_ Accountant = (*PLDAccountant)(nil)
)

// Name is AccountantRDP.
func (a *RDPAccountant) Name() string { return AccountantRDP }

// Supports is nil when RDP gives ε for e under the accountant's adjacency: every
// valid event, except Poisson-sampled steps under replace-one (only their order-2
// bound is proven; Compose still accepts them for Order2) and fixed-size sampling
// under add-remove.
func (a *RDPAccountant) Supports(e Event) error {
	if err := checkEvent(e); err != nil {
		return err
	}
	if err := checkAdjacency(a.Adjacency); err != nil {
		return err
	}
	if a.Adjacency == AddRemove && hasUniform(e) {
		return errors.New("uniform (fixed-size) subsampling is not defined under add/remove adjacency (the dataset size changes): use replace-one")
	}
	if a.Adjacency == ReplaceOne && hasPoisson(e, a.Shuffle) {
		return errRDPReplaceOnePoisson
	}
	return nil
}

var errRDPReplaceOnePoisson = errors.New("RDP ε under replace-one adjacency with Poisson sampling is not available (only the order-2 bound is proven): use the PLD accountant")

// hasPoisson reports whether e holds a Poisson-sampled step (shuffled epochs count
// when they are accounted as Poisson).
func hasPoisson(e Event, sh ShuffleAccounting) bool {
	switch ev := e.(type) {
	case PoissonSampledEvent:
		return ev.Q > 0
	case ShuffledEpochEvent:
		return sh == ShufflePoissonApprox && ev.Q > 0
	case SelfComposedEvent:
		return ev.Count > 0 && hasPoisson(ev.Event, sh)
	case ComposedEvent:
		for _, x := range ev.Events {
			if hasPoisson(x, sh) {
				return true
			}
		}
	}
	return false
}

// hasUniform reports whether e holds a fixed-size sampled step.
func hasUniform(e Event) bool {
	switch ev := e.(type) {
	case SampledWithoutReplacementEvent:
		return true
	case SelfComposedEvent:
		return hasUniform(ev.Event)
	case ComposedEvent:
		for _, x := range ev.Events {
			if hasUniform(x) {
				return true
			}
		}
	}
	return false
}

// Epsilon returns ε at δ, minimised over the orders.
func (a *RDPAccountant) Epsilon(delta float64) (EpsilonBound, error) {
	if a.partial {
		return EpsilonBound{}, errRDPReplaceOnePoisson
	}
	eps, order, err := a.rdp.Epsilon(delta, a.Conversion)
	if err != nil {
		return EpsilonBound{}, err
	}
	return EpsilonBound{Epsilon: eps, Delta: delta, HoldsFor: a.holdsFor(order)}, nil
}

// Delta returns δ at ε, minimised over the orders (the inverse of Epsilon's
// conversion at each order).
func (a *RDPAccountant) Delta(eps float64) (DeltaBound, error) {
	if a.partial {
		return DeltaBound{}, errRDPReplaceOnePoisson
	}
	if err := a.rdp.validate(); err != nil {
		return DeltaBound{}, err
	}
	d, order, err := deltaFrom(a.rdp.Orders, a.rdp.Values, eps, a.Conversion)
	if err != nil {
		return DeltaBound{}, err
	}
	return DeltaBound{Delta: d, Epsilon: eps, HoldsFor: a.holdsFor(order)}, nil
}

// holdsFor labels the accountant's numbers (order: the optimal one).
func (a *RDPAccountant) holdsFor(order float64) HoldsFor {
	return HoldsFor{Accountant: AccountantRDP, Adjacency: a.Adjacency, Sampling: a.sampling,
		Shuffle: shuffleName(a.sampling, a.Shuffle), Order: order, Conversion: a.Conversion.String()}
}

// deltaFrom is the δ at eps of per-order RDP values and its optimal order: at each
// order the δ that epsilonFrom's conversion turns into eps, capped by 1.
func deltaFrom(orders, values []float64, eps float64, conv Conversion) (float64, float64, error) {
	if math.IsNaN(eps) || math.IsInf(eps, 0) || eps < 0 {
		return 0, 0, fmt.Errorf("epsilon = %v must be finite and ≥ 0", eps)
	}
	if err := checkConversion(values, orders, conv); err != nil {
		return 0, 0, err
	}
	best, bestOrder := 0.0, math.NaN() // log δ
	for k, a := range orders {
		v := values[k]
		var ld float64
		switch conv {
		case ConversionImproved:
			// δ ≥ √(1 − e^{−RDP}) gives (0, δ)-DP (epsilonFrom's first case).
			ld = 0.5 * math.Log(-math.Expm1(-v))
			if a > 1.01 {
				ld = math.Min(ld, (a-1)*(v+math.Log1p(-1/a)-eps)-math.Log(a))
			}
		case ConversionClassic:
			ld = (a - 1) * (v - eps)
		}
		if ld < best || math.IsNaN(bestOrder) && ld <= best {
			best, bestOrder = ld, a
		}
	}
	if math.IsNaN(bestOrder) {
		return 1, math.NaN(), nil
	}
	return math.Exp(best), bestOrder, nil
}

// Name is AccountantPLD.
func (a *PLDAccountant) Name() string { return AccountantPLD }

// Supports is nil when the PLD gives ε for e under the accountant's adjacency:
// every valid event, except fixed-size sampling under add-remove.
func (a *PLDAccountant) Supports(e Event) error {
	_, err := a.validSteps(e)
	return err
}

// Epsilon returns ε at δ: the pessimistic discretisation's (an upper bound), with
// the optimistic one as Lower.
func (a *PLDAccountant) Epsilon(delta float64) (EpsilonBound, error) {
	b, err := a.pld.Epsilon(delta)
	if err != nil {
		return EpsilonBound{}, err
	}
	lo := b.Lower
	return EpsilonBound{Epsilon: b.Upper, Delta: delta, Lower: &lo, HoldsFor: a.holdsFor()}, nil
}

// analyticEpsilon is ε at delta in closed form when the composed steps are Gaussian
// releases without subsampling (PLD.gaussianMu; ok false otherwise): the exact ε of
// the composed dominating pair, which the PLD's two discretisations bracket
// (Lower ≤ it ≤ Epsilon), by the analytic Gaussian mechanism (GaussianEpsilon).
func (a *PLDAccountant) analyticEpsilon(delta float64) (eps float64, ok bool, err error) {
	mu, ok := a.pld.gaussianMu()
	if !ok {
		return 0, false, nil
	}
	if eps, err = GaussianEpsilon(mu, delta); err != nil {
		return 0, false, err
	}
	return eps, true, nil
}

// Delta returns δ at ε (upper bound), with the optimistic one as Lower.
func (a *PLDAccountant) Delta(eps float64) (DeltaBound, error) {
	b, err := a.pld.Delta(eps)
	if err != nil {
		return DeltaBound{}, err
	}
	lo := b.Lower
	return DeltaBound{Delta: b.Upper, Epsilon: eps, Lower: &lo, HoldsFor: a.holdsFor()}, nil
}

// holdsFor labels the accountant's numbers, with the PLD's loss discretisation
// interval (0 when its config is invalid).
func (a *PLDAccountant) holdsFor() HoldsFor {
	h := HoldsFor{Accountant: AccountantPLD, Adjacency: a.pld.Adjacency, Sampling: a.sampling, Shuffle: shuffleName(a.sampling, a.Shuffle)}
	if cfg, err := a.pld.Config.resolved(); err == nil {
		h.Interval = cfg.Interval
	}
	return h
}
