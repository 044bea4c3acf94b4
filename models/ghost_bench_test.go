package models

import (
	"fmt"
	"testing"
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
				ms := alternateClippedGradSum(b, name, batch, len(algos), func(j int, m Model) error {
					return m.(ClipAlgoSetter).SetClipAlgo(algos[j])
				})
				for j, a := range algos {
					b.ReportMetric(ms[j], a.String()+"-cpu-ms")
				}
				if ms[0] > 0 {
					b.ReportMetric(ms[1]/ms[0], "ghost/per-sample")
					b.ReportMetric(ms[2]/ms[0], "auto/per-sample")
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
			ms := alternateClippedGradSum(b, tc.name, tc.batch, 2, func(j int, m Model) error {
				m.(interface{ Network() *Network[float32] }).Network().be.(*cpuBackend[float32]).sg.tall = j == 1
				return nil
			})
			per := func(j int) float64 { return ms[j] / float64(tc.batch) }
			b.ReportMetric(per(0), "4x32-cpu-ms/sample")
			b.ReportMetric(per(1), "12x32-cpu-ms/sample")
			b.ReportMetric(per(0)/per(1), "speedup")
		})
	}
}

// BenchmarkClipConvAlgo times cifar-cnn's clipped gradient sum (batch 200) under
// the combinations of clip and conv algorithm that matter for plain DP-SGD,
// alternating on the same inputs: per-sample/direct, auto/direct, auto/auto and
// auto/winograd (mixed clipping: the 8×8 layers by ghost norms, the others'
// per-sample gradients by direct or Winograd convolutions). It reports each one's
// process CPU time per sample and its ratio to per-sample/direct. docs/perf.md has a
// measurement:
//
//	go test -run '^$' -bench 'BenchmarkClipConvAlgo' -benchtime 5x ./models
func BenchmarkClipConvAlgo(b *testing.B) {
	combos := []struct {
		clip ClipAlgo
		conv ConvAlgo
	}{{ClipPerSample, ConvDirect}, {ClipAuto, ConvDirect}, {ClipAuto, ConvAuto}, {ClipAuto, ConvWinograd}}
	const batch = 200
	ms := alternateClippedGradSum(b, "cifar-cnn", batch, len(combos), func(j int, m Model) error {
		if err := m.(ClipAlgoSetter).SetClipAlgo(combos[j].clip); err != nil {
			return err
		}
		return m.(ConvAlgoSetter).SetConvAlgo(combos[j].conv)
	})
	for j, c := range combos {
		name := c.clip.String() + "/" + c.conv.String()
		b.ReportMetric(ms[j]/batch, name+"-cpu-ms/sample")
		if j > 0 {
			b.ReportMetric(ms[j]/ms[0], name+"/per-sample")
		}
	}
}
