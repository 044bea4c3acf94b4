package golden

import (
	"math"
	"testing"
)

func TestMinimize(t *testing.T) {
	for _, tc := range []struct {
		name   string
		f      func(float64) float64
		lo, hi float64
		want   float64 // the minimiser in closed form
	}{
		{"cos on [2,4]", math.Cos, 2, 4, math.Pi},
		{"shifted parabola", func(x float64) float64 { return (x - 0.3) * (x - 0.3) }, -1, 2, 0.3},
		{"minimum at the left end", func(x float64) float64 { return x }, 0, 1, 0},
		{"negated bump (a maximum)", func(x float64) float64 { return -math.Exp(-(x - 1.25) * (x - 1.25)) }, 0, 3, 1.25},
	} {
		t.Run(tc.name, func(t *testing.T) {
			br := Minimize(tc.f, tc.lo, tc.hi, 200, 1e-12)
			if !(br.Lo <= br.A && br.A <= br.B && br.B <= br.Hi) {
				t.Fatalf("bracket out of order: %+v", br)
			}
			if br.Hi-br.Lo > 1e-12 {
				t.Errorf("bracket width %g, want ≤ 1e-12", br.Hi-br.Lo)
			}
			if got := (br.Lo + br.Hi) / 2; math.Abs(got-tc.want) > 1e-7 {
				t.Errorf("minimiser %.12g, want %.12g", got, tc.want)
			}
			if br.FA != tc.f(br.A) || br.FB != tc.f(br.B) {
				t.Errorf("FA, FB are not f(A), f(B): %+v", br)
			}
		})
	}
}

// TestMinimizeSteps checks the step count: without a tolerance the bracket shrinks
// by exactly the golden ratio per step, so n steps leave (√5−1)/2)^n of it; with one
// it stops at the first width ≤ tol.
func TestMinimizeSteps(t *testing.T) {
	calls := 0
	f := func(x float64) float64 { calls++; return (x - 0.7) * (x - 0.7) }
	br := Minimize(f, 0, 1, 30, 0)
	if calls != 32 {
		t.Errorf("%d evaluations for 30 steps, want 32 (two to start, one a step)", calls)
	}
	if want := math.Pow(ratio, 30); math.Abs((br.Hi-br.Lo)-want) > 1e-9*want {
		t.Errorf("width after 30 steps %g, want %g", br.Hi-br.Lo, want)
	}
	calls = 0
	br = Minimize(f, 0, 1, 1000, 1e-3)
	if br.Hi-br.Lo > 1e-3 || br.Hi-br.Lo < 1e-3*ratio {
		t.Errorf("stopped at width %g, want the first width ≤ 1e-3", br.Hi-br.Lo)
	}
	if want := int(math.Ceil(math.Log(1e-3)/math.Log(ratio))) + 2; calls != want {
		t.Errorf("%d evaluations with tol 1e-3, want %d", calls, want)
	}
}
