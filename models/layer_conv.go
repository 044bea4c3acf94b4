package models

import (
	"fmt"
	"math/rand/v2"
)

// KindConv is a 2-D convolution with bias: Out filters of KH×KW, Stride, explicit
// padding PadT/PadB/PadL/PadR (ConvSame resolves TensorFlow's SAME). Parameters: W
// [Out][InC][KH][KW], then b [Out].
const KindConv LayerKind = "conv"

func init() { registerLayer(convLayer{}) }

type convLayer struct{}

func (convLayer) Kind() LayerKind { return KindConv }
func (convLayer) Fields() []string {
	return []string{"out", "kh", "kw", "stride", "pad_t", "pad_b", "pad_l", "pad_r"}
}

func (convLayer) Doc() string {
	return "2-D convolution with bias: out filters of kh×kw, stride, explicit padding pad_t/pad_b/pad_l/pad_r"
}

func (convLayer) OutShape(l LayerSpec, s Shape) (Shape, error) {
	if err := positive(KindConv, "out, kernel and stride", l.Out, l.KH, l.KW, l.Stride); err != nil {
		return Shape{}, err
	}
	if l.PadT < 0 || l.PadB < 0 || l.PadL < 0 || l.PadR < 0 {
		return Shape{}, fmt.Errorf("conv padding must be ≥ 0")
	}
	h := (s.H+l.PadT+l.PadB-l.KH)/l.Stride + 1
	w := (s.W+l.PadL+l.PadR-l.KW)/l.Stride + 1
	if s.H+l.PadT+l.PadB < l.KH || s.W+l.PadL+l.PadR < l.KW || h <= 0 || w <= 0 {
		return Shape{}, fmt.Errorf("conv %dx%d does not fit input %dx%d", l.KH, l.KW, s.H, s.W)
	}
	return Shape{C: l.Out, H: h, W: w}, nil
}

func (convLayer) Params(l LayerSpec, in Shape) []ParamTensor {
	return []ParamTensor{{Name: "W", Dims: []int{l.Out, in.C, l.KH, l.KW}}, {Name: "b", Dims: []int{l.Out}}}
}

// InitParam is stax.Conv's default: Glorot normal weights (fan_in = InC·KH·KW,
// fan_out = Out·KH·KW), biases N(0, (1e-6)²).
func (convLayer) InitParam(l LayerSpec, in Shape, t int, rng *rand.Rand, dst []float64) {
	if t == 1 {
		initNormal(dst, 1e-6, rng)
		return
	}
	rf := l.KH * l.KW
	initGlorot(dst, in.C*rf, l.Out*rf, rng)
}

func (convLayer) OneHotScale(LayerSpec, Shape, int) (float64, bool) { return 0, false }

func (convLayer) Describe(l LayerSpec) string {
	return fmt.Sprintf("conv %d×%dx%d stride %d pad (t%d b%d l%d r%d)", l.Out, l.KH, l.KW, l.Stride, l.PadT, l.PadB, l.PadL, l.PadR)
}

func (convLayer) FLOPs(l LayerSpec, in, out Shape, f FLOPContext) (float64, float64) {
	return gemmLayerFLOPs(float64(out.C*in.C*l.KH*l.KW*out.H*out.W), f)
}

func (convLayer) engine(r *resolved) engines {
	g := ConvGeom{InC: r.in.C, H: r.in.H, W: r.in.W, KH: r.spec.KH, KW: r.spec.KW, Stride: r.spec.Stride,
		PadT: r.spec.PadT, PadB: r.spec.PadB, PadL: r.spec.PadL, PadR: r.spec.PadR, OutH: r.out.H, OutW: r.out.W}
	r.cols = g.CKK() * g.HWo()
	r.scratch = r.outN
	r.colsPad, r.scratchPad = colPad*g.CKK(), colPad*r.out.C
	c := convGeomOf{resolved: r, g: g, wOff: r.params[0].off, nW: r.params[0].size, bOff: r.params[1].off, nB: r.params[1].size}
	return engines{&convOps[float32]{c}, &convOps[float64]{c}}
}

