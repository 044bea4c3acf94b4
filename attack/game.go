package attack

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"

	"github.com/dpfil/dpfil/internal/splitmix"
	"github.com/dpfil/dpfil/transcript"
)

// Net is the per-sample gradient oracle the attack game trains and attacks with:
// softmax cross-entropy per-sample parameter gradients of a network in float64.
type Net interface {
	NumParams() int
	InputDim() int
	// PerSampleGrads writes the n per-sample loss gradients (n×P, row-major) to grads
	// and the losses to losses (nil allowed).
	PerSampleGrads(params, x []float64, y []int, n int, grads, losses []float64) error
}

// InputGrader is a Net that also gives the exact input gradient of ⟨v, clip_C(∇_θℓ)⟩,
// which the gradient-based reconstruction attack needs (MLP implements it).
type InputGrader interface {
	Net
	ClippedDotInputGrad(params, x []float64, y int, v []float64, clip float64, clipped, dx []float64) error
}

// ClippedSummer is an optional fast path of a Net: it adds the sum of the n samples'
// clipped gradients to sum and returns their summed loss (MLP implements it).
type ClippedSummer interface {
	ClippedGradSum(params, x []float64, y []int, n int, clip float64, sum []float64) (float64, error)
}

// Pool is the labelled data the game draws D₋ and the priors from: N samples of D
// values in [0,1] each. The first len(X32)/D samples are stored as float32 in X32 (a
// dataset's own storage: PoolFromDataset shares it instead of copying a float64
// version of the whole split), the remaining len(X)/D as float64 in X (values that
// are not float32, e.g. the uniform prior's noise images). Every value is read as a
// float64 (ImageInto, AppendImages); the float32 → float64 conversion is exact, so
// the attacks compute the same numbers as on a float64 copy. A pool is read-only.
type Pool struct {
	X32 []float32
	X   []float64
	Y   []int
	D   int
}

// n32 is the number of samples stored in X32.
func (p Pool) n32() int {
	if p.D == 0 {
		return 0
	}
	return len(p.X32) / p.D
}

// Head returns the first n samples (all of them when n ≤ 0 or n ≥ N).
func (p Pool) Head(n int) Pool {
	if n <= 0 || n >= p.N() {
		return p
	}
	if m := p.n32(); n > m {
		return Pool{X32: p.X32, X: p.X[:(n-m)*p.D], Y: p.Y[:n], D: p.D}
	}
	return Pool{X32: p.X32[:n*p.D], Y: p.Y[:n], D: p.D}
}

// N is the number of samples.
func (p Pool) N() int {
	if p.D == 0 {
		return 0
	}
	return (len(p.X32) + len(p.X)) / p.D
}

// valid reports whether the pool's value and label counts match its dimension.
func (p Pool) valid() bool {
	return p.D > 0 && len(p.X32)%p.D == 0 && len(p.X)%p.D == 0 && len(p.Y) == p.N()
}

// ImageInto writes sample i as float64 to dst[:D] and returns dst[:D]; dst must have
// room for D values.
func (p Pool) ImageInto(i int, dst []float64) []float64 {
	return p.AppendImages(dst[:0], i, i+1)
}

// AppendImages appends samples lo, …, hi−1 (as float64, D values each) to dst and
// returns the extended slice; it allocates only when dst lacks the capacity.
func (p Pool) AppendImages(dst []float64, lo, hi int) []float64 {
	d, m := p.D, p.n32()
	dst = slices.Grow(dst, (hi-lo)*d)
	if lo < m {
		e := min(hi, m)
		src := p.X32[lo*d : e*d]
		k := len(dst)
		dst = dst[:k+len(src)]
		for j, v := range src {
			dst[k+j] = float64(v)
		}
		lo = e
	}
	if lo < hi {
		dst = append(dst, p.X[(lo-m)*d:(hi-m)*d]...)
	}
	return dst
}

// Attack names.
const (
	AttackPrior     = "prior"      // Hayes et al. Algorithm 2
	AttackPriorTopK = "prior-topk" // Algorithm 3: top ⌈qT⌉ terms
	AttackLogLik    = "loglik"     // Appendix G
	AttackGradient  = "gradient"   // Eq. 1 + nearest prior point (Appendix D)
	// AttackPriorNoSub is Algorithm 2 by an adversary who does not subtract the known
	// examples' clipped gradients: argmax_i Σ_t ⟨clip(∇ℓ(θ_t, z_i)), g_t⟩ on the raw
	// released sum g_t (Hayes et al. App. E, Fig. 10). Run when GameConfig.NoSubtract.
	AttackPriorNoSub = "prior-nosub"
)

// Prior kinds: where a trial's K candidates come from.
const (
	PriorData    = "data"    // the pool outside D₋ (the default; "" means the same)
	PriorUniform = "uniform" // uniform noise matched to the pool's mean pairwise distance (Hayes et al. Fig. 9)
)

