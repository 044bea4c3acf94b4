package models

import (
	"fmt"
	"math"
	"sync"

	"github.com/dpfil/dpfil/internal/enumtext"
)

// ClipAlgo selects how ClippedGradSum obtains each sample's gradient norm and the
// clipped sum Σ_i c_i·g_i, c_i = Clip.Scale(‖g_i‖) (the same clip factor, hard or
// smooth, in every algorithm).
type ClipAlgo int

// Clipping algorithms.
const (
	// ClipPerSample forms every sample's gradient g_i (P values), takes its norm,
	// and adds c_i·g_i to the sum: the default, and the engine FIL uses.
	ClipPerSample ClipAlgo = iota
	// ClipGhost is ghost clipping (Li, Tramèr, Liang & Hashimoto 2022) with
	// book-keeping (Bu, Wang, Zha & Karypis 2023): every parameter layer's
	// weight-gradient norm comes from its activations a and output gradients δ
	// without forming the per-sample weight gradient — ‖a_i‖²·‖δ_i‖² for a dense
	// layer, Σ_{p,q} (a_p·a_q)(δ_p·δ_q) over output positions p, q for a conv
	// layer — and the clipped sum of the weights is one GEMM per layer over the
	// chunk, Σ_i c_i·δ_i·a_iᵀ, from the activations and output gradients kept from
	// the backward pass. Biases (Out values per sample) are always formed per sample.
	ClipGhost
	// ClipAuto is mixed ghost clipping (Bu, Mao & Xu 2022): per layer, the ghost
	// norm when it costs fewer FLOPs than forming the per-sample weight gradient
	// (ClipLayer), the per-sample gradient otherwise.
	ClipAuto
)

// Names of the clipping algorithms (ParseClipAlgo, String).
const (
	ClipAlgoPerSample = "per-sample"
	ClipAlgoGhost     = "ghost"
	ClipAlgoAuto      = "auto"
)

// clipAlgoText spells the clipping algorithms ("" parses as per-sample).
var clipAlgoText = enumtext.Text[ClipAlgo]{Type: "ClipAlgo", What: "clip algorithm",
	Names:   []string{ClipPerSample: ClipAlgoPerSample, ClipGhost: ClipAlgoGhost, ClipAuto: ClipAlgoAuto},
	Aliases: map[string]ClipAlgo{"": ClipPerSample}}

// ParseClipAlgo returns the algorithm named s ("" is per-sample).
func ParseClipAlgo(s string) (ClipAlgo, error) { return clipAlgoText.Parse(s) }

func (a ClipAlgo) String() string { return clipAlgoText.String(a) }

// ClipAlgoSetter is implemented by a Model whose ClippedGradSum can run ghost or
// mixed clipping (NewCPUModel's and NewModel's on a backend without device
// extensions). FILSqNorms always runs the per-sample engine.
type ClipAlgoSetter interface {
	SetClipAlgo(ClipAlgo) error
}

// SetClipAlgo selects the algorithm of ClippedGradSum (ClippedGrads, PerSampleGrads
// and FILSqNorms always run per sample).
func (m *netModel) SetClipAlgo(a ClipAlgo) error { return m.net.SetClipAlgo(a) }

// ClipLayer is how ClippedGradSum takes one parameter layer's weight-gradient norm
// under ghost or mixed clipping. The weight gradient of one sample is δ·Aᵀ, with A
// (DIn×Positions) the layer's input patches and δ (DOut×Positions) its output
// gradients. The FLOP model, per sample: the ghost norm forms the two Gram
// matrices AᵀA and δᵀδ, 2·T²·(DIn+DOut) (half that is computed, as they are
// symmetric); the per-sample norm forms δ·Aᵀ, 2·T·DIn·DOut. Both then need the
// clipped sum: one GEMM over the chunk for a ghost layer (2·T·DIn·DOut per sample),
// a float64 axpy of the stored per-sample gradients for a per-sample layer.
type ClipLayer struct {
	Layer     int // index into Arch.Layers
	Kind      LayerKind
	Positions int // T: output positions (1 for dense)
	DIn, DOut int // CKK and Out (conv), In and Out (dense)
	// GhostFLOPs and PerSampleFLOPs are the model's costs of the norm, per sample.
	GhostFLOPs, PerSampleFLOPs float64
	Ghost                      bool // the ghost norm is used
}

