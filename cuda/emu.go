package cuda

/*
#cgo CFLAGS: -O2 -std=gnu11 -fno-strict-aliasing
#cgo LDFLAGS: -lm
#include <stdlib.h>
#include <string.h>
#include "emu_kernels.h"
*/
import "C"

import (
	_ "embed"
	"fmt"
	"sync"
	"unsafe"
)

// The kernel source the emulator compiles (emu_kernels.c includes it). Embedding it
// here makes Go's build cache rebuild the package when it changes, and lets the
// tests check that the committed PTX was compiled from this very source.
//
//go:embed kernels/dpfil.cu
var kernelSource string

//go:embed kernels/hostemu.h
var hostemuSource string

// emuKernels maps kernel names to the emulator's ids (emu_kernels.h).
var emuKernels = map[string]C.int{
	"k_im2col":               C.EMU_K_IM2COL,
	"k_col2im":               C.EMU_K_COL2IM,
	"k_avgpool":              C.EMU_K_AVGPOOL,
	"k_avgpool_back":         C.EMU_K_AVGPOOL_BACK,
	"k_act_fwd":              C.EMU_K_ACT_FWD,
	"k_act_bwd":              C.EMU_K_ACT_BWD,
	"k_act_tangent":          C.EMU_K_ACT_TANGENT,
	"k_blocked_dotsq":        C.EMU_K_BLOCKED_DOTSQ,
	"k_repeat_rows":          C.EMU_K_REPEAT_ROWS,
	"k_sum_rows":             C.EMU_K_SUM_ROWS,
	"k_sum_chunks":           C.EMU_K_SUM_CHUNKS,
	"k_row_sqnorm":           C.EMU_K_ROW_SQNORM,
	"k_zero":                 C.EMU_K_ZERO,
	"k_transpose3":           C.EMU_K_TRANSPOSE3,
	"k_add_bias":             C.EMU_K_ADD_BIAS,
	"k_row_sums":             C.EMU_K_ROW_SUMS,
	"k_row_sums_part":        C.EMU_K_ROW_SUMS_PART,
	"k_sparse_conv_fwd":      C.EMU_K_SPARSE_CONV_FWD,
	"k_sparse_dense_fwd":     C.EMU_K_SPARSE_DENSE_FWD,
	"k_sparse_conv_grad":     C.EMU_K_SPARSE_CONV_GRAD,
	"k_sparse_dense_grad":    C.EMU_K_SPARSE_DENSE_GRAD,
	"k_scaled_row_sum":       C.EMU_K_SCALED_ROW_SUM,
	"k_softmax_xent":         C.EMU_K_SOFTMAX_XENT,
	"k_softmax_xent_tangent": C.EMU_K_SOFTMAX_XENT_TANGENT,
	"k_clip_scale":           C.EMU_K_CLIP_SCALE,
	"k_fil_combine":          C.EMU_K_FIL_COMBINE,
	"k_sum_rows_add":         C.EMU_K_SUM_ROWS_ADD,
	"k_scaled_row_sum_add":   C.EMU_K_SCALED_ROW_SUM_ADD,
	"k_f64_to_f32":           C.EMU_K_F64_TO_F32,
	"k_zero_f64":             C.EMU_K_ZERO_F64,
	"k_channel_affine":       C.EMU_K_CHANNEL_AFFINE,
	"k_gather_f32":           C.EMU_K_GATHER_F32,
	"k_gather_u8":            C.EMU_K_GATHER_U8,
	"k_normals":              C.EMU_K_NORMALS,
	"k_dpsgd_update":         C.EMU_K_DPSGD_UPDATE,
	"k_fil_dotsq_layer":      C.EMU_K_FIL_DOTSQ_LAYER,
	"k_fil_dense":            C.EMU_K_FIL_DENSE,
	"k_fil_dense_terms":      C.EMU_K_FIL_DENSE_TERMS,
	"k_draw_coords":          C.EMU_K_DRAW_COORDS,
	"k_draw_coords_fix":      C.EMU_K_DRAW_COORDS_FIX,
}

// emulator is the CPU Driver: managed memory is C heap memory, a launch runs every
// thread of the grid in order through the host-compiled dpfil.cu, and SGEMM is a
// plain loop accumulated in double. It exists so that the backend and every kernel
// are tested where there is no GPU (CI), against the same float64 reference as the
// CPU backend; it is far too slow for real work.
type emulator struct {
	mu         sync.Mutex // the emulated launch geometry is process-global C state
	closed     bool
	hostEvents // EventTimer: the host clock (events.go)
	// CUDA graphs: while capturing, work is recorded in cap instead of run; a graph
	// is its recorded work, run again by LaunchGraph.
	gmu       sync.Mutex
	capturing bool
	cap       []func() error
	graphs    map[Graph][]func() error
	nextGraph Graph
}

