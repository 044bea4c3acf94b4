package models

import (
	"fmt"
	"math"
	"sync"
)

// netLayer is one layer of a Network: its geometry and its kind's engine passes.
type netLayer[T Float] struct {
	*resolved
	ops engineLayer[T]
	pl  paramEngineLayer[T] // the same passes when the layer has parameters, else nil
}

// Network is an architecture evaluated by a backend in precision T: batched forward,
// per-sample gradients, and forward-over-reverse tangents (directional derivatives of
// the per-sample gradients along input and/or parameter directions, many directions
// per sample at once). Buffers are reused across calls; a Network is not safe for
// concurrent use.
type Network[T Float] struct {
	arch    Arch
	be      Backend[T]
	layers  []netLayer[T]
	shapes  []Shape
	p, d    int
	classes int
	// firstParam is the index of the first layer with parameters; sparseFirst is true
	// when only Normalize and Flatten layers precede it, so that a one-hot input
	// tangent reaches it as a (scaled) one-hot vector.
	firstParam  int
	sparseFirst bool
	// paramsBelow[i] is true when a layer before i has parameters, so that the
	// backward pass must go on below layer i.
	paramsBelow []bool
	// filNormalized: FIL directions are unit vectors of the leading Normalize layers'
	// output instead of raw input pixels (SetFILNormalizedInputs).
	filNormalized bool
	// budget is the number of T values a worker's chunk buffers may hold.
	budget int
	ws     []*workspace[T]
	// The backend's optional device extensions (all nil on the CPU backend; see extensionOf); tb is
	// set only when dops and bg are too, since the batched tangents use them.
	dops DeviceOps[T]
	bg   BatchedGemmer[T]
	ri   RowIm2coler[T]
	rs   RowSqNormer[T]
	tb   TangentBatcher[T]
	ch   Chunker
	// hk is the CPU backend's capability (ExtHostKernels), nil elsewhere.
	hk    hostKernels[T]
	total []float64 // ClippedGradSum's float64 accumulator
	// denseT[i], during a first-order pass of one-sample chunks on the packed
	// GEMM, is the transpose of dense layer i's weights (nil otherwise; see
	// denseOps.forward); denseTBuf keeps its storage between calls.
	denseT, denseTBuf [][]T
	// dm is set when the backend hands out plain device memory (devicemem.go); dev
	// holds the device-side results then.
	dm  DeviceMemory[T]
	dev deviceScratch[T]
	// patchT: conv layers keep their patch matrices patch-major (conv_patch.go);
	// set for the CPU backend with the packed float32 GEMM, whose results it leaves
	// bit-identical.
	patchT bool
	// filFuse: FILSqNorms lets layers reduce their gradient tangents as they form
	// them (workspace.fil); set for the CPU backend, results bit-identical.
	filFuse bool
	// tangentWindows: the tangent forward of one-hot input tangents runs the layers
	// after a conv first layer inside per-row windows (tangent_window.go); set for
	// the CPU backend, results bit-identical.
	tangentWindows bool
	// ghost: ClippedGradSum's ghost/mixed clipping plan and workspaces (ghost.go);
	// zero for per-sample clipping.
	ghost ghostState[T]
	// wino: the conv algorithm of ClippedGradSum's per-sample pass and its
	// Winograd state (winograd.go); zero for direct convolutions.
	wino winoState[T]
}

