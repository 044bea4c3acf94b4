package models

import "fmt"

// tangentSeeds fills, for the cs samples starting at s0 and the kc directions
// starting at j0, the input tangents tx (cs·kc rows of D values, row s·kc+j) and,
// when tp is not nil, the parameter tangents (cs·kc rows of P values). Both buffers
// arrive zeroed.
// ws holds the chunk's first-order results (gradients in ws.grads, chunk-local rows).
type tangentSeeds[T Float] func(ws *workspace[T], s0, cs, j0, kc int, tx, tp []T)

// tangentConsumer receives, for sample s0+sl (chunk-local index sl) and directions
// j0..j0+kc−1, the gradient tangents in blocked layout in ws.tg (see gradTangentAt)
// and, when the input-gradient tangent was requested, tdx0 (kc rows of D values).
type tangentConsumer[T Float] func(ws *workspace[T], s0, sl, j0, kc int, tdx0 []T)

// tangentRun describes one forward-over-reverse computation.
type tangentRun[T Float] struct {
	params, x []T
	y         []int
	batch, k  int
	pt        bool // parameter tangents are seeded
	inputGrad bool // the tangent of the input gradient is wanted
	grads     bool // the gradient tangents are wanted (blocked in ws.tg)
	// filDots: the gradient tangents are wanted only for FILSqNorms' reductions,
	// which layers may take as they form them (ws.fil) instead of writing ws.tg.
	filDots bool
	seeds   tangentSeeds[T]
	// coords, when not nil, says that the input tangents are one-hot: direction j of
	// sample s is e_{coords[s][j]} (and zero for j ≥ len(coords[s])). The engine then
	// propagates them sparsely through the first parameter layer instead of calling
	// seeds for the input (seeds still sets parameter tangents).
	coords [][]int
	// reuseFirst: the workspace holds the first-order pass of this batch already
	// (one chunk; FILSqNormsAfterGradSum), which the run does not repeat.
	reuseFirst bool
	// first, when set, is called once per chunk after the first-order pass and
	// before the tangent passes, with ws.grads and ws.losses holding the chunk's
	// gradients and losses.
	first   func(ws *workspace[T], s0, cs int)
	consume tangentConsumer[T]
	// consumeChunk, when set and the backend batches tangents (TangentBatcher), is
	// called once per chunk and pass instead of consume per sample, after the FIL
	// reduction of every sample's gradient tangents (filDotSqAll), whose totals it
	// reads with TangentBatcher.FILDotSqEnd.
	consumeChunk func(ws *workspace[T], s0, cs, j0, kc int)
}

// gradTangentAt copies direction j of a blocked gradient-tangent buffer (kc
// directions) into dst (len P). In the blocked layout, parameter tensor t of offset
// off and size sz holds direction j at tg[kc·off + j·sz:].
func (n *Network[T]) gradTangentAt(tg []T, kc, j int, dst []T) {
	for i := range n.layers {
		for _, t := range n.layers[i].params {
			copy(dst[t.off:t.off+t.size], tg[kc*t.off+j*t.size:])
		}
	}
}

