//go:build dpfil_cuda

package cuda

import (
	"fmt"
	"sync"

	"gorgonia.org/cu"
)

// The primary context's lifetime. A device's primary context is shared by everything
// in the process that uses the device: dpfil's driver-API calls and cuBLAS, whose
// CUDA runtime adopts the primary context at its first cublasCreate and keeps its
// state for it until the process exits. Releasing the last reference destroys the
// context under that state, so OpenGPU retains each device's primary context once per
// process, on first use, and nothing releases it: every GPU opened on the device
// shares it, and Close destroys only what that GPU made (its cuBLAS handle, its
// module, its page-locked memory). The process's exit releases the context, as it
// does the runtime's. This is process-wide state by nature (the driver's own), hence
// the package-level registry below.

// primaryContexts holds the primary context retained for each device ordinal.
var primaryContexts = struct {
	sync.Mutex
	ctx map[int]cu.CUContext
}{ctx: map[int]cu.CUContext{}}

// primaryContext returns the primary context of dev (device ordinal), retaining it
// the first time the process asks for it and never releasing it.
func primaryContext(dev cu.Device, ordinal int) (cu.CUContext, error) {
	primaryContexts.Lock()
	defer primaryContexts.Unlock()
	if ctx, ok := primaryContexts.ctx[ordinal]; ok {
		return ctx, nil
	}
	ctx, err := dev.RetainPrimaryCtx()
	if err != nil {
		return ctx, fmt.Errorf("retain the primary context: %w", err)
	}
	primaryContexts.ctx[ordinal] = ctx
	return ctx, nil
}