// ghostCosts returns the FLOP model's per-sample cost of the ghost norm and of the
// per-sample weight gradient of a layer with t output positions (see ClipLayer).
func ghostCosts(t, dIn, dOut int) (ghost, perSample float64) {
	T, a, b := float64(t), float64(dIn), float64(dOut)
	return 2 * T * T * (a + b), 2 * T * a * b
}

// ghostEngineLayer is a parameter layer's part of ghost clipping.
type ghostEngineLayer[T Float] interface {
	// ghostDims returns the output positions T and the sizes DIn, DOut of one
	// sample's weight gradient δ·Aᵀ (ClipLayer).
	ghostDims() (t, dIn, dOut int)
	// ghostBackward, for the cs samples of a chunk that are rows row0… of their
	// group, adds each sample's squared weight and bias gradient norms to
	// ws.gh.gsq[row]: the weight norm by the ghost norm when the plan says so, else
	// by forming the weight gradient into the sample's row of ws.gh.psg; the bias
	// gradient always goes to ws.gh.psg. A ghost-norm layer keeps the samples'
	// inputs (patches) and output gradients in its group buffers. When
	// needIn it writes the gradient w.r.t. the layer input to ws.dlt[i].
	ghostBackward(n *Network[T], ws *workspace[T], i int, params []T, cs, row0 int, needIn bool)
	// ghostInLen returns the size of the group buffer of the inputs (or patches)
	// of g samples (the output gradients, outN per sample, come on top).
	ghostInLen(n *Network[T], g int) int
	// ghostSum writes Σ_s scale[s]·(weight gradient of sample s) over the group's
	// m samples to out (the layer's weight tensor), from its group buffers.
	ghostSum(n *Network[T], ws *workspace[T], i, m int, scale, out []T)
}

// ghostLayerPlan is one layer's part of a ghost/mixed clipping plan.
type ghostLayerPlan[T Float] struct {
	ops   ghostEngineLayer[T] // nil for layers without parameters
	ghost bool                // weight norm by the ghost norm
	// psOff: offset of the layer's per-sample blocks in a sample's row of
	// ws.gh.psg (the weight gradient unless ghost, then the bias gradient);
	// gOff: offset of the weights' chunk sum in ws.gh.gsum (ghost only).
	psOff, gOff int
}

// ghostSegment is a run of parameters whose clipped sum is the float64 axpy of
// per-sample values: params[p:p+size] ← ws.gh.psg[s·q + off:][:size].
type ghostSegment struct{ p, off, size int }

// ghostState is a Network's ghost/mixed clipping configuration and workspaces.
type ghostState[T Float] struct {
	algo   ClipAlgo
	plan   []ghostLayerPlan[T] // per layer
	layers []ClipLayer
	segs   []ghostSegment
	q      int // per-sample values kept per sample (psg row)
	g      int // values of the ghost layers' weight chunk sums
	maxDsc int // largest scaled-δ matrix per sample (a ghost layer's outN)
	maxT   int // most output positions of a ghost conv layer (Gram block rows)
	// groupPer is the values a group's buffers hold per sample (ghostGroup).
	groupPer int
	ws       []*workspace[T]
}

// ghostBuffers are a workspace's buffers for ghost clipping, for a group of up to
// group samples (the chunks' buffers are the workspace's own).
type ghostBuffers[T Float] struct {
	group  int
	psg    []T       // group rows of q per-sample values (ghostState.q)
	gsq    []float64 // the group's squared gradient norms
	scale  []float64 // and clip factors
	scaleT []T
	gIn    [][]T // per ghost layer: the group's inputs or patches (ghostIn per sample)
	gD     [][]T // per ghost layer: the group's output gradients (outN per sample)
	gsum   []T   // the ghost layers' weight sums over the group
	dsc    []T   // the scaled output gradients of one layer, group·maxDsc
	gram   []T   // two Gram blocks, 2·ghostGramRows·maxT
}

