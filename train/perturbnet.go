package train

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dpfil/dpfil/internal/parallel"
	"github.com/dpfil/dpfil/models"
)

// Learned gradient perturbation g_φ (Edmunds 2024, "Fisher information for private
// training of machine learning models", Sec. 2.1, eqs. 2.5–2.9, Algorithm 1 lines
// 8–15, the "FIM" rows of Tables 3.1–3.4). Each private per-sample gradient g(θ, z)
// is replaced, before clipping, by
//
//	w = g + g_φ(θ_t, z, g),     released: Σ_i CLIP(w_i) + N(0, σ²C²I)
//
// where g_φ is a small network retrained on the PUBLIC split before every private
// step (or every n steps) at the current parameters θ_t, minimising eq. 2.9 with
// L' = ‖g_φ‖² (eq. 2.5) on public samples z:
//
//	ℓ(φ; z) = ‖g_φ‖² + λ · ‖∇_z CLIP(g + g_φ)‖_F² / ‖CLIP(g + g_φ)‖²
//
// (the Frobenius norm is the FIL of z up to 1/σ², eq. 2.7; the ratio is the inverse
// SNR of eq. 2.8; g_φ receives the gradient as input, eq. 2.9). The Frobenius norm
// is estimated as in eq. 2.6 by s Hutchinson probes u ~ N(0, I) in input space:
// ‖J‖_F² ≈ (1/s) Σ_k ‖J u_k‖². The input dependence of g_φ — through z directly and
// through g(θ, z) — is differentiated exactly (the thesis uses autodiff): with ġ = J_g u
// from the engine's tangent pass, ẇ = ġ + ∂g_φ/∂z·u + ∂g_φ/∂g·ġ and the clipped
// tangent is s·ẇ + s′(‖w‖)(wᵀẇ/‖w‖)·w.
//
// Architecture (thesis Table B.5, "MLP FIM", reduced to one hidden layer): the input
// [z; g] is standardised with constants (feature means, and one scale per block from
// the mean feature variance + 10⁻⁵, of the repeat's first public g_φ batch), standing
// in for BN axis 0 so that each sample's perturbation depends on that sample alone,
// and held fixed so that φ carries over from one refresh to the next, then Dense(H) → GeLU → Dense(P), the
// output on frozen coordinates held at zero. θ_t is not an input: within a step it is
// the same for every sample, so after the thesis's batch normalisation it is a
// constant feature. The output layer starts at zero (g_φ ≡ 0 before training).
//
// Privacy. φ is a function of the public data and of θ_t (post-processing of the
// earlier releases); each private sample's contribution CLIP(g + g_φ) still has norm
// ≤ c·C, so the sensitivity of the released sum — and the DP-SGD ε of every
// accountant — is unchanged. The FIL the trainer accounts is that of the released
// mechanism: the Jacobian of CLIP(g + g_φ(z, g)) w.r.t. the private input.

// perturbNet is g_φ: parameters, standardisation constants and Adam state.
type perturbNet struct {
	d, p, h int
	lambda  float64
	probes  int
	clip    models.Clip
	mask    []bool // released coordinates (nil: all)

	// phi = [A (h×(d+p), row-major; columns 0..d-1 act on z, d.. on g), a (h), V (p×h), c (p)].
	phi                []float64
	offA, offa, offV   int
	offc               int
	mean, inv          []float64 // standardisation of [z; g]: (v − mean)·inv
	trained            bool      // V or c ever left zero
	standardised       bool      // mean/inv set (once per repeat, at the first refresh)
	adamM, adamV       []float64
	adamT              int
	lr, wd             float64 // Adam learning rate; decoupled weight decay (AdamW)
	b1, b2, eps        float64
	lastLoss, lastPert float64

	// deep selects the two-Dense-layer head of perturbcnn.go: with conv, the CNN body
	// of thesis Table B.6 (features = the 512 conv features); without, the MLP of
	// Table B.5 (features = z). feats is the features' length, h and h2 the two Dense
	// widths; deepOff are the offsets of the parameter blocks in phi. mean/inv then
	// standardise [features; g] and offV/offc still locate the output layer.
	deep, conv bool
	feats, h2  int
	deepOff    []int

	// constant selects the constant body (perturbconst.go): h is then the BN width,
	// h2 the hidden width, and constOff the offsets of its blocks in phi.
	constant bool
	constOff []int
	// free lists the free coordinates when some are frozen (constant body; nil
	// otherwise): its public samples are packed to them (packSamples).
	free []int

	// l2 applies the weight decay as an L2 term added to the gradient before Adam's
	// moments (the thesis code's update) instead of decoupled (AdamW).
	l2 bool

	// mm runs every float64 product of g_φ (the packed FMA kernel where the CPU has
	// one, models.Dgemm; gonum's otherwise).
	mm *models.Dgemm
}

