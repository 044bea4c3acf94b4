package models

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkConvAlgo times cifar-cnn's per-sample clipped gradient sum (batch 200,
// smooth clipping C = 1) with direct, Winograd F(2×2, 3×3), Winograd F(4×4, 3×3)
// and auto conv layers, alternating the four every iteration, and reports the CPU
// time per sample of each and the ratios to direct (docs/perf.md, "Winograd
// convolution"). Run with -benchtime 3x.
func BenchmarkConvAlgo(b *testing.B) {
	algos := []ConvAlgo{ConvDirect, ConvWinograd, ConvWinograd4, ConvAuto}
	const name, batch = "cifar-cnn", 200
	ms := alternateClippedGradSum(b, name, batch, len(algos), func(j int, m Model) error {
		return m.(ConvAlgoSetter).SetConvAlgo(algos[j])
	})
	msOf := func(j int) float64 { return ms[j] / batch }
	for j, a := range algos {
		b.ReportMetric(msOf(j), a.String()+"-cpu-ms/sample")
	}
	if ms[0] > 0 {
		for j, a := range algos[1:] {
			b.ReportMetric(msOf(j+1)/msOf(0), a.String()+"/direct")
		}
	}
}

// BenchmarkConvAlgoLayers times each of cifar-cnn's conv layers alone, one sample
// per call (the per-sample pass's chunk), forward and backward (with the input
// gradient where the pass forms it), direct, Winograd F(2×2, 3×3) and F(4×4, 3×3)
// alternating, on one goroutine: the measurements behind the cost model
// (winoCosts, winoCosts4), whose ratios it reports beside them.
func BenchmarkConvAlgoLayers(b *testing.B) {
	arch, err := ArchByName("cifar-cnn")
	if err != nil {
		b.Fatal(err)
	}
	params := make([]float32, 0)
	var nets []*Network[float32]
	var wss []*workspace[float32]
	for j, a := range []ConvAlgo{ConvWinograd, ConvWinograd4} {
		n, err := NewNetwork(arch, NewCPUBackend[float32]())
		if err != nil {
			b.Fatal(err)
		}
		if err := n.SetConvAlgo(a); err != nil {
			b.Fatal(err)
		}
		if j == 0 {
			params = make([]float32, n.p)
			for i, v := range InitParams(arch, 1) {
				params[i] = float32(v)
			}
		}
		n.ws = make([]*workspace[float32], 1)
		n.winoPrepare(params)
		if j == 0 {
			nets, wss = append(nets, n), append(wss, n.workspaceFor(0, 1, 0, false))
		}
		nets, wss = append(nets, n), append(wss, n.winoWorkspace(0, 1))
	}
	names := []string{"direct", "winograd", "winograd4"}
	n := nets[0]
	for i, l := range n.layers {
		c, ok := l.ops.(*convOps[float32])
		if !ok {
			continue
		}
		b.Run(fmt.Sprintf("layer%d_%dx%dx%d_to_%d", i, l.in.C, l.in.H, l.in.W, l.out.C), func(b *testing.B) {
			for _, ws := range wss {
				for k := range ws.acts[i][:l.inN] {
					ws.acts[i][k] = float32(k%7) / 7
				}
				for k := range ws.dlt[i+1][:l.outN] {
					ws.dlt[i+1][k] = float32(k%5) / 5
				}
			}
			var t [3]time.Duration
			b.ResetTimer()
			for it := 0; it < b.N; it++ {
				for j, ws := range wss {
					c0 := processCPUTime()
					l.ops.forward(nets[j], ws, i, params, 1)
					l.ops.backward(nets[j], ws, i, params, 1, n.paramsBelow[i], false)
					t[j] += processCPUTime() - c0
				}
			}
			us := func(j int) float64 { return t[j].Seconds() * 1e6 / float64(b.N) }
			for j, nm := range names {
				b.ReportMetric(us(j), nm+"-us")
			}
			b.ReportMetric(us(1)/us(0), "winograd/direct")
			b.ReportMetric(us(2)/us(0), "winograd4/direct")
			d, w := winoCosts(c.g, l.out.C, n.paramsBelow[i])
			w4 := winoCosts4(c.g, l.out.C, n.paramsBelow[i])
			b.ReportMetric(w/d, "model-winograd/direct")
			b.ReportMetric(w4/d, "model-winograd4/direct")
		})
	}
}
