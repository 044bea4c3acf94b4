package enginebench_test

import (
	"fmt"
	"log"

	"github.com/dpfil/dpfil/models/enginebench"
)

// Time one call of each kernel of the linear model on a batch of 8 samples with 4
// FIL coordinates per sample, and read what was measured against what.
func ExampleRun() {
	rep, err := enginebench.Run(enginebench.Request{Model: "linear", Batch: 8, Coords: 4})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: %d parameters, input dimension %d\n", rep.Model, rep.Params, rep.InputDim)
	// A dense 784→10 layer: 2·784·10 FLOPs forward and as many for the weight
	// gradient of each sample.
	fmt.Printf("per-sample gradient: %.0f FLOPs per sample, %d samples timed\n", rep.Grad.FLOPsPerSample, rep.Grad.Samples)
	fmt.Printf("rates measured: %v\n", rep.Grad.SamplesPerS > 0 && rep.FIL.SamplesPerS > 0 && rep.SGEMMGFLOPs > 0)
	// Output:
	// linear: 7850 parameters, input dimension 784
	// per-sample gradient: 31360 FLOPs per sample, 24 samples timed
	// rates measured: true
}