// NewNetwork resolves arch for the backend be.
func NewNetwork[T Float](arch Arch, be Backend[T]) (*Network[T], error) {
	if be == nil {
		return nil, fmt.Errorf("network %s: nil backend", arch.Name)
	}
	shapes, err := arch.Shapes()
	if err != nil {
		return nil, fmt.Errorf("network: %w", err)
	}
	ps, err := arch.Params()
	if err != nil {
		return nil, fmt.Errorf("network: %w", err)
	}
	n := &Network[T]{arch: arch, be: be, shapes: shapes, d: arch.InputDim(), classes: arch.Classes, budget: 1 << 24}
	pi := 0
	for i, spec := range arch.Layers {
		kind, err := LayerOf(spec.Kind)
		if err != nil {
			return nil, fmt.Errorf("network %s layer %d: %w", arch.Name, i, err)
		}
		in, out := shapes[i], shapes[i+1]
		r := &resolved{kind: kind, spec: spec, in: in, out: out, inN: in.Size(), outN: out.Size()}
		for range kind.Params(spec, in) {
			r.params = append(r.params, tensorRange{off: ps[pi].Offset, size: ps[pi].Size})
			pi++
		}
		ops, err := pickEngine[T](kind.engine(r))
		if err != nil {
			return nil, fmt.Errorf("network %s: %w", arch.Name, err)
		}
		l := netLayer[T]{resolved: r, ops: ops}
		if r.hasParams() {
			pl, ok := ops.(paramEngineLayer[T])
			if !ok {
				return nil, fmt.Errorf("network %s layer %d: %s has parameters but no gradient tangents", arch.Name, i, spec.Kind)
			}
			l.pl = pl
		}
		n.layers = append(n.layers, l)
	}
	n.p = arch.NumParams()
	n.dops, _ = extensionOf[DeviceOps[T]](be, ExtDeviceOps)
	n.bg, _ = extensionOf[BatchedGemmer[T]](be, ExtBatchedGemm)
	n.ri, _ = extensionOf[RowIm2coler[T]](be, ExtRowIm2col)
	n.rs, _ = extensionOf[RowSqNormer[T]](be, ExtRowSqNorm)
	if tb, ok := extensionOf[TangentBatcher[T]](be, ExtTangentBatch); ok && n.dops != nil && n.bg != nil {
		n.tb = tb
	}
	n.ch, _ = extensionOf[Chunker](be, ExtChunker)
	if n.dm, err = n.deviceMemoryOf(be); err != nil {
		return nil, err
	}
	if hk, ok := extensionOf[hostKernels[T]](be, ExtHostKernels); ok {
		n.hk = hk
	}
	if n.hk != nil && n.hk.packedGemm() != nil && n.dops == nil && n.ri == nil {
		n.patchT = true
		n.filFuse = true
		n.tangentWindows = true
	}
	n.firstParam = -1
	for i, l := range n.layers {
		if l.hasParams() {
			n.firstParam = i
			break
		}
	}
	n.sparseFirst = n.firstParam >= 0
	for i := 0; i < n.firstParam; i++ {
		if l := &n.layers[i]; !l.oneHot() {
			n.sparseFirst = false
		}
	}
	n.paramsBelow = make([]bool, len(n.layers))
	for i := 1; i < len(n.layers); i++ {
		n.paramsBelow[i] = n.paramsBelow[i-1] || n.layers[i-1].hasParams()
	}
	return n, nil
}

// SetFILNormalizedInputs selects the input space of FILSqNorms. By default (false)
// the Jacobian is taken w.r.t. the raw [0,1] pixels, so that the MSE bounds are in pixel units. With true it is taken
// w.r.t. the output of the leading Normalize layers, as the reference code did: the
// direction of coordinate i is then the raw-pixel direction std_c·e_i, so each
// ‖J e_i‖² is multiplied by std_c². Without a leading Normalize layer both coincide.
func (n *Network[T]) SetFILNormalizedInputs(on bool) { n.filNormalized = on }

// coordScale is the raw-input length of FIL direction idx (see SetFILNormalizedInputs).
func (n *Network[T]) coordScale(idx int) float64 {
	s := 1.0
	if !n.filNormalized {
		return s
	}
	for _, l := range n.layers {
		sc, ok := l.kind.OneHotScale(l.spec, l.in, idx)
		if !ok {
			return s
		}
		s /= sc
	}
	return s
}

// Arch returns the network's architecture.
func (n *Network[T]) Arch() Arch { return n.arch }

// NumParams is the length of the flat parameter vector.
func (n *Network[T]) NumParams() int { return n.p }

// InputDim is the number of input values per sample.
func (n *Network[T]) InputDim() int { return n.d }

// Backend returns the network's backend.
func (n *Network[T]) Backend() Backend[T] { return n.be }

// workspace holds one worker's buffers for a chunk of cs samples and kc tangent
// directions per sample.
type workspace[T Float] struct {
	cs       int       // samples the first-order buffers hold
	rows, kc int       // tangent rows and directions per sample the tangent buffers hold
	pt       bool      // parameter tangents allocated
	acts     [][]T     // activations after each layer (index 0 = input), cs rows
	cols     [][]T     // conv layers: im2col of the layer input, CKK×(cs·HWo), samples side by side
	dlt      [][]T     // gradient of the loss w.r.t. acts[l], cs rows
	tacts    [][]T     // tangents of acts, cs·kc rows
	tdlt     [][]T     // tangents of dlt, cs·kc rows
	tcols    [][]T     // conv layers: im2col of the tangent inputs, CKK×(cs·kc·HWo)
	spIdx    []int     // one-hot input tangents: coordinate of each row (−1: none)
	spVal    []T       // and its value at the first parameter layer
	scratch  []T       // patch-matrix scratch: scratchFloats × max(cs, cs·kc)
	scratch2 []T       // output-layout scratch: max Out·HWo × max(cs, cs·kc)
	grads    []T       // cs×P per-sample gradients
	gsq      []float64 // cs squared gradient norms
	losses   []T       // cs losses
	tg       []T       // kc×P gradient tangents of one sample
	tp       []T       // cs·kc×P parameter tangents (only when pt)
	drep     []T       // cs·kc rows of the widest parameter layer's output (only with TangentBatcher)
	prob     []float64 // Classes softmax probabilities
	// win (4 per tangent row) and winD1 (f'(x) of one sample): the windowed
	// tangent forward (tangent_window.go).
	win   []int
	winD1 []T
	// fil, while FILSqNorms runs gradTangents for one sample on the CPU, lets
	// layers reduce their gradient tangents as they form them (filReduce).
	fil filReduce[T]
	// gh: ghost clipping's buffers (ghost.go; only in ghost workspaces).
	gh ghostBuffers[T]
	// wino: the Winograd layers' buffers (winograd.go; only in the workspaces of
	// ClippedGradSum's per-sample pass under a Winograd conv algorithm).
	wino *winoBuffers[T]
}

