package train

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dpfil/dpfil/models"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// Learned gradient noise (Edmunds 2024, "Fisher information for private training of
// machine learning models", Ch. 2, the "FIM" rows of its tables), in the form
// this trainer can account exactly: instead of N(0, σ²C²I) the released sum of
// clipped gradients receives
//
//	N(0, Σ),   Σ = σ²C²(β²I + U·diag(a)·Uᵀ)
//
// on the released (not frozen) coordinates, where the r orthonormal columns of U are
// the top eigenvectors of the public data's Fisher information of the clipped
// gradient, G = E_z[J_z J_zᵀ] (J_z = ∂g̃(θ, z)/∂x, estimated from JVPs J_z·u with
// Gaussian input directions u on NoiseSamples public samples, at the current θ, with
// the mean public gradient direction projected out so the descent direction gets no
// extra noise). The extra variances a_i spend a noise-power budget Σ_i a_i =
// ρ·β²·(released dimension) (NoisePower ρ: the learned part's power relative to the
// isotropic part's) where it lowers the public FIL most: maximising
// Σ_i λ_i·a_i/(β² + a_i) under that budget gives the water-filling
// a_i = max(0, β·√(λ_i/μ) − β²). More noise goes where the gradients carry the most
// information about their inputs: the per-sample FIL becomes
// Tr(Jᵀ Σ⁻¹ J) = (‖J‖_F² − Σ_i a_i/(β² + a_i)·‖Jᵀu_i‖²)/(β²σ²C²) instead of ‖J‖_F²/(σ²C²).
//
// Accounting. For Gaussian noise N(0, Σ) on a sum whose replace-one / add-remove
// difference v ranges over ‖v‖ ≤ Δ = c·C in the released subspace, the privacy loss
// of (sub)sampled releases is that of an isotropic Gaussian with sensitivity
// sup_v ‖Σ^{-1/2} v‖ = Δ/√λ_min(Σ): whitening by Σ^{-1/2} maps the pair of output
// distributions to an isotropic pair, and every RDP / PLD quantity is increasing in
// the whitened shift's norm. So the mechanism is exactly an isotropic one with noise
// multiplier σ_eff = √λ_min(Σ)/C (before the clip constant c). With U orthonormal and
// r < (released dimension), λ_min = β²σ²C², i.e. σ_eff = β·σ: with β = 1 (the default)
// learned noise has exactly the ε of isotropic noise of the same σ, at a cost in
// utility (the extra noise α·λ_i/λ_1 along u_i); β < 1 trades ε for less total noise.
// U depends only on public data and on θ_t (post-processing of earlier releases), so
// the adaptive composition of the per-step events holds. The accountants receive
// σ_eff through the run's privacy events (setup.tuneSigma); κ of the FIL accounting
// uses the same σ_eff.

// noiseFIM is the learned-noise state of the repeat being trained.
type noiseFIM struct {
	rank    int
	power   float64 // ρ
	beta    float64 // β
	samples int
	every   int
	nominal float64 // σ (the isotropic part has β·σ·C)
	clipC   float64

	seed   uint64
	repeat int
	mask   []bool

	u         [][]float64 // r orthonormal directions (P each, zero on frozen coordinates)
	a, c      []float64   // a_i and a_i/(β² + a_i)
	estimated int         // step of the current estimate (−1: none)
	refreshes int
	captured  float64 // sum over refreshes of the captured fraction of public FIL energy
	reduction float64 // sum over refreshes of Σ c_i λ_i / Tr
	heldOut   float64 // sum over refreshes of the held-out reduction
	heldN     int
	released  int
	extra     []float64
}

// NoiseFIMResult is result.json's "tuning.noise".
type NoiseFIMResult struct {
	Rank    int     `json:"rank"`  // r actually used (≤ noise_rank: directions with a_i > 0)
	Power   float64 `json:"power"` // ρ
	Base    float64 `json:"base"`  // β
	Samples int     `json:"samples"`
	Every   int     `json:"every"`
	// SigmaNominal is σ of Σ = σ²C²(β²I + UAUᵀ); SigmaEffective = √λ_min(Σ)/C, the
	// noise multiplier the accountants received (result.sigma).
	SigmaNominal   float64 `json:"sigma_nominal"`
	SigmaEffective float64 `json:"sigma_effective"`
	// ExtraNoisePower is Σ_i a_i/(β²·released): the learned component's share of
	// noise power relative to the isotropic part (= power).
	ExtraNoisePower float64 `json:"extra_noise_power"`
	// Captured is the mean fraction of the public sample's FIL energy in span(U), and
	// PublicReduction the mean fraction by which the learned metric lowers it
	// (Σ_i c_i λ_i / Tr): the in-sample prediction of the dFIL reduction.
	Captured        float64 `json:"captured"`
	PublicReduction float64 `json:"public_reduction"`
	// HeldOutReduction is the same reduction measured on as many other public samples
	// (not used to estimate U): what to expect for unseen (private) data; 0 when the
	// public part has fewer than 2·samples samples.
	HeldOutReduction float64 `json:"held_out_reduction"`
	Refreshes        int     `json:"refreshes"`
}

