package models

import "fmt"

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
	// ConvAuto runs a 3×3 stride-1 conv layer as Winograd when the cost model
	// (winoCosts) predicts it cheaper than the direct algorithm.
	ConvAuto
)

// Names of the convolution algorithms (ParseConvAlgo, String).
const (
	ConvAlgoDirect   = "direct"
	ConvAlgoWinograd = "winograd"
	ConvAlgoAuto     = "auto"
)

// ParseConvAlgo returns the algorithm named s ("" is direct).
func ParseConvAlgo(s string) (ConvAlgo, error) {
	switch s {
	case "", ConvAlgoDirect:
		return ConvDirect, nil
	case ConvAlgoWinograd:
		return ConvWinograd, nil
	case ConvAlgoAuto:
		return ConvAuto, nil
	}
	return 0, fmt.Errorf("conv algorithm %q, want %s, %s or %s", s, ConvAlgoDirect, ConvAlgoWinograd, ConvAlgoAuto)
}

func (a ConvAlgo) String() string {
	switch a {
	case ConvDirect:
		return ConvAlgoDirect
	case ConvWinograd:
		return ConvAlgoWinograd
	case ConvAuto:
		return ConvAlgoAuto
	}
	return fmt.Sprintf("ConvAlgo(%d)", int(a))
}

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
	// DirectCost and WinogradCost are the cost model's per-sample estimates
	// (winoCosts; 0 when not eligible).
	DirectCost, WinogradCost float64
	Winograd                 bool // the layer runs as Winograd F(2×2, 3×3)
}

