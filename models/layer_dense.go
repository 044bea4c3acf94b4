package models

import (
	"fmt"
	"math/rand/v2"
)

// KindDense is a fully connected layer with bias on a flattened input. Parameters: W
// [Out][In], then b [Out].
const KindDense LayerKind = "dense"

func init() { registerLayer(denseLayer{}) }

type denseLayer struct{}

func (denseLayer) Kind() LayerKind  { return KindDense }
func (denseLayer) Fields() []string { return []string{"out"} }

func (denseLayer) Doc() string {
	return "fully connected with bias: out units (needs a flattened input)"
}

func (denseLayer) OutShape(l LayerSpec, s Shape) (Shape, error) {
	if s.H != 1 || s.W != 1 {
		return Shape{}, fmt.Errorf("dense needs a flattened input, got %dx%dx%d", s.C, s.H, s.W)
	}
	if l.Out <= 0 {
		return Shape{}, fmt.Errorf("dense needs positive out")
	}
	return Shape{C: l.Out, H: 1, W: 1}, nil
}

func (denseLayer) Params(l LayerSpec, in Shape) []ParamTensor {
	return []ParamTensor{{Name: "W", Dims: []int{l.Out, in.Size()}}, {Name: "b", Dims: []int{l.Out}}}
}

// InitParam is stax.Dense's default: Glorot normal weights (fan_in = In, fan_out =
// Out), biases N(0, (1e-2)²).
func (denseLayer) InitParam(l LayerSpec, in Shape, t int, rng *rand.Rand, dst []float64) {
	if t == 1 {
		initNormal(dst, 1e-2, rng)
		return
	}
	initGlorot(dst, in.Size(), l.Out, rng)
}

func (denseLayer) OneHotScale(LayerSpec, Shape, int) (float64, bool) { return 0, false }

func (denseLayer) Describe(l LayerSpec) string { return fmt.Sprintf("dense %d", l.Out) }

func (denseLayer) FLOPs(l LayerSpec, in, out Shape, f FLOPContext) (float64, float64) {
	return gemmLayerFLOPs(float64(out.Size()*in.Size()), f)
}

func (denseLayer) engine(r *resolved) engines {
	d := denseOf{resolved: r, wOff: r.params[0].off, nW: r.params[0].size, bOff: r.params[1].off, nB: r.params[1].size}
	return engines{&denseOps[float32]{d}, &denseOps[float64]{d}}
}

// denseOf is a resolved dense layer.
type denseOf struct {
	*resolved
	wOff, nW, bOff, nB int
}

type denseOps[T Float] struct{ denseOf }

func (d *denseOps[T]) forward(n *Network[T], ws *workspace[T], i int, params []T, cs int) {
	in, out := ws.acts[i][:cs*d.inN], ws.acts[i+1][:cs*d.outN]
	W := params[d.wOff : d.wOff+d.nW]
	if wt := n.denseTOf(i); cs == 1 && wt != nil {
		// One sample, with the weights transposed once for the whole pass
		// (firstOrder): outᵀ = xᵀ·Wᵀ runs as one row of C on the packed GEMM's
		// one-row kernel. The same products in the same order: bit-identical.
		n.be.Gemm(false, false, 1, d.outN, d.inN, 1, in, d.inN, wt, d.outN, 0, out, d.outN)
	} else if cs == 1 && n.patchT {
		// One sample (cifar-cnn's chunks): out = W·x reads W in place as the packed
		// GEMM's A instead of packing Wᵀ (Out·In values) as its B for every sample.
		// The same products in the same order: bit-identical.
		n.be.Gemm(false, true, d.outN, 1, d.inN, 1, W, d.inN, in, d.inN, 0, out, 1)
	} else {
		n.be.Gemm(false, true, cs, d.outN, d.inN, 1, in, d.inN, W, d.inN, 0, out, d.outN)
	}
	b := params[d.bOff : d.bOff+d.nB]
	if n.dops != nil {
		n.dops.AddBias(cs, d.outN, 1, b, out)
		return
	}
	for s := 0; s < cs; s++ {
		o := out[s*d.outN : (s+1)*d.outN]
		for j := range o {
			o[j] += b[j]
		}
	}
}

