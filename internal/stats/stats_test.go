package stats

import (
	"math"
	"testing"
)

// numpy.quantile(s, p) (method "linear") for the same s and p.
func TestQuantileSorted(t *testing.T) {
	s := []float64{1, 2, 4, 8}
	for _, tc := range []struct{ p, want float64 }{
		{0, 1}, {1, 8}, {0.5, 3}, {0.25, 1.75}, {0.9, 6.8}, {1.0 / 3, 2},
	} {
		if got := QuantileSorted(s, tc.p); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("p = %v: %v, want %v", tc.p, got, tc.want)
		}
	}
	if !math.IsNaN(QuantileSorted(nil, 0.5)) || QuantileSorted([]float64{7}, 0.3) != 7 {
		t.Error("empty or one-element sample")
	}
}
