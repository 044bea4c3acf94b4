package train

import (
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
)

// Batched evaluation of the CNN body of g_φ (perturbcnn.go, thesis Table B.6). The
// convolutions stay per sample (cnnFront, cnnConvBack: ≈ 0.6 MFLOP per pass on a
// 28×28 image); the Dense layers, whose weights are the bulk of the work (2·H·(512 + p)
// FLOPs per pass for the first), run over the chunk's stacked inputs as GEMMs:
//
//	Z1 = E·A1ᵀ + c1, Q1 = GeLU(Z1);  Z2 = Q1·A2ᵀ + c2, Q2 = GeLU(Z2);  Δ = Q2·Vᵀ + c
//
// and likewise for the probe tangents Ė (no bias), then the reverse of the same
// products. lossHead is shared with the per-sample path (the tests' reference).

// cnnBatch is the state of a chunk of B samples with R probe rows.
type cnnBatch struct {
	B, R                 int
	rows, rowOf          []int
	f                    []cnnFwd
	e, ed                []float64 // B×in, R×in
	z1, q1, d11, d12     []float64 // B×h: Z1, GeLU, GeLU′, GeLU″
	z1d, q1d             []float64 // R×h
	z2, q2, d21, d22     []float64 // B×h2
	z2d, q2d             []float64 // R×h2
	vt, cm               []float64 // Vᵀ (h2×p), c; frozen coordinates zeroed
	delta, w, wdot, vdot []float64 // B×p, B×p, R×p, R×p
	sq, m                []float64 // R
}

// geluRows sets v, d1, d2 = GeLU(z), GeLU′(z), GeLU″(z) elementwise.
func geluRows(z []float64) (v, d1, d2 []float64) {
	v, d1, d2 = make([]float64, len(z)), make([]float64, len(z)), make([]float64, len(z))
	for i, x := range z {
		v[i], d1[i], d2[i] = gelu3(x)
	}
	return v, d1, d2
}

// tangentRows returns GeLU′(z_i) ⊙ ż_r for every row r of zd (of sample rowOf[r]).
func tangentRows(d1, zd []float64, rowOf []int, h int) []float64 {
	out := make([]float64, len(zd))
	for r, i := range rowOf {
		a, b, o := d1[i*h:(i+1)*h], zd[r*h:(r+1)*h], out[r*h:(r+1)*h]
		for j := range o {
			o[j] = a[j] * b[j]
		}
	}
	return out
}

// gemmRows is C = op(A)·op(B) + beta·C (alpha 1) for row-major views, where a product
// with no rows in C is skipped and one with an empty inner dimension scales C by beta.
func (n *perturbNet) gemmRows(tA, tB blas.Transpose, a, bb blas64.General, beta float64, cc blas64.General) {
	if cc.Rows == 0 || cc.Cols == 0 {
		return
	}
	if (tA == blas.NoTrans && a.Cols == 0) || (tA == blas.Trans && a.Rows == 0) {
		for i := 0; i < cc.Rows; i++ {
			row := cc.Data[i*cc.Stride : i*cc.Stride+cc.Cols]
			for j := range row {
				row[j] *= beta
			}
		}
		return
	}
	n.mm.Gemm(tA, tB, 1, a, bb, beta, cc)
}