// run executes r over the batch.
func (n *Network[T]) run(r *tangentRun[T]) {
	cs, kc := n.chunkSizes(r.batch, r.k, r.pt)
	n.parallelChunks(r.batch, cs, func(w, s0, c int) {
		ws := n.workspaceFor(w, cs, kc, r.pt)
		if !r.reuseFirst {
			n.loadInputs(ws, r.x, s0, c)
			n.forward(ws, r.params, c)
			n.lossAndDelta(ws, r.y[s0:s0+c], c)
			n.backward(ws, r.params, c, false)
		}
		if r.first != nil {
			r.first(ws, s0, c)
		}
		for j0 := 0; j0 < r.k; j0 += kc {
			kk := min(kc, r.k-j0)
			rows := c * kk
			tx := ws.tacts[0][:rows*n.d]
			var tp []T
			if r.pt {
				tp = ws.tp[:rows*n.p]
				clear(tp)
			}
			sparse := r.coords != nil && n.sparseFirst && !r.inputGrad && !r.pt
			if sparse {
				n.sparseSeeds(ws, r.coords, s0, c, j0, kk)
			} else {
				clear(tx)
				if r.coords != nil {
					for s := 0; s < c; s++ {
						cl := r.coords[s0+s]
						for j := 0; j < kk && j0+j < len(cl); j++ {
							tx[(s*kk+j)*n.d+cl[j0+j]] = T(n.coordScale(cl[j0+j]))
						}
					}
				}
				r.seeds(ws, s0, c, j0, kk, tx, tp)
			}
			n.tangentForward(ws, r.params, c, kk, tp, sparse)
			n.tangentLoss(ws, r.y[s0:s0+c], c, kk)
			n.tangentBackward(ws, r.params, c, kk, tp, r.inputGrad)
			if r.consumeChunk != nil && r.grads && n.tb != nil {
				n.filDotSqAll(ws, c, kk, sparse)
				r.consumeChunk(ws, s0, c, j0, kk)
				continue
			}
			for s := 0; s < c; s++ {
				if r.grads {
					if r.filDots {
						n.startFILReduce(ws, s, kk)
					}
					n.gradTangents(ws, s, c, kk, sparse)
					ws.fil.g = nil
				}
				var tdx0 []T
				if r.inputGrad {
					tdx0 = ws.tdlt[0][s*kk*n.d : (s+1)*kk*n.d]
				}
				r.consume(ws, s0, s, j0, kk, tdx0)
			}
		}
	})
}

// sparseSeeds records the one-hot input tangents of a pass as (coordinate, value at
// the first parameter layer) per row; Normalize layers before it scale the value.
func (n *Network[T]) sparseSeeds(ws *workspace[T], coords [][]int, s0, cs, j0, kc int) {
	if d, ok := n.dm.(OneHotDrawer[T]); ok && d.DrawOneHot(ws.spIdx[:cs*kc], ws.spVal[:cs*kc], s0, cs, j0, kc) {
		return
	}
	vals := ws.spVal
	if n.dm != nil { // written on the host, then copied
		if len(n.dev.spHost) < cs*kc {
			n.dev.spHost = make([]T, cs*kc)
		}
		vals = n.dev.spHost
		defer n.dm.Copy(ws.spVal[:cs*kc], vals[:cs*kc])
	}
	for s := 0; s < cs; s++ {
		cl := coords[s0+s]
		for j := 0; j < kc; j++ {
			r := s*kc + j
			ws.spIdx[r] = -1
			if j0+j >= len(cl) {
				continue
			}
			idx := cl[j0+j]
			ws.spIdx[r], vals[r] = idx, T(n.oneHotValue(idx))
		}
	}
}

// oneHotValue is the value of the one-hot FIL direction of input coordinate idx at
// the first parameter layer: its raw-input length (coordScale) times the scales of
// the layers before it.
func (n *Network[T]) oneHotValue(idx int) float64 {
	v := n.coordScale(idx)
	for i := 0; i < n.firstParam; i++ {
		l := &n.layers[i]
		sc, _ := l.kind.OneHotScale(l.spec, l.in, idx)
		v *= sc
	}
	return v
}

// OneHotValues returns, for every input coordinate i, the value the one-hot FIL
// direction e_i has at the first parameter layer, as FILSqNorms seeds it: the table
// a OneHotDrawer reads for the coordinates it draws (nil when FIL directions are not
// one-hot at the first parameter layer).
func (n *Network[T]) OneHotValues() []T {
	if !n.sparseFirst {
		return nil
	}
	out := make([]T, n.d)
	for i := range out {
		out[i] = T(n.oneHotValue(i))
	}
	return out
}

