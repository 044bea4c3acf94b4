package train

import (
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/blas"

	"github.com/dpfil/dpfil/models"
)

// The CNN body of g_φ (thesis Table B.6, "CNN FIM"), for 1×28×28 inputs:
//
//	z → Conv(16, 8×8, stride 2, pad 2) → GeLU → AvgPool(2×2, stride 1)   1×28×28 → 16×13×13 → 16×12×12
//	  → Conv(32, 4×4, stride 2, pad 0) → GeLU → AvgPool(2×2, stride 1)   → 32×5×5 → 32×4×4 = 512 features
//	[features; g] → standardise → Dense(H) → GeLU → Dense(H) → GeLU → Dense(P)
//
// H = 256 is the thesis's width (perturb_hidden; both hidden layers have it unless
// perturb_hidden2 sets the second). Without the convolutions the same head on
// [z; g] is the thesis's MLP g_φ (Table B.5, perturb_arch mlp2: H = 512, H₂ = 256);
// every pass below skips the conv blocks then (perturbNet.conv false). As in
// the MLP body, the thesis's batch normalisations are replaced by fixed
// standardisation constants so that each sample's perturbation depends on that sample
// alone: the first BN, on [features; g], is the per-feature mean and one scale per
// block (features, g) of the repeat's first public g_φ batch at the initial conv
// weights (perturbNet.standardise); the second BN, between the two Dense layers, is
// with fixed constants an affine map of the hidden vector that the next Dense layer
// absorbs (Dense(a ⊙ q + b) is a Dense layer), so it is left out. The output layer
// starts at zero (g_φ ≡ 0 before training); the conv kernels are drawn from
// N(0, 1/fan-in), the Dense layers from N(0, 1/width-in), the biases are zero.
//
// All derivatives are hand-derived in float64: the forward pass, the input tangent
// ẇ = ġ + ∂g_φ/∂z·u + ∂g_φ/∂g·ġ (through both convs: conv(u) ⊙ GeLU′ → pool → …)
// and the reverse pass of eq. 2.9's loss through the forward and the tangent passes
// (each GeLU contributes GeLU″(y)·ẏ·dẏ to its input's cotangent), level by level
// from the output down to the first conv's kernel.

// cnnSide etc. are the geometry of Table B.6 on 1×28×28 inputs.
const (
	cnnSide  = 28
	cnnF1    = 16 // conv1 filters
	cnnK1    = 8
	cnnF2    = 32 // conv2 filters
	cnnK2    = 4
	cnnFeats = cnnF2 * 4 * 4
	// defaultPerturbHiddenCNN is the thesis's Dense width (Table B.6).
	defaultPerturbHiddenCNN = 256
)

var (
	cnnConv1 = convSpec{cin: 1, hin: cnnSide, win: cnnSide, cout: cnnF1, k: cnnK1, stride: 2, pad: 2, ho: 13, wo: 13}
	cnnConv2 = convSpec{cin: cnnF1, hin: 12, win: 12, cout: cnnF2, k: cnnK2, stride: 2, pad: 0, ho: 5, wo: 5}
)

// convSpec is a 2-D convolution on channel-major (C, H, W) float64 images with
// kernels W[o][c][a][b] (no bias here).
type convSpec struct {
	cin, hin, win, cout, k, stride, pad, ho, wo int
}

func (c convSpec) inLen() int  { return c.cin * c.hin * c.win }
func (c convSpec) outLen() int { return c.cout * c.ho * c.wo }
func (c convSpec) wLen() int   { return c.cout * c.cin * c.k * c.k }