// newPerturbNet returns g_φ with hidden width h, its input layer drawn from rng
// (N(0, 1/(d+p))) and its output layer zero.
func newPerturbNet(d, p, h int, lambda float64, probes int, clip models.Clip, mask []bool, lr float64, rng *rand.Rand) *perturbNet {
	n := &perturbNet{d: d, p: p, h: h, lambda: lambda, probes: probes, clip: clip, mask: mask,
		mm: models.NewDgemm(0), lr: lr, b1: 0.9, b2: 0.999, eps: 1e-8}
	in := d + p
	n.offA, n.offa = 0, h*in
	n.offV = n.offa + h
	n.offc = n.offV + p*h
	n.phi = make([]float64, n.offc+p)
	sd := 1 / math.Sqrt(float64(in))
	for i := 0; i < h*in; i++ {
		n.phi[i] = sd * rng.NormFloat64()
	}
	n.initState(in)
	return n
}

// initState sets g_φ's standardisation constants for in input features to the
// identity (mean 0, scale 1; standardise fits them at the first refresh) and its
// Adam moments to zero (φ must be drawn already).
func (n *perturbNet) initState(in int) {
	n.mean = make([]float64, in)
	n.inv = make([]float64, in)
	for i := range n.inv {
		n.inv[i] = 1
	}
	n.adamM = make([]float64, len(n.phi))
	n.adamV = make([]float64, len(n.phi))
}

// standardise sets the input constants from rows of [z; g] (MLP body; [conv
// features; g] for the CNN body): the per-feature mean, and one scale per block
// (z or features, g), 1/√(mean feature variance + 10⁻⁵).
// A per-feature scale would multiply the input sensitivity of g_φ — and so the FIL of
// the private samples — by up to 1/√10⁻⁵ on features that are nearly constant in the
// public batch (MNIST's border pixels, gradients of rarely active coordinates).
func (n *perturbNet) standardise(rows [][]float64) {
	m := float64(len(rows))
	block := func(lo, hi int) {
		pooled := 0.0
		for i := lo; i < hi; i++ {
			mu := 0.0
			for _, r := range rows {
				mu += r[i]
			}
			mu /= m
			v := 0.0
			for _, r := range rows {
				v += (r[i] - mu) * (r[i] - mu)
			}
			n.mean[i] = mu
			pooled += v / m
		}
		inv := 1 / math.Sqrt(pooled/float64(hi-lo)+1e-5)
		for i := lo; i < hi; i++ {
			n.inv[i] = inv
		}
	}
	k := len(rows[0]) - n.p
	block(0, k)
	block(k, k+n.p)
	n.standardised = true
}

// standardiseSamples fits the standardisation on the first block of the body's input
// of public samples sms.
func (n *perturbNet) standardiseSamples(sms []pnSample) {
	if n.constant { // no input to standardise
		return
	}
	rows := make([][]float64, len(sms))
	for i, sm := range sms {
		if n.deep {
			rows[i] = append(n.cnnFeatures(sm.x), sm.g...)
		} else {
			rows[i] = append(append([]float64(nil), sm.x...), sm.g...)
		}
	}
	n.standardise(rows)
}