// EffectiveNoiseMultiplier returns σ_eff = √λ_min(Σ)/C for Σ = σ²C²(β²I + U·diag(a)·Uᵀ)
// with r orthonormal columns U inside a released subspace of dimension dim: the
// eigenvalues of β²I + UAUᵀ there are β² + a_i on span(U) and β² on its complement.
func EffectiveNoiseMultiplier(sigma, beta float64, a []float64, dim int) (float64, error) {
	if !(sigma > 0) || !(beta > 0) || math.IsInf(sigma, 0) || math.IsInf(beta, 0) {
		return 0, fmt.Errorf("effective noise multiplier: σ = %v and β = %v must be positive and finite", sigma, beta)
	}
	if len(a) > dim {
		return 0, fmt.Errorf("effective noise multiplier: %d directions in a %d-dimensional space", len(a), dim)
	}
	lmin := math.Inf(1)
	if len(a) < dim {
		lmin = beta * beta
	}
	for _, v := range a {
		if !(v >= 0) || math.IsInf(v, 0) {
			return 0, fmt.Errorf("effective noise multiplier: a = %v must be ≥ 0 and finite", v)
		}
		lmin = math.Min(lmin, beta*beta+v)
	}
	return sigma * math.Sqrt(lmin), nil
}

// MahalanobisSensitivity returns sup_{‖v‖ ≤ delta} ‖Σ^{-1/2} v‖ = delta/√λ_min(Σ) for a
// positive definite covariance Σ: the sensitivity of a Gaussian mechanism with noise
// N(0, Σ) in units of its whitened (isotropic, unit-variance) form.
func MahalanobisSensitivity(cov mat.Symmetric, delta float64) (float64, error) {
	var es mat.EigenSym
	if !es.Factorize(cov, false) {
		return 0, errors.New("mahalanobis sensitivity: eigendecomposition failed")
	}
	vals := es.Values(nil)
	if !(vals[0] > 0) {
		return 0, fmt.Errorf("mahalanobis sensitivity: covariance is not positive definite (λ_min = %v)", vals[0])
	}
	return delta / math.Sqrt(vals[0]), nil
}

const (
	streamTuneFIM   uint64 = 0x7475_6e65_0003
	streamTuneNoise uint64 = 0x7475_6e65_0004
)

// start resets the state for a repeat.
func (nf *noiseFIM) start(seed uint64, repeat int, mask []bool) {
	nf.seed, nf.repeat, nf.mask = seed, repeat, mask
	nf.u, nf.a, nf.c = nil, nil, nil
	nf.estimated = -1
}

// refresh re-estimates U at step t when due: at the first step the repeat runs (also
// after a resume) and every `every` steps.
//
// With every = 0 the estimate is taken once, at the private phase's initial
// parameters (the pretrained ones), so a resumed run recomputes the same U and stays
// bit-identical. With every > 0 the estimate at step t₀ uses θ_{t₀}; a run resumed
// between two refreshes re-estimates at the resume step instead (its result then
// differs from an uninterrupted run's).
func (nf *noiseFIM) refresh(tu *tuning, step int, params []float32) error {
	if nf.estimated >= 0 && (nf.every == 0 || step%nf.every != 0 || nf.estimated == step) {
		return nil
	}
	at := step
	if nf.every == 0 {
		at, params = 0, tu.cur.params
	}
	if err := nf.estimate(tu, at, params); err != nil {
		return fmt.Errorf("learned noise at step %d: %w", step+1, err)
	}
	nf.estimated = step
	return nil
}

// on reports whether coordinate i is released.
func (nf *noiseFIM) on(i int) bool { return nf.mask == nil || nf.mask[i] }

