package cuda

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"
	"unsafe"

	"github.com/dpfil/dpfil/models"
)

// Launch shape of the elementwise and layout kernels: blockSize threads a block and
// at most maxGrid blocks (the kernels loop grid-stride over the rest).
const (
	blockSize = 256
	maxGrid   = 65535
	// reduceBlock is the block size of the reductions' launches.
	reduceBlock = 128
)

// intSlot is device scratch for int arguments and (plain mode) what it holds.
type intSlot struct {
	dev  []int32
	host []int32
}

// span is one device allocation.
type span struct{ start, end uintptr }

// Backend is models.Backend[float32] over a Driver, in one of two memory modes.
//
// Plain device memory (NewDeviceBackend; what cuda.Open uses): Alloc hands out
// cuMemAlloc memory, which the host never touches. The backend implements
// models.DeviceMemory, so the network does its last host-side steps (loading inputs,
// softmax, clip factors, the clipped sum's accumulator, the FIL combination) as
// kernels too; launches, GEMMs, memsets and copies to the device are queued on one
// stream and a call waits for the device only when the host reads a result (a
// CopyDtoH). Host slices a call is given are copied in (and, for outputs, out) at
// the call.
//
// Managed memory (NewBackend): Alloc hands out managed memory, every kernel runs on
// the device and the call returns after the device finished, so the network's
// host-side steps read and write the same buffers correctly; buffers that did not
// come from Alloc are staged through managed memory. Every engine path works here
// (the parameter-tangent and input-gradient passes of η, label FIL and the attacks
// still have host steps).
//
// models.Backend has no error returns: the first driver error is kept, every later
// call does nothing, and Err reports it. Model (NewModel) checks Err after every
// call, so an error never turns into a silently wrong number.
type Backend struct {
	drv   *counted
	gd    *graphed // what the backend issues its work to: drv, or a graph's capture or replay
	plain bool     // plain device memory (else managed)

	mu     sync.Mutex
	spans  []span           // sorted device allocations
	owned  []unsafe.Pointer // to free on Close
	stage  [][]float32      // staging buffers for foreign slices, reused per call
	nstage int              // staging buffers in use by the current call
	synced bool             // the current call already waited for the device
	back   []func()         // copy-backs of staged outputs after the current call
	stats  Stats
	base   Counts // driver counts at the last ResetStats
	err    error
	budget int // chunk budget in float32 values (0: not measured yet)
	// The reductions' partial sums (grown as needed; their tensor table is an int slot).
	fpart []float64
	// The layer-by-layer FIL reduction's partial sums (FILDotSqLayer), kept between
	// its calls, and the rows and stripes of the reduction in progress (0: none).
	filPart          []float64
	filDense         []float64 // k_fil_dense_terms' per-sample and per-row terms
	rowPart          []float32 // RowSumsBlocked's stripe sums (k_row_sums_part)
	filRows, filStri int
	// DeviceOps\' scratch: int arguments (slots, see ints), row scales and row sums.
	islots [nSlots]intSlot
	dscr   []float64
	// Host-side scratch of the plain mode: what is copied to or from the device.
	hostI32 []int32
	hostF64 []float64
	hostF32 []float32
	// FIL coordinates drawn on the device (coords.go), while a call is armed for it.
	draw coordDraw
}

// Stats counts a backend's device work since it was created (or ResetStats): the
// overheads that, next to the FLOPs, set its speed on a GPU (see docs/perf.md).
// Launches, GEMMs, synchronisations and the transfers are the driver's counts
// (Counts).
type Stats struct {
	Calls       int    `json:"calls"`        // backend calls (models.Backend methods and extensions)
	Launches    int    `json:"launches"`     // kernel launches
	Gemms       int    `json:"gemms"`        // SGEMM calls
	Syncs       int    `json:"syncs"`        // device synchronisations (Sync and CopyDtoH)
	StagedBytes int64  `json:"staged_bytes"` // bytes copied through staging buffers (foreign slices)
	DotReads    int    `json:"dot_reads"`    // reductions whose result the host waited for
	Driver      Counts `json:"driver"`       // everything the driver counted
}

// Stats returns the work counters.
func (b *Backend) Stats() Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.stats
	c := b.drv.Counts().Sub(b.base)
	st.Launches, st.Gemms, st.Syncs, st.Driver = int(c.Launches), int(c.Gemms), int(c.Syncs), c
	return st
}

// ResetStats zeroes the work counters.
func (b *Backend) ResetStats() {
	b.mu.Lock()
	b.stats = Stats{}
	b.base = b.drv.Counts()
	b.mu.Unlock()
}

// Counts returns the driver's counts since the backend was created.
func (b *Backend) Counts() Counts { return b.drv.Counts() }

// NewBackend returns a backend on drv that allocates managed memory (see Backend).
func NewBackend(drv Driver) (*Backend, error) {
	if drv == nil {
		return nil, errors.New("cuda: nil driver")
	}
	c := newCounted(drv)
	b := &Backend{drv: c, gd: &graphed{counted: c}}
	b.gd.isDev = func(v uint64) bool { return b.ownsAddr(uintptr(v), 1) }
	return b, nil
}

// NewDeviceBackend returns a backend on drv that allocates plain device memory (see
// Backend).
func NewDeviceBackend(drv Driver) (*Backend, error) {
	b, err := NewBackend(drv)
	if err != nil {
		return nil, err
	}
	b.plain = true
	return b, nil
}

// graphing reports whether the current call is captured or replayed (b.mu held).
func (b *Backend) graphing() bool { return b.gd.mode != graphDirect }

// Plain reports whether the backend allocates plain device memory.
func (b *Backend) Plain() bool { return b.plain }

// Name is "cuda" on a GPU and "cuda-emulator" on the emulator.
func (b *Backend) Name() string {
	if b.drv.Name() == "emulator" {
		return "cuda-emulator"
	}
	return "cuda"
}

// Device names the driver's device.
func (b *Backend) Device() string { return b.drv.Name() }

// Chunk budget (models.Chunker): the float32 values one chunk's buffers may hold,
// sized from the device memory free when the network first asks (cuMemGetInfo),
// then fixed for the backend's life so that every call chunks alike.
const (
	// minChunkBudget is the budget however little memory is free (64 MiB): a chunk
	// of one sample needs about that for cifar-cnn at k = 50.
	minChunkBudget = 1 << 24
	// chunkMarginBytes is kept free besides a tenth of the device (cuBLAS's
	// workspace, the context's own allocations, fragmentation).
	chunkMarginBytes = 1 << 30
	// chunkBufferCap bounds each layer buffer of a chunk to 2³¹−1 values: the
	// kernels take element counts as 32-bit ints (models.Chunker.ChunkBufferCap).
	chunkBufferCap = math.MaxInt32
)

