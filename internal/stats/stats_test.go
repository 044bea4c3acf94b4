package stats

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"
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

// ComponentSign makes the largest-magnitude loading of the column positive; the
// first of equal magnitudes decides; a zero column keeps +1.
func TestComponentSign(t *testing.T) {
	v := mat.NewDense(4, 5, []float64{
		0.1, -0.5, 0, 3, -2,
		-0.9, 0.4, 0, -3, 0,
		0.2, 0.45, 0, 1, math.NaN(),
		0.3, -0.2, 0, 0, 1,
	})
	for col, want := range []float64{-1, -1, 1, 1, -1} {
		got := ComponentSign(v, col)
		if got != want {
			t.Errorf("column %d: sign %v, want %v", col, got, want)
		}
		// The defining property: the signed column's largest |entry| is positive.
		big := 0.0
		for j := 0; j < 4; j++ {
			big = math.Max(big, math.Abs(v.At(j, col)))
		}
		for j := 0; j < 4 && big > 0; j++ {
			if s := got * v.At(j, col); math.Abs(s) == big {
				if s < 0 {
					t.Errorf("column %d: first largest loading %v after the sign", col, s)
				}
				break
			}
		}
	}
}
