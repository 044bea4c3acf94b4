package oracle_test

import (
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/dpfil/dpfil/models"
	"github.com/dpfil/dpfil/models/oracle"
)

// cpuTime is the CPU time (user + system, all threads) used by the process so far. On a
// shared, loaded machine CPU time per sample is a steadier measure than wall time.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// report adds samples/s (wall) and CPU-ms per sample.
func report(b *testing.B, samples int, cpu0 time.Duration) {
	b.ReportMetric(float64(samples)/b.Elapsed().Seconds(), "samples/s")
	b.ReportMetric(float64(cpuTime(b)-cpu0)/1e6/float64(samples), "cpu-ms/sample")
}

// benchPerSample times the Gorgonia per-sample route (batch-1 graph run once per
// sample) and reports samples/s.
func benchPerSample(b *testing.B, name string, batch, workers int) {
	a, err := models.ArchByName(name)
	if err != nil {
		b.Fatal(err)
	}
	p, x, y := randomProblem(a, batch, 1)
	ps, err := oracle.NewPerSampleWorkers(a, workers)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	cpu0 := cpuTime(b)
	for i := 0; i < b.N; i++ {
		if _, _, err := ps.Run(p, x, y, batch); err != nil {
			b.Fatal(err)
		}
	}
	report(b, b.N*batch, cpu0)
}

// The default route (NewPerSample: GOMAXPROCS workers) and the single-worker one.
func BenchmarkPerSampleGradsMNISTCNN(b *testing.B) {
	benchPerSample(b, "mnist-cnn", 32, runtime.GOMAXPROCS(0))
}
func BenchmarkPerSampleGradsMNISTCNN1Worker(b *testing.B) { benchPerSample(b, "mnist-cnn", 32, 1) }
func BenchmarkPerSampleGradsMNISTCNN3x3(b *testing.B) {
	benchPerSample(b, "mnist-cnn-3x3", 32, runtime.GOMAXPROCS(0))
}
func BenchmarkPerSampleGradsCIFARCNN(b *testing.B) {
	benchPerSample(b, "cifar-cnn", 8, runtime.GOMAXPROCS(0))
}
func BenchmarkPerSampleGradsCIFARCNN1Worker(b *testing.B) { benchPerSample(b, "cifar-cnn", 8, 1) }

// BenchmarkBatchGradMNISTCNN times one batch gradient (batch 32) for comparison with
// the per-sample route.
func BenchmarkBatchGradMNISTCNN(b *testing.B) {
	a, err := models.ArchByName("mnist-cnn")
	if err != nil {
		b.Fatal(err)
	}
	const batch = 32
	p, x, y := randomProblem(a, batch, 1)
	gr, err := oracle.Build(a, batch)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	cpu0 := cpuTime(b)
	for i := 0; i < b.N; i++ {
		if _, _, err := gr.BatchGrad(p, x, y); err != nil {
			b.Fatal(err)
		}
	}
	report(b, b.N*batch, cpu0)
}

// benchEngine times the hand-written engine's per-sample gradients (CPU backend) on
// the same kind of batch, for the ratio against the Gorgonia route in the same run.
func benchEngine[T models.Float](b *testing.B, name string, batch int) {
	a, err := models.ArchByName(name)
	if err != nil {
		b.Fatal(err)
	}
	p64, x64, y := randomProblem(a, batch, 1)
	p, x := make([]T, len(p64)), make([]T, len(x64))
	for i, v := range p64 {
		p[i] = T(v)
	}
	for i, v := range x64 {
		x[i] = T(v)
	}
	net, err := models.NewNetwork[T](a, models.NewCPUBackend[T]())
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	cpu0 := cpuTime(b)
	for i := 0; i < b.N; i++ {
		if _, _, err := net.PerSampleGrads(p, x, y, batch); err != nil {
			b.Fatal(err)
		}
	}
	report(b, b.N*batch, cpu0)
}

func BenchmarkEnginePerSampleGradsMNISTCNN64(b *testing.B) {
	benchEngine[float64](b, "mnist-cnn", 600)
}
func BenchmarkEnginePerSampleGradsMNISTCNN32(b *testing.B) {
	benchEngine[float32](b, "mnist-cnn", 600)
}
func BenchmarkEnginePerSampleGradsCIFARCNN32(b *testing.B) {
	benchEngine[float32](b, "cifar-cnn", 200)
}
