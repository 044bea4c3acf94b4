package train

import (
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
)

// Batched evaluation of the MLP g_φ (perturbnet.go). loss and filSq evaluate one
// sample at a time with matrix–vector loops; a g_φ refresh evaluates thousands of
// public samples and the FIL accountant thousands of (sample, coordinate) tangents per
// private step, all with the same φ. Here the samples of a chunk are stacked so that
// every product with A (h×(d+p)) or V (p×h) is one GEMM:
//
//	forward:  Z = X̃·Aᵀ + a,  H = GeLU(Z),  Δ = H·Vᵀ + c            (B rows)
//	tangents: Ż = T̃·Aᵀ,      Ḣ = GeLU′(Z_i)⊙Ż,  Ẇ = Ġ + Ḣ·Vᵀ     (R = Σ_i S_i rows)
//	reverse:  ∂V += ∂Δᵀ·H + ∂Ẇᵀ·Ḣ,  ∂H = ∂Δ·V,  ∂Ḣ = ∂Ẇ·V,  ∂A += ∂Zᵀ·X̃ + ∂Żᵀ·T̃
//
// (X̃, T̃ the standardised inputs and probe directions). The per-sample head — the clip
// scale and its derivatives, eq. 2.9's loss and its cotangents — is lossHead, shared
// with the per-sample path, which stays as the reference the tests compare against.
// One-hot probes (the FIL accountant's coordinates) skip the image block of T̃: their
// column of A is added directly.

// pnChunkRows bounds the tangent rows of one batched chunk (memory: R·(d+p) floats for
// T̃ and 2·R·p for Ẇ and V̇).
const pnChunkRows = 512

// pnChunks calls f on consecutive chunks of sms holding at most pnChunkRows tangent
// rows (at least one sample each).
func pnChunks(sms []pnSample, f func([]pnSample)) {
	for lo := 0; lo < len(sms); {
		hi, rows := lo, 0
		for hi < len(sms) && (hi == lo || rows+len(sms[hi].gdots) <= pnChunkRows) {
			rows += len(sms[hi].gdots)
			hi++
		}
		f(sms[lo:hi])
		lo = hi
	}
}

// lossBatch returns Σ_i ℓ(φ; z_i) over sms and, when grad is not nil, adds
// Σ_i ∂ℓ_i/∂φ to grad: the sum of loss over the samples, evaluated with GEMMs.
func (n *perturbNet) lossBatch(sms []pnSample, grad []float64) float64 {
	if n.constant {
		return n.constLossBatch(sms, grad)
	}
	tot := 0.0
	if n.deep {
		pnChunks(sms, func(c []pnSample) {
			tot += n.cnnLossAndGrad(n.cnnBatchForward(c, true), c, grad)
		})
		return tot
	}
	pnChunks(sms, func(c []pnSample) {
		var b pnBatch
		b.forward(n, c, true)
		tot += b.lossAndGrad(n, c, grad)
	})
	return tot
}

// filSqBatch writes filSq of each sample into out.
func (n *perturbNet) filSqBatch(sms []pnSample, out []float64) {
	if n.constant {
		n.constFILSqBatch(sms, out)
		return
	}
	off := 0
	pnChunks(sms, func(c []pnSample) {
		var rows []int
		var sq []float64
		if n.deep {
			b := n.cnnBatchForward(c, true)
			rows, sq = b.rows, b.sq
		} else {
			var b pnBatch
			b.forward(n, c, true)
			rows, sq = b.rows, b.sq
		}
		for i := range c {
			tot := 0.0
			for _, v := range sq[rows[i]:rows[i+1]] {
				tot += v
			}
			out[off+i] = tot
		}
		off += len(c)
	})
}

