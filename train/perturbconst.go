package train

import (
	"math"
	"math/rand/v2"

	"github.com/dpfil/dpfil/internal/parallel"
	"github.com/dpfil/dpfil/models"
)

// The constant body of g_φ (perturb_arch constant): the thesis's g_φ as its code
// evaluates it. Edmunds's code (brandonedmunds2/Thesis, trainer.py) computes every
// per-sample quantity — the private clipped gradient, its Jacobian trace and g_φ's own
// training loss — under jax.vmap with each sample as a batch of one, and its g_φ
// networks (utils.py "mlp_reg", "cnn_aux_reg": Tables B.5, B.6) begin each Dense
// block with stax.BatchNorm(0), which standardises over the batch it is given. Over
// a batch of one, x − mean(x) = 0, so each BatchNorm returns its shift β whatever its
// input, and the network's output is
//
//	δ = V·GeLU(A·β + a) + c
//
// for every sample: a learned constant vector per refresh, trained on the public data
// by eq. 2.9 like any g_φ. (The thesis's App. A.4 notes that without BN "the
// perturbation is seen to no longer be constant".) This body is that map: β (h, the
// width of the BN before the last hidden layer: 512 for Table B.5, 256 for B.6),
// A (h2×h), a (h2), V (p×h2), c (p), with stax's initialisation — Dense weights Glorot
// normal, N(0, 2/(fan-in + fan-out)) (stax truncates; we do not), Dense biases
// N(0, 10⁻¹²), β = 0 — so g_φ starts at ≈ 10⁻⁶, not exactly zero. The layers below the
// first BN get no gradient in the thesis's code and are left out. As δ does not depend
// on the sample, ∂g_φ/∂z = 0: the released Jacobian is that of CLIP(g(z) + δ), and
// the FIL term of eq. 2.9 acts on δ only through the clip. Output rows of frozen
// coordinates are zero.
//
// One evaluation of δ serves a whole batch, so a refresh costs the model's gradients
// and probe tangents, not g_φ: the thesis's schedule on the full MNIST fits a CPU.

// constParams are the views of φ's blocks.
type constParams struct{ beta, a1, c1, v, c []float64 }

// constOffsets lays out φ = [β (h), A (h2×h), a (h2), V (p×h2), c (p)].
func constOffsets(p, h, h2 int) []int {
	return offsetsOf(h, h2*h, h2, p*h2, p)
}

func (n *perturbNet) constViews(phi []float64) constParams {
	o := n.constOff
	return constParams{beta: phi[o[0]:o[1]], a1: phi[o[1]:o[2]], c1: phi[o[2]:o[3]], v: phi[o[3]:o[4]], c: phi[o[4]:o[5]]}
}

// newPerturbConst returns the constant body with BN width h and hidden width h2.
func newPerturbConst(d, p, h, h2 int, lambda float64, probes int, clip models.Clip, mask []bool, lr float64, rng *rand.Rand) *perturbNet {
	n := &perturbNet{d: d, p: p, h: h, h2: h2, lambda: lambda, probes: probes, clip: clip, mask: mask, mm: models.NewDgemm(0),
		lr: lr, b1: 0.9, b2: 0.999, eps: 1e-8, constant: true}
	n.constOff = constOffsets(p, h, h2)
	o := n.constOff
	n.phi = make([]float64, o[len(o)-1])
	n.offV, n.offc = o[3], o[4]
	draw := func(lo, hi int, sd float64) {
		for i := lo; i < hi; i++ {
			n.phi[i] = sd * rng.NormFloat64()
		}
	}
	draw(o[1], o[2], math.Sqrt(2/float64(h+h2)))
	draw(o[2], o[3], 1e-6)
	draw(o[3], o[4], math.Sqrt(2/float64(h2+p)))
	draw(o[4], o[5], 1e-6)
	for i := 0; i < p; i++ { // frozen coordinates stay zero
		if mask != nil && !mask[i] {
			clear(n.phi[o[3]+i*h2 : o[3]+(i+1)*h2])
			n.phi[o[4]+i] = 0
		} else if mask != nil {
			n.free = append(n.free, i)
		}
	}
	if len(n.free) == p {
		n.free = nil
	}
	n.initState(0)
	n.trained = true // δ ≠ 0 from the start (stax's initialisation)
	n.standardised = true
	return n
}

