package accounting

import (
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/dpfil/dpfil/internal/enumtext"
	"github.com/dpfil/dpfil/internal/golden"
	"gonum.org/v1/gonum/dsp/fourier"
)

// Privacy-loss-distribution (PLD) accounting of DP-SGD (docs/accounting.md, "PLD
// accountant").
//
// Each step is described by a dominating pair (P, Q) of one-dimensional
// distributions: a Gaussian N(Δ, σ²) against N(0, σ²), or a Poisson- or uniformly
// subsampled version of it. The privacy loss L = log(P/Q)(X), X ∼ P, is discretised
// on the grid ε_i = i·h twice:
//
//   - pessimistically by "connecting the dots" (Doroshenko, Ghazi, Kamath, Kumar,
//     Manurangsi 2022): the P- and Q-mass of every loss interval (ε_i, ε_{i+1}] is
//     split between its two end points so that both masses are kept. The discrete
//     pair is a refinement of the true one (the true pair is a post-processing of
//     it), so its hockey-stick curve δ(ε) is above the true one for every ε, also
//     after composition; the mass beyond the last grid point goes to +∞.
//   - optimistically by merging: the interval atoms (a post-processing of the true
//     pair) are merged with fractions of lower intervals until their loss is exactly
//     a grid point. The result is a post-processing of the true pair, so its δ(ε) is
//     below the true one, also after composition; leftover mass is dropped.
//
// Both are second-order accurate in h (unlike rounding losses up or down, whose
// error grows like T·h/2 over T compositions). Composition is a convolution of the
// loss distributions: FFT convolution between different steps, one FFT and a
// pointwise power for T identical steps, over a window chosen by a Chernoff bound;
// the mass the window may miss is put at +∞ (pessimistic) or subtracted
// (optimistic).

// Default PLD discretisation, as dp_accounting's PLD accountant.
const (
	DefaultPLDInterval = 1e-4  // value_discretization_interval
	DefaultPLDTailMass = 1e-15 // tail mass truncated per discretisation and per composition
)

// pldMaxGrid limits the grid points of one discretised step and pldMaxPoints the
// FFT length of a composition (memory: about 32 bytes per point).
const (
	pldMaxGrid   = 1 << 22
	pldMaxPoints = 1 << 24
)

// PLDConfig configures the discretisation of a PLD accountant. The zero value (and a
// nil *PLDConfig) means the defaults.
type PLDConfig struct {
	// Interval is the grid spacing h of the privacy loss (default 1e-4).
	Interval float64 `json:"interval,omitempty"`
	// TailMass bounds the probability mass the accountant truncates in each
	// discretisation and each composition (default 1e-15). Truncated mass is put at
	// +∞ in the pessimistic distribution, so it adds to the reported δ.
	TailMass float64 `json:"tail_mass,omitempty"`
	// MaxPoints caps the FFT length of a composition (default and at most 2^24); a
	// composition that needs more fails with an error naming the length it needs.
	MaxPoints int `json:"max_points,omitempty"`
}

// pldTooLargeError is the error of a composition whose FFT would exceed its cap.
type pldTooLargeError struct{ points int }

func (e *pldTooLargeError) Error() string {
	return fmt.Sprintf("PLD: composition needs an FFT of %d points; use a larger interval", e.points)
}

// resolved returns the configuration with defaults filled in, validated.
func (c *PLDConfig) resolved() (PLDConfig, error) {
	var r PLDConfig
	if c != nil {
		r = *c
	}
	if r.Interval == 0 {
		r.Interval = DefaultPLDInterval
	}
	if r.TailMass == 0 {
		r.TailMass = DefaultPLDTailMass
	}
	if math.IsNaN(r.Interval) || math.IsInf(r.Interval, 0) || r.Interval <= 0 || r.Interval > 1 {
		return r, fmt.Errorf("PLD discretisation interval %v must be in (0, 1]", r.Interval)
	}
	if math.IsNaN(r.TailMass) || r.TailMass <= 0 || r.TailMass > 1e-3 {
		return r, fmt.Errorf("PLD tail mass %v must be in (0, 1e-3]", r.TailMass)
	}
	if r.MaxPoints == 0 {
		r.MaxPoints = pldMaxPoints
	}
	if r.MaxPoints < 1 || r.MaxPoints > pldMaxPoints {
		return r, fmt.Errorf("PLD FFT cap %d must be in [1, %d]", r.MaxPoints, pldMaxPoints)
	}
	return r, nil
}

// PLDMechanism names the mechanism of one step of a PLD accountant.
type PLDMechanism int

const (
	// PLDGaussian is the Gaussian mechanism with sensitivity 1 (add/remove) or 2
	// (replace-one) and noise N(0, σ²).
	PLDGaussian PLDMechanism = iota
	// PLDPoissonGaussian is the Poisson-subsampled Gaussian (DP-SGD with Poisson
	// sampling at rate q).
	PLDPoissonGaussian
	// PLDUniformGaussian is the Gaussian on a uniformly drawn fixed-size subset
	// (without replacement, rate q = B/N); replace-one adjacency only.
	PLDUniformGaussian
)

// pldMechanismText spells the PLD mechanisms in JSON.
var pldMechanismText = enumtext.Text[PLDMechanism]{Type: "PLDMechanism", What: "PLD mechanism",
	Names: []string{PLDGaussian: "gaussian", PLDPoissonGaussian: "poisson-gaussian", PLDUniformGaussian: "uniform-gaussian"}}

// String returns the JSON spelling.
func (m PLDMechanism) String() string { return pldMechanismText.String(m) }

// MarshalText writes the JSON spelling.
func (m PLDMechanism) MarshalText() ([]byte, error) { return pldMechanismText.Marshal(m) }

// UnmarshalText parses the JSON spelling.
func (m *PLDMechanism) UnmarshalText(b []byte) error { return pldMechanismText.Unmarshal(b, m) }

// PLDStep is Steps identical steps of one mechanism. For PLDGaussian, Q is 1.
type PLDStep struct {
	Mechanism PLDMechanism `json:"mechanism"`
	Q         float64      `json:"q"`
	Sigma     float64      `json:"sigma"`
	Steps     int          `json:"steps"`
}

