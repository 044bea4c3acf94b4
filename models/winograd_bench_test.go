package models

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkConvAlgo times cifar-cnn's per-sample clipped gradient sum (batch 200,
// smooth clipping C = 1) with direct, Winograd and auto conv layers, alternating
// the three every iteration, and reports the CPU time per sample of each and the
// ratios to direct (docs/perf.md, "Winograd convolution"). Run with -benchtime 3x.
func BenchmarkConvAlgo(b *testing.B) {
	algos := []ConvAlgo{ConvDirect, ConvWinograd, ConvAuto}
	const name, batch = "cifar-cnn", 200
	ms := alternateClippedGradSum(b, name, batch, len(algos), func(j int, m Model) error {
		return m.(ConvAlgoSetter).SetConvAlgo(algos[j])
	})
	msOf := func(j int) float64 { return ms[j] / batch }
	for j, a := range algos {
		b.ReportMetric(msOf(j), a.String()+"-cpu-ms/sample")
	}
	if ms[0] > 0 {
		b.ReportMetric(msOf(1)/msOf(0), "winograd/direct")
		b.ReportMetric(msOf(2)/msOf(0), "auto/direct")
	}
}

// BenchmarkConvAlgoLayers times each of cifar-cnn's conv layers alone, one sample
// per call (the per-sample pass's chunk), forward and backward (with the input
// gradient where the pass forms it), direct and Winograd alternating, on one goroutine:
// the measurements behind the cost model winoCosts.
func BenchmarkConvAlgoLayers(b *testing.B) {
	arch, err := ArchByName("cifar-cnn")
	if err != nil {
		b.Fatal(err)
	}
	n, err := NewNetwork(arch, NewCPUBackend[float32]())
	if err != nil {
		b.Fatal(err)
	}
	if err := n.SetConvAlgo(ConvWinograd); err != nil {
		b.Fatal(err)
	}
	params := make([]float32, n.p)
	for i, v := range InitParams(arch, 1) {
		params[i] = float32(v)
	}
	n.ws = make([]*workspace[float32], 1)
	n.winoPrepare(params)
	wd, ww := n.workspaceFor(0, 1, 0, false), n.winoWorkspace(0, 1)
	for i, l := range n.layers {
		c, ok := l.ops.(*convOps[float32])
		if !ok {
			continue
		}
		b.Run(fmt.Sprintf("layer%d_%dx%dx%d_to_%d", i, l.in.C, l.in.H, l.in.W, l.out.C), func(b *testing.B) {
			for _, ws := range []*workspace[float32]{wd, ww} {
				for k := range ws.acts[i][:l.inN] {
					ws.acts[i][k] = float32(k%7) / 7
				}
				for k := range ws.dlt[i+1][:l.outN] {
					ws.dlt[i+1][k] = float32(k%5) / 5
				}
			}
			var t [2]time.Duration
			b.ResetTimer()
			for it := 0; it < b.N; it++ {
				for j, ws := range []*workspace[float32]{wd, ww} {
					c0 := processCPUTime()
					l.ops.forward(n, ws, i, params, 1)
					l.ops.backward(n, ws, i, params, 1, n.paramsBelow[i], false)
					t[j] += processCPUTime() - c0
				}
			}
			us := func(j int) float64 { return t[j].Seconds() * 1e6 / float64(b.N) }
			b.ReportMetric(us(0), "direct-us")
			b.ReportMetric(us(1), "winograd-us")
			b.ReportMetric(us(1)/us(0), "winograd/direct")
			d, w := winoCosts(c.g, l.out.C, n.paramsBelow[i])
			b.ReportMetric(w/d, "model-winograd/direct")
		})
	}
}
