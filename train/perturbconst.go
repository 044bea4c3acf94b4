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
		}
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

// constScratch holds constHead's vectors, reused from sample to sample.
type constScratch struct {
	w, dd []float64
	vdots [][]float64
	sq, m []float64
}

// constHead is the clip head of one sample at δ: w = g + δ, its norm and clip scale,
// and per probe ẇ_k = ġ_k, v̇_k (clippedTangent), ‖v̇_k‖² and wᵀẇ_k, in sc's storage
// (valid until the next call with sc).
func (n *perturbNet) constHead(sm *pnSample, delta []float64, sc *constScratch) (f pnFwd, vdots [][]float64, sq, m []float64) {
	sc.w = resize(sc.w, n.p)
	f.delta, f.w = delta, sc.w
	nn := 0.0
	for i, g := range sm.g {
		f.w[i] = g + delta[i]
		nn += f.w[i] * f.w[i]
	}
	f.n = math.Sqrt(nn)
	f.s, f.s1, f.s2 = clipDerivs(n.clip, f.n)
	S := len(sm.gdots)
	for len(sc.vdots) < S {
		sc.vdots = append(sc.vdots, nil)
	}
	vdots, sc.sq, sc.m = sc.vdots[:S], resize(sc.sq, S), resize(sc.m, S)
	sq, m = sc.sq, sc.m
	for k, gd := range sm.gdots {
		vdots[k] = resize(vdots[k], n.p)
		sq[k], m[k] = clippedTangent(&f, gd, vdots[k])
	}
	return f, vdots, sq, m
}

// constLossBatch is lossBatch for the constant body: Σ_i ℓ_i and, when grad is not
// nil, Σ_i ∂ℓ_i/∂φ added to grad (δ is shared, so one reverse pass through the
// network carries the summed cotangent of δ).
func (n *perturbNet) constLossBatch(sms []pnSample, grad []float64) float64 {
	q, d1, delta := n.constForward()
	dd := dotF64(delta, delta)
	chunks := (len(sms) + constChunk - 1) / constChunk
	tots := make([]float64, chunks)
	var dsums [][]float64
	if grad != nil {
		dsums = make([][]float64, chunks)
	}
	parallel.Chunks(len(sms), constChunk, func(lo, hi int) {
		c := lo / constChunk
		var sc constScratch
		if grad != nil {
			sc.dd = make([]float64, n.p)
			dsums[c] = make([]float64, n.p)
		}
		for i := lo; i < hi; i++ {
			f, vdots, sq, m := n.constHead(&sms[i], delta, &sc)
			F := 0.0
			for _, v := range sq {
				F += v / float64(len(sq))
			}
			L, _ := n.lossHeadInto(&f, F, f.s*f.s*f.n*f.n, dd, sms[i].gdots, vdots, m, sc.dd, false)
			tots[c] += L
			if grad != nil {
				axpyF64(1, sc.dd, dsums[c])
			}
		}
	})
	tot := 0.0
	for _, v := range tots {
		tot += v
	}
	if grad == nil {
		return tot
	}
	dsum := dsums[0]
	for _, d := range dsums[1:] {
		axpyF64(1, d, dsum)
	}
	// δ = V·q + c, q = GeLU(z), z = A·β + a.
	pv, gv := n.constViews(n.phi), n.constViews(grad)
	h, h2 := n.h, n.h2
	dq := make([]float64, h2)
	for i, c := range dsum {
		if c == 0 {
			continue
		}
		gv.c[i] += c
		axpyF64(c, q, gv.v[i*h2:(i+1)*h2])
		axpyF64(c, pv.v[i*h2:(i+1)*h2], dq)
	}
	for j := 0; j < h2; j++ {
		dz := d1[j] * dq[j]
		gv.c1[j] += dz
		axpyF64(dz, pv.beta, gv.a1[j*h:(j+1)*h])
		axpyF64(dz, pv.a1[j*h:(j+1)*h], gv.beta)
	}
	return tot
}

// constFILSqBatch is filSqBatch for the constant body.
func (n *perturbNet) constFILSqBatch(sms []pnSample, out []float64) {
	_, _, delta := n.constForward()
	parallel.Chunks(len(sms), constChunk, func(lo, hi int) {
		var sc constScratch
		for i := lo; i < hi; i++ {
			_, _, sq, _ := n.constHead(&sms[i], delta, &sc)
			out[i] = 0
			for _, v := range sq {
				out[i] += v
			}
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
