package models

import (
	"fmt"

	"github.com/dpfil/dpfil/internal/enumtext"
)

// Winograd F(2×2, 3×3) convolution for the CPU engine's per-sample clipped-gradient
// pass (ClippedGradSum with per-sample clipping).
//
// The 1-D minimal filtering algorithm F(2, 3) computes two outputs of a 3-tap
// correlation y_k = Σ_j d_{k+j}·g_j (k = 0, 1) from a 4-value input tile d as
// y = Aᵀ[(G·g) ⊙ (Bᵀ·d)] with 4 multiplies instead of 6:
//
//	     ⎡1  0 −1  0⎤        ⎡ 1    0    0 ⎤
//	Bᵀ = ⎢0  1  1  0⎥    G = ⎢ 1/2  1/2  1/2⎥    Aᵀ = ⎡1 1  1  0⎤
//	     ⎢0 −1  1  0⎥        ⎢ 1/2 −1/2  1/2⎥         ⎣0 1 −1 −1⎦
//	     ⎣0  1  0 −1⎦        ⎣ 0    0    1 ⎦
//
// (m₁ = (d₀−d₂)g₀, m₂ = (d₁+d₂)(g₀+g₁+g₂)/2, m₃ = (d₂−d₁)(g₀−g₁+g₂)/2,
// m₄ = (d₁−d₃)g₂; y₀ = m₁+m₂+m₃ = d₀g₀+d₁g₁+d₂g₂, y₁ = m₂−m₃−m₄ = d₁g₀+d₂g₁+d₃g₂.)
// Nesting it in both dimensions gives F(2×2, 3×3): a 2×2 output tile of a 3×3
// correlation is Aᵀ[(G w Gᵀ) ⊙ (Bᵀ d B)]A from a 4×4 input tile d, 16 multiplies
// instead of 36. Over channels, with U_{o,i} = G w_{o,i} Gᵀ and V_{i,t} = Bᵀ d_{i,t} B
// for input tile t (tiles overlap, stride 2), each of the 16 elements ξ of the
// transformed tile is one GEMM: M_ξ = U_ξ·V_ξ ([Out×InC]·[InC×tiles]), and
// Y_{o,t} = Aᵀ M_{o,t} A, cropped where a partial tile leaves the output.
//
// The backward passes are the exact adjoint of that forward map:
//   - N_{o,t} = A dY_{o,t} Aᵀ (dY zero where a tile was cropped);
//   - input gradient: dV_ξ = U_ξᵀ·N_ξ (16 GEMMs), dd_{i,t} = B dV_{i,t} Bᵀ, added
//     into the overlapping input tiles (values in the padding dropped);
//   - per-sample weight gradient: dU_ξ = N_ξ·V_ξᵀ over the sample's tiles (16 GEMMs
//     [Out×tiles]·[tiles×InC], V kept from the forward pass), dw = Gᵀ dU G.
//
// So the forward, input-gradient and weight-gradient GEMMs all do 16/36 of the
// direct (im2col) multiplies, on top of O(channels·tiles) additions for the
// transforms. Results differ from the direct path by rounding only (the halves in G
// are exact); TestWinogradConv checks them in float64.

// winoMatrices returns Bᵀ, G and Aᵀ of F(2, 3) (see the package comment above);
// the transforms below are these matrices written out, and TestWinogradF23 checks
// them against direct correlation.
func winoMatrices() (bt [4][4]float64, g [4][3]float64, at [2][4]float64) {
	bt = [4][4]float64{{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}}
	g = [4][3]float64{{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}}
	at = [2][4]float64{{1, 1, 1, 0}, {0, 1, -1, -1}}
	return bt, g, at
}

// ConvAlgo selects how the per-sample clipped-gradient pass (ClippedGradSum under
// per-sample clipping, on the CPU backend) computes its 3×3 stride-1 conv layers.
type ConvAlgo int

