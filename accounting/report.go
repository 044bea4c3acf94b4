package accounting

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/dpfil/dpfil/internal/jsonfloat"
)

// DPSGD describes the releases of a DP-SGD run for the accountants: T steps with
// batches of nominal size B drawn from N records by Sampling, each adding Gaussian
// noise with NoiseMultiplier σ/c relative to the clipped-gradient bound c·C.
type DPSGD struct {
	Sampling        Sampling
	N, Batch, Steps int
	NoiseMultiplier float64
}

// LedgerAt is the run's Ledger at noise multiplier nm (CalibrateNoise's argument).
func (d DPSGD) LedgerAt(nm float64) (Ledger, error) {
	d.NoiseMultiplier = nm
	return d.Ledger()
}

// Q is the sampling rate B/N.
func (d DPSGD) Q() float64 { return float64(d.Batch) / float64(d.N) }

func (d DPSGD) check() error {
	if d.N < 1 || d.Batch < 1 || d.Batch > d.N {
		return fmt.Errorf("DP-SGD: batch %d must be in [1, N = %d]", d.Batch, d.N)
	}
	if d.Steps < 0 {
		return fmt.Errorf("DP-SGD: steps %d must be ≥ 0", d.Steps)
	}
	if err := checkQSigma(d.Q(), d.NoiseMultiplier); err != nil {
		return fmt.Errorf("DP-SGD: %w", err)
	}
	if d.Sampling < SamplingPoisson || d.Sampling > SamplingShuffle {
		return fmt.Errorf("DP-SGD: unknown sampling %v", d.Sampling)
	}
	return nil
}

// StepEvent is the event that step t (0-based) starts: one per step for Poisson and
// uniform sampling; for shuffled batches one ShuffledEpochEvent at the first step of
// each epoch (⌊N/B⌋ batches of one permutation, the remainder dropped) and none at
// the other steps.
func (d DPSGD) StepEvent(t int) (Event, bool) {
	g := GaussianEvent{NoiseMultiplier: d.NoiseMultiplier}
	switch d.Sampling {
	case SamplingPoisson:
		return PoissonSampledEvent{Q: d.Q(), Event: g}, true
	case SamplingUniform:
		return SampledWithoutReplacementEvent{Q: d.Q(), Event: g}, true
	}
	per := d.N / d.Batch
	if t%per != 0 {
		return nil, false
	}
	return ShuffledEpochEvent{Q: d.Q(), Steps: min(per, d.Steps-t), Event: g}, true
}

// Ledger is the ledger of the whole run, equal to the one the trainer emits step by
// step (StepEvent), built in O(1): one self-composed step event, or for shuffled
// batches the full epochs and the last, partial one.
func (d DPSGD) Ledger() (Ledger, error) {
	var l Ledger
	if err := d.check(); err != nil {
		return l, err
	}
	if d.Steps == 0 {
		return l, nil
	}
	e, _ := d.StepEvent(0)
	if d.Sampling != SamplingShuffle {
		err := l.Add(e, d.Steps) // before l is read: Go leaves the order of `return l, l.Add(…)` open
		return l, err
	}
	per := d.N / d.Batch
	if full := d.Steps / per; full > 0 {
		if err := l.Add(ShuffledEpochEvent{Q: d.Q(), Steps: per, Event: e.(ShuffledEpochEvent).Event}, full); err != nil {
			return l, err
		}
	}
	if r := d.Steps % per; r > 0 {
		last, _ := d.StepEvent(d.Steps - r)
		err := l.Add(last, 1)
		return l, err
	}
	return l, nil
}

// DefaultAdjacency is the relation ε is reported under for a sampling: the usual
// add-remove, except for fixed-size subsets drawn without replacement, which are
// defined (and accounted) under replace-one.
func DefaultAdjacency(s Sampling) Adjacency {
	if s == SamplingUniform {
		return ReplaceOne
	}
	return AddRemove
}

