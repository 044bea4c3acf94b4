package accounting

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
)

// ReRo bounds (Hayes, Mahloujifar, Balle 2023): the probability γ that any
// reconstruction attack on T steps of DP-SGD with sampling rate q and noise multiplier
// σ succeeds, when a prior guess succeeds with probability κ, is at most the blow-up
// γ = sup{P_μ(E) : P_ν(E) ≤ κ} with ν = N(0, σ²I_T) and
// μ = Σ_w P[Bern(q)^T = w]·N(w, σ²I_T).

// KappaFromPriorSize is the baseline success probability κ = 1/K of guessing from a
// uniform prior over K candidates (exact reconstruction).
func KappaFromPriorSize(k int) (float64, error) {
	if k < 1 {
		return 0, fmt.Errorf("prior size %d must be ≥ 1", k)
	}
	return 1 / float64(k), nil
}

func checkKappaReRo(kappa float64) error {
	if math.IsNaN(kappa) || kappa <= 0 || kappa > 1 {
		return fmt.Errorf("baseline success probability kappa = %v must be in (0, 1]", kappa)
	}
	return nil
}

// Advantage is the reconstruction advantage (γ − κ)/(1 − κ) (0 when κ = 1).
func Advantage(gamma, kappa float64) float64 {
	if kappa >= 1 {
		return 0
	}
	return (gamma - kappa) / (1 - kappa)
}

// stdNormalCDF is Φ(x).
func stdNormalCDF(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }

// ReRoClosedForm is the exact blow-up for full-batch DP-SGD (q = 1): μ = N(1, σ²I_T),
// the Neyman–Pearson test thresholds Σ_t w_t, and γ = Φ(√T/σ − Φ⁻¹(1 − κ)).
func ReRoClosedForm(sigma float64, steps int, kappa float64) (float64, error) {
	if err := checkQSigma(1, sigma); err != nil {
		return 0, err
	}
	if steps < 0 {
		return 0, fmt.Errorf("number of steps %d must be ≥ 0", steps)
	}
	if err := checkKappaReRo(kappa); err != nil {
		return 0, err
	}
	if kappa == 1 {
		return 1, nil
	}
	if kappa < 1e-8 {
		// math.Erfcinv(x) is Erfinv(1 − x): it loses x's digits as x → 0 (all of them
		// below 1e-16, where it returns +Inf and γ would be 0).
		lg, err := ReRoClosedFormLog(sigma, steps, math.Log(kappa))
		return math.Exp(lg), err
	}
	// Φ⁻¹(1 − κ) = √2·erfcinv(2κ).
	return stdNormalCDF(math.Sqrt(float64(steps))/sigma - math.Sqrt2*math.Erfcinv(2*kappa)), nil
}

// ReRoRDP is the RDP-based ReRo bound (Balle et al. 2022): a (α, ε_α)-RDP mechanism is
// (η, γ)-ReRo with γ = (κ·e^{ε_α})^{(α−1)/α}; it returns the minimum over the orders
// (DefaultOrders if nil), capped at 1, and the minimising order.
func ReRoRDP(q, sigma float64, steps int, kappa float64, orders []float64) (gamma, order float64, err error) {
	if err := checkKappaReRo(kappa); err != nil {
		return 0, 0, err
	}
	if steps < 0 {
		return 0, 0, fmt.Errorf("number of steps %d must be ≥ 0", steps)
	}
	r := NewRDP(orders)
	if err := r.Compose(q, sigma, steps); err != nil {
		return 0, 0, err
	}
	best, bestOrder := math.Inf(1), math.NaN()
	for k, a := range r.Orders {
		lg := (a - 1) / a * (math.Log(kappa) + r.Values[k])
		if lg < best {
			best, bestOrder = lg, a
		}
	}
	return math.Min(1, math.Exp(best)), bestOrder, nil
}

