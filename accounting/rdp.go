// Package accounting implements the privacy accountants of dpfil: Rényi DP of the
// sampled Gaussian mechanism (Mironov, Talwar, Zhang 2019) with conversion to
// (ε, δ)-DP, Fisher information leakage (FIL) accounting for DP-SGD (Guo et al. 2022,
// Sec. 6), the MSE lower bounds on data reconstruction that both imply (Guo et al.
// Theorems 1 and 2, the van Trees form of Edmunds eq. 1.3), and the ReRo bound of
// Hayes et al. (2023) by Monte Carlo estimation of the blow-up function, its q = 1
// closed form and its RDP-based form.
//
// AccountRDP, AccountPLD, AccountDPSGD, ReRoBounds, AccountKappa and MSEBounds
// answer one question each from a typed request, as the 'dpfil account' commands
// do: their reports marshal to the commands' JSON and write
// the commands' human summary (WriteText).
//
// Accountant is the one privacy API: events (Ledger, DPSGD.StepEvent) are composed
// into an RDPAccountant or a PLDAccountant, which answer ε(δ) and δ(ε) with what the
// number holds for (EpsilonBound); EpsilonOf and CalibrateNoise give the ε a run
// reports and the noise multiplier for a target ε, for train and the attacks alike.
//
// Every routine validates its inputs and returns an error for impossible
// hyperparameters or non-finite values, naming the first bad field in the order the
// fields are declared. Formulas, conventions and stated numerical errors are
// documented in docs/accounting.md.
package accounting

import (
	"errors"
	"fmt"
	"math"
)

// Conversion selects the RDP → (ε, δ) conversion.
type Conversion int

const (
	// ConversionImproved is ε = RDP(α) + log(1 − 1/α) − (log δ + log α)/(α − 1)
	// (Balle et al. 2020 / Canonne et al. 2020, the one used by dp_accounting).
	ConversionImproved Conversion = iota
	// ConversionClassic is ε = RDP(α) + log(1/δ)/(α − 1) (Mironov 2017, Prop. 3).
	ConversionClassic
)

// String returns the flag spelling of the conversion.
func (c Conversion) String() string {
	switch c {
	case ConversionImproved:
		return "improved"
	case ConversionClassic:
		return "classic"
	default:
		return fmt.Sprintf("Conversion(%d)", int(c))
	}
}

// ParseConversion parses "improved" or "classic".
func ParseConversion(s string) (Conversion, error) {
	switch s {
	case "improved", "":
		return ConversionImproved, nil
	case "classic":
		return ConversionClassic, nil
	}
	return 0, fmt.Errorf("unknown RDP conversion %q (want improved or classic)", s)
}

// DefaultOrders returns the default Rényi orders: 1.1, 1.2, …, 10.9, then 11, 12, …,
// 63, then 128, 256, 512, 1024. Order 2 is included (Theorem 1 needs it).
func DefaultOrders() []float64 {
	var o []float64
	for i := 11; i <= 109; i++ {
		o = append(o, float64(i)/10)
	}
	for i := 11; i <= 63; i++ {
		o = append(o, float64(i))
	}
	return append(o, 128, 256, 512, 1024)
}

// checkQSigma validates a sampling rate and a noise multiplier.
func checkQSigma(q, sigma float64) error {
	if math.IsNaN(q) || q < 0 || q > 1 {
		return fmt.Errorf("sampling rate q = %v must be in [0, 1]", q)
	}
	if math.IsNaN(sigma) || math.IsInf(sigma, 0) || sigma <= 0 {
		return fmt.Errorf("noise multiplier sigma = %v must be finite and > 0", sigma)
	}
	return nil
}

func checkOrder(alpha float64) error {
	if math.IsNaN(alpha) || math.IsInf(alpha, 0) || alpha <= 1 {
		return fmt.Errorf("Rényi order %v must be finite and > 1", alpha)
	}
	return nil
}

// SampledGaussianRDP returns the Rényi DP at order alpha of one step of the sampled
// Gaussian mechanism with Poisson sampling rate q and noise multiplier sigma
// (sensitivity 1, noise N(0, σ²)): (1/(α−1))·log A_α with
// A_α = E_{z∼N(0,σ²)}[((1−q) + q·e^{(2z−1)/(2σ²)})^α]. Integer orders use the
// binomial expansion, fractional orders the two-series erfc expansion of Mironov,
// Talwar and Zhang (2019), both summed in log space. q = 0 gives 0 and q = 1 gives
// α/(2σ²).
func SampledGaussianRDP(q, sigma, alpha float64) (float64, error) {
	if err := checkQSigma(q, sigma); err != nil {
		return 0, err
	}
	if err := checkOrder(alpha); err != nil {
		return 0, err
	}
	return sgmRDP(q, sigma, alpha)
}

