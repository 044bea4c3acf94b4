package attack

import (
	"fmt"
	"math"
	"sort"

	"github.com/dpfil/dpfil/accounting"
)

// LinfDelta is Hayes et al.'s App. I pixel tolerance δ = 32/255.
const LinfDelta = 32.0 / 255

// LinfRhos are the fractions ρ of pixels within δ at which success is reported.
var linfRhos = []float64{0.5, 0.6, 0.7, 0.8, 0.9, 1}

// LinfPoint is the gradient attack's success "without a prior" (Hayes et al. App. I,
// Fig. 12a): a reconstruction ẑ succeeds when at least a fraction ρ of its d pixels lie
// within δ of the target's, |ẑ_i − z_i| < δ. The baseline κ is the chance that a fixed
// guess succeeds against a target uniform on [0,1]^d: P(Binomial(d, 2δ) ≥ ⌈ρd⌉)
// (Log10Kappa). The paper prints (2 × 32/256)^{ρd} (Log10KappaPaper), which is that
// only at ρ = 1 (up to its 256 for 255) and otherwise omits the C(d, k) ways to choose
// the close pixels: at d = 784, ρ = 0.6 it gives 10^−283 where the chance is 10^−94.4
// (TestLinfKappa). Both hold for a target uniform on [0,1]^d, as the paper assumes
// ("no background knowledge"); the game's targets are data. For them κ is at least
// KappaData, the fraction of the pool that one fixed guess (the all-zero image or the
// pool's pixelwise median, whichever does better) reconstructs at ρ — on MNIST, whose
// digits are mostly background, near 1 for ρ ≤ 0.8 — and the bound that holds for
// the game is the one at that κ (Log10GammaData); the uniform-prior bounds are
// reported for comparison with the paper and are not bounds on these targets.
// Bounds are given by their log10
// (they lie far below the smallest float64): the ReRo bound γ (q = 1 closed form;
// omitted for q < 1, whose Monte Carlo estimate cannot reach such κ) and the RDP-ReRo
// bound.
type LinfPoint struct {
	Rho             float64    `json:"rho"`
	Delta           float64    `json:"delta"`
	Successes       int        `json:"successes"`
	Trials          int        `json:"trials"`
	Rate            float64    `json:"success_rate"`
	CI              [2]float64 `json:"success_ci"`
	Log10Kappa      float64    `json:"log10_kappa"`
	Log10KappaPaper float64    `json:"log10_kappa_paper"`
	Log10Gamma      *float64   `json:"log10_gamma,omitempty"`
	Log10GammaRDP   float64    `json:"log10_gamma_rdp"`
	// KappaData is a fixed guess's success rate over the pool (a lower bound on κ
	// for targets drawn from it), KappaDataGuess which guess ("zeros" or "median"),
	// and Log10GammaData the ReRo bound at that κ (q = 1 closed form).
	KappaData      float64  `json:"kappa_data"`
	KappaDataGuess string   `json:"kappa_data_guess"`
	Log10GammaData *float64 `json:"log10_gamma_data,omitempty"`
}

// nearFraction is the fraction of x's values within LinfDelta of z's.
func nearFraction(x, z []float64) float64 {
	n := 0
	for i, v := range x {
		if math.Abs(v-z[i]) < LinfDelta {
			n++
		}
	}
	return float64(n) / float64(len(x))
}

// fixedGuesses are the all-zero image and the pool's pixelwise median.
func fixedGuesses(pool Pool) (names []string, guesses [][]float64) {
	d, n, m := pool.D, pool.N(), pool.n32()
	med := make([]float64, d)
	col := make([]float64, n)
	for j := 0; j < d; j++ {
		for i := 0; i < m; i++ {
			col[i] = float64(pool.X32[i*d+j])
		}
		for i := m; i < n; i++ {
			col[i] = pool.X[(i-m)*d+j]
		}
		sort.Float64s(col)
		med[j] = col[n/2]
	}
	return []string{"zeros", "median"}, [][]float64{make([]float64, d), med}
}

