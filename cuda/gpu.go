//go:build dpfil_cuda

package cuda

// The GPU driver: the Driver interface on a real NVIDIA GPU, through the CUDA driver
// API (gorgonia.org/cu) and cuBLAS (dlopen, cublas.go).
//
// For GPU hosts. gorgonia.org/cu initialises the driver in its package init() and
// calls os.Exit(1) when that fails, so a binary built with -tags dpfil_cuda exits at
// start on a machine without an NVIDIA driver or GPU; there can be no "is a GPU
// available?" probe in it. Binaries built with make cuda are carried to a GPU host and
// run there through scripts/gpu-run.sh. Without a GPU, CI runs them unmodified
// against the strict stand-in libcuda.so.1 of cuda/standin (make cuda-standin-check).

import (
	_ "embed"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"gorgonia.org/cu"
)

// ptxModule is the engine's kernels, kernels/dpfil.cu compiled by `make ptx`.
//
//go:embed kernels/dpfil.ptx
var ptxModule string

// minComputeCapability is the PTX target of `make ptx` (compute_75, Turing); the
// driver JIT-compiles the PTX for the device at hand, which must be at least that.
const minComputeCapability = 75

// GPU is the Driver of one NVIDIA GPU. Every method may be called from any goroutine:
// each binds the device's primary context to its (locked) OS thread first. Kernels,
// GEMMs, memsets and copies go to the driver's own stream (non-blocking, so that it
// can be captured into a CUDA graph; cuBLAS is bound to it with its own workspace)
// in issue order; Sync waits for them.
type GPU struct {
	dev      cu.Device
	ctx      cu.CUContext
	mod      cu.Module
	blas     *cublas
	name     string
	peak     float64          // peak FP32 GFLOP/s (0: unknown), see PeakFP32GFLOPs
	params   map[string][]int // kernel name → parameter sizes, from the PTX; read-only
	ordinal  int
	managed  bool         // the device can allocate managed memory
	state    sync.RWMutex // held shared by every call, exclusively by Close
	closed   bool         // guarded by state
	fnMu     sync.Mutex
	fnByName map[string]cu.Function // guarded by fnMu
	// The upload ring (gpu_pinned.go), guarded by pinMu: page-locked memory, the bytes
	// of it queued copies may still read, and the waits it forced.
	pinMu       sync.Mutex
	pin         unsafe.Pointer
	pinUsed     int
	pinFailed   bool
	hiddenSyncs int64
	events      gpuEvents // EventTimer (gpu_events.go)
	// The stream every launch, copy, memset and GEMM goes to, cuBLAS's workspace
	// (device memory), and the instantiated CUDA graphs by handle (gpu_graph.go,
	// guarded by graphMu).
	stream    cu.Stream
	blasWS    unsafe.Pointer
	graphMu   sync.Mutex
	graphs    map[Graph]unsafe.Pointer
	lastGraph Graph
	capturing bool // guarded by pinMu: CopyHtoD (the ring) may not be captured
}