// eachTap calls fn(q, i, t, n) for every kernel tap t = (ci, a, b) — the tap's column
// in the patch matrix of im2col — and every output row: the output position q and
// input index i of the row's first output column that the tap reaches, and the
// number n of such columns (positions q, q+1, …; input indices i, i+stride, …).
func (c convSpec) eachTap(fn func(q, i, t, n int)) {
	kk := c.k * c.k
	for ci := 0; ci < c.cin; ci++ {
		for a := 0; a < c.k; a++ {
			for b := 0; b < c.k; b++ {
				t := ci*kk + a*c.k + b
				// valid output columns j: 0 ≤ j·stride + b − pad < win.
				j0 := 0
				for j0 < c.wo && j0*c.stride+b-c.pad < 0 {
					j0++
				}
				j1 := j0
				for j1 < c.wo && j1*c.stride+b-c.pad < c.win {
					j1++
				}
				if j1 == j0 {
					continue
				}
				for i := 0; i < c.ho; i++ {
					r := i*c.stride + a - c.pad
					if r < 0 || r >= c.hin {
						continue
					}
					fn(i*c.wo+j0, (ci*c.hin+r)*c.win+j0*c.stride+b-c.pad, t, j1-j0)
				}
			}
		}
	}
}

// im2col returns the patch matrix of one input image: row q = (i, j) of the output
// grid, column t = (ci, a, b) of the kernel, the input value under tap t at output
// (i, j) (zero in the padding).
func (c convSpec) im2col(in []float64) []float64 {
	T := c.cin * c.k * c.k
	cols := make([]float64, c.ho*c.wo*T)
	c.eachTap(func(q, i, t, n int) {
		for j := 0; j < n; j++ {
			cols[(q+j)*T+t] = in[i+j*c.stride]
		}
	})
	return cols
}

// fwd adds conv(W, in) to out: out (cout × positions) += W (cout × taps) · colsᵀ.
func (c convSpec) fwd(mm *models.Dgemm, W, in, out []float64) {
	T, Q := c.cin*c.k*c.k, c.ho*c.wo
	mm.Gemm(blas.NoTrans, blas.Trans, 1, general(W, c.cout, T, T), general(c.im2col(in), Q, T, T), 1, general(out, c.cout, Q, Q))
}

// bwdIn adds convᵀ(W, dout) to din (the cotangent of the input): the patch
// cotangents doutᵀ·W scattered back onto the image.
func (c convSpec) bwdIn(mm *models.Dgemm, W, dout, din []float64) {
	T, Q := c.cin*c.k*c.k, c.ho*c.wo
	dcols := make([]float64, Q*T)
	mm.Gemm(blas.Trans, blas.NoTrans, 1, general(dout, c.cout, Q, Q), general(W, c.cout, T, T), 0, general(dcols, Q, T, T))
	c.eachTap(func(q, i, t, n int) {
		for j := 0; j < n; j++ {
			din[i+j*c.stride] += dcols[(q+j)*T+t]
		}
	})
}

// bwdW adds the kernel cotangent of out += conv(W, in) to dW: dout · cols.
func (c convSpec) bwdW(mm *models.Dgemm, dout, in, dW []float64) {
	T, Q := c.cin*c.k*c.k, c.ho*c.wo
	mm.Gemm(blas.NoTrans, blas.NoTrans, 1, general(dout, c.cout, Q, Q), general(c.im2col(in), Q, T, T), 1, general(dW, c.cout, T, T))
}

// dotF64 returns Σ a_i·b_i (four partial sums).
func dotF64(a, b []float64) float64 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// axpyF64 adds c·x to y.
func axpyF64(c float64, x, y []float64) {
	y = y[:len(x)]
	i := 0
	for ; i+4 <= len(x); i += 4 {
		y[i] += c * x[i]
		y[i+1] += c * x[i+1]
		y[i+2] += c * x[i+2]
		y[i+3] += c * x[i+3]
	}
	for ; i < len(x); i++ {
		y[i] += c * x[i]
	}
}

// pool2 writes the 2×2 stride-1 average pool of in (ch×h×w) to out (ch×(h−1)×(w−1)).
func pool2(ch, h, w int, in, out []float64) {
	for c := 0; c < ch; c++ {
		for i := 0; i < h-1; i++ {
			for j := 0; j < w-1; j++ {
				b := (c*h+i)*w + j
				out[(c*(h-1)+i)*(w-1)+j] = 0.25 * (in[b] + in[b+1] + in[b+w] + in[b+w+1])
			}
		}
	}
}