// chunkBudgetFor returns the chunk budget for a device with free of total bytes
// free: what is free beyond the margin, in float32 values, and at least
// minChunkBudget. The network splits it between its workspace's two parts, which
// grow independently (models.Chunker): first-order chunks take at most an eighth,
// a tangent chunk (its own first-order part included) the rest.
func chunkBudgetFor(free, total int64) int {
	usable := free - max(chunkMarginBytes, total/10)
	return int(max(usable/4, minChunkBudget))
}

// ChunkBufferCap is chunkBufferCap (models.Chunker).
func (b *Backend) ChunkBufferCap() int { return chunkBufferCap }

// ChunkBudget sizes the network's chunks for the device (models.Chunker) from its
// free memory, measured once (see chunkBudgetFor). A failing cuMemGetInfo is kept as
// the backend's error (Err) and the budget falls back to minChunkBudget.
func (b *Backend) ChunkBudget() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.budget == 0 {
		free, total, err := b.drv.MemInfo()
		if err != nil {
			b.fail(fmt.Errorf("cuda: device memory info: %w", err))
			b.budget = minChunkBudget
		} else {
			b.budget = chunkBudgetFor(free, total)
		}
	}
	return b.budget
}

// Workers is 1: the device runs one chunk at a time, in one stream.
func (b *Backend) Workers() int { return 1 }

// Err returns the first driver error, if any.
func (b *Backend) Err() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

// Close frees every allocation and closes the driver. Slices from Alloc must not be
// used afterwards.
func (b *Backend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	var errs []error
	if err := b.gd.releaseAll(); err != nil {
		errs = append(errs, err)
	}
	for _, p := range b.owned {
		if err := b.drv.Free(p); err != nil {
			errs = append(errs, err)
		}
	}
	b.owned, b.spans, b.stage = nil, nil, nil
	if err := b.drv.Close(); err != nil {
		errs = append(errs, err)
	}
	if b.err == nil {
		b.err = errors.New("cuda: backend closed")
	}
	return errors.Join(errs...)
}

func (b *Backend) fail(err error) {
	if b.err == nil && err != nil {
		b.err = err
	}
}

// allocBytes allocates n zeroed bytes of device memory (plain or managed) and records
// the span (b.mu held or not needed).
func (b *Backend) allocBytes(n int) unsafe.Pointer {
	var p unsafe.Pointer
	var err error
	if b.plain {
		if p, err = b.drv.Alloc(n); err == nil {
			if err = b.gd.MemsetZero(p, n); err != nil {
				_ = b.drv.Free(p)
			}
		}
	} else {
		p, err = b.drv.AllocManaged(n)
	}
	if err != nil {
		b.fail(fmt.Errorf("cuda: alloc %d bytes: %w", n, err))
		return nil
	}
	s := span{uintptr(p), uintptr(p) + uintptr(n)}
	i := sort.Search(len(b.spans), func(i int) bool { return b.spans[i].start >= s.start })
	b.spans = append(b.spans, span{})
	copy(b.spans[i+1:], b.spans[i:])
	b.spans[i] = s
	b.owned = append(b.owned, p)
	return p
}

// Alloc returns n zeroed float32 of device memory (plain or managed). After a driver
// error it returns host memory, so callers keep running until they check Err.
func (b *Backend) Alloc(n int) []float32 { return allocSlice[float32](b, n) }

// allocSlice returns n zeroed E of device memory (plain or managed), or host memory
// after a driver error.
func allocSlice[E float32 | float64](b *Backend, n int) []E {
	if n <= 0 {
		return []E{}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err == nil {
		if p := b.allocBytes(int(unsafe.Sizeof(E(0))) * n); p != nil {
			return unsafe.Slice((*E)(p), n)
		}
	}
	return make([]E, n)
}

// growScratch makes *buf, device scratch kept between calls, hold at least need
// values: a shorter one is replaced by a new allocation (the old one stays allocated,
// as a captured graph may still name it). False after an allocation error.
func growScratch[E float32 | float64](b *Backend, buf *[]E, need int) bool {
	if len(*buf) >= need {
		return true
	}
	p := b.allocBytes(int(unsafe.Sizeof(E(0))) * need)
	if p == nil {
		return false
	}
	*buf = unsafe.Slice((*E)(p), need)
	return true
}

// owns reports whether the n bytes at p lie inside one device allocation.
func (b *Backend) owns(p unsafe.Pointer, n int) bool { return b.ownsAddr(uintptr(p), n) }

// ownsAddr is owns for an address.
func (b *Backend) ownsAddr(a uintptr, n int) bool {
	i := sort.Search(len(b.spans), func(i int) bool { return b.spans[i].end > a })
	return i < len(b.spans) && b.spans[i].start <= a && a+uintptr(n) <= b.spans[i].end
}

// dev returns a device pointer for s: s itself when it is device memory, else a
// staging copy (copied back after the call when out). Nil for an empty slice.
func (b *Backend) dev(s []float32, out bool) unsafe.Pointer {
	if len(s) == 0 {
		return nil
	}
	p := unsafe.Pointer(unsafe.SliceData(s))
	if b.owns(p, 4*len(s)) {
		return p
	}
	st := b.nextStage(len(s))
	if st == nil {
		return nil
	}
	n, pd := 4*len(s), unsafe.Pointer(unsafe.SliceData(st))
	b.stageCopy(true, pd, p, n)
	b.stats.StagedBytes += int64(n)
	if out {
		b.back = append(b.back, func() { b.stageCopy(false, p, pd, n) })
		b.stats.StagedBytes += int64(n)
	}
	return pd
}

// stageCopy copies n bytes between a host slice and a staging buffer (in: into the
// buffer): a plain host copy on managed memory, a driver copy in the plain mode
// (device staging buffers).
func (b *Backend) stageCopy(in bool, dst, src unsafe.Pointer, n int) {
	switch {
	case !b.plain:
		copy(unsafe.Slice((*byte)(dst), n), unsafe.Slice((*byte)(src), n))
	case in:
		b.copyIn(dst, src, n)
	default:
		b.copyOut(dst, src, n)
	}
}

// begin starts a backend call: it locks b and reports whether the call may run; when
// it may not (an earlier error), it unlocks b again and the caller returns at once.
func (b *Backend) begin() bool {
	b.mu.Lock()
	b.nstage = 0
	b.synced = false
	b.back = b.back[:0]
	b.stats.Calls++
	if b.err != nil {
		b.mu.Unlock()
		return false
	}
	return true
}

// end finishes a call and unlocks b. Managed memory: it waits for the device and
// copies staged outputs back. Plain memory: it copies staged outputs back (each copy
// waits for the device); without any, nothing waits.
func (b *Backend) end() {
	if b.err == nil && !b.synced && !b.plain {
		if err := b.gd.Sync(); err != nil {
			b.fail(fmt.Errorf("cuda: synchronize: %w", err))
		}
	}
	if b.err == nil {
		for _, f := range b.back {
			f()
		}
	}
	b.mu.Unlock()
}

// launch runs a grid-stride kernel over n elements.
func (b *Backend) launch(name string, n int, args ...any) {
	b.launchN(name, n, math.MaxInt32, args...)
}

// launchN is launch for a kernel whose index space may hold up to most elements
// (math.MaxInt32 for those that count in 32 bits).
func (b *Backend) launchN(name string, n, most int, args ...any) {
	if b.err != nil || n <= 0 {
		return
	}
	for i, a := range args {
		if v, ok := a.(int); ok && (v < math.MinInt32 || v > math.MaxInt32) {
			b.fail(fmt.Errorf("cuda: %s: argument %d = %d does not fit the kernel's 32-bit int", name, i, v))
			return
		}
	}
	if n > most {
		b.fail(fmt.Errorf("cuda: %s: %d elements exceed the kernel's 32-bit sizes", name, n))
		return
	}
	g := min(maxGrid, (n+blockSize-1)/blockSize)
	if err := b.gd.Launch(name, Dim3{uint32(g), 1, 1}, Dim3{blockSize, 1, 1}, Args(args...)); err != nil {
		b.fail(fmt.Errorf("cuda: %s: %w", name, err))
	}
}

// Gemm computes C = alpha·op(A)·op(B) + beta·C on the device (cuBLAS on a GPU).
func (b *Backend) Gemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, bb []float32, ldb int, beta float32, c []float32, ldc int) {
	b.GemmStridedBatched(transA, transB, m, n, k, alpha, a, lda, 0, bb, ldb, 0, beta, c, ldc, 0, 1)
}