// gelu3 returns GeLU(x) = xΦ(x) and its first two derivatives.
func gelu3(x float64) (v, d1, d2 float64) {
	phi := 0.5 * (1 + math.Erf(x/math.Sqrt2))
	pdf := math.Exp(-0.5*x*x) / math.Sqrt(2*math.Pi)
	return x * phi, phi + x*pdf, (2 - x*x) * pdf
}

// clipDerivs returns the clip scale s(n) and its first two derivatives in n (the
// first two from models.Clip.Scale; the second by differentiating its formulas).
func clipDerivs(c models.Clip, n float64) (s, s1, s2 float64) {
	s, s1 = c.Scale(n)
	if c.Mode == models.ClipHard {
		if n > c.C {
			s2 = 2 * c.C / (n * n * n)
		}
		return s, s1, s2
	}
	t := n/c.C - 1
	var g1, g2 float64
	if c.GELU == models.GELUTanh {
		const a = 0.044715
		k := math.Sqrt(2 / math.Pi)
		th := math.Tanh(k * (t + a*t*t*t))
		u1, u2 := k*(1+3*a*t*t), 6*k*a*t
		g1 = 0.5*(1+th) + 0.5*t*(1-th*th)*u1
		g2 = (1-th*th)*u1 + 0.5*t*(1-th*th)*(u2-2*th*u1*u1)
	} else {
		_, g1, g2 = gelu3(t)
	}
	// s = 1/(G+1): s′ = −s²G′/C, s″ = −(2ss′G′/C + s²G″/C²).
	s2 = -(2*s*s1*g1/c.C + s*s*g2/(c.C*c.C))
	return s, s1, s2
}

// pnSample is one sample's data for g_φ: the input z, its (masked) gradient g and,
// per probe k, the input direction u_k and ġ_k = J_g u_k (masked). u_k may be given
// sparsely as a single coordinate (uIdx ≥ 0, value 1).
type pnSample struct {
	x, g  []float64
	u     [][]float64
	uIdx  []int
	gdots [][]float64
}

// pnFwd is the forward state of one sample.
type pnFwd struct {
	z, hh, g1, g2 []float64
	delta, w      []float64
	n, s, s1, s2  float64
}

func (n *perturbNet) forward(sm *pnSample, f *pnFwd) {
	in := n.d + n.p
	A, a, V, c := n.phi[n.offA:n.offa], n.phi[n.offa:n.offV], n.phi[n.offV:n.offc], n.phi[n.offc:]
	f.z = resize(f.z, n.h)
	f.hh = resize(f.hh, n.h)
	f.g1 = resize(f.g1, n.h)
	f.g2 = resize(f.g2, n.h)
	f.delta = resize(f.delta, n.p)
	f.w = resize(f.w, n.p)
	for j := 0; j < n.h; j++ {
		row := A[j*in : (j+1)*in]
		acc := a[j]
		for i := 0; i < n.d; i++ {
			acc += row[i] * (sm.x[i] - n.mean[i]) * n.inv[i]
		}
		for i := 0; i < n.p; i++ {
			acc += row[n.d+i] * (sm.g[i] - n.mean[n.d+i]) * n.inv[n.d+i]
		}
		f.z[j] = acc
		f.hh[j], f.g1[j], f.g2[j] = gelu3(acc)
	}
	nn := 0.0
	for i := 0; i < n.p; i++ {
		dl := 0.0
		if n.mask == nil || n.mask[i] {
			dl = c[i]
			vr := V[i*n.h : (i+1)*n.h]
			for j, hv := range f.hh {
				dl += vr[j] * hv
			}
		}
		f.delta[i] = dl
		f.w[i] = sm.g[i] + dl
		nn += f.w[i] * f.w[i]
	}
	f.n = math.Sqrt(nn)
	f.s, f.s1, f.s2 = clipDerivs(n.clip, f.n)
}

