package attack

import (
	"fmt"
	"testing"

	"github.com/dpfil/dpfil/glm"
)

// BenchmarkGLMAttack measures 64 trials against all 2000 targets (d = 200).
func BenchmarkGLMAttack(b *testing.B) {
	dt := glmSynth(2000, 200, 4)
	m, err := glm.Fit(dt, glm.Config{Loss: glm.Logistic, Lambda: 1e-2, Bias: true})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := GLMAttack(m, dt, GLMAttackOptions{Sigma: 1e-3, Trials: 64, Seed: 1}); err != nil {
			b.Fatal(err)
		}
	}
}

func ExampleGLMAttack() {
	// Three 2-pixel training images; with almost no noise the informed adversary
	// recovers each one from the release and the other two examples.
	data, _ := glm.NewData([]float32{0.2, 0.9, 0.7, 0.1, 0.4, 0.6}, []int{0, 1, 0}, 3, 2)
	m, err := glm.Fit(data, glm.Config{Loss: glm.Logistic, Lambda: 0.1, Bias: true})
	if err != nil {
		panic(err)
	}
	res, err := GLMAttack(m, data, GLMAttackOptions{Sigma: 1e-12, Trials: 10, Seed: 1, Keep: []int{1}})
	if err != nil {
		panic(err)
	}
	rec := res.Reconstructions[1]
	fmt.Printf("example 1 reconstructed as [%.6f %.6f]; all MSE < 1e-12: %v\n", rec[0], rec[1],
		res.MSE[0] < 1e-12 && res.MSE[1] < 1e-12 && res.MSE[2] < 1e-12)
	// Output: example 1 reconstructed as [0.700000 0.100000]; all MSE < 1e-12: true
}