// OpenGPU opens GPU number ordinal (0-based, in CUDA's order): it uses the device's
// primary context (the one cuBLAS, a runtime-API library, uses too; retained once per
// process, see gpu_context.go), loads the embedded PTX and cuBLAS. The returned Driver
// is a *GPU.
func OpenGPU(ordinal int) (Driver, error) {
	params, err := ptxEntryParams(ptxModule)
	if err != nil {
		return nil, fmt.Errorf("cuda: embedded PTX: %w", err)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	n, err := cu.NumDevices()
	if err != nil {
		return nil, fmt.Errorf("cuda: count devices: %w", err)
	}
	if ordinal < 0 || ordinal >= n {
		return nil, fmt.Errorf("cuda: device %d does not exist (%d CUDA device(s) present)", ordinal, n)
	}
	dev, err := cu.GetDevice(ordinal)
	if err != nil {
		return nil, fmt.Errorf("cuda: device %d: %w", ordinal, err)
	}
	devName, err := dev.Name()
	if err != nil {
		return nil, fmt.Errorf("cuda: device %d: name: %w", ordinal, err)
	}
	major, minor, err := dev.ComputeCapability()
	if err != nil {
		return nil, fmt.Errorf("cuda: device %d (%s): compute capability: %w", ordinal, devName, err)
	}
	if major*10+minor < minComputeCapability {
		return nil, fmt.Errorf("cuda: device %d (%s) has compute capability %d.%d; dpfil's kernels need %d.%d (Turing) or newer",
			ordinal, devName, major, minor, minComputeCapability/10, minComputeCapability%10)
	}
	managed, err := dev.Attribute(cu.ManagedMemory)
	if err != nil {
		return nil, fmt.Errorf("cuda: device %d (%s): managed-memory attribute: %w", ordinal, devName, err)
	}

	ctx, err := primaryContext(dev, ordinal) // retained once per process (gpu_context.go)
	if err != nil {
		return nil, fmt.Errorf("cuda: device %d (%s): %w", ordinal, devName, err)
	}
	g := &GPU{dev: dev, ctx: ctx, params: params, ordinal: ordinal, fnByName: map[string]cu.Function{}, managed: managed != 0}
	fail := func(err error) (Driver, error) {
		if g.blas != nil {
			_ = g.blas.close()
		}
		if g.blasWS != nil {
			_ = cu.MemFree(cu.DevicePtr(uintptr(g.blasWS)))
		}
		if g.stream != (cu.Stream{}) {
			_ = g.stream.Destroy()
		}
		if g.mod != (cu.Module{}) {
			_ = g.mod.Unload()
		}
		return nil, err
	}
	if err := cu.SetCurrentContext(ctx); err != nil {
		return fail(fmt.Errorf("cuda: device %d: make the primary context current: %w", ordinal, err))
	}
	if g.mod, err = loadPTX(ptxModule); err != nil {
		return fail(fmt.Errorf("cuda: device %d (%s): load the kernels' PTX (compute_75, from nvcc 11.8; needs an NVIDIA driver ≥ 520): %w",
			ordinal, devName, err))
	}
	if g.stream, err = cu.MakeStream(cu.NonBlocking); err != nil {
		return fail(fmt.Errorf("cuda: device %d (%s): create a stream: %w", ordinal, devName, err))
	}
	if g.blas, err = openCublas(); err != nil {
		return fail(err)
	}
	ws, err := cu.MemAlloc(cublasWorkspaceBytes)
	if err != nil {
		return fail(fmt.Errorf("cuda: device %d (%s): cuBLAS workspace: %w", ordinal, devName, err))
	}
	g.blasWS = *(*unsafe.Pointer)(unsafe.Pointer(&ws))
	if err := g.blas.bind(*(*unsafe.Pointer)(unsafe.Pointer(&g.stream)), g.blasWS, cublasWorkspaceBytes); err != nil {
		return fail(fmt.Errorf("cuda: device %d (%s): %w", ordinal, devName, err))
	}
	g.name = fmt.Sprintf("%s (sm_%d%d) cuBLAS %s", devName, major, minor, cublasVersionString(g.blas.version))
	// Best effort: CU_DEVICE_ATTRIBUTE_CLOCK_RATE is deprecated in CUDA 13, and a
	// missing peak only leaves the benchmark's "% of FP32 floor" out.
	if a, err := dev.Attributes(cu.MultiprocessorCount, cu.ClockRate); err == nil {
		g.peak = peakFP32GFLOPs(a[0], a[1], major, minor)
	}
	return g, nil
}

// loadPTX loads a module from PTX text into the current context, with a JIT error log
// (cuModuleLoadDataEx, CU_JIT_ERROR_LOG_BUFFER), so that a failure says why: the
// driver's PTX compiler's messages (a too-old driver, an unsupported target, an
// invalid instruction) follow the error code.
func loadPTX(ptx string) (cu.Module, error) {
	errLog := make([]byte, 16<<10)
	mod, err := cu.LoadDataEx(ptx, &cu.JITErrorLogBuffer{Buffer: errLog})
	if err != nil {
		if msg := jitLog(errLog); msg != "" {
			return mod, fmt.Errorf("%w; JIT error log:\n%s", err, msg)
		}
		return mod, fmt.Errorf("%w (the JIT error log is empty)", err)
	}
	return mod, nil
}

// PeakFP32GFLOPs is the device's peak FP32 rate (non-tensor-core FMA) in GFLOP/s:
// SMs × FP32 lanes per SM × 2 × maximum clock, read when the driver was opened; 0
// when the architecture or the clock is unknown.
func (g *GPU) PeakFP32GFLOPs() float64 { return g.peak }

// withHandle runs f, as op (see enter), on the driver object that lookup finds for
// handle h (an event, an instantiated graph); a failed lookup is returned as it is.
func withHandle[H, V any](g *GPU, op string, h H, lookup func(H) (V, error), f func(V) error) error {
	leave, err := g.enter(op)
	if err != nil {
		return err
	}
	defer leave()
	v, err := lookup(h)
	if err != nil {
		return err
	}
	return f(v)
}

// enter locks the calling goroutine to its OS thread, makes the device's context
// current there and holds the driver open; the returned function undoes all three.
func (g *GPU) enter(op string) (func(), error) {
	g.state.RLock()
	if g.closed {
		g.state.RUnlock()
		return nil, fmt.Errorf("cuda: %s: the GPU driver is closed", op)
	}
	runtime.LockOSThread()
	if err := cu.SetCurrentContext(g.ctx); err != nil {
		runtime.UnlockOSThread()
		g.state.RUnlock()
		return nil, fmt.Errorf("cuda: %s: make the context current: %w", op, err)
	}
	return func() {
		runtime.UnlockOSThread()
		g.state.RUnlock()
	}, nil
}

// Name is the device's name, its compute capability and the cuBLAS version, e.g.
// "NVIDIA H100 80GB HBM3 (sm_90) cuBLAS 13.1.0".
func (g *GPU) Name() string { return g.name }

// CublasPath is the cuBLAS library that was loaded (a path or a soname).
func (g *GPU) CublasPath() string { return g.blas.path }

// Alloc returns n > 0 bytes of plain device memory (cuMemAlloc), not initialised; the
// host must not address it (only the copies below).
func (g *GPU) Alloc(n int) (unsafe.Pointer, error) {
	if n <= 0 {
		return nil, fmt.Errorf("cuda: alloc: size %d bytes", n)
	}
	leave, err := g.enter("alloc")
	if err != nil {
		return nil, err
	}
	defer leave()
	dptr, err := cu.MemAlloc(int64(n))
	if err != nil {
		return nil, fmt.Errorf("cuda: alloc %d bytes: %w", n, err)
	}
	// A device address held as a pointer (outside the Go heap: the collector ignores
	// it); it is only ever passed back to the driver.
	return *(*unsafe.Pointer)(unsafe.Pointer(&dptr)), nil
}

// MemsetZero queues zeroing n bytes at p (cuMemsetD8Async on the driver's stream).
func (g *GPU) MemsetZero(p unsafe.Pointer, n int) error {
	return g.queue("memset", n, func() error {
		return cu.MemsetD8Async(cu.DevicePtr(uintptr(p)), 0, int64(n), g.stream)
	}, func() string { return fmt.Sprintf("memset %d bytes at %p", n, p) })
}

// queue runs f, which queues an operation on n bytes on the driver's stream (and may
// wait for it), as op (nothing when n ≤ 0), its error wrapped as "cuda: what()"
// (formatted only then).
func (g *GPU) queue(op string, n int, f func() error, what func() string) error {
	if n <= 0 {
		return nil
	}
	leave, err := g.enter(op)
	if err != nil {
		return err
	}
	defer leave()
	if err := f(); err != nil {
		return fmt.Errorf("cuda: %s: %w", what(), err)
	}
	return nil
}

// CopyHtoD queues a copy from host memory on the driver's stream
// (cuMemcpyHtoDAsync) through the page-locked upload ring, so the caller may reuse src
// at once and the copy does not wait for the device.
func (g *GPU) CopyHtoD(dst, src unsafe.Pointer, n int) error {
	return g.queue("copy to device", n, func() error {
		g.pinMu.Lock()
		defer g.pinMu.Unlock()
		return g.stageHtoD(dst, src, n)
	}, func() string { return fmt.Sprintf("copy %d bytes to the device", n) })
}

// CopyDtoD queues a device-to-device copy on the driver's stream.
func (g *GPU) CopyDtoD(dst, src unsafe.Pointer, n int) error {
	return g.queue("copy on the device", n, func() error {
		return cu.MemcpyDtoDAsync(cu.DevicePtr(uintptr(dst)), cu.DevicePtr(uintptr(src)), int64(n), g.stream)
	}, func() string { return fmt.Sprintf("copy %d bytes on the device", n) })
}

// CopyDtoH copies device memory to the host after all queued work (a copy queued on
// the driver's stream, then a wait for the stream) and reports the first asynchronous
// error.
func (g *GPU) CopyDtoH(dst, src unsafe.Pointer, n int) error {
	return g.queue("copy to the host", n, func() error {
		// Held across the wait: no upload is queued meanwhile, so once it returns every
		// queued copy has read its ring bytes and the ring is empty.
		g.pinMu.Lock()
		defer g.pinMu.Unlock()
		if err := cu.MemcpyDtoHAsync(dst, cu.DevicePtr(uintptr(src)), int64(n), g.stream); err != nil {
			return err
		}
		if err := g.stream.Synchronize(); err != nil {
			return err
		}
		g.pinUsed = 0
		return nil
	}, func() string { return fmt.Sprintf("copy %d bytes to the host", n) })
}

// AllocManaged returns n > 0 zeroed bytes of managed memory. It refuses more than
// the device's free memory: oversubscribed managed memory can stall the GPU rather
// than fail.
func (g *GPU) AllocManaged(n int) (unsafe.Pointer, error) {
	if n <= 0 {
		return nil, fmt.Errorf("cuda: alloc managed: size %d bytes", n)
	}
	if !g.managed {
		return nil, fmt.Errorf("cuda: alloc managed: device %d cannot allocate managed memory (use plain device memory)", g.ordinal)
	}
	leave, err := g.enter("alloc managed")
	if err != nil {
		return nil, err
	}
	defer leave()
	size := int64(n)
	free, total, err := cu.MemInfo()
	if err != nil {
		return nil, fmt.Errorf("cuda: alloc managed %d bytes: memory info: %w", n, err)
	}
	if size > free {
		return nil, fmt.Errorf("cuda: alloc managed %d bytes: only %d of the device's %d bytes are free", n, free, total)
	}
	dptr, err := cu.MemAllocManaged(size, cu.AttachGlobal)
	if err != nil {
		return nil, fmt.Errorf("cuda: alloc managed %d bytes: %w", n, err)
	}
	if err := cu.MemsetD8Async(dptr, 0, size, g.stream); err != nil {
		_ = cu.MemFree(dptr)
		return nil, fmt.Errorf("cuda: alloc managed %d bytes: zero it: %w", n, err)
	}
	if err := g.stream.Synchronize(); err != nil {
		_ = cu.MemFree(dptr)
		return nil, fmt.Errorf("cuda: alloc managed %d bytes: synchronize: %w", n, err)
	}
	// A device address held as a pointer: managed memory is host-addressable, and it
	// lies outside the Go heap, so the garbage collector ignores it.
	return *(*unsafe.Pointer)(unsafe.Pointer(&dptr)), nil
}

// Free releases memory from Alloc or AllocManaged; nil is a no-op.
func (g *GPU) Free(p unsafe.Pointer) error {
	if p == nil {
		return nil
	}
	leave, err := g.enter("free")
	if err != nil {
		return err
	}
	defer leave()
	if err := cu.MemFree(cu.DevicePtr(uintptr(p))); err != nil {
		return fmt.Errorf("cuda: free %p: %w", p, err)
	}
	return nil
}

// function returns kernel name, looked up in the module once.
func (g *GPU) function(name string) (cu.Function, error) {
	g.fnMu.Lock()
	defer g.fnMu.Unlock()
	if fn, ok := g.fnByName[name]; ok {
		return fn, nil
	}
	fn, err := g.mod.Function(name)
	if err != nil {
		return cu.Function{}, err
	}
	g.fnByName[name] = fn
	return fn, nil
}

// Launch runs kernel name on grid×block threads on the driver's stream. Each argument
// slot is passed by address; the kernel reads its parameter's size (4 or 8 bytes) from
// the slot's low bytes. Errors inside the kernel surface at the next Sync.
func (g *GPU) Launch(name string, grid, block Dim3, args []uint64) error {
	sizes, ok := g.params[name]
	if !ok {
		return fmt.Errorf("cuda: launch %s: no such kernel in the embedded PTX", name)
	}
	if err := checkLaunchArgs(name, sizes, len(args)); err != nil {
		return fmt.Errorf("cuda: launch %s: %w", name, err)
	}
	if grid.X == 0 || grid.Y == 0 || grid.Z == 0 || block.X == 0 || block.Y == 0 || block.Z == 0 {
		return fmt.Errorf("cuda: launch %s: empty grid %v or block %v", name, grid, block)
	}
	leave, err := g.enter("launch " + name)
	if err != nil {
		return err
	}
	defer leave()
	fn, err := g.function(name)
	if err != nil {
		return fmt.Errorf("cuda: launch %s: look up the kernel: %w", name, err)
	}
	params := make([]unsafe.Pointer, len(args))
	for i := range args {
		params[i] = unsafe.Pointer(&args[i])
	}
	if err := fn.Launch(int(grid.X), int(grid.Y), int(grid.Z), int(block.X), int(block.Y), int(block.Z),
		0, g.stream, params); err != nil {
		return fmt.Errorf("cuda: launch %s (grid %v, block %v): %w", name, grid, block, err)
	}
	return nil
}

// Sgemm computes C = alpha·op(A)·op(B) + beta·C for row-major float32 matrices with
// cuBLAS in true fp32 (CUBLAS_DEFAULT_MATH, no TF32), on the driver's stream.
func (g *GPU) Sgemm(transA, transB bool, m, n, k int, alpha float32, a unsafe.Pointer, lda int, b unsafe.Pointer, ldb int, beta float32, c unsafe.Pointer, ldc int) error {
	leave, err := g.enter("sgemm")
	if err != nil {
		return err
	}
	defer leave()
	if err := g.blas.sgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc); err != nil {
		return fmt.Errorf("cuda: %w (m %d, n %d, k %d)", err, m, n, k)
	}
	return nil
}

