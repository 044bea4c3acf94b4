package sweep

import (
	"path/filepath"
	"reflect"
	"testing"
)

// TestFullMNISTGrid pins sweeps/mnist-fig5-full.yaml (docs/results.md, "Fig. 5 on the
// full MNIST") to what the docs say it kept from Appendix C Table 3 and what it cut,
// and to the two-stage FIL estimate (every member screened, the top 100 refined).
func TestFullMNISTGrid(t *testing.T) {
	g, err := LoadGrid(filepath.Join(repoRoot(t), "sweeps", "mnist-fig5-full.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := g.Jobs()
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 9 {
		t.Fatalf("%d runs, want 9", len(jobs))
	}
	for _, j := range jobs {
		c := j.Config
		if c.Model != "mnist-cnn" || c.Dataset != "mnist" || c.Batch != 600 || c.Momentum != 0.5 || c.Delta != 1e-5 ||
			c.Steps != 1000 || c.LR != 0.1 || c.FILCoords != 4 || c.FILRate != 0 || c.FILRefineTop != 100 || c.Repeats != 1 ||
			c.Sampling != "poisson" || c.ClipMode != "smooth" {
			t.Errorf("run %d: %+v", j.Index, c)
		}
	}
	if got := uniqFloats(jobs, func(j Job) float64 { return j.Config.Sigma }); !reflect.DeepEqual(got, []float64{0.5, 1, 2}) {
		t.Errorf("sigma %v", got)
	}
	if got := uniqFloats(jobs, func(j Job) float64 { return j.Config.Clip }); !reflect.DeepEqual(got, []float64{1, 4, 16}) {
		t.Errorf("clip %v", got)
	}
}
