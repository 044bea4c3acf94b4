package train

import "testing"

// TestPerturbScheduleLambda: the thesis code's max(λ_min, λ − r·decay), refresh by
// refresh, with its defaults (1000, 100, 10) and the edge cases.
func TestPerturbScheduleLambda(t *testing.T) {
	for _, c := range []struct {
		lambda, decay, floor float64
		want                 []float64 // refreshes 0, 1, …
	}{
		{1000, 100, 10, []float64{1000, 900, 800, 700, 600, 500, 400, 300, 200, 100, 10, 10, 10}},
		{1000, 0, 0, []float64{1000, 1000, 1000}},
		{1000, 300, 0, []float64{1000, 700, 400, 100, 0, 0}},
		{5, 2.5, 1, []float64{5, 2.5, 1, 1}},
		{0, 100, 0, []float64{0, 0}},
	} {
		for r, want := range c.want {
			if got := perturbScheduleLambda(c.lambda, c.decay, c.floor, r); got != want {
				t.Errorf("λ %v, decay %v, floor %v, refresh %d: %v, want %v", c.lambda, c.decay, c.floor, r, got, want)
			}
		}
	}
}