// tangent returns ż = A·[u·inv_z; ġ·inv_g] and ẇ = ġ + V(GeLU′(z)⊙ż) for probe k.
func (n *perturbNet) tangent(sm *pnSample, k int, f *pnFwd, zdot, hdot, wdot []float64) {
	in := n.d + n.p
	A, V := n.phi[n.offA:n.offa], n.phi[n.offV:n.offc]
	gd := sm.gdots[k]
	for j := 0; j < n.h; j++ {
		row := A[j*in : (j+1)*in]
		acc := 0.0
		if sm.uIdx != nil {
			i := sm.uIdx[k]
			acc = row[i] * n.inv[i]
		} else {
			u := sm.u[k]
			for i := 0; i < n.d; i++ {
				acc += row[i] * u[i] * n.inv[i]
			}
		}
		for i := 0; i < n.p; i++ {
			acc += row[n.d+i] * gd[i] * n.inv[n.d+i]
		}
		zdot[j] = acc
		hdot[j] = f.g1[j] * acc
	}
	for i := 0; i < n.p; i++ {
		v := gd[i]
		if n.mask == nil || n.mask[i] {
			vr := V[i*n.h : (i+1)*n.h]
			for j, hv := range hdot {
				v += vr[j] * hv
			}
		}
		wdot[i] = v
	}
}

// clippedTangent writes v̇ = s·ẇ + s′(wᵀẇ/n)·w and returns ‖v̇‖², wᵀẇ.
func clippedTangent(f *pnFwd, wdot, vdot []float64) (sq, m float64) {
	for i, v := range f.w {
		m += v * wdot[i]
	}
	beta := 0.0
	if f.n > 0 {
		beta = f.s1 * m / f.n
	}
	for i, v := range wdot {
		vdot[i] = f.s*v + beta*f.w[i]
		sq += vdot[i] * vdot[i]
	}
	return sq, m
}

// filSq returns Σ_k ‖∂CLIP(g + g_φ)/∂z · u_k‖² for one sample: with one-hot u_k the
// per-coordinate FIL sum the trainer accounts.
func (n *perturbNet) filSq(sm *pnSample) float64 {
	if n.constant {
		out := []float64{0}
		n.constFILSqBatch([]pnSample{*sm}, out)
		return out[0]
	}
	if n.deep {
		return n.cnnFILSq(sm)
	}
	var f pnFwd
	n.forward(sm, &f)
	zdot, hdot := make([]float64, n.h), make([]float64, n.h)
	wdot, vdot := make([]float64, n.p), make([]float64, n.p)
	tot := 0.0
	for k := range sm.gdots {
		n.tangent(sm, k, &f, zdot, hdot, wdot)
		sq, _ := clippedTangent(&f, wdot, vdot)
		tot += sq
	}
	return tot
}