// pool2T adds the transpose of pool2 applied to dout to din.
func pool2T(ch, h, w int, dout, din []float64) {
	for c := 0; c < ch; c++ {
		for i := 0; i < h-1; i++ {
			for j := 0; j < w-1; j++ {
				b := (c*h+i)*w + j
				v := 0.25 * dout[(c*(h-1)+i)*(w-1)+j]
				din[b] += v
				din[b+1] += v
				din[b+w] += v
				din[b+w+1] += v
			}
		}
	}
}

// geluLayer holds y, GeLU(y), GeLU′(y), GeLU″(y).
type geluLayer struct{ y, h, d1, d2 []float64 }

func (g *geluLayer) set(y []float64) {
	g.y = y
	g.h, g.d1, g.d2 = make([]float64, len(y)), make([]float64, len(y)), make([]float64, len(y))
	for i, v := range y {
		g.h[i], g.d1[i], g.d2[i] = gelu3(v)
	}
}

// tangent returns GeLU′(y) ⊙ ẏ.
func (g *geluLayer) tangent(yd []float64) []float64 {
	out := make([]float64, len(yd))
	for i, v := range yd {
		out[i] = g.d1[i] * v
	}
	return out
}

// dense sets g from y = W·x + bias (W rows×cols) and returns, for every input
// tangent ẋ_k, ẏ_k = W·ẋ_k and GeLU′(y) ⊙ ẏ_k; one pass over W (denseMulti) for
// x and all ẋ_k.
func (g *geluLayer) dense(W, bias []float64, rows, cols int, x []float64, xds [][]float64) (yds, hds [][]float64) {
	ins, outs := append([][]float64{x}, xds...), make([][]float64, len(xds)+1)
	for k := range outs {
		outs[k] = make([]float64, rows)
	}
	denseMulti(W, bias, rows, cols, ins, outs)
	g.set(outs[0])
	yds, hds = outs[1:], make([][]float64, len(xds))
	for k := range hds {
		hds[k] = g.tangent(yds[k])
	}
	return yds, hds
}

// back returns the cotangents of y and of each ẏ_k from those of h and of each ḣ_k:
// dy = GeLU′·dh + Σ_k GeLU″·ẏ_k·dḣ_k, dẏ_k = GeLU′·dḣ_k.
func (g *geluLayer) back(dh []float64, yds, dhds [][]float64) (dy []float64, dyds [][]float64) {
	dy = make([]float64, len(dh))
	for i, v := range dh {
		dy[i] = g.d1[i] * v
	}
	dyds = make([][]float64, len(dhds))
	for k, dhd := range dhds {
		dyds[k] = g.tangent(dhd)
		for i, v := range dhd {
			dy[i] += g.d2[i] * yds[k][i] * v
		}
	}
	return dy, dyds
}

// cnnParams are views of φ for the CNN body.
type cnnParams struct {
	w1, b1, w2, b2, a1, c1, a2, c2, v, c []float64
}

// deepOffsets lays out φ = [W1, b1, W2, b2, A1 (h×(feats+p)), a1, A2 (h2×h), a2,
// V (p×h2), c]; without the conv body the four conv blocks are empty.
func deepOffsets(feats, p, h, h2 int, conv bool) []int {
	sizes := []int{0, 0, 0, 0, h * (feats + p), h, h2 * h, h2, p * h2, p}
	if conv {
		sizes[0], sizes[1], sizes[2], sizes[3] = cnnConv1.wLen(), cnnF1, cnnConv2.wLen(), cnnF2
	}
	return offsetsOf(sizes...)
}

// offsetsOf returns the prefix sums 0, s₀, s₀+s₁, … of block sizes: the offsets of
// consecutive blocks in φ.
func offsetsOf(sizes ...int) []int {
	offs := make([]int, len(sizes)+1)
	for i, s := range sizes {
		offs[i+1] = offs[i] + s
	}
	return offs
}