// cnnBatchForward runs the CNN body on the chunk c (with every probe when tangents).
func (n *perturbNet) cnnBatchForward(c []pnSample, tangents bool) *cnnBatch {
	h, h2, p, in := n.h, n.h2, n.p, n.feats+n.p
	pv := n.cnnViews(n.phi)
	B := len(c)
	b := &cnnBatch{B: B, f: make([]cnnFwd, B), rows: make([]int, B+1)}
	for i := range c {
		n.cnnFront(&c[i], &b.f[i], tangents)
		b.rows[i+1] = b.rows[i] + len(b.f[i].ed)
	}
	R := b.rows[B]
	b.R = R
	b.rowOf = make([]int, R)
	b.e, b.ed = make([]float64, B*in), make([]float64, R*in)
	for i := range b.f {
		copy(b.e[i*in:], b.f[i].e)
		for k, ed := range b.f[i].ed {
			r := b.rows[i] + k
			b.rowOf[r] = i
			copy(b.ed[r*in:], ed)
		}
	}
	gemm := n.gemmRows // the probe products have no rows without tangents
	// Dense 1 and 2 on e and every ė.
	b.z1 = tiled(pv.c1, B)
	gemm(blas.NoTrans, blas.Trans, general(b.e, B, in, in), general(pv.a1, h, in, in), 1, general(b.z1, B, h, h))
	b.q1, b.d11, b.d12 = geluRows(b.z1)
	b.z1d = make([]float64, R*h)
	gemm(blas.NoTrans, blas.Trans, general(b.ed, R, in, in), general(pv.a1, h, in, in), 0, general(b.z1d, R, h, h))
	b.q1d = tangentRows(b.d11, b.z1d, b.rowOf, h)
	b.z2 = tiled(pv.c2, B)
	gemm(blas.NoTrans, blas.Trans, general(b.q1, B, h, h), general(pv.a2, h2, h, h), 1, general(b.z2, B, h2, h2))
	b.q2, b.d21, b.d22 = geluRows(b.z2)
	b.z2d = make([]float64, R*h2)
	gemm(blas.NoTrans, blas.Trans, general(b.q1d, R, h, h), general(pv.a2, h2, h, h), 0, general(b.z2d, R, h2, h2))
	b.q2d = tangentRows(b.d21, b.z2d, b.rowOf, h2)
	// Output layer: δ = V·q2 + c, ẇ = ġ + V·q̇2 (frozen rows zero).
	b.vt, b.cm = maskedOutput(pv.v, pv.c, n.mask, p, h2)
	b.delta = tiled(b.cm, B)
	gemm(blas.NoTrans, blas.NoTrans, general(b.q2, B, h2, h2), general(b.vt, h2, p, p), 1, general(b.delta, B, p, p))
	b.wdot = make([]float64, R*p)
	for i := range c {
		for k, gd := range c[i].gdots[:len(b.f[i].ed)] {
			copy(b.wdot[(b.rows[i]+k)*p:], gd)
		}
	}
	gemm(blas.NoTrans, blas.NoTrans, general(b.q2d, R, h2, h2), general(b.vt, h2, p, p), 1, general(b.wdot, R, p, p))
	b.w = make([]float64, B*p)
	b.vdot = make([]float64, R*p)
	b.sq, b.m = make([]float64, R), make([]float64, R)
	for i, sm := range c {
		hd := &b.f[i].head
		hd.delta, hd.w = b.delta[i*p:(i+1)*p], b.w[i*p:(i+1)*p]
		nn := 0.0
		for j, g := range sm.g {
			hd.w[j] = g + hd.delta[j]
			nn += hd.w[j] * hd.w[j]
		}
		hd.n = math.Sqrt(nn)
		hd.s, hd.s1, hd.s2 = clipDerivs(n.clip, hd.n)
		S := b.rows[i+1] - b.rows[i]
		b.f[i].wd, b.f[i].vd = make([][]float64, S), make([][]float64, S)
		for k := 0; k < S; k++ {
			r := b.rows[i] + k
			b.f[i].wd[k], b.f[i].vd[k] = b.wdot[r*p:(r+1)*p], b.vdot[r*p:(r+1)*p]
			b.sq[r], b.m[r] = clippedTangent(hd, b.f[i].wd[k], b.f[i].vd[k])
		}
		b.f[i].ms = b.m[b.rows[i]:b.rows[i+1]]
	}
	return b
}