// sgmRDP is SampledGaussianRDP without input validation.
func sgmRDP(q, sigma, alpha float64) (float64, error) {
	if q == 0 {
		return 0, nil
	}
	if q == 1 {
		return finiteRDP(alpha/(2*sigma*sigma), q, sigma, alpha)
	}
	var logA float64
	if alpha == math.Trunc(alpha) && alpha <= 1<<20 {
		logA = logAInt(q, sigma, int(alpha))
	} else {
		var err error
		logA, err = logAFrac(q, sigma, alpha)
		if errors.Is(err, errSlowSeries) {
			logA, err = logAQuad(q, sigma, alpha)
		}
		if err != nil {
			return 0, fmt.Errorf("sampled Gaussian RDP (q=%v, sigma=%v, alpha=%v): %w", q, sigma, alpha, err)
		}
	}
	r := logA / (alpha - 1)
	if r < 0 { // A_α ≥ 1 mathematically; clamp round-off
		r = 0
	}
	return finiteRDP(r, q, sigma, alpha)
}

// finiteRDP rejects NaN and infinite RDP values (σ so small that 1/σ² overflows).
func finiteRDP(r, q, sigma, alpha float64) (float64, error) {
	if math.IsNaN(r) || math.IsInf(r, 0) {
		return 0, fmt.Errorf("sampled Gaussian RDP (q=%v, sigma=%v, alpha=%v) is not finite: sigma too small", q, sigma, alpha)
	}
	return r, nil
}

// logAdd returns log(e^a + e^b).
func logAdd(a, b float64) float64 {
	if a < b {
		a, b = b, a
	}
	if math.IsInf(b, -1) {
		return a
	}
	return a + math.Log1p(math.Exp(b-a))
}

// logSub returns log(e^a − e^b) for a ≥ b (−Inf when equal).
func logSub(a, b float64) (float64, error) {
	if math.IsInf(b, -1) {
		return a, nil
	}
	if b > a {
		return 0, errors.New("log-space subtraction of a larger term: series cancellation failed")
	}
	if a == b {
		return math.Inf(-1), nil
	}
	return a + math.Log(-math.Expm1(b-a)), nil
}

// logAInt is log A_α for integer α: log Σ_{i=0}^{α} C(α,i) q^i (1−q)^{α−i} e^{(i²−i)/(2σ²)}.
// Since the binomial weights sum to 1, A_α − 1 = Σ_{i≥2} C(α,i) q^i (1−q)^{α−i}
// (e^{(i²−i)/(2σ²)} − 1), a sum of positive terms; summing it in log space keeps the
// relative accuracy of tiny RDP values (small q, large σ).
func logAInt(q, sigma float64, alpha int) float64 {
	lq, l1q := math.Log(q), math.Log1p(-q)
	inv := 1 / (2 * sigma * sigma)
	logAm1 := math.Inf(-1)
	a := float64(alpha)
	logBinom := math.Log(a) // log C(α, 1)
	for i := 2; i <= alpha; i++ {
		fi := float64(i)
		logBinom += math.Log((a - fi + 1) / fi)
		e := (fi*fi - fi) * inv
		var logEm1 float64 // log(e^e − 1)
		if e > 30 {
			logEm1 = e + math.Log1p(-math.Exp(-e))
		} else {
			logEm1 = math.Log(math.Expm1(e))
		}
		logAm1 = logAdd(logAm1, logBinom+fi*lq+(a-fi)*l1q+logEm1)
	}
	// log A = log(1 + e^{logAm1}).
	if logAm1 > 0 {
		return logAm1 + math.Log1p(math.Exp(-logAm1))
	}
	return math.Log1p(math.Exp(logAm1))
}