// AttackNames lists the attacks the game runs.
func AttackNames() []string {
	return []string{AttackPrior, AttackPriorTopK, AttackLogLik, AttackGradient, AttackPriorNoSub}
}

// GameConfig is one attack game (Hayes et al.'s informed-adversary setting).
type GameConfig struct {
	Known     int     `json:"known"`      // |D₋|, fixed across trials
	PriorSize int     `json:"prior_size"` // K; the target is uniform over the prior
	Steps     int     `json:"steps"`      // T
	Q         float64 `json:"q"`          // Poisson sampling rate; 1 = full batch
	Sigma     float64 `json:"sigma"`      // noise multiplier: noise N(0, σ²C²I)
	Clip      float64 `json:"clip"`       // C (hard clipping)
	LR        float64 `json:"lr"`         // plain SGD on the mean gradient g_t/(q·N)
	Seed      uint64  `json:"seed"`       // D₋, θ₀ and every trial's draws
	// Gradient enables the gradient-based attack (expensive).
	Gradient GradientConfig `json:"gradient"`
	// PriorKind is PriorData ("" too) or PriorUniform.
	PriorKind string `json:"prior_kind,omitempty"`
	// NoSubtract also runs AttackPriorNoSub.
	NoSubtract bool `json:"no_subtract,omitempty"`
}

// DefaultGameConfig is Hayes et al.'s MNIST setting with K = 10 and learning rate 10
// (the paper tuned it per ε; 10 gives ≈ 80 % test accuracy with the mlp at ε = 10).
func DefaultGameConfig() GameConfig {
	return GameConfig{Known: 999, PriorSize: 10, Steps: 100, Q: 1, Sigma: 1, Clip: 0.1, LR: 10, Seed: 1,
		Gradient: DefaultGradientConfig()}
}

// Validate rejects impossible settings.
func (c GameConfig) Validate() error {
	if err := validateGameShape(c.Q, c.Steps, c.PriorSize, c.Known); err != nil {
		return err
	}
	switch {
	case !(c.Sigma >= 0) || math.IsInf(c.Sigma, 0):
		return fmt.Errorf("attack game: noise multiplier σ = %v must be finite and ≥ 0", c.Sigma)
	case !(c.Clip > 0) || math.IsInf(c.Clip, 0):
		return fmt.Errorf("attack game: clip norm C = %v must be positive and finite", c.Clip)
	case !(c.LR >= 0) || math.IsInf(c.LR, 0):
		return fmt.Errorf("attack game: learning rate %v must be finite and ≥ 0", c.LR)
	case c.PriorKind != "" && c.PriorKind != PriorData && c.PriorKind != PriorUniform:
		return fmt.Errorf("attack game: unknown prior kind %q (known: %s, %s)", c.PriorKind, PriorData, PriorUniform)
	}
	return c.Gradient.validate()
}

// validateGameShape checks the settings a game's config and its spec share, in the
// spec's declaration order: the sampling rate q, the steps T, the prior size K and
// the known set size |D₋|.
func validateGameShape(q float64, steps, priorSize, known int) error {
	switch {
	case !(q > 0 && q <= 1):
		return fmt.Errorf("attack game: sampling rate q = %v outside (0, 1]", q)
	case steps < 1:
		return fmt.Errorf("attack game: steps %d < 1", steps)
	case priorSize < 2:
		return fmt.Errorf("attack game: prior size %d < 2 (the target must be guessed among ≥ 2 candidates)", priorSize)
	case known < 0:
		return fmt.Errorf("attack game: known set size %d < 0", known)
	}
	return nil
}

// TopK is ⌈qT⌉, the number of per-step terms the improved prior-aware attack keeps.
func (c GameConfig) TopK() int {
	k := int(math.Ceil(c.Q*float64(c.Steps) - 1e-9))
	return max(1, min(k, c.Steps))
}

// Game is a prepared attack game: the fixed D₋ and θ₀ and the pool the priors come
// from. It is safe for concurrent use by trials when its Net is.
type Game struct {
	cfg       GameConfig
	pool      Pool
	net       Net
	newNet    func() Net
	known     []int // pool indices of D₋
	rest      []int // pool indices priors are drawn from
	knownX    []float64
	knownY    []int
	theta0    []float64
	P         int
	batchSize float64 // expected batch size q·N, N = |D₋| + 1
	eval      *Pool   // optional evaluation pool for the test accuracy
	// noiseHalfWidth is the uniform prior's h (PriorUniform), else 0.
	noiseHalfWidth float64
}

