package glm

import (
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
)

// WriteImageGrid writes grey-scale images (each h×w values, row-major, 0 = black,
// 1 = white; values outside [0,1] are clipped, NaN is drawn mid-grey) as a PNG grid
// with cols images per row, one pixel of separation and no up-scaling. The file is
// written atomically (temporary file + rename).
func WriteImageGrid(path string, images [][]float32, h, w int, cols int) error {
	return WriteImageGridScaled(path, images, h, w, cols, 1)
}

// WriteImageGridScaled is WriteImageGrid with every pixel drawn as a scale×scale block.
func WriteImageGridScaled(path string, images [][]float32, h, w, cols, scale int) error {
	if len(images) == 0 {
		return errors.New("image grid: no images")
	}
	if h <= 0 || w <= 0 || cols <= 0 || scale <= 0 {
		return fmt.Errorf("image grid: need positive h, w, cols, scale (got %d, %d, %d, %d)", h, w, cols, scale)
	}
	for k, im := range images {
		if len(im) != h*w {
			return fmt.Errorf("image grid: image %d has %d values, want %d×%d", k, len(im), h, w)
		}
	}
	if cols > len(images) {
		cols = len(images)
	}
	rows := (len(images) + cols - 1) / cols
	const pad = 1
	cw, ch := w*scale+pad, h*scale+pad
	img := image.NewGray(image.Rect(0, 0, cols*cw+pad, rows*ch+pad))
	for i := range img.Pix {
		img.Pix[i] = 128
	}
	for k, im := range images {
		x0, y0 := pad+(k%cols)*cw, pad+(k/cols)*ch
		for r := 0; r < h; r++ {
			for c := 0; c < w; c++ {
				v := float64(im[r*w+c])
				g := uint8(128)
				if !math.IsNaN(v) {
					g = uint8(math.Round(255 * math.Min(1, math.Max(0, v))))
				}
				for dy := 0; dy < scale; dy++ {
					for dx := 0; dx < scale; dx++ {
						img.SetGray(x0+c*scale+dx, y0+r*scale+dy, color.Gray{Y: g})
					}
				}
			}
		}
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".grid-*.png")
	if err != nil {
		return fmt.Errorf("image grid: %w", err)
	}
	if err := png.Encode(tmp, img); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("image grid: encode %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("image grid: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("image grid: %w", err)
	}
	return nil
}