// ReRoConfig configures the Monte Carlo estimate of the blow-up function.
type ReRoConfig struct {
	Q, Sigma   float64
	Steps      int
	Kappa      float64
	Samples    int     // N draws from ν (default 1 000 000)
	MuSamples  int     // draws from μ for the confidence interval (default Samples)
	Seed       uint64  // every draw flows from it, per chunk, independent of Workers
	Confidence float64 // confidence level of [GammaLow, GammaHigh] (default 0.95)
	Workers    int     // goroutines (default runtime.NumCPU())
	// Progress, if set, is called after each chunk of 2048 draws with the number of
	// draws done and the total planned (ν and μ draws); calls are serialised.
	Progress func(done, total int64)
}

// reroProgress serialises progress reports from the workers.
type reroProgress struct {
	mu          sync.Mutex
	done, total int64
	fn          func(done, total int64)
}

func (p *reroProgress) add(n int) {
	if p == nil || p.fn == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done += int64(n)
	p.fn(min(p.done, p.total), p.total)
}

// ReRoResult is a Monte Carlo ReRo estimate with its confidence interval, the q = 1
// closed form when it applies, and the RDP-based bound.
type ReRoResult struct {
	// Gamma is the reported blow-up: the q = 1 closed form when q = 1; otherwise
	// GammaNu, unless GammaNu falls outside the confidence interval or is more than 0.1
	// from GammaMu (the ν draws missed μ's mass), in which case GammaMu and Warning
	// says so.
	Gamma float64 `json:"gamma"`
	// GammaNu is the estimator of Hayes, Mahloujifar & Balle (2023, Algorithm 1) with
	// the 1/N normalisation:
	// (1/N)·Σ of the ⌈κN⌉ largest likelihood ratios among N draws from ν, capped at 1.
	GammaNu float64 `json:"gamma_nu"`
	// GammaMu is the fraction of N draws from μ whose log-ratio reaches the empirical
	// ν-quantile τ̂_κ (the same event, estimated under μ; bounded, so well behaved
	// when r has a heavy tail under ν).
	GammaMu   float64 `json:"gamma_mu"`
	GammaLow  float64 `json:"gamma_low"`  // lower confidence limit (DKW under ν and μ)
	GammaHigh float64 `json:"gamma_high"` // upper confidence limit
	Advantage float64 `json:"advantage"`  // (γ − κ)/(1 − κ) for Gamma
	GammaRDP  float64 `json:"gamma_rdp"`  // min_α (κ e^{ε_α})^{(α−1)/α}
	RDPOrder  float64 `json:"rdp_order"`
	// GammaExact is the q = 1 closed form (nil when q < 1).
	GammaExact *float64 `json:"gamma_exact,omitempty"`
	Kappa      float64  `json:"kappa"`
	Samples    int      `json:"samples"`
	Selected   int      `json:"selected"`   // ⌈κN⌉
	DKWEps     float64  `json:"dkw_eps"`    // √(ln(4/β)/(2N)), the CDF error of the DKW bound under ν
	MuSamples  int      `json:"mu_samples"` // draws from μ
	DKWEpsMu   float64  `json:"dkw_eps_mu"` // √(ln(4/β)/(2N_μ)), the same under μ
	Confidence float64  `json:"confidence"` // of [GammaLow, GammaHigh]
	Stored     int      `json:"stored"`     // log-ratios held in memory for the exact selection
	Passes     int      `json:"passes"`     // passes over the ν samples (1 unless the pilot window missed)
	// Warning is set when Gamma lies outside the confidence interval or differs from
	// GammaMu by more than 0.1: the ν draws missed where μ puts its mass (typical
	// when √T/σ is large); use GammaHigh as the bound.
	Warning string `json:"warning,omitempty"`
}

// reroDefaultSamples is the default number of ν draws.
const reroDefaultSamples = 1_000_000

// reroChunk is the number of samples per chunk; chunk c draws from its own stream
// seeded by (Seed, c), so the result does not depend on the number of workers.
const reroChunk = 2048