// Accountant names (ReportOptions.Accountant).
const (
	AccountantAuto = "auto" // the tighter of PLD and RDP (both valid upper bounds)
	AccountantPLD  = "pld"
	AccountantRDP  = "rdp"
)

// ReportOptions configures NewReport. The zero value of each field is its default.
type ReportOptions struct {
	Delta      float64    // δ for ε (required)
	Accountant string     // auto (default), pld or rdp
	Adjacency  *Adjacency // nil: DefaultAdjacency of the sampling
	// FILDelta is κ's δ_f; 0 leaves κ out of the report.
	FILDelta float64
	// ClipConstant c turns the events' σ/c back into σ for κ's ε₀ (default 1).
	ClipConstant float64
}

// Report is what a DP-SGD run's privacy numbers hold for. Every ε names its
// accountant, adjacency and sampling; all are derived from Events.
type Report struct {
	// Epsilon at Delta: a proven upper bound from Accountant under Adjacency for the
	// run's Sampling (shuffled batches: claiming no amplification).
	Epsilon    float64 `json:"epsilon"`
	Delta      float64 `json:"delta"`
	Accountant string  `json:"accountant"`
	// Adjacency is "add-remove" or "replace-one", or for shuffled batches under
	// add-remove "zero-out": the batches stay fixed and the record's gradient is
	// replaced by zero (AdjacencyMeaning says so), which is what the per-epoch
	// Gaussian accounting of a shuffled run bounds.
	Adjacency        string `json:"adjacency"`
	AdjacencyMeaning string `json:"adjacency_meaning,omitempty"`
	Sampling         string `json:"sampling"`
	// ShuffleAccounting is "no-amplification" for shuffled batches.
	ShuffleAccounting string `json:"shuffle_accounting,omitempty"`

	EpsilonPLD      *float64 `json:"epsilon_pld"`       // PLD, pessimistic discretisation (upper bound); null if not computed
	EpsilonPLDLower *float64 `json:"epsilon_pld_lower"` // PLD, optimistic discretisation: the exact ε is ≥ this
	EpsilonRDP      *float64 `json:"epsilon_rdp"`       // RDP upper bound; null where RDP has none (replace-one Poisson)
	EpsilonRDPOrder *float64 `json:"epsilon_rdp_order"`
	// PLDInterval is the discretisation interval of the PLD's privacy loss: 1e-4,
	// coarser for very long runs whose composition would need an FFT of more than 2^21
	// points (the pessimistic ε stays a rigorous upper bound; EpsilonPLDLower brackets
	// the discretisation error).
	PLDInterval float64 `json:"pld_interval,omitempty"`
	// PLDUnavailable says why the PLD gave no ε (auto then reports RDP's).
	PLDUnavailable string `json:"pld_unavailable,omitempty"`
	Conversion     string `json:"conversion"` // RDP → (ε, δ)
	Orders         string `json:"orders"`     // RDP orders
	// EpsilonPoissonApprox (shuffle only) accounts each shuffled step as Poisson
	// sampling at q = B/N, as the papers did: an approximation, not a proven bound.
	EpsilonPoissonApprox *float64 `json:"epsilon_poisson_approximation,omitempty"`

	Theorem1 Theorem1Report `json:"theorem1"`

	// Kappa is the FIL factor κ under the same sampling (1 for shuffled batches: no
	// amplification); KappaPoissonApprox (shuffle only) is the approximation's. Omitted
	// when ReportOptions.FILDelta is 0.
	Kappa              *float64 `json:"kappa,omitempty"`
	KappaEpsilon0      *float64 `json:"kappa_epsilon0,omitempty"` // one step's ε₀ at δ_f
	KappaMethod        string   `json:"kappa_method,omitempty"`
	KappaPoissonApprox *float64 `json:"kappa_poisson_approximation,omitempty"`

	Events Ledger `json:"events"`
}