// GemmStridedBatched runs batch GEMMs of one shape at fixed operand strides in one
// device call (models.BatchedGemmer); a batch of one is a plain SGEMM.
func (b *Backend) GemmStridedBatched(transA, transB bool, m, n, k int, alpha float32, a []float32, lda, strideA int, bb []float32, ldb, strideB int, beta float32, c []float32, ldc, strideC, batch int) {
	if m == 0 || n == 0 || batch == 0 || !b.begin() {
		return
	}
	defer b.end()
	pa, pb, pc := b.dev(a, false), b.dev(bb, false), b.dev(c, true)
	if b.err != nil {
		return
	}
	var err error
	if batch == 1 {
		err = b.gd.Sgemm(transA, transB, m, n, k, alpha, pa, lda, pb, ldb, beta, pc, ldc)
	} else {
		err = b.gd.SgemmStridedBatched(transA, transB, m, n, k, alpha, pa, lda, strideA, pb, ldb, strideB, beta, pc, ldc, strideC, batch)
	}
	if err != nil {
		b.fail(fmt.Errorf("cuda: sgemm %d×(%d×%d×%d): %w", batch, m, n, k, err))
	}
}

// Im2col writes one sample's patch matrix (see models.Backend).
func (b *Backend) Im2col(g models.ConvGeom, x []float32, cols []float32, ld int) {
	b.Im2colRows(g, 1, x, g.InC*g.H*g.W, cols, ld)
}

// Im2colRows writes the patch matrices of m samples (sample r at x[r·inN:]) side by
// side into cols, sample r in columns r·HWo… (models.RowIm2coler): one launch.
func (b *Backend) Im2colRows(g models.ConvGeom, m int, x []float32, inN int, cols []float32, ld int) {
	b.im2colRows(g, m, x, inN, cols, ld, 0)
}

// im2colRows is Im2colRows with k_im2col's threads writing krpt kernel rows (kw patch
// rows each) of a column; krpt = 0 takes im2colSplit's.
func (b *Backend) im2colRows(g models.ConvGeom, m int, x []float32, inN int, cols []float32, ld, krpt int) {
	if !b.begin() {
		return
	}
	defer b.end()
	kr := g.InC * g.KH
	nb, k, err := im2colSplit(m*g.HWo(), kr, g.KW)
	if err != nil {
		b.fail(fmt.Errorf("cuda: k_im2col: %w", err))
		return
	}
	if krpt > 0 {
		nb, k = (kr+krpt-1)/krpt, krpt
	}
	px, pc := b.dev(x, false), b.dev(cols, true)
	b.launch("k_im2col", nb*m*g.HWo(), m, inN, g.InC, g.H, g.W, g.KH, g.KW, g.Stride, g.PadT, g.PadL, g.OutH, g.OutW, px, pc, ld, k)
}

// im2colValuesPerThread is about how many patch values a k_im2col thread writes (of
// one column) when the index space allows: its index arithmetic is shared by them.
const im2colValuesPerThread = 16

// im2colSplit returns k_im2col's kernel rows per thread krpt (⌈im2colValuesPerThread/kw⌉
// where it fits) and groups nb = ⌈kr/krpt⌉ for n = m·HWo columns and kr = InC·KH kernel
// rows of kw taps, such that its index space nb·n fits 2³¹ − 1 (a patch matrix may hold
// more values, models.Chunker.ChunkBufferCap: then a thread writes more rows). It fails
// when n alone does not fit.
func im2colSplit(n, kr, kw int) (nb, krpt int, err error) {
	if n > math.MaxInt32 {
		return 0, 0, fmt.Errorf("%d patch columns exceed the kernel's 32-bit sizes", n)
	}
	krpt = max(1, min((im2colValuesPerThread+kw-1)/max(kw, 1), kr))
	if n <= 0 || kr <= 0 {
		return 0, krpt, nil // nothing to write: no launch
	}
	if most := math.MaxInt32 / n; (kr+krpt-1)/krpt > most {
		krpt = (kr + most - 1) / most
	}
	return (kr + krpt - 1) / krpt, krpt, nil
}

// Col2im adds a patch matrix back into one sample's input gradient.
func (b *Backend) Col2im(g models.ConvGeom, cols []float32, ld int, dx []float32) {
	b.col2im(g, 1, cols, ld, dx, g.InC*g.H*g.W, true)
}

// Col2imRows writes the patch matrices of m samples (laid out as Im2colRows writes
// them), gathered per input pixel, to their input gradients dx[r·inN:]
// (models.RowIm2coler): one launch, and no zeroing of dx before it.
func (b *Backend) Col2imRows(g models.ConvGeom, m int, cols []float32, ld int, dx []float32, inN int) {
	b.col2im(g, m, cols, ld, dx, inN, false)
}