// loss returns eq. 2.9's per-sample objective ℓ(φ; z) = ‖δ‖² + λ·F/R with
// F = (1/s)Σ_k ‖v̇_k‖² (eq. 2.6) and R = ‖CLIP(w)‖², and, when grad is not nil, adds
// ∂ℓ/∂φ to grad (hand-derived reverse mode through the tangent pass).
func (n *perturbNet) loss(sm *pnSample, grad []float64) float64 {
	if n.constant {
		return n.constLossBatch([]pnSample{*sm}, grad)
	}
	if n.deep {
		return n.cnnLoss(sm, grad)
	}
	var f pnFwd
	n.forward(sm, &f)
	S := len(sm.gdots)
	R := f.s * f.s * f.n * f.n
	dd := 0.0
	for _, v := range f.delta {
		dd += v * v
	}
	zdots, hdots := make([][]float64, S), make([][]float64, S)
	wdots, vdots := make([][]float64, S), make([][]float64, S)
	ms := make([]float64, S)
	F := 0.0
	for k := 0; k < S; k++ {
		zdots[k], hdots[k] = make([]float64, n.h), make([]float64, n.h)
		wdots[k], vdots[k] = make([]float64, n.p), make([]float64, n.p)
		n.tangent(sm, k, &f, zdots[k], hdots[k], wdots[k])
		var sq float64
		sq, ms[k] = clippedTangent(&f, wdots[k], vdots[k])
		F += sq / float64(S)
	}
	L, ddelta, dwdots := n.lossHead(&f, F, R, dd, wdots, vdots, ms, grad != nil)
	if grad == nil {
		return L
	}
	useT := dwdots != nil
	in := n.d + n.p
	V := n.phi[n.offV:n.offc]
	gA, ga, gV, gc := grad[n.offA:n.offa], grad[n.offa:n.offV], grad[n.offV:n.offc], grad[n.offc:]
	dh := make([]float64, n.h)
	dz := make([]float64, n.h)
	for i, v := range ddelta {
		if v == 0 {
			continue
		}
		gc[i] += v
		vr, gr := V[i*n.h:(i+1)*n.h], gV[i*n.h:(i+1)*n.h]
		for j := 0; j < n.h; j++ {
			gr[j] += v * f.hh[j]
			dh[j] += vr[j] * v
		}
	}
	for j := 0; j < n.h; j++ {
		dz[j] = f.g1[j] * dh[j]
	}
	dzdots := make([][]float64, S)
	if useT {
		for k := 0; k < S; k++ {
			dhd := make([]float64, n.h)
			for i, v := range dwdots[k] {
				if v == 0 || (n.mask != nil && !n.mask[i]) {
					continue
				}
				vr, gr := V[i*n.h:(i+1)*n.h], gV[i*n.h:(i+1)*n.h]
				for j := 0; j < n.h; j++ {
					gr[j] += v * hdots[k][j]
					dhd[j] += vr[j] * v
				}
			}
			dzd := make([]float64, n.h)
			for j := 0; j < n.h; j++ {
				dzd[j] = f.g1[j] * dhd[j]
				dz[j] += f.g2[j] * zdots[k][j] * dhd[j]
			}
			dzdots[k] = dzd
		}
	}
	for j := 0; j < n.h; j++ {
		ga[j] += dz[j]
		row := gA[j*in : (j+1)*in]
		for i := 0; i < n.d; i++ {
			row[i] += dz[j] * (sm.x[i] - n.mean[i]) * n.inv[i]
		}
		for i := 0; i < n.p; i++ {
			row[n.d+i] += dz[j] * (sm.g[i] - n.mean[n.d+i]) * n.inv[n.d+i]
		}
		if !useT {
			continue
		}
		for k := 0; k < S; k++ {
			c := dzdots[k][j]
			if c == 0 {
				continue
			}
			if sm.uIdx != nil {
				i := sm.uIdx[k]
				row[i] += c * n.inv[i]
			} else {
				for i, u := range sm.u[k] {
					row[i] += c * u * n.inv[i]
				}
			}
			for i, v := range sm.gdots[k] {
				row[n.d+i] += c * v * n.inv[n.d+i]
			}
		}
	}
	return L
}

// lossHead returns eq. 2.9's ℓ = ‖δ‖² + λ·F/R from the forward state f (dd = ‖δ‖²,
// F the probe mean of ‖v̇_k‖², R = ‖CLIP(w)‖²) and, when grad, the cotangents of ℓ
// w.r.t. δ (zero on frozen coordinates) and w.r.t. each probe's ẇ_k (dwdots nil when
// the FIL term is off: R = 0 or w = 0). Every body of g_φ shares it.
func (n *perturbNet) lossHead(f *pnFwd, F, R, dd float64, wdots, vdots [][]float64, ms []float64, grad bool) (L float64, ddelta []float64, dwdots [][]float64) {
	if grad {
		ddelta = make([]float64, n.p)
	}
	L, dwdots = n.lossHeadInto(f, F, R, dd, wdots, vdots, ms, ddelta, true)
	return L, ddelta, dwdots
}