// Theorem1Report is Guo et al.'s Theorem 1 input: the order-2 RDP of the whole run
// under replace-one adjacency, which the theorem's proof needs, and the add-remove
// Poisson value the paper's code used (for comparison only: not a valid bound).
type Theorem1Report struct {
	Adjacency        string  `json:"adjacency"` // replace-one
	RDPOrder2        float64 `json:"rdp_order2"`
	MSEBoundRDP      float64 `json:"mse_bound_rdp"`
	PaperRDPOrder2   float64 `json:"paper_rdp_order2_add_remove"`
	PaperMSEBoundRDP float64 `json:"paper_mse_bound_rdp_add_remove"`
	// RDPOrder2Antipodal is the exact order-2 Rényi divergence of the run for the
	// antipodal pair of records (clipped gradients u and −u, all others 0;
	// Order2AntipodalOf) and MSEBoundRDPAntipodal the Theorem 1 bound it would give
	// (null: +∞). Exact for that pair, not proven to be the worst case: it shows how
	// loose the proven RDPOrder2 is, it is not a bound. Nil when it could not be
	// computed (AntipodalNote says why).
	RDPOrder2Antipodal   *float64 `json:"rdp_order2_antipodal_exact"`
	MSEBoundRDPAntipodal *float64 `json:"mse_bound_rdp_antipodal_exact"`
	AntipodalNote        string   `json:"antipodal_note"`
}

// antipodalNote labels Theorem1Report.RDPOrder2Antipodal.
const antipodalNote = "exact order-2 Rényi divergence for the antipodal replace-one pair " +
	"(clipped gradients u and −u, all other records' gradients 0), by adaptive quadrature; " +
	"not proven to be the worst case, so not a bound: rdp_order2 is the proven one"

// ledgerSampling returns the sampling of the ledger's step events (an error when
// they mix samplings) and its first step event.
func ledgerSampling(l Ledger) (Sampling, Event, error) {
	var s Sampling
	var first Event
	var walk func(e Event) error
	set := func(x Sampling, e Event) error {
		if first != nil && x != s {
			return errors.New("ledger mixes samplings")
		}
		if first == nil {
			first = e
		}
		s = x
		return nil
	}
	walk = func(e Event) error {
		switch ev := e.(type) {
		case PoissonSampledEvent:
			return set(SamplingPoisson, ev)
		case SampledWithoutReplacementEvent:
			return set(SamplingUniform, ev)
		case ShuffledEpochEvent:
			return set(SamplingShuffle, ev)
		case SelfComposedEvent:
			return walk(ev.Event)
		case ComposedEvent:
			for _, x := range ev.Events {
				if err := walk(x); err != nil {
					return err
				}
			}
		case GaussianEvent:
			return errors.New("ledger holds an unsampled Gaussian release; report it with the RDP or PLD accountant directly")
		}
		return nil
	}
	if err := walk(l.Event()); err != nil {
		return 0, nil, err
	}
	if first == nil {
		return 0, nil, errors.New("empty privacy ledger")
	}
	return s, first, nil
}

// epsilons are the ε of an event by the RDP and the PLD accountant; nil where
// unavailable.
type epsilons struct{ rdp, pld *EpsilonBound }

// reportMaxFFT caps the FFT length of a report's PLD: a composition that needs more
// (very long runs, large ε) is recomposed on a proportionally coarser grid, which
// keeps ε a rigorous upper bound (the pessimistic discretisation, bracketed by
// epsilon_pld_lower) at a cost of a second or two instead of minutes.
const reportMaxFFT = 1 << 21

// composedEpsilon composes e into a and returns its ε at delta.
func composedEpsilon(a Accountant, e Event, delta float64) (EpsilonBound, error) {
	if err := a.Compose(e); err != nil {
		return EpsilonBound{}, err
	}
	return a.Epsilon(delta)
}