// batchHeads runs lossHead for every sample of a chunk — heads[i] its forward head
// state, rows[i] … rows[i+1]−1 its probe rows with ‖v̇‖² in sq, wᵀẇ in m and ẇ, v̇ in
// the R×p matrices wdot, vdot — and returns the loss sum and, when grad, the
// cotangents of Δ (B×p) and of Ẇ (R×p, zero on frozen coordinates).
func (n *perturbNet) batchHeads(heads []*pnFwd, rows []int, sq, m, wdot, vdot []float64, grad bool) (tot float64, dD, dWd []float64) {
	p, B, R := n.p, len(heads), rows[len(heads)]
	if grad {
		dD, dWd = make([]float64, B*p), make([]float64, R*p)
	}
	for i, f := range heads {
		S := rows[i+1] - rows[i]
		dd := 0.0
		for _, v := range f.delta {
			dd += v * v
		}
		wdots, vdots := make([][]float64, S), make([][]float64, S)
		F := 0.0
		for k := 0; k < S; k++ {
			r := rows[i] + k
			wdots[k], vdots[k] = wdot[r*p:(r+1)*p], vdot[r*p:(r+1)*p]
			F += sq[r] / float64(S)
		}
		L, ddelta, dwdots := n.lossHead(f, F, f.s*f.s*f.n*f.n, dd, wdots, vdots, m[rows[i]:rows[i+1]], grad)
		tot += L
		if !grad {
			continue
		}
		copy(dD[i*p:(i+1)*p], ddelta)
		for k, dw := range dwdots {
			row := dWd[(rows[i]+k)*p : (rows[i]+k+1)*p]
			copy(row, dw)
			for j, on := range n.mask {
				if !on {
					row[j] = 0
				}
			}
		}
	}
	return tot, dD, dWd
}

// perturbBatch writes δ_i = g_φ(z_i, g_i) of each sample into out[i·p:(i+1)·p].
func (n *perturbNet) perturbBatch(sms []pnSample, out []float64) {
	if n.constant {
		n.constPerturbBatch(sms, out)
		return
	}
	off := 0
	pnChunks(sms, func(c []pnSample) {
		if n.deep {
			copy(out[off*n.p:(off+len(c))*n.p], n.cnnBatchForward(c, false).delta)
			off += len(c)
			return
		}
		var b pnBatch
		b.forward(n, c, false)
		copy(out[off*n.p:(off+len(c))*n.p], b.delta)
		off += len(c)
	})
}

// pnBatch is the forward and tangent state of a chunk of B samples with R probe rows
// (row-major matrices; rows[i] … rows[i+1]−1 are sample i's probes).
type pnBatch struct {
	B, R           int
	rows           []int
	sparse         bool      // every probe one-hot: T̃'s image block is zero
	vt, cm         []float64 // Vᵀ (h×p) and c with frozen coordinates zeroed
	xin            []float64 // B×(d+p) standardised [z; g]
	z, hh, g1, g2  []float64 // B×h
	delta, w       []float64 // B×p
	fw             []pnFwd   // per-sample head state (views into delta, w)
	tin            []float64 // R×(d+p) standardised [u; ġ]
	zdot, hdot     []float64 // R×h
	wdot, vdot     []float64 // R×p
	sq, m          []float64 // R: ‖v̇‖², wᵀẇ
	rowOf          []int     // R: the sample of each probe row
	anyOneHotProbe bool
}

func general(data []float64, rows, cols, stride int) blas64.General {
	return blas64.General{Rows: rows, Cols: cols, Stride: stride, Data: data}
}

// maskedOutput returns the output layer of g_φ as the GEMMs use it: Vᵀ (h×p, from V
// p×h row-major, so that the inner loops run over p) and the bias c, both zero on the
// frozen coordinates of mask (nil: none).
func maskedOutput(V, c []float64, mask []bool, p, h int) (vt, cm []float64) {
	vt, cm = make([]float64, h*p), append([]float64(nil), c...)
	for i := 0; i < p; i++ {
		if mask != nil && !mask[i] {
			cm[i] = 0
			continue
		}
		for j, v := range V[i*h : (i+1)*h] {
			vt[j*p+i] = v
		}
	}
	return vt, cm
}

// addVt adds the transpose of gVt (h×p) to gV (p×h, row-major).
func addVt(gVt, gV []float64, p, h int) {
	for j := 0; j < h; j++ {
		for i, v := range gVt[j*p : (j+1)*p] {
			gV[i*h+j] += v
		}
	}
}

// addColSums adds the column sums of the rows×cols matrix m to dst.
func addColSums(m []float64, rows, cols int, dst []float64) {
	for i := 0; i < rows; i++ {
		for j, v := range m[i*cols : (i+1)*cols] {
			dst[j] += v
		}
	}
}

// tiled returns B copies of v, one per row.
func tiled(v []float64, B int) []float64 {
	out := make([]float64, B*len(v))
	for i := 0; i < B; i++ {
		copy(out[i*len(v):], v)
	}
	return out
}