// NewGame draws D₋ (|D₋| = cfg.Known samples, uniformly from the pool) and θ₀ from
// cfg.Seed. newNet returns a Net per worker (Nets need not be safe for concurrent use);
// init draws θ₀ from a seed.
func NewGame(cfg GameConfig, pool Pool, newNet func() Net, init func(seed uint64) []float64) (*Game, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if !pool.valid() {
		return nil, fmt.Errorf("attack game: malformed pool (%d float32 and %d float64 values, %d labels, d = %d)", len(pool.X32), len(pool.X), len(pool.Y), pool.D)
	}
	if pool.N() < cfg.Known+cfg.PriorSize {
		return nil, fmt.Errorf("attack game: pool has %d samples, need |D₋| + K = %d", pool.N(), cfg.Known+cfg.PriorSize)
	}
	for i, v := range pool.X32 {
		if !(v >= 0 && v <= 1) {
			return nil, fmt.Errorf("attack game: pool value %d is %v, outside [0,1]", i, v)
		}
	}
	for i, v := range pool.X {
		if !(v >= 0 && v <= 1) {
			return nil, fmt.Errorf("attack game: pool value %d is %v, outside [0,1]", len(pool.X32)+i, v)
		}
	}
	net := newNet()
	if net.InputDim() != pool.D {
		return nil, fmt.Errorf("attack game: network input dimension %d ≠ data dimension %d", net.InputDim(), pool.D)
	}
	r := rand.New(rand.NewPCG(cfg.Seed, 0xd5e7))
	perm := r.Perm(pool.N())
	g := &Game{cfg: cfg, pool: pool, net: net, newNet: newNet, P: net.NumParams()}
	g.known = append([]int(nil), perm[:cfg.Known]...)
	sort.Ints(g.known)
	g.rest = append([]int(nil), perm[cfg.Known:]...)
	sort.Ints(g.rest)
	g.knownX = make([]float64, 0, cfg.Known*pool.D)
	for _, i := range g.known {
		g.knownX = pool.AppendImages(g.knownX, i, i+1)
		g.knownY = append(g.knownY, pool.Y[i])
	}
	if cfg.PriorKind == PriorUniform {
		if err := g.uniformPrior(r); err != nil {
			return nil, err
		}
	}
	g.theta0 = init(deriveSeed(cfg.Seed, math.MaxUint64))
	if len(g.theta0) != g.P {
		return nil, fmt.Errorf("attack game: init gave %d parameters, network has %d", len(g.theta0), g.P)
	}
	g.batchSize = cfg.Q * float64(cfg.Known+1)
	return g, nil
}

// uniformPrior appends to the game's pool max(1 000, 10·K) images of uniform noise
// around ½, and makes them the only points priors are drawn from (Hayes et al.
// Fig. 9). Their half-width h matches the mean squared distance m₂ between two pool
// points outside D₋ (2 000 random pairs): two images uniform on [½ − h, ½ + h]^d are
// E‖x − y‖² = d·(2h)²/6 apart, so h = √(6·m₂/d)/2. Labels are uniform over the pool's
// classes. It fails when m₂/d > 1/6 (no such noise fits in [0, 1]).
func (g *Game) uniformPrior(r *rand.Rand) error {
	d := g.pool.D
	if len(g.rest) < 2 {
		return fmt.Errorf("attack game: a uniform prior needs ≥ 2 pool points outside D₋ to match their distances")
	}
	const pairs = 2000
	m2 := 0.0
	a, b := make([]float64, d), make([]float64, d)
	for p := 0; p < pairs; p++ {
		i := r.IntN(len(g.rest))
		j := r.IntN(len(g.rest) - 1)
		if j >= i {
			j++
		}
		g.pool.ImageInto(g.rest[i], a)
		g.pool.ImageInto(g.rest[j], b)
		for k := range a {
			e := a[k] - b[k]
			m2 += e * e
		}
	}
	m2 /= pairs
	h := math.Sqrt(6*m2/float64(d)) / 2
	if !(h > 0 && h <= 0.5) {
		return fmt.Errorf("attack game: the pool's mean squared distance %.4g cannot be matched by uniform noise in [0,1]^%d (half-width %.4g)", m2, d, h)
	}
	classes := slices.Max(g.pool.Y) + 1
	m := max(1000, 10*g.cfg.PriorSize)
	n0 := g.pool.N()
	// the noise (float64) follows the pool's float64 samples; the float32 ones are shared
	x := make([]float64, len(g.pool.X), len(g.pool.X)+m*d)
	copy(x, g.pool.X)
	y := slices.Clone(g.pool.Y)
	g.rest = g.rest[:0]
	for i := 0; i < m; i++ {
		for k := 0; k < d; k++ {
			x = append(x, 0.5+h*(2*r.Float64()-1))
		}
		y = append(y, r.IntN(classes))
		g.rest = append(g.rest, n0+i)
	}
	g.pool = Pool{X32: g.pool.X32, X: x, Y: y, D: d}
	g.noiseHalfWidth = h
	return nil
}