// convGeomOf is a resolved conv layer.
type convGeomOf struct {
	*resolved
	g                  ConvGeom
	wOff, nW, bOff, nB int
}

type convOps[T Float] struct{ convGeomOf }

func (c *convOps[T]) forward(n *Network[T], ws *workspace[T], i int, params []T, cs int) {
	in, out := ws.acts[i][:cs*c.inN], ws.acts[i+1][:cs*c.outN]
	if ws.wino != nil && ws.wino.v[i] != nil {
		c.winoForward(n, ws, i, in, out, cs)
	} else {
		c.forwardRows(n, params[c.wOff:c.wOff+c.nW], in, out, ws.cols[i], ws.scratch2, cs)
	}
	if n.dops != nil {
		n.dops.AddBias(cs, c.out.C, c.g.HWo(), params[c.bOff:c.bOff+c.nB], out)
		return
	}
	for s := 0; s < cs; s++ {
		n.addBiasRows(out[s*c.outN:(s+1)*c.outN], params[c.bOff:c.bOff+c.nB], c.g.HWo())
	}
}

// forwardRows computes the layer for m rows of input in (m×inN) into out (m×outN)
// without bias: their patch matrices go side by side into cols (CKK×(m·HWo)), one
// GEMM multiplies them by W, and the result is permuted from [Out][m][HWo] to
// [m][Out][HWo] through tmp.
func (c *convOps[T]) forwardRows(n *Network[T], W, in, out, cols, tmp []T, m int) {
	be := n.be
	g := c.g
	ckk, hwo, oc := g.CKK(), g.HWo(), c.out.C
	if c.patchMajor(n) {
		// Patch-major: outᵀ (m·HWo × Out) = cols · Wᵀ, then per sample transposed.
		for r := 0; r < m; r++ {
			im2colT(g, in[r*c.inN:(r+1)*c.inN], cols[r*hwo*ckk:(r+1)*hwo*ckk])
		}
		be.Gemm(false, true, m*hwo, oc, ckk, 1, cols, ckk, W, ckk, 0, tmp, oc)
		n.transposeRows(m, hwo, oc, tmp, out)
		return
	}
	ld := c.colLD(n, m)
	if n.ri != nil {
		n.ri.Im2colRows(g, m, in[:m*c.inN], c.inN, cols, ld)
	} else {
		for r := 0; r < m; r++ {
			be.Im2col(g, in[r*c.inN:(r+1)*c.inN], cols[r*hwo:], ld)
		}
	}
	if m == 1 && ld == hwo && n.dops == nil {
		// one sample, unpadded: [Out][1][HWo] is out's own layout
		be.Gemm(false, false, oc, ld, ckk, 1, W, ckk, cols, ld, 0, out, ld)
		return
	}
	if n.dops != nil && n.bg != nil {
		// One strided-batched GEMM over the rows writes each row's [Out][HWo] in
		// place (row r's patches are columns r·HWo… of cols): no permutation.
		n.gemmBatched(false, false, oc, hwo, ckk, 1, W, ckk, 0, cols, ld, hwo, 0, out, hwo, c.outN, m)
		return
	}
	be.Gemm(false, false, oc, ld, ckk, 1, W, ckk, cols, ld, 0, tmp, ld)
	if n.dops != nil {
		n.dops.Transpose3(oc, m, hwo, tmp, out)
		return
	}
	for o := 0; o < oc; o++ {
		for r := 0; r < m; r++ {
			copy(out[r*c.outN+o*hwo:r*c.outN+(o+1)*hwo], tmp[o*ld+r*hwo:o*ld+(r+1)*hwo])
		}
	}
}

