package oracle_test

import (
	"fmt"
	"testing"

	"github.com/dpfil/dpfil/models"
	"github.com/dpfil/dpfil/models/oracle"
)

// TestEngineMatchesOracle is the cross-check of issue 3: the hand-written engine
// (models.Network on the CPU backend, float64) against the Gorgonia graph — forward
// logits, batch gradients (sum of the engine's per-sample gradients) and per-sample
// gradients and losses — for every built-in architecture, with both the stax-default
// initialisation and larger random parameters, plus the tiny test architectures.
func TestEngineMatchesOracle(t *testing.T) {
	const tol = 1e-5
	type tc struct {
		arch  models.Arch
		batch int
		init  bool // models.InitParams instead of randomProblem's parameters
	}
	var cs []tc
	for _, name := range models.ArchNames() {
		a, err := models.ArchByName(name)
		if err != nil {
			t.Fatal(err)
		}
		b := 4
		if name == "cifar-cnn" {
			b = 2
		}
		cs = append(cs, tc{a, b, true}, tc{a, b, false})
	}
	for _, a := range tinyArchs() {
		cs = append(cs, tc{a, 3, false})
	}
	for i, c := range cs {
		t.Run(fmt.Sprintf("%s/init=%v", c.arch.Name, c.init), func(t *testing.T) {
			p, x, y := randomProblem(c.arch, c.batch, uint64(400+i))
			if c.init {
				p = models.InitParams(c.arch, uint64(i))
			}
			net, err := models.NewNetwork[float64](c.arch, models.NewCPUBackend[float64]())
			if err != nil {
				t.Fatal(err)
			}
			gr, err := oracle.Build(c.arch, c.batch)
			if err != nil {
				t.Fatal(err)
			}
			ps, err := oracle.NewPerSample(c.arch)
			if err != nil {
				t.Fatal(err)
			}

			eLogits, err := net.Forward(p, x, c.batch)
			if err != nil {
				t.Fatal(err)
			}
			oLogits, err := gr.Forward(p, x, c.batch)
			if err != nil {
				t.Fatal(err)
			}
			worst := relErr(eLogits, oLogits)
			if worst > tol {
				t.Errorf("forward logits: rel err %.3g", worst)
			}

			eGrads, eLosses, err := net.PerSampleGrads(p, x, y, c.batch)
			if err != nil {
				t.Fatal(err)
			}
			oGrads, oLosses, err := ps.Run(p, x, y, c.batch)
			if err != nil {
				t.Fatal(err)
			}
			if e := relErr(eLosses, oLosses); e > tol {
				t.Errorf("per-sample losses: rel err %.3g", e)
			}
			P := c.arch.NumParams()
			for n := 0; n < c.batch; n++ {
				e := relErr(eGrads[n*P:(n+1)*P], oGrads[n*P:(n+1)*P])
				if e > tol {
					t.Errorf("per-sample gradient of sample %d: rel err %.3g", n, e)
				}
				worst = max(worst, e)
			}

			oBatch, oLoss, err := gr.BatchGrad(p, x, y)
			if err != nil {
				t.Fatal(err)
			}
			eBatch := make([]float64, P)
			eLoss := 0.0
			for n := 0; n < c.batch; n++ {
				for k := 0; k < P; k++ {
					eBatch[k] += eGrads[n*P+k]
				}
				eLoss += eLosses[n]
			}
			if e := relErr(eBatch, oBatch); e > tol {
				t.Errorf("batch gradient: rel err %.3g", e)
			}
			t.Logf("largest relative error (logits, per-sample gradients): %.2g", worst)
			if e := relErr([]float64{eLoss}, []float64{oLoss}); e > tol {
				t.Errorf("summed loss: engine %v, oracle %v", eLoss, oLoss)
			}
		})
	}
}