// PLD is a privacy-loss-distribution accountant for one adjacency. Steps are
// recorded by the Compose methods and the composed distributions are computed when
// Epsilon or Delta first needs them (and cached). The exported fields are its whole
// state: a PLD can be checkpointed as JSON and restored. A PLD is not safe for
// concurrent use.
type PLD struct {
	Adjacency Adjacency `json:"adjacency"`
	Config    PLDConfig `json:"config"`
	Steps     []PLDStep `json:"steps"`

	cacheKey string
	cache    []pldDirection
	cacheH   float64
}

// EpsilonBounds brackets the ε of an (ε, δ) guarantee: Upper is a rigorous upper
// bound (pessimistic discretisation; the number to report), Lower a rigorous lower
// bound on the ε of the dominating pairs (optimistic discretisation). Upper − Lower
// bounds the discretisation error.
type EpsilonBounds struct {
	Upper float64 `json:"epsilon"`
	Lower float64 `json:"epsilon_lower"`
}

// DeltaBounds brackets the δ(ε) of the dominating pairs: Lower ≤ δ(ε) ≤ Upper.
type DeltaBounds struct {
	Upper float64 `json:"delta"`
	Lower float64 `json:"delta_lower"`
}

// NewPLD returns an empty accountant (no steps: ε = 0) for adjacency adj; cfg nil
// or zero means the defaults. Invalid settings are reported by the methods.
func NewPLD(adj Adjacency, cfg *PLDConfig) *PLD {
	p := &PLD{Adjacency: adj}
	if cfg != nil {
		p.Config = *cfg
	}
	return p
}

func checkSteps(steps int) error {
	if steps < 0 {
		return fmt.Errorf("number of steps %d must be ≥ 0", steps)
	}
	return nil
}

func checkAdjacency(adj Adjacency) error {
	if adj != AddRemove && adj != ReplaceOne {
		return fmt.Errorf("invalid adjacency %d", int(adj))
	}
	return nil
}

// validateStep checks one step for adjacency adj.
func validateStep(adj Adjacency, s PLDStep) error {
	if err := checkSteps(s.Steps); err != nil {
		return err
	}
	switch s.Mechanism {
	case PLDGaussian:
		if err := checkQSigma(1, s.Sigma); err != nil {
			return err
		}
	case PLDPoissonGaussian:
		if err := checkQSigma(s.Q, s.Sigma); err != nil {
			return err
		}
	case PLDUniformGaussian:
		if err := checkQSigma(s.Q, s.Sigma); err != nil {
			return err
		}
		if adj == AddRemove {
			return errors.New("uniform (fixed-size) subsampling is not defined under add/remove adjacency (the dataset size changes): use replace-one")
		}
	default:
		return fmt.Errorf("invalid PLD mechanism %d", int(s.Mechanism))
	}
	return nil
}

// add records a step, merging it with the last one when identical.
func (p *PLD) add(s PLDStep) error {
	if err := checkAdjacency(p.Adjacency); err != nil {
		return err
	}
	if err := validateStep(p.Adjacency, s); err != nil {
		return err
	}
	if s.Steps == 0 {
		return nil
	}
	if n := len(p.Steps); n > 0 {
		last := &p.Steps[n-1]
		if last.Mechanism == s.Mechanism && last.Q == s.Q && last.Sigma == s.Sigma {
			last.Steps += s.Steps
			return nil
		}
	}
	p.Steps = append(p.Steps, s)
	return nil
}

// ComposePoissonGaussian adds `steps` steps of the Poisson-subsampled Gaussian
// mechanism with rate q and noise multiplier sigma (sensitivity 1 per record).
func (p *PLD) ComposePoissonGaussian(q, sigma float64, steps int) error {
	return p.add(PLDStep{Mechanism: PLDPoissonGaussian, Q: q, Sigma: sigma, Steps: steps})
}

// ComposeUniformGaussian adds `steps` steps of the Gaussian mechanism on a uniformly
// drawn fixed-size batch (without replacement, rate q = B/N). Replace-one only: under
// add/remove it returns an error.
func (p *PLD) ComposeUniformGaussian(q, sigma float64, steps int) error {
	return p.add(PLDStep{Mechanism: PLDUniformGaussian, Q: q, Sigma: sigma, Steps: steps})
}

// ComposeGaussian adds `steps` releases of the Gaussian mechanism with noise
// multiplier sigma and no subsampling: sensitivity 1 under add/remove, 2 under
// replace-one (e.g. one release per record and epoch for shuffled batches).
func (p *PLD) ComposeGaussian(sigma float64, steps int) error {
	return p.add(PLDStep{Mechanism: PLDGaussian, Q: 1, Sigma: sigma, Steps: steps})
}

// Epsilon returns the smallest ε with δ(ε) ≤ delta for the composed run (the larger
// of the two directions where they differ), bracketed by the two discretisations.
// It is an error when delta is below the mass the pessimistic distribution holds at
// +∞ (then no finite ε is certified: lower TailMass).
func (p *PLD) Epsilon(delta float64) (EpsilonBounds, error) {
	if err := checkDelta(delta); err != nil {
		return EpsilonBounds{}, err
	}
	dirs, h, err := p.distributions()
	if err != nil {
		return EpsilonBounds{}, err
	}
	var b EpsilonBounds
	for _, d := range dirs {
		up, err := d.pess.epsilon(h, delta)
		if err != nil {
			return EpsilonBounds{}, err
		}
		lo, err := d.opt.epsilon(h, delta+d.opt.excess)
		if err != nil {
			return EpsilonBounds{}, err
		}
		b.Upper = math.Max(b.Upper, up)
		b.Lower = math.Max(b.Lower, lo)
	}
	b.Lower = math.Min(b.Lower, b.Upper)
	return b, nil
}

