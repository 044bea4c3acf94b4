package gorgonet

import (
	"math/rand/v2"
	"testing"

	"gorgonia.org/tensor"

	"github.com/dpfil/dpfil/models"
)

// BenchmarkGraphVsEngine times, on the 784→32→10 tanh MLP and a batch of
// 64, ClippedGradSum ("sum") and the FIL step (FILSqNorms with 50 random
// coordinates per sample, "fil") of the engine (models.NewCPUModel) and of the same
// network as a float32 Gorgonia graph run by gorgonet's forward-over-reverse
// program ("graph"), through the float32 models.Model interface, in wall time and
// process CPU time per call. -count=N alternates the rounds (engine, graph, engine,
// …), which the shared machine needs:
//
//	go test -run '^$' -bench GraphVsEngine -count 5 ./models/gorgonet
func BenchmarkGraphVsEngine(b *testing.B) {
	const d, h, k, n, kc = 784, 32, 10, 64, 50
	eng, err := models.NewCPUModel(denseTanhArch(d, h, k))
	if err != nil {
		b.Fatal(err)
	}
	g32, err := FromGraph(denseTanh(b, d, h, k, tensor.Float32))
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	p := eng.Init(1)
	x := make([]float32, n*d)
	for i := range x {
		x[i] = rng.Float32()
	}
	y := make([]int, n)
	coords := make([][]int, n)
	for i := range y {
		y[i] = rng.IntN(k)
		for j := 0; j < kc; j++ {
			coords[i] = append(coords[i], rng.IntN(d))
		}
	}
	c := models.Clip{Mode: models.ClipSmooth, C: 1}
	for _, what := range []string{"sum", "fil"} {
		for _, r := range []struct {
			name string
			m    models.Model
		}{{"engine", eng}, {"graph", g32}} {
			b.Run(what+"/"+r.name, func(b *testing.B) {
				sum, losses, out := make([]float32, len(p)), make([]float64, n), make([]float64, n)
				cpu0 := cpuTime(b)
				for i := 0; i < b.N; i++ {
					var err error
					if what == "sum" {
						err = r.m.ClippedGradSum(p, x, y, c, sum, losses)
					} else {
						err = r.m.FILSqNorms(p, x, y, c, coords, out)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(cpuTime(b)-cpu0)/1e6/float64(b.N), "cpu-ms/op")
			})
		}
	}
}

// BenchmarkGraphVsEngineCNN is BenchmarkGraphVsEngine on mnist-cnn built as a graph
// (ArchGraph, float64): clipped sum of 16 samples and the FIL step of 8 samples × 10
// coordinates, engine (float32 CPU model) against the graph program.
//
//	go test -run '^$' -bench GraphVsEngineCNN -benchtime 3x ./models/gorgonet
func BenchmarkGraphVsEngineCNN(b *testing.B) {
	arch, err := models.ArchByName("mnist-cnn")
	if err != nil {
		b.Fatal(err)
	}
	eng, err := models.NewCPUModel(arch)
	if err != nil {
		b.Fatal(err)
	}
	spec, toGraph, err := ArchGraph(arch)
	if err != nil {
		b.Fatal(err)
	}
	g, err := FromGraph(spec)
	if err != nil {
		b.Fatal(err)
	}
	const n, nf, kc = 16, 8, 10
	p64, x64, y := RandomPoint(arch, n, 1)
	gp64 := toGraph(p64)
	p, gp, x := make([]float32, len(p64)), make([]float32, len(p64)), make([]float32, len(x64))
	for i := range p64 {
		p[i], gp[i] = float32(p64[i]), float32(gp64[i])
	}
	for i, v := range x64 {
		x[i] = float32(v)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	coords := make([][]int, nf)
	for i := range coords {
		for j := 0; j < kc; j++ {
			coords[i] = append(coords[i], rng.IntN(arch.InputDim()))
		}
	}
	c := models.Clip{Mode: models.ClipSmooth, C: 1}
	d := arch.InputDim()
	for _, what := range []string{"sum", "fil"} {
		for _, r := range []struct {
			name string
			m    models.Model
			p    []float32
		}{{"engine", eng, p}, {"graph", g, gp}} {
			b.Run(what+"/"+r.name, func(b *testing.B) {
				sum, losses, out := make([]float32, len(p)), make([]float64, n), make([]float64, nf)
				cpu0 := cpuTime(b)
				for i := 0; i < b.N; i++ {
					var err error
					if what == "sum" {
						err = r.m.ClippedGradSum(r.p, x, y, c, sum, losses)
					} else {
						err = r.m.FILSqNorms(r.p, x[:nf*d], y[:nf], c, coords, out)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(cpuTime(b)-cpu0)/1e6/float64(b.N), "cpu-ms/op")
			})
		}
	}
}