func (n *perturbNet) cnnViews(phi []float64) cnnParams {
	o := n.deepOff
	return cnnParams{w1: phi[o[0]:o[1]], b1: phi[o[1]:o[2]], w2: phi[o[2]:o[3]], b2: phi[o[3]:o[4]],
		a1: phi[o[4]:o[5]], c1: phi[o[5]:o[6]], a2: phi[o[6]:o[7]], c2: phi[o[7]:o[8]], v: phi[o[8]:o[9]], c: phi[o[9]:o[10]]}
}

// newPerturbDeep returns g_φ with two Dense layers of widths h and h2: with conv, on
// the CNN body of Table B.6 (input 1×28×28, so d must be 784); without, on z itself
// (the MLP of Table B.5).
func newPerturbDeep(d, p, h, h2 int, conv bool, lambda float64, probes int, clip models.Clip, mask []bool, lr float64, rng *rand.Rand) *perturbNet {
	n := &perturbNet{d: d, p: p, h: h, h2: h2, lambda: lambda, probes: probes, clip: clip, mask: mask, mm: models.NewDgemm(0),
		lr: lr, b1: 0.9, b2: 0.999, eps: 1e-8, deep: true, conv: conv, feats: d}
	if conv {
		n.feats = cnnFeats
	}
	n.deepOff = deepOffsets(n.feats, p, h, h2, conv)
	o := n.deepOff
	n.phi = make([]float64, o[len(o)-1])
	n.offV, n.offc = o[8], o[9]
	draw := func(lo, hi, fanIn int) {
		sd := 1 / math.Sqrt(float64(fanIn))
		for i := lo; i < hi; i++ {
			n.phi[i] = sd * rng.NormFloat64()
		}
	}
	if conv {
		draw(o[0], o[1], cnnK1*cnnK1)
		draw(o[2], o[3], cnnF1*cnnK2*cnnK2)
	}
	draw(o[4], o[5], n.feats+p)
	draw(o[6], o[7], h)
	n.initState(n.feats + p)
	return n
}

// cnnFwd is the CNN body's forward state of one sample and, per probe, its tangents.
type cnnFwd struct {
	head   pnFwd // δ, w = g + δ and the clip scale (the hidden fields unused)
	l1, l2 geluLayer
	p1, p2 []float64
	e      []float64 // standardised [p2; g]
	d1, d2 geluLayer
	// tangents, per probe
	us                 [][]float64 // the input directions (dense)
	y1d, p1d, y2d, ed  [][]float64
	z1d, q1d, z2d, q2d [][]float64
	wd, vd             [][]float64
	ms                 []float64
}

// cnnFeatures returns the 512 conv features of image x (the first block of the input
// that the standardisation is fitted on).
func (n *perturbNet) cnnFeatures(x []float64) []float64 {
	var f cnnFwd
	n.cnnConvs(x, &f)
	return f.p2
}

func (n *perturbNet) cnnConvs(x []float64, f *cnnFwd) {
	if !n.conv { // the MLP body: the features are z
		f.p2 = append([]float64(nil), x...)
		return
	}
	pv := n.cnnViews(n.phi)
	y1 := make([]float64, cnnConv1.outLen())
	for o := 0; o < cnnF1; o++ {
		for i := 0; i < 13*13; i++ {
			y1[o*169+i] = pv.b1[o]
		}
	}
	cnnConv1.fwd(n.mm, pv.w1, x, y1)
	f.l1.set(y1)
	f.p1 = make([]float64, cnnConv2.inLen())
	pool2(cnnF1, 13, 13, f.l1.h, f.p1)
	y2 := make([]float64, cnnConv2.outLen())
	for o := 0; o < cnnF2; o++ {
		for i := 0; i < 25; i++ {
			y2[o*25+i] = pv.b2[o]
		}
	}
	cnnConv2.fwd(n.mm, pv.w2, f.p1, y2)
	f.l2.set(y2)
	f.p2 = make([]float64, cnnFeats)
	pool2(cnnF2, 5, 5, f.l2.h, f.p2)
}