// logBinomialTail is log P(Binomial(n, p) ≥ m), 0 < p < 1.
func logBinomialTail(n, m int, p float64) float64 {
	if m <= 0 {
		return 0
	}
	if m > n {
		return math.Inf(-1)
	}
	lp, lq := math.Log(p), math.Log1p(-p)
	terms := make([]float64, 0, n-m+1)
	top := math.Inf(-1)
	for k := m; k <= n; k++ {
		lc, _ := math.Lgamma(float64(n + 1))
		a, _ := math.Lgamma(float64(k + 1))
		b, _ := math.Lgamma(float64(n - k + 1))
		v := lc - a - b + float64(k)*lp + float64(n-k)*lq
		terms = append(terms, v)
		top = math.Max(top, v)
	}
	s := 0.0
	for _, v := range terms {
		s += math.Exp(v - top)
	}
	return top + math.Log(s)
}

// linfPoints scores the trials' gradient-attack reconstructions at every ρ of
// linfRhos against the pool's targets, with the bounds of (q, σ, T).
func linfPoints(pool Pool, res []TrialResult, q, sigma float64, steps int) ([]LinfPoint, error) {
	d := pool.D
	p := math.Min(2*LinfDelta, 1)
	names, guesses := fixedGuesses(pool)
	img := make([]float64, d)
	// near[g][i]: the fraction of pool image i's pixels guess g has within δ
	near := make([][]float64, len(guesses))
	for g, z := range guesses {
		near[g] = make([]float64, pool.N())
		for i := range near[g] {
			near[g][i] = nearFraction(pool.ImageInto(i, img), z)
		}
	}
	var out []LinfPoint
	for _, rho := range linfRhos {
		m := int(math.Ceil(rho*float64(d) - 1e-9))
		pt := LinfPoint{Rho: rho, Delta: LinfDelta}
		for _, r := range res {
			if len(r.Reconstruction) != d {
				continue
			}
			tg := pool.ImageInto(r.Prior[r.Target], img)
			near := 0
			for i, v := range r.Reconstruction {
				if math.Abs(v-tg[i]) < LinfDelta {
					near++
				}
			}
			pt.Trials++
			if near >= m {
				pt.Successes++
			}
		}
		if pt.Trials == 0 {
			return nil, fmt.Errorf("ℓ∞ success: no trial has a reconstruction of %d values", d)
		}
		lo, hi, err := ClopperPearson(pt.Successes, pt.Trials, 0.95)
		if err != nil {
			return nil, err
		}
		pt.Rate, pt.CI = float64(pt.Successes)/float64(pt.Trials), [2]float64{lo, hi}
		lk := logBinomialTail(d, m, p)
		pt.Log10Kappa, pt.Log10KappaPaper = lk/math.Ln10, rho*float64(d)*math.Log10(2*32.0/256)
		for g := range guesses {
			hit := 0
			for _, f := range near[g] {
				if f*float64(d) >= float64(m)-1e-9 {
					hit++
				}
			}
			if k := float64(hit) / float64(pool.N()); k > pt.KappaData || pt.KappaDataGuess == "" {
				pt.KappaData, pt.KappaDataGuess = k, names[g]
			}
		}
		if q == 1 && pt.KappaData > 0 {
			lg := 0.0
			if sigma > 0 {
				var err error
				if lg, err = accounting.ReRoClosedFormLog(sigma, steps, math.Log(pt.KappaData)); err != nil {
					return nil, err
				}
			}
			v := lg / math.Ln10
			pt.Log10GammaData = &v
		}
		if sigma == 0 && q == 1 {
			zero := 0.0
			pt.Log10Gamma = &zero
		}
		if sigma > 0 {
			if q == 1 {
				lg, err := accounting.ReRoClosedFormLog(sigma, steps, lk)
				if err != nil {
					return nil, err
				}
				v := lg / math.Ln10
				pt.Log10Gamma = &v
			}
			lr, err := accounting.ReRoRDPLog(q, sigma, steps, lk, nil)
			if err != nil {
				return nil, err
			}
			pt.Log10GammaRDP = lr / math.Ln10
		}
		out = append(out, pt)
	}
	return out, nil
}