// col2im launches k_col2im, adding to dx or writing it.
func (b *Backend) col2im(g models.ConvGeom, m int, cols []float32, ld int, dx []float32, inN int, add bool) {
	if !b.begin() {
		return
	}
	defer b.end()
	pc, pd := b.dev(cols, false), b.dev(dx, true)
	a := 0
	if add {
		a = 1
	}
	b.launch("k_col2im", m*g.InC*g.H*g.W, m, inN, g.InC, g.H, g.W, g.KH, g.KW, g.Stride, g.PadT, g.PadL, g.OutH, g.OutW, pc, ld, pd, a)
}

// AvgPool pools n samples.
func (b *Backend) AvgPool(g models.PoolGeom, n int, x, y []float32) {
	b.avgPool("k_avgpool", n*g.C*g.OutH*g.OutW, g, n, x, y)
}

// AvgPoolBack adds the adjoint of AvgPool for n samples.
func (b *Backend) AvgPoolBack(g models.PoolGeom, n int, dy, dx []float32) {
	b.avgPool("k_avgpool_back", n*g.C*g.H*g.W, g, n, dy, dx)
}

// avgPool launches a pooling kernel (k_avgpool or its adjoint k_avgpool_back) with
// one thread per element it writes: in is read, out written.
func (b *Backend) avgPool(kernel string, threads int, g models.PoolGeom, n int, in, out []float32) {
	if !b.begin() {
		return
	}
	defer b.end()
	pin, pout := b.dev(in, false), b.dev(out, true)
	b.launch(kernel, threads, n*g.C, g.H, g.W, g.KH, g.KW, g.Stride, g.OutH, g.OutW, pin, pout)
}

// ActForward computes y = f(x).
func (b *Backend) ActForward(f models.Act, x, y []float32) {
	if !b.begin() {
		return
	}
	defer b.end()
	n := len(x)
	px, py := b.dev(x, false), b.dev(y[:n], true)
	b.launch("k_act_fwd", n, int(f), n, px, py)
}

// ActBackward computes dx = f'(x)·dy.
func (b *Backend) ActBackward(f models.Act, x, y, dy, dx []float32) {
	if !b.begin() {
		return
	}
	defer b.end()
	n := len(dx)
	px, py, pdy, pdx := b.dev(x[:n], false), b.dev(y[:n], false), b.dev(dy[:n], false), b.dev(dx, true)
	b.launch("k_act_bwd", n, int(f), n, px, py, pdy, pdx)
}

// ActTangent computes the activation's forward tangent and/or backward-pass tangent
// (see models.Backend).
func (b *Backend) ActTangent(f models.Act, n, k, size int, x, y, dy, tx, ty, tdy, tdx []float32) {
	if !b.begin() {
		return
	}
	defer b.end()
	rows := n * k * size
	px, py := b.dev(x[:n*size], false), b.dev(y[:n*size], false)
	ptx := b.dev(tx[:rows], false)
	var pty, pdy, ptdy, ptdx unsafe.Pointer
	if ty != nil {
		pty = b.dev(ty[:rows], true)
	}
	if tdy != nil {
		pdy, ptdy, ptdx = b.dev(dy[:n*size], false), b.dev(tdy[:rows], false), b.dev(tdx[:rows], true)
	}
	b.launch("k_act_tangent", rows, int(f), n, k, size, px, py, pdy, ptx, pty, ptdy, ptdx)
}

// Dot returns Σ x_i·y_i accumulated in double.
func (b *Backend) Dot(x, y []float32) float64 {
	xy, _ := b.DotSq(x, y)
	return xy
}

// DotSq returns Σ x_i·y_i and Σ y_i² in one pass, accumulated in double: the blocked
// reduction of the FIL step with one sample, one direction and one block.
func (b *Backend) DotSq(x, y []float32) (xy, yy float64) {
	n := len(x)
	if n == 0 {
		return 0, 0
	}
	var gd, dd [1]float64
	b.BlockedDotSqBatch(x, n, y[:n], 1, 1, 1, []int{0, n}, gd[:], dd[:])
	return gd[0], dd[0]
}

// reduceScratch writes blocks to the device tensor table (slotBlocks), which it
// returns, and makes room for need partial sums; false after an allocation error.
func (b *Backend) reduceScratch(blocks []int, need int) (unsafe.Pointer, bool) {
	tbl := b.ints(slotBlocks, blocks)
	if b.err != nil {
		return nil, false
	}
	if !growScratch(b, &b.fpart, need) {
		return nil, false
	}
	return tbl, b.err == nil
}

// blockTotal is the number of values in the (offset, size) blocks.
func blockTotal(blocks []int) int {
	n := 0
	for i := 1; i < len(blocks); i += 2 {
		n += blocks[i]
	}
	return n
}

// stripesFor is the number of threads that share one reduction of n values.
func stripesFor(n int) int { return min(1024, max(32, n/256)) }

// launchRaw launches kernel name on grid blocks of reduceBlock threads.
func (b *Backend) launchRaw(name string, grid int, args []uint64) bool {
	if b.err != nil {
		return false
	}
	if err := b.gd.Launch(name, Dim3{uint32(grid), 1, 1}, Dim3{reduceBlock, 1, 1}, args); err != nil {
		b.fail(fmt.Errorf("cuda: %s: %w", name, err))
		return false
	}
	return true
}

// reduceTo runs a two-stage reduction without waiting: kernel name writes
// rows·stripes partial sums to b.fpart (args must end with that pointer), then fold
// (k_sum_rows, or k_sum_rows_add to add) sums each row's stripes in order into out
// (device memory, rows doubles).
func (b *Backend) reduceTo(name string, rows, stripes int, args []uint64, fold string, out unsafe.Pointer) bool {
	part := unsafe.Pointer(unsafe.SliceData(b.fpart))
	return b.launchRaw(name, (rows*stripes+reduceBlock-1)/reduceBlock, args) &&
		b.launchRaw(fold, (rows+reduceBlock-1)/reduceBlock, Args(rows, stripes, part, out))
}

// reduce runs a two-stage reduction into b.fpart[rows·stripes:] (see reduceTo) and
// waits for the device; it returns the rows results in host memory (nil after an
// error).
func (b *Backend) reduce(name string, rows, stripes int, args []uint64) []float64 {
	part := unsafe.Pointer(unsafe.SliceData(b.fpart))
	fin := unsafe.Add(part, 8*rows*stripes)
	b.stats.DotReads++
	if !b.reduceTo(name, rows, stripes, args, "k_sum_rows", fin) {
		return nil
	}
	b.synced = true
	if b.plain {
		h := b.hostFloat64s(rows)
		if !b.copyOut(unsafe.Pointer(unsafe.SliceData(h)), fin, 8*rows) {
			return nil
		}
		return h
	}
	if err := b.gd.Sync(); err != nil {
		b.fail(fmt.Errorf("cuda: synchronize: %w", err))
		return nil
	}
	return b.fpart[rows*stripes : rows*stripes+rows]
}