// Convolution algorithms.
const (
	// ConvDirect is the im2col GEMM of every conv layer: the default, and the only
	// algorithm of every other pass (FIL, tangents, ghost norms, PerSampleGrads).
	ConvDirect ConvAlgo = iota
	// ConvWinograd runs every 3×3 stride-1 conv layer as Winograd F(2×2, 3×3); other
	// conv layers keep the direct algorithm.
	ConvWinograd
	// ConvAuto runs each 3×3 stride-1 conv layer as whichever of direct, Winograd
	// F(2×2, 3×3) and F(4×4, 3×3) the cost model (winoCosts, winoCosts4) predicts
	// cheapest.
	ConvAuto
	// ConvWinograd4 runs every 3×3 stride-1 conv layer as Winograd F(4×4, 3×3)
	// (winograd4.go); other conv layers keep the direct algorithm.
	ConvWinograd4
)

// Names of the convolution algorithms (ParseConvAlgo, String).
const (
	ConvAlgoDirect    = "direct"
	ConvAlgoWinograd  = "winograd"
	ConvAlgoAuto      = "auto"
	ConvAlgoWinograd4 = "winograd4"
)

// convAlgoText spells the convolution algorithms ("" parses as direct).
var convAlgoText = enumtext.Text[ConvAlgo]{Type: "ConvAlgo", What: "conv algorithm",
	Names:   []string{ConvDirect: ConvAlgoDirect, ConvWinograd: ConvAlgoWinograd, ConvAuto: ConvAlgoAuto, ConvWinograd4: ConvAlgoWinograd4},
	Aliases: map[string]ConvAlgo{"": ConvDirect}}

// ParseConvAlgo returns the algorithm named s ("" is direct).
func ParseConvAlgo(s string) (ConvAlgo, error) { return convAlgoText.Parse(s) }

func (a ConvAlgo) String() string { return convAlgoText.String(a) }

// ConvAlgoSetter is implemented by a Model whose per-sample clipped-gradient pass
// can run its conv layers as Winograd convolutions (NewCPUModel's).
type ConvAlgoSetter interface {
	SetConvAlgo(ConvAlgo) error
}

// SetConvAlgo selects the conv algorithm of ClippedGradSum's per-sample pass.
func (m *netModel) SetConvAlgo(a ConvAlgo) error { return m.net.SetConvAlgo(a) }

// ConvLayerPlan is how the per-sample clipped-gradient pass computes one conv layer.
type ConvLayerPlan struct {
	Layer    int  // index into Arch.Layers
	Eligible bool // 3×3, stride 1: Winograd applies
	// DirectCost, WinogradCost (F(2×2, 3×3)) and Winograd4Cost (F(4×4, 3×3)) are
	// the cost model's per-sample estimates (winoCosts, winoCosts4; 0 when not
	// eligible).
	DirectCost, WinogradCost, Winograd4Cost float64
	// Ghost: under ghost or mixed clipping the layer's weight norm is a ghost
	// norm (ClipPlan), which reads the layer's patch matrices: it runs direct.
	Ghost bool
	Tile  int // its output tile: 2 (F(2×2, 3×3)) or 4 (F(4×4, 3×3)); 0 direct
}

// Winograd reports whether the layer runs as Winograd (of either tile size).
func (p ConvLayerPlan) Winograd() bool { return p.Tile != 0 }

// winoState is a Network's Winograd configuration: the algorithm, per layer
// whether it runs as Winograd, the transformed weights of the current call and
// the workspaces of ClippedGradSum's per-sample pass when any layer does.
type winoState[T Float] struct {
	algo ConvAlgo
	on   []bool // per layer
	tile []int  // per layer: 2 or 4 where on
	plan []ConvLayerPlan
	u    [][]T // per Winograd layer: U, 16 matrices Out×InC, winoStride apart
	ut   [][]T // per narrow F(4×4, 3×3) layer: Uᵀ, 36 matrices InC×Out (winoNarrow)
	avx  bool  // hasAVX2FMA, asked once (CPUID traps to the hypervisor in a VM)
	ws   []*workspace[T]
}