// denseMulti computes out_k = W·in_k (+ bias on out_0 when bias is not nil) for the
// rows×cols matrix W, one pass over W for all k.
// Columns are taken in blocks so that the inputs' slices stay in cache.
func denseMulti(W, bias []float64, rows, cols int, ins, outs [][]float64) {
	for k := range outs {
		for r := 0; r < rows; r++ {
			outs[k][r] = 0
			if k == 0 && bias != nil {
				outs[k][r] = bias[r]
			}
		}
	}
	const blk = 2048
	for c0 := 0; c0 < cols; c0 += blk {
		c1 := min(cols, c0+blk)
		for r := 0; r < rows; r++ {
			row := W[r*cols+c0 : r*cols+c1]
			for k, in := range ins {
				outs[k][r] += dotF64(row, in[c0:c1])
			}
		}
	}
}

// denseBack, for out_k = W·in_k (+ b on out_0), adds Σ_k dout_k ⊗ in_k to dW and
// dout_0 to db (when db is not nil), and returns din_k = Wᵀ·dout_k over the first
// nIn columns (nIn = 0: none).
func denseBack(W, dW, db []float64, rows, cols, nIn int, ins, douts [][]float64) [][]float64 {
	dins := make([][]float64, len(ins))
	for k := range dins {
		dins[k] = make([]float64, nIn)
	}
	for r := 0; r < rows; r++ {
		row, grow := W[r*cols:(r+1)*cols], dW[r*cols:(r+1)*cols]
		if db != nil {
			db[r] += douts[0][r]
		}
		for k, in := range ins {
			c := douts[k][r]
			if c == 0 {
				continue
			}
			axpyF64(c, in, grow)
			axpyF64(c, row[:nIn], dins[k])
		}
	}
	return dins
}

// cnnForward runs the CNN body on sm and, with tangents, every probe's tangent pass
// and clipped tangent v̇_k.
func (n *perturbNet) cnnForward(sm *pnSample, f *cnnFwd, tangents bool) {
	n.cnnFront(sm, f, tangents)
	n.cnnDense(sm, f)
}

// cnnFront runs the convolutions of the CNN body on sm and, with tangents, on every
// probe direction, and sets the Dense input e = standardised [features; g] and its
// tangents ė_k.
func (n *perturbNet) cnnFront(sm *pnSample, f *cnnFwd, tangents bool) {
	pv := n.cnnViews(n.phi)
	nf := n.feats
	in := nf + n.p
	n.cnnConvs(sm.x, f)
	f.e = make([]float64, in)
	for i, v := range f.p2 {
		f.e[i] = (v - n.mean[i]) * n.inv[i]
	}
	for i, v := range sm.g {
		f.e[nf+i] = (v - n.mean[nf+i]) * n.inv[nf+i]
	}
	S := 0
	if tangents {
		S = len(sm.gdots)
		f.us = make([][]float64, S)
		f.y1d, f.p1d, f.y2d, f.ed = make([][]float64, S), make([][]float64, S), make([][]float64, S), make([][]float64, S)
		for k := 0; k < S; k++ {
			if sm.uIdx != nil {
				f.us[k] = make([]float64, n.d)
				f.us[k][sm.uIdx[k]] = 1
			} else {
				f.us[k] = sm.u[k]
			}
			p2d := f.us[k] // the MLP body: ż = u
			if n.conv {
				y1d := make([]float64, cnnConv1.outLen())
				cnnConv1.fwd(n.mm, pv.w1, f.us[k], y1d)
				p1d := make([]float64, cnnConv2.inLen())
				pool2(cnnF1, 13, 13, f.l1.tangent(y1d), p1d)
				y2d := make([]float64, cnnConv2.outLen())
				cnnConv2.fwd(n.mm, pv.w2, p1d, y2d)
				p2d = make([]float64, cnnFeats)
				pool2(cnnF2, 5, 5, f.l2.tangent(y2d), p2d)
				f.y1d[k], f.p1d[k], f.y2d[k] = y1d, p1d, y2d
			}
			ed := make([]float64, in)
			for i, v := range p2d {
				ed[i] = v * n.inv[i]
			}
			for i, v := range sm.gdots[k] {
				ed[nf+i] = v * n.inv[nf+i]
			}
			f.ed[k] = ed
		}
	}
}