// SgemmStridedBatched computes, for i < batch, C_i = alpha·op(A_i)·op(B_i) + beta·C_i
// with the row-major convention of Sgemm, where A_i starts strideA·i float32s after a
// (likewise B_i, C_i). A stride of 0 shares one A or B across the batch.
func (g *GPU) SgemmStridedBatched(transA, transB bool, m, n, k int, alpha float32, a unsafe.Pointer, lda, strideA int, b unsafe.Pointer, ldb, strideB int, beta float32, c unsafe.Pointer, ldc, strideC, batch int) error {
	leave, err := g.enter("sgemm strided batched")
	if err != nil {
		return err
	}
	defer leave()
	if err := g.blas.sgemmStridedBatched(transA, transB, m, n, k, alpha, a, lda, strideA, b, ldb, strideB, beta, c, ldc, strideC, batch); err != nil {
		return fmt.Errorf("cuda: %w (m %d, n %d, k %d, batch %d)", err, m, n, k, batch)
	}
	return nil
}

// MemInfo reports the device's free and total memory (cuMemGetInfo).
func (g *GPU) MemInfo() (free, total int64, err error) {
	leave, err := g.enter("memory info")
	if err != nil {
		return 0, 0, err
	}
	defer leave()
	if free, total, err = cu.MemInfo(); err != nil {
		return 0, 0, fmt.Errorf("cuda: memory info: %w", err)
	}
	return free, total, nil
}