// run runs f now, or records it while capturing.
func (e *emulator) run(f func() error) error {
	e.gmu.Lock()
	if e.capturing {
		e.cap = append(e.cap, f)
		e.gmu.Unlock()
		return nil
	}
	e.gmu.Unlock()
	return f()
}

// noCapture fails what may not be captured (a wait, a copy from pageable memory).
func (e *emulator) noCapture(what string) error {
	e.gmu.Lock()
	defer e.gmu.Unlock()
	if e.capturing {
		return fmt.Errorf("cuda emulator: %s while capturing a graph", what)
	}
	return nil
}

// NewEmulator returns the CPU emulator driver.
func NewEmulator() Driver { return &emulator{} }

func (e *emulator) Name() string { return "emulator" }

func (e *emulator) AllocManaged(n int) (unsafe.Pointer, error) { return cAlloc(n, "", 0) }

// cAlloc is n bytes of C heap memory, every byte set to fill; kind ("" or "host ")
// names the bytes in errors.
func cAlloc(n int, kind string, fill byte) (unsafe.Pointer, error) {
	if n <= 0 {
		return nil, fmt.Errorf("cuda emulator: allocate %d %sbytes", n, kind)
	}
	p := C.malloc(C.size_t(n))
	if p == nil {
		return nil, fmt.Errorf("cuda emulator: out of memory allocating %d %sbytes", n, kind)
	}
	C.memset(p, C.int(fill), C.size_t(n))
	return p, nil
}

// Alloc is the emulator's plain device memory: C heap memory filled with 0xff bytes
// (NaN floats, −1 ints), since cuMemAlloc does not zero it. The host could address
// it here; the stand-in driver is where a host access to device memory crashes.
func (e *emulator) Alloc(n int) (unsafe.Pointer, error) { return cAlloc(n, "", 0xff) }

// MemsetZero zeroes n bytes (at once: the emulator runs everything in issue order).
func (e *emulator) MemsetZero(p unsafe.Pointer, n int) error {
	if n > 0 {
		return e.run(func() error { C.memset(p, 0, C.size_t(n)); return nil })
	}
	return nil
}

// CopyHtoD, CopyDtoD and CopyDtoH copy at once (CopyHtoD's source may be reused at
// once, so it cannot be captured: CopyHtoDPinned can).
func (e *emulator) CopyHtoD(dst, src unsafe.Pointer, n int) error {
	return e.copyNow("a copy from pageable host memory", dst, src, n)
}
func (e *emulator) CopyDtoD(dst, src unsafe.Pointer, n int) error { return e.copyQueued(dst, src, n) }
func (e *emulator) CopyDtoH(dst, src unsafe.Pointer, n int) error {
	return e.copyNow("a copy to the host (a wait)", dst, src, n)
}

// CopyHtoDPinned and CopyDtoHAsync copy when they run (at once, or at each launch
// of the graph that captured them).
func (e *emulator) CopyHtoDPinned(dst, src unsafe.Pointer, n int) error {
	return e.copyQueued(dst, src, n)
}
func (e *emulator) CopyDtoHAsync(dst, src unsafe.Pointer, n int) error {
	return e.copyQueued(dst, src, n)
}

// copyNow copies at once; during a capture it fails, naming the copy (what).
func (e *emulator) copyNow(what string, dst, src unsafe.Pointer, n int) error {
	if err := e.noCapture(what); err != nil {
		return err
	}
	return e.copy(dst, src, n)
}

// copyQueued copies when the queued work runs (at once, or captured into a graph).
func (e *emulator) copyQueued(dst, src unsafe.Pointer, n int) error {
	return e.run(func() error { return e.copy(dst, src, n) })
}

// AllocHost is C heap memory (the emulator has no page-locking to do).
func (e *emulator) AllocHost(n int) (unsafe.Pointer, error) { return cAlloc(n, "host ", 0) }

func (e *emulator) FreeHost(p unsafe.Pointer) error {
	C.free(p)
	return nil
}

// BeginCapture starts recording: work is kept, not run, until EndCapture.
func (e *emulator) BeginCapture() error {
	e.gmu.Lock()
	defer e.gmu.Unlock()
	if e.capturing {
		return fmt.Errorf("cuda emulator: begin capture: already capturing")
	}
	e.capturing, e.cap = true, nil
	return nil
}

// EndCapture returns the recorded work as a graph.
func (e *emulator) EndCapture() (Graph, error) {
	e.gmu.Lock()
	defer e.gmu.Unlock()
	if !e.capturing {
		return 0, fmt.Errorf("cuda emulator: end capture: not capturing")
	}
	e.capturing = false
	if e.graphs == nil {
		e.graphs = map[Graph][]func() error{}
	}
	e.nextGraph++
	e.graphs[e.nextGraph], e.cap = e.cap, nil
	return e.nextGraph, nil
}