// cnnLossAndGrad is lossAndGrad for the CNN body.
func (n *perturbNet) cnnLossAndGrad(b *cnnBatch, c []pnSample, grad []float64) float64 {
	B, R, h, h2, p, nf := b.B, b.R, n.h, n.h2, n.p, n.feats
	in := nf + p
	heads := make([]*pnFwd, B)
	for i := range heads {
		heads[i] = &b.f[i].head
	}
	tot, dD, dWd := n.batchHeads(heads, b.rows, b.sq, b.m, b.wdot, b.vdot, grad != nil)
	if grad == nil {
		return tot
	}
	pv, gv := n.cnnViews(n.phi), n.cnnViews(grad)
	mm := n.gemmRows
	// Output layer: ∂Vᵀ = Q2ᵀ·∂Δ + Q̇2ᵀ·∂Ẇ, ∂c; ∂Q2 = ∂Δ·V, ∂Q̇2 = ∂Ẇ·V.
	gVt := make([]float64, h2*p)
	mm(blas.Trans, blas.NoTrans, general(b.q2, B, h2, h2), general(dD, B, p, p), 0, general(gVt, h2, p, p))
	mm(blas.Trans, blas.NoTrans, general(b.q2d, R, h2, h2), general(dWd, R, p, p), 1, general(gVt, h2, p, p))
	addVt(gVt, gv.v, p, h2)
	addColSums(dD, B, p, gv.c)
	dq2, dq2d := make([]float64, B*h2), make([]float64, R*h2)
	mm(blas.NoTrans, blas.Trans, general(dD, B, p, p), general(b.vt, h2, p, p), 0, general(dq2, B, h2, h2))
	mm(blas.NoTrans, blas.Trans, general(dWd, R, p, p), general(b.vt, h2, p, p), 0, general(dq2d, R, h2, h2))
	// GeLU back: ∂Z = GeLU′⊙∂Q + Σ_k GeLU″⊙Ż_k⊙∂Q̇_k, ∂Ż = GeLU′⊙∂Q̇.
	geluBack := func(h int, d1, d2, zd, dq, dqd []float64) (dz, dzd []float64) {
		dz = make([]float64, len(dq))
		for i, v := range dq {
			dz[i] = d1[i] * v
		}
		dzd = make([]float64, len(dqd))
		for r, i := range b.rowOf {
			a1, a2 := d1[i*h:(i+1)*h], d2[i*h:(i+1)*h]
			zr, qr, o, zi := zd[r*h:(r+1)*h], dqd[r*h:(r+1)*h], dzd[r*h:(r+1)*h], dz[i*h:(i+1)*h]
			for j, v := range qr {
				zi[j] += a2[j] * zr[j] * v
				o[j] = a1[j] * v
			}
		}
		return dz, dzd
	}
	dz2, dz2d := geluBack(h2, b.d21, b.d22, b.z2d, dq2, dq2d)
	// Dense 2: ∂A2 += ∂Z2ᵀ·Q1 + ∂Ż2ᵀ·Q̇1, ∂c2; ∂Q1 = ∂Z2·A2, ∂Q̇1 = ∂Ż2·A2.
	mm(blas.Trans, blas.NoTrans, general(dz2, B, h2, h2), general(b.q1, B, h, h), 1, general(gv.a2, h2, h, h))
	mm(blas.Trans, blas.NoTrans, general(dz2d, R, h2, h2), general(b.q1d, R, h, h), 1, general(gv.a2, h2, h, h))
	addColSums(dz2, B, h2, gv.c2)
	dq1, dq1d := make([]float64, B*h), make([]float64, R*h)
	mm(blas.NoTrans, blas.NoTrans, general(dz2, B, h2, h2), general(pv.a2, h2, h, h), 0, general(dq1, B, h, h))
	mm(blas.NoTrans, blas.NoTrans, general(dz2d, R, h2, h2), general(pv.a2, h2, h, h), 0, general(dq1d, R, h, h))
	dz1, dz1d := geluBack(h, b.d11, b.d12, b.z1d, dq1, dq1d)
	// Dense 1: ∂A1 += ∂Z1ᵀ·E + ∂Ż1ᵀ·Ė, ∂c1; the features' cotangents ∂Z1·A1[:, :512].
	mm(blas.Trans, blas.NoTrans, general(dz1, B, h, h), general(b.e, B, in, in), 1, general(gv.a1, h, in, in))
	mm(blas.Trans, blas.NoTrans, general(dz1d, R, h, h), general(b.ed, R, in, in), 1, general(gv.a1, h, in, in))
	addColSums(dz1, B, h, gv.c1)
	if !n.conv { // the MLP body: no parameters below Dense 1
		return tot
	}
	de, ded := make([]float64, B*nf), make([]float64, R*nf)
	mm(blas.NoTrans, blas.NoTrans, general(dz1, B, h, h), general(pv.a1, h, nf, in), 0, general(de, B, nf, nf))
	mm(blas.NoTrans, blas.NoTrans, general(dz1d, R, h, h), general(pv.a1, h, nf, in), 0, general(ded, R, nf, nf))
	for i := range de {
		de[i] *= n.inv[i%nf]
	}
	for i := range ded {
		ded[i] *= n.inv[i%nf]
	}
	// The convolutions, per sample.
	for i := range c {
		des := [][]float64{de[i*nf : (i+1)*nf]}
		for r := b.rows[i]; r < b.rows[i+1]; r++ {
			des = append(des, ded[r*nf:(r+1)*nf])
		}
		n.cnnConvBack(&c[i], &b.f[i], des, grad)
	}
	return tot
}