// filReduce holds the FIL reductions a layer may take while forming its gradient
// tangents: dots[j·nt + t] = (⟨g_t, ġ_{j,t}⟩, ‖ġ_{j,t}‖²) for direction j and
// parameter tensor t (the terms FILSqNorms sums per direction in tensor order), and
// done[i] when layer i has written its tensors' terms there instead of its gradient
// tangents to ws.tg.
type filReduce[T Float] struct {
	g       []T // the sample's gradient (nil: no reduction wanted)
	nt      int // parameter tensors
	dots    [][2]float64
	done    []bool
	scratch []T // one direction's weight tangent
}

// sizes of one sample's activation buffers
func (n *Network[T]) actFloats() int {
	s := n.shapes[0].Size()
	for _, l := range n.layers {
		s += l.outN
	}
	return s
}

// maxParamOut is the largest output (values per sample) of a layer with parameters.
func (n *Network[T]) maxParamOut() int {
	m := 0
	for _, l := range n.layers {
		if l.pl != nil {
			m = max(m, l.outN)
		}
	}
	return m
}

// convFloats returns, per sample or tangent row, the total patch-matrix size over
// the layers (conv layers have one), the largest one, and the largest
// output-layout scratch.
func (n *Network[T]) convFloats() (total, maxCol, maxOut int) {
	for _, l := range n.layers {
		if l.cols > 0 {
			total += l.cols
			maxCol = max(maxCol, l.cols)
			maxOut = max(maxOut, l.scratch)
		}
	}
	return total, maxCol, maxOut
}

// convPads returns the largest padding (resolved.colsPad, scratchPad) a layer's
// patch matrix and output-layout scratch may need beyond their per-row sizes.
func (n *Network[T]) convPads() (colsPad, scratchPad int) {
	for _, l := range n.layers {
		colsPad = max(colsPad, l.colsPad)
		scratchPad = max(scratchPad, l.scratchPad)
	}
	return colsPad, scratchPad
}

// firstOrderCacheFloats is the working set (in values) a first-order chunk aims
// for: 2 MiB of float32.
const firstOrderCacheFloats = 1 << 19

// chunkSizes returns the samples per chunk and the tangent directions per pass for a
// request of k directions (k = 0: first order only), bounded by the memory budget.
// They depend only on the architecture, k and whether parameter tangents are used,
// so results do not depend on the number of workers.
func (n *Network[T]) chunkSizes(batch, k int, pt bool) (cs, kc int) {
	if n.ch != nil {
		return n.deviceChunkSizes(n.ch, batch, k, pt)
	}
	act := n.actFloats()
	colT, maxCol, maxOut := n.convFloats()
	first := 2*act + colT + maxCol + maxOut + n.p + 1
	cs = n.budget / (4 * first)
	cs = max(1, min(cs, 32, batch))
	if k == 0 {
		// First order: keep a chunk's buffers near the size of a core's L2 cache.
		// Patch matrices written by im2col are then still cached when the GEMMs
		// read them (mnist-cnn: 6 samples per chunk, 30 % less CPU time than 32).
		// A sample larger than that runs alone (cifar-cnn: one sample's conv
		// patches are already 1.2 MB; 1 sample per chunk took ≈ 6 % less CPU
		// time than 2, 4 or 8).
		return max(1, min(cs, firstOrderCacheFloats/first)), 0
	}
	row := 2*act + colT + maxCol + maxOut + 2
	if pt {
		row += n.p
	}
	// rows = cs·kc; plus kc·P for the per-sample gradient tangents.
	for {
		kc = (n.budget - cs*first) / (cs*row + n.p)
		if kc >= k || cs == 1 {
			break
		}
		cs /= 2
	}
	kc = max(1, min(kc, k))
	// Keep the rows of a tangent pass moderate so that several chunks exist to share
	// between workers, and so that a pass's tangent buffers stay near the caches
	// (mnist-cnn, k = 50: conv2's tangent patches are 6 400 values per row; 100 rows
	// per pass took ≈ 8 % less CPU time than 400, and 50 rows ≈ 6 % less than 100
	// in 12 alternating rounds, docs/perf.md Pass 4). The directions per pass (kc),
	// which group the FIL sums, do not depend on this.
	for cs > 1 && cs*kc > 64 {
		cs /= 2
	}
	return cs, kc
}

