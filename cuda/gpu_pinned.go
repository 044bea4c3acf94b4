//go:build dpfil_cuda

package cuda

/*
#cgo LDFLAGS: -lcuda
#include <cuda.h>
*/
import "C"

import (
	"fmt"
	"unsafe"

	"gorgonia.org/cu"
)

// The GPU driver's upload ring: copies to the device go through page-locked host
// memory, so cuMemcpyHtoDAsync is truly asynchronous (from pageable memory the driver
// may synchronise to stage the bytes). gorgonia.org/cu v0.9.6 has no cuMemHostAlloc,
// hence this cgo call (the current context must be set: GPU.enter).

// pinRingBytes is the ring's size: a step's uploads (indices, labels, FIL
// coordinates: ≈ 250 KB for mnist-cnn at batch 600, k = 50) fit many times over, and
// every synchronisation empties it.
const pinRingBytes = 4 << 20

func memHostAlloc(n int) (unsafe.Pointer, error) {
	var p unsafe.Pointer
	if r := C.cuMemHostAlloc(&p, C.size_t(n), 0); r != C.CUDA_SUCCESS {
		return nil, fmt.Errorf("cuMemHostAlloc(%d bytes): CUresult %d", n, int(r))
	}
	return p, nil
}

func memFreeHost(p unsafe.Pointer) error {
	if r := C.cuMemFreeHost(p); r != C.CUDA_SUCCESS {
		return fmt.Errorf("cuMemFreeHost: CUresult %d", int(r))
	}
	return nil
}

// stageHtoD queues the copy of n bytes from host memory src to device memory dst
// through the ring (g.pinMu held, context current); it waits for the device first
// when the ring is full (a synchronisation, counted in hiddenSyncs). Copies larger
// than the ring (data sets) go from pageable memory.
func (g *GPU) stageHtoD(dst, src unsafe.Pointer, n int) error {
	if g.capturing {
		// A graph would read the ring bytes at each launch, long after the ring
		// moved on: captured copies come from their own page-locked memory.
		return fmt.Errorf("a copy through the upload ring while the stream is captured (use CopyHtoDPinned)")
	}
	if g.pin == nil && !g.pinFailed {
		p, err := memHostAlloc(pinRingBytes)
		if err != nil {
			g.pinFailed = true // pageable copies still work
		} else {
			g.pin = p
		}
	}
	if g.pin == nil || n > pinRingBytes {
		return cu.MemcpyHtoDAsync(cu.DevicePtr(uintptr(dst)), src, int64(n), g.stream)
	}
	if g.pinUsed+n > pinRingBytes {
		if err := g.stream.Synchronize(); err != nil {
			return err
		}
		g.hiddenSyncs++
		g.pinUsed = 0
	}
	slot := unsafe.Add(g.pin, g.pinUsed)
	copy(unsafe.Slice((*byte)(slot), n), unsafe.Slice((*byte)(src), n))
	g.pinUsed += (n + 255) &^ 255
	return cu.MemcpyHtoDAsync(cu.DevicePtr(uintptr(dst)), slot, int64(n), g.stream)
}

// HiddenSyncs is the number of synchronisations the driver made on its own (a full
// upload ring); counted adds them to its count.
func (g *GPU) HiddenSyncs() int64 {
	g.pinMu.Lock()
	defer g.pinMu.Unlock()
	return g.hiddenSyncs
}