// NoiseHalfWidth is the uniform prior's half-width h (0 for a data prior).
func (g *Game) NoiseHalfWidth() float64 { return g.noiseHalfWidth }

// Config returns the game's configuration.
func (g *Game) Config() GameConfig { return g.cfg }

// Known returns the pool indices of D₋.
func (g *Game) Known() []int { return slices.Clone(g.known) }

// Theta0 returns a copy of the initial parameters.
func (g *Game) Theta0() []float64 { return slices.Clone(g.theta0) }

// deriveSeed mixes a base seed and an index into an independent 64-bit seed
// (SplitMix64 finaliser).
func deriveSeed(seed, i uint64) uint64 { return splitmix.Mix(seed ^ (i+1)*splitmix.Golden) }

// TrialResult is one finished trial: one JSON line of trials.jsonl.
type TrialResult struct {
	Trial       int             `json:"trial"`
	Prior       []int           `json:"prior"`        // pool indices of the prior
	Target      int             `json:"target"`       // position of the target in the prior
	Guess       map[string]int  `json:"guess"`        // per attack: guessed prior position
	Success     map[string]bool `json:"success"`      // per attack
	TargetSteps int             `json:"target_steps"` // steps whose batch held the target
	// Gradient attack only: MSE of the reconstruction to the target and the
	// reconstruction's loss value (Eq. 1).
	GradientMSE  *float64 `json:"gradient_mse,omitempty"`
	GradientLoss *float64 `json:"gradient_loss,omitempty"`
	// Reconstruction is the gradient attack's reconstructed input (Hayes et al.
	// Fig. 6a draws them beside their targets).
	Reconstruction []float64 `json:"reconstruction,omitempty"`
	FinalLoss      float64   `json:"final_loss"` // mean training loss of D₋ at θ_T
	// PriorCosine is the mean over steps and non-target candidates of the cosine
	// between their clipped gradients and the target's: the correlation that keeps the
	// prior-aware attack below the ReRo bound (the bound is met by orthogonal ones).
	PriorCosine float64 `json:"prior_cosine"`
	// ClippedNorm is the mean over steps and prior candidates of their clipped
	// gradients' norms ‖clip_C(∇ℓ(θ_t, z_i))‖ (Hayes et al. Fig. 13a: C when every
	// gradient is clipped), and Clipped the fraction of those gradients that were.
	ClippedNorm float64 `json:"clipped_norm"`
	Clipped     float64 `json:"clipped_fraction"`
	// OptimalSuccess is the best possible prior-aware attack's expected success on this
	// trial's candidate gradients (OptimalSuccess): measured at q = 1, σ > 0 and
	// K ≤ 32, nil otherwise.
	OptimalSuccess *float64 `json:"optimal_success,omitempty"`
	// TestAccuracy of θ_T on the evaluation pool (see Game.SetEval); omitted without one.
	TestAccuracy *float64 `json:"test_accuracy,omitempty"`
}

// Logitser is an optional Net capability: batched logits, used for the test accuracy
// of the trained model.
type Logitser interface {
	NumClasses() int
	Logits(params, x []float64, n int, out []float64) error
}

// SetEval sets a labelled pool (e.g. the test split) on which every trial reports the
// accuracy of its final parameters θ_T. The Net must implement Logitser.
func (g *Game) SetEval(p Pool) error {
	if !p.valid() || p.D != g.pool.D || p.N() == 0 {
		return fmt.Errorf("attack game: evaluation pool has %d samples of dimension %d, want dimension %d", p.N(), p.D, g.pool.D)
	}
	if _, ok := g.net.(Logitser); !ok {
		return fmt.Errorf("attack game: the network cannot compute logits for the test accuracy")
	}
	g.eval = &p
	return nil
}

// evalChunk is the number of evaluation samples whose logits are computed at once.
const evalChunk = 256

// accuracy is the fraction of the evaluation pool that theta classifies correctly;
// the chunks of the pool are read into the worker's scratch st.evalX.
func (g *Game) accuracy(st *trialState, theta []float64) (float64, error) {
	lg, ok := st.net.(Logitser)
	if !ok {
		return 0, fmt.Errorf("the network cannot compute logits")
	}
	n, classes := g.eval.N(), lg.NumClasses()
	right := 0
	if len(st.evalOut) < evalChunk*classes {
		st.evalOut = make([]float64, evalChunk*classes)
	}
	out := st.evalOut
	for s := 0; s < n; s += evalChunk {
		e := min(n, s+evalChunk)
		st.evalX = g.eval.AppendImages(st.evalX[:0], s, e)
		if err := lg.Logits(theta, st.evalX, e-s, out[:(e-s)*classes]); err != nil {
			return 0, err
		}
		for i := 0; i < e-s; i++ {
			if argmax(out[i*classes:(i+1)*classes]) == g.eval.Y[s+i] {
				right++
			}
		}
	}
	return float64(right) / float64(n), nil
}