// DeviceOps is an optional Backend extension for device backends: the network's
// layout and bookkeeping steps (permutations around conv GEMMs, bias adds, bias
// gradients, zeroing, the sparse one-hot first layer, the clipped sum) as device
// kernels, so that the host never touches device buffers inside a call. Without it
// the network runs the same steps as host loops (the CPU backend).
type DeviceOps[T Float] interface {
	// Zero sets x to 0.
	Zero(x []T)
	// Transpose3 writes dst[j][i][:] = src[i][j][:] for src [a][b][hw].
	Transpose3(a, b, hw int, src, dst []T)
	// AddBias adds bias[c] to out[r][c][:] for rows rows of C×hw values.
	AddBias(rows, C, hw int, bias, out []T)
	// RowSums writes dst[r·dstStride + c] = Σ_k src[r·srcStride + c·hw + k], summed in an
	// order fixed by hw alone (the CPU: in order of k; CUDA: long rows in stripes, see
	// cuda.Backend.RowSums), so the result does not depend on launch shape or chunking.
	RowSums(rows, C, hw int, src []T, srcStride int, dst []T, dstStride int)
	// SparseConvForward writes out (rows × outC·HWo) = the convolution, without bias,
	// of the one-hot inputs val[r]·e_{idx[r]} (idx[r] < 0: a zero row).
	SparseConvForward(g ConvGeom, outC, rows int, idx []int, val, W, out []T)
	// SparseDenseForward writes out (rows × outN) = W·(val[r]·e_{idx[r]}).
	SparseDenseForward(inN, outN, rows int, idx []int, val, W, out []T)
	// SparseConvGradScatter adds, for directions j < kc with one-hot input
	// val[j]·e_{idx[j]}, its term val[j]·D ⊗ patch to gw[j·nW:] (a conv weight gradient).
	SparseConvGradScatter(g ConvGeom, outC, kc int, idx []int, val, D, gw []T, nW int)
	// SparseDenseGradScatter adds val[j]·D[o] to gw[j·nW + o·inN + idx[j]].
	SparseDenseGradScatter(inN, outN, kc int, idx []int, val, D, gw []T, nW int)
	// ScaledRowSum adds Σ_r scale[r]·x[r·P:(r+1)·P] to acc.
	ScaledRowSum(rows, P int, scale []float64, x []T, acc []float64)
}

// RowSqNormer is an optional Backend extension for device backends: squared norms of
// many rows' blocks in one call instead of a Dot per row and block.
type RowSqNormer[T Float] interface {
	// RowSqNorms adds to out[r], for r < rows, Σ over the blocks (o, z) of
	// ‖x[r·stride + o :][:z]‖², accumulated in float64 (blocks = (o_0, z_0, o_1, z_1, …)).
	RowSqNorms(rows, stride int, blocks []int, x []T, out []float64)
}

// Chunker is an optional Backend extension for device backends, whose per-call
// overhead (a launch, a synchronisation) is paid per chunk: the CPU's chunk sizes are
// tuned to its caches, a device's only to its memory.
type Chunker interface {
	// ChunkBudget is the number of values one chunk's buffers may hold.
	ChunkBudget() int
	// ChunkBufferCap is the most values one layer buffer of a chunk (inputs,
	// activations, deltas, output-layout scratch, their tangents) may hold, 0 for no
	// limit: a device's kernels may count a buffer's elements in 32 bits. Patch
	// matrices, their scratch and the layers' gradient tangents it holds
	// (TangentBatcher) are exempt: only im2col, col2im, GEMMs and reductions with
	// 64-bit offsets touch them.
	ChunkBufferCap() int
}

// maxRowBuffer is the largest layer buffer per sample or tangent row that
// Chunker.ChunkBufferCap bounds: the input, a layer's output (or delta) or an
// output-layout scratch (not a patch matrix).
func (n *Network[T]) maxRowBuffer() int {
	_, _, maxOut := n.convFloats()
	m := max(n.d, maxOut)
	for _, l := range n.layers {
		m = max(m, l.outN)
	}
	return m
}