// epsilonsOf composes the event under adj/sh and returns its ε by both accountants
// (the PLD only when pld is set; an RDP that has no ε here is left nil).
func epsilonsOf(e Event, adj Adjacency, sh ShuffleAccounting, delta float64, pld bool) (epsilons, error) {
	var out epsilons
	ra := NewRDPAccountant(adj, sh, nil)
	if err := ra.Compose(e); err != nil {
		return out, err
	}
	if b, err := ra.Epsilon(delta); err == nil {
		out.rdp = &b
	}
	if !pld {
		return out, nil
	}
	h := DefaultPLDInterval
	for {
		b, err := composedEpsilon(NewPLDAccountant(adj, sh, &PLDConfig{Interval: h, MaxPoints: reportMaxFFT}), e, delta)
		var big *pldTooLargeError
		if errors.As(err, &big) && h < 0.05 {
			h = math.Min(0.05, h*1.25*float64(big.points)/reportMaxFFT)
			continue
		}
		if err != nil {
			return out, err
		}
		out.pld = &b
		return out, nil
	}
}

// pick is the ε the accountant acct reports: rdp: RDP's; pld: the PLD's; auto: the
// smaller of both (ties: the PLD's). Nil when that accountant has none.
func (es epsilons) pick(acct string) *EpsilonBound {
	switch {
	case acct == AccountantRDP:
		return es.rdp
	case acct == AccountantPLD:
		return es.pld
	case es.rdp != nil && (es.pld == nil || es.rdp.Epsilon < es.pld.Epsilon):
		return es.rdp
	}
	return es.pld
}

// errRDPNoBound is the RDP accountant's answer where it has no ε.
var errRDPNoBound = errors.New("the RDP accountant has no ε bound under replace-one adjacency with Poisson sampling; use the PLD accountant")

// reportSetup is what ReportOptions resolve to for a ledger.
type reportSetup struct {
	acct     string
	adj      Adjacency
	sampling Sampling
	first    Event // the first step event
}

// resolve checks opt and resolves its defaults for the ledger l.
func (opt ReportOptions) resolve(l Ledger) (reportSetup, error) {
	var r reportSetup
	if err := checkDelta(opt.Delta); err != nil {
		return r, err
	}
	r.acct = opt.Accountant
	if r.acct == "" {
		r.acct = AccountantAuto
	}
	if r.acct != AccountantAuto && r.acct != AccountantPLD && r.acct != AccountantRDP {
		return r, fmt.Errorf("unknown accountant %q (want auto, pld or rdp)", r.acct)
	}
	var err error
	if r.sampling, r.first, err = ledgerSampling(l); err != nil {
		return r, err
	}
	r.adj = DefaultAdjacency(r.sampling)
	if opt.Adjacency != nil {
		r.adj = *opt.Adjacency
	}
	if r.sampling == SamplingUniform && r.adj == AddRemove {
		return r, errors.New("uniform (fixed-size, without replacement) sampling is accounted under replace-one adjacency only")
	}
	return r, nil
}

// epsilons returns the ledger's ε by both accountants as the report computes them
// (shuffled epochs without amplification): under auto, a PLD that cannot be
// composed leaves the RDP's, and pldErr says why.
func (r reportSetup) epsilons(ev Event, delta float64) (es epsilons, pldErr error, err error) {
	es, err = epsilonsOf(ev, r.adj, ShuffleRigorous, delta, r.acct != AccountantRDP)
	if err != nil && r.acct == AccountantAuto {
		// The PLD refuses extreme settings (e.g. a privacy-loss range too wide at tiny
		// noise); auto then reports the RDP bound, which is valid too.
		pldErr = err
		es, err = epsilonsOf(ev, r.adj, ShuffleRigorous, delta, false)
		if err == nil && es.rdp == nil {
			err = pldErr
		}
	}
	if err != nil {
		return es, nil, err
	}
	if es.pick(r.acct) == nil {
		return es, nil, errRDPNoBound
	}
	return es, pldErr, nil
}

// EpsilonOf is the ε that NewReport reports for the ledger (Report.Epsilon, with
// its accountant, adjacency and sampling): by opt.Accountant (auto: the tighter of
// the PLD and RDP), under opt.Adjacency or the sampling's default, shuffled epochs
// without amplification. It skips the rest of the report (Theorem 1, κ), so it is
// what calibrations and attacks call.
func EpsilonOf(l Ledger, opt ReportOptions) (EpsilonBound, error) {
	r, err := opt.resolve(l)
	if err != nil {
		return EpsilonBound{}, err
	}
	es, _, err := r.epsilons(l.Event(), opt.Delta)
	if err != nil {
		return EpsilonBound{}, err
	}
	return *es.pick(r.acct), nil
}

