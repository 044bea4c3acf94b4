package plot

import (
	"errors"
	"fmt"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// SaveTiles renders a grid of plots (rows × columns, every row as long as the
// first; a nil plot leaves its tile blank) into one figure at path (format from
// the extension) of width × height pixels, the tiles' data areas aligned, and
// writes it atomically.
func SaveTiles(rows [][]*gplot.Plot, path string, width, height int) error {
	return saveRendered(path, func(format string) ([]byte, error) { return RenderTiles(rows, format, width, height) })
}

// RenderTiles is SaveTiles into a byte slice.
func RenderTiles(rows [][]*gplot.Plot, format string, width, height int) ([]byte, error) {
	if len(rows) == 0 || len(rows[0]) == 0 {
		return nil, errors.New("tiles: no plots")
	}
	cols := len(rows[0])
	for i, r := range rows {
		if len(r) != cols {
			return nil, fmt.Errorf("tiles: row %d has %d plots, row 0 has %d", i, len(r), cols)
		}
		for _, p := range r {
			if p != nil {
				useGlyphFallbacks(p)
			}
		}
	}
	t := draw.Tiles{Rows: len(rows), Cols: cols, PadX: vg.Millimeter * 3, PadY: vg.Millimeter * 3,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	return render(format, width, height, func(c draw.Canvas) {
		cs := gplot.Align(rows, t, c)
		for i, r := range rows {
			for j, p := range r {
				if p != nil {
					p.Draw(cs[i][j])
				}
			}
		}
	})
}
