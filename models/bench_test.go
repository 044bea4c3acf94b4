package models

import (
	"math/rand/v2"
	"testing"
	"time"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
)

// BenchmarkSgemm1024 measures gonum's float32 GEMM rate, the basis of the FLOP floors
// in docs/perf.md (engine section) (2·1024³ FLOP per op).
func BenchmarkSgemm1024(b *testing.B) {
	const n = 1024
	a, bb, c := make([]float32, n*n), make([]float32, n*n), make([]float32, n*n)
	for i := range a {
		a[i], bb[i] = float32(i%7)-3, float32(i%5)-2
	}
	impl := blas32.Implementation()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		impl.Sgemm(blas.NoTrans, blas.NoTrans, n, n, n, 1, a, n, bb, n, 0, c, n)
	}
	b.ReportMetric(2*n*n*n*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

func benchSetup(b *testing.B, name string, batch int) (Model, []float32, []float32, []int) {
	arch, err := ArchByName(name)
	if err != nil {
		b.Fatal(err)
	}
	m, err := NewCPUModel(arch)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	x := make([]float32, batch*m.InputDim())
	for i := range x {
		x[i] = rng.Float32()
	}
	y := make([]int, batch)
	for i := range y {
		y[i] = rng.IntN(arch.Classes)
	}
	return m, m.Init(1), x, y
}

// BenchmarkClippedGradSum times a DP-SGD step's per-sample gradients (mnist-cnn,
// batch 600).
func BenchmarkClippedGradSum(b *testing.B) {
	const batch = 600
	m, p, x, y := benchSetup(b, "mnist-cnn", batch)
	sum := make([]float32, m.NumParams())
	losses := make([]float64, batch)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := m.ClippedGradSum(p, x, y, Clip{C: 1}, sum, losses); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(batch*b.N)/b.Elapsed().Seconds(), "samples/s")
}

// BenchmarkFILSqNorms times the FIL step with k = 50 coordinates (mnist-cnn).
func BenchmarkFILSqNorms(b *testing.B) {
	const batch, k = 60, 50
	m, p, x, y := benchSetup(b, "mnist-cnn", batch)
	rng := rand.New(rand.NewPCG(2, 2))
	coords := make([][]int, batch)
	for s := range coords {
		for j := 0; j < k; j++ {
			coords[s] = append(coords[s], rng.IntN(m.InputDim()))
		}
	}
	out := make([]float64, batch)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := m.FILSqNorms(p, x, y, Clip{C: 1}, coords, out); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(batch*b.N)/b.Elapsed().Seconds(), "samples/s")
}

// BenchmarkClippedGradSumModels times a DP-SGD step's per-sample gradients for each
// network with a conv or dense stack worth timing.
func BenchmarkClippedGradSumModels(b *testing.B) {
	for _, tc := range []struct {
		name  string
		batch int
	}{{"mnist-cnn", 600}, {"mnist-cnn-3x3", 600}, {"mlp", 600}, {"cifar-cnn", 32}} {
		b.Run(tc.name, func(b *testing.B) {
			m, p, x, y := benchSetup(b, tc.name, tc.batch)
			sum := make([]float32, m.NumParams())
			losses := make([]float64, tc.batch)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := m.ClippedGradSum(p, x, y, Clip{C: 1}, sum, losses); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(tc.batch*b.N)/b.Elapsed().Seconds(), "samples/s")
		})
	}
}

// alternateClippedGradSum builds n models of the named network (configure(j, m)
// sets model j's variant), warms each up, then runs b.N rounds in which every model
// computes the clipped gradient sum of the same batch in turn, so that a shared
// machine's load falls on all alike. It returns each model's process CPU time
// (user + system, all threads) in ms per step.
func alternateClippedGradSum(b *testing.B, name string, batch, n int, configure func(j int, m Model) error) []float64 {
	b.Helper()
	ms := make([]Model, n)
	var p, x []float32
	var y []int
	for j := range ms {
		ms[j], p, x, y = benchSetup(b, name, batch)
		if err := configure(j, ms[j]); err != nil {
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
	for j := range ms { // warm-up: workspaces
		step(j)
	}
	cpu := make([]time.Duration, n)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := range ms {
			c0 := processCPUTime()
			step(j)
			cpu[j] += processCPUTime() - c0
		}
	}
	out := make([]float64, n)
	for j, c := range cpu {
		out[j] = c.Seconds() * 1e3 / float64(b.N)
	}
	return out
}