// deviceChunkSizes is chunkSizes for a Chunker backend: as many samples per chunk,
// and as many tangent directions per pass, as the budget holds, with no layer buffer
// above the buffer cap. A workspace holds a first-order part (cs samples, the
// largest cs of any call) and a tangent part (cs·kc rows) that grow independently
// (workspaceFor), so a first-order chunk gets at most an eighth of the budget and a
// tangent chunk, its samples' first-order part included, the rest: both together
// never exceed the budget.
func (n *Network[T]) deviceChunkSizes(ch Chunker, batch, k int, pt bool) (cs, kc int) {
	budget := ch.ChunkBudget()
	maxRows := math.MaxInt
	if c := ch.ChunkBufferCap(); c > 0 {
		maxRows = max(1, c/n.maxRowBuffer())
	}
	act := n.actFloats()
	colT, _, maxOut := n.convFloats()
	scr := n.scratchFloats() // the patch-matrix scratch, which also takes a layer's gradient tangents
	first := 2*act + colT + scr + maxOut + n.p + 1
	if k == 0 {
		return balancedChunk(batch, min(budget/8/first, maxRows)), 0
	}
	budget -= budget / 8
	row := 2*act + colT + scr + maxOut + 2
	if pt {
		row += n.p
	}
	if n.tb != nil {
		row += n.maxParamOut() // ws.drep
	}
	// All k directions in one pass when a sample's fit: the most samples that hold
	// them, then chunks of equal size.
	if most := min((budget-k*n.p)/(first+k*row), maxRows/k); most >= 1 {
		return balancedChunk(batch, most), k
	}
	return 1, max(1, min((budget-first)/(row+n.p), maxRows, k))
}

// balancedChunk returns the chunk size that splits batch into the fewest chunks of at
// most most samples, as equal as they can be.
func balancedChunk(batch, most int) int {
	most = max(1, min(most, batch))
	chunks := (batch + most - 1) / most
	return (batch + chunks - 1) / chunks
}

// workspaceFor returns worker w's workspace, grown to hold cs samples for the
// first-order pass and cs·kc tangent rows (kc directions per sample). The two parts
// grow independently, so alternating large first-order chunks with small tangent
// chunks (a training step followed by its FIL step) never allocates their product.
// The slot n.ws[w] exists already (parallelChunks creates the slots before starting
// workers, so workers never touch the slice itself).
func (n *Network[T]) workspaceFor(w, cs, kc int, pt bool) *workspace[T] {
	ws := n.ws[w]
	if ws == nil {
		ws = &workspace[T]{}
		n.ws[w] = ws
	}
	if n.dm != nil { // one worker: the pass about to run overwrites what a reuse would read
		n.dev.firstOrder = 0
	}
	be := n.be
	_, _, maxOut := n.convFloats()
	if ws.cs < cs {
		ws.cs = cs
		ws.acts, ws.dlt, ws.cols = n.layerBuffers(cs)
		ws.grads = be.Alloc(cs * n.p)
		ws.losses = be.Alloc(cs)
		ws.gsq = make([]float64, cs)
		if n.dm != nil {
			ws.gsq = n.dm.AllocFloat64(cs)
		}
	}
	rows := cs * kc
	if kc > 0 && (ws.rows < rows || ws.kc < kc || (pt && !ws.pt)) {
		rows = max(rows, ws.rows)
		ws.kc = max(kc, ws.kc)
		ws.rows = rows
		ws.pt = pt || ws.pt
		ws.tacts, ws.tdlt, ws.tcols = n.layerBuffers(rows)
		ws.spIdx = make([]int, rows)
		ws.spVal = be.Alloc(rows)
		ws.tg = be.Alloc(ws.kc * n.p)
		if ws.pt {
			ws.tp = be.Alloc(rows * n.p)
		}
		if n.tb != nil {
			ws.drep = be.Alloc(rows * n.maxParamOut())
		}
	}
	colsPad, scratchPad := n.convPads()
	if need := max(ws.cs, ws.rows); len(ws.scratch) < n.scratchFloats()*need+colsPad {
		ws.scratch = be.Alloc(n.scratchFloats()*need + colsPad)
		ws.scratch2 = be.Alloc(maxOut*need + scratchPad)
	}
	return ws
}

// RowIm2coler is an optional Backend extension for device backends: im2col and
// col2im of m samples (or tangent rows) at once, sample r at x[r·inN:] / dx[r·inN:]
// and in columns r·HWo… of the side-by-side patch matrix (row stride ld), instead of
// one call per sample.
type RowIm2coler[T Float] interface {
	Im2colRows(g ConvGeom, m int, x []T, inN int, cols []T, ld int)
	// Col2imRows writes (not adds) the scattered-back patch matrices to dx: its
	// caller need not zero dx first.
	Col2imRows(g ConvGeom, m int, cols []T, ld int, dx []T, inN int)
}