// LaunchGraph runs a graph's recorded work in order.
func (e *emulator) LaunchGraph(g Graph) error {
	e.gmu.Lock()
	ops, ok := e.graphs[g]
	capturing := e.capturing
	e.gmu.Unlock()
	if !ok || capturing {
		return fmt.Errorf("cuda emulator: launch graph %d: unknown, or launched while capturing", g)
	}
	for _, f := range ops {
		if err := f(); err != nil {
			return fmt.Errorf("cuda emulator: graph %d: %w", g, err)
		}
	}
	return nil
}

func (e *emulator) DestroyGraph(g Graph) error {
	if !forget(&e.gmu, e.graphs, g) {
		return fmt.Errorf("cuda emulator: destroy graph %d: unknown", g)
	}
	return nil
}

func (e *emulator) copy(dst, src unsafe.Pointer, n int) error {
	if n < 0 || n > 0 && (dst == nil || src == nil) {
		return fmt.Errorf("cuda emulator: copy %d bytes from %p to %p", n, src, dst)
	}
	if n > 0 {
		C.memmove(dst, src, C.size_t(n))
	}
	return nil
}

func (e *emulator) Free(p unsafe.Pointer) error {
	C.free(p)
	return nil
}

func (e *emulator) Launch(name string, grid, block Dim3, args []uint64) error {
	id, ok := emuKernels[name]
	if !ok {
		return fmt.Errorf("cuda emulator: no kernel %q", name)
	}
	if grid.X*grid.Y*grid.Z == 0 || block.X*block.Y*block.Z == 0 {
		return fmt.Errorf("cuda emulator: launch %s with empty grid %v or block %v", name, grid, block)
	}
	args = append([]uint64(nil), args...) // the caller may reuse its slots
	return e.run(func() error {
		e.mu.Lock()
		defer e.mu.Unlock()
		if e.closed {
			return fmt.Errorf("cuda emulator: launch %s after Close", name)
		}
		a := (*C.uint64_t)(C.malloc(C.size_t(8 * max(1, len(args)))))
		defer C.free(unsafe.Pointer(a))
		copy(unsafe.Slice((*uint64)(unsafe.Pointer(a)), len(args)), args)
		if C.emu_launch(id, C.uint(grid.X), C.uint(grid.Y), C.uint(grid.Z), C.uint(block.X), C.uint(block.Y), C.uint(block.Z), a) != 0 {
			return fmt.Errorf("cuda emulator: kernel %s failed", name)
		}
		return nil
	})
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

func (e *emulator) Sgemm(transA, transB bool, m, n, k int, alpha float32, a unsafe.Pointer, lda int, b unsafe.Pointer, ldb int, beta float32, c unsafe.Pointer, ldc int) error {
	// The GPU driver's argument checks (cuBLAS's, in row-major terms), so that a call
	// the GPU would refuse fails here too.
	if _, err := colMajorGemm(transA, transB, m, n, k, lda, ldb, ldc); err != nil {
		return fmt.Errorf("cuda emulator: %w", err)
	}
	if m == 0 || n == 0 {
		return nil
	}
	return e.run(func() error {
		C.emu_sgemm(cbool(transA), cbool(transB), C.int(m), C.int(n), C.int(k), C.float(alpha),
			(*C.float)(a), C.int(lda), (*C.float)(b), C.int(ldb), C.float(beta), (*C.float)(c), C.int(ldc))
		return nil
	})
}

func (e *emulator) SgemmStridedBatched(transA, transB bool, m, n, k int, alpha float32, a unsafe.Pointer, lda, strideA int, b unsafe.Pointer, ldb, strideB int, beta float32, c unsafe.Pointer, ldc, strideC, batch int) error {
	if _, err := colMajorGemmStrided(transA, transB, m, n, k, lda, strideA, ldb, strideB, ldc, strideC, batch); err != nil {
		return fmt.Errorf("cuda emulator: %w", err)
	}
	for i := 0; i < batch; i++ {
		err := e.Sgemm(transA, transB, m, n, k, alpha, unsafe.Add(a, 4*i*strideA), lda,
			unsafe.Add(b, 4*i*strideB), ldb, beta, unsafe.Add(c, 4*i*strideC), ldc)
		if err != nil {
			return err
		}
	}
	return nil
}

func (e *emulator) Sync() error { return e.noCapture("a synchronisation") }

// emulatorMemory is the device memory the emulator reports (MemInfo): 16 GiB, all of
// it free. The emulator's memory is the host's; chunks never exceed the batch, so
// the figure only bounds the chunk budget.
const emulatorMemory = 16 << 30

// MemInfo reports emulatorMemory free of emulatorMemory.
func (e *emulator) MemInfo() (free, total int64, err error) {
	return emulatorMemory, emulatorMemory, nil
}

func (e *emulator) Close() error {
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	return nil
}