// reroPilot is the number of leading samples that set the selection window.
const reroPilot = 1 << 17

// muStream offsets the stream indices of the μ draws from those of the ν draws.
const muStream = 1 << 40

// chunkStats is what one chunk of ν draws contributes: exact aggregates of the
// samples above the window and the log-ratios inside it (those below are dropped).
type chunkStats struct {
	above   int
	sumU    float64 // Σ r/N above the window
	window  []float64
	allRows []float64 // pilot only: every log-ratio of the chunk
}

// ceilCount returns ⌈x⌉ for a count, tolerant to round-off just above an integer.
func ceilCount(x float64) int {
	r := math.Round(x)
	if math.Abs(x-r) < 1e-9*math.Max(1, math.Abs(x)) {
		return int(r)
	}
	return int(math.Ceil(x))
}

// ReRoMonteCarlo estimates γ = B_κ(μ, ν) (Hayes et al. Algorithm 1 with the correct
// 1/N normalisation; Hayes, Mahloujifar & Balle 2023, "Bounding training data
// reconstruction in DP-SGD"): draw N samples W ∼ ν, compute the log likelihood ratio
// log r(W) = Σ_t log(1 − q + q·exp((2W_t − 1)/(2σ²))), and average r over the ⌈κN⌉
// largest, dividing by N.
//
// Memory: the ν draws are streamed in chunks over all workers. A pilot (the first
// 2^17 draws) locates the selection threshold; then only log-ratios in a window
// around the thresholds needed (ranks ⌈(κ±ε)N⌉) are stored, those above it are summed
// exactly and those below dropped. If the window misses, the pass is repeated
// with a wider window over the same (re-generated) draws, so the selection is always
// exact; for N = 10^7 about 2–3% of the draws are stored.
//
// Confidence interval at level 1 − β (both parts rigorous, no plug-in moments): the
// DKW inequality under ν (β/2) puts the true κ-quantile τ_κ of log r between the
// ⌈(κ+ε)N⌉-th and the ⌈(κ−ε)N⌉-th largest ν draw, ε = √(ln(4/β)/(2N)); γ = P_μ(log r ≥
// τ_κ) is monotone in the threshold, and a second DKW inequality (β/2) over N
// independent draws from μ (w ∼ Bern(q)^T, W = w + σZ; N_μ = MuSamples, default N)
// bounds the empirical probabilities of the two thresholds by ±ε_μ. The indicator is bounded, so this holds
// however heavy the tail of r under ν is.
func ReRoMonteCarlo(cfg ReRoConfig) (ReRoResult, error) {
	return reroMonteCarlo(cfg, 1)
}