// logErfc returns log(erfc(x)) without underflow for large x.
func logErfc(x float64) float64 {
	if x < 25 {
		return math.Log(math.Erfc(x))
	}
	// Asymptotic expansion erfc(x) = e^{−x²}/(x√π)·(1 − 1/(2x²) + 3/(4x⁴) − 15/(8x⁶) + 105/(16x⁸)),
	// relative error < 1e-11 for x ≥ 25.
	r := 1 / (x * x)
	s := 1 - r/2 + 3*r*r/4 - 15*r*r*r/8 + 105*r*r*r*r/16
	return -x*x - math.Log(x) - 0.5*math.Log(math.Pi) + math.Log(s)
}

// logAbsBinom returns log|C(α, i)| and its sign for real α > 0 and integer i ≥ 0.
func logAbsBinom(alpha float64, i int) (float64, float64) {
	l1, _ := math.Lgamma(alpha + 1)
	l2, _ := math.Lgamma(float64(i) + 1)
	l3, s3 := math.Lgamma(alpha - float64(i) + 1)
	return l1 - l2 - l3, float64(s3)
}

// maxFracTerms bounds the fractional-order series. It converges geometrically in
// a few hundred terms except for q near 1/2, where its terms decay only like
// i^{−α−1}; beyond this many terms the quadrature logAQuad takes over.
const maxFracTerms = 10000

// errSlowSeries reports that the fractional series hit maxFracTerms.
var errSlowSeries = errors.New("fractional-order series did not converge")

// logAFrac is log A_α for fractional α by the two-series expansion of Mironov et al.
// (2019, Sec. 3.3), as in TF Privacy's _compute_log_a_frac.
func logAFrac(q, sigma, alpha float64) (float64, error) {
	logA0, logA1 := math.Inf(-1), math.Inf(-1)
	z0 := sigma*sigma*math.Log(1/q-1) + 0.5
	lq, l1q := math.Log(q), math.Log1p(-q)
	inv := 1 / (2 * sigma * sigma)
	sq2s := math.Sqrt2 * sigma
	for i := 0; i < maxFracTerms; i++ {
		fi := float64(i)
		logCoef, sign := logAbsBinom(alpha, i)
		j := alpha - fi
		logT0 := logCoef + fi*lq + j*l1q
		logT1 := logCoef + j*lq + fi*l1q
		logE0 := math.Log(0.5) + logErfc((fi-z0)/sq2s)
		logE1 := math.Log(0.5) + logErfc((z0-j)/sq2s)
		logS0 := logT0 + (fi*fi-fi)*inv + logE0
		logS1 := logT1 + (j*j-j)*inv + logE1
		if sign > 0 {
			logA0 = logAdd(logA0, logS0)
			logA1 = logAdd(logA1, logS1)
		} else {
			var err error
			if logA0, err = logSub(logA0, logS0); err != nil {
				return 0, err
			}
			if logA1, err = logSub(logA1, logS1); err != nil {
				return 0, err
			}
		}
		if math.Max(logS0, logS1) < -40 && fi > alpha {
			return logAdd(logA0, logA1), nil
		}
	}
	return 0, errSlowSeries
}

// RDP accumulates the Rényi DP of a composition of sampled Gaussian steps at a fixed
// set of orders. Orders and Values are exported so that an accountant can be
// checkpointed (e.g. as JSON) and restored.
type RDP struct {
	Orders []float64 `json:"orders"`
	Values []float64 `json:"values"`

	cacheKey [2]float64 // last (q, σ) composed
	cacheVal []float64  // its one-step RDP per order
}

// NewRDP returns an empty accountant over the given orders (DefaultOrders if nil).
// Orders must be finite and > 1; invalid orders make Compose and Epsilon fail.
func NewRDP(orders []float64) *RDP {
	if orders == nil {
		orders = DefaultOrders()
	}
	o := append([]float64(nil), orders...)
	return &RDP{Orders: o, Values: make([]float64, len(o))}
}

func (r *RDP) validate() error {
	if r == nil {
		return errors.New("nil RDP accountant")
	}
	if len(r.Orders) == 0 {
		return errors.New("RDP accountant has no orders")
	}
	if len(r.Values) != len(r.Orders) {
		return fmt.Errorf("RDP accountant has %d values for %d orders", len(r.Values), len(r.Orders))
	}
	for _, a := range r.Orders {
		if err := checkOrder(a); err != nil {
			return err
		}
	}
	return nil
}