// OneHotDrawer is an optional extension of a DeviceMemory backend that draws the FIL
// coordinates of a FILSqNorms call itself (cuda: from the caller's random stream, on
// the device). DrawOneHot is called instead of writing the one-hot seeds of a pass
// (rows s·kc+j, j < kc, of the cs samples from s0, directions j0 …): when it reports
// true it has queued the rows' coordinates — which spIdx (host memory) then stands
// for in the backend's sparse kernels — and their OneHotValues into spVal (device
// memory), and the call's coords only give its shape; false: the engine seeds the
// pass from coords as usual.
type OneHotDrawer[T Float] interface {
	DrawOneHot(spIdx []int, spVal []T, s0, cs, j0, kc int) bool
}

// FILOnePass reports whether a FIL call of batch samples with k directions each on
// plain device memory runs as one pass (one chunk of the whole batch, all k
// directions at once): what a OneHotDrawer needs.
func (n *Network[T]) FILOnePass(batch, k int) bool {
	if n.dm == nil || batch <= 0 || k <= 0 {
		return false
	}
	cs, kc := n.chunkSizes(batch, k, false)
	return cs == batch && kc == k
}

// tangentForward propagates the input tangents in ws.tacts[0] (or, when sparse, the
// one-hot tangents of ws.spIdx/spVal from the first parameter layer on) and the
// parameter tangents tp through the layers: rows s·kc+j.
func (n *Network[T]) tangentForward(ws *workspace[T], params []T, cs, kc int, tp []T, sparse bool) {
	start := 0
	win := false
	if sparse {
		start = n.firstParam
		n.layers[start].pl.sparseForward(n, ws, start, params, cs*kc)
		if c, ok := n.layers[start].pl.(*convOps[T]); ok && n.tangentWindows {
			c.sparseWindows(ws, cs*kc)
			win = true
		}
		start++
	}
	for i := start; i < len(n.layers); i++ {
		if win {
			if l, ok := n.layers[i].ops.(windowed[T]); ok && l.windowForward(n, ws, i, cs, kc) {
				continue
			}
			win = false
		}
		n.layers[i].ops.tangentForward(n, ws, i, params, cs, kc, tp)
	}
}

// tangentLoss writes the tangent of the logits' gradient: for p = softmax(z),
// δ̇ = p ⊙ ż − p·(pᵀż).
func (n *Network[T]) tangentLoss(ws *workspace[T], y []int, cs, kc int) {
	L := len(n.layers)
	k := n.classes
	dz, tz, tdz := ws.dlt[L], ws.tacts[L], ws.tdlt[L]
	if n.dm != nil {
		n.dm.SoftmaxXentTangent(cs, kc, k, y, dz, tz, tdz)
		return
	}
	if len(ws.prob) < k {
		ws.prob = make([]float64, k)
	}
	p := ws.prob[:k]
	for s := 0; s < cs; s++ {
		for j := 0; j < k; j++ {
			p[j] = float64(dz[s*k+j])
		}
		p[y[s]]++
		for d := 0; d < kc; d++ {
			r := s*kc + d
			zr, dr := tz[r*k:(r+1)*k], tdz[r*k:(r+1)*k]
			var pz float64
			for j := range zr {
				pz += p[j] * float64(zr[j])
			}
			for j := range zr {
				dr[j] = T(p[j] * (float64(zr[j]) - pz))
			}
		}
	}
}

// tangentBackward propagates the tangent of the loss gradient down the layers. The
// tangent of the input gradient (ws.tdlt[0]) is computed only when inputGrad.
func (n *Network[T]) tangentBackward(ws *workspace[T], params []T, cs, kc int, tp []T, inputGrad bool) {
	for i := len(n.layers) - 1; i >= 0; i-- {
		if !n.paramsBelow[i] && !inputGrad {
			return
		}
		n.layers[i].ops.tangentBackward(n, ws, i, params, cs, kc, tp)
	}
}

// gradTangents writes the kc gradient tangents of chunk sample s (of cs) to ws.tg
// in the blocked layout: ġ_W = Ḋ·colᵀ + D·ċolᵀ for conv, δ̇⊗a + δ⊗ȧ for dense. When
// sparse, the first parameter layer's input tangents are the one-hot rows of
// ws.spIdx/spVal and its second term is a scatter.
func (n *Network[T]) gradTangents(ws *workspace[T], s, cs, kc int, sparse bool) {
	for i := range n.layers {
		if l := &n.layers[i]; l.pl != nil {
			l.pl.gradTangents(n, ws, i, s, cs, kc, sparse && i == n.firstParam)
		}
	}
}