// Observation is what the informed adversary derives from the transcript at step t:
// the parameters θ_t and the privatised gradient minus the clipped gradients of the
// known batch members, ḡ_t.
type Observation struct {
	Theta []float64
	GBar  []float64
}

// trialState is one worker's scratch space.
type trialState struct {
	net    Net
	grads  []float64
	losses []float64
	sum    []float64
	gbar   []float64
	ci     []float64 // K×P clipped prior gradients at θ_t
	chunkX []float64
	chunkY []int
	priorX []float64 // K×D images of the trial's prior
	priorY []int
	// evalX and evalOut hold a chunk of the evaluation pool and its logits (allocated
	// on first use).
	evalX, evalOut []float64
}

const gradChunk = 64

func (g *Game) newState() *trialState {
	K := g.cfg.PriorSize
	st := &trialState{
		net:    g.newNet(),
		losses: make([]float64, gradChunk),
		sum:    make([]float64, g.P),
		gbar:   make([]float64, g.P),
		ci:     make([]float64, K*g.P),
		chunkX: make([]float64, 0, gradChunk*g.pool.D),
		chunkY: make([]int, 0, gradChunk),
		priorX: make([]float64, 0, K*g.pool.D),
		priorY: make([]int, 0, K),
	}
	// The per-sample gradients of a chunk of D₋ (a chunk never holds more than |D₋|
	// samples); a ClippedSummer sums the chunk without them. With P parameters a full
	// chunk is 64·P float64s: 282 MB for cifar-cnn (P = 550 570), 407 MB for the mlp of
	// --hidden 1000.
	if _, ok := st.net.(ClippedSummer); !ok {
		st.grads = make([]float64, min(gradChunk, max(1, len(g.known)))*g.P)
	}
	return st
}

// clipRows hard-clips each of the n rows of grads (n×P) to norm ≤ C in place and
// returns nothing; norms are written to norms when non-nil.
func clipRows(grads []float64, n, P int, c float64, norms []float64) {
	for s := 0; s < n; s++ {
		row := grads[s*P : (s+1)*P]
		nn := 0.0
		for _, v := range row {
			nn += v * v
		}
		nn = math.Sqrt(nn)
		if nn > c {
			f := c / nn
			for i := range row {
				row[i] *= f
			}
			nn = c
		}
		if norms != nil {
			norms[s] = nn
		}
	}
}

// knownClippedSum writes Σ clip_C(∇ℓ(θ, z)) over the known points z with member[i]
// (all when member is nil) to st.sum and returns their mean loss.
func (g *Game) knownClippedSum(st *trialState, theta []float64, member []bool) (float64, error) {
	clear(st.sum)
	lossSum, cnt := 0.0, 0
	flush := func() error {
		n := len(st.chunkY)
		if n == 0 {
			return nil
		}
		if cs, ok := st.net.(ClippedSummer); ok {
			l, err := cs.ClippedGradSum(theta, st.chunkX, st.chunkY, n, g.cfg.Clip, st.sum)
			if err != nil {
				return fmt.Errorf("clipped gradient sum of D₋: %w", err)
			}
			lossSum += l
			cnt += n
			st.chunkX, st.chunkY = st.chunkX[:0], st.chunkY[:0]
			return nil
		}
		if err := st.net.PerSampleGrads(theta, st.chunkX, st.chunkY, n, st.grads[:n*g.P], st.losses[:n]); err != nil {
			return fmt.Errorf("per-sample gradients of D₋: %w", err)
		}
		clipRows(st.grads, n, g.P, g.cfg.Clip, nil)
		for s := 0; s < n; s++ {
			row := st.grads[s*g.P : (s+1)*g.P]
			for i, v := range row {
				st.sum[i] += v
			}
			lossSum += st.losses[s]
		}
		cnt += n
		st.chunkX, st.chunkY = st.chunkX[:0], st.chunkY[:0]
		return nil
	}
	D := g.pool.D
	for j := range g.known {
		if member != nil && !member[j] {
			continue
		}
		st.chunkX = append(st.chunkX, g.knownX[j*D:(j+1)*D]...)
		st.chunkY = append(st.chunkY, g.knownY[j])
		if len(st.chunkY) == gradChunk {
			if err := flush(); err != nil {
				return 0, err
			}
		}
	}
	if err := flush(); err != nil {
		return 0, err
	}
	if cnt == 0 {
		return 0, nil
	}
	return lossSum / float64(cnt), nil
}

