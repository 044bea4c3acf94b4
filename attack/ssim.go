package attack

import (
	"fmt"
	"math"
)

// SSIM is the structural similarity index of Wang, Bovik, Sheikh & Simoncelli (2004),
// "Image quality assessment: from error visibility to structural similarity", with
// the paper's settings: a Gaussian window of Size×Size pixels and standard deviation
// Sigma, normalised to sum 1, K1 = 0.01, K2 = 0.03, dynamic range L, and the mean of
// the SSIM map over the windows that lie wholly inside the image (the paper's MATLAB
// ssim_index filters with 'valid'). It needs no learned weights (unlike LPIPS).
type SSIM struct {
	Size   int     // window side (odd; 11 in the paper, 7 is also common)
	Sigma  float64 // window standard deviation (1.5 in the paper)
	K1, K2 float64
	L      float64 // dynamic range (1 for [0,1] pixels)
	w      []float64
}

// NewSSIM returns the SSIM of a size×size Gaussian window of standard deviation
// sigma with K1 = 0.01, K2 = 0.03 and dynamic range 1.
func NewSSIM(size int, sigma float64) (*SSIM, error) {
	if size < 1 || size%2 == 0 || !(sigma > 0) || math.IsInf(sigma, 0) {
		return nil, fmt.Errorf("ssim: window %d must be odd and ≥ 1 and σ = %v > 0", size, sigma)
	}
	s := &SSIM{Size: size, Sigma: sigma, K1: 0.01, K2: 0.03, L: 1, w: make([]float64, size)}
	sum := 0.0
	for i := range s.w {
		x := float64(i - size/2)
		s.w[i] = math.Exp(-x * x / (2 * sigma * sigma))
		sum += s.w[i]
	}
	for i := range s.w {
		s.w[i] /= sum // the 2-D window is the outer product: it sums to 1 too
	}
	return s, nil
}

// Index returns the mean SSIM of the h×w images x and y (row-major, one channel).
// The local statistics are separable weighted sums: filter rows, then columns.
func (s *SSIM) Index(x, y []float64, h, w int) (float64, error) {
	k := s.Size
	if len(x) != h*w || len(y) != h*w {
		return 0, fmt.Errorf("ssim: images of %d and %d values, want %d×%d", len(x), len(y), h, w)
	}
	if h < k || w < k {
		return 0, fmt.Errorf("ssim: %d×%d image smaller than the %d×%d window", h, w, k, k)
	}
	ho, wo := h-k+1, w-k+1
	// The five maps x, y, x², y², xy, filtered along rows (h × wo) then columns.
	src := [5][]float64{x, y, make([]float64, h*w), make([]float64, h*w), make([]float64, h*w)}
	for i := range x {
		src[2][i], src[3][i], src[4][i] = x[i]*x[i], y[i]*y[i], x[i]*y[i]
	}
	var out [5][]float64
	row := make([]float64, h*wo)
	for c, m := range src {
		for r := 0; r < h; r++ {
			for j := 0; j < wo; j++ {
				v := 0.0
				for t := 0; t < k; t++ {
					v += s.w[t] * m[r*w+j+t]
				}
				row[r*wo+j] = v
			}
		}
		out[c] = make([]float64, ho*wo)
		for r := 0; r < ho; r++ {
			for j := 0; j < wo; j++ {
				v := 0.0
				for t := 0; t < k; t++ {
					v += s.w[t] * row[(r+t)*wo+j]
				}
				out[c][r*wo+j] = v
			}
		}
	}
	c1, c2 := (s.K1*s.L)*(s.K1*s.L), (s.K2*s.L)*(s.K2*s.L)
	total := 0.0
	for i := 0; i < ho*wo; i++ {
		mx, my := out[0][i], out[1][i]
		vx, vy, cxy := out[2][i]-mx*mx, out[3][i]-my*my, out[4][i]-mx*my
		total += (2*mx*my + c1) * (2*cxy + c2) / ((mx*mx + my*my + c1) * (vx + vy + c2))
	}
	return total / float64(ho*wo), nil
}