// forward evaluates g_φ on c and, with tangents, its probe tangents and the clipped
// tangents v̇.
func (b *pnBatch) forward(n *perturbNet, c []pnSample, tangents bool) {
	d, p, h := n.d, n.p, n.h
	in := d + p
	B := len(c)
	b.B = B
	b.rows = make([]int, B+1)
	b.sparse = true
	for i := range c {
		S := 0
		if tangents {
			S = len(c[i].gdots)
		}
		b.rows[i+1] = b.rows[i] + S
		if S > 0 && c[i].uIdx == nil {
			b.sparse = false
		}
		if c[i].uIdx != nil {
			b.anyOneHotProbe = true
		}
	}
	R := b.rows[B]
	b.R = R
	A, a := n.phi[n.offA:n.offa], n.phi[n.offa:n.offV]
	b.vt, b.cm = maskedOutput(n.phi[n.offV:n.offc], n.phi[n.offc:], n.mask, p, h)

	// Forward: Z = X̃·Aᵀ + a, H = GeLU(Z), Δ = H·Vmᵀ + cm, W = G + Δ.
	b.xin = make([]float64, B*in)
	for i, sm := range c {
		row := b.xin[i*in : (i+1)*in]
		for j, v := range sm.x {
			row[j] = (v - n.mean[j]) * n.inv[j]
		}
		for j, v := range sm.g {
			row[d+j] = (v - n.mean[d+j]) * n.inv[d+j]
		}
	}
	b.z = tiled(a, B)
	n.mm.Gemm(blas.NoTrans, blas.Trans, 1, general(b.xin, B, in, in), general(A, h, in, in), 1, general(b.z, B, h, h))
	b.hh, b.g1, b.g2 = make([]float64, B*h), make([]float64, B*h), make([]float64, B*h)
	for i, v := range b.z {
		b.hh[i], b.g1[i], b.g2[i] = gelu3(v)
	}
	b.delta = tiled(b.cm, B)
	n.mm.Gemm(blas.NoTrans, blas.NoTrans, 1, general(b.hh, B, h, h), general(b.vt, h, p, p), 1, general(b.delta, B, p, p))
	b.w = make([]float64, B*p)
	b.fw = make([]pnFwd, B)
	for i, sm := range c {
		f := &b.fw[i]
		f.delta, f.w = b.delta[i*p:(i+1)*p], b.w[i*p:(i+1)*p]
		nn := 0.0
		for j, g := range sm.g {
			f.w[j] = g + f.delta[j]
			nn += f.w[j] * f.w[j]
		}
		f.n = math.Sqrt(nn)
		f.s, f.s1, f.s2 = clipDerivs(n.clip, f.n)
	}
	if R == 0 {
		return
	}

	// Tangents: Ż = T̃·Aᵀ (+ A's column for one-hot probes), Ḣ = GeLU′⊙Ż, Ẇ = Ġ + Ḣ·Vmᵀ.
	b.tin = make([]float64, R*in)
	b.rowOf = make([]int, R)
	b.wdot = make([]float64, R*p)
	for i, sm := range c {
		for k, gd := range sm.gdots[:b.rows[i+1]-b.rows[i]] {
			r := b.rows[i] + k
			b.rowOf[r] = i
			row := b.tin[r*in : (r+1)*in]
			if sm.uIdx == nil {
				for j, u := range sm.u[k] {
					row[j] = u * n.inv[j]
				}
			}
			for j, v := range gd {
				row[d+j] = v * n.inv[d+j]
			}
			copy(b.wdot[r*p:(r+1)*p], gd)
		}
	}
	b.zdot = make([]float64, R*h)
	if b.sparse {
		n.mm.Gemm(blas.NoTrans, blas.Trans, 1, general(b.tin[d:], R, p, in), general(A[d:], h, p, in), 0, general(b.zdot, R, h, h))
	} else {
		n.mm.Gemm(blas.NoTrans, blas.Trans, 1, general(b.tin, R, in, in), general(A, h, in, in), 0, general(b.zdot, R, h, h))
	}
	b.hdot = make([]float64, R*h)
	for i, sm := range c {
		for k := range b.rows[i+1] - b.rows[i] {
			r := b.rows[i] + k
			zd := b.zdot[r*h : (r+1)*h]
			if sm.uIdx != nil {
				col := sm.uIdx[k]
				for j := range zd {
					zd[j] += A[j*in+col] * n.inv[col]
				}
			}
			g1 := b.g1[i*h : (i+1)*h]
			hd := b.hdot[r*h : (r+1)*h]
			for j, v := range zd {
				hd[j] = g1[j] * v
			}
		}
	}
	n.mm.Gemm(blas.NoTrans, blas.NoTrans, 1, general(b.hdot, R, h, h), general(b.vt, h, p, p), 1, general(b.wdot, R, p, p))
	b.vdot = make([]float64, R*p)
	b.sq, b.m = make([]float64, R), make([]float64, R)
	for r := 0; r < R; r++ {
		b.sq[r], b.m[r] = clippedTangent(&b.fw[b.rowOf[r]], b.wdot[r*p:(r+1)*p], b.vdot[r*p:(r+1)*p])
	}
}