// Sync waits for every kernel and GEMM issued so far and reports the first
// asynchronous error (a fault in a kernel, say).
func (g *GPU) Sync() error {
	leave, err := g.enter("sync")
	if err != nil {
		return err
	}
	defer leave()
	g.pinMu.Lock()
	defer g.pinMu.Unlock()
	if err := g.stream.Synchronize(); err != nil {
		return fmt.Errorf("cuda: sync: %w", err)
	}
	g.pinUsed = 0
	return nil
}

// Close waits for the device, destroys the cuBLAS handle, unloads the kernels and
// frees the upload ring. The device's primary context stays retained for the process
// (gpu_context.go), so a later OpenGPU works. Further calls fail; a second Close is a
// no-op.
func (g *GPU) Close() error {
	g.state.Lock()
	defer g.state.Unlock()
	if g.closed {
		return nil
	}
	g.closed = true
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var errs []error
	if err := cu.SetCurrentContext(g.ctx); err != nil {
		errs = append(errs, fmt.Errorf("make the context current: %w", err))
	}
	if err := cu.Synchronize(); err != nil {
		errs = append(errs, fmt.Errorf("synchronize: %w", err))
	}
	if err := g.blas.close(); err != nil {
		errs = append(errs, err)
	}
	if err := cu.MemFree(cu.DevicePtr(uintptr(g.blasWS))); err != nil {
		errs = append(errs, fmt.Errorf("free the cuBLAS workspace: %w", err))
	}
	if err := g.stream.Destroy(); err != nil {
		errs = append(errs, fmt.Errorf("destroy the stream: %w", err))
	}
	if g.pin != nil {
		if err := memFreeHost(g.pin); err != nil {
			errs = append(errs, err)
		}
		g.pin = nil
	}
	if err := g.mod.Unload(); err != nil {
		errs = append(errs, fmt.Errorf("unload the kernels: %w", err))
	}
	// The primary context stays retained (gpu_context.go): cuBLAS's runtime keeps
	// using it after this handle is gone.
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("cuda: close device %d: %w", g.ordinal, err)
	}
	return nil
}

// Model.PeakGFLOPs finds the peak through this interface.
var _ interface{ PeakFP32GFLOPs() float64 } = (*GPU)(nil)