// ghostGramRows is the row block of a conv layer's Gram matrices: two blocks of
// 32×T float32 values (T = 1 024: 256 KB) stay in a core's L2 cache.
const ghostGramRows = 32

// SetClipAlgo selects the algorithm of ClippedGradSum. Ghost and mixed clipping
// need a backend without device extensions (the CPU backend) and a ghost norm for
// every parameter layer (dense and conv have one); otherwise it returns an error and
// keeps the per-sample algorithm.
func (n *Network[T]) SetClipAlgo(a ClipAlgo) error {
	switch a {
	case ClipPerSample:
		n.ghost = ghostState[T]{}
		return n.replanConvAlgo()
	case ClipGhost, ClipAuto:
	default:
		return fmt.Errorf("%s: unknown clip algorithm %d", n.arch.Name, int(a))
	}
	if n.dops != nil || n.bg != nil || n.ri != nil || n.rs != nil || n.tb != nil || n.ch != nil || n.dm != nil {
		return fmt.Errorf("%s: clip algorithm %s runs on the CPU backend only; backend %s has device extensions and runs per-sample clipping", n.arch.Name, a, n.be.Name())
	}
	st := ghostState[T]{algo: a, plan: make([]ghostLayerPlan[T], len(n.layers))}
	for i, l := range n.layers {
		if !l.hasParams() {
			continue
		}
		gl, ok := l.ops.(ghostEngineLayer[T])
		if !ok {
			return fmt.Errorf("%s layer %d: %s has no ghost norm (clip algorithm %s)", n.arch.Name, i, l.spec.Kind, a)
		}
		t, dIn, dOut := gl.ghostDims()
		gc, pc := ghostCosts(t, dIn, dOut)
		ghost := a == ClipGhost || gc < pc
		st.layers = append(st.layers, ClipLayer{Layer: i, Kind: l.spec.Kind, Positions: t, DIn: dIn, DOut: dOut,
			GhostFLOPs: gc, PerSampleFLOPs: pc, Ghost: ghost})
		pl := ghostLayerPlan[T]{ops: gl, ghost: ghost, psOff: st.q}
		// The layer's tensors are W then b (ghostBackward's layout of psg).
		w, b := l.params[0], l.params[1]
		if ghost {
			pl.gOff = st.g
			st.g += w.size
			st.maxDsc = max(st.maxDsc, l.outN)
			st.groupPer += gl.ghostInLen(n, 1) + l.outN
			if t > 1 {
				st.maxT = max(st.maxT, t)
			}
		} else {
			st.segs = appendSegment(st.segs, ghostSegment{p: w.off, off: st.q, size: w.size})
			st.q += w.size
		}
		st.segs = appendSegment(st.segs, ghostSegment{p: b.off, off: st.q, size: b.size})
		st.q += b.size
		st.plan[i] = pl
	}
	st.groupPer += st.q + st.maxDsc + 3
	n.ghost = st
	return n.replanConvAlgo()
}

// replanConvAlgo redoes the Winograd plan after the clip algorithm changed (a
// ghost-norm layer runs direct: SetConvAlgo).
func (n *Network[T]) replanConvAlgo() error {
	if n.wino.algo == ConvDirect {
		return nil
	}
	return n.SetConvAlgo(n.wino.algo)
}

// appendSegment appends s, merged into the last segment when contiguous with it.
func appendSegment(segs []ghostSegment, s ghostSegment) []ghostSegment {
	if k := len(segs) - 1; k >= 0 && segs[k].p+segs[k].size == s.p && segs[k].off+segs[k].size == s.off {
		segs[k].size += s.size
		return segs
	}
	return append(segs, s)
}

// ClipAlgo returns the algorithm of ClippedGradSum.
func (n *Network[T]) ClipAlgo() ClipAlgo { return n.ghost.algo }

// ClipPlan returns, under ghost or mixed clipping, how each parameter layer's
// norm is taken (nil under per-sample clipping).
func (n *Network[T]) ClipPlan() []ClipLayer {
	return append([]ClipLayer(nil), n.ghost.layers...)
}