// priorClipped writes the clipped gradients of the K prior points at theta to st.ci
// and their norms to norms.
func (g *Game) priorClipped(st *trialState, theta []float64, prior []int, norms []float64) error {
	K := len(prior)
	x, y := st.priorX[:0], st.priorY[:0]
	for _, i := range prior {
		x = g.pool.AppendImages(x, i, i+1)
		y = append(y, g.pool.Y[i])
	}
	st.priorX, st.priorY = x, y
	if err := st.net.PerSampleGrads(theta, x, y, K, st.ci, nil); err != nil {
		return fmt.Errorf("per-sample gradients of the prior: %w", err)
	}
	clipRows(st.ci, K, g.P, g.cfg.Clip, norms)
	return nil
}

// Scores are the per-step statistics of each prior candidate from which the
// prior-aware attacks decide: Dot[t][i] = ⟨clip(∇ℓ(θ_t, z_i)), ḡ_t⟩/C² (normalised so
// the target term has mean ‖clip‖²/C² ≤ 1), NormSq[t][i] = ‖clip(∇ℓ(θ_t, z_i))‖²/C².
type Scores struct {
	Dot, NormSq [][]float64
	// Raw[t][i] = ⟨clip(∇ℓ(θ_t, z_i)), g_t⟩/C² on the released sum g_t itself, the
	// known examples' gradients not subtracted (nil unless GameConfig.NoSubtract).
	Raw [][]float64
}

// decide applies every prior-aware attack to the scores.
func decide(s Scores, q, sigma float64, topK int) map[string]int {
	K := len(s.Dot[0])
	T := len(s.Dot)
	plain := make([]float64, K)
	top := make([]float64, K)
	ll := make([]float64, K)
	col := make([]float64, T)
	for i := 0; i < K; i++ {
		for t := 0; t < T; t++ {
			col[t] = s.Dot[t][i]
			plain[i] += col[t]
		}
		sort.Sort(sort.Reverse(sort.Float64Slice(col)))
		for _, v := range col[:topK] {
			top[i] += v
		}
		ll[i] = logLikelihood(s.Dot, s.NormSq, i, q, sigma)
	}
	out := map[string]int{AttackPrior: argmax(plain), AttackPriorTopK: argmax(top), AttackLogLik: argmax(ll)}
	if s.Raw != nil {
		raw := make([]float64, K)
		for t := range s.Raw {
			for i, v := range s.Raw[t] {
				raw[i] += v
			}
		}
		out[AttackPriorNoSub] = argmax(raw)
	}
	return out
}

// logLikelihood is Hayes et al. App. G's s_z for candidate i: Σ_t ln(1 − q + q·
// exp(−(‖ḡ_t − c_t‖² − ‖ḡ_t‖²)/(2σ²C²))), the log-likelihood ratio of the observations
// when z_i was the target (the paper prints "+‖ḡ_t‖²"; the likelihood ratio of
// N(c_t, σ²C²I) to N(0, σ²C²I) at ḡ_t needs "−"). With ‖ḡ − c‖² − ‖ḡ‖² = ‖c‖² − 2⟨c, ḡ⟩
// and the /C² normalisation of Scores the exponent is (2·Dot − NormSq)/(2σ²).
func logLikelihood(dot, normSq [][]float64, i int, q, sigma float64) float64 {
	s := 0.0
	for t := range dot {
		e := (2*dot[t][i] - normSq[t][i]) / (2 * sigma * sigma)
		if sigma == 0 {
			// σ → 0 limit: the sign of the exponent decides.
			e = math.Copysign(math.Inf(1), 2*dot[t][i]-normSq[t][i])
		}
		if q == 1 {
			s += e
			continue
		}
		// ln(1 − q + q·e^e) computed stably.
		a, b := math.Log1p(-q), math.Log(q)+e
		s += logAddExp(a, b)
	}
	return s
}

func logAddExp(a, b float64) float64 {
	if math.IsInf(a, -1) {
		return b
	}
	if math.IsInf(b, -1) {
		return a
	}
	if a < b {
		a, b = b, a
	}
	if math.IsInf(a, 1) {
		return a
	}
	return a + math.Log1p(math.Exp(b-a))
}

// argmax returns the first index of the largest value (NaN never wins).
func argmax(v []float64) int {
	best := 0
	for i, x := range v {
		if x > v[best] || (math.IsNaN(v[best]) && !math.IsNaN(x)) {
			best = i
		}
	}
	return best
}

// trialDraws are the random choices of one trial.
type trialDraws struct {
	prior  []int
	target int
	rng    *rand.Rand
}

func (g *Game) draws(trial int) trialDraws {
	r := rand.New(rand.NewPCG(deriveSeed(g.cfg.Seed, uint64(trial)), 0x7472))
	idx := r.Perm(len(g.rest))[:g.cfg.PriorSize]
	prior := make([]int, len(idx))
	for i, j := range idx {
		prior[i] = g.rest[j]
	}
	return trialDraws{prior: prior, target: r.IntN(g.cfg.PriorSize), rng: r}
}