// active reports whether some layer runs as Winograd.
func (st *winoState[T]) active() bool { return st.u != nil }

// winoBuffers are a workspace's Winograd buffers for chunks of up to cs samples.
type winoBuffers[T Float] struct {
	// Each holds 16 matrices winoStride apart.
	v   [][]T // per Winograd layer: V of the chunk, 16 of InC×ld (kept for the backward pass)
	m   []T   // M (forward) or N (backward) of one layer, 16 of Out×ld
	dv  []T   // dV of one layer, 16 of InC×ld
	du  []T   // one sample's dU, 16 of Out×InC
	scr []T   // the transforms' scratch (winoScratchLen, winoScratchLenM)
	k   *winoKern
	kn  *winoKernN // F(4×4, 3×3)'s transforms (winograd4.go)
	t   []T        // one transposed GEMM product of a narrow F(4×4) layer (winoNarrow)
}

// winoEligible reports whether a conv geometry can run as Winograd F(2×2, 3×3).
func winoEligible(g ConvGeom) bool { return g.KH == 3 && g.KW == 3 && g.Stride == 1 }

// winoTiles returns the 2×2 output tiles of a geometry: th rows of tw.
func winoTiles(g ConvGeom) (th, tw int) { return (g.OutH + 1) / 2, (g.OutW + 1) / 2 }

// winoLD returns the row stride of a layer's transformed matrices for m samples
// side by side: m·tiles, padded as colLD pads patch matrices.
func winoLD(g ConvGeom, m int) int {
	th, tw := winoTiles(g)
	ld := m * th * tw
	if ld%1024 == 0 {
		ld += colPad
	}
	return ld
}

// winoSkew is the number of values added between the 16 matrices of a transformed
// tile set (winoStride): their rows·ld values are often a multiple of 4 KB, and the
// transforms read or write the 16 at once, whose streams then fall into the same
// L1 cache sets. 80 values (320 B, 5 cache lines) put the 16 streams in 16
// different sets.
const winoSkew = 80

// winoStride is the distance between the 16 matrices of rows×ld values of a
// transformed tile set (or of U and dU, rows×cols).
func winoStride(rows, ld int) int { return rows*ld + winoSkew }

// Costs of the model winoCosts, in units of one multiply-add of the engine's
// GEMMs (direct or Winograd, which ran at about the same rate), fitted to the
// per-layer measurements of cifar-cnn's six conv layers (BenchmarkConvAlgoLayers
// and docs/perf.md, "Winograd convolution"): the four tile transforms cost a fixed
// winoChannelCost per channel (the calls and row loops around the vector kernels)
// plus winoTileCost per channel and tile; the weight-gradient transform
// winoDUCost per value of dU.
const (
	winoChannelCost = 17000
	winoTileCost    = 330
	winoDUCost      = 30
)

// winoCosts returns the cost model's per-sample cost of a 3×3 stride-1 conv layer
// with out output channels in the per-sample clipped-gradient pass, direct and
// Winograd, in GEMM multiply-adds: the GEMMs of the forward pass, the weight
// gradient and (below: a parameter layer precedes it) the input gradient, 9·InC·Out
// per output position direct and 16·InC·Out per 2×2 tile Winograd, plus Winograd's
// transforms (V and dd per input channel, Y and N per output channel) and its
// weight-gradient transform.
func winoCosts(g ConvGeom, out int, below bool) (direct, wino float64) {
	th, tw := winoTiles(g)
	tiles := float64(th * tw)
	in, oc := float64(g.InC), float64(out)
	passes, chans := 2.0, in+2*oc
	if below {
		passes, chans = 3, 2*in+2*oc
	}
	direct = passes * 9 * in * oc * float64(g.HWo())
	wino = passes*16*in*oc*tiles + chans*(winoChannelCost+winoTileCost*tiles) + winoDUCost*16*in*oc
	return direct, wino
}