// ZeroOut is Report.Adjacency of a shuffled run accounted under add-remove.
const ZeroOut = "zero-out"

// zeroOutMeaning explains ZeroOut where the number is reported.
const zeroOutMeaning = "zero-out: the batches stay fixed and the record's gradient is replaced by zero " +
	"(add-remove read for shuffled batches, whose permutation depends on the dataset size)"

// NewReport derives a run's privacy report from its ledger.
func NewReport(l Ledger, opt ReportOptions) (*Report, error) {
	r, err := opt.resolve(l)
	if err != nil {
		return nil, err
	}
	acct, adj, s, first := r.acct, r.adj, r.sampling, r.first
	ev := l.Event()
	p := &Report{Delta: opt.Delta, Adjacency: adj.String(), Sampling: s.String(),
		Conversion: ConversionImproved.String(), Orders: "1.1, 1.2, …, 10.9, 11, …, 63, 128, 256, 512, 1024",
		Events: l}
	if s == SamplingShuffle {
		p.ShuffleAccounting = ShuffleRigorous.String()
		if adj == AddRemove {
			p.Adjacency, p.AdjacencyMeaning = ZeroOut, zeroOutMeaning
		}
	}
	es, pldErr, err := r.epsilons(ev, opt.Delta)
	if err != nil {
		return nil, err
	}
	if pldErr != nil {
		p.PLDUnavailable = pldErr.Error()
	}
	if b := es.rdp; b != nil {
		p.EpsilonRDP, p.EpsilonRDPOrder = &b.Epsilon, &b.Order
	}
	if b := es.pld; b != nil {
		p.EpsilonPLD, p.EpsilonPLDLower, p.PLDInterval = &b.Epsilon, b.Lower, b.Interval
	}
	chosen := es.pick(acct)
	p.Accountant, p.Epsilon = chosen.Accountant, chosen.Epsilon
	if s == SamplingShuffle {
		ea, err := epsilonsOf(ev, adj, ShufflePoissonApprox, opt.Delta, acct != AccountantRDP && p.EpsilonPLD != nil)
		if err != nil {
			return nil, fmt.Errorf("Poisson approximation: %w", err)
		}
		if b := ea.pick(AccountantAuto); b != nil {
			p.EpsilonPoissonApprox = &b.Epsilon
		}
	}
	if p.Theorem1, err = Theorem1Of(ev); err != nil {
		return nil, err
	}
	if opt.FILDelta != 0 {
		c := opt.ClipConstant
		if c == 0 {
			c = 1
		}
		k, err := KappaOf(first, opt.FILDelta, ShuffleRigorous)
		if err != nil {
			return nil, fmt.Errorf("κ: %w", err)
		}
		nm := noiseOf(first)
		e0, err := KappaEpsilon0(KappaParams{Sigma: nm * c, ClipConstant: c, DeltaF: opt.FILDelta})
		if err != nil {
			return nil, fmt.Errorf("κ: %w", err)
		}
		p.Kappa, p.KappaEpsilon0 = &k, &e0
		p.KappaMethod = "ε₀ from the analytic Gaussian mechanism (Balle & Wang 2018) at replace-one sensitivity 2cC"
		if s == SamplingShuffle {
			ka, err := KappaOf(first, opt.FILDelta, ShufflePoissonApprox)
			if err != nil {
				return nil, fmt.Errorf("κ: %w", err)
			}
			p.KappaPoissonApprox = &ka
		}
	}
	return p, nil
}

// RunningPLDInterval is the PLD discretisation interval of RunningEpsilon: 10× the
// report's, so that a progress update costs milliseconds; the pessimistic ε stays a
// rigorous upper bound and lies within about 1e-4 of the report's at usual settings.
const RunningPLDInterval = 10 * DefaultPLDInterval