// lossHeadInto is lossHead writing ∂ℓ/∂δ into ddelta (when not nil; overwritten) and
// returning the ẇ_k cotangents only when wantWdots (a body whose ẇ does not depend on
// φ, the constant one, needs none).
func (n *perturbNet) lossHeadInto(f *pnFwd, F, R, dd float64, wdots, vdots [][]float64, ms []float64, ddelta []float64, wantWdots bool) (L float64, dwdots [][]float64) {
	grad := ddelta != nil
	S := len(wdots)
	useT := R > 0 && f.n > 0
	L = dd
	if useT {
		L += n.lambda * F / R
	}
	if !grad {
		return L, nil
	}
	dw := ddelta // ∂T/∂w, then ∂ℓ/∂δ in place
	clear(dw)
	if useT {
		if wantWdots {
			dwdots = make([][]float64, S)
		}
		nrm := f.n
		// ∂T/∂R · ∂R/∂w, R = s²n².
		dR := (2*f.s*f.s1*nrm*nrm + 2*f.s*f.s*nrm) / nrm
		cR := -n.lambda * F / (R * R) * dR
		for i, v := range f.w {
			dw[i] = cR * v
		}
		for k := 0; k < S; k++ {
			vd, wd, m := vdots[k], wdots[k], ms[k]
			cg := n.lambda / R * 2 / float64(S) // G = cg·v̇
			var gw, gwd float64
			for i := range vd {
				gw += vd[i] * f.w[i]
				gwd += vd[i] * wd[i]
			}
			gw *= cg
			gwd *= cg
			beta := f.s1 * m / nrm
			cw := gwd*f.s1/nrm + gw*(f.s2*m/(nrm*nrm)-f.s1*m/(nrm*nrm*nrm))
			cwd := gw * f.s1 / nrm
			for i := range dw {
				G := cg * vd[i]
				dw[i] += cw*f.w[i] + cwd*wd[i] + beta*G
			}
			if wantWdots {
				dwd := make([]float64, n.p)
				for i := range dwd {
					G := cg * vd[i]
					dwd[i] = f.s*G + (f.s1/nrm)*gw*f.w[i]
				}
				dwdots[k] = dwd
			}
		}
	}
	for i := range ddelta {
		if n.mask == nil || n.mask[i] {
			ddelta[i] = 2*f.delta[i] + dw[i]
		} else {
			ddelta[i] = 0
		}
	}
	return L, dwdots
}

// perturb writes δ = g_φ(z, g) into delta.
func (n *perturbNet) perturb(sm *pnSample, delta []float64) {
	if n.constant {
		n.constPerturbBatch([]pnSample{*sm}, delta)
		return
	}
	if n.deep {
		var f cnnFwd
		n.cnnForward(sm, &f, false)
		copy(delta, f.head.delta)
		return
	}
	var f pnFwd
	n.forward(sm, &f)
	copy(delta, f.delta)
}

// adamStep applies one AdamW step with the batch-mean gradient:
// φ ← φ − lr·(m̂/(√v̂ + ε) + wd·φ); with l2, one Adam step on the gradient plus
// wd·φ (the thesis code's: weight decay inside the moments).
func (n *perturbNet) adamStep(grad []float64) {
	n.adamT++
	c1 := 1 - math.Pow(n.b1, float64(n.adamT))
	c2 := 1 - math.Pow(n.b2, float64(n.adamT))
	parallel.Chunks(len(grad), 1<<16, func(lo, hi int) { // elementwise: any split gives the same bits
		for i := lo; i < hi; i++ {
			n.adamAt(i, grad[i], c1, c2)
		}
	})
	for i := n.offV; i < len(n.phi); i++ {
		if n.phi[i] != 0 {
			n.trained = true
			break
		}
	}
}

// adamAt updates φ_i with gradient g (c1, c2: the step's bias corrections).
func (n *perturbNet) adamAt(i int, g, c1, c2 float64) {
	decoupled := n.wd * n.phi[i]
	if n.l2 {
		g += decoupled
		decoupled = 0
	}
	n.adamM[i] = n.b1*n.adamM[i] + (1-n.b1)*g
	n.adamV[i] = n.b2*n.adamV[i] + (1-n.b2)*g*g
	n.phi[i] -= n.lr * ((n.adamM[i]/c1)/(math.Sqrt(n.adamV[i]/c2)+n.eps) + decoupled)
}

func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// errPerturbConfig wraps g_φ configuration errors.
func errPerturbConfig(format string, args ...any) error {
	return fmt.Errorf("config: perturb_net: "+format, args...)
}
