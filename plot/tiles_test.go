package plot

import (
	"bytes"
	"image/png"
	"strings"
	"testing"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
)

// A 2 × 2 grid with a blank tile renders at the exact pixel size; an empty or
// ragged grid is refused.
func TestRenderTiles(t *testing.T) {
	mk := func() *gplot.Plot {
		p := gplot.New()
		l, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 0}, {X: 1, Y: 2}})
		if err != nil {
			t.Fatal(err)
		}
		p.Add(l)
		return p
	}
	b, err := RenderTiles([][]*gplot.Plot{{mk(), mk()}, {mk(), nil}}, "png", 300, 200)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(b))
	if err != nil || cfg.Width != 300 || cfg.Height != 200 {
		t.Fatalf("PNG %v %dx%d, want 300x200", err, cfg.Width, cfg.Height)
	}
	for _, c := range []struct {
		rows [][]*gplot.Plot
		want string
	}{{nil, "no plots"}, {[][]*gplot.Plot{{mk(), mk()}, {mk()}}, "row 1 has 1 plots"}} {
		if _, err := RenderTiles(c.rows, "png", 300, 200); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want %q", err, c.want)
		}
	}
}