// reroMonteCarlo is ReRoMonteCarlo with the pilot window's margin scaled by
// marginScale (tests use a tiny scale to force the wider-window retries).
func reroMonteCarlo(cfg ReRoConfig, marginScale float64) (ReRoResult, error) {
	if err := checkQSigma(cfg.Q, cfg.Sigma); err != nil {
		return ReRoResult{}, err
	}
	if cfg.Steps < 1 {
		return ReRoResult{}, fmt.Errorf("number of steps %d must be ≥ 1", cfg.Steps)
	}
	if err := checkKappaReRo(cfg.Kappa); err != nil {
		return ReRoResult{}, err
	}
	if cfg.Samples == 0 {
		cfg.Samples = reroDefaultSamples
	}
	if cfg.Samples < 1 {
		return ReRoResult{}, fmt.Errorf("number of samples %d must be ≥ 1", cfg.Samples)
	}
	if cfg.MuSamples == 0 {
		cfg.MuSamples = cfg.Samples
	}
	if cfg.MuSamples < 1 {
		return ReRoResult{}, fmt.Errorf("number of mixture samples %d must be ≥ 1", cfg.MuSamples)
	}
	if cfg.Confidence == 0 {
		cfg.Confidence = 0.95
	}
	if math.IsNaN(cfg.Confidence) || cfg.Confidence <= 0 || cfg.Confidence >= 1 {
		return ReRoResult{}, fmt.Errorf("confidence %v must be in (0, 1)", cfg.Confidence)
	}
	if cfg.Workers <= 0 {
		cfg.Workers = runtime.NumCPU()
	}
	n := cfg.Samples
	fn := float64(n)
	logN := math.Log(fn)
	beta := 1 - cfg.Confidence
	dkw := math.Sqrt(math.Log(4/beta) / (2 * fn))
	k := max(1, min(n, ceilCount(cfg.Kappa*fn)))
	kLo := max(0, ceilCount((cfg.Kappa-dkw)*fn)) // 0: no lower threshold
	kHi := min(n, ceilCount((cfg.Kappa+dkw)*fn))
	// The upper interval end uses the (kHi+1)-th largest draw: with at most
	// (κ+ε)N ≤ kHi draws at or above τ_κ, it lies strictly below τ_κ.
	kHi1 := min(n, kHi+1)

	nMu := float64(cfg.MuSamples)
	dkwMu := math.Sqrt(math.Log(4/beta) / (2 * nMu))
	res := ReRoResult{Kappa: cfg.Kappa, Samples: n, Selected: k, DKWEps: dkw, Confidence: cfg.Confidence,
		MuSamples: cfg.MuSamples, DKWEpsMu: dkwMu}
	var err error
	if res.GammaRDP, res.RDPOrder, err = ReRoRDP(cfg.Q, cfg.Sigma, cfg.Steps, cfg.Kappa, nil); err != nil {
		return ReRoResult{}, err
	}
	if cfg.Q == 1 {
		g, err := ReRoClosedForm(cfg.Sigma, cfg.Steps, cfg.Kappa)
		if err != nil {
			return ReRoResult{}, err
		}
		res.GammaExact = &g
	}

	if cfg.Q == 0 {
		// μ = ν: r ≡ 1, no event is more likely under μ; γ = κ exactly (and every
		// log-ratio would tie at 0, which the threshold selection cannot split).
		res.Gamma, res.GammaNu, res.GammaMu, res.GammaLow, res.GammaHigh = cfg.Kappa, cfg.Kappa, cfg.Kappa, cfg.Kappa, cfg.Kappa
		return res, nil
	}
	gen := newRatioGen(cfg.Q, cfg.Sigma, cfg.Steps)
	nChunks := (n + reroChunk - 1) / reroChunk
	pilotChunks := min(nChunks, reroPilot/reroChunk)

	// Pilot: the first chunks, every log-ratio kept.
	prog := &reroProgress{total: int64(n) + int64(cfg.MuSamples), fn: cfg.Progress}
	pilot := runChunks(cfg, gen, prog, 0, pilotChunks, math.Inf(-1), math.Inf(1), true)
	var pl []float64
	for _, c := range pilot {
		pl = append(pl, c.allRows...)
	}
	sort.Float64s(pl)
	pn := float64(len(pl))
	// edge returns the pilot value with a fraction frac of the pilot above it.
	edge := func(frac float64) float64 {
		if frac <= 0 {
			return math.Inf(1)
		}
		if frac >= 1 {
			return math.Inf(-1)
		}
		i := min(max(int(math.Floor((1-frac)*pn)), 0), len(pl)-1)
		return pl[i]
	}
	margin := marginScale * math.Sqrt(math.Log(2/1e-9)/(2*pn))
	var (
		above int
		sumU  float64
		win   []float64
	)
	for pass := 1; ; pass++ {
		lo, hi := math.Inf(-1), math.Inf(1)
		if pilotChunks < nChunks && pass < 4 {
			m := margin * math.Pow(16, float64(pass-1))
			hi = edge(float64(kLo)/fn - m)
			lo = edge(float64(kHi1)/fn + m)
		}
		stats := append(reclassify(pilot, lo, hi, logN), runChunks(cfg, gen, prog, pilotChunks, nChunks, lo, hi, false)...)
		above, sumU, win = 0, 0, win[:0]
		for _, c := range stats { // chunk order: bitwise reproducible sums
			above += c.above
			sumU += c.sumU
			win = append(win, c.window...)
		}
		res.Passes = pass
		// Ranks kLo (if ≥ 1), k and kHi+1 must all fall inside the window.
		if above < max(kLo, 1) && above+len(win) >= kHi1 {
			break
		}
		if math.IsInf(lo, -1) && math.IsInf(hi, 1) {
			return ReRoResult{}, errors.New("ReRo selection failed with an unbounded window (internal error)")
		}
	}
	res.Stored = len(win)
	if pilotChunks < nChunks {
		res.Stored += len(pl)
	}
	sort.Sort(sort.Reverse(sort.Float64Slice(win)))
	// rank(j) is the j-th largest log-ratio (1-based).
	rank := func(j int) float64 { return win[j-above-1] }
	g := sumU
	for _, l := range win[:k-above] {
		g += math.Exp(l - logN)
	}
	res.GammaNu = math.Min(1, g)

	// μ side: P̂_μ(log r ≥ τ) at τ̂_κ and the two DKW thresholds.
	tauK := rank(k)
	tauHi := math.Inf(1) // ⌈(κ−ε)N⌉-th largest; +Inf when κ ≤ ε
	if kLo >= 1 {
		tauHi = rank(kLo)
	}
	tauLo := math.Inf(-1) // (⌈(κ+ε)N⌉+1)-th largest; −Inf when there is none
	if kHi < n {
		tauLo = rank(kHi1)
	}
	counts := runMu(cfg, gen, prog, [3]float64{tauHi, tauK, tauLo})
	res.GammaMu = float64(counts[1]) / nMu
	res.GammaLow = math.Max(0, float64(counts[0])/nMu-dkwMu)
	res.GammaHigh = math.Min(1, float64(counts[2])/nMu+dkwMu)
	if math.IsInf(tauHi, 1) {
		res.GammaLow = 0
	}
	if math.IsInf(tauLo, -1) {
		res.GammaHigh = 1
	}
	res.Gamma = res.GammaNu
	switch {
	case res.GammaNu < res.GammaLow || res.GammaNu > res.GammaHigh:
		res.Gamma = res.GammaMu
		res.Warning = fmt.Sprintf("the ν-sample estimate %.4g lies outside the confidence interval [%.4g, %.4g]: "+
			"the draws from ν miss where μ puts its mass; gamma is the μ-sample estimate %.4g, and gamma_high the bound to quote",
			res.GammaNu, res.GammaLow, res.GammaHigh, res.GammaMu)
	case math.Abs(res.GammaNu-res.GammaMu) > 0.1:
		res.Gamma = res.GammaMu
		res.Warning = fmt.Sprintf("the ν-sample estimate %.4g and the μ-sample estimate %.4g of the same event disagree: "+
			"the draws from ν miss where μ puts its mass; gamma is the μ-sample estimate, and gamma_high the bound to quote",
			res.GammaNu, res.GammaMu)
	}
	if res.GammaExact != nil {
		res.Gamma = *res.GammaExact
	}
	res.Advantage = Advantage(res.Gamma, cfg.Kappa)
	return res, nil
}