// ownsF64 reports whether x is device memory (false for an empty slice).
func (b *Backend) ownsF64(x []float64) bool {
	return len(x) > 0 && b.owns(unsafe.Pointer(unsafe.SliceData(x)), 8*len(x))
}

// BlockedDotSqBatch reduces cs samples' gradients against their nj gradient-tangent
// directions in two launches (models.TangentBatcher): sample s's gradient at
// g[s·P:], its gradient tangents in rows s·kc + j of tg in the chunk's tensor-major
// layout (tensor t of row r at cs·kc·o_t + r·z_t), results for direction j of
// sample s at gd[s·nj + j], dd[s·nj + j]. Stripes of each direction are summed in
// double by separate threads, then each direction's stripes in order, so the result
// is deterministic. When gd and dd are device memory the results stay there and
// nothing waits; else the call waits and copies them to the host.
func (b *Backend) BlockedDotSqBatch(g []float32, P int, tg []float32, cs, kc, nj int, blocks []int, gd, dd []float64) {
	if nj <= 0 || cs <= 0 || !b.begin() {
		return
	}
	defer b.end()
	stripes := stripesFor(blockTotal(blocks))
	rows := cs * nj
	tbl, ok := b.reduceScratch(blocks, 2*rows*stripes+2*rows)
	if !ok {
		return
	}
	pg, ptg := b.dev(g, false), b.dev(tg, false)
	if b.err != nil {
		return
	}
	part := unsafe.Pointer(unsafe.SliceData(b.fpart))
	args := Args(cs, P, kc, nj, stripes, len(blocks)/2, tbl, pg, ptg, part)
	if b.plain && b.ownsF64(gd[:rows]) && b.ownsF64(dd[:rows]) {
		// Partial sums of ⟨g, ġ⟩ are the first rows·stripes, of ‖ġ‖² the next.
		if b.launchRaw("k_blocked_dotsq", (2*rows*stripes+reduceBlock-1)/reduceBlock, args) &&
			b.launchRaw("k_sum_rows", (rows+reduceBlock-1)/reduceBlock, Args(rows, stripes, part, unsafe.Pointer(unsafe.SliceData(gd)))) {
			b.launchRaw("k_sum_rows", (rows+reduceBlock-1)/reduceBlock,
				Args(rows, stripes, unsafe.Add(part, 8*rows*stripes), unsafe.Pointer(unsafe.SliceData(dd))))
		}
		return
	}
	f := b.reduce("k_blocked_dotsq", 2*rows, stripes, args)
	if f == nil {
		return
	}
	copy(gd[:rows], f[:rows])
	copy(dd[:rows], f[rows:2*rows])
}

// FILDotSqLayer adds one layer's terms to the FIL reduction of cs samples with kc
// directions (models.TangentBatcher): one launch of k_fil_dotsq_layer per two of
// the layer's tensors (one for a conv or dense layer), continuing, stripe by stripe,
// the partial sums the layers before it left in b.filPart. The stripes are those
// BlockedDotSqBatch takes for all P parameters, so over the layers each partial sum
// adds the same values in the same order and the totals (FILDotSqEnd) equal
// BlockedDotSqBatch's over the whole gradient tangents, bit for bit.
func (b *Backend) FILDotSqLayer(g []float32, P int, tg []float32, cs, kc int, blocks []int, first bool) {
	rows := cs * kc
	if rows <= 0 || len(blocks) == 0 || !b.begin() {
		return
	}
	defer b.end()
	if len(blocks)%2 != 0 {
		b.fail(fmt.Errorf("cuda: FIL reduction: %d block values, want (offset, size) pairs", len(blocks)))
		return
	}
	part, stripes, ok := b.filContinue(rows, P, first)
	if !ok {
		return
	}
	pg, ptg := b.dev(g, false), b.dev(tg, false)
	if b.err != nil {
		return
	}
	grid := (rows*stripes + reduceBlock - 1) / reduceBlock
	base := 0 // tensor-major: the pair's first tensor starts at rows·(sizes before it)
	for i := 0; i < len(blocks); i += 4 {
		o0, z0, o1, z1 := blocks[i], blocks[i+1], 0, 0
		if i+3 < len(blocks) {
			o1, z1 = blocks[i+2], blocks[i+3]
		}
		if !b.launchRaw("k_fil_dotsq_layer", grid, Args(cs, P, kc, stripes, boolInt(first && i == 0), o0, z0, o1, z1,
			pg, unsafe.Add(ptg, 4*rows*base), part)) {
			return
		}
		base += z0 + z1
	}
}

// filContinue starts (first) or continues the FIL reduction of rows rows for P
// parameters: its partial sums' device buffer and stripes; false after an error.
func (b *Backend) filContinue(rows, P int, first bool) (unsafe.Pointer, int, bool) {
	stripes := stripesFor(P)
	if first {
		if !growScratch(b, &b.filPart, 2*rows*stripes) {
			return nil, 0, false
		}
		b.filRows, b.filStri = rows, stripes
	} else if b.filRows != rows || b.filStri != stripes {
		b.fail(fmt.Errorf("cuda: FIL reduction of %d rows continued with %d rows (%d stripes, want %d)", b.filRows, rows, stripes, b.filStri))
		return nil, 0, false
	}
	return unsafe.Pointer(unsafe.SliceData(b.filPart)), stripes, true
}

