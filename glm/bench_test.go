package glm

import "testing"

func benchModel(b *testing.B, n, d int) *Model {
	b.Helper()
	m, err := Fit(synth(n, d, 9), Config{Loss: Logistic, Lambda: 1e-2, Bias: true})
	if err != nil {
		b.Fatal(err)
	}
	return m
}

func BenchmarkFitLogistic2000x200(b *testing.B) {
	dt := synth(2000, 200, 9)
	for b.Loop() {
		if _, err := Fit(dt, Config{Loss: Logistic, Lambda: 1e-2, Bias: true}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPerExample2000x200 measures dFIL and η (Lanczos) for all 2000 examples,
// excluding the one-time Hessian eigendecomposition.
func BenchmarkPerExample2000x200(b *testing.B) {
	an, err := NewAnalysis(benchModel(b, 2000, 200))
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := an.PerExample(0.01, FILOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkNewAnalysis2000x200(b *testing.B) {
	m := benchModel(b, 2000, 200)
	b.ResetTimer()
	for b.Loop() {
		if _, err := NewAnalysis(m); err != nil {
			b.Fatal(err)
		}
	}
}