// SetConvAlgo selects the conv algorithm of ClippedGradSum's per-sample pass
// (ConvAlgo). Winograd needs the CPU backend (no device extensions); otherwise it
// returns an error and keeps direct convolutions. Conv layers that are not 3×3
// stride 1 stay direct (per layer, ConvPlan), also when that is every layer, and so
// do, under ghost or mixed clipping (SetClipAlgo, in either order), the layers
// whose weight norm is a ghost norm; the layers that form per-sample weight
// gradients there run as Winograd as in the per-sample pass.
func (n *Network[T]) SetConvAlgo(a ConvAlgo) error {
	switch a {
	case ConvDirect:
		n.wino = winoState[T]{}
		n.ghost.ws = nil // ghost workspaces hold the old plan's Winograd buffers
		return nil
	case ConvWinograd, ConvAuto, ConvWinograd4:
	default:
		return fmt.Errorf("%s: unknown conv algorithm %d", n.arch.Name, int(a))
	}
	if n.dops != nil || n.bg != nil || n.ri != nil || n.rs != nil || n.tb != nil || n.ch != nil || n.dm != nil {
		return fmt.Errorf("%s: conv algorithm %s runs on the CPU backend only; backend %s has device extensions and runs direct convolutions", n.arch.Name, a, n.be.Name())
	}
	st := winoState[T]{algo: a, on: make([]bool, len(n.layers)), tile: make([]int, len(n.layers)), u: make([][]T, len(n.layers)), avx: hasAVX2FMA()}
	anyOn := false
	for i, l := range n.layers {
		c, ok := l.ops.(*convOps[T])
		if !ok {
			continue
		}
		p := ConvLayerPlan{Layer: i, Eligible: winoEligible(c.g), Ghost: n.ghost.algo != ClipPerSample && n.ghost.plan[i].ghost}
		if p.Eligible {
			p.DirectCost, p.WinogradCost = winoCosts(c.g, c.out.C, n.paramsBelow[i])
			p.Winograd4Cost = winoCosts4(c.g, c.out.C, n.paramsBelow[i])
			if !p.Ghost {
				p.Tile = winoPick(a, p)
			}
		}
		if p.Winograd() {
			st.on[i] = true
			st.tile[i] = p.Tile
			st.u[i] = make([]T, winoAlpha2(p.Tile)*winoStride(c.out.C, c.g.InC))
			anyOn = true
		}
		st.plan = append(st.plan, p)
	}
	if !anyOn { // auto chose direct everywhere
		st.u = nil
	}
	n.wino = st
	n.ghost.ws = nil
	return nil
}

// ConvAlgo returns the conv algorithm of ClippedGradSum's per-sample pass.
func (n *Network[T]) ConvAlgo() ConvAlgo { return n.wino.algo }

// ConvPlan returns, under winograd, winograd4 or auto, how each conv layer is computed (nil
// under direct).
func (n *Network[T]) ConvPlan() []ConvLayerPlan { return append([]ConvLayerPlan(nil), n.wino.plan...) }

// winoPrepare computes every Winograd layer's U from params (once per call).
func (n *Network[T]) winoPrepare(params []T) {
	for len(n.wino.ws) < n.be.Workers() {
		n.wino.ws = append(n.wino.ws, nil)
	}
	for i, u := range n.wino.u {
		if u == nil {
			continue
		}
		c := n.layers[i].ops.(*convOps[T])
		if n.wino.tile[i] != 2 {
			c.winoPrepareN(n, i, params)
			continue
		}
		winoWeights(c.out.C, c.g.InC, params[c.wOff:c.wOff+c.nW], u)
	}
}

