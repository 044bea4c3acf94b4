package plot

import (
	"fmt"
	"image"
	"image/color"
	"math"
)

// GridOptions lays out an image grid.
type GridOptions struct {
	Cols  int // images per row (default: all in one row, at most 16)
	Scale int // pixel magnification (default 2)
	Pad   int // gap between images in output pixels (default 2)
}

// ImageGrid tiles images (each C×H×W in [0,1], NCHW, C = 1 grey or 3 RGB) into one
// picture, row-major, on a white background: Guo et al. (2022) Fig. 4 and 6 (samples and
// their reconstructions, or the highest- and lowest-dFIL samples). Values outside
// [0,1] are clamped; NaN (a failed reconstruction) is drawn mid-grey.
func ImageGrid(imgs [][]float32, c, h, w int, opt GridOptions) (*image.RGBA, error) {
	if len(imgs) == 0 {
		return nil, fmt.Errorf("image grid: no images")
	}
	if (c != 1 && c != 3) || h < 1 || w < 1 {
		return nil, fmt.Errorf("image grid: shape %d×%d×%d, want C = 1 or 3 and positive H, W", c, h, w)
	}
	if opt.Cols <= 0 {
		opt.Cols = min(len(imgs), 16)
	}
	if opt.Scale <= 0 {
		opt.Scale = 2
	}
	if opt.Pad < 0 {
		return nil, fmt.Errorf("image grid: negative padding %d", opt.Pad)
	}
	if opt.Pad == 0 {
		opt.Pad = 2
	}
	rows := (len(imgs) + opt.Cols - 1) / opt.Cols
	cw, ch := w*opt.Scale+opt.Pad, h*opt.Scale+opt.Pad
	W, H := opt.Cols*cw+opt.Pad, rows*ch+opt.Pad
	if W > maxSide || H > maxSide {
		return nil, fmt.Errorf("image grid: %d×%d px is too large", W, H)
	}
	out := image.NewRGBA(image.Rect(0, 0, W, H))
	for i := range out.Pix {
		out.Pix[i] = 255
	}
	plane := h * w
	for k, im := range imgs {
		if len(im) != c*plane {
			return nil, fmt.Errorf("image grid: image %d has %d values, want %d", k, len(im), c*plane)
		}
		x0 := opt.Pad + (k%opt.Cols)*cw
		y0 := opt.Pad + (k/opt.Cols)*ch
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				var rgb [3]uint8
				for ch := 0; ch < 3; ch++ {
					src := 0
					if c == 3 {
						src = ch
					}
					v := float64(im[src*plane+y*w+x])
					if math.IsNaN(v) {
						v = 0.5
					}
					rgb[ch] = uint8(math.Round(255 * math.Max(0, math.Min(1, v))))
				}
				col := color.RGBA{R: rgb[0], G: rgb[1], B: rgb[2], A: 255}
				for dy := 0; dy < opt.Scale; dy++ {
					for dx := 0; dx < opt.Scale; dx++ {
						out.SetRGBA(x0+x*opt.Scale+dx, y0+y*opt.Scale+dy, col)
					}
				}
			}
		}
	}
	return out, nil
}