// Delta returns δ(ε), the hockey-stick divergence of the composed dominating pairs
// (the larger of the two directions), bracketed by the two discretisations.
func (p *PLD) Delta(eps float64) (DeltaBounds, error) {
	if math.IsNaN(eps) || math.IsInf(eps, 0) {
		return DeltaBounds{}, fmt.Errorf("epsilon = %v must be finite", eps)
	}
	dirs, h, err := p.distributions()
	if err != nil {
		return DeltaBounds{}, err
	}
	var b DeltaBounds
	for _, d := range dirs {
		b.Upper = math.Max(b.Upper, math.Min(1, d.pess.delta(h, eps)))
		b.Lower = math.Max(b.Lower, math.Max(0, d.opt.delta(h, eps)-d.opt.excess))
	}
	b.Lower = math.Min(b.Lower, b.Upper)
	return b, nil
}

// ---------------------------------------------------------------------------
// Composed distributions.

// pldDirection is the composed loss distribution of one direction of the pairs,
// pessimistic and optimistic.
type pldDirection struct {
	pess, opt pmf
}

// distributions returns the composed distributions of every direction that must be
// bounded, computing them if the steps changed since the last call.
func (p *PLD) distributions() ([]pldDirection, float64, error) {
	cfg, err := p.Config.resolved()
	if err != nil {
		return nil, 0, err
	}
	if err := checkAdjacency(p.Adjacency); err != nil {
		return nil, 0, err
	}
	key := fmt.Sprintf("%d|%v|%v|%d|%v", p.Adjacency, cfg.Interval, cfg.TailMass, cfg.MaxPoints, p.Steps)
	if p.cache != nil && p.cacheKey == key {
		return p.cache, p.cacheH, nil
	}
	dirs, err := composeSteps(p.Adjacency, p.Steps, cfg, false)
	if err != nil {
		return nil, 0, err
	}
	p.cache, p.cacheKey, p.cacheH = dirs, key, cfg.Interval
	return dirs, cfg.Interval, nil
}

// gaussianSensitivity is the base Gaussian's sensitivity under adj: 1 for add/remove,
// 2 for replace-one.
func gaussianSensitivity(adj Adjacency) float64 {
	if adj == ReplaceOne {
		return 2
	}
	return 1
}

// rate is the step's sampling rate: 1 for the plain Gaussian.
func (s PLDStep) rate() float64 {
	if s.Mechanism == PLDGaussian {
		return 1
	}
	return s.Q
}

// gaussianMu returns μ = Δ·√(Σ steps/σ²) when every step of the run is a Gaussian
// release without subsampling (PLDGaussian, or rate q = 1; steps at q = 0 release
// nothing): their composition is exactly one Gaussian mechanism with
// sensitivity/noise ratio μ, whose ε(δ) the analytic Gaussian mechanism gives in
// closed form (GaussianEpsilon). ok is false when a step is subsampled (0 < q < 1),
// when no step releases anything, or when a step is invalid.
func (p *PLD) gaussianMu() (mu float64, ok bool) {
	if checkAdjacency(p.Adjacency) != nil {
		return 0, false
	}
	delta := gaussianSensitivity(p.Adjacency)
	var mu2 float64
	for _, s := range p.Steps {
		if validateStep(p.Adjacency, s) != nil {
			return 0, false
		}
		switch q := s.rate(); {
		case s.Steps == 0 || q == 0:
			continue
		case q < 1:
			return 0, false
		}
		m := delta / s.Sigma
		mu2 += float64(s.Steps) * m * m
	}
	if !(mu2 > 0) || math.IsInf(mu2, 0) {
		return 0, false
	}
	return math.Sqrt(mu2), true
}

// stepGroup is a run of identical subsampled steps.
type stepGroup struct {
	mech     PLDMechanism
	q, sigma float64
	steps    int
}