// StepRDP returns the one-step RDP of the sampled Gaussian mechanism at every order,
// sharing order-independent work between the orders (see sgmTables).
func StepRDP(q, sigma float64, orders []float64) ([]float64, error) {
	if err := checkQSigma(q, sigma); err != nil {
		return nil, err
	}
	out := make([]float64, len(orders))
	tab := newSGMTables(q, sigma)
	for k, a := range orders {
		if err := checkOrder(a); err != nil {
			return nil, err
		}
		v, err := tab.rdp(a)
		if err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, nil
}

// Compose adds `steps` steps of the sampled Gaussian mechanism with sampling rate q
// and noise multiplier sigma. It may be called repeatedly with different (q, σ) for
// heterogeneous schedules; repeated calls with the same (q, σ) reuse the per-order
// values, so a per-step call costs O(len(Orders)).
func (r *RDP) Compose(q, sigma float64, steps int) error {
	if err := r.validate(); err != nil {
		return err
	}
	if steps < 0 {
		return fmt.Errorf("number of steps %d must be ≥ 0", steps)
	}
	if err := checkQSigma(q, sigma); err != nil {
		return err
	}
	if steps == 0 {
		return nil
	}
	key := [2]float64{q, sigma}
	if r.cacheVal == nil || r.cacheKey != key || len(r.cacheVal) != len(r.Orders) {
		v, err := StepRDP(q, sigma, r.Orders)
		if err != nil {
			return err
		}
		r.cacheKey, r.cacheVal = key, v
	}
	for k, v := range r.cacheVal {
		r.Values[k] += float64(steps) * v
	}
	return nil
}

// Step is one segment of a heterogeneous schedule: Steps steps at (Q, Sigma).
type Step struct {
	Q     float64 `json:"q"`
	Sigma float64 `json:"sigma"`
	Steps int     `json:"steps"`
}

// ComposeSchedule adds a whole schedule, grouping identical (q, σ) segments so that
// each distinct pair is evaluated once.
func (r *RDP) ComposeSchedule(schedule []Step) error {
	if err := r.validate(); err != nil {
		return err
	}
	counts := map[[2]float64]int{}
	var keys [][2]float64
	for i, s := range schedule {
		if err := checkQSigma(s.Q, s.Sigma); err != nil {
			return fmt.Errorf("schedule segment %d: %w", i, err)
		}
		if s.Steps < 0 {
			return fmt.Errorf("schedule segment %d: number of steps %d must be ≥ 0", i, s.Steps)
		}
		k := [2]float64{s.Q, s.Sigma}
		if _, ok := counts[k]; !ok {
			keys = append(keys, k)
		}
		counts[k] += s.Steps
	}
	for _, k := range keys {
		if err := r.Compose(k[0], k[1], counts[k]); err != nil {
			return err
		}
	}
	return nil
}

// At returns the composed RDP at order alpha, which must be one of Orders.
func (r *RDP) At(alpha float64) (float64, error) {
	if err := r.validate(); err != nil {
		return 0, err
	}
	for k, a := range r.Orders {
		if a == alpha {
			return r.Values[k], nil
		}
	}
	return 0, fmt.Errorf("order %v is not among the accountant's %d orders", alpha, len(r.Orders))
}

// Epsilon converts the composed RDP into (ε, δ)-DP, minimising over the orders, and
// returns ε and the optimal order.
func (r *RDP) Epsilon(delta float64, conv Conversion) (eps, order float64, err error) {
	if err := r.validate(); err != nil {
		return 0, 0, err
	}
	return epsilonFrom(r.Orders, r.Values, delta, conv)
}

func checkDelta(delta float64) error {
	if math.IsNaN(delta) || delta <= 0 || delta >= 1 {
		return fmt.Errorf("delta = %v must be in (0, 1)", delta)
	}
	return nil
}

func epsilonFrom(orders, values []float64, delta float64, conv Conversion) (float64, float64, error) {
	if err := checkDelta(delta); err != nil {
		return 0, 0, err
	}
	if err := checkConversion(values, orders, conv); err != nil {
		return 0, 0, err
	}
	best, bestOrder := math.Inf(1), math.NaN()
	logDelta := math.Log(delta)
	for k, a := range orders {
		v := values[k]
		var e float64
		switch conv {
		case ConversionImproved:
			// As dp_accounting's compute_epsilon: if δ ≥ √(1 − e^{−RDP}), the
			// Bretagnolle–Huber bound on total variation (D_α ≥ KL) already gives
			// (0, δ)-DP; the formula is unstable for α ≤ 1.01.
			switch {
			case delta*delta+math.Expm1(-v) > 0:
				e = 0
			case a > 1.01:
				e = v + math.Log1p(-1/a) - (logDelta+math.Log(a))/(a-1)
			default:
				e = math.Inf(1)
			}
		case ConversionClassic:
			e = v - logDelta/(a-1)
		}
		if e < best {
			best, bestOrder = e, a
		}
	}
	if math.IsInf(best, 1) || math.IsNaN(bestOrder) {
		return 0, 0, errors.New("RDP is infinite at every order: no finite epsilon")
	}
	if best < 0 {
		best = 0
	}
	return best, bestOrder, nil
}

// sampledGaussianRun is Steps steps of the sampled Gaussian mechanism at sampling
// rate Q and noise multiplier Sigma (sensitivity 1 per record), with ε reported at
// Delta.
type sampledGaussianRun struct {
	Q, Sigma float64
	Steps    int
	Delta    float64
}

// epsilonFor returns (ε, optimal order) of run under add-remove adjacency with
// Poisson sampling.
func epsilonFor(run sampledGaussianRun, orders []float64, conv Conversion) (float64, float64, error) {
	r := NewRDP(orders)
	if err := r.Compose(run.Q, run.Sigma, run.Steps); err != nil {
		return 0, 0, err
	}
	return r.Epsilon(run.Delta, conv)
}

// sigmaForEpsilon solves the inverse problem: the smallest noise multiplier σ (to a
// relative tolerance of 1e-6, by bisection in log σ) such that run.Steps steps of the
// sampled Gaussian mechanism at rate run.Q are (targetEps, run.Delta)-DP (run.Sigma
// is not used). The returned σ is the upper end of the final bracket, so it always
// meets the target.
func sigmaForEpsilon(run sampledGaussianRun, targetEps float64, orders []float64, conv Conversion) (float64, error) {
	q, steps, delta := run.Q, run.Steps, run.Delta
	if math.IsNaN(q) || q <= 0 || q > 1 {
		return 0, fmt.Errorf("sampling rate q = %v must be in (0, 1] to solve for sigma", q)
	}
	if steps <= 0 {
		return 0, fmt.Errorf("number of steps %d must be > 0 to solve for sigma", steps)
	}
	if err := checkDelta(delta); err != nil {
		return 0, err
	}
	if math.IsNaN(targetEps) || math.IsInf(targetEps, 0) || targetEps <= 0 {
		return 0, fmt.Errorf("target epsilon %v must be finite and > 0", targetEps)
	}
	if orders == nil {
		orders = DefaultOrders()
	}
	eps := func(s float64) (float64, error) {
		e, _, err := epsilonFor(sampledGaussianRun{Q: q, Sigma: s, Steps: steps, Delta: delta}, orders, conv)
		return e, err
	}
	lo, hi := 0.1, 10.0
	for {
		e, err := eps(hi)
		if err != nil {
			return 0, err
		}
		if e <= targetEps {
			break
		}
		lo, hi = hi, hi*10
		if hi > 1e8 {
			return 0, fmt.Errorf("no sigma ≤ 1e8 reaches epsilon %v (q=%v, steps=%d, delta=%v)", targetEps, q, steps, delta)
		}
	}
	for {
		e, err := eps(lo)
		if err != nil {
			return 0, err
		}
		if e > targetEps {
			break
		}
		hi, lo = lo, lo/10
		if lo < 1e-6 {
			return lo, nil // even tiny noise meets the target
		}
	}
	for hi/lo-1 > 1e-6 {
		mid := math.Sqrt(lo * hi)
		e, err := eps(mid)
		if err != nil {
			return 0, err
		}
		if e > targetEps {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi, nil
}

// checkConversion validates the inputs of an RDP ↔ (ε, δ) conversion: a known
// conversion and per-order values that are ≥ 0 (not NaN).
func checkConversion(values, orders []float64, conv Conversion) error {
	if conv != ConversionImproved && conv != ConversionClassic {
		return fmt.Errorf("unknown RDP conversion %v", conv)
	}
	for k, v := range values {
		if math.IsNaN(v) || v < 0 {
			return fmt.Errorf("invalid RDP value %v at order %v", v, orders[k])
		}
	}
	return nil
}