// constForward returns z = A·β + a, q = GeLU(z), GeLU′(z) and δ = V·q + c.
func (n *perturbNet) constForward() (q, d1, delta []float64) {
	pv := n.constViews(n.phi)
	h, h2 := n.h, n.h2
	q, d1 = make([]float64, h2), make([]float64, h2)
	for j := 0; j < h2; j++ {
		q[j], d1[j], _ = gelu3(pv.c1[j] + dotF64(pv.a1[j*h:(j+1)*h], pv.beta))
	}
	delta = make([]float64, n.p)
	for i := range delta {
		if n.mask == nil || n.mask[i] {
			delta[i] = pv.c[i] + dotF64(pv.v[i*h2:(i+1)*h2], q)
		}
	}
	return q, d1, delta
}

// constStats are the sample's reductions the constant body's head needs: with
// w = g + δ and ẇ_k = ġ_k (δ does not depend on the input), ‖w‖², m_k = wᵀẇ_k and
// e_k = ‖ẇ_k‖². One fused pass over the coordinates gives them all.
func constStats(sm *pnSample, delta []float64, me []float64) (nn float64) {
	S := len(sm.gdots)
	g := sm.g[:len(delta)]
	switch S {
	case 2: // the default probe count, unrolled
		a, b := sm.gdots[0][:len(delta)], sm.gdots[1][:len(delta)]
		var m0, e0, m1, e1 float64
		for i, d := range delta {
			w := g[i] + d
			nn += w * w
			m0 += w * a[i]
			e0 += a[i] * a[i]
			m1 += w * b[i]
			e1 += b[i] * b[i]
		}
		me[0], me[1], me[2], me[3] = m0, e0, m1, e1
	default:
		for k := range sm.gdots {
			me[2*k], me[2*k+1] = 0, 0
		}
		for i, d := range delta {
			w := g[i] + d
			nn += w * w
			for k, gd := range sm.gdots {
				me[2*k] += w * gd[i]
				me[2*k+1] += gd[i] * gd[i]
			}
		}
	}
	return nn
}

// constHead is the clip head of one sample at δ in closed form. With v̇_k =
// s·ẇ_k + β_k·w, β_k = s′m_k/n (clippedTangent), every quantity eq. 2.9 needs is a
// function of n = ‖w‖, m_k and e_k:
//
//	‖v̇_k‖² = s²e_k + 2sβ_k m_k + β_k²n²,  v̇_kᵀw = s m_k + β_k n²,  v̇_kᵀẇ_k = s e_k + β_k m_k,
//
// and ∂ℓ/∂w — lossHeadInto's cR·w + Σ_k (cw_k·w + cwd_k·ẇ_k + β_k·G_k) with
// G_k = cg·v̇_k — collects to aw·w + Σ_k b_k·ẇ_k. constHead returns Σ_k ‖v̇_k‖², ℓ and
// (aw, b) in b's storage (len S): ∂ℓ/∂δ = 2δ + aw·(g + δ) + Σ_k b_k·ġ_k on the free
// coordinates. lossHeadInto is the reference its tests compare against.
func (n *perturbNet) constHead(nn, dd float64, me, b []float64) (fil, L, aw float64) {
	S := len(b)
	nrm := math.Sqrt(nn)
	s, s1, s2 := clipDerivs(n.clip, nrm)
	F := 0.0
	for k := 0; k < S; k++ {
		m, e := me[2*k], me[2*k+1]
		beta := 0.0
		if nrm > 0 {
			beta = s1 * m / nrm
		}
		sq := s*s*e + 2*s*beta*m + beta*beta*nn
		fil += sq
		F += sq / float64(S)
	}
	R := s * s * nn
	L = dd
	clear(b)
	if !(R > 0 && nrm > 0) { // the FIL term is off: ∂ℓ/∂δ = 2δ
		return fil, L, 0
	}
	L += n.lambda * F / R
	dR := (2*s*s1*nn + 2*s*s*nrm) / nrm
	aw = -n.lambda * F / (R * R) * dR
	cg := n.lambda / R * 2 / float64(S)
	for k := 0; k < S; k++ {
		m, e := me[2*k], me[2*k+1]
		beta := s1 * m / nrm
		gw := cg * (s*m + beta*nn)
		gwd := cg * (s*e + beta*m)
		cw := gwd*s1/nrm + gw*(s2*m/(nn)-s1*m/(nn*nrm))
		aw += cw + beta*beta*cg
		b[k] = gw*s1/nrm + beta*cg*s
	}
	return fil, L, aw
}