// FILDotSqDense adds a dense layer's terms to the FIL reduction in progress
// (models.TangentBatcher) without forming its gradient tangents: k_fil_dense_terms
// takes the per-sample terms Gᵀδ, G a, ‖a‖², ‖δ‖² and each row's δ̇·δ into
// b.filDense, then k_fil_dense the rows' ⟨g, ġ⟩ and ‖ġ‖² of the rank-2 weight
// tangents δ̇ ⊗ a + δ ⊗ ȧ and the bias tangents δ̇ in closed form, stripe by stripe
// (two launches). ta holds the rows' input tangents, or is nil when idx and val give
// them as one-hot rows.
func (b *Backend) FILDotSqDense(g []float32, P, cs, kc, inN, outN, wOff, bOff int, a, ta []float32, idx []int, val, D, tD []float32, first bool) {
	rows := cs * kc
	if rows <= 0 || !b.begin() {
		return
	}
	defer b.end()
	part, stripes, ok := b.filContinue(rows, P, first)
	if !ok {
		return
	}
	// h (cs·inN), G a (cs·outN), ‖a‖² and ‖δ‖² (cs each), δ̇·δ (rows); a larger
	// buffer replaces a smaller one, which stays allocated (a captured graph may
	// still name it).
	if !growScratch(b, &b.filDense, cs*(inN+outN+2)+rows) {
		return
	}
	w := unsafe.Pointer(unsafe.SliceData(b.filDense))
	pg, pa, pD, ptD := b.dev(g, false), b.dev(a[:cs*inN], false), b.dev(D[:cs*outN], false), b.dev(tD[:rows*outN], false)
	var pta, pidx, pval unsafe.Pointer
	if ta != nil {
		pta = b.dev(ta[:rows*inN], false)
	} else {
		pidx, pval = b.int32s(idx[:rows]), b.dev(val[:rows], false)
	}
	if b.err != nil {
		return
	}
	if b.launchRaw("k_fil_dense_terms", (cs*(inN+outN+1)+rows+reduceBlock-1)/reduceBlock,
		Args(cs, kc, inN, outN, P, wOff, pg, pa, pD, ptD, w)) {
		b.launchRaw("k_fil_dense", (rows*stripes+reduceBlock-1)/reduceBlock, Args(cs, kc, inN, outN, P, bOff, stripes,
			boolInt(first), pg, pa, pta, pidx, pval, ptD, w, part))
	}
}

// boolInt is 1 for true, 0 for false (a kernel's int flag).
func boolInt(v bool) int {
	if v {
		return 1
	}
	return 0
}

// FILDotSqEnd writes the totals of the FIL reduction in progress (FILDotSqLayer) for
// its cs·kc rows to gd and dd (models.TangentBatcher): each row's stripes summed in
// order, two launches. When gd and dd are device memory the results stay there and
// nothing waits; else the call waits and copies them to the host.
func (b *Backend) FILDotSqEnd(cs, kc int, gd, dd []float64) {
	rows := cs * kc
	if rows <= 0 || !b.begin() {
		return
	}
	defer b.end()
	if b.filRows != rows {
		b.fail(fmt.Errorf("cuda: FIL reduction of %d rows ended for %d rows", b.filRows, rows))
		return
	}
	stripes := b.filStri
	part := unsafe.Pointer(unsafe.SliceData(b.filPart))
	grid := (rows + reduceBlock - 1) / reduceBlock
	if b.plain && b.ownsF64(gd[:rows]) && b.ownsF64(dd[:rows]) {
		if b.launchRaw("k_sum_rows", grid, Args(rows, stripes, part, unsafe.Pointer(unsafe.SliceData(gd)))) {
			b.launchRaw("k_sum_rows", grid, Args(rows, stripes, unsafe.Add(part, 8*rows*stripes), unsafe.Pointer(unsafe.SliceData(dd))))
		}
		return
	}
	// Host results: both folds (gd's rows then dd's) in one launch into fpart, then
	// one wait.
	if !growScratch(b, &b.fpart, 2*rows) {
		return
	}
	fin := unsafe.Pointer(unsafe.SliceData(b.fpart))
	b.stats.DotReads++
	if !b.launchRaw("k_sum_rows", (2*rows+reduceBlock-1)/reduceBlock, Args(2*rows, stripes, part, fin)) {
		return
	}
	b.synced = true
	var f []float64
	if b.plain {
		f = b.hostFloat64s(2 * rows)
		if !b.copyOut(unsafe.Pointer(unsafe.SliceData(f)), fin, 8*2*rows) {
			return
		}
	} else {
		if err := b.gd.Sync(); err != nil {
			b.fail(fmt.Errorf("cuda: synchronize: %w", err))
			return
		}
		f = b.fpart[:2*rows]
	}
	copy(gd[:rows], f[:rows])
	copy(dd[:rows], f[rows:2*rows])
}

// RepeatRows writes dst[r] = src[r/kd] for rows rows of n values
// (models.TangentBatcher): one launch.
func (b *Backend) RepeatRows(rows, kd, n int, src, dst []float32) {
	b.op("k_repeat_rows", rows*n, func() []any {
		return []any{rows, kd, n, b.dev(src[:(rows+kd-1)/kd*n], false), b.dev(dst[:rows*n], true)}
	})
}

// RowSqNorms adds to out[r] the squared norm of row r's blocks, for rows rows of
// stride values, in one reduction (models.RowSqNormer). When out is device memory
// the sums are added there and nothing waits.
func (b *Backend) RowSqNorms(rows, stride int, blocks []int, x []float32, out []float64) {
	if rows <= 0 || !b.begin() {
		return
	}
	defer b.end()
	stripes := stripesFor(blockTotal(blocks))
	tbl, ok := b.reduceScratch(blocks, rows*stripes+rows)
	if !ok {
		return
	}
	px := b.dev(x, false)
	if b.err != nil {
		return
	}
	part := unsafe.Pointer(unsafe.SliceData(b.fpart))
	args := Args(rows, stride, stripes, len(blocks)/2, tbl, px, part)
	if b.plain && b.ownsF64(out[:rows]) {
		b.reduceTo("k_row_sqnorm", rows, stripes, args, "k_sum_rows_add", unsafe.Pointer(unsafe.SliceData(out)))
		return
	}
	f := b.reduce("k_row_sqnorm", rows, stripes, args)
	for r, v := range f {
		out[r] += v
	}
}

// Slots of device scratch for int arguments: the one-hot coordinates, the labels,
// the batch indices and the reductions' tensor table each have their own, so that a call whose ints equal the last
// ones in its slot (the same labels for every pass of a step, the coordinates for both
// sparse kernels of a pass) copies nothing (plain mode).
const (
	slotIdx = iota
	slotLabels
	slotGather
	slotBlocks // the reductions' tensor table
	nSlots
)

// int32s copies idx to the device scratch for the one-hot coordinates.
func (b *Backend) int32s(idx []int) unsafe.Pointer { return b.ints(slotIdx, idx) }