// winoState is a Network's Winograd configuration: the algorithm, per layer
// whether it runs as Winograd, the transformed weights of the current call and
// the workspaces of ClippedGradSum's per-sample pass when any layer does.
type winoState[T Float] struct {
	algo ConvAlgo
	on   []bool // per layer
	plan []ConvLayerPlan
	u    [][]T // per Winograd layer: U, 16 matrices Out×InC, winoStride apart
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
	row []T   // 4 rows of a tile row's input (or input-gradient) values
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

// Costs of the model winoCosts, in units of one GEMM multiply-add at the packed
// GEMM's full rate.
const (
	// winoTransformCost is the cost of one value's share of a tile transform
	// (about four additions and a strided store or load, scalar).
	winoTransformCost = 1.0
)

// winoCosts returns the cost model's per-sample cost of a 3×3 stride-1 conv layer in
// the per-sample clipped-gradient pass, direct and Winograd, in GEMM multiply-adds
// at full rate: the GEMMs (forward, weight gradient, and the input gradient when
// below is true) and the per-value work around them (im2col/col2im for direct;
// the four tile transforms for Winograd).
func winoCosts(g ConvGeom, out int, below bool) (direct, wino float64) {
	th, tw := winoTiles(g)
	tiles := float64(th * tw)
	in, oc := float64(g.InC), float64(out)
	passes := 2.0
	if below {
		passes = 3
	}
	hwo := float64(g.HWo())
	direct = passes*in*9*oc*hwo + in*9*hwo*(1+passes-2)
	// transforms: V (in), Y (out), N (out), dd (in, with below)
	tr := 16*tiles*(in+2*oc) + 16*tiles*in*(passes-2)
	wino = passes*16*in*oc*tiles + winoTransformCost*tr
	return direct, wino
}

// SetConvAlgo selects the conv algorithm of ClippedGradSum's per-sample pass
// (ConvAlgo). Winograd needs the CPU backend (no device extensions) and per-sample
// clipping; otherwise it returns an error and keeps direct convolutions. Conv
// layers that are not 3×3 stride 1 stay direct (per layer, ConvPlan), also when
// that is every layer.
func (n *Network[T]) SetConvAlgo(a ConvAlgo) error {
	switch a {
	case ConvDirect:
		n.wino = winoState[T]{}
		return nil
	case ConvWinograd, ConvAuto:
	default:
		return fmt.Errorf("%s: unknown conv algorithm %d", n.arch.Name, int(a))
	}
	if n.dops != nil || n.bg != nil || n.ri != nil || n.rs != nil || n.tb != nil || n.ch != nil || n.dm != nil {
		return fmt.Errorf("%s: conv algorithm %s runs on the CPU backend only; backend %s has device extensions and runs direct convolutions", n.arch.Name, a, n.be.Name())
	}
	if n.ghost.algo != ClipPerSample {
		return fmt.Errorf("%s: conv algorithm %s applies to per-sample clipping only, not clip algorithm %s", n.arch.Name, a, n.ghost.algo)
	}
	st := winoState[T]{algo: a, on: make([]bool, len(n.layers)), u: make([][]T, len(n.layers))}
	anyOn := false
	for i, l := range n.layers {
		c, ok := l.ops.(*convOps[T])
		if !ok {
			continue
		}
		p := ConvLayerPlan{Layer: i, Eligible: winoEligible(c.g)}
		if p.Eligible {
			p.DirectCost, p.WinogradCost = winoCosts(c.g, c.out.C, n.paramsBelow[i])
			p.Winograd = a == ConvWinograd || p.WinogradCost < p.DirectCost
		}
		if p.Winograd {
			st.on[i] = true
			st.u[i] = make([]T, 16*winoStride(c.out.C, c.g.InC))
			anyOn = true
		}
		st.plan = append(st.plan, p)
	}
	if !anyOn { // auto chose direct everywhere
		st.u = nil
	}
	n.wino = st
	return nil
}

// ConvAlgo returns the conv algorithm of ClippedGradSum's per-sample pass.
func (n *Network[T]) ConvAlgo() ConvAlgo { return n.wino.algo }

// ConvPlan returns, under winograd or auto, how each conv layer is computed (nil
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
	wb := &winoBuffers[T]{v: make([][]T, len(n.layers))}
	var mLen, dvLen, duLen, rowLen int
	for i, on := range st.on {
		if !on {
			continue
		}
		c := n.layers[i].ops.(*convOps[T])
		ld := winoLD(c.g, cs)
		wb.v[i] = be.Alloc(16 * winoStride(c.g.InC, ld))
		mLen = max(mLen, 16*winoStride(c.out.C, ld))
		dvLen = max(dvLen, 16*winoStride(c.g.InC, ld))
		duLen = max(duLen, 16*winoStride(c.out.C, c.g.InC))
		_, tw := winoTiles(c.g)
		rowLen = max(rowLen, 4*(2*tw+2))
	}
	wb.m, wb.dv, wb.du, wb.row = be.Alloc(mLen), be.Alloc(dvLen), be.Alloc(duLen), make([]T, rowLen)
	ws.wino = wb
	st.ws[w] = ws
	return ws
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

// winoWeightGrad writes dw = Gᵀ dU G (out×in×3×3) from dU
// (du[ξ·winoStride(out, in) + o·in + i]).
func winoWeightGrad[T Float](out, in int, du, dw []T) {
	oi, xs := out*in, winoStride(out, in)
	for k := 0; k < oi; k++ {
		var d [4][4]T
		for x := 0; x < 16; x++ {
			d[x/4][x%4] = du[x*xs+k]
		}
		// t = Gᵀ·d (3×4): column j of Gᵀ is row j of G.
		var t [3][4]T
		for b := 0; b < 4; b++ {
			h1, h2 := d[1][b]/2, d[2][b]/2
			t[0][b] = d[0][b] + h1 + h2
			t[1][b] = h1 - h2
			t[2][b] = h1 + h2 + d[3][b]
		}
		g := dw[k*9 : k*9+9]
		for r := 0; r < 3; r++ {
			h1, h2 := t[r][1]/2, t[r][2]/2
			g[r*3+0] = t[r][0] + h1 + h2
			g[r*3+1] = h1 - h2
			g[r*3+2] = h1 + h2 + t[r][3]
		}
	}
}

// winoInput writes V = Bᵀ d B of every 4×4 input tile of one sample x (InC×H×W) to
// v[ξ·xs + i·ld + c0 + t] (tile t = ty·tw + tx, xs = winoStride(InC, ld)), reading
// zeros outside the input. row holds 4·(2·tw + 2) values.
func winoInput[T Float](g ConvGeom, x, v []T, ld, c0 int, row []T) {
	xs := winoStride(g.InC, ld)
	th, tw := winoTiles(g)
	we := 2*tw + 2
	r := row[:4*we]
	hw := g.H * g.W
	// input columns q − PadL for q < we
	qlo, qhi := max(0, g.PadL), min(we, g.W+g.PadL)
	for ch := 0; ch < g.InC; ch++ {
		xc := x[ch*hw : (ch+1)*hw]
		for ty := 0; ty < th; ty++ {
			for k := 0; k < 4; k++ {
				rk := r[k*we : (k+1)*we]
				ih := 2*ty - g.PadT + k
				if ih < 0 || ih >= g.H || qlo >= qhi {
					clear(rk)
					continue
				}
				clear(rk[:qlo])
				copy(rk[qlo:qhi], xc[ih*g.W+qlo-g.PadL:])
				clear(rk[qhi:])
			}
			// rows combined by Bᵀ
			r0, r1, r2, r3 := r[:we], r[we:2*we], r[2*we:3*we], r[3*we:4*we]
			for q := range r0 {
				a, b, c, d := r0[q], r1[q], r2[q], r3[q]
				r0[q], r1[q], r2[q], r3[q] = a-c, b+c, c-b, b-d
			}
			base := c0 + ty*tw
			for a := 0; a < 4; a++ {
				ra := r[a*we : (a+1)*we]
				v0 := v[(a*4+0)*xs+ch*ld+base:][:tw]
				v1 := v[(a*4+1)*xs+ch*ld+base:][:tw]
				v2 := v[(a*4+2)*xs+ch*ld+base:][:tw]
				v3 := v[(a*4+3)*xs+ch*ld+base:][:tw]
				for tx := range v0 {
					e := ra[2*tx : 2*tx+4]
					v0[tx] = e[0] - e[2]
					v1[tx] = e[1] + e[2]
					v2[tx] = e[2] - e[1]
					v3[tx] = e[1] - e[3]
				}
			}
		}
	}
}

// winoOutput writes Y = Aᵀ M A of every tile of one sample to y (out×OutH×OutW),
// cropping partial tiles, from m[ξ·winoStride(out, ld) + o·ld + c0 + t].
func winoOutput[T Float](g ConvGeom, out int, m []T, ld, c0 int, y []T) {
	xs := winoStride(out, ld)
	th, tw := winoTiles(g)
	hwo := g.HWo()
	for o := 0; o < out; o++ {
		yo := y[o*hwo : (o+1)*hwo]
		for ty := 0; ty < th; ty++ {
			base := c0 + ty*tw
			var mr [16][]T
			for x := range mr {
				mr[x] = m[x*xs+o*ld+base:][:tw]
			}
			oh := 2 * ty
			two := oh+1 < g.OutH
			y0 := yo[oh*g.OutW : (oh+1)*g.OutW]
			var y1 []T
			if two {
				y1 = yo[(oh+1)*g.OutW : (oh+2)*g.OutW]
			}
			for tx := 0; tx < tw; tx++ {
				// rows combined by Aᵀ
				var s0, s1 [4]T
				for b := 0; b < 4; b++ {
					m0, m1, m2, m3 := mr[b][tx], mr[4+b][tx], mr[8+b][tx], mr[12+b][tx]
					s0[b] = m0 + m1 + m2
					s1[b] = m1 - m2 - m3
				}
				ow := 2 * tx
				y0[ow] = s0[0] + s0[1] + s0[2]
				if two {
					y1[ow] = s1[0] + s1[1] + s1[2]
				}
				if ow+1 < g.OutW {
					y0[ow+1] = s0[1] - s0[2] - s0[3]
					if two {
						y1[ow+1] = s1[1] - s1[2] - s1[3]
					}
				}
			}
		}
	}
}

// winoOutGrad writes N = A dY Aᵀ of every tile of one sample's output gradient dy
// (out×OutH×OutW; zero where a tile is cropped) to
// nb[ξ·winoStride(out, ld) + o·ld + c0 + t].
func winoOutGrad[T Float](g ConvGeom, out int, dy, nb []T, ld, c0 int) {
	xs := winoStride(out, ld)
	th, tw := winoTiles(g)
	hwo := g.HWo()
	for o := 0; o < out; o++ {
		do := dy[o*hwo : (o+1)*hwo]
		for ty := 0; ty < th; ty++ {
			base := c0 + ty*tw
			var nr [16][]T
			for x := range nr {
				nr[x] = nb[x*xs+o*ld+base:][:tw]
			}
			oh := 2 * ty
			d0 := do[oh*g.OutW : (oh+1)*g.OutW]
			var d1 []T
			if oh+1 < g.OutH {
				d1 = do[(oh+1)*g.OutW : (oh+2)*g.OutW]
			}
			for tx := 0; tx < tw; tx++ {
				ow := 2 * tx
				var a00, a01, a10, a11 T
				a00 = d0[ow]
				if ow+1 < g.OutW {
					a01 = d0[ow+1]
				}
				if d1 != nil {
					a10 = d1[ow]
					if ow+1 < g.OutW {
						a11 = d1[ow+1]
					}
				}
				// columns of A dY: rows r of A are (1,0), (1,1), (1,−1), (0,−1)
				c0v := [4]T{a00, a00 + a10, a00 - a10, -a10}
				c1v := [4]T{a01, a01 + a11, a01 - a11, -a11}
				for r := 0; r < 4; r++ {
					p, q := c0v[r], c1v[r]
					nr[r*4+0][tx] = p
					nr[r*4+1][tx] = p + q
					nr[r*4+2][tx] = p - q
					nr[r*4+3][tx] = -q
				}
			}
		}
	}
}

// winoInputGrad adds dd = B dV Bᵀ of every tile of one sample, from
// dv[ξ·winoStride(InC, ld) + i·ld + c0 + t], into dx (InC×H×W), dropping values in
// the padding. row holds 4·(2·tw + 2) values.
func winoInputGrad[T Float](g ConvGeom, dv []T, ld, c0 int, dx, row []T) {
	xs := winoStride(g.InC, ld)
	th, tw := winoTiles(g)
	we := 2*tw + 2
	r := row[:4*we]
	hw := g.H * g.W
	qlo, qhi := max(0, g.PadL), min(we, g.W+g.PadL)
	for ch := 0; ch < g.InC; ch++ {
		xc := dx[ch*hw : (ch+1)*hw]
		for ty := 0; ty < th; ty++ {
			clear(r)
			base := c0 + ty*tw
			for a := 0; a < 4; a++ {
				// row a of dV·Bᵀ, added over the tiles: column c of Bᵀ… the rows of
				// B are (1,0,0,0), (0,1,−1,1), (−1,1,1,0), (0,0,0,−1)
				ra := r[a*we : (a+1)*we]
				v0 := dv[(a*4+0)*xs+ch*ld+base:][:tw]
				v1 := dv[(a*4+1)*xs+ch*ld+base:][:tw]
				v2 := dv[(a*4+2)*xs+ch*ld+base:][:tw]
				v3 := dv[(a*4+3)*xs+ch*ld+base:][:tw]
				for tx := range v0 {
					x0, x1, x2, x3 := v0[tx], v1[tx], v2[tx], v3[tx]
					e := ra[2*tx : 2*tx+4]
					e[0] += x0
					e[1] += x1 - x2 + x3
					e[2] += -x0 + x1 + x2
					e[3] -= x3
				}
			}
			// rows combined by B
			r0, r1, r2, r3 := r[:we], r[we:2*we], r[2*we:3*we], r[3*we:4*we]
			for q := range r0 {
				x0, x1, x2, x3 := r0[q], r1[q], r2[q], r3[q]
				r0[q], r1[q], r2[q], r3[q] = x0, x1-x2+x3, -x0+x1+x2, -x3
			}
			for k := 0; k < 4; k++ {
				ih := 2*ty - g.PadT + k
				if ih < 0 || ih >= g.H || qlo >= qhi {
					continue
				}
				d := xc[ih*g.W+qlo-g.PadL:][:qhi-qlo]
				for j, v := range r[k*we+qlo : k*we+qhi] {
					d[j] += v
				}
			}
		}
	}
}

// winoForward is convOps.forward's product W∗x (no bias) for the chunk's cs samples
// as Winograd F(2×2, 3×3): V into the workspace (kept for backward), 16 GEMMs
// M_ξ = U_ξ·V_ξ, then the output transform.
func (c *convOps[T]) winoForward(n *Network[T], ws *workspace[T], i int, in, out []T, cs int) {
	g, oc := c.g, c.out.C
	wb := ws.wino
	ld := winoLD(g, cs)
	th, tw := winoTiles(g)
	nt := th * tw
	v, m, u := wb.v[i], wb.m, n.wino.u[i]
	for s := 0; s < cs; s++ {
		winoInput(g, in[s*c.inN:(s+1)*c.inN], v, ld, s*nt, wb.row)
	}
	cols := cs * nt
	us, vs, ms := winoStride(oc, g.InC), winoStride(g.InC, ld), winoStride(oc, ld)
	for x := 0; x < 16; x++ {
		n.be.Gemm(false, false, oc, cols, g.InC, 1, u[x*us:], g.InC, v[x*vs:], ld, 0, m[x*ms:], ld)
	}
	for s := 0; s < cs; s++ {
		winoOutput(g, oc, m, ld, s*nt, out[s*c.outN:(s+1)*c.outN])
	}
}

// winoBackward is convOps.backward for a Winograd layer: per-sample weight
// gradients dw = Gᵀ(N_ξ·V_ξᵀ)G, bias gradients and squared norms as the direct
// path, and, when needIn, the input gradient B(U_ξᵀ·N_ξ)Bᵀ.
func (c *convOps[T]) winoBackward(n *Network[T], ws *workspace[T], i int, cs int, needIn bool) {
	be := n.be
	P := n.p
	g, oc := c.g, c.out.C
	wb := ws.wino
	ld := winoLD(g, cs)
	th, tw := winoTiles(g)
	nt, hwo := th*tw, g.HWo()
	v, nb, u := wb.v[i], wb.m, n.wino.u[i]
	din, dout := ws.dlt[i][:cs*c.inN], ws.dlt[i+1][:cs*c.outN]
	for s := 0; s < cs; s++ {
		winoOutGrad(g, oc, dout[s*c.outN:(s+1)*c.outN], nb, ld, s*nt)
	}
	us, vs, ns := winoStride(oc, g.InC), winoStride(g.InC, ld), winoStride(oc, ld)
	for s := 0; s < cs; s++ {
		for x := 0; x < 16; x++ {
			be.Gemm(false, true, oc, g.InC, nt, 1, nb[x*ns+s*nt:], ld, v[x*vs+s*nt:], ld, 0, wb.du[x*us:], g.InC)
		}
		gw := ws.grads[s*P+c.wOff : s*P+c.wOff+c.nW]
		winoWeightGrad(oc, g.InC, wb.du, gw)
		gb := ws.grads[s*P+c.bOff : s*P+c.bOff+c.nB]
		rowSums(dout[s*c.outN:(s+1)*c.outN], hwo, gb)
		ws.gsq[s] += be.Dot(gw, gw) + be.Dot(gb, gb)
	}
	if !needIn {
		return
	}
	cols := cs * nt
	for x := 0; x < 16; x++ {
		be.Gemm(true, false, g.InC, cols, oc, 1, u[x*us:], g.InC, nb[x*ns:], ld, 0, wb.dv[x*vs:], ld)
	}
	clear(din)
	for s := 0; s < cs; s++ {
		winoInputGrad(g, wb.dv, ld, s*nt, din[s*c.inN:(s+1)*c.inN], wb.row)
	}
}
