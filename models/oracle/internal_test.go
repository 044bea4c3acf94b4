package oracle

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dpfil/dpfil/models"
)

// TestTapeLeavesInputsUntouched backs PerSample.Run's choice to bind the parameters
// once per batch: running the tape (forward and backward) must not write to the
// values bound to the parameter and input nodes.
func TestTapeLeavesInputsUntouched(t *testing.T) {
	for _, name := range models.ArchNames() {
		t.Run(name, func(t *testing.T) {
			a, err := models.ArchByName(name)
			if err != nil {
				t.Fatal(err)
			}
			gr, err := Build(a, 1)
			if err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(3, 4))
			p := make([]float64, a.NumParams())
			for i := range p {
				p[i] = r.NormFloat64()
			}
			x := make([]float64, a.InputDim())
			for i := range x {
				x[i] = r.Float64()
			}
			if err := gr.set(p, x, []int{1}); err != nil {
				t.Fatal(err)
			}
			before := make([][]float64, len(gr.paramsT))
			for i, pt := range gr.paramsT {
				before[i] = slices.Clone(pt.Data().([]float64))
			}
			xBefore := slices.Clone(gr.xT.Data().([]float64))
			grad := make([]float64, a.NumParams())
			loss := make([]float64, 1)
			for run := 0; run < 2; run++ {
				if err := gr.runGradInto(grad, loss); err != nil {
					t.Fatal(err)
				}
			}
			for i, pt := range gr.paramsT {
				if !slices.Equal(before[i], pt.Data().([]float64)) {
					t.Errorf("%s was modified by the tape", gr.pshapes[i].Name)
				}
			}
			if !slices.Equal(xBefore, gr.xT.Data().([]float64)) {
				t.Error("x was modified by the tape")
			}
		})
	}
}