// lossAndGrad returns Σ_i ℓ_i over the chunk and, when grad is not nil, adds its
// gradient (the reverse of forward).
func (b *pnBatch) lossAndGrad(n *perturbNet, c []pnSample, grad []float64) float64 {
	B, R, d, p, h := b.B, b.R, n.d, n.p, n.h
	in := d + p
	heads := make([]*pnFwd, B)
	for i := range heads {
		heads[i] = &b.fw[i]
	}
	tot, dD, dWd := n.batchHeads(heads, b.rows, b.sq, b.m, b.wdot, b.vdot, grad != nil)
	if grad == nil {
		return tot
	}
	gA, ga, gV, gc := grad[n.offA:n.offa], grad[n.offa:n.offV], grad[n.offV:n.offc], grad[n.offc:]
	addColSums(dD, B, p, gc)
	// ∂Vᵀ = Hᵀ·∂Δ (+ Ḣᵀ·∂Ẇ), added to ∂V transposed; ∂H = ∂Δ·V, ∂Z = GeLU′⊙∂H.
	gVt := make([]float64, h*p)
	n.mm.Gemm(blas.Trans, blas.NoTrans, 1, general(b.hh, B, h, h), general(dD, B, p, p), 0, general(gVt, h, p, p))
	dz := make([]float64, B*h)
	n.mm.Gemm(blas.NoTrans, blas.Trans, 1, general(dD, B, p, p), general(b.vt, h, p, p), 0, general(dz, B, h, h))
	for i, v := range dz {
		dz[i] = b.g1[i] * v
	}
	var dzd []float64
	if R > 0 {
		n.mm.Gemm(blas.Trans, blas.NoTrans, 1, general(b.hdot, R, h, h), general(dWd, R, p, p), 1, general(gVt, h, p, p))
		// ∂Ḣ = ∂Ẇ·V; ∂Ż = GeLU′⊙∂Ḣ; ∂Z += GeLU″⊙Ż⊙∂Ḣ.
		dzd = make([]float64, R*h)
		n.mm.Gemm(blas.NoTrans, blas.Trans, 1, general(dWd, R, p, p), general(b.vt, h, p, p), 0, general(dzd, R, h, h))
		for r := 0; r < R; r++ {
			i := b.rowOf[r]
			g1, g2, zi := b.g1[i*h:(i+1)*h], b.g2[i*h:(i+1)*h], dz[i*h:(i+1)*h]
			zd, dr := b.zdot[r*h:(r+1)*h], dzd[r*h:(r+1)*h]
			for j, v := range dr {
				zi[j] += g2[j] * zd[j] * v
				dr[j] = g1[j] * v
			}
		}
	}
	addVt(gVt, gV, p, h)
	addColSums(dz, B, h, ga)
	// ∂A += ∂Zᵀ·X̃ + ∂Żᵀ·T̃ (+ one-hot columns).
	n.mm.Gemm(blas.Trans, blas.NoTrans, 1, general(dz, B, h, h), general(b.xin, B, in, in), 1, general(gA, h, in, in))
	if R == 0 {
		return tot
	}
	if b.sparse {
		n.mm.Gemm(blas.Trans, blas.NoTrans, 1, general(dzd, R, h, h), general(b.tin[d:], R, p, in), 1, general(gA[d:], h, p, in))
	} else {
		n.mm.Gemm(blas.Trans, blas.NoTrans, 1, general(dzd, R, h, h), general(b.tin, R, in, in), 1, general(gA, h, in, in))
	}
	if b.anyOneHotProbe {
		for i, sm := range c {
			if sm.uIdx == nil {
				continue
			}
			for k, col := range sm.uIdx {
				r := b.rows[i] + k
				for j, v := range dzd[r*h : (r+1)*h] {
					gA[j*in+col] += v * n.inv[col]
				}
			}
		}
	}
	return tot
}

// constChunk is the number of samples per task of the constant body's per-sample
// work; partial sums are added in chunk order, so results do not depend on how the
// chunks were scheduled.
const constChunk = 32