// TangentBatcher is an optional Backend extension for device backends: the gradient
// tangents of a whole chunk at once (instead of one sample at a time) and their FIL
// reduction. Rows come in groups of kd (the directions of one sample).
type TangentBatcher[T Float] interface {
	// RowSumsBlocked is DeviceOps.RowSums with row r's sums written to
	// dst[(r/kd)·outer + (r%kd)·dstStride:].
	RowSumsBlocked(rows, kd, C, hw int, src []T, srcStride int, dst []T, dstStride, outer int)
	// SparseConvGradScatterRows is DeviceOps.SparseConvGradScatter over rows rows,
	// row j using D[(j/kd)·dStride:] and writing gw[(j/kd)·gStride + (j%kd)·nW:].
	SparseConvGradScatterRows(g ConvGeom, outC, rows, kd int, idx []int, val, D []T, dStride int, gw []T, nW, gStride int)
	// SparseDenseGradScatterRows is the same for a dense layer.
	SparseDenseGradScatterRows(inN, outN, rows, kd int, idx []int, val, D []T, dStride int, gw []T, nW, gStride int)
	// FILDotSqLayer adds one parameter layer's terms to a FIL reduction over cs
	// samples with kc directions each (rows r = s·kc + j, r < cs·kc): for the
	// layer's tensors blocks = (o_0, z_0, o_1, z_1, …) (offsets and sizes in the
	// sample's gradient g_s = g[s·P:]), whose gradient tangents lie tensor-major in
	// tg (tensor t of row r at cs·kc·(z_0 + … + z_{t−1}) + r·z_t), the sums
	// ⟨g_s[o_t:][:z_t], ġ_{r,t}⟩ and ‖ġ_{r,t}‖², accumulated in float64. first
	// starts a reduction; the layers' calls follow in layer order (weights before
	// biases), and FILDotSqEnd ends it. No buffer holds every layer's gradient
	// tangents at once.
	FILDotSqLayer(g []T, P int, tg []T, cs, kc int, blocks []int, first bool)
	// FILDotSqDense is FILDotSqLayer for a dense layer (inN inputs, outN outputs,
	// weights at wOff and biases at bOff of g_s) without its gradient tangents
	// formed: they are δ̇_r ⊗ a_s + δ_s ⊗ ȧ_r and δ̇_r, from the layer's inputs a (cs
	// rows of inN), their tangents ta (cs·kc rows; nil: one-hot rows
	// val[r]·e_{idx[r]}, idx[r] < 0 a zero row), its output deltas D (cs rows of
	// outN) and their tangents tD (cs·kc rows), so the reduction is taken in closed
	// form (the same sums, in another order).
	FILDotSqDense(g []T, P, cs, kc, inN, outN, wOff, bOff int, a, ta []T, idx []int, val, D, tD []T, first bool)
	// FILDotSqEnd writes the totals of the reduction begun by the last
	// FILDotSqLayer with first set: gd[r] = Σ_t ⟨g_s,t, ġ_{r,t}⟩ and
	// dd[r] = Σ_t ‖ġ_{r,t}‖² for r < cs·kc, over every tensor of every layer added.
	FILDotSqEnd(cs, kc int, gd, dd []float64)
	// RepeatRows writes dst[r·n:(r+1)·n] = src[(r/kd)·n:][:n] for r < rows: a
	// sample's row once per tangent direction, so that a strided-batched GEMM over
	// the rows reads it at a fixed stride.
	RepeatRows(rows, kd, n int, src, dst []T)
}

