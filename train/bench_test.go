package train

import (
	"fmt"
	"testing"

	"github.com/dpfil/dpfil/data"
)

// BenchmarkStep times one DP-SGD step (gradients, clipping, noise, update, and FIL
// with k coordinates when k > 0) of batch 600 on the embedded MNIST.
func BenchmarkStep(b *testing.B) {
	split, err := data.Load("mnist-embedded", data.Options{NoDownload: true})
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		model string
		k     int
	}{{"mlp", 0}, {"mlp", 8}, {"mnist-cnn", 0}, {"mnist-cnn", 8}, {"mnist-cnn", 50}} {
		b.Run(fmt.Sprintf("%s/k=%d", tc.model, tc.k), func(b *testing.B) {
			cfg := DefaultConfig()
			cfg.Model, cfg.FILCoords, cfg.Steps = tc.model, tc.k, 1
			s, err := prepare(cfg, Options{Data: split}, func(string, ...any) {})
			if err != nil {
				b.Fatal(err)
			}
			w, err := s.newWorker(0, nil)
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := w.step(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*cfg.Batch)/b.Elapsed().Seconds(), "samples/s")
		})
	}
}
