package plot

import (
	"cmp"
	"fmt"
	"image"
	"image/color"
	"math"
	"slices"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/vgimg"
)

// GridOptions lays out an image grid.
type GridOptions struct {
	Cols  int // images per row (default: all in one row, at most 16)
	Scale int // pixel magnification (default 2)
	Pad   int // gap between images in output pixels (default 2)

	// Labels, all optional. Title is a line above the grid; RowLabels[r] is written
	// left of row r (e.g. "target", "reconstruction"); Captions[k] under image k
	// (e.g. "MSE 0.012"). Cells widen to fit their captions. Text is drawn in the
	// figures' font (MissingGlyphs says which characters it lacks).
	Title     string
	RowLabels []string
	Captions  []string
}

// gridFontPx is the size of a grid's label text in pixels.
const gridFontPx = 11

// labelled reports whether the options ask for any text.
func (o GridOptions) labelled() bool {
	return o.Title != "" || len(o.RowLabels) > 0 || len(o.Captions) > 0
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
	if len(opt.RowLabels) > rows || len(opt.Captions) > len(imgs) {
		return nil, fmt.Errorf("image grid: %d row labels and %d captions for %d rows of %d images", len(opt.RowLabels), len(opt.Captions), rows, len(imgs))
	}
	// Margins and cell sizes in pixels: text is measured in the figures' font.
	face := gridFace()
	px := func(l vg.Length) int { return int(math.Ceil(float64(l / vg.Inch * DPI))) }
	left, top, capH := 0, 0, 0
	imgW := w * opt.Scale
	cellW := imgW
	lineH := px(face.Extents().Height)
	if opt.labelled() {
		for _, l := range opt.RowLabels {
			left = max(left, px(face.Width(l))+2*opt.Pad+2)
		}
		for _, c := range opt.Captions {
			cellW = max(cellW, px(face.Width(c))+2)
		}
		if len(opt.Captions) > 0 {
			capH = lineH
		}
		if opt.Title != "" {
			top = lineH + opt.Pad
		}
	}
	cw, ch := cellW+opt.Pad, h*opt.Scale+capH+opt.Pad
	W, H := left+opt.Cols*cw+opt.Pad, top+rows*ch+opt.Pad
	if opt.Title != "" {
		W = max(W, px(face.Width(opt.Title))+2*opt.Pad)
	}
	if W > maxSide || H > maxSide {
		return nil, fmt.Errorf("image grid: %d×%d px is too large", W, H)
	}
	out := image.NewRGBA(image.Rect(0, 0, W, H))
	for i := range out.Pix {
		out.Pix[i] = 255
	}
	if opt.labelled() { // text first: the canvas draws on a white copy of out
		var err error
		if out, err = drawGridText(out, face, opt, left, top, cw, ch, h*opt.Scale); err != nil {
			return nil, err
		}
	}
	plane := h * w
	for k, im := range imgs {
		if len(im) != c*plane {
			return nil, fmt.Errorf("image grid: image %d has %d values, want %d", k, len(im), c*plane)
		}
		x0 := left + opt.Pad + (k%opt.Cols)*cw + (cellW-imgW)/2
		y0 := top + opt.Pad + (k/opt.Cols)*ch
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

// gridFace is the font of grid labels: the figures' font at gridFontPx pixels.
func gridFace() font.Face {
	return font.DefaultCache.Lookup(gplot.DefaultFont, vg.Length(gridFontPx)*vg.Inch/DPI)
}

// drawGridText returns a white image of img's size with the title, row labels and
// captions written into the margins.
func drawGridText(img *image.RGBA, face font.Face, opt GridOptions, left, top, cw, ch, imgH int) (out *image.RGBA, err error) {
	defer func() { // the font code panics on broken font data; report it
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("image grid: draw labels: %v", r)
		}
	}()
	b := img.Bounds().Size()
	c := vgimg.NewWith(vgimg.UseImage(img), vgimg.UseDPI(DPI))
	unit := vg.Inch / DPI
	// pt is the baseline point for text whose box starts at pixel column x and whose
	// line occupies pixel rows y … y+lineH (image rows grow downwards, vg's upwards).
	ext := face.Extents()
	lineH := math.Ceil(float64(ext.Height / unit))
	pt := func(x, y float64) vg.Point {
		base := y + (lineH+float64((ext.Ascent-ext.Descent)/unit))/2
		return vg.Point{X: vg.Length(x) * unit, Y: vg.Length(float64(b.Y)-base) * unit}
	}
	c.SetColor(color.Black)
	if opt.Title != "" {
		c.FillString(face, pt(float64(opt.Pad), float64(opt.Pad)/2), drawable(opt.Title))
	}
	for r, l := range opt.RowLabels {
		y := float64(top+opt.Pad+r*ch) + float64(imgH)/2 - lineH/2
		c.FillString(face, pt(float64(opt.Pad), y), drawable(l))
	}
	for k, s := range opt.Captions {
		x := float64(left+opt.Pad+(k%opt.Cols)*cw) + float64(cw-opt.Pad)/2 - float64(face.Width(drawable(s))/unit)/2
		y := float64(top + opt.Pad + (k/opt.Cols)*ch + imgH)
		c.FillString(face, pt(x, y), drawable(s))
	}
	rgba, ok := c.Image().(*image.RGBA)
	if !ok || rgba.Bounds() != img.Bounds() {
		return nil, fmt.Errorf("image grid: the text canvas is not a %v RGBA image", img.Bounds())
	}
	return rgba, nil
}

// MissingGlyphs returns the characters of s that the figures' font (gonum's default,
// Liberation Serif) has no glyph for: they would be drawn as boxes or dropped.
func MissingGlyphs(s string) []rune {
	f := font.DefaultCache.Lookup(gplot.DefaultFont, 12)
	var out []rune
	for _, r := range s {
		if i, err := f.Face.GlyphIndex(nil, r); err != nil || i == 0 {
			if !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
	}
	return out
}

// SaveGrid writes grey-scale h×w images as a PNG grid laid out and labelled by opt
// (opt.Cols per row, title, row labels, captions), each pixel drawn 3×3 unless
// opt.Scale says otherwise (NaN pixels show mid-grey).
func SaveGrid(path string, imgs [][]float32, h, w int, opt GridOptions) error {
	opt.Scale = cmp.Or(opt.Scale, 3)
	opt.Pad = cmp.Or(opt.Pad, 1)
	img, err := ImageGrid(imgs, 1, h, w, opt)
	if err != nil {
		return err
	}
	return SavePNG(path, img)
}
