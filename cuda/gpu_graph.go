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

// The GPU driver's stream capture and CUDA graphs, and its page-locked copies:
// gorgonia.org/cu v0.9.6 wraps none of cuStreamBeginCapture, cuStreamEndCapture,
// cuGraphInstantiateWithFlags or cuGraphLaunch, hence these cgo calls (the current
// context must be set: GPU.enter). Capture uses the relaxed mode: the backend may
// allocate (cuMemAlloc) while a call is captured.

// cStream is the driver's stream as cgo's CUstream (cu.Stream holds only it).
func cStream(s cu.Stream) C.CUstream { return *(*C.CUstream)(unsafe.Pointer(&s)) }

func cuErr(what string, r C.CUresult) error {
	if r == C.CUDA_SUCCESS {
		return nil
	}
	return fmt.Errorf("%s: CUresult %d", what, int(r))
}

// AllocHost returns n bytes of page-locked host memory.
func (g *GPU) AllocHost(n int) (unsafe.Pointer, error) {
	leave, err := g.enter("alloc host")
	if err != nil {
		return nil, err
	}
	defer leave()
	return memHostAlloc(n)
}

// FreeHost releases memory from AllocHost.
func (g *GPU) FreeHost(p unsafe.Pointer) error {
	leave, err := g.enter("free host")
	if err != nil {
		return err
	}
	defer leave()
	return memFreeHost(p)
}

// CopyHtoDPinned queues a copy from page-locked memory on the driver's stream.
func (g *GPU) CopyHtoDPinned(dst, src unsafe.Pointer, n int) error {
	return g.queue("copy to device", n, func() error {
		return cu.MemcpyHtoDAsync(cu.DevicePtr(uintptr(dst)), src, int64(n), g.stream)
	}, func() string { return fmt.Sprintf("copy %d page-locked bytes to the device", n) })
}

// CopyDtoHAsync queues a copy to page-locked memory on the driver's stream.
func (g *GPU) CopyDtoHAsync(dst, src unsafe.Pointer, n int) error {
	return g.queue("copy to the host", n, func() error {
		return cu.MemcpyDtoHAsync(dst, cu.DevicePtr(uintptr(src)), int64(n), g.stream)
	}, func() string { return fmt.Sprintf("queue a copy of %d bytes to the host", n) })
}

// BeginCapture starts capturing the driver's stream (relaxed mode).
func (g *GPU) BeginCapture() error {
	leave, err := g.enter("begin capture")
	if err != nil {
		return err
	}
	defer leave()
	if err := cuErr("cuda: cuStreamBeginCapture", C.cuStreamBeginCapture(cStream(g.stream), C.CU_STREAM_CAPTURE_MODE_RELAXED)); err != nil {
		return err
	}
	g.pinMu.Lock()
	g.capturing = true
	g.pinMu.Unlock()
	return nil
}

// EndCapture ends the capture and instantiates the graph (the graph itself is
// released at once: the instantiation is independent of it).
func (g *GPU) EndCapture() (Graph, error) {
	leave, err := g.enter("end capture")
	if err != nil {
		return 0, err
	}
	defer leave()
	g.pinMu.Lock()
	g.capturing = false
	g.pinMu.Unlock()
	var graph C.CUgraph
	if err := cuErr("cuda: cuStreamEndCapture", C.cuStreamEndCapture(cStream(g.stream), &graph)); err != nil {
		return 0, err
	}
	var exec C.CUgraphExec
	ierr := cuErr("cuda: cuGraphInstantiateWithFlags", C.cuGraphInstantiateWithFlags(&exec, graph, 0))
	if derr := cuErr("cuda: cuGraphDestroy", C.cuGraphDestroy(graph)); ierr == nil && derr != nil {
		_ = C.cuGraphExecDestroy(exec)
		return 0, derr
	}
	if ierr != nil {
		return 0, ierr
	}
	g.graphMu.Lock()
	defer g.graphMu.Unlock()
	if g.graphs == nil {
		g.graphs = map[Graph]unsafe.Pointer{}
	}
	g.lastGraph++
	g.graphs[g.lastGraph] = unsafe.Pointer(exec)
	return g.lastGraph, nil
}

// exec returns the instantiated graph of handle h.
func (g *GPU) exec(h Graph) (C.CUgraphExec, error) {
	g.graphMu.Lock()
	defer g.graphMu.Unlock()
	p, ok := g.graphs[h]
	if !ok {
		return nil, fmt.Errorf("cuda: graph %d: no such graph", h)
	}
	return C.CUgraphExec(p), nil
}

// LaunchGraph queues a graph on the driver's stream.
func (g *GPU) LaunchGraph(h Graph) error {
	return g.withGraph("launch graph", h, func(e C.CUgraphExec) error {
		return cuErr("cuda: cuGraphLaunch", C.cuGraphLaunch(e, cStream(g.stream)))
	})
}

// DestroyGraph releases a graph from EndCapture.
func (g *GPU) DestroyGraph(h Graph) error {
	return g.withGraph("destroy graph", h, func(e C.CUgraphExec) error {
		g.graphMu.Lock()
		delete(g.graphs, h)
		g.graphMu.Unlock()
		return cuErr("cuda: cuGraphExecDestroy", C.cuGraphExecDestroy(e))
	})
}

// withGraph runs f on the instantiated graph of handle h as op (see enter).
func (g *GPU) withGraph(op string, h Graph, f func(C.CUgraphExec) error) error {
	return withHandle(g, op, h, g.exec, f)
}
