package models

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkClipAlgo times ClippedGradSum per-sample, ghost and auto (mixed) on
// mnist-cnn and cifar-cnn at batch 64 and 200, alternating: each op runs one step of
// each algorithm in turn, on the same inputs, so that a shared machine's load falls
// on all three alike. It reports each algorithm's process CPU time per step
// (<algo>-cpu-ms; user + system, all threads) and the ratios ghost/per-sample and
// auto/per-sample of those CPU times. docs/perf.md has a measurement:
//
//	go test -run '^$' -bench 'BenchmarkClipAlgo' -benchtime 3x ./models
func BenchmarkClipAlgo(b *testing.B) {
	algos := []ClipAlgo{ClipPerSample, ClipGhost, ClipAuto}
	for _, name := range []string{"mnist-cnn", "cifar-cnn"} {
		for _, batch := range []int{64, 200} {
			b.Run(fmt.Sprintf("%s/b%d", name, batch), func(b *testing.B) {
				// One model per algorithm, each with its own workspaces, as in a run.
				ms := make([]Model, len(algos))
				var p, x []float32
				var y []int
				for j, a := range algos {
					ms[j], p, x, y = benchSetup(b, name, batch)
					if err := ms[j].(ClipAlgoSetter).SetClipAlgo(a); err != nil {
						b.Fatal(err)
					}
				}
				sum := make([]float32, len(p))
				losses := make([]float64, batch)
				step := func(j int) {
					if err := ms[j].ClippedGradSum(p, x, y, Clip{C: 1}, sum, losses); err != nil {
						b.Fatal(err)
					}
				}
				for j := range algos { // warm-up: workspaces
					step(j)
				}
				cpu := make([]time.Duration, len(algos))
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					for j := range algos {
						c0 := processCPUTime()
						step(j)
						cpu[j] += processCPUTime() - c0
					}
				}
				msOf := func(j int) float64 { return cpu[j].Seconds() * 1e3 / float64(b.N) }
				for j, a := range algos {
					b.ReportMetric(msOf(j), a.String()+"-cpu-ms")
				}
				if cpu[0] > 0 {
					b.ReportMetric(msOf(1)/msOf(0), "ghost/per-sample")
					b.ReportMetric(msOf(2)/msOf(0), "auto/per-sample")
				}
			})
		}
	}
}

// BenchmarkGemmKernel times one DP-SGD step's per-sample clipped gradients with the
// AVX-512 GEMM on its 4×32 kernel only and with the 12×32 kernel (tall), alternating
// on the same inputs so that a shared machine's load falls on both alike. It reports
// each one's process CPU time per step and their ratio (tall ÷ 4×32). The results are
// bit-identical (TestPackedSgemmWideBitIdentical). docs/perf.md has a measurement:
//
//	go test -run '^$' -bench 'BenchmarkGemmKernel' -benchtime 5x ./models
func BenchmarkGemmKernel(b *testing.B) {
	if !hasAVX512() {
		b.Skip("no AVX-512: neither kernel runs on this CPU")
	}
	for _, tc := range []struct {
		name  string
		batch int
	}{{"mnist-cnn", 600}, {"cifar-cnn", 200}} {
		b.Run(tc.name, func(b *testing.B) {
			ms := make([]Model, 2)
			var p, x []float32
			var y []int
			for j, tall := range []bool{false, true} {
				ms[j], p, x, y = benchSetup(b, tc.name, tc.batch)
				be := ms[j].(interface{ Network() *Network[float32] }).Network().be.(*cpuBackend[float32])
				be.sg.tall = tall
			}
			sum := make([]float32, len(p))
			losses := make([]float64, tc.batch)
			step := func(j int) {
				if err := ms[j].ClippedGradSum(p, x, y, Clip{C: 1}, sum, losses); err != nil {
					b.Fatal(err)
				}
			}
			step(0)
			step(1)
			var cpu [2]time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for j := range ms {
					c0 := processCPUTime()
					step(j)
					cpu[j] += processCPUTime() - c0
				}
			}
			per := func(j int) float64 { return cpu[j].Seconds() * 1e3 / float64(b.N*tc.batch) }
			b.ReportMetric(per(0), "4x32-cpu-ms/sample")
			b.ReportMetric(per(1), "12x32-cpu-ms/sample")
			b.ReportMetric(per(0)/per(1), "speedup")
		})
	}
}
