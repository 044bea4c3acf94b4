package models

import (
	"math"
	"strconv"
	"strings"
	"testing"
)

// TestCheckFinite: every non-finite value is found at its index, in both precisions,
// and no finite value is refused (the extremes, denormals and −0 included).
func TestCheckFinite(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	finite := []float64{0, math.Copysign(0, -1), 1, -1, math.MaxFloat32, -math.MaxFloat32,
		math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32, 1e-40, 3.4e38}
	if err := checkFinite("v", finite); err != nil {
		t.Errorf("float64 finite values refused: %v", err)
	}
	f32 := make([]float32, len(finite))
	for i, v := range finite {
		f32[i] = float32(v)
	}
	if err := checkFinite("v", f32); err != nil {
		t.Errorf("float32 finite values refused: %v", err)
	}
	if err := checkFinite[float64]("v", nil); err != nil {
		t.Errorf("empty slice refused: %v", err)
	}
	for _, bad := range []float64{nan, inf, -inf, math.MaxFloat64} {
		for _, at := range []int{0, 3, len(finite) - 1} {
			v := append([]float64(nil), finite...)
			v[at] = bad
			err64 := checkFinite("v", v)
			w := append([]float32(nil), f32...)
			w[at] = float32(bad) // MaxFloat64 overflows to +Inf in float32
			err32 := checkFinite("v", w)
			want := "v[" + strconv.Itoa(at) + "]"
			if bad == math.MaxFloat64 {
				if err64 != nil {
					t.Errorf("float64 MaxFloat64 at %d refused: %v", at, err64)
				}
			} else if err64 == nil || !strings.Contains(err64.Error(), want) {
				t.Errorf("float64 %v at %d: got %v, want an error naming %s", bad, at, err64, want)
			}
			if err32 == nil || !strings.Contains(err32.Error(), want) {
				t.Errorf("float32 %v at %d: got %v, want an error naming %s", bad, at, err32, want)
			}
		}
	}
}