// backwardRows computes, for m rows of output gradients dout (m×outN), the
// patch-matrix gradients Wᵀ·D side by side in dcols (CKK×(m·HWo)), permuting dout to
// [Out][m][HWo] through tmp. extra, when not nil, is called to add more terms to dcols
// before they are scattered back; the input gradients (m×inN) are overwritten.
func (c *convOps[T]) backwardRows(n *Network[T], W, dout, din, dcols, tmp []T, m int, extra func(ld int)) {
	be := n.be
	g := c.g
	ckk, hwo, oc := g.CKK(), g.HWo(), c.out.C
	if c.patchMajor(n) {
		// Patch-major: dcols (m·HWo × CKK) = doutᵀ · W, with doutᵀ per sample
		// through tmp; extra adds to dcols in the same layout.
		n.transposeRows(m, oc, hwo, dout, tmp)
		be.Gemm(false, false, m*hwo, ckk, oc, 1, tmp, oc, W, ckk, 0, dcols, ckk)
		if extra != nil {
			extra(ckk)
		}
		clear(din[:m*c.inN])
		for r := 0; r < m; r++ {
			col2imT(g, dcols[r*hwo*ckk:(r+1)*hwo*ckk], din[r*c.inN:(r+1)*c.inN])
		}
		return
	}
	ld := c.colLD(n, m)
	if m == 1 && ld == hwo && n.dops == nil {
		tmp = dout // one sample, unpadded: dout is already [Out][1][HWo]
	} else if n.dops != nil {
		n.dops.Transpose3(m, oc, hwo, dout, tmp)
	} else {
		for o := 0; o < oc; o++ {
			for r := 0; r < m; r++ {
				copy(tmp[o*ld+r*hwo:o*ld+(r+1)*hwo], dout[r*c.outN+o*hwo:r*c.outN+(o+1)*hwo])
			}
		}
	}
	be.Gemm(true, false, ckk, ld, oc, 1, W, ckk, tmp, ld, 0, dcols, ld)
	if extra != nil {
		extra(ld)
	}
	if n.ri != nil { // writes din: no zeroing first
		n.ri.Col2imRows(g, m, dcols, ld, din[:m*c.inN], c.inN)
		return
	}
	n.zero(din[:m*c.inN])
	for r := 0; r < m; r++ {
		be.Col2im(g, dcols[r*hwo:], ld, din[r*c.inN:(r+1)*c.inN])
	}
}

func (c *convOps[T]) backward(n *Network[T], ws *workspace[T], i int, params []T, cs int, needIn, dev bool) {
	if ws.wino != nil && ws.wino.v[i] != nil {
		c.winoBackward(n, ws, i, cs, needIn)
		return
	}
	be := n.be
	P := n.p
	din, dout := ws.dlt[i][:cs*c.inN], ws.dlt[i+1][:cs*c.outN]
	ckk, hwo := c.g.CKK(), c.g.HWo()
	ld := c.colLD(n, cs)
	if dev {
		// One strided-batched GEMM for the batch's weight gradients, the bias
		// gradients (rowSums); backward takes the squared norms of all layers at once.
		n.gemmBatched(false, true, c.out.C, ckk, hwo, 1, dout, hwo, c.outN, ws.cols[i], ld, hwo, 0, ws.grads[c.wOff:], ckk, P, cs)
		n.rowSums(cs, c.out.C, hwo, dout, c.outN, ws.grads[c.bOff:], P)
	}
	for s := 0; s < cs && !dev; s++ {
		D := dout[s*c.outN : (s+1)*c.outN]
		gw := ws.grads[s*P+c.wOff : s*P+c.wOff+c.nW]
		c.sampleWeightGrad(n, ws, i, s, ld, D, gw)
		gb := ws.grads[s*P+c.bOff : s*P+c.bOff+c.nB]
		rowSums(D, hwo, gb)
		ws.gsq[s] += be.Dot(gw, gw) + be.Dot(gb, gb)
	}
	if needIn {
		c.backwardRows(n, params[c.wOff:c.wOff+c.nW], dout, din, ws.scratch, ws.scratch2, cs, nil)
	}
}