// checkFinite returns an error naming what when v holds a NaN or an infinity.
// x·0 is ±0 for every finite x and NaN for ±Inf and NaN, so four running sums of
// x·0 stay 0 exactly when every value is finite: no branch and no conversion per
// value (with math.IsNaN and math.IsInf this scan was ≈ 12 % of a small model's g_φ
// refresh, which validates millions of probe values a step). Only a failed check
// looks for the index.
func checkFinite[T Float](what string, v []T) error {
	var a0, a1, a2, a3 T
	i := 0
	for ; i+4 <= len(v); i += 4 {
		a0 += v[i] * 0
		a1 += v[i+1] * 0
		a2 += v[i+2] * 0
		a3 += v[i+3] * 0
	}
	for ; i < len(v); i++ {
		a0 += v[i] * 0
	}
	if a0+a1+a2+a3 == 0 {
		return nil
	}
	for i, x := range v {
		if x*0 != 0 {
			return fmt.Errorf("%s[%d] = %v is not finite", what, i, float64(x))
		}
	}
	return fmt.Errorf("%s: not finite", what) // unreachable: some x·0 was not 0
}

func (n *Network[T]) checkInputs(params, x []T, y []int, batch int) error {
	if batch <= 0 {
		return fmt.Errorf("%s: batch must be positive, got %d", n.arch.Name, batch)
	}
	if len(params) != n.p {
		return fmt.Errorf("%s: got %d parameters, want %d", n.arch.Name, len(params), n.p)
	}
	if len(x) != batch*n.d {
		return fmt.Errorf("%s: got %d input values, want batch %d × %d", n.arch.Name, len(x), batch, n.d)
	}
	if y != nil {
		if len(y) != batch {
			return fmt.Errorf("%s: got %d labels, want %d", n.arch.Name, len(y), batch)
		}
		for i, c := range y {
			if c < 0 || c >= n.classes {
				return fmt.Errorf("%s: label %d of sample %d outside [0,%d)", n.arch.Name, c, i, n.classes)
			}
		}
	}
	// Device memory is not read here: its producer (a device-resident trainer)
	// checks it.
	if n.onHost(x) {
		if err := checkFinite("input", x); err != nil {
			return fmt.Errorf("%s: %w", n.arch.Name, err)
		}
	}
	if n.onHost(params) {
		if err := checkFinite("params", params); err != nil {
			return fmt.Errorf("%s: %w", n.arch.Name, err)
		}
	}
	return nil
}

// parallelChunks runs fn(worker, s0, cs) over the chunks of the batch on the
// backend's workers. Chunk c starts at c·cs.
func (n *Network[T]) parallelChunks(batch, cs int, fn func(w, s0, cs int)) {
	chunks := (batch + cs - 1) / cs
	workers := max(1, min(n.be.Workers(), chunks))
	for len(n.ws) < workers {
		n.ws = append(n.ws, nil)
	}
	if workers <= 1 {
		for c := 0; c < chunks; c++ {
			s0 := c * cs
			fn(0, s0, min(cs, batch-s0))
		}
		return
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	next := 0
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for {
				mu.Lock()
				c := next
				next++
				mu.Unlock()
				if c >= chunks {
					return
				}
				s0 := c * cs
				fn(w, s0, min(cs, batch-s0))
			}
		}(w)
	}
	wg.Wait()
}

// forward runs the layers on the cs samples in ws.acts[0].
func (n *Network[T]) forward(ws *workspace[T], params []T, cs int) {
	for i := range n.layers {
		n.layers[i].ops.forward(n, ws, i, params, cs)
	}
}

// addBiasRows is the package's addBiasRows, on the AVX adds (addConstF32, the same
// single rounding per value) on the float32 fast path.
func (n *Network[T]) addBiasRows(o, b []T, hw int) {
	if !n.patchT {
		addBiasRows(o, b, hw)
		return
	}
	of, bf := any(o).([]float32), any(b).([]float32)
	for c, bv := range bf {
		addConstF32(of[c*hw:(c+1)*hw], bv)
	}
}

// addBiasRows adds b[c] to every value of row c of the C×hw matrix o.
func addBiasRows[T Float](o, b []T, hw int) {
	for c, bv := range b {
		r := o[c*hw : (c+1)*hw]
		for j := range r {
			r[j] += bv
		}
	}
}