// ints copies idx to slot's device scratch (as int32) and returns it.
func (b *Backend) ints(slot int, idx []int) unsafe.Pointer {
	if slot == slotIdx {
		if p, ok := b.draw.alias(idx); ok {
			return p
		}
	}
	sc := &b.islots[slot]
	if len(sc.dev) < len(idx) {
		n := max(len(idx), 1024)
		p := b.allocBytes(4 * n)
		if p == nil {
			return nil
		}
		sc.dev = unsafe.Slice((*int32)(p), n)
		sc.host = sc.host[:0]
	}
	dst := unsafe.Pointer(unsafe.SliceData(sc.dev))
	if !b.plain {
		for i, v := range idx {
			sc.dev[i] = int32(v)
		}
		return dst
	}
	same := !b.graphing() && len(sc.host) == len(idx)
	for i := 0; same && i < len(idx); i++ {
		same = sc.host[i] == int32(idx[i])
	}
	if !same {
		sc.host = sc.host[:0]
		for _, v := range idx {
			sc.host = append(sc.host, int32(v))
		}
		b.copyIn(dst, unsafe.Pointer(unsafe.SliceData(sc.host)), 4*len(idx))
	}
	return dst
}

// float64s returns device scratch for n doubles.
func (b *Backend) float64s(n int) []float64 {
	if !growScratch(b, &b.dscr, n) {
		return nil
	}
	return b.dscr[:n]
}

// hostInt32s, hostFloat64s and hostFloat32s are host scratch of at least n values for
// the plain mode's copies (the copies to the device are staged by the driver, so the
// scratch may be reused at once).
func (b *Backend) hostInt32s(n int) []int32 {
	if cap(b.hostI32) < n {
		b.hostI32 = make([]int32, n)
	}
	return b.hostI32[:n]
}

func (b *Backend) hostFloat64s(n int) []float64 {
	if cap(b.hostF64) < n {
		b.hostF64 = make([]float64, n)
	}
	return b.hostF64[:n]
}

func (b *Backend) hostFloat32s(n int) []float32 {
	if cap(b.hostF32) < n {
		b.hostF32 = make([]float32, n)
	}
	return b.hostF32[:n]
}

// copyIn queues a host → device copy; copyOut waits for the device and copies device
// memory to the host. Both report false after an error (kept as b.err).
func (b *Backend) copyIn(dst, src unsafe.Pointer, n int) bool {
	return b.copyWith(b.gd.CopyHtoD, "to the device", dst, src, n)
}

func (b *Backend) copyOut(dst, src unsafe.Pointer, n int) bool {
	return b.copyWith(b.gd.CopyDtoH, "to the host", dst, src, n)
}

// copyWith runs the driver copy op of n bytes (none when n ≤ 0) unless an error is
// kept, and keeps its error; it reports whether the backend is still without error.
func (b *Backend) copyWith(op func(dst, src unsafe.Pointer, n int) error, where string, dst, src unsafe.Pointer, n int) bool {
	if b.err != nil {
		return false
	}
	if n > 0 {
		if err := op(dst, src, n); err != nil {
			b.fail(fmt.Errorf("cuda: copy %d bytes %s: %w", n, where, err))
			return false
		}
	}
	return true
}

// nextStage returns the call's next staging buffer with room for n > 0 float32s (the
// buffers are kept and reused by later calls, grown when too small), or nil when the
// allocation failed (b.err says why).
func (b *Backend) nextStage(n int) []float32 {
	if b.nstage == len(b.stage) {
		b.stage = append(b.stage, nil)
	}
	if !growScratch(b, &b.stage[b.nstage], n) {
		return nil
	}
	st := b.stage[b.nstage]
	b.nstage++
	return st[:n]
}

// op runs one grid-stride kernel over n elements as a backend call; args are given
// after the pointers they refer to are resolved by the caller.
func (b *Backend) op(name string, n int, args func() []any) {
	if n <= 0 || !b.begin() {
		return
	}
	defer b.end()
	a := args()
	if b.err != nil {
		return
	}
	b.launch(name, n, a...)
}

// Zero sets x to 0 on the device.
func (b *Backend) Zero(x []float32) {
	b.op("k_zero", len(x), func() []any { return []any{len(x), b.dev(x, true)} })
}

// Transpose3 writes dst[j][i][:] = src[i][j][:] for src [a][b][hw].
func (b *Backend) Transpose3(a, bb, hw int, src, dst []float32) {
	n := a * bb * hw
	b.op("k_transpose3", n, func() []any { return []any{a, bb, hw, b.dev(src[:n], false), b.dev(dst[:n], true)} })
}

// AddBias adds bias[c] to out[r][c][:] for rows rows of C×hw values.
func (b *Backend) AddBias(rows, C, hw int, bias, out []float32) {
	n := rows * C * hw
	b.op("k_add_bias", n, func() []any { return []any{rows, C, hw, b.dev(bias[:C], false), b.dev(out[:n], true)} })
}

// RowSums writes dst[r·dstStride + c] = Σ_k src[r·srcStride + c·hw + k].
func (b *Backend) RowSums(rows, C, hw int, src []float32, srcStride int, dst []float32, dstStride int) {
	b.RowSumsBlocked(rows, rows, C, hw, src, srcStride, dst, dstStride, 0)
}

// RowSumsBlocked is RowSums with rows in groups of kd: row r's sums go to
// dst[(r/kd)·outer + (r%kd)·dstStride:] (models.TangentBatcher). Each sum of hw values
// is taken in the fixed order rowSumStripes(hw) sets, whatever the launch: for
// S = rowSumStripes(hw) > 1, k_row_sums_part sums the S stripes k ≡ s (mod S) of
// every (r, c), each in order of k, into b.rowPart (a warp reads consecutive floats),
// then k_row_sums adds each (r, c)'s S stripe sums in order of s (two launches);
// for S = 1 k_row_sums sums the hw values in order (one launch).
func (b *Backend) RowSumsBlocked(rows, kd, C, hw int, src []float32, srcStride int, dst []float32, dstStride, outer int) {
	S := rowSumStripes(hw)
	if S == 1 {
		b.op("k_row_sums", rows*C, func() []any {
			return []any{rows, kd, C, hw, b.dev(src, false), srcStride, b.dev(dst, true), dstStride, int64(outer)}
		})
		return
	}
	if rows <= 0 || C <= 0 || !b.begin() {
		return
	}
	defer b.end()
	// A larger buffer replaces a smaller one, which stays allocated (a captured graph
	// may still name it).
	if rows*C*S > math.MaxInt32 {
		b.fail(fmt.Errorf("cuda: k_row_sums_part: %d·%d·%d stripes exceed the kernel's 32-bit sizes", rows, C, S))
		return
	}
	if !growScratch(b, &b.rowPart, rows*C*S) {
		return
	}
	part := unsafe.Pointer(unsafe.SliceData(b.rowPart))
	ps, pd := b.dev(src, false), b.dev(dst, true)
	if b.err != nil {
		return
	}
	b.launch("k_row_sums_part", rows*C*S, rows, C, hw, S, ps, srcStride, part)
	b.launch("k_row_sums", rows*C, rows, kd, C, S, part, C*S, pd, dstStride, int64(outer))
}