// sampleWeightGrad writes chunk sample s's weight gradient D·colᵀ to gw, from its
// output gradient D and its patches in ws.cols[i] (row stride ld when column-major).
func (c *convOps[T]) sampleWeightGrad(n *Network[T], ws *workspace[T], i, s, ld int, D, gw []T) {
	be := n.be
	ckk, hwo := c.g.CKK(), c.g.HWo()
	if c.patchMajor(n) {
		be.Gemm(false, false, c.out.C, ckk, hwo, 1, D, hwo, ws.cols[i][s*hwo*ckk:], ckk, 0, gw, ckk)
	} else if c.swapDW(n) {
		// gwᵀ = col·Dᵀ: the patches are A, read in place; only D is packed.
		tmp := ws.scratch[:ckk*c.out.C]
		be.Gemm(false, true, ckk, c.out.C, hwo, 1, ws.cols[i][s*hwo:], ld, D, hwo, 0, tmp, c.out.C)
		n.transposeRows(1, ckk, c.out.C, tmp, gw)
	} else {
		be.Gemm(false, true, c.out.C, ckk, hwo, 1, D, hwo, ws.cols[i][s*hwo:], ld, 0, gw, ckk)
	}
}

func (c *convOps[T]) tangentForward(n *Network[T], ws *workspace[T], i int, params []T, cs, kc int, tp []T) {
	rows := cs * kc
	P := n.p
	tin, tout := ws.tacts[i][:rows*c.inN], ws.tacts[i+1][:rows*c.outN]
	hwo := c.g.HWo()
	c.forwardRows(n, params[c.wOff:c.wOff+c.nW], tin, tout, ws.tcols[i], ws.scratch2, rows)
	if tp == nil {
		return
	}
	ckk := c.g.CKK()
	for r := 0; r < rows; r++ {
		s := r / kc
		o := tout[r*c.outN : (r+1)*c.outN]
		if c.patchMajor(n) {
			n.be.Gemm(false, true, c.out.C, hwo, ckk, 1, tp[r*P+c.wOff:r*P+c.wOff+c.nW], ckk, ws.cols[i][s*hwo*ckk:], ckk, 1, o, hwo)
		} else {
			n.be.Gemm(false, false, c.out.C, hwo, ckk, 1, tp[r*P+c.wOff:r*P+c.wOff+c.nW], ckk, ws.cols[i][s*hwo:], c.colLD(n, cs), 1, o, hwo)
		}
		n.addBiasRows(o, tp[r*P+c.bOff:r*P+c.bOff+c.nB], hwo)
	}
}

func (c *convOps[T]) sparseForward(n *Network[T], ws *workspace[T], i int, params []T, rows int) {
	W := params[c.wOff : c.wOff+c.nW]
	tout := ws.tacts[i+1][:rows*c.outN]
	if n.dops != nil {
		n.dops.SparseConvForward(c.g, c.out.C, rows, ws.spIdx, ws.spVal, W, tout)
		return
	}
	clear(tout)
	g := c.g
	ckk, hwo := g.CKK(), g.HWo()
	for r := 0; r < rows; r++ {
		idx, v := ws.spIdx[r], ws.spVal[r]
		if idx < 0 {
			continue
		}
		o := tout[r*c.outN : (r+1)*c.outN]
		forEachTap(g, idx, func(wi, pos int) {
			for oc := 0; oc < c.out.C; oc++ {
				o[oc*hwo+pos] += v * W[oc*ckk+wi]
			}
		})
	}
}