// estimate computes U and a from the public data at params.
func (nf *noiseFIM) estimate(tu *tuning, step int, params []float32) error {
	pub, P := tu.public, tu.p
	nf.released = 0
	for i := 0; i < P; i++ {
		if nf.on(i) {
			nf.released++
		}
	}
	if nf.rank >= nf.released {
		return fmt.Errorf("noise_rank = %d must be below the %d released parameters (else λ_min(Σ) changes)", nf.rank, nf.released)
	}
	rng := rand.New(newStream(deriveSeed(nf.seed, nf.repeat, streamTuneFIM), step, streamTuneFIM))
	// Estimation samples and, when the public part is large enough, as many held-out
	// samples to measure how much of the FIL reduction carries over to unseen data.
	all := sampleDistinct(rng, pub.N, min(2*nf.samples, pub.N))
	var idx, held []int
	for k, i := range all {
		if k%2 == 1 && len(all) == 2*nf.samples {
			held = append(held, i)
		} else {
			idx = append(idx, i)
		}
	}
	m := len(idx)
	v, mean, err := nf.tangents(tu, params, idx, rng)
	if err != nil {
		return err
	}
	// Project out the mean public clipped gradient (the descent direction).
	if mn := math.Sqrt(floats.Dot(mean, mean)); mn > 0 {
		for i := range mean {
			mean[i] /= mn
		}
		for _, vs := range v {
			floats.AddScaled(vs, -floats.Dot(mean, vs), mean)
		}
	}
	gram := mat.NewSymDense(m, nil)
	total := 0.0
	for a := 0; a < m; a++ {
		for b := a; b < m; b++ {
			gram.SetSym(a, b, floats.Dot(v[a], v[b]))
		}
		total += gram.At(a, a)
	}
	var es mat.EigenSym
	if !es.Factorize(gram, true) {
		return errors.New("eigendecomposition of the public FIM sample failed")
	}
	vals := es.Values(nil)
	var vecs mat.Dense
	es.VectorsTo(&vecs)
	if !(total > 0) || !(vals[m-1] > 0) {
		return errors.New("the public samples' clipped gradients do not depend on their inputs (zero FIM)")
	}
	nf.u, nf.a, nf.c = nil, nil, nil
	top := vals[m-1]
	var lam []float64
	for k := m - 1; k >= 0 && len(nf.u) < nf.rank; k-- {
		if !(vals[k] > 1e-10*top) {
			break
		}
		u := make([]float64, P)
		for s := 0; s < m; s++ {
			floats.AddScaled(u, vecs.At(s, k), v[s])
		}
		// Re-orthonormalise (round-off) against the previous directions and the mean.
		for _, prev := range append(nf.u, mean) {
			floats.AddScaled(u, -floats.Dot(prev, u), prev)
		}
		n := math.Sqrt(floats.Dot(u, u))
		if !(n > 0) {
			continue
		}
		for i := range u {
			u[i] /= n
		}
		nf.u = append(nf.u, u)
		lam = append(lam, vals[k])
	}
	budget := nf.power * nf.beta * nf.beta * float64(nf.released)
	a := waterFill(lam, nf.beta, budget)
	kept, red := 0.0, 0.0
	var us [][]float64
	for k, ak := range a {
		if !(ak > 0) {
			continue
		}
		us = append(us, nf.u[k])
		nf.a = append(nf.a, ak)
		c := ak / (nf.beta*nf.beta + ak)
		nf.c = append(nf.c, c)
		kept += lam[k]
		red += c * lam[k]
	}
	nf.u = us
	nf.refreshes++
	nf.captured += kept / total
	nf.reduction += red / total
	if len(held) > 0 {
		hv, _, err := nf.tangents(tu, params, held, rng)
		if err != nil {
			return err
		}
		tot, sub := 0.0, 0.0
		for _, vs := range hv {
			tot += floats.Dot(vs, vs)
			for q, u := range nf.u {
				p := floats.Dot(u, vs)
				sub += nf.c[q] * p * p
			}
		}
		if tot > 0 {
			nf.heldOut += sub / tot
			nf.heldN++
		}
	}
	// σ_eff must stay β·σ: r < released dimension and U orthonormal (checked above).
	eff, err := EffectiveNoiseMultiplier(nf.nominal, nf.beta, nf.a, nf.released)
	if err != nil {
		return err
	}
	if math.Abs(eff-nf.beta*nf.nominal) > 1e-12*eff {
		return fmt.Errorf("effective noise multiplier %v differs from β·σ = %v", eff, nf.beta*nf.nominal)
	}
	return nil
}

// add adds the learned component σC·Σ_i √a_i ζ_i u_i of step t's noise to the
// released sum (a per-step stream, so nothing needs checkpointing).
func (nf *noiseFIM) add(step int, sum []float32) {
	if len(nf.u) == 0 {
		return
	}
	rng := rand.New(newStream(deriveSeed(nf.seed, nf.repeat, streamTuneNoise), step, streamTuneNoise))
	if len(nf.extra) != len(sum) {
		nf.extra = make([]float64, len(sum))
	}
	clear(nf.extra)
	for k, u := range nf.u {
		z := nf.nominal * nf.clipC * math.Sqrt(nf.a[k]) * rng.NormFloat64()
		floats.AddScaled(nf.extra, z, u)
	}
	for i, e := range nf.extra {
		if e != 0 {
			sum[i] = float32(float64(sum[i]) + e)
		}
	}
}