// reclassify turns pilot chunks (all log-ratios kept) into window statistics.
func reclassify(pilot []chunkStats, lo, hi, logN float64) []chunkStats {
	out := make([]chunkStats, len(pilot))
	for i, c := range pilot {
		out[i] = classify(c.allRows, lo, hi, logN)
	}
	return out
}

// classify aggregates a chunk's log-ratios against the window [lo, hi]: the exact
// sum of r/N above it and the values inside it.
func classify(ls []float64, lo, hi, logN float64) chunkStats {
	var cs chunkStats
	for _, l := range ls {
		switch {
		case l > hi:
			cs.above++
			cs.sumU += math.Exp(l - logN)
		case l >= lo:
			cs.window = append(cs.window, l)
		}
	}
	return cs
}

// parallelChunks runs work(c, buf) for chunks [from, to) on cfg.Workers goroutines;
// buf is a per-worker scratch slice of reroChunk values.
func parallelChunks(workers, from, to int, prog *reroProgress, n int, work func(c int, buf []float64)) {
	if to <= from {
		return
	}
	var next atomic.Int64
	next.Store(int64(from))
	var wg sync.WaitGroup
	for w := 0; w < min(workers, to-from); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]float64, reroChunk)
			for {
				c := int(next.Add(1) - 1)
				if c >= to {
					return
				}
				work(c, buf)
				prog.add(chunkLen(n, c))
			}
		}()
	}
	wg.Wait()
}