// filDotSqAll takes the FIL reduction of the kc gradient tangents of every sample
// of the chunk layer by layer, with batched device calls, a fixed number per layer
// whatever cs and kc. A conv layer writes its tangents for all rows r = s·kc + j at
// once (the same terms as gradTangents) to ws.scratch, tensor-major (tensor t of the
// layer, of size z_t, of row r at cs·kc·(z_0 + … + z_{t−1}) + r·z_t, so that every
// per-row operand lies at a fixed stride), and TangentBatcher.FILDotSqLayer takes
// them there before the next layer reuses the scratch; a dense layer's rank-2
// tangents are never formed (TangentBatcher.FILDotSqDense). The reduction's totals
// are read with FILDotSqEnd.
func (n *Network[T]) filDotSqAll(ws *workspace[T], cs, kc int, sparse bool) {
	start := true
	for i := range n.layers {
		if l := &n.layers[i]; l.pl != nil {
			l.pl.filDotSqAll(n, ws, i, cs, kc, sparse && i == n.firstParam, start)
			start = false
		}
	}
}

// layerParamFloats is the most parameters of one layer (all its tensors) whose
// gradient tangents filDotSqAll forms (not a dense layer's).
func (n *Network[T]) layerParamFloats() int {
	m := 0
	for _, l := range n.layers {
		if _, dense := l.pl.(*denseOps[T]); dense {
			continue
		}
		size := 0
		for _, t := range l.params {
			size += t.size
		}
		m = max(m, size)
	}
	return m
}

// scratchFloats is ws.scratch's size per sample or tangent row: the largest patch
// matrix, and with TangentBatcher at least one layer's gradient tangents
// (filDotSqAll).
func (n *Network[T]) scratchFloats() int {
	_, maxCol, _ := n.convFloats()
	if n.tb != nil {
		return max(maxCol, n.layerParamFloats())
	}
	return maxCol
}

// BatchedGemmer is an optional Backend extension for device backends: batch GEMMs
// of the same shape whose operands lie at fixed strides (in elements; 0 = the same
// matrix for every GEMM), as one call (cuBLAS's strided-batched SGEMM) instead of
// batch calls.
type BatchedGemmer[T Float] interface {
	GemmStridedBatched(transA, transB bool, m, n, k int, alpha T, a []T, lda, strideA int, b []T, ldb, strideB int, beta T, c []T, ldc, strideC, batch int)
}

// gemmBatched runs batch GEMMs C_i = alpha·op(A_i)·op(B_i) + beta·C_i with
// A_i = a[i·sa:], B_i = b[i·sb:], C_i = c[i·sc:]: in one call where the backend
// batches, else as batch Gemm calls in order.
func (n *Network[T]) gemmBatched(transA, transB bool, m, nn, k int, alpha T, a []T, lda, sa int, b []T, ldb, sb int, beta T, c []T, ldc, sc, batch int) {
	if n.bg != nil {
		n.bg.GemmStridedBatched(transA, transB, m, nn, k, alpha, a, lda, sa, b, ldb, sb, beta, c, ldc, sc, batch)
		return
	}
	for i := 0; i < batch; i++ {
		n.be.Gemm(transA, transB, m, nn, k, alpha, a[i*sa:], lda, b[i*sb:], ldb, beta, c[i*sc:], ldc)
	}
}

// Tangents is the result of a forward-over-reverse pass.
type Tangents[T Float] struct {
	Grads  []T // batch×P per-sample gradients
	Losses []T // batch per-sample losses
	// GradDots[(s·k+j)·P:] is the directional derivative of sample s's gradient along
	// its tangent direction j (input tangent and parameter tangent together).
	GradDots []T
	// InputGradDots[(s·k+j)·D:] is the directional derivative of ∇_x ℓ(x_s) along the
	// same direction (only when requested).
	InputGradDots []T
}