// packed reports whether sms hold only the free coordinates (publicSamples packs
// them for this body when some are frozen; other callers pass full vectors).
func (n *perturbNet) packed(sms []pnSample) bool {
	return n.free != nil && len(sms) > 0 && len(sms[0].g) == len(n.free)
}

// deltaFor returns δ as sms hold their vectors: packed to the free coordinates or not.
func (n *perturbNet) deltaFor(sms []pnSample, delta []float64) []float64 {
	if !n.packed(sms) {
		return delta
	}
	dp := make([]float64, len(n.free))
	for t, i := range n.free {
		dp[t] = delta[i]
	}
	return dp
}

// constCotangent returns Σ_i ℓ_i at δ and, when grad, the summed cotangent
// Σ_i ∂ℓ_i/∂δ = Σ_i (2 + aw_i)·δ + aw_i·g_i + Σ_k b_ik·ġ_ik over the full p
// coordinates (zero on frozen ones). Samples run in fixed chunks whose partial sums
// are added in chunk order: the bits do not depend on the core count.
func (n *perturbNet) constCotangent(sms []pnSample, delta []float64, grad bool) (tot float64, dsum []float64) {
	dd := dotF64(delta, delta)
	dv := n.deltaFor(sms, delta)
	chunks := (len(sms) + constChunk - 1) / constChunk
	tots, coefs := make([]float64, chunks), make([]float64, chunks)
	var dsums [][]float64
	if grad {
		dsums = make([][]float64, chunks)
	}
	parallel.Chunks(len(sms), constChunk, func(lo, hi int) {
		c := lo / constChunk
		if grad {
			dsums[c] = make([]float64, len(dv))
		}
		var me, b []float64
		for i := lo; i < hi; i++ {
			sm := &sms[i]
			S := len(sm.gdots)
			me, b = resize(me, 2*S), resize(b, S)
			nn := constStats(sm, dv, me)
			_, L, aw := n.constHead(nn, dd, me, b)
			tots[c] += L
			if !grad {
				continue
			}
			coefs[c] += 2 + aw
			if aw != 0 {
				axpyF64(aw, sm.g, dsums[c])
			}
			for k, gd := range sm.gdots {
				if b[k] != 0 {
					axpyF64(b[k], gd, dsums[c])
				}
			}
		}
	})
	for _, v := range tots {
		tot += v
	}
	if !grad {
		return tot, nil
	}
	if chunks == 0 {
		return 0, make([]float64, n.p)
	}
	ds, coef := dsums[0], coefs[0]
	for c, d := range dsums[1:] {
		axpyF64(1, d, ds)
		coef += coefs[c+1]
	}
	axpyF64(coef, dv, ds)
	if len(ds) == n.p {
		dsum = ds
	} else {
		dsum = make([]float64, n.p)
		for t, i := range n.free {
			dsum[i] = ds[t]
		}
	}
	if n.mask != nil {
		for i, on := range n.mask {
			if !on {
				dsum[i] = 0
			}
		}
	}
	return tot, dsum
}

// constLossBatch is lossBatch for the constant body: Σ_i ℓ_i and, when grad is not
// nil, Σ_i ∂ℓ_i/∂φ added to grad (δ is shared, so one reverse pass through the
// network carries the summed cotangent of δ).
func (n *perturbNet) constLossBatch(sms []pnSample, grad []float64) float64 {
	q, d1, delta := n.constForward()
	tot, dsum := n.constCotangent(sms, delta, grad != nil)
	if grad == nil {
		return tot
	}
	// δ = V·q + c: the output layer's gradient, then the layers below it.
	gv := n.constViews(grad)
	h2 := n.h2
	for i, c := range dsum {
		if c != 0 {
			gv.c[i] += c
			axpyF64(c, q, gv.v[i*h2:(i+1)*h2])
		}
	}
	n.constReverseBelow(dsum, d1, grad[:n.offV])
	return tot
}