// chunkLen is the number of samples in chunk c.
func chunkLen(n, c int) int { return min(reroChunk, n-c*reroChunk) }

// runChunks computes ν chunks [from, to). With keepAll the chunk's log-ratios are
// returned in allRows; otherwise they are classified against [lo, hi].
func runChunks(cfg ReRoConfig, gen ratioGen, prog *reroProgress, from, to int, lo, hi float64, keepAll bool) []chunkStats {
	out := make([]chunkStats, max(0, to-from))
	logN := math.Log(float64(cfg.Samples))
	parallelChunks(cfg.Workers, from, to, prog, cfg.Samples, func(c int, buf []float64) {
		ls := buf[:chunkLen(cfg.Samples, c)]
		gen.fill(newXoshiro(cfg.Seed, uint64(c)), ls, false)
		if keepAll {
			out[c-from] = chunkStats{allRows: append([]float64(nil), ls...)}
			return
		}
		out[c-from] = classify(ls, lo, hi, logN)
	})
	return out
}

// runMu draws cfg.MuSamples samples from μ and counts, for each threshold, those
// whose log-ratio is ≥ it.
func runMu(cfg ReRoConfig, gen ratioGen, prog *reroProgress, tau [3]float64) [3]int {
	nChunks := (cfg.MuSamples + reroChunk - 1) / reroChunk
	per := make([][3]int, nChunks)
	parallelChunks(cfg.Workers, 0, nChunks, prog, cfg.MuSamples, func(c int, buf []float64) {
		ls := buf[:chunkLen(cfg.MuSamples, c)]
		gen.fill(newXoshiro(cfg.Seed, muStream+uint64(c)), ls, true)
		for _, l := range ls {
			for j, t := range tau {
				if l >= t {
					per[c][j]++
				}
			}
		}
	})
	var tot [3]int
	for _, p := range per {
		for j := range tot {
			tot[j] += p[j]
		}
	}
	return tot
}

// ratioGen draws log likelihood ratios log r(W) = log μ(W)/ν(W), with W ∼ ν =
// N(0, σ²I_T) or W ∼ μ (W = w + σZ, w ∼ Bern(q)^T). With W_t = w_t + σZ_t,
// (2W_t − 1)/(2σ²) = Z_t/σ + (2w_t − 1)/(2σ²), so the per-step factor is
// (1 − q) + exp(Z_t/σ + log q ∓ 1/(2σ²)): one normal draw and one exp per
// sample-step (plus a uniform for w_t under μ). Factors are multiplied and the
// product is folded into the log only when it leaves [1e-200, 1e200]. For q = 1,
// log r = Σ_t Z_t/σ ± T/(2σ²) and Σ_t Z_t ∼ √T·N(0, 1) is drawn directly.
type ratioGen struct {
	q, invSigma float64
	shift0      float64 // log q − 1/(2σ²): the exponent offset when w_t = 0
	shift1      float64 // log q + 1/(2σ²): when w_t = 1
	qBits       uint64  // P[w_t = 1] = qBits/2^64
	steps       int
	oneMinusQ   float64
	zig         *ziggurat
	exp         *expTable
}

