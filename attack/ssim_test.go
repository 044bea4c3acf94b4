package attack

import (
	"math"
	"math/rand/v2"
	"testing"
)

// naiveSSIM computes the SSIM map window by window from its definition (Wang et al.
// 2004, eqs. 13–15 with the Gaussian weights): weighted means, then weighted
// variances and covariance as Σ w (x − μx)(y − μy) — another formula than Index's
// E[xy] − μxμy over separable filters.
func naiveSSIM(x, y []float64, h, w, k int, sigma float64) float64 {
	win := make([]float64, k*k)
	sum := 0.0
	for a := 0; a < k; a++ {
		for b := 0; b < k; b++ {
			da, db := float64(a-k/2), float64(b-k/2)
			win[a*k+b] = math.Exp(-(da*da + db*db) / (2 * sigma * sigma))
			sum += win[a*k+b]
		}
	}
	for i := range win {
		win[i] /= sum
	}
	c1, c2 := 0.01*0.01, 0.03*0.03
	total, n := 0.0, 0
	for r := 0; r+k <= h; r++ {
		for c := 0; c+k <= w; c++ {
			mx, my := 0.0, 0.0
			for a := 0; a < k; a++ {
				for b := 0; b < k; b++ {
					mx += win[a*k+b] * x[(r+a)*w+c+b]
					my += win[a*k+b] * y[(r+a)*w+c+b]
				}
			}
			vx, vy, cxy := 0.0, 0.0, 0.0
			for a := 0; a < k; a++ {
				for b := 0; b < k; b++ {
					dx, dy := x[(r+a)*w+c+b]-mx, y[(r+a)*w+c+b]-my
					vx += win[a*k+b] * dx * dx
					vy += win[a*k+b] * dy * dy
					cxy += win[a*k+b] * dx * dy
				}
			}
			total += (2*mx*my + c1) * (2*cxy + c2) / ((mx*mx + my*my + c1) * (vx + vy + c2))
			n++
		}
	}
	return total / float64(n)
}

func TestSSIMReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const h, w = 28, 28
	img := func(f func(i, j int) float64) []float64 {
		out := make([]float64, h*w)
		for i := 0; i < h; i++ {
			for j := 0; j < w; j++ {
				out[i*w+j] = f(i, j)
			}
		}
		return out
	}
	noise := img(func(int, int) float64 { return r.Float64() })
	digit := img(func(i, j int) float64 { // a ring, like a 0
		d := math.Hypot(float64(i)-13.5, float64(j)-13.5)
		return math.Max(0, 1-math.Abs(d-8)/3)
	})
	blurred := img(func(i, j int) float64 { return 0.7*digit[i*w+j] + 0.2*noise[i*w+j] })
	for _, k := range []int{7, 11} {
		s, err := NewSSIM(k, 1.5)
		if err != nil {
			t.Fatal(err)
		}
		// Identical images: 1.
		for _, x := range [][]float64{noise, digit} {
			if v, _ := s.Index(x, x, h, w); math.Abs(v-1) > 1e-12 {
				t.Errorf("k=%d: SSIM(x, x) = %v, want 1", k, v)
			}
		}
		// Constant images a, b: no variance, so SSIM = (2ab + C1)/(a² + b² + C1).
		for _, ab := range [][2]float64{{0.2, 0.6}, {0, 1}, {0.5, 0.5}, {0.9, 0.1}} {
			a, b := ab[0], ab[1]
			got, _ := s.Index(img(func(int, int) float64 { return a }), img(func(int, int) float64 { return b }), h, w)
			want := (2*a*b + 1e-4) / (a*a + b*b + 1e-4)
			if math.Abs(got-want) > 1e-12 {
				t.Errorf("k=%d: constants %v, %v: SSIM %v, closed form %v", k, a, b, got, want)
			}
		}
		// The separable implementation against the window-by-window definition.
		for _, p := range [][2][]float64{{digit, blurred}, {noise, digit}, {blurred, noise}} {
			got, _ := s.Index(p[0], p[1], h, w)
			want := naiveSSIM(p[0], p[1], h, w, k, 1.5)
			back, _ := s.Index(p[1], p[0], h, w)
			if math.Abs(got-want) > 1e-10 || math.Abs(got-back) > 1e-12 {
				t.Errorf("k=%d: SSIM %v, naive %v, swapped %v", k, got, want, back)
			}
		}
		// More noise, less similar.
		v1, _ := s.Index(digit, blurred, h, w)
		v2, _ := s.Index(digit, noise, h, w)
		if !(v1 < 1 && v2 < v1) {
			t.Errorf("k=%d: SSIM(digit, blurred) %v, SSIM(digit, noise) %v", k, v1, v2)
		}
	}
	for _, bad := range []struct {
		k int
		s float64
	}{{0, 1.5}, {8, 1.5}, {7, 0}, {7, math.Inf(1)}} {
		if _, err := NewSSIM(bad.k, bad.s); err == nil {
			t.Errorf("NewSSIM(%d, %v) accepted", bad.k, bad.s)
		}
	}
	s, _ := NewSSIM(11, 1.5)
	if _, err := s.Index(make([]float64, 25), make([]float64, 25), 5, 5); err == nil {
		t.Error("a 5×5 image with an 11×11 window accepted")
	}
	if _, err := s.Index(make([]float64, 784), make([]float64, 783), 28, 28); err == nil {
		t.Error("images of different sizes accepted")
	}
}