// Trial runs trial number `trial`: a fresh prior of K points drawn from the pool
// outside D₋, a target uniform over it, T steps of DP-SGD on D₋ ∪ {target} (hard
// clipping, Poisson sampling with rate q, noise N(0, σ²C²I), θ ← θ − lr·g_t/(qN)),
// then every prior-aware attack (and the gradient attack when enabled). observe, when
// non-nil, receives every step's released gradient, the known batch membership and the
// adversary's observation (for transcripts). The trial's randomness flows only from
// (Seed, trial), so results do not depend on scheduling.
func (g *Game) Trial(ctx context.Context, trial int, observe func(t int, released []float64, knownMember []bool, obs Observation) error) (*TrialResult, error) {
	return g.trial(ctx, g.newState(), trial, observe)
}

func (g *Game) trial(ctx context.Context, st *trialState, trial int, observe func(int, []float64, []bool, Observation) error) (*TrialResult, error) {
	cfg := g.cfg
	dr := g.draws(trial)
	target := dr.prior[dr.target]
	theta := slices.Clone(g.theta0)
	K, T, P := cfg.PriorSize, cfg.Steps, g.P
	sc := Scores{Dot: make([][]float64, T), NormSq: make([][]float64, T)}
	if cfg.NoSubtract {
		sc.Raw = make([][]float64, T)
	}
	var obs []Observation
	keep := cfg.Gradient.Enabled
	var member []bool
	if cfg.Q < 1 {
		member = make([]bool, len(g.known))
	}
	released := make([]float64, P)
	norms := make([]float64, K)
	res := &TrialResult{Trial: trial, Prior: dr.prior, Target: dr.target}
	nClipped := 0 // of the T·K prior gradients (a count: a sum of 1/(T·K) can pass 1)
	c2 := cfg.Clip * cfg.Clip
	var gram []float64 // Σ_t ⟨c_i, c_j⟩/C² of the prior, for OptimalSuccess
	if cfg.Q == 1 && cfg.Sigma > 0 && K <= optimalMaxK {
		gram = make([]float64, K*K)
	}
	for t := 0; t < T; t++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		targetIn := true
		if cfg.Q < 1 {
			for j := range member {
				member[j] = dr.rng.Float64() < cfg.Q
			}
			targetIn = dr.rng.Float64() < cfg.Q
		}
		loss, err := g.knownClippedSum(st, theta, member)
		if err != nil {
			return nil, fmt.Errorf("trial %d step %d: %w", trial, t, err)
		}
		if t == T-1 && cfg.Q == 1 {
			res.FinalLoss = loss
		}
		// The prior's clipped gradients at θ_t; the target is one of them.
		if err := g.priorClipped(st, theta, dr.prior, norms); err != nil {
			return nil, fmt.Errorf("trial %d step %d: %w", trial, t, err)
		}
		ns := cfg.Sigma * cfg.Clip
		for i := range released {
			released[i] = st.sum[i] + ns*dr.rng.NormFloat64()
		}
		if targetIn {
			res.TargetSteps++
			tc := st.ci[dr.target*P : (dr.target+1)*P]
			for i := range released {
				released[i] += tc[i]
			}
		}
		// The adversary: subtract the known batch members' clipped gradients.
		for i := range st.gbar {
			st.gbar[i] = released[i] - st.sum[i]
		}
		tc := st.ci[dr.target*P : (dr.target+1)*P]
		for k := 0; k < K; k++ {
			if k == dr.target || norms[k] == 0 || norms[dr.target] == 0 {
				continue
			}
			d := 0.0
			for i, v := range st.ci[k*P : (k+1)*P] {
				d += v * tc[i]
			}
			res.PriorCosine += d / (norms[k] * norms[dr.target]) / float64(T*(K-1))
		}
		if gram != nil { // upper triangle += c·cᵀ/C²
			blas64.Syrk(blas.NoTrans, 1/c2, blas64.General{Rows: K, Cols: P, Stride: P, Data: st.ci[:K*P]},
				1, blas64.Symmetric{Uplo: blas.Upper, N: K, Stride: K, Data: gram})
		}
		sc.Dot[t] = make([]float64, K)
		sc.NormSq[t] = make([]float64, K)
		if sc.Raw != nil {
			sc.Raw[t] = make([]float64, K)
		}
		for k := 0; k < K; k++ {
			row := st.ci[k*P : (k+1)*P]
			d := 0.0
			for i, v := range row {
				d += v * st.gbar[i]
			}
			sc.Dot[t][k] = d / c2
			sc.NormSq[t][k] = norms[k] * norms[k] / c2
			if sc.Raw != nil {
				d = 0
				for i, v := range row {
					d += v * released[i]
				}
				sc.Raw[t][k] = d / c2
			}
			res.ClippedNorm += norms[k] / float64(T*K)
			if norms[k] >= cfg.Clip*(1-1e-12) {
				nClipped++
			}
		}
		if keep || observe != nil {
			o := Observation{Theta: slices.Clone(theta), GBar: slices.Clone(st.gbar)}
			if keep {
				obs = append(obs, o)
			}
			if observe != nil {
				if err := observe(t, released, member, o); err != nil {
					return nil, fmt.Errorf("trial %d step %d: record: %w", trial, t, err)
				}
			}
		}
		step := cfg.LR / g.batchSize
		for i := range theta {
			theta[i] -= step * released[i]
		}
	}
	res.Clipped = float64(nClipped) / float64(T*K)
	if cfg.Q < 1 {
		loss, err := g.knownClippedSum(st, theta, nil)
		if err != nil {
			return nil, fmt.Errorf("trial %d: final loss: %w", trial, err)
		}
		res.FinalLoss = loss
	}
	for _, v := range theta {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("trial %d: %w; lower --lr", trial, ErrDiverged)
		}
	}
	if g.eval != nil {
		acc, err := g.accuracy(st, theta)
		if err != nil {
			return nil, fmt.Errorf("trial %d: test accuracy: %w", trial, err)
		}
		res.TestAccuracy = &acc
	}
	res.Guess = decide(sc, cfg.Q, cfg.Sigma, cfg.TopK())
	if gram != nil {
		for i := 0; i < K; i++ {
			for j := 0; j < i; j++ {
				gram[i*K+j] = gram[j*K+i]
			}
		}
		// Its own stream, so that the trial's draws are those of a run without it.
		r := rand.New(rand.NewPCG(deriveSeed(cfg.Seed, uint64(trial)), 0x6f7074))
		o, err := OptimalSuccess(gram, K, cfg.Sigma, optimalDraws/K, r)
		if err != nil {
			return nil, fmt.Errorf("trial %d: %w", trial, err)
		}
		res.OptimalSuccess = &o
	}
	if keep {
		rec, err := g.gradientAttack(ctx, st, trial, target, obs)
		if err != nil {
			return nil, err
		}
		res.GradientMSE = &rec.MSE
		res.GradientLoss = &rec.Loss
		res.Reconstruction = rec.X
		res.Guess[AttackGradient] = nearest(g.pool, dr.prior, rec.X)
	}
	res.Success = map[string]bool{}
	for a, gi := range res.Guess {
		res.Success[a] = gi == dr.target
	}
	return res, nil
}

