package models

import "fmt"

// FLOPCount is the GEMM arithmetic of the engine's algorithms for one sample (a
// multiply-add counts 2), as implemented: the first layer's input gradient is not
// formed, and in the FIL step the one-hot input tangents cross the first parameter
// layer by a scatter (counted 0). Elementwise work (activations, pooling, im2col,
// bias) is not counted; reductions of the FIL step are (4·P per direction).
type FLOPCount struct {
	// PerSampleGrad is the forward and per-sample backward pass of one sample.
	PerSampleGrad float64
	// FILDirection is one tangent direction: tangent forward, tangent backward,
	// gradient tangents and the two P-length dot products.
	FILDirection float64
	// FILStep is PerSampleGrad + k·FILDirection, the FIL step of one sample with k
	// coordinates.
	FILStep float64
}

// CountFLOPs returns the FLOP counts of arch with k FIL coordinates per sample.
func CountFLOPs(arch Arch, k int) (FLOPCount, error) {
	n, err := NewNetwork(arch, NewCPUBackend[float32]())
	if err != nil {
		return FLOPCount{}, fmt.Errorf("count FLOPs: %w", err)
	}
	var c FLOPCount
	for i, l := range n.layers {
		g, d := l.kind.FLOPs(l.spec, l.in, l.out, FLOPContext{ParamsBelow: n.paramsBelow[i], SparseFirst: n.sparseFirst && i == n.firstParam})
		c.PerSampleGrad += g
		c.FILDirection += d
	}
	c.FILDirection += 4 * float64(n.p)
	c.FILStep = c.PerSampleGrad + float64(k)*c.FILDirection
	return c, nil
}