func (d *denseOps[T]) backward(n *Network[T], ws *workspace[T], i int, params []T, cs int, needIn, dev bool) {
	be := n.be
	P := n.p
	din, dout := ws.dlt[i][:cs*d.inN], ws.dlt[i+1][:cs*d.outN]
	in := ws.acts[i][:cs*d.inN]
	W := params[d.wOff : d.wOff+d.nW]
	if dev {
		n.gemmBatched(false, false, d.outN, d.inN, 1, 1, dout, 1, d.outN, in, d.inN, d.inN, 0, ws.grads[d.wOff:], d.inN, P, cs)
		n.rowSums(cs, d.outN, 1, dout, d.outN, ws.grads[d.bOff:], P)
	}
	for s := 0; s < cs && !dev; s++ {
		D := dout[s*d.outN : (s+1)*d.outN]
		a := in[s*d.inN : (s+1)*d.inN]
		gw := ws.grads[s*P+d.wOff : s*P+d.wOff+d.nW]
		be.Gemm(false, false, d.outN, d.inN, 1, 1, D, 1, a, d.inN, 0, gw, d.inN)
		copy(ws.grads[s*P+d.bOff:s*P+d.bOff+d.nB], D)
		ws.gsq[s] += be.Dot(gw, gw) + be.Dot(D, D)
	}
	if needIn {
		be.Gemm(false, false, cs, d.inN, d.outN, 1, dout, d.outN, W, d.inN, 0, din, d.inN)
	}
}

func (d *denseOps[T]) tangentForward(n *Network[T], ws *workspace[T], i int, params []T, cs, kc int, tp []T) {
	rows := cs * kc
	P := n.p
	tin, tout := ws.tacts[i][:rows*d.inN], ws.tacts[i+1][:rows*d.outN]
	W := params[d.wOff : d.wOff+d.nW]
	n.be.Gemm(false, true, rows, d.outN, d.inN, 1, tin, d.inN, W, d.inN, 0, tout, d.outN)
	if tp == nil {
		return
	}
	in := ws.acts[i]
	for r := 0; r < rows; r++ {
		s := r / kc
		o := tout[r*d.outN : (r+1)*d.outN]
		n.be.Gemm(false, false, d.outN, 1, d.inN, 1, tp[r*P+d.wOff:r*P+d.wOff+d.nW], d.inN, in[s*d.inN:(s+1)*d.inN], 1, 1, o, 1)
		b := tp[r*P+d.bOff : r*P+d.bOff+d.nB]
		for j := range o {
			o[j] += b[j]
		}
	}
}

func (d *denseOps[T]) sparseForward(n *Network[T], ws *workspace[T], i int, params []T, rows int) {
	W := params[d.wOff : d.wOff+d.nW]
	tout := ws.tacts[i+1][:rows*d.outN]
	if n.dops != nil {
		n.dops.SparseDenseForward(d.inN, d.outN, rows, ws.spIdx, ws.spVal, W, tout)
		return
	}
	clear(tout)
	for r := 0; r < rows; r++ {
		idx, v := ws.spIdx[r], ws.spVal[r]
		if idx < 0 {
			continue
		}
		o := tout[r*d.outN : (r+1)*d.outN]
		for j := range o {
			o[j] = v * W[j*d.inN+idx]
		}
	}
}

func (d *denseOps[T]) tangentBackward(n *Network[T], ws *workspace[T], i int, params []T, cs, kc int, tp []T) {
	rows := cs * kc
	P := n.p
	tdin, tdout := ws.tdlt[i][:rows*d.inN], ws.tdlt[i+1][:rows*d.outN]
	W := params[d.wOff : d.wOff+d.nW]
	n.be.Gemm(false, false, rows, d.inN, d.outN, 1, tdout, d.outN, W, d.inN, 0, tdin, d.inN)
	if tp == nil {
		return
	}
	for r := 0; r < rows; r++ {
		s := r / kc
		D := ws.dlt[i+1][s*d.outN : (s+1)*d.outN]
		n.be.Gemm(true, false, d.inN, 1, d.outN, 1, tp[r*P+d.wOff:r*P+d.wOff+d.nW], d.inN, D, 1, 1, tdin[r*d.inN:(r+1)*d.inN], 1)
	}
}