// ghostGroupSamples is the number of samples whose clip factors ghost clipping
// takes together: the ghost layers' weight sums are one GEMM per layer over a group,
// and the float64 total gets one addition per group instead of one per sample.
const ghostGroupSamples = 16

// ghostGroup is the number of samples per group of ghost clipping: chunks of cs
// samples (the per-sample pass's first-order chunks, sized to the cache) up to at
// least ghostGroupSamples, within the memory budget. It depends only on the
// architecture and the batch. Measured (auto, batch 64, CPU time per step, load
// ≈ 15 on 2 cores), with one chunk per group of 1, 2, 4, 8, 16, 32 samples instead:
// mnist-cnn 8.1, 6.7, 6.0, 6.3, 6.9, 8.0 ms (per-sample clipping 6.6 ms); cifar-cnn
// 314, 313, 302, 324, 357, 383 ms (per-sample 294 ms) — larger chunks cost more
// than the weight sums save, hence chunks of the per-sample pass's size in groups.
func (n *Network[T]) ghostGroup(batch, cs int) int {
	g := cs * ((ghostGroupSamples + cs - 1) / cs)
	if most := n.budget / n.ghost.groupPer; most < g {
		g = max(cs, most/cs*cs)
	}
	return max(1, min(g, batch))
}

// ghostWorkspace returns worker w's ghost clipping workspace for chunks of cs
// samples in groups of g.
func (n *Network[T]) ghostWorkspace(w, cs, g int) *workspace[T] {
	st := &n.ghost
	if ws := st.ws[w]; ws != nil && ws.cs >= cs && ws.gh.group >= g {
		return ws
	}
	be := n.be
	ws := &workspace[T]{cs: cs}
	ws.acts, ws.dlt, ws.cols = n.layerBuffers(cs)
	ws.losses = be.Alloc(cs)
	_, maxCol, maxOut := n.convFloats()
	colsPad, scratchPad := n.convPads()
	ws.scratch = be.Alloc(maxCol*cs + colsPad)
	ws.scratch2 = be.Alloc(maxOut*cs + scratchPad)
	gh := ghostBuffers[T]{group: g, psg: be.Alloc(g * st.q), gsq: make([]float64, g), scale: make([]float64, g),
		scaleT: make([]T, g), gIn: make([][]T, len(n.layers)), gD: make([][]T, len(n.layers)),
		gsum: be.Alloc(st.g), dsc: be.Alloc(g * st.maxDsc), gram: be.Alloc(2 * ghostGramRows * st.maxT)}
	for i, pl := range st.plan {
		if pl.ops != nil && pl.ghost {
			gh.gIn[i] = be.Alloc(pl.ops.ghostInLen(n, g))
			gh.gD[i] = be.Alloc(g * n.layers[i].outN)
		}
	}
	ws.gh = gh
	if n.wino.active() {
		ws.wino = n.winoBuffers(cs)
	}
	st.ws[w] = ws
	return ws
}

