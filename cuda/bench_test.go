package cuda_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/dpfil/dpfil/cuda"
	"github.com/dpfil/dpfil/models"
)

// BenchmarkEngine times the DP-SGD gradient step (clipped per-sample gradient sum)
// and the FIL step (k = 50) of the two configurations on the CPU backend and,
// in a cuda build, on the GPU, in one run: compare the samples/s metrics of the
// sub-benchmarks. (The emulator is left out: it is a test device, far too slow.)
func BenchmarkEngine(b *testing.B) {
	configs := []struct {
		model    string
		batch, k int
	}{
		{"mnist-cnn", 600, 50},
		{"cifar-cnn", 200, 50},
	}
	devs := []string{"cpu"}
	if cuda.HasGPU() {
		devs = append(devs, "cuda")
	}
	for _, c := range configs {
		arch, err := models.ArchByName(c.model)
		if err != nil {
			b.Fatal(err)
		}
		for _, dev := range devs {
			var m models.Model
			if dev == "cpu" {
				m, err = models.NewCPUModel(arch)
			} else {
				var drv cuda.Driver
				if drv, err = cuda.SharedTestDriver(dev); err == nil {
					m, err = cuda.Open(arch, drv)
				}
			}
			if err != nil {
				b.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(1, 2))
			params := m.Init(1)
			d := m.InputDim()
			x := make([]float32, c.batch*d)
			for i := range x {
				x[i] = rng.Float32()
			}
			y := make([]int, c.batch)
			for i := range y {
				y[i] = rng.IntN(arch.Classes)
			}
			clip := models.Clip{Mode: models.ClipSmooth, C: 1}
			sum, losses := make([]float32, m.NumParams()), make([]float64, c.batch)
			b.Run(fmt.Sprintf("%s/grad/%s", c.model, dev), func(b *testing.B) {
				for b.Loop() {
					if err := m.ClippedGradSum(params, x, y, clip, sum, losses); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(c.batch*b.N)/b.Elapsed().Seconds(), "samples/s")
			})
			coords := make([][]int, c.batch)
			out := make([]float64, c.batch)
			b.Run(fmt.Sprintf("%s/fil-k%d/%s", c.model, c.k, dev), func(b *testing.B) {
				for b.Loop() {
					for s := range coords {
						coords[s] = coords[s][:0]
						for j := 0; j < c.k; j++ {
							coords[s] = append(coords[s], rng.IntN(d))
						}
					}
					if err := m.FILSqNorms(params, x, y, clip, coords, out); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(c.batch*b.N)/b.Elapsed().Seconds(), "samples/s")
			})
			if cl, ok := m.(interface{ Close() error }); ok {
				cl.Close()
			}
		}
	}
}