// lossAndDelta writes each sample's softmax cross-entropy to ws.losses and its
// gradient w.r.t. the logits (softmax − onehot) to the last dlt buffer.
func (n *Network[T]) lossAndDelta(ws *workspace[T], y []int, cs int) {
	L := len(n.layers)
	k := n.classes
	z, dz := ws.acts[L], ws.dlt[L]
	if n.dm != nil {
		n.dm.SoftmaxXent(cs, k, z, y, ws.losses, dz)
		return
	}
	for s := 0; s < cs; s++ {
		zs, ds := z[s*k:(s+1)*k], dz[s*k:(s+1)*k]
		mx := math.Inf(-1)
		for _, v := range zs {
			mx = math.Max(mx, float64(v))
		}
		var sum float64
		for _, v := range zs {
			sum += math.Exp(float64(v) - mx)
		}
		lse := mx + math.Log(sum)
		ws.losses[s] = T(lse - float64(zs[y[s]]))
		for j, v := range zs {
			ds[j] = T(math.Exp(float64(v) - lse))
		}
		ds[y[s]] -= 1
	}
}

// backward propagates ws.dlt[L] down, writing per-sample parameter gradients to
// ws.grads (cs×P) and their squared norms (float64; on the CPU summed while each
// layer's block is still in cache, on a device in one reduction at the end) to ws.gsq. The gradient w.r.t. the input is computed only when inputGrad.
func (n *Network[T]) backward(ws *workspace[T], params []T, cs int, inputGrad bool) {
	if n.dm != nil {
		n.dm.ZeroFloat64(ws.gsq[:cs])
	} else {
		clear(ws.gsq[:cs])
	}
	// A device backend that batches GEMMs and norms gets the batched form of the
	// per-sample weight gradients; the CPU keeps the per-sample loop, whose blocks
	// are still in cache when their norms are taken.
	dev := n.rs != nil && n.bg != nil
	for i := len(n.layers) - 1; i >= 0; i-- {
		n.layers[i].ops.backward(n, ws, i, params, cs, n.paramsBelow[i] || inputGrad, dev)
	}
	if dev { // the squared norms of every layer's gradients in one reduction
		n.rs.RowSqNorms(cs, n.p, n.paramBlocks(), ws.grads[:cs*n.p], ws.gsq[:cs])
	}
}

// paramBlocks lists the parameter tensors as (offset, size) pairs in layer order,
// weights before biases.
func (n *Network[T]) paramBlocks() []int {
	var b []int
	for i := range n.layers {
		for _, t := range n.layers[i].params {
			b = append(b, t.off, t.size)
		}
	}
	return b
}

// zero clears x (on the device when the backend has DeviceOps).
func (n *Network[T]) zero(x []T) {
	if n.dops != nil {
		n.dops.Zero(x)
		return
	}
	clear(x)
}

// rowSums writes, for rows r < rows, the C row sums (length hw) of
// src[r·srcStride:] to dst[r·dstStride:] (see DeviceOps.RowSums).
func (n *Network[T]) rowSums(rows, C, hw int, src []T, srcStride int, dst []T, dstStride int) {
	if n.dops != nil {
		n.dops.RowSums(rows, C, hw, src, srcStride, dst, dstStride)
		return
	}
	for r := 0; r < rows; r++ {
		rowSums(src[r*srcStride:r*srcStride+C*hw], hw, dst[r*dstStride:r*dstStride+C])
	}
}

// rowSums writes the sums of the rows (length hw) of D to out.
func rowSums[T Float](D []T, hw int, out []T) {
	// Four rows at a time: four independent chains of adds, each still in order,
	// so the sums are those of one row at a time (a single chain waits on the
	// add latency).
	c := 0
	for ; c+4 <= len(out); c += 4 {
		var s0, s1, s2, s3 T
		r0, r1, r2, r3 := D[c*hw:(c+1)*hw], D[(c+1)*hw:(c+2)*hw], D[(c+2)*hw:(c+3)*hw], D[(c+3)*hw:(c+4)*hw]
		for k := range r0 {
			s0 += r0[k]
			s1 += r1[k]
			s2 += r2[k]
			s3 += r3[k]
		}
		out[c], out[c+1], out[c+2], out[c+3] = s0, s1, s2, s3
	}
	for ; c < len(out); c++ {
		var s T
		for _, v := range D[c*hw : (c+1)*hw] {
			s += v
		}
		out[c] = s
	}
}

// loadInputs copies samples s0..s0+cs of x into ws.acts[0].
func (n *Network[T]) loadInputs(ws *workspace[T], x []T, s0, cs int) {
	n.copyTo(ws.acts[0][:cs*n.d], x[s0*n.d:(s0+cs)*n.d])
}

// Forward returns the batch×Classes logits of x.
func (n *Network[T]) Forward(params, x []T, batch int) ([]T, error) {
	out := make([]T, batch*n.classes)
	if err := n.ForwardInto(params, x, batch, out); err != nil {
		return nil, err
	}
	return out, nil
}