// clippedGradSumGhost is ClippedGradSum under ghost or mixed clipping (inputs
// checked). Per group of samples, chunk by chunk: forward, backward with the norms
// of ghostBackward; then the group's clip factors and the ghost layers' weight
// sums; then, in group order, the group is added to the float64 total, so the
// result does not depend on the number of workers. sq, when not nil, receives each
// sample's squared gradient norm.
func (n *Network[T]) clippedGradSumGhost(params, x []T, y []int, batch int, clip Clip, sum []T, losses, sq []float64) {
	st := &n.ghost
	if len(n.total) != n.p {
		n.total = make([]float64, n.p)
	}
	total := n.total
	clear(total)
	for len(st.ws) < n.be.Workers() {
		st.ws = append(st.ws, nil)
	}
	axpy := addScaled[T]
	if n.hk != nil {
		axpy = n.hk.addScaled
	}
	cs, _ := n.chunkSizes(batch, 0, false)
	if cs == 1 && batch >= minDenseTBatch {
		n.transposeDense(params)
		defer clear(n.denseT)
	}
	G := n.ghostGroup(batch, cs)
	if n.wino.active() {
		n.winoPrepare(params)
	}
	var mu sync.Mutex
	cond := sync.NewCond(&mu)
	turn := 0
	L := len(n.layers)
	n.parallelChunks(batch, G, func(w, g0, m int) {
		ws := n.ghostWorkspace(w, cs, G)
		gh := &ws.gh
		clear(gh.gsq[:m])
		for r0 := 0; r0 < m; r0 += cs {
			c, s0 := min(cs, m-r0), g0+r0
			n.loadInputs(ws, x, s0, c)
			n.forward(ws, params, c)
			n.lossAndDelta(ws, y[s0:s0+c], c)
			for s := 0; s < c; s++ {
				losses[s0+s] = float64(ws.losses[s])
			}
			for i := L - 1; i >= 0; i-- {
				if gl := st.plan[i].ops; gl != nil {
					gl.ghostBackward(n, ws, i, params, c, r0, n.paramsBelow[i])
					continue
				}
				n.layers[i].ops.backward(n, ws, i, params, c, n.paramsBelow[i], false)
			}
		}
		sc, scT := gh.scale[:m], gh.scaleT[:m]
		for s := range sc {
			sc[s], _ = clip.Scale(math.Sqrt(gh.gsq[s]))
			scT[s] = T(sc[s])
			if sq != nil {
				sq[g0+s] = gh.gsq[s]
			}
		}
		for i, pl := range st.plan {
			if pl.ops != nil && pl.ghost {
				w := n.layers[i].params[0]
				pl.ops.ghostSum(n, ws, i, m, scT, gh.gsum[pl.gOff:pl.gOff+w.size])
			}
		}
		mu.Lock()
		for turn != g0/G {
			cond.Wait()
		}
		for i, pl := range st.plan {
			if pl.ops != nil && pl.ghost {
				w := n.layers[i].params[0]
				addTo(total[w.off:w.off+w.size], gh.gsum[pl.gOff:pl.gOff+w.size])
			}
		}
		for s := 0; s < m; s++ {
			row := gh.psg[s*st.q : (s+1)*st.q]
			for _, g := range st.segs {
				axpy(total[g.p:g.p+g.size], sc[s], row[g.off:g.off+g.size])
			}
		}
		turn++
		cond.Broadcast()
		mu.Unlock()
	})
	for i, v := range total {
		sum[i] = T(v)
	}
}

// addTo adds g to acc in float64.
func addTo[T Float](acc []float64, g []T) {
	acc = acc[:len(g)]
	for i, v := range g {
		acc[i] += float64(v)
	}
}

// convGramSqNorm returns ‖δ·Aᵀ‖_F² = Σ_{p,q} (a_p·a_q)(δ_p·δ_q) for one sample of a
// conv layer from its patches (the T columns a_p of A) and output gradients δ
// (Out×T): the Gram matrices AᵀA and δᵀδ in blocks of ghostGramRows rows, from
// the block's diagonal onwards only (both are symmetric: the off-diagonal part
// counts twice). gram holds 2·ghostGramRows·T values. patch(p0, bp, w, dst) writes
// the Gram block (AᵀA)[p0:p0+bp, p0:p0+w] to dst (row stride w).
func convGramSqNorm[T Float](be Backend[T], t, oc int, D, gram []T, patch func(p0, bp, w int, dst []T)) float64 {
	var sum float64
	for p0 := 0; p0 < t; p0 += ghostGramRows {
		bp, w := min(ghostGramRows, t-p0), t-p0
		A, G := gram[:bp*w], gram[bp*w:2*bp*w]
		patch(p0, bp, w, A)
		be.Gemm(true, false, bp, w, oc, 1, D[p0:], t, D[p0:], t, 0, G, w)
		for r := 0; r < bp; r++ {
			a, g := A[r*w:(r+1)*w], G[r*w:(r+1)*w]
			sum += be.Dot(a[:bp], g[:bp])
			if bp < w {
				sum += 2 * be.Dot(a[bp:], g[bp:])
			}
		}
	}
	return math.Max(sum, 0)
}