// shapedSqNorm is ‖v‖² − Σ_i c_i (u_iᵀv)², the squared norm of v in the metric
// β²σ²C²·Σ⁻¹ (= ‖v‖² for isotropic noise).
func (nf *noiseFIM) shapedSqNorm(v []float64) float64 {
	s := floats.Dot(v, v)
	for k, u := range nf.u {
		p := floats.Dot(u, v)
		s -= nf.c[k] * p * p
	}
	return math.Max(s, 0)
}

func (nf *noiseFIM) result(sigmaEff float64) *NoiseFIMResult {
	r := &NoiseFIMResult{Rank: len(nf.u), Power: nf.power, Base: nf.beta, Samples: nf.samples, Every: nf.every,
		SigmaNominal: nf.nominal, SigmaEffective: sigmaEff, Refreshes: nf.refreshes}
	if nf.refreshes > 0 {
		r.Captured = nf.captured / float64(nf.refreshes)
		r.PublicReduction = nf.reduction / float64(nf.refreshes)
	}
	if nf.heldN > 0 {
		r.HeldOutReduction = nf.heldOut / float64(nf.heldN)
	}
	if nf.released > 0 {
		sa := 0.0
		for _, a := range nf.a {
			sa += a
		}
		r.ExtraNoisePower = sa / (nf.beta * nf.beta * float64(nf.released))
	}
	return r
}

// waterFill returns a_i ≥ 0 with Σ a_i = budget maximising Σ_i λ_i·a_i/(β² + a_i):
// a_i = max(0, β·√(λ_i/μ) − β²) with μ found by bisection (λ sorted decreasingly).
func waterFill(lam []float64, beta, budget float64) []float64 {
	a := make([]float64, len(lam))
	if len(lam) == 0 || !(budget > 0) {
		return a
	}
	b2 := beta * beta
	alloc := func(mu float64) float64 {
		s := 0.0
		for k, l := range lam {
			a[k] = math.Max(0, beta*math.Sqrt(l/mu)-b2)
			s += a[k]
		}
		return s
	}
	// alloc is decreasing in μ: 0 at μ = λ_1/β²; bisect log μ below it.
	hi := math.Log(lam[0] / b2)
	lo := hi - 1
	for alloc(math.Exp(lo)) < budget && lo > hi-2000 {
		lo -= 2 * (hi - lo)
	}
	for it := 0; it < 200; it++ {
		mid := 0.5 * (lo + hi)
		if alloc(math.Exp(mid)) > budget {
			lo = mid
		} else {
			hi = mid
		}
	}
	alloc(math.Exp(hi))
	return a
}

// tangents returns the clipped released gradient tangents J_z·u (u a Gaussian input
// direction) of the public samples idx at params, and their mean clipped gradient.
func (nf *noiseFIM) tangents(tu *tuning, params []float32, idx []int, rng *rand.Rand) ([][]float64, []float64, error) {
	pub, net := tu.public, tu.net
	P, D := tu.p, pub.Dim()
	m := len(idx)
	x := make([]float32, m*D)
	y := make([]int, m)
	xdot := make([]float32, m*D)
	for j, i := range idx {
		copy(x[j*D:(j+1)*D], pub.Image(i))
		y[j] = pub.Labels[i]
	}
	for i := range xdot {
		xdot[i] = float32(rng.NormFloat64())
	}
	tg, err := net.Tangent(params, x, y, m, 1, xdot, nil, false)
	if err != nil {
		return nil, nil, err
	}
	v := make([][]float64, m)
	mean := make([]float64, P)
	g := make([]float64, P)
	gd := make([]float64, P)
	for s := 0; s < m; s++ {
		for i := 0; i < P; i++ {
			g[i], gd[i] = 0, 0
			if nf.on(i) {
				g[i] = float64(tg.Grads[s*P+i])
				gd[i] = float64(tg.GradDots[s*P+i])
			}
		}
		v[s] = make([]float64, P)
		models.ClipJVP(tu.clip, g, gd, v[s])
		models.ClipVector(tu.clip, g) // g is now the clipped gradient
		for i := range mean {
			mean[i] += g[i] / float64(m)
		}
	}
	return v, mean, nil
}