// composeSteps composes the steps' dominating pairs for every direction. With
// removeOnly (add/remove only) only the remove direction (P = mixture, Q = N(0, σ²))
// is computed.
func composeSteps(adj Adjacency, steps []PLDStep, cfg PLDConfig, removeOnly bool) ([]pldDirection, error) {
	if cfg.MaxPoints == 0 {
		cfg.MaxPoints = pldMaxPoints
	}
	delta := gaussianSensitivity(adj)
	var mu2 float64 // Σ (Δ/σ)² over the plain Gaussian steps
	var groups []stepGroup
	uniform := false
	for i, s := range steps {
		if err := validateStep(adj, s); err != nil {
			return nil, fmt.Errorf("step %d: %w", i, err)
		}
		if s.Steps == 0 {
			continue
		}
		q := s.rate()
		switch {
		case q == 0:
			continue // no privacy loss
		case q == 1:
			m := delta / s.Sigma
			mu2 += float64(s.Steps) * m * m
			continue
		}
		if s.Mechanism == PLDUniformGaussian {
			uniform = true
		}
		found := false
		for k := range groups {
			g := &groups[k]
			if g.mech == s.Mechanism && g.q == q && g.sigma == s.Sigma {
				g.steps += s.Steps
				found = true
				break
			}
		}
		if !found {
			groups = append(groups, stepGroup{s.Mechanism, q, s.Sigma, s.Steps})
		}
	}
	if math.IsInf(mu2, 0) {
		return nil, errors.New("PLD: the composed Gaussian's sensitivity/noise ratio overflows")
	}
	// Directions: 0 = P against Q as written below, 1 = reversed. Add/remove needs
	// both (unless every step is a plain Gaussian); replace-one needs the reverse only
	// for the uniform pairs (the Poisson pair and the Gaussian are symmetric).
	ndir := 1
	if (adj == AddRemove && !removeOnly && len(groups) > 0) || (adj == ReplaceOne && uniform) {
		ndir = 2
	}
	h, tail := cfg.Interval, cfg.TailMass
	// Every direction, and in each the pessimistic and the optimistic chain, is
	// composed in its own goroutine.
	out := make([]pldDirection, ndir)
	errs := make([]error, 2*ndir)
	var wg sync.WaitGroup
	for dir := range ndir {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var discs []pldDirection
			for _, g := range groups {
				var pr lossPair
				switch {
				case g.mech == PLDPoissonGaussian && adj == ReplaceOne:
					pr = newDoubleMixPair(g.q, 1/g.sigma)
				case g.mech == PLDPoissonGaussian:
					pr = newMixPair(g.q, 1/g.sigma, dir == 1)
				default: // uniform, replace-one: base sensitivity 2
					pr = newMixPair(g.q, 2/g.sigma, dir == 1)
				}
				d, err := discretise(pr, h, tail/float64(g.steps))
				if err != nil {
					errs[2*dir] = err
					return
				}
				discs = append(discs, d)
			}
			if mu2 > 0 {
				d, err := discretise(gaussPair{mu: math.Sqrt(mu2)}, h, tail)
				if err != nil {
					errs[2*dir] = err
					return
				}
				discs = append(discs, d)
			}
			counts := make([]int, len(discs))
			for i := range discs {
				counts[i] = 1
				if i < len(groups) {
					counts[i] = groups[i].steps
				}
			}
			chain := func(pess bool) (pmf, error) {
				xs := make([]pmf, len(discs))
				for i, d := range discs {
					xs[i] = d.opt
					if pess {
						xs[i] = d.pess
					}
				}
				return composeAllMax(xs, counts, tail, pess, cfg.MaxPoints)
			}
			var inner sync.WaitGroup
			inner.Add(1)
			go func() {
				defer inner.Done()
				out[dir].opt, errs[2*dir+1] = chain(false)
			}()
			out[dir].pess, errs[2*dir] = chain(true)
			inner.Wait()
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// ---------------------------------------------------------------------------
// Dominating pairs. All are in units of the noise standard deviation: noise
// N(0, 1), shift μ = Δ/σ.

// lossPair is a pair (P, Q) of Gaussian mixtures with unit variance whose privacy
// loss L(x) = log(P/Q)(x) is strictly monotone in x.
type lossPair interface {
	loss(x float64) float64
	// inv returns x with loss(x) = l, for lmin < l < lmax.
	inv(l float64) float64
	increasing() bool
	lossRange() (lmin, lmax float64)
	// components returns the weights and means of P's and Q's components.
	components() (pw, pm, qw, qm []float64)
}

// gaussPair is N(μ, 1) against N(0, 1): L(x) = μx − μ²/2.
type gaussPair struct{ mu float64 }

func (g gaussPair) loss(x float64) float64 { return g.mu*x - g.mu*g.mu/2 }
func (g gaussPair) inv(l float64) float64  { return (l + g.mu*g.mu/2) / g.mu }
func (g gaussPair) increasing() bool       { return true }
func (g gaussPair) lossRange() (float64, float64) {
	return math.Inf(-1), math.Inf(1)
}
func (g gaussPair) components() (pw, pm, qw, qm []float64) {
	return []float64{1}, []float64{g.mu}, []float64{1}, []float64{0}
}

// mixPair is the Poisson-subsampled Gaussian's remove pair P = (1−q)N(0,1) + qN(μ,1)
// against Q = N(0,1) (L(x) = log(1 − q + q·e^{μx − μ²/2}), increasing, > log(1−q)),
// or with reverse set the add pair Q against P (L = −that, decreasing, < −log(1−q)).
type mixPair struct {
	q, mu   float64
	reverse bool
	lq, l1q float64 // log q, log(1 − q)
}

func newMixPair(q, mu float64, reverse bool) mixPair {
	return mixPair{q: q, mu: mu, reverse: reverse, lq: math.Log(q), l1q: math.Log1p(-q)}
}

// mixLoss is log(1 − q + q·e^{μx − μ²/2}).
func (m mixPair) mixLoss(x float64) float64 {
	return logAdd(m.l1q, m.lq+m.mu*x-m.mu*m.mu/2)
}

// mixInv solves mixLoss(x) = l for l > log(1 − q).
func (m mixPair) mixInv(l float64) float64 {
	// log(e^l − (1 − q)), accurate near l = log(1 − q) and for large l.
	var le float64
	if l > 0.5 {
		le = l + math.Log1p(-(1-m.q)*math.Exp(-l))
	} else {
		le = math.Log(math.Expm1(l) + m.q)
	}
	return (le - m.lq + m.mu*m.mu/2) / m.mu
}

func (m mixPair) loss(x float64) float64 {
	if m.reverse {
		return -m.mixLoss(x)
	}
	return m.mixLoss(x)
}

func (m mixPair) inv(l float64) float64 {
	if m.reverse {
		return m.mixInv(-l)
	}
	return m.mixInv(l)
}

func (m mixPair) increasing() bool { return !m.reverse }

func (m mixPair) lossRange() (float64, float64) {
	if m.reverse {
		return math.Inf(-1), -m.l1q
	}
	return m.l1q, math.Inf(1)
}

func (m mixPair) components() (pw, pm, qw, qm []float64) {
	mw, mm := []float64{1 - m.q, m.q}, []float64{0, m.mu}
	gw, gm := []float64{1}, []float64{0}
	if m.reverse {
		return gw, gm, mw, mm
	}
	return mw, mm, gw, gm
}

// doubleMixPair is the Poisson-subsampled Gaussian under replace-one:
// P = (1−q)N(0,1) + qN(μ,1) against Q = (1−q)N(0,1) + qN(−μ,1) (Schuchardt et al.
// 2024). L(x) = m(x) − m(−x), m(x) = log(1 − q + q·e^{μx − μ²/2}); increasing, odd.
type doubleMixPair struct {
	mixPair
}

func newDoubleMixPair(q, mu float64) doubleMixPair {
	return doubleMixPair{newMixPair(q, mu, false)}
}

func (d doubleMixPair) loss(x float64) float64 { return d.mixLoss(x) - d.mixLoss(-x) }

// inv solves the quadratic c·u² + (1−q)(1 − w)·u − c·w = 0 for u = e^{μx}, with
// c = q·e^{−μ²/2} and w = e^l, in log space.
func (d doubleMixPair) inv(l float64) float64 {
	if l == 0 {
		return 0
	}
	logC := d.lq - d.mu*d.mu/2
	em := math.Expm1(l)                       // w − 1
	logA := d.l1q + math.Log(math.Abs(em))    // log|A|, A = (1 − q)(w − 1)
	logR := math.Log(4) + 2*logC + l - 2*logA // r = 4c²w/A²
	// log(1 + √(1 + r)), without overflow of r.
	var ls float64
	if logR > 40 {
		ls = logR/2 + math.Log(math.Exp(-logR/2)+math.Sqrt(1+math.Exp(-logR)))
	} else {
		ls = math.Log(1 + math.Sqrt(1+math.Exp(logR)))
	}
	var logU float64
	if em > 0 {
		logU = logA + ls - math.Log(2) - logC
	} else {
		logU = math.Log(2) + logC + l - logA - ls
	}
	return logU / d.mu
}

func (d doubleMixPair) increasing() bool { return true }

func (d doubleMixPair) lossRange() (float64, float64) {
	return math.Inf(-1), math.Inf(1)
}

func (d doubleMixPair) components() (pw, pm, qw, qm []float64) {
	return []float64{1 - d.q, d.q}, []float64{0, d.mu}, []float64{1 - d.q, d.q}, []float64{0, -d.mu}
}

// ---------------------------------------------------------------------------
// Discretisation.

// pmf is a discretised privacy-loss distribution: mass p[j] at loss (lo + j)·h,
// mass inf at +∞ (pessimistic), and for optimistic distributions a bound excess on
// spurious mass (aliasing, round-off) to subtract from δ.
type pmf struct {
	lo     int
	p      []float64
	inf    float64
	excess float64
}

// normCDFs holds Φ(z) and 1 − Φ(z), each accurate in its own tail.
type normCDFs struct{ lower, upper float64 }

func normTails(z float64) normCDFs {
	if z <= 0 {
		lo := 0.5 * math.Erfc(-z/math.Sqrt2)
		return normCDFs{lo, 1 - lo}
	}
	up := 0.5 * math.Erfc(z/math.Sqrt2)
	return normCDFs{1 - up, up}
}

// upperQuantile returns z ≥ 0 with 1 − Φ(z) = p for 0 < p ≤ 1/2 (bisection on erfc,
// accurate where math.Erfcinv is not: it computes Erfinv(1 − x)).
func upperQuantile(p float64) float64 {
	lo, hi := 0.0, 40.0
	for range 100 {
		m := (lo + hi) / 2
		if 0.5*math.Erfc(m/math.Sqrt2) > p {
			lo = m
		} else {
			hi = m
		}
	}
	return hi
}

// intervalMass is the N(0,1) mass of (za, zb], za ≤ zb, from the tails at both ends.
func intervalMass(za, zb float64, a, b normCDFs) float64 {
	var m float64
	switch {
	case zb <= 0:
		m = b.lower - a.lower
	case za >= 0:
		m = a.upper - b.upper
	default:
		m = 1 - a.lower - b.upper
	}
	return math.Max(0, m)
}

// discretise returns the pessimistic (connect-the-dots) and optimistic (merged)
// discretisations of pr's loss distribution on the grid of spacing h, truncating at
// most tail/2 of P's mass on each side.
func discretise(pr lossPair, h, tail float64) (pldDirection, error) {
	pw, pm, qw, qm := pr.components()
	z := upperQuantile(tail / 2)
	xlo, xhi := math.Inf(1), math.Inf(-1)
	for _, m := range pm {
		xlo, xhi = math.Min(xlo, m-z), math.Max(xhi, m+z)
	}
	inc := pr.increasing()
	la, lb := pr.loss(xlo), pr.loss(xhi)
	if !inc {
		la, lb = lb, la
	}
	lmin, lmax := pr.lossRange()
	if !math.IsInf(lmin, 0) {
		la = lmin
	}
	if !math.IsInf(lmax, 0) {
		lb = lmax
	}
	if math.Abs(la) > 600 || math.Abs(lb) > 600 {
		return pldDirection{}, fmt.Errorf("PLD: privacy loss range [%.4g, %.4g] too wide (noise multiplier too small for the accountant)", la, lb)
	}
	i0, i1 := int(math.Floor(la/h)), int(math.Ceil(lb/h))
	if i1 <= i0 {
		i1 = i0 + 1
	}
	k := i1 - i0 + 1
	if k > pldMaxGrid {
		return pldDirection{}, fmt.Errorf("PLD: %d grid points needed (loss range [%.4g, %.4g] at interval %g); use a larger interval", k, la, lb, h)
	}
	// Distinct component means; P and Q as weights over them.
	var means []float64
	idx := func(m float64) int {
		for i, v := range means {
			if v == m {
				return i
			}
		}
		means = append(means, m)
		return len(means) - 1
	}
	pwt, qwt := make([]float64, 0, 4), make([]float64, 0, 4)
	for i, m := range pm {
		c := idx(m)
		for len(pwt) <= c {
			pwt = append(pwt, 0)
		}
		pwt[c] += pw[i]
	}
	for i, m := range qm {
		c := idx(m)
		for len(qwt) <= c {
			qwt = append(qwt, 0)
		}
		qwt[c] += qw[i]
	}
	for len(pwt) < len(means) {
		pwt = append(pwt, 0)
	}
	for len(qwt) < len(means) {
		qwt = append(qwt, 0)
	}
	nc := len(means)
	// Walk the nodes: x at node j, the component tails there, and the P- and
	// Q-mass of each bin (ε_j, ε_{j+1}].
	xAt := func(j int) float64 {
		l := float64(i0+j) * h
		switch {
		case l <= lmin:
			if inc {
				return math.Inf(-1)
			}
			return math.Inf(1)
		case l >= lmax:
			if inc {
				return math.Inf(1)
			}
			return math.Inf(-1)
		}
		x := pr.inv(l)
		if math.IsNaN(x) {
			// Round-off just inside a finite end of the loss range (log(1 − q) or
			// −log(1 − q) for the mixture pairs), which both lie at x → −∞.
			x = math.Inf(-1)
		}
		return x
	}
	P := make([]float64, k-1)
	Q := make([]float64, k-1)
	prev := make([]normCDFs, nc)
	cur := make([]normCDFs, nc)
	var xPrev float64
	var pBelow, qBelow, pAbove, qAbove float64
	for j := range k {
		x := xAt(j)
		for c, m := range means {
			cur[c] = normTails(x - m)
		}
		if j == 0 {
			for c := range means {
				b := cur[c].lower // mass where L ≤ ε_0
				if !inc {
					b = cur[c].upper
				}
				pBelow += pwt[c] * b
				qBelow += qwt[c] * b
			}
		} else {
			for c, m := range means {
				var mass float64
				if inc {
					mass = intervalMass(xPrev-m, x-m, prev[c], cur[c])
				} else {
					mass = intervalMass(x-m, xPrev-m, cur[c], prev[c])
				}
				P[j-1] += pwt[c] * mass
				Q[j-1] += qwt[c] * mass
			}
		}
		if j == k-1 {
			for c := range means {
				a := cur[c].upper // mass where L > ε_last
				if !inc {
					a = cur[c].lower
				}
				pAbove += pwt[c] * a
				qAbove += qwt[c] * a
			}
		}
		xPrev = x
		prev, cur = cur, prev
	}

	// Pessimistic: split every bin (P_j, Q_j) between its end points keeping both
	// masses: α_j·u_j at node j and α_{j+1}·v_j at node j+1, with
	// u_j = (α_{j+1}Q_j − P_j)/(α_{j+1} − α_j), v_j = (P_j − α_jQ_j)/(α_{j+1} − α_j).
	// Below the grid: all of P's mass to the first node. Above: δ(ε_last) to +∞ and
	// α_last·Q(L > ε_last) to the last node.
	// α_j = e^{ε_j} by a recurrence, recomputed exactly every 256 points.
	alpha := make([]float64, k)
	step := math.Exp(h)
	for j := range alpha {
		if j%256 == 0 {
			alpha[j] = math.Exp(float64(i0+j) * h)
		} else {
			alpha[j] = alpha[j-1] * step
		}
	}
	eh := math.Expm1(h) // (α_{j+1} − α_j)/α_j
	pess := pmf{lo: i0, p: make([]float64, k)}
	pess.p[0] = pBelow
	for j := range k - 1 {
		aq := alpha[j] * Q[j]
		lowPart := math.Min(P[j], math.Max(0, ((1+eh)*aq-P[j])/eh)) // α_j·u_j
		pess.p[j] += lowPart
		pess.p[j+1] += P[j] - lowPart // α_{j+1}·v_j
	}
	pess.inf = math.Max(0, pAbove-alpha[k-1]*qAbove)
	pess.p[k-1] += pAbove - pess.inf

	// Optimistic: from the top down, merge the current atom (likelihood ratio in
	// (α_level, α_{level+1}]) with the fraction of the next lower atom that brings
	// its ratio to exactly α_level, emit it at node level, and continue with the
	// remainder of the lower atom; when even the whole lower atom is not enough,
	// absorb it and go on down. The last atom, with nothing below to merge with, is
	// rounded down to its node; a remainder of the lower tail (no node below) is
	// dropped. Atom t is the lower tail (t = 0) or bin t − 1 (ratio in
	// (α_{t−1}, α_t]).
	opt := pmf{lo: i0, p: make([]float64, k)}
	remP := append([]float64{pBelow}, P...)
	remQ := append([]float64{qBelow}, Q...)
	cP, cQ, level := pAbove, qAbove, k-1
	next := k - 1
	for {
		if cP <= 0 {
			if next < 1 {
				break
			}
			cP, cQ, level = remP[next], remQ[next], next-1
			next--
			continue
		}
		a := alpha[level]
		need := cP - a*cQ
		if need <= 0 {
			opt.p[level] += cP
			cP, cQ = 0, 0
			continue
		}
		if next < 0 {
			// Nothing left below: round this last atom down to its node (a pointwise
			// decrease of its loss, which can only lower δ after any composition).
			opt.p[level] += cP
			break
		}
		bP, bQ := remP[next], remQ[next]
		if give := a*bQ - bP; give > 0 && give >= need {
			x := need / give
			opt.p[level] += cP + x*bP
			remP[next], remQ[next] = (1-x)*bP, (1-x)*bQ
			cP, cQ = 0, 0
			continue
		}
		cP += bP
		cQ += bQ
		next--
	}
	return pldDirection{pess: pess, opt: opt}, nil
}

// ---------------------------------------------------------------------------
// Composition.

// goodFFTLen returns the smallest n' ≥ n of the form 2^a·3^b·5^c.
func goodFFTLen(n int) int {
	best := 1
	for best < n {
		best *= 2
	}
	for p5 := 1; p5 < best; p5 *= 5 {
		for p35 := p5; p35 < best; p35 *= 3 {
			v := p35
			for v < n {
				v *= 2
			}
			if v < best {
				best = v
			}
		}
	}
	return best
}

// trim moves negligible tail mass out of d.p: at most tail from each end.
// Pessimistic: the top to +∞, the bottom onto the first kept point. Optimistic: both
// dropped.
func (d pmf) trim(tail float64, pess bool) pmf {
	n := len(d.p)
	top, cum := n, 0.0
	for top > 1 && cum+d.p[top-1] <= tail {
		cum += d.p[top-1]
		top--
	}
	if pess {
		d.inf += cum
	}
	bot, cumB := 0, 0.0
	for bot < top-1 && cumB+d.p[bot] <= tail {
		cumB += d.p[bot]
		bot++
	}
	p := d.p[bot:top]
	if pess && bot > 0 {
		p[0] += cumB
	}
	d.lo += bot
	d.p = p
	return d
}

// directConvolve is the linear convolution of a and b.
func directConvolve(a, b []float64) []float64 {
	out := make([]float64, len(a)+len(b)-1)
	for i, x := range a {
		if x == 0 {
			continue
		}
		for j, y := range b {
			out[i+j] += x * y
		}
	}
	return out
}

// compose is the distribution of the sum of independent losses from d and e.
func (d pmf) compose(e pmf, tail float64, pess bool) (pmf, error) {
	if len(d.p) > len(e.p) {
		d, e = e, d
	}
	n := len(d.p) + len(e.p) - 1
	var out []float64
	if len(d.p) == 1 {
		out = make([]float64, n)
		for i, v := range e.p {
			out[i] = d.p[0] * v
		}
	} else if len(d.p)*len(e.p) <= 1<<16 {
		out = directConvolve(d.p, e.p)
	} else {
		nf := goodFFTLen(n)
		if nf > pldMaxPoints {
			return pmf{}, fmt.Errorf("PLD: composition needs an FFT of %d points; use a larger interval", nf)
		}
		fft := fourier.NewFFT(nf)
		buf := make([]float64, nf)
		copy(buf, d.p)
		ca := fft.Coefficients(nil, buf)
		clear(buf)
		copy(buf, e.p)
		cb := fft.Coefficients(nil, buf)
		for i := range ca {
			ca[i] *= cb[i]
		}
		y := fft.Sequence(buf, ca)
		out = y[:n]
		inv := 1 / float64(nf)
		for i := range out {
			out[i] *= inv
		}
	}
	r := pmf{lo: d.lo + e.lo, p: out}
	r.inf = 1 - (1-d.inf)*(1-e.inf)
	r.excess = d.excess + e.excess + d.excess*e.excess
	r.clampNegative(pess)
	return r.trim(tail, pess), nil
}

// clampNegative sets round-off negatives to 0; optimistically the mass added counts
// as spurious.
func (d *pmf) clampNegative(pess bool) {
	var neg float64
	for i, v := range d.p {
		if v < 0 {
			neg -= v
			d.p[i] = 0
		}
	}
	if !pess {
		d.excess += neg
	}
}

// logMGFTop returns log Σ_j p_j e^{s(j − (n−1))}, s > 0 (index units, shifted to the
// top point), summed from the highest non-zero point down without overflow.
func logMGFTop(p []float64, s float64) float64 {
	jm := len(p) - 1
	for jm > 0 && p[jm] == 0 {
		jm--
	}
	f := math.Exp(-s)
	w, sum := 1.0, 0.0
	for j := jm; j >= 0; j-- {
		sum += p[j] * w
		w *= f
		if w < 1e-300 {
			break
		}
	}
	return math.Log(sum) - s*float64(len(p)-1-jm)
}

// mgfTerm is one summand group of a Chernoff bound: t independent indices drawn from
// the sub-probability p (0-based), with a coarse copy (at most 1024 blocks, each
// block's mass at its mean index, positions relative to the top index) to locate s.
type mgfTerm struct {
	p         []float64
	t         int
	pos, mass []float64
}

func newMGFTerm(p []float64, t int) mgfTerm {
	n := len(p)
	top := float64(n - 1)
	bs := (n + 1023) / 1024
	m := mgfTerm{p: p, t: t}
	for b := 0; b < n; b += bs {
		var w, wx float64
		for j := b; j < min(n, b+bs); j++ {
			w += p[j]
			wx += p[j] * float64(j)
		}
		if w > 0 {
			m.pos, m.mass = append(m.pos, wx/w-top), append(m.mass, w)
		}
	}
	return m
}

// reversed is the term of the mirrored indices (n − 1 − j).
func (m mgfTerm) reversed() mgfTerm {
	r := make([]float64, len(m.p))
	for j, v := range m.p {
		r[len(r)-1-j] = v
	}
	return newMGFTerm(r, m.t)
}

// logMGF is t·log Σ_j p_j e^{sj}, exact or from the coarse copy.
func (m mgfTerm) logMGF(s float64, exact bool) float64 {
	top := float64(len(m.p) - 1)
	if exact {
		return float64(m.t) * (logMGFTop(m.p, s) + s*top)
	}
	if len(m.pos) == 0 {
		return math.Inf(-1)
	}
	pmax := m.pos[len(m.pos)-1]
	var sum float64
	for i, x := range m.pos {
		sum += m.mass[i] * math.Exp(s*(x-pmax))
	}
	return float64(m.t) * (math.Log(sum) + s*(pmax+top))
}

// chernoffSum returns an a with P(J ≥ a) ≤ tau for J the sum over the terms, and the
// s that gave it: P(J ≥ a) ≤ exp(Σ_g t_g·Λ_g(s) − s·a) for every s > 0. The s
// minimising a(s) = (ΣΛ + log(1/τ))/s (unimodal) is located on the coarse copies; a
// is then exact for it.
func chernoffSum(terms []mgfTerm, tau float64) (a, sBest float64) {
	lt := -math.Log(tau)
	aOf := func(s float64, exact bool) float64 {
		var e float64
		for _, m := range terms {
			e += m.logMGF(s, exact)
		}
		return (e + lt) / s
	}
	f := func(ls float64) float64 { return aOf(math.Exp(ls), false) }
	lo, hi := math.Log(1e-12), math.Log(50.0)
	const nScan = 24
	step := (hi - lo) / nScan
	bestI, bestV := 0, math.Inf(1)
	for i := 0; i <= nScan; i++ {
		if v := f(lo + step*float64(i)); v < bestV {
			bestI, bestV = i, v
		}
	}
	x0, x3 := lo+step*float64(bestI-1), lo+step*float64(bestI+1)
	br := golden.Minimize(f, x0, x3, 30, 0)
	x1, f1, x2, f2 := br.A, br.FA, br.B, br.FB
	bestL := lo + step*float64(bestI)
	if f1 < bestV {
		bestV, bestL = f1, x1
	}
	if f2 < bestV {
		bestL = x2
	}
	s := math.Exp(bestL)
	return aOf(s, true), s
}

// chernoffSumTail bounds P(J ≥ a) at the given s.
func chernoffSumTail(terms []mgfTerm, s, a float64) float64 {
	var e float64
	for _, m := range terms {
		e += m.logMGF(s, true)
	}
	return math.Min(1, math.Exp(e-s*a))
}

// selfCompose is the t-fold composition of d (composeAll of one distribution).
func (d pmf) selfCompose(t int, tail float64, pess bool) (pmf, error) {
	return composeAll([]pmf{d}, []int{t}, tail, pess)
}

// composeAll is the distribution of the sum of counts[g] independent losses from
// every ds[g]: one real FFT of each distribution, their pointwise powers (repeated
// squaring) multiplied, one inverse FFT. The FFT covers only the window of the
// composed index that holds all but a Chernoff-bounded mass (≤ tail per side). Mass
// outside the window wraps around into it: pessimistically the bound on the mass
// above the window is added to +∞ (the wrapped copies only add to δ);
// optimistically the bound on the mass below it (whose copies land too high) is
// counted as spurious (excess). Supports of at most 2^16 points are used whole.
func composeAll(ds []pmf, counts []int, tail float64, pess bool) (pmf, error) {
	return composeAllMax(ds, counts, tail, pess, pldMaxPoints)
}

// composeAllMax is composeAll with an FFT of at most maxPoints points.
func composeAllMax(ds []pmf, counts []int, tail float64, pess bool, maxPoints int) (pmf, error) {
	var terms []mgfTerm
	r := pmf{}
	full := 1
	logSurv, logExc := 0.0, 0.0
	single := 1.0
	for g, d := range ds {
		t := counts[g]
		if t == 0 {
			continue
		}
		r.lo += t * d.lo
		full += t * (len(d.p) - 1)
		ft := float64(t)
		logSurv += ft * math.Log1p(-d.inf)
		logExc += ft * math.Log1p(d.excess)
		if len(d.p) == 1 {
			single *= math.Pow(d.p[0], ft)
			continue
		}
		terms = append(terms, mgfTerm{p: d.p, t: t})
	}
	r.inf = -math.Expm1(logSurv)
	r.excess = math.Expm1(logExc)
	if len(terms) == 0 {
		r.p = []float64{single}
		return r, nil
	}
	jlo, jhi := 0, full-1
	var up, down []mgfTerm
	var sUp, sLo float64
	if full > 1<<16 {
		for _, m := range terms {
			m = newMGFTerm(m.p, m.t)
			up, down = append(up, m), append(down, m.reversed())
		}
		var a, b float64
		a, sUp = chernoffSum(up, tail)
		b, sLo = chernoffSum(down, tail)
		if a < float64(jhi) {
			jhi = int(math.Ceil(a))
		}
		if l := float64(full-1) - b; l > 0 {
			jlo = int(math.Floor(l))
		}
		if jlo > jhi {
			jlo, jhi = 0, full-1
		}
	}
	nf := goodFFTLen(jhi - jlo + 1)
	if nf > maxPoints {
		return pmf{}, &pldTooLargeError{nf}
	}
	fft := fourier.NewFFT(nf)
	buf := make([]float64, nf)
	var acc, c []complex128
	for i, m := range terms {
		clear(buf)
		for j, v := range m.p {
			buf[j%nf] += v
		}
		c = fft.Coefficients(c, buf)
		if i == 0 {
			acc = make([]complex128, len(c))
			for k, v := range c {
				acc[k] = complex(single, 0) * cpow(v, m.t)
			}
			continue
		}
		for k, v := range c {
			acc[k] *= cpow(v, m.t)
		}
	}
	y := fft.Sequence(buf, acc)
	top := min(jlo+nf-1, full-1)
	r.p = make([]float64, top-jlo+1)
	inv := 1 / float64(nf)
	for j := jlo; j <= top; j++ {
		r.p[j-jlo] = y[j%nf] * inv
	}
	r.lo += jlo
	if pess && top < full-1 {
		r.inf += chernoffSumTail(up, sUp, float64(top+1))
	}
	if !pess && jlo > 0 {
		r.excess += chernoffSumTail(down, sLo, float64(full-1-(jlo-1)))
	}
	r.clampNegative(pess)
	return r.trim(tail, pess), nil
}

// cpow is v^t by repeated squaring (|v| ≤ 1: magnitudes below 1e-150 become 0,
// which keeps the products out of the denormal range).
func cpow(v complex128, t int) complex128 {
	r := complex(1, 0)
	for {
		if t&1 == 1 {
			r *= v
		}
		t >>= 1
		if t == 0 {
			return r
		}
		v *= v
		if math.Abs(real(v))+math.Abs(imag(v)) < 1e-150 {
			return 0
		}
	}
}

// ---------------------------------------------------------------------------
// Queries.

// delta is the hockey-stick divergence Σ_j p_j (1 − e^{ε − l_j})_+ + inf.
func (d pmf) delta(h, eps float64) float64 {
	s := d.inf
	for j := len(d.p) - 1; j >= 0; j-- {
		l := float64(d.lo+j) * h
		if l <= eps {
			break
		}
		s += d.p[j] * -math.Expm1(eps-l)
	}
	return s
}

// epsilon is the smallest ε ≥ 0 with delta(ε) ≤ target. Between grid points
// δ(ε) = A − e^ε·B (A, B sums over the points above), solved exactly.
func (d pmf) epsilon(h, target float64) (float64, error) {
	if d.inf >= target {
		return 0, fmt.Errorf("delta = %g is not above the mass %.3g the PLD puts at +∞ (truncated tails): lower the tail mass", target, d.inf)
	}
	A, Bs := d.inf, 0.0 // Bs = e^{l_j}·B at the current point
	eh := math.Exp(-h)
	for j := len(d.p) - 1; j >= 0; j-- {
		l := float64(d.lo+j) * h
		// δ(l_j) with the points above j.
		if A-Bs > target {
			// Solution in (l_j, l_{j+1}): A − e^{ε − l_j}·Bs = target.
			return math.Max(0, l+math.Log((A-target)/Bs)), nil
		}
		if l <= 0 {
			return 0, nil
		}
		A += d.p[j]
		Bs += d.p[j]
		Bs *= eh // now relative to l_{j−1}
	}
	// Below every point: δ(ε) = A − e^{ε}·B; here Bs = e^{l_0 − h}·B.
	if A <= target || Bs <= 0 {
		return 0, nil
	}
	l := float64(d.lo-1) * h
	return math.Max(0, l+math.Log((A-target)/Bs)), nil
}
