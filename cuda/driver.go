// Package cuda runs the dpfil engine on an NVIDIA GPU.
//
// The package has three layers:
//
//   - kernels/dpfil.cu: the engine's own kernels (im2col/col2im, average pooling,
//     tanh/ELU and their first and second derivatives, dot products, clipping,
//     softmax, the batch gather, the counter-based noise and the momentum update),
//     compiled to PTX for compute_75 by `make ptx` and embedded. They are written in
//     a C subset (no shared memory, no barriers, no atomics) so that the same source
//     also compiles with the host C compiler.
//   - Driver: what the backend needs from a device — plain and managed memory, copies,
//     kernel launches, a row-major SGEMM and synchronisation, counted (Counts). Two
//     implementations: the GPU driver (build tag dpfil_cuda: gorgonia.org/cu for the
//     driver API, cuBLAS loaded at run time with dlopen) and the emulator (always
//     built, cgo), which runs the same kernel source on the CPU one thread at a time.
//     The emulator is how the default build tests every kernel and the whole backend
//     against the float64 reference; CI also runs the GPU build against the stand-in
//     driver of cuda/standin.
//   - Backend: models.Backend[float32] over a Driver, so a models.Network (and
//     through it the trainer, FIL accounting and attacks) runs on the device; on
//     plain device memory a Model also keeps a whole DP-SGD run there (resident.go).
package cuda

import (
	"fmt"
	"unsafe"
)

// Dim3 is a CUDA grid or block shape.
type Dim3 struct{ X, Y, Z uint32 }

// Driver is the device interface of the backend. Pointers are device addresses: of
// plain device memory (Alloc), which only the device and the copies touch, or of
// managed memory (AllocManaged), which the host may also read and write while no
// kernel runs. Work goes to one stream in issue order: launches, GEMMs, memsets and
// the copies to the device are queued; CopyDtoH and Sync wait for everything before
// them. Kernel arguments are 8-byte slots (see Arg): ints and floats in the low
// bytes, pointers as addresses.
type Driver interface {
	// Name identifies the device, e.g. "NVIDIA H100 80GB HBM3 (sm_90)" or "emulator".
	Name() string
	// Alloc returns n bytes of plain device memory (cuMemAlloc), not initialised.
	Alloc(n int) (unsafe.Pointer, error)
	// AllocManaged returns n zeroed bytes of managed memory.
	AllocManaged(n int) (unsafe.Pointer, error)
	// Free releases memory from Alloc or AllocManaged.
	Free(p unsafe.Pointer) error
	// MemsetZero queues setting n bytes of device memory at p to 0.
	MemsetZero(p unsafe.Pointer, n int) error
	// CopyHtoD queues a copy of n bytes from host memory src to device memory dst; src
	// may be reused as soon as it returns (the driver stages it).
	CopyHtoD(dst, src unsafe.Pointer, n int) error
	// CopyDtoD queues a copy of n bytes between device memory.
	CopyDtoD(dst, src unsafe.Pointer, n int) error
	// CopyDtoH waits for the queued work, then copies n bytes of device memory src to
	// host memory dst: a synchronisation.
	CopyDtoH(dst, src unsafe.Pointer, n int) error
	// Launch runs kernel name on grid×block threads with the given argument slots.
	Launch(name string, grid, block Dim3, args []uint64) error
	// Sgemm computes C = alpha·op(A)·op(B) + beta·C for row-major float32 matrices
	// (op(A) m×k, op(B) k×n), as models.Backend.Gemm.
	Sgemm(transA, transB bool, m, n, k int, alpha float32, a unsafe.Pointer, lda int, b unsafe.Pointer, ldb int, beta float32, c unsafe.Pointer, ldc int) error
	// SgemmStridedBatched runs batch such GEMMs, operand i at a + i·strideA,
	// b + i·strideB, c + i·strideC (strides in elements; 0 = the same matrix).
	SgemmStridedBatched(transA, transB bool, m, n, k int, alpha float32, a unsafe.Pointer, lda, strideA int, b unsafe.Pointer, ldb, strideB int, beta float32, c unsafe.Pointer, ldc, strideC, batch int) error
	// Sync waits until every launched kernel and GEMM has finished.
	Sync() error
	// MemInfo reports the device memory free for new allocations and the device's
	// total, in bytes (cuMemGetInfo); the backend sizes its chunks from it.
	MemInfo() (free, total int64, err error)

	// CUDA graphs (see Graph): the stream's work between BeginCapture and EndCapture
	// is recorded, not run, and LaunchGraph queues all of it again with one call.
	// While capturing, nothing may wait for the device (CopyDtoH, Sync) and copies
	// from the host must come from page-locked memory (AllocHost), which the graph
	// reads each time it runs.

	// AllocHost returns n bytes of page-locked host memory (cuMemHostAlloc);
	// FreeHost releases it.
	AllocHost(n int) (unsafe.Pointer, error)
	FreeHost(p unsafe.Pointer) error
	// CopyHtoDPinned queues a copy of n bytes from page-locked memory src (read when
	// the copy runs, so it must not change until then) to device memory dst.
	CopyHtoDPinned(dst, src unsafe.Pointer, n int) error
	// CopyDtoHAsync queues a copy of n bytes of device memory src to page-locked
	// memory dst, which holds them after the next Sync.
	CopyDtoHAsync(dst, src unsafe.Pointer, n int) error
	// BeginCapture starts recording the stream's work into a graph.
	BeginCapture() error
	// EndCapture stops recording and returns the graph, instantiated.
	EndCapture() (Graph, error)
	// LaunchGraph queues a captured graph's work on the stream (one call).
	LaunchGraph(g Graph) error
	// DestroyGraph releases a graph.
	DestroyGraph(g Graph) error
	// Close releases the device; the driver is unusable afterwards.
	Close() error
}

// Graph is a driver's handle of an instantiated CUDA graph (cuGraphExec).
type Graph uintptr

// Arg packs a kernel argument into an 8-byte slot: int (passed as a 32-bit int),
// int64 (a long long), float32, float64 or a device pointer.
func Arg(v any) uint64 {
	switch x := v.(type) {
	case int:
		return uint64(uint32(int32(x)))
	case int32:
		return uint64(uint32(x))
	case int64:
		return uint64(x)
	case float32:
		return uint64(*(*uint32)(unsafe.Pointer(&x)))
	case float64:
		return *(*uint64)(unsafe.Pointer(&x))
	case unsafe.Pointer:
		return uint64(uintptr(x))
	}
	panic(fmt.Sprintf("cuda.Arg: unsupported kernel argument type %T", v))
}

// Args packs several kernel arguments (see Arg).
func Args(vs ...any) []uint64 {
	out := make([]uint64, len(vs))
	for i, v := range vs {
		out[i] = Arg(v)
	}
	return out
}