// constReverseBelow adds to g (the β, A, a blocks of φ's layout) the gradient of
// Σ_i dsum_i·δ_i through q = GeLU(z), z = A·β + a, at the current φ (d1 = GeLU′(z)).
func (n *perturbNet) constReverseBelow(dsum, d1, g []float64) {
	pv := n.constViews(n.phi)
	o, h, h2 := n.constOff, n.h, n.h2
	gbeta, ga1, gc1 := g[o[0]:o[1]], g[o[1]:o[2]], g[o[2]:o[3]]
	dq := make([]float64, h2)
	for i, c := range dsum {
		if c != 0 {
			axpyF64(c, pv.v[i*h2:(i+1)*h2], dq)
		}
	}
	for j := 0; j < h2; j++ {
		dz := d1[j] * dq[j]
		gc1[j] += dz
		axpyF64(dz, pv.beta, ga1[j*h:(j+1)*h])
		axpyF64(dz, pv.a1[j*h:(j+1)*h], gbeta)
	}
}

// constTrainStep is one refresh step of the constant body: the batch-mean gradient
// of eq. 2.9 over sms and its Adam step, the same update as lossBatch followed by
// adamStep without building the gradient of V (P×h2, most of φ): its row i is
// dsum_i·q/B, formed where Adam reads it. Rows of frozen coordinates are skipped
// (their gradient, moments and parameters stay zero, so Adam leaves them unchanged).
// It returns the batch's loss sum and the gradient's norm.
func (n *perturbNet) constTrainStep(sms []pnSample) (tot, gnorm float64) {
	q, d1, delta := n.constForward()
	tot, dsum := n.constCotangent(sms, delta, true)
	B := float64(len(sms))
	h2 := n.h2
	small := make([]float64, n.offV) // β, A, a, from the current φ (before any update)
	n.constReverseBelow(dsum, d1, small)
	n.adamT++
	c1 := 1 - math.Pow(n.b1, float64(n.adamT))
	c2 := 1 - math.Pow(n.b2, float64(n.adamT))
	gn := 0.0
	for i := range small {
		g := small[i] / B
		gn += g * g
		n.adamAt(i, g, c1, c2)
	}
	rows := make([]float64, (n.p+constRows-1)/constRows)
	parallel.Chunks(n.p, constRows, func(lo, hi int) {
		s := 0.0
		for i := lo; i < hi; i++ {
			if n.mask != nil && !n.mask[i] {
				continue
			}
			c, off := dsum[i], n.offV+i*h2
			for j, qj := range q {
				g := (c * qj) / B
				s += g * g
				n.adamAt(off+j, g, c1, c2)
			}
			g := c / B
			s += g * g
			n.adamAt(n.offc+i, g, c1, c2)
		}
		rows[lo/constRows] = s
	})
	for _, s := range rows {
		gn += s
	}
	for i := n.offV; i < len(n.phi) && !n.trained; i++ {
		n.trained = n.phi[i] != 0
	}
	return tot, math.Sqrt(gn)
}

// constRows is the number of output rows per task of constTrainStep's Adam update.
const constRows = 256

// constFILSqBatch is filSqBatch for the constant body.
func (n *perturbNet) constFILSqBatch(sms []pnSample, out []float64) {
	_, _, delta := n.constForward()
	dd := dotF64(delta, delta)
	delta = n.deltaFor(sms, delta)
	parallel.Chunks(len(sms), constChunk, func(lo, hi int) {
		var me, b []float64
		for i := lo; i < hi; i++ {
			S := len(sms[i].gdots)
			me, b = resize(me, 2*S), resize(b, S)
			out[i], _, _ = n.constHead(constStats(&sms[i], delta, me), dd, me, b)
		}
	})
}

// constPerturbBatch is perturbBatch for the constant body: δ for every sample.
func (n *perturbNet) constPerturbBatch(sms []pnSample, out []float64) {
	_, _, delta := n.constForward()
	for i := range sms {
		copy(out[i*n.p:(i+1)*n.p], delta)
	}
}