// cnnDense runs the Dense layers and the output of the CNN body on e and every ė_k
// (cnnFront) and the clip head.
func (n *perturbNet) cnnDense(sm *pnSample, f *cnnFwd) {
	pv := n.cnnViews(n.phi)
	h, h2, P, in := n.h, n.h2, n.p, n.feats+n.p
	S := len(f.ed)
	// Dense 1 on e and every ė_k in one pass over A1, then dense 2 likewise over A2.
	f.z1d, f.q1d = f.d1.dense(pv.a1, pv.c1, h, in, f.e, f.ed)
	f.z2d, f.q2d = f.d2.dense(pv.a2, pv.c2, h2, h, f.d1.h, f.q1d)
	// Output layer: δ = V·q2 + c and ẇ_k = ġ_k + V·q̇2_k (zero rows on frozen coordinates).
	hd := &f.head
	hd.delta, hd.w = make([]float64, P), make([]float64, P)
	f.wd = make([][]float64, S)
	for k := range f.wd {
		f.wd[k] = append([]float64(nil), sm.gdots[k]...)
	}
	nn := 0.0
	for i := 0; i < P; i++ {
		if n.mask == nil || n.mask[i] {
			vr := pv.v[i*h2 : (i+1)*h2]
			hd.delta[i] = pv.c[i] + dotF64(vr, f.d2.h)
			for k, qd := range f.q2d {
				f.wd[k][i] += dotF64(vr, qd)
			}
		}
		hd.w[i] = sm.g[i] + hd.delta[i]
		nn += hd.w[i] * hd.w[i]
	}
	hd.n = math.Sqrt(nn)
	hd.s, hd.s1, hd.s2 = clipDerivs(n.clip, hd.n)
	f.vd, f.ms = make([][]float64, S), make([]float64, S)
	for k := 0; k < S; k++ {
		f.vd[k] = make([]float64, P)
		_, f.ms[k] = clippedTangent(hd, f.wd[k], f.vd[k])
	}
}

// cnnFILSq is filSq for the CNN body.
func (n *perturbNet) cnnFILSq(sm *pnSample) float64 {
	var f cnnFwd
	n.cnnForward(sm, &f, true)
	tot := 0.0
	for _, vd := range f.vd {
		for _, v := range vd {
			tot += v * v
		}
	}
	return tot
}