// winoWorkspace returns worker w's workspace of the Winograd per-sample pass for
// chunks of cs samples: the first-order buffers of workspaceFor plus winoBuffers.
func (n *Network[T]) winoWorkspace(w, cs int) *workspace[T] {
	st := &n.wino
	if ws := st.ws[w]; ws != nil && ws.cs >= cs {
		return ws
	}
	be := n.be
	ws := &workspace[T]{cs: cs}
	ws.acts, ws.dlt, ws.cols = n.layerBuffers(cs)
	ws.grads = be.Alloc(cs * n.p)
	ws.losses = be.Alloc(cs)
	ws.gsq = make([]float64, cs)
	_, _, maxOut := n.convFloats()
	colsPad, scratchPad := n.convPads()
	ws.scratch = be.Alloc(n.scratchFloats()*cs + colsPad)
	ws.scratch2 = be.Alloc(maxOut*cs + scratchPad)
	ws.wino = n.winoBuffers(cs)
	st.ws[w] = ws
	return ws
}

// winoBuffers allocates the Winograd layers' buffers for chunks of cs samples.
func (n *Network[T]) winoBuffers(cs int) *winoBuffers[T] {
	be := n.be
	wb := &winoBuffers[T]{v: make([][]T, len(n.layers))}
	var mLen, dvLen, duLen, scrLen int
	for i, on := range n.wino.on {
		if !on {
			continue
		}
		c := n.layers[i].ops.(*convOps[T])
		m := n.wino.tile[i]
		ld, a2 := winoLDM(c.g, cs, m), winoAlpha2(m)
		wb.v[i] = be.Alloc(a2 * winoStride(c.g.InC, winoLDV(c.g, cs, m)))
		mLen = max(mLen, a2*winoStride(c.out.C, ld))
		dvLen = max(dvLen, a2*winoStride(c.g.InC, ld))
		duLen = max(duLen, a2*winoStride(c.out.C, c.g.InC))
		if m == 2 {
			scrLen = max(scrLen, winoScratchLen(c.g))
		} else {
			scrLen = max(scrLen, winoScratchLenM(c.g, m))
		}
	}
	wb.m, wb.dv, wb.du, wb.scr = be.Alloc(mLen), be.Alloc(dvLen), be.Alloc(duLen), make([]T, scrLen)
	_, f32 := any(wb.scr).([]float32)
	wb.k = newWinoKern(f32 && n.wino.avx)
	wb.kn = newWinoKernN(4, f32 && n.wino.avx)
	return wb
}

// winoWeights writes U_ξ[o][i] = (G w_{o,i} Gᵀ)[ξ] to u[ξ·winoStride(out, in) +
// o·in + i] from the weights w (out×in×3×3).
func winoWeights[T Float](out, in int, w, u []T) {
	oi, xs := out*in, winoStride(out, in)
	for k := 0; k < oi; k++ {
		f := w[k*9 : k*9+9]
		// t = G·f (4×3): rows of f combined.
		var t [4][3]T
		for j := 0; j < 3; j++ {
			a, b, c := f[j], f[3+j], f[6+j]
			t[0][j] = a
			t[1][j] = (a + b + c) / 2
			t[2][j] = (a - b + c) / 2
			t[3][j] = c
		}
		// U = t·Gᵀ (4×4)
		for r := 0; r < 4; r++ {
			a, b, c := t[r][0], t[r][1], t[r][2]
			u[(r*4+0)*xs+k] = a
			u[(r*4+1)*xs+k] = (a + b + c) / 2
			u[(r*4+2)*xs+k] = (a - b + c) / 2
			u[(r*4+3)*xs+k] = c
		}
	}
}