// forEachTap calls fn(wi, outPos) for every output position outPos = oh·OutW+ow of
// conv geometry g whose receptive field covers input coordinate idx (channel ch, pixel
// (ih, iw)) through kernel tap (kh, kw), wi = (ch·KH + kh)·KW + kw being the tap's
// index among an output channel's CKK weights.
func forEachTap(g ConvGeom, idx int, fn func(wi, pos int)) {
	hw := g.H * g.W
	ch, ih, iw := idx/hw, (idx%hw)/g.W, idx%g.W
	for kh := 0; kh < g.KH; kh++ {
		t := ih + g.PadT - kh
		if t < 0 || t%g.Stride != 0 || t/g.Stride >= g.OutH {
			continue
		}
		oh := t / g.Stride
		for kw := 0; kw < g.KW; kw++ {
			u := iw + g.PadL - kw
			if u < 0 || u%g.Stride != 0 || u/g.Stride >= g.OutW {
				continue
			}
			fn((ch*g.KH+kh)*g.KW+kw, oh*g.OutW+u/g.Stride)
		}
	}
}

func (c *convOps[T]) tangentBackward(n *Network[T], ws *workspace[T], i int, params []T, cs, kc int, tp []T) {
	rows := cs * kc
	P := n.p
	tdin, tdout := ws.tdlt[i][:rows*c.inN], ws.tdlt[i+1][:rows*c.outN]
	var extra func(ld int)
	if tp != nil {
		ckk, hwo := c.g.CKK(), c.g.HWo()
		extra = func(ld int) {
			for r := 0; r < rows; r++ {
				s := r / kc
				D := ws.dlt[i+1][s*c.outN : (s+1)*c.outN]
				if c.patchMajor(n) { // ld = CKK: row r's patches at r·HWo·CKK
					n.be.Gemm(true, false, hwo, ckk, c.out.C, 1, D, hwo, tp[r*P+c.wOff:r*P+c.wOff+c.nW], ckk, 1, ws.scratch[r*hwo*ckk:], ld)
					continue
				}
				n.be.Gemm(true, false, ckk, hwo, c.out.C, 1, tp[r*P+c.wOff:r*P+c.wOff+c.nW], ckk, D, hwo, 1, ws.scratch[r*hwo:], ld)
			}
		}
	}
	c.backwardRows(n, params[c.wOff:c.wOff+c.nW], tdout, tdin, ws.scratch, ws.scratch2, rows, extra)
}

// gradTangents: ġ_W = Ḋ·colᵀ + D·ċolᵀ, ġ_b = row sums of Ḋ; for the sparse first
// layer the second term is a scatter of the one-hot input tangents.
func (c *convOps[T]) gradTangents(n *Network[T], ws *workspace[T], i, s, cs, kc int, first bool) {
	be := n.be
	tg := ws.tg
	rows := cs * kc
	r0 := s * kc
	tD := ws.tdlt[i+1][r0*c.outN : (r0+kc)*c.outN] // kc·Out rows
	D := ws.dlt[i+1][s*c.outN : (s+1)*c.outN]
	gw := tg[kc*c.wOff : kc*c.wOff+kc*c.nW]
	gb := tg[kc*c.bOff : kc*c.bOff+kc*c.nB]
	g := c.g
	ckk, hwo := g.CKK(), g.HWo()
	if f := &ws.fil; f.g != nil && !first && c.patchMajor(n) {
		c.gradTangentsFIL(n, ws, i, s, kc)
		return
	}
	if c.patchMajor(n) {
		be.Gemm(false, false, kc*c.out.C, ckk, hwo, 1, tD, hwo, ws.cols[i][s*hwo*ckk:], ckk, 0, gw, ckk)
	} else {
		be.Gemm(false, true, kc*c.out.C, ckk, hwo, 1, tD, hwo, ws.cols[i][s*hwo:], c.colLD(n, cs), 0, gw, ckk)
	}
	if first && n.dops != nil {
		n.dops.SparseConvGradScatter(g, c.out.C, kc, ws.spIdx[r0:r0+kc], ws.spVal[r0:r0+kc], D, gw, c.nW)
	} else if first {
		for j := 0; j < kc; j++ {
			idx, v := ws.spIdx[r0+j], ws.spVal[r0+j]
			if idx < 0 {
				continue
			}
			gj := gw[j*c.nW : (j+1)*c.nW]
			forEachTap(g, idx, func(wi, pos int) {
				for oc := 0; oc < c.out.C; oc++ {
					gj[oc*ckk+wi] += v * D[oc*hwo+pos]
				}
			})
		}
	} else if c.patchMajor(n) {
		n.gemmBatched(false, false, c.out.C, ckk, hwo, 1, D, hwo, 0, ws.tcols[i][r0*hwo*ckk:], ckk, hwo*ckk, 1, gw, ckk, c.nW, kc)
	} else {
		n.gemmBatched(false, true, c.out.C, ckk, hwo, 1, D, hwo, 0, ws.tcols[i][r0*hwo:], c.colLD(n, rows), hwo, 1, gw, ckk, c.nW, kc)
	}
	n.rowSums(kc, c.out.C, hwo, tD, c.outN, gb, c.nB)
}