// ForwardInto writes the batch×Classes logits of x to out.
func (n *Network[T]) ForwardInto(params, x []T, batch int, out []T) error {
	if err := n.checkInputs(params, x, nil, batch); err != nil {
		return err
	}
	if len(out) != batch*n.classes {
		return fmt.Errorf("%s: logits buffer has %d values, want %d", n.arch.Name, len(out), batch*n.classes)
	}
	cs, _ := n.chunkSizes(batch, 0, false)
	L := len(n.layers)
	n.parallelChunks(batch, cs, func(w, s0, c int) {
		ws := n.workspaceFor(w, cs, 0, false)
		n.loadInputs(ws, x, s0, c)
		n.forward(ws, params, c)
		n.copyTo(out[s0*n.classes:(s0+c)*n.classes], ws.acts[L][:c*n.classes])
	})
	return nil
}

// PerSampleGrads returns every sample's gradient of its softmax cross-entropy loss
// w.r.t. the parameters (batch×P, row s is sample s) and the per-sample losses.
func (n *Network[T]) PerSampleGrads(params, x []T, y []int, batch int) (grads []T, losses []T, err error) {
	if err := n.checkInputs(params, x, y, batch); err != nil {
		return nil, nil, err
	}
	grads = make([]T, batch*n.p)
	losses = make([]T, batch)
	n.firstOrder(params, x, y, batch, false, func(ws *workspace[T], s0, cs int) {
		n.copyTo(grads[s0*n.p:(s0+cs)*n.p], ws.grads[:cs*n.p])
		n.copyTo(losses[s0:s0+cs], ws.losses[:cs])
	})
	return grads, losses, nil
}

// InputGrads returns every sample's gradient of its loss w.r.t. its input (batch×D).
func (n *Network[T]) InputGrads(params, x []T, y []int, batch int) ([]T, error) {
	if err := n.checkInputs(params, x, y, batch); err != nil {
		return nil, err
	}
	out := make([]T, batch*n.d)
	n.firstOrder(params, x, y, batch, true, func(ws *workspace[T], s0, cs int) {
		n.copyTo(out[s0*n.d:(s0+cs)*n.d], ws.dlt[0][:cs*n.d])
	})
	return out, nil
}

// firstOrder runs forward and backward over the batch in chunks and calls consume
// for each chunk (possibly concurrently from several workers) with ws.grads and
// ws.losses filled.
func (n *Network[T]) firstOrder(params, x []T, y []int, batch int, inputGrad bool, consume func(ws *workspace[T], s0, cs int)) {
	n.firstOrderIn(nil, params, x, y, batch, inputGrad, consume)
}

// firstOrderIn is firstOrder in the workspaces of wsFor(worker, cs) (nil:
// workspaceFor's).
func (n *Network[T]) firstOrderIn(wsFor func(w, cs int) *workspace[T], params, x []T, y []int, batch int, inputGrad bool, consume func(ws *workspace[T], s0, cs int)) {
	if wsFor == nil {
		wsFor = func(w, cs int) *workspace[T] { return n.workspaceFor(w, cs, 0, false) }
	}
	cs, _ := n.chunkSizes(batch, 0, false)
	if cs == 1 && batch >= minDenseTBatch {
		n.transposeDense(params)
		defer clear(n.denseT)
	}
	n.parallelChunks(batch, cs, func(w, s0, c int) {
		ws := wsFor(w, cs)
		n.loadInputs(ws, x, s0, c)
		n.forward(ws, params, c)
		n.lossAndDelta(ws, y[s0:s0+c], c)
		n.backward(ws, params, c, inputGrad)
		consume(ws, s0, c)
	})
}

// layerBuffers allocates, for rows sample rows (or sample×direction rows), the
// activation and delta buffers before and after every layer (a view layer such as
// flatten shares its input's) and the patch buffers (im2col) of the layers that keep one.
func (n *Network[T]) layerBuffers(rows int) (acts, dlt, cols [][]T) {
	L := len(n.layers)
	acts, dlt, cols = make([][]T, L+1), make([][]T, L+1), make([][]T, L)
	acts[0], dlt[0] = n.be.Alloc(rows*n.d), n.be.Alloc(rows*n.d)
	for i, l := range n.layers {
		if l.view {
			acts[i+1], dlt[i+1] = acts[i], dlt[i]
			continue
		}
		acts[i+1], dlt[i+1] = n.be.Alloc(rows*l.outN), n.be.Alloc(rows*l.outN)
		if l.cols > 0 {
			cols[i] = n.be.Alloc(rows*l.cols + l.colsPad)
		}
	}
	return acts, dlt, cols
}