// RunningEpsilon is ε at delta of the ledger of the steps so far, for progress
// reports: with the accountant the final report (NewReport) will use, under the
// sampling's default adjacency — auto: the tighter of the PLD (on the coarser grid
// RunningPLDInterval) and RDP; pld; rdp — so that the live ε and the summary's agree.
// It returns the accountant that gave ε ("pld" or "rdp"; RDP when the PLD cannot be
// composed under auto).
func RunningEpsilon(l Ledger, delta float64, accountant string) (float64, string, error) {
	s, _, err := ledgerSampling(l)
	if err != nil {
		return 0, "", err
	}
	adj, ev := DefaultAdjacency(s), l.Event()
	r, rerr := composedEpsilon(NewRDPAccountant(adj, ShuffleRigorous, nil), ev, delta)
	if accountant == AccountantRDP {
		return r.Epsilon, AccountantRDP, rerr
	}
	pa := NewPLDAccountant(adj, ShuffleRigorous, &PLDConfig{Interval: RunningPLDInterval})
	if err := pa.Compose(ev); err != nil {
		return 0, "", err
	}
	b, perr := pa.Epsilon(delta)
	switch {
	case perr != nil && (accountant == AccountantPLD || rerr != nil):
		return 0, "", perr
	case perr != nil:
		return r.Epsilon, AccountantRDP, nil
	case accountant != AccountantPLD && rerr == nil && r.Epsilon < b.Epsilon:
		return r.Epsilon, AccountantRDP, nil
	}
	return b.Epsilon, AccountantPLD, nil
}

func noiseOf(e Event) float64 {
	switch ev := e.(type) {
	case PoissonSampledEvent:
		return ev.Event.NoiseMultiplier
	case SampledWithoutReplacementEvent:
		return ev.Event.NoiseMultiplier
	case ShuffledEpochEvent:
		return ev.Event.NoiseMultiplier
	case GaussianEvent:
		return ev.NoiseMultiplier
	}
	return math.NaN()
}

// asPoisson rewrites every sampled step as a Poisson step: the accounting the paper's
// code used for its add-remove ε₂ (not a bound for other samplings).
func asPoisson(e Event) Event {
	switch ev := e.(type) {
	case SampledWithoutReplacementEvent:
		return PoissonSampledEvent{Q: ev.Q, Event: ev.Event}
	case SelfComposedEvent:
		return SelfComposedEvent{Event: asPoisson(ev.Event), Count: ev.Count}
	case ComposedEvent:
		out := ComposedEvent{}
		for _, x := range ev.Events {
			out.Events = append(out.Events, asPoisson(x))
		}
		return out
	}
	return e
}

// MarshalJSON writes an infinite MSE bound (no leakage) as null.
func (t Theorem1Report) MarshalJSON() ([]byte, error) {
	type alias Theorem1Report
	return json.Marshal(struct {
		alias
		MSEBoundRDP      *float64 `json:"mse_bound_rdp"`
		PaperMSEBoundRDP *float64 `json:"paper_mse_bound_rdp_add_remove"`
	}{alias(t), jsonfloat.Ptr(t.MSEBoundRDP), jsonfloat.Ptr(t.PaperMSEBoundRDP)})
}

// UnmarshalJSON reads a null MSE bound as +Inf.
func (t *Theorem1Report) UnmarshalJSON(b []byte) error {
	type alias Theorem1Report
	var in struct {
		alias
		MSEBoundRDP      *float64 `json:"mse_bound_rdp"`
		PaperMSEBoundRDP *float64 `json:"paper_mse_bound_rdp_add_remove"`
	}
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	*t = Theorem1Report(in.alias)
	t.MSEBoundRDP, t.PaperMSEBoundRDP = jsonfloat.Value(in.MSEBoundRDP, math.Inf(1)), jsonfloat.Value(in.PaperMSEBoundRDP, math.Inf(1))
	return nil
}