// gradTangentsFIL is gradTangents for FILSqNorms on a patch-major layer (whose
// GEMM operands are read in place): direction by direction, it forms ġ_W and ġ_b
// (the rows of gradTangents' GEMMs and row sums, the same products) in a scratch
// that stays in cache and takes their FIL terms (workspace.fil) there instead of
// writing kc directions to ws.tg.
func (c *convOps[T]) gradTangentsFIL(n *Network[T], ws *workspace[T], i, s, kc int) {
	be, f := n.be, &ws.fil
	r0 := s * kc
	ckk, hwo, oc := c.g.CKK(), c.g.HWo(), c.out.C
	tD := ws.tdlt[i+1][r0*c.outN : (r0+kc)*c.outN]
	D := ws.dlt[i+1][s*c.outN : (s+1)*c.outN]
	if len(f.scratch) < c.nW+c.nB {
		f.scratch = make([]T, c.nW+c.nB)
	}
	gj, bj := f.scratch[:c.nW], f.scratch[c.nW:c.nW+c.nB]
	t := n.tensorIndex(i)
	gW, gB := f.g[c.wOff:c.wOff+c.nW], f.g[c.bOff:c.bOff+c.nB]
	for j := 0; j < kc; j++ {
		tDj := tD[j*c.outN : (j+1)*c.outN]
		be.Gemm(false, false, oc, ckk, hwo, 1, tDj, hwo, ws.cols[i][s*hwo*ckk:], ckk, 0, gj, ckk)
		be.Gemm(false, false, oc, ckk, hwo, 1, D, hwo, ws.tcols[i][(r0+j)*hwo*ckk:], ckk, 1, gj, ckk)
		n.rowSums(1, oc, hwo, tDj, c.outN, bj, c.nB)
		f.dots[j*f.nt+t][0], f.dots[j*f.nt+t][1] = be.DotSq(gW, gj)
		f.dots[j*f.nt+t+1][0], f.dots[j*f.nt+t+1][1] = be.DotSq(gB, bj)
	}
	f.done[i] = true
}

