package plot

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"

	"github.com/dpfil/dpfil/internal/atomicfile"
	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgpdf"
	"gonum.org/v1/plot/vg/vgsvg"
)

// DPI is the resolution at which pixel sizes are converted to lengths.
const DPI = 96

// Max figure side in pixels, to keep a typo from allocating gigabytes.
const maxSide = 20000

// Format returns the figure format implied by a file name: png, svg or pdf.
func Format(path string) (string, error) {
	ext := strings.ToLower(strings.TrimPrefix(filepath.Ext(path), "."))
	switch ext {
	case "png", "svg", "pdf":
		return ext, nil
	}
	return "", fmt.Errorf("figure %q: unsupported extension %q (want .png, .svg or .pdf)", path, filepath.Ext(path))
}

// Render draws p into a byte slice in the given format at width × height pixels (for
// SVG and PDF, the same size in points at DPI pixels per inch).
func Render(p *gplot.Plot, format string, width, height int) (out []byte, err error) {
	return render(format, width, height, func(c draw.Canvas) {
		useGlyphFallbacks(p)
		p.Draw(c)
	})
}

// render draws with paint onto a canvas of the format at width × height pixels and
// returns the encoded figure.
func render(format string, width, height int, paint func(draw.Canvas)) (out []byte, err error) {
	if width < 16 || height < 16 || width > maxSide || height > maxSide {
		return nil, fmt.Errorf("figure size %d×%d px: want each side in [16, %d]", width, height, maxSide)
	}
	defer func() { // gonum/plot panics on some degenerate inputs; report them as errors
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("render figure: %v", r)
		}
	}()
	w := vg.Length(width) * vg.Inch / DPI
	h := vg.Length(height) * vg.Inch / DPI
	var buf bytes.Buffer
	switch format {
	case "png":
		c := vgimg.NewWith(vgimg.UseImage(image.NewRGBA(image.Rect(0, 0, width, height))), vgimg.UseDPI(DPI))
		paint(draw.New(c))
		if err := png.Encode(&buf, c.Image()); err != nil {
			return nil, fmt.Errorf("encode PNG: %w", err)
		}
	case "svg":
		c := vgsvg.New(w, h)
		paint(draw.New(c))
		if _, err := c.WriteTo(&buf); err != nil {
			return nil, fmt.Errorf("encode SVG: %w", err)
		}
	case "pdf":
		c := vgpdf.New(w, h)
		paint(draw.New(c))
		if _, err := c.WriteTo(&buf); err != nil {
			return nil, fmt.Errorf("encode PDF: %w", err)
		}
	default:
		return nil, fmt.Errorf("unsupported figure format %q", format)
	}
	return buf.Bytes(), nil
}

// Save renders p to path (format from the extension) at width × height pixels,
// atomically: a temporary file in the same directory renamed into place.
func Save(p *gplot.Plot, path string, width, height int) error {
	return saveRendered(path, func(format string) ([]byte, error) { return Render(p, format, width, height) })
}

// saveRendered writes what render gives for path's format (from its extension) to
// path, atomically; the render error names path.
func saveRendered(path string, render func(format string) ([]byte, error)) error {
	format, err := Format(path)
	if err != nil {
		return err
	}
	b, err := render(format)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return writeFileAtomic(path, b)
}

// SavePNG writes an image as a PNG file, atomically.
func SavePNG(path string, img image.Image) error {
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return fmt.Errorf("encode PNG %s: %w", path, err)
	}
	return writeFileAtomic(path, buf.Bytes())
}

func writeFileAtomic(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return atomicfile.WriteFile(path, b)
}