// ErrDiverged is wrapped by a trial whose training ended with non-finite parameters.
var ErrDiverged = errors.New("training diverged (non-finite parameters)")

// nearest returns the position in prior of the pool point closest (L2) to x.
func nearest(p Pool, prior []int, x []float64) int {
	best, bd := 0, math.Inf(1)
	img := make([]float64, p.D)
	for k, i := range prior {
		d := 0.0
		for j, v := range p.ImageInto(i, img) {
			e := v - x[j]
			d += e * e
		}
		if d < bd {
			best, bd = k, d
		}
	}
	return best
}

// TranscriptRecorder returns a RunOptions.Record function that writes each trial's
// transcript to dir/trial-NNNNNN.dpft: base (model, dataset, …) completed with the
// game's hyperparameters, D₋ and the trial's prior. Pool indices are written as the
// dataset indices, so the pool should be the dataset split itself.
func (g *Game) TranscriptRecorder(dir string, base transcript.Header) func(trial int) (func(int, []float64, []bool, Observation) error, func() error, error) {
	return func(trial int) (func(int, []float64, []bool, Observation) error, func() error, error) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, nil, fmt.Errorf("transcripts: %w", err)
		}
		h := base
		h.NumParams = g.P
		h.Known = g.Known()
		h.Steps, h.Q, h.Sigma, h.Clip, h.LR = g.cfg.Steps, g.cfg.Q, g.cfg.Sigma, g.cfg.Clip, g.cfg.LR
		h.BatchDenominator, h.Seed, h.Trial = g.batchSize, g.cfg.Seed, trial
		h.Prior = g.draws(trial).prior
		th := make([]float32, g.P)
		for i, v := range g.theta0 {
			th[i] = float32(v)
		}
		w, err := transcript.Create(filepath.Join(dir, fmt.Sprintf("trial-%06d.dpft", trial)), h, th)
		if err != nil {
			return nil, nil, err
		}
		observe := func(t int, released []float64, member []bool, _ Observation) error {
			return w.WriteStep(t, released, member)
		}
		return observe, w.Close, nil
	}
}