// cnnLoss is loss for the CNN body: eq. 2.9's ℓ and, when grad is not nil, ∂ℓ/∂φ
// added to grad.
func (n *perturbNet) cnnLoss(sm *pnSample, grad []float64) float64 {
	var f cnnFwd
	n.cnnForward(sm, &f, true)
	hd := &f.head
	S := len(sm.gdots)
	R := hd.s * hd.s * hd.n * hd.n
	dd := 0.0
	for _, v := range hd.delta {
		dd += v * v
	}
	F := 0.0
	for _, vd := range f.vd {
		sq := 0.0
		for _, v := range vd {
			sq += v * v
		}
		F += sq / float64(S)
	}
	L, ddelta, dwdots := n.lossHead(hd, F, R, dd, f.wd, f.vd, f.ms, grad != nil)
	if grad == nil {
		return L
	}
	if dwdots == nil { // FIL term off: only the primal path carries a cotangent
		f.z1d, f.q1d, f.z2d, f.q2d, f.ed, f.y1d, f.p1d, f.y2d, f.us = nil, nil, nil, nil, nil, nil, nil, nil, nil
	}
	T := len(dwdots)
	pv, gv := n.cnnViews(n.phi), n.cnnViews(grad)
	h, h2, P, nf := n.h, n.h2, n.p, n.feats
	// Output layer.
	dq2 := make([]float64, h2)
	dq2d := make([][]float64, T)
	for k := range dq2d {
		dq2d[k] = make([]float64, h2)
	}
	for i := 0; i < P; i++ {
		if n.mask != nil && !n.mask[i] {
			continue
		}
		vr, gr := pv.v[i*h2:(i+1)*h2], gv.v[i*h2:(i+1)*h2]
		if c := ddelta[i]; c != 0 {
			gv.c[i] += c
			axpyF64(c, f.d2.h, gr)
			axpyF64(c, vr, dq2)
		}
		for k := 0; k < T; k++ {
			if c := dwdots[k][i]; c != 0 {
				axpyF64(c, f.q2d[k], gr)
				axpyF64(c, vr, dq2d[k])
			}
		}
	}
	// GeLU 2, Dense 2, GeLU 1, Dense 1.
	dz2, dz2d := f.d2.back(dq2, f.z2d, dq2d)
	dq := denseBack(pv.a2, gv.a2, gv.c2, h2, h, h, append([][]float64{f.d1.h}, f.q1d...), append([][]float64{dz2}, dz2d...))
	dz1, dz1d := f.d1.back(dq[0], f.z1d, dq[1:])
	nIn := 0 // the MLP body has no parameters below Dense 1
	if n.conv {
		nIn = nf
	}
	de := denseBack(pv.a1, gv.a1, gv.c1, h, nf+P, nIn, append([][]float64{f.e}, f.ed...), append([][]float64{dz1}, dz1d...))
	if !n.conv {
		return L
	}
	for _, d := range de {
		for i := range d {
			d[i] *= n.inv[i]
		}
	}
	n.cnnConvBack(sm, &f, de, grad)
	return L
}

// cnnConvBack adds to grad the convolutions' part of the gradient, given the
// cotangents de[0] of the features and de[1+k] of each probe's feature tangent.
func (n *perturbNet) cnnConvBack(sm *pnSample, f *cnnFwd, de [][]float64, grad []float64) {
	pv, gv := n.cnnViews(n.phi), n.cnnViews(grad)
	// Pool 2, GeLU 2 (conv), Conv 2.
	back := func(ch, side int, l *geluLayer, dp [][]float64, yds [][]float64) ([]float64, [][]float64) {
		dh := make([][]float64, len(dp))
		for k := range dp {
			dh[k] = make([]float64, ch*side*side)
			pool2T(ch, side, side, dp[k], dh[k])
		}
		return l.back(dh[0], yds, dh[1:])
	}
	dy2, dy2d := back(cnnF2, 5, &f.l2, de, f.y2d)
	for o := 0; o < cnnF2; o++ {
		for i := 0; i < 25; i++ {
			gv.b2[o] += dy2[o*25+i]
		}
	}
	cnnConv2.bwdW(n.mm, dy2, f.p1, gv.w2)
	dp1 := [][]float64{make([]float64, cnnConv2.inLen())}
	cnnConv2.bwdIn(n.mm, pv.w2, dy2, dp1[0])
	for k, d := range dy2d {
		cnnConv2.bwdW(n.mm, d, f.p1d[k], gv.w2)
		dp := make([]float64, cnnConv2.inLen())
		cnnConv2.bwdIn(n.mm, pv.w2, d, dp)
		dp1 = append(dp1, dp)
	}
	// Pool 1, GeLU 1 (conv), Conv 1 (the image is not differentiated).
	dy1, dy1d := back(cnnF1, 13, &f.l1, dp1, f.y1d)
	for o := 0; o < cnnF1; o++ {
		for i := 0; i < 169; i++ {
			gv.b1[o] += dy1[o*169+i]
		}
	}
	cnnConv1.bwdW(n.mm, dy1, sm.x, gv.w1)
	for k, d := range dy1d {
		cnnConv1.bwdW(n.mm, d, f.us[k], gv.w1)
	}
}
