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