// Tangent computes, for every sample s and each of its k tangent directions j, the
// exact directional derivative of the sample's loss gradient (and, if inputGrad, of
// its input gradient) along the direction (ẋ_{s,j}, θ̇_{s,j}). xdot holds batch·k rows
// of D values (nil: zero input tangents); pdot holds batch·k rows of P values (nil:
// zero parameter tangents).
func (n *Network[T]) Tangent(params, x []T, y []int, batch, k int, xdot, pdot []T, inputGrad bool) (*Tangents[T], error) {
	if err := n.checkInputs(params, x, y, batch); err != nil {
		return nil, err
	}
	if k <= 0 {
		return nil, fmt.Errorf("%s: tangent needs k ≥ 1 directions, got %d", n.arch.Name, k)
	}
	if n.dm != nil {
		return nil, fmt.Errorf("%s: tangents: %w", n.arch.Name, ErrDeviceMemory)
	}
	if xdot != nil && len(xdot) != batch*k*n.d {
		return nil, fmt.Errorf("%s: input tangents have %d values, want %d", n.arch.Name, len(xdot), batch*k*n.d)
	}
	if pdot != nil && len(pdot) != batch*k*n.p {
		return nil, fmt.Errorf("%s: parameter tangents have %d values, want %d", n.arch.Name, len(pdot), batch*k*n.p)
	}
	if err := checkFinite("input tangent", xdot); err != nil {
		return nil, fmt.Errorf("%s: %w", n.arch.Name, err)
	}
	if err := checkFinite("parameter tangent", pdot); err != nil {
		return nil, fmt.Errorf("%s: %w", n.arch.Name, err)
	}
	res := &Tangents[T]{Grads: make([]T, batch*n.p), Losses: make([]T, batch), GradDots: make([]T, batch*k*n.p)}
	if inputGrad {
		res.InputGradDots = make([]T, batch*k*n.d)
	}
	n.run(&tangentRun[T]{
		params: params, x: x, y: y, batch: batch, k: k, pt: pdot != nil, inputGrad: inputGrad, grads: true,
		first: func(ws *workspace[T], s0, cs int) {
			copy(res.Grads[s0*n.p:(s0+cs)*n.p], ws.grads[:cs*n.p])
			copy(res.Losses[s0:s0+cs], ws.losses[:cs])
		},
		seeds: func(_ *workspace[T], s0, cs, j0, kc int, tx, tp []T) {
			for s := 0; s < cs; s++ {
				for j := 0; j < kc; j++ {
					src := (s0+s)*k + j0 + j
					dst := s*kc + j
					if xdot != nil {
						copy(tx[dst*n.d:(dst+1)*n.d], xdot[src*n.d:(src+1)*n.d])
					}
					if tp != nil {
						copy(tp[dst*n.p:(dst+1)*n.p], pdot[src*n.p:(src+1)*n.p])
					}
				}
			}
		},
		consume: func(ws *workspace[T], s0, sl, j0, kc int, tdx0 []T) {
			s := s0 + sl
			for j := 0; j < kc; j++ {
				row := s*k + j0 + j
				n.gradTangentAt(ws.tg, kc, j, res.GradDots[row*n.p:(row+1)*n.p])
				if inputGrad {
					copy(res.InputGradDots[row*n.d:(row+1)*n.d], tdx0[j*n.d:(j+1)*n.d])
				}
			}
		},
	})
	return res, nil
}

// startFILReduce prepares ws.fil for sample s's kc gradient tangents.
func (n *Network[T]) startFILReduce(ws *workspace[T], s, kc int) {
	f := &ws.fil
	f.g = ws.grads[s*n.p : (s+1)*n.p]
	f.nt = 0
	for i := range n.layers {
		f.nt += len(n.layers[i].params)
	}
	if cap(f.dots) < kc*f.nt {
		f.dots = make([][2]float64, kc*f.nt)
	}
	f.dots = f.dots[:kc*f.nt]
	if len(f.done) != len(n.layers) {
		f.done = make([]bool, len(n.layers))
	}
	clear(f.done)
}

// tensorIndex returns the index, in flat order over all layers, of layer i's first
// parameter tensor.
func (n *Network[T]) tensorIndex(i int) int {
	t := 0
	for l := range i {
		t += len(n.layers[l].params)
	}
	return t
}