// rowSumStripes is the number of stripes RowSumsBlocked splits a sum of hw values
// into: 1 (one thread sums them in order) below 64 values, else the power of two
// S ∈ {8, 16, 32} nearest √hw from above (8 for hw ≤ 64, 16 up to 256, then 32), so
// that a thread's ⌈hw/S⌉ loads of the first pass and S of the second stay balanced.
// It depends on hw alone, so every launch and device sums alike.
func rowSumStripes(hw int) int {
	if hw < 64 {
		return 1
	}
	S := 8
	for S < 32 && S*S < hw {
		S *= 2
	}
	return S
}

// SparseConvForward writes the conv (no bias) of rows one-hot inputs val[r]·e_{idx[r]}.
func (b *Backend) SparseConvForward(g models.ConvGeom, outC, rows int, idx []int, val, W, out []float32) {
	n := rows * outC * g.HWo()
	b.op("k_sparse_conv_fwd", n, func() []any {
		return []any{g.InC, g.H, g.W, g.KH, g.KW, g.Stride, g.PadT, g.PadL, g.OutH, g.OutW, outC, rows,
			b.int32s(idx[:rows]), b.dev(val[:rows], false), b.dev(W, false), b.dev(out[:n], true)}
	})
}

// SparseDenseForward writes W applied to rows one-hot inputs val[r]·e_{idx[r]}.
func (b *Backend) SparseDenseForward(inN, outN, rows int, idx []int, val, W, out []float32) {
	n := rows * outN
	b.op("k_sparse_dense_fwd", n, func() []any {
		return []any{inN, outN, rows, b.int32s(idx[:rows]), b.dev(val[:rows], false), b.dev(W, false), b.dev(out[:n], true)}
	})
}

// SparseConvGradScatter adds the one-hot inputs' terms of kc conv weight-gradient
// tangents (direction j at gw[j·nW:]).
func (b *Backend) SparseConvGradScatter(g models.ConvGeom, outC, kc int, idx []int, val, D, gw []float32, nW int) {
	b.SparseConvGradScatterRows(g, outC, kc, kc, idx, val, D, 0, gw, nW, 0)
}

// SparseConvGradScatterRows is SparseConvGradScatter for rows = samples × kd
// directions: row j belongs to sample j/kd, whose D is at D[(j/kd)·dStride:] and whose
// gradient tangents start at gw[(j/kd)·gStride:] (models.TangentBatcher).
func (b *Backend) SparseConvGradScatterRows(g models.ConvGeom, outC, rows, kd int, idx []int, val, D []float32, dStride int, gw []float32, nW, gStride int) {
	b.op("k_sparse_conv_grad", rows*outC*g.KH*g.KW, func() []any {
		return []any{g.InC, g.H, g.W, g.KH, g.KW, g.Stride, g.PadT, g.PadL, g.OutH, g.OutW, outC, rows, kd,
			b.int32s(idx[:rows]), b.dev(val[:rows], false), b.dev(D, false), dStride, b.dev(gw, true), nW, int64(gStride)}
	})
}

// SparseDenseGradScatter adds the one-hot inputs' terms of kc dense weight-gradient
// tangents.
func (b *Backend) SparseDenseGradScatter(inN, outN, kc int, idx []int, val, D, gw []float32, nW int) {
	b.SparseDenseGradScatterRows(inN, outN, kc, kc, idx, val, D, 0, gw, nW, 0)
}

// SparseDenseGradScatterRows is SparseDenseGradScatter for rows = samples × kd
// directions (see SparseConvGradScatterRows).
func (b *Backend) SparseDenseGradScatterRows(inN, outN, rows, kd int, idx []int, val, D []float32, dStride int, gw []float32, nW, gStride int) {
	b.op("k_sparse_dense_grad", rows*outN, func() []any {
		return []any{inN, outN, rows, kd, b.int32s(idx[:rows]), b.dev(val[:rows], false), b.dev(D, false), dStride,
			b.dev(gw, true), nW, int64(gStride)}
	})
}

// ScaledRowSum adds Σ_r scale[r]·x[r·P:(r+1)·P] to acc, summed in double on the
// device.
func (b *Backend) ScaledRowSum(rows, P int, scale []float64, x []float32, acc []float64) {
	if rows <= 0 || P <= 0 || !b.begin() {
		return
	}
	defer b.end()
	px := b.dev(x[:rows*P], false)
	if b.err != nil {
		return
	}
	if b.plain {
		// The scales may be device memory (the network's clip factors) or host values;
		// the scratch holds uploaded scales, then the sum when acc is on the host.
		d := b.float64s(rows + P)
		if d == nil {
			return
		}
		pd := unsafe.Pointer(unsafe.SliceData(d))
		ps := pd
		if b.ownsF64(scale[:rows]) {
			ps = unsafe.Pointer(unsafe.SliceData(scale))
		} else {
			b.copyIn(ps, unsafe.Pointer(unsafe.SliceData(scale)), 8*rows)
		}
		if b.ownsF64(acc[:P]) {
			b.launch("k_scaled_row_sum_add", P, rows, P, ps, px, unsafe.Pointer(unsafe.SliceData(acc)))
			return
		}
		sum := unsafe.Add(pd, 8*rows)
		b.launch("k_scaled_row_sum", P, rows, P, ps, px, sum)
		h := b.hostFloat64s(P)
		b.synced = true
		if !b.copyOut(unsafe.Pointer(unsafe.SliceData(h)), sum, 8*P) {
			return
		}
		for p, v := range h {
			acc[p] += v
		}
		return
	}
	d := b.float64s(rows + P)
	if d == nil {
		return
	}
	copy(d, scale[:rows])
	ps := unsafe.Pointer(unsafe.SliceData(d))
	b.launch("k_scaled_row_sum", P, rows, P, ps, px, unsafe.Add(ps, 8*rows))
	if b.err != nil {
		return
	}
	b.synced = true
	if err := b.gd.Sync(); err != nil {
		b.fail(fmt.Errorf("cuda: synchronize: %w", err))
		return
	}
	for p, v := range d[rows : rows+P] {
		acc[p] += v
	}
}

var (
	_ models.Backend[float32]        = (*Backend)(nil)
	_ models.DeviceOps[float32]      = (*Backend)(nil)
	_ models.TangentBatcher[float32] = (*Backend)(nil)
	_ models.BatchedGemmer[float32]  = (*Backend)(nil)
	_ models.RowIm2coler[float32]    = (*Backend)(nil)
	_ models.Chunker                 = (*Backend)(nil)
	_ models.RowSqNormer[float32]    = (*Backend)(nil)
)
