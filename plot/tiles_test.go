package plot

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
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

// Save and SaveTiles write the PNG their Render gives, byte for byte; an unknown
// extension or a render error names the path and writes nothing.
func TestSaveWritesRender(t *testing.T) {
	p := gplot.New()
	l, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 0}, {X: 1, Y: 2}})
	if err != nil {
		t.Fatal(err)
	}
	p.Add(l)
	dir := t.TempDir()
	one, err := Render(p, "png", 120, 90)
	if err != nil {
		t.Fatal(err)
	}
	tiles, err := RenderTiles([][]*gplot.Plot{{p, nil}}, "png", 240, 90)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		save func(path string) error
		want []byte
	}{
		{"Save", func(path string) error { return Save(p, path, 120, 90) }, one},
		{"SaveTiles", func(path string) error { return SaveTiles([][]*gplot.Plot{{p, nil}}, path, 240, 90) }, tiles},
	} {
		path := filepath.Join(dir, c.name+".png")
		if err := c.save(path); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, c.want) {
			t.Errorf("%s: file differs from the render (%v)", c.name, err)
		}
		bad := filepath.Join(dir, c.name+".gif")
		if err := c.save(bad); err == nil || !strings.Contains(err.Error(), "unsupported extension") {
			t.Errorf("%s to .gif: %v, want unsupported extension", c.name, err)
		}
		if _, err := os.Stat(bad); err == nil {
			t.Errorf("%s wrote %s", c.name, bad)
		}
	}
	bad := filepath.Join(dir, "ragged.png")
	if err := SaveTiles([][]*gplot.Plot{{p, p}, {p}}, bad, 240, 90); err == nil || !strings.HasPrefix(err.Error(), bad+": ") {
		t.Errorf("ragged grid: %v, want an error naming %s", err, bad)
	}
	if _, err := os.Stat(bad); err == nil {
		t.Errorf("ragged grid wrote %s", bad)
	}
}