// winoForward is convOps.forward's product W∗x (no bias) for the chunk's cs samples
// as Winograd F(2×2, 3×3): V into the workspace (kept for backward), 16 GEMMs
// M_ξ = U_ξ·V_ξ, then the output transform.
func (c *convOps[T]) winoForward(n *Network[T], ws *workspace[T], i int, in, out []T, cs int) {
	if n.wino.tile[i] != 2 {
		c.winoForwardN(n, ws, i, in, out, cs)
		return
	}
	g, oc := c.g, c.out.C
	wb := ws.wino
	ld := winoLD(g, cs)
	th, tw := winoTiles(g)
	nt := th * tw
	v, m, u := wb.v[i], wb.m, n.wino.u[i]
	for s := 0; s < cs; s++ {
		winoInput(wb.k, g, in[s*c.inN:(s+1)*c.inN], v, ld, s*nt, wb.scr)
	}
	cols := cs * nt
	us, vs, ms := winoStride(oc, g.InC), winoStride(g.InC, ld), winoStride(oc, ld)
	for x := 0; x < 16; x++ {
		n.be.Gemm(false, false, oc, cols, g.InC, 1, u[x*us:], g.InC, v[x*vs:], ld, 0, m[x*ms:], ld)
	}
	for s := 0; s < cs; s++ {
		winoOutput(wb.k, g, oc, m, ld, s*nt, out[s*c.outN:(s+1)*c.outN], wb.scr)
	}
}

// winoBackward is convOps.backward for a Winograd layer: per-sample weight
// gradients dw = Gᵀ(N_ξ·V_ξᵀ)G, bias gradients and squared norms as the direct
// path, and, when needIn, the input gradient B(U_ξᵀ·N_ξ)Bᵀ.
func (c *convOps[T]) winoBackward(n *Network[T], ws *workspace[T], i int, cs int, needIn bool) {
	P := n.p
	c.winoBackwardTo(n, ws, i, cs, needIn, func(s int) (gw, gb []T, gsq *float64) {
		return ws.grads[s*P+c.wOff : s*P+c.wOff+c.nW], ws.grads[s*P+c.bOff : s*P+c.bOff+c.nB], &ws.gsq[s]
	})
}

// winoBackwardTo is winoBackward with sample s's weight and bias gradients written
// to the slices dst(s) returns and their squared norms added to its *gsq (the
// per-sample pass's rows, or ghost clipping's, ghostBackward).
func (c *convOps[T]) winoBackwardTo(n *Network[T], ws *workspace[T], i int, cs int, needIn bool, dst func(s int) (gw, gb []T, gsq *float64)) {
	if n.wino.tile[i] != 2 {
		c.winoBackwardN(n, ws, i, cs, needIn, dst)
		return
	}
	be := n.be
	g, oc := c.g, c.out.C
	wb := ws.wino
	ld := winoLD(g, cs)
	th, tw := winoTiles(g)
	nt, hwo := th*tw, g.HWo()
	v, nb, u := wb.v[i], wb.m, n.wino.u[i]
	din, dout := ws.dlt[i][:cs*c.inN], ws.dlt[i+1][:cs*c.outN]
	for s := 0; s < cs; s++ {
		winoOutGrad(wb.k, g, oc, dout[s*c.outN:(s+1)*c.outN], nb, ld, s*nt, wb.scr)
	}
	us, vs, ns := winoStride(oc, g.InC), winoStride(g.InC, ld), winoStride(oc, ld)
	for s := 0; s < cs; s++ {
		for x := 0; x < 16; x++ {
			be.Gemm(false, true, oc, g.InC, nt, 1, nb[x*ns+s*nt:], ld, v[x*vs+s*nt:], ld, 0, wb.du[x*us:], g.InC)
		}
		gw, gb, gsq := dst(s)
		winoWeightGrad(wb.k, oc, g.InC, wb.du, gw, wb.scr)
		rowSums(dout[s*c.outN:(s+1)*c.outN], hwo, gb)
		*gsq += be.Dot(gw, gw) + be.Dot(gb, gb)
	}
	if !needIn {
		return
	}
	cols := cs * nt
	for x := 0; x < 16; x++ {
		be.Gemm(true, false, g.InC, cols, oc, 1, u[x*us:], g.InC, nb[x*ns:], ld, 0, wb.dv[x*vs:], ld)
	}
	for s := 0; s < cs; s++ {
		winoInputGrad(wb.k, g, wb.dv, ld, s*nt, din[s*c.inN:(s+1)*c.inN], wb.scr)
	}
}