// gradTangents: ġ_W = δ̇⊗a + δ⊗ȧ, ġ_b = δ̇; for the sparse first layer the second
// term is a scatter of the one-hot input tangents.
func (d *denseOps[T]) gradTangents(n *Network[T], ws *workspace[T], i, s, cs, kc int, first bool) {
	tg := ws.tg
	r0 := s * kc
	tD := ws.tdlt[i+1][r0*d.outN : (r0+kc)*d.outN] // kc·Out rows
	D := ws.dlt[i+1][s*d.outN : (s+1)*d.outN]
	gw := tg[kc*d.wOff : kc*d.wOff+kc*d.nW]
	gb := tg[kc*d.bOff : kc*d.bOff+kc*d.nB]
	a := ws.acts[i][s*d.inN : (s+1)*d.inN]
	if f := &ws.fil; f.g != nil && !first && n.dops == nil {
		// FIL only: direction by direction, form ġ_W = Ḋ_j ⊗ a + D ⊗ ȧ_j (the rows of
		// the two GEMMs below, the same products) in a scratch that stays in
		// cache, and take its FIL terms there instead of writing kc·Out·In values
		// to ws.tg and reading them back.
		if len(f.scratch) < d.nW {
			f.scratch = make([]T, d.nW)
		}
		gj := f.scratch[:d.nW]
		t := n.tensorIndex(i)
		gW, gB := f.g[d.wOff:d.wOff+d.nW], f.g[d.bOff:d.bOff+d.nB]
		for j := 0; j < kc; j++ {
			n.be.Gemm(false, false, d.outN, d.inN, 1, 1, tD[j*d.outN:], 1, a, d.inN, 0, gj, d.inN)
			n.be.Gemm(false, false, d.outN, d.inN, 1, 1, D, 1, ws.tacts[i][(r0+j)*d.inN:], d.inN, 1, gj, d.inN)
			f.dots[j*f.nt+t][0], f.dots[j*f.nt+t][1] = n.be.DotSq(gW, gj)
			f.dots[j*f.nt+t+1][0], f.dots[j*f.nt+t+1][1] = n.be.DotSq(gB, tD[j*d.outN:(j+1)*d.outN])
		}
		f.done[i] = true
		return
	}
	n.be.Gemm(false, false, kc*d.outN, d.inN, 1, 1, tD, 1, a, d.inN, 0, gw, d.inN)
	if first && n.dops != nil {
		n.dops.SparseDenseGradScatter(d.inN, d.outN, kc, ws.spIdx[r0:r0+kc], ws.spVal[r0:r0+kc], D, gw, d.nW)
	} else if first {
		for j := 0; j < kc; j++ {
			gj := gw[j*d.nW : (j+1)*d.nW]
			if idx, v := ws.spIdx[r0+j], ws.spVal[r0+j]; idx >= 0 {
				for o := 0; o < d.outN; o++ {
					gj[o*d.inN+idx] += v * D[o]
				}
			}
		}
	} else {
		n.gemmBatched(false, false, d.outN, d.inN, 1, 1, D, 1, 0, ws.tacts[i][r0*d.inN:], d.inN, d.inN, 1, gw, d.inN, d.nW, kc)
	}
	if n.dops != nil {
		n.dops.RowSums(kc, d.outN, 1, tD, d.outN, gb, d.nB)
	} else {
		copy(gb, tD)
	}
}

// minDenseTBatch is the smallest batch for which a first-order pass of one-sample
// chunks transposes large dense weights once (transposeDense): the transpose reads
// and writes the weights once per call, the one-row GEMM it enables saves a
// 16-column tile per 4 output rows per sample.
const minDenseTBatch = 8

// transposeDense sets n.denseT[i] to the transpose of every dense layer i's weights
// (In×Out) when the packed GEMM has its one-row kernel and Out ≥ 128; other
// layers keep nil.
func (n *Network[T]) transposeDense(params []T) {
	if n.hk == nil || !n.patchT || n.hk.packedGemm() == nil || !n.hk.packedGemm().wide {
		return
	}
	if n.denseT == nil {
		n.denseT = make([][]T, len(n.layers))
		n.denseTBuf = make([][]T, len(n.layers))
	}
	for i, l := range n.layers {
		d, ok := l.ops.(*denseOps[T])
		if !ok || d.outN < 128 {
			continue
		}
		if len(n.denseTBuf[i]) < d.nW {
			n.denseTBuf[i] = make([]T, d.nW)
		}
		transposeRows(1, d.outN, d.inN, params[d.wOff:d.wOff+d.nW], n.denseTBuf[i])
		n.denseT[i] = n.denseTBuf[i]
	}
}

// denseTOf returns layer i's transposed weights for this pass, or nil.
func (n *Network[T]) denseTOf(i int) []T {
	if n.denseT == nil {
		return nil
	}
	return n.denseT[i]
}

// filDotSqAll adds the layer's terms to the chunk's FIL reduction without forming
// its gradient tangents δ̇ ⊗ a + δ ⊗ ȧ and δ̇ (TangentBatcher.FILDotSqDense): for the
// sparse first layer its input tangents are the one-hot rows of ws.spIdx/spVal.
func (d *denseOps[T]) filDotSqAll(n *Network[T], ws *workspace[T], i, cs, kc int, first, start bool) {
	rows := cs * kc
	var ta, val []T
	var idx []int
	if first {
		idx, val = ws.spIdx[:rows], ws.spVal[:rows]
	} else {
		ta = ws.tacts[i][:rows*d.inN]
	}
	n.tb.FILDotSqDense(ws.grads[:cs*n.p], n.p, cs, kc, d.inN, d.outN, d.wOff, d.bOff, ws.acts[i][:cs*d.inN], ta, idx, val,
		ws.dlt[i+1][:cs*d.outN], ws.tdlt[i+1][:rows*d.outN], start)
}