// filDotSqAll writes the layer's gradient tangents for every row r = s·kc + j of the
// chunk to ws.scratch — weights of row r at r·nW, biases at rows·nW + r·nB, the
// terms of gradTangents — with a fixed number of batched calls, and adds their FIL
// terms to the chunk's reduction (TangentBatcher.FILDotSqLayer) before the next
// layer reuses the scratch.
func (c *convOps[T]) filDotSqAll(n *Network[T], ws *workspace[T], i, cs, kc int, first, start bool) {
	rows := cs * kc
	tg := ws.scratch[:rows*(c.nW+c.nB)]
	tD := ws.tdlt[i+1][:rows*c.outN]
	D := ws.dlt[i+1][:cs*c.outN]
	gw := tg // row r's weight tangent at r·nW, its bias tangent at rows·nW + r·nB
	g := c.g
	ckk, hwo, oc := g.CKK(), g.HWo(), c.out.C
	// Ḋ·colᵀ: per sample, its kc directions' Ḋ rows against its patches.
	n.gemmBatched(false, true, kc*oc, ckk, hwo, 1, tD, hwo, kc*c.outN, ws.cols[i], c.colLD(n, cs), hwo, 0, gw, ckk, kc*c.nW, cs)
	if first {
		n.tb.SparseConvGradScatterRows(g, oc, rows, kc, ws.spIdx[:rows], ws.spVal[:rows], D, c.outN, gw, c.nW, kc*c.nW)
	} else {
		// D·ċolᵀ: per row, the sample's D (repeated per direction) against the row's
		// tangent patches.
		Dr := ws.drep[:rows*c.outN]
		n.tb.RepeatRows(rows, kc, c.outN, D, Dr)
		n.gemmBatched(false, true, oc, ckk, hwo, 1, Dr, hwo, c.outN, ws.tcols[i], c.colLD(n, rows), hwo, 1, gw, ckk, c.nW, rows)
	}
	n.tb.RowSumsBlocked(rows, rows, oc, hwo, tD, c.outN, tg[rows*c.nW:], c.nB, 0)
	n.tb.FILDotSqLayer(ws.grads[:cs*n.p], n.p, tg, cs, kc, []int{c.wOff, c.nW, c.bOff, c.nB}, start)
}

// colPad is the number of values added to the row stride of a column-major patch
// matrix (and of its output-layout scratch) whose stride would be a multiple of
// 1 024 values (4 KB): the packed GEMM reads such matrices in place, and rows 4 KB
// apart fall into the same L1 cache sets. cifar-cnn's 32×32 layers (HWo = 1 024):
// conv2's forward GEMM ran at 69 GFLOP/s with the 4 KB stride and 102 with 1 040,
// its input-gradient GEMM at 57 and 108 (one thread, docs/perf.md, Pass 4).
const colPad = 16

// colLD returns the row stride of the column-major patch matrix of m samples (or
// tangent rows) side by side: m·HWo, plus colPad on the CPU's packed GEMM when that
// is a multiple of 1 024. Only strides change: every product is the same.
func (c *convOps[T]) colLD(n *Network[T], m int) int {
	ld := m * c.g.HWo()
	if n.patchT && ld%1024 == 0 {
		ld += colPad
	}
	return ld
}

// patchMajor reports whether the layer keeps its patch matrices patch-major
// (conv_patch.go): on the CPU's packed GEMM, for strided convolutions, whose
// column-major im2col gathers single values while the patch-major one copies runs of
// KW. Stride-1 layers keep the column-major layout, whose im2col copies whole output
// rows (with 3×3 kernels, runs of 3 cost more than transposing B in the GEMM:
// cifar-cnn's per-sample gradients took 45 % more CPU time patch-major).
func (c *convOps[T]) patchMajor(n *Network[T]) bool { return n.patchT && c.g.Stride > 1 }

// swapDW reports whether a column-major layer computes its per-sample weight
// gradient transposed, gwᵀ = col·Dᵀ (CKK×Out), and transposes it into place: on the
// packed GEMM, whose transposed B operand is packed per sample, that packs D
// (Out·HWo values) and transposes CKK·Out instead of packing colᵀ (CKK·HWo values).
// The GEMM computes the same products in the same k order, so the result is
// bit-identical. cifar-cnn: its conv layers at 32×32 and 16×16 (HWo > Out).
func (c *convOps[T]) swapDW(n *Network[T]) bool {
	ckk, hwo, oc := c.g.CKK(), c.g.HWo(), c.out.C
	return n.patchT && oc*hwo+ckk*oc < ckk*hwo
}
