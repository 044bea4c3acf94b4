package oracle_test

import (
	"fmt"

	"github.com/dpfil/dpfil/models"
	"github.com/dpfil/dpfil/models/oracle"
)

// Build a Gorgonia graph of the linear model for batches of 2 and compute logits, the
// gradient of the summed loss and per-sample gradients. With zero parameters every
// logit is 0 and every sample's loss is ln 10.
func Example() {
	arch, err := models.ArchByName("linear")
	if err != nil {
		panic(err)
	}
	params := make([]float64, arch.NumParams())
	x := make([]float64, 2*arch.InputDim())
	y := []int{3, 7}

	gr, err := oracle.Build(arch, 2)
	if err != nil {
		panic(err)
	}
	logits, err := gr.Forward(params, x, 2)
	if err != nil {
		panic(err)
	}
	grad, loss, err := gr.BatchGrad(params, x, y)
	if err != nil {
		panic(err)
	}
	ps, err := oracle.NewPerSample(arch)
	if err != nil {
		panic(err)
	}
	grads, losses, err := ps.Run(params, x, y, 2)
	if err != nil {
		panic(err)
	}
	P := arch.NumParams()
	bias := grad[P-10:] // the dense bias gradient: Σ_i (softmax_i − onehot(y_i))
	fmt.Printf("%d logits, first %.1f\n", len(logits), logits[0])
	fmt.Printf("summed loss %.4f, per-sample %.4f %.4f\n", loss, losses[0], losses[1])
	fmt.Printf("bias gradient [3] %.2f, [0] %.2f\n", bias[3], bias[0])
	fmt.Printf("per-sample gradients: %d values\n", len(grads))
	// Output:
	// 20 logits, first 0.0
	// summed loss 4.6052, per-sample 2.3026 2.3026
	// bias gradient [3] -0.80, [0] 0.20
	// per-sample gradients: 15700 values
}