func newRatioGen(q, sigma float64, steps int) ratioGen {
	h := 1 / (2 * sigma * sigma)
	qb := uint64(math.MaxUint64)
	if q < 1 {
		qb = uint64(q * (1 << 63) * 2)
	}
	return ratioGen{q: q, invSigma: 1 / sigma, shift0: math.Log(q) - h, shift1: math.Log(q) + h, qBits: qb,
		steps: steps, oneMinusQ: 1 - q, zig: newZiggurat(), exp: newExpTable()}
}

// fill writes len(ls) log-ratios of draws from ν (or μ when fromMu), drawing the T
// steps of each sample in turn.
func (g ratioGen) fill(rng *xoshiro, ls []float64, fromMu bool) {
	b, c := g.invSigma, g.oneMinusQ
	zig, et := g.zig, g.exp
	switch {
	case g.q == 1:
		st, sh := math.Sqrt(float64(g.steps)), g.shift0
		if fromMu {
			sh = g.shift1
		}
		for i := range ls {
			ls[i] = zig.norm(rng)*st*b + float64(g.steps)*sh
		}
		return
	case c < 1e-100:
		// q within 1e-100 of 1: the product could underflow; stay in log space.
		lc := math.Log(c)
		for i := range ls {
			l := 0.0
			for t := 0; t < g.steps; t++ {
				sh := g.shift0
				if fromMu && rng.next() < g.qBits {
					sh = g.shift1
				}
				l += logAdd(lc, zig.norm(rng)*b+sh)
			}
			ls[i] = l
		}
		return
	}
	// Hot loop: the generator state lives in registers (xoshiroStep inlines), the
	// ziggurat's rectangle test and the exp are inlined by hand; rare cases call out.
	const inv = 256 / math.Ln2
	const ln2hi = 6.93147180369123816490e-01 / 256
	const ln2lo = 1.90821492927058770002e-10 / 256
	sh0, sh1, qBits := g.shift0, g.shift1, g.qBits
	s0, s1, s2, s3 := rng.s0, rng.s1, rng.s2, rng.s3
	for i := range ls {
		l, p := 0.0, 1.0
		for t := 0; t < g.steps; t++ {
			sh := sh0
			if fromMu {
				var u uint64
				u, s0, s1, s2, s3 = xoshiroStep(s0, s1, s2, s3)
				if u < qBits {
					sh = sh1
				}
			}
			var u uint64
			u, s0, s1, s2, s3 = xoshiroStep(s0, s1, s2, s3)
			z, ok := zig.fast(u)
			if !ok {
				rng.s0, rng.s1, rng.s2, rng.s3 = s0, s1, s2, s3
				z = zig.slow(rng, u)
				s0, s1, s2, s3 = rng.s0, rng.s1, rng.s2, rng.s3
			}
			x := z*b + sh
			switch {
			case x < -700:
				p *= c
			case x < 700:
				// Round x·64/ln2 to an integer by the 1.5·2^52 trick: the integer sits
				// in the low mantissa bits of kf (valid for |x·64/ln2| < 2^51).
				kf := x*inv + roundMagic
				ni := int64(math.Float64bits(kf) - math.Float64bits(roundMagic))
				n := kf - roundMagic
				r := (x - n*ln2hi) - n*ln2lo
				e := et[ni&255] * (1 + r*(1+r*(0.5+r*(1.0/6+r*(1.0/24)))))
				p *= c + math.Float64frombits(math.Float64bits(e)+uint64(ni>>8)<<52)
			default:
				l += x + math.Log1p(c*math.Exp(-x))
			}
			if p > 1e200 || p < 1e-200 {
				l += math.Log(p)
				p = 1
			}
		}
		ls[i] = l + math.Log(p)
	}
	rng.s0, rng.s1, rng.s2, rng.s3 = s0, s1, s2, s3
}
