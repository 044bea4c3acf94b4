package plot

import (
	"encoding/csv"
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"strconv"
	"strings"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// ReadCSVColumns reads two numeric columns, by header name, from a CSV file with a
// header row. Empty cells, "NaN" and "Inf" parse as such; anything else non-numeric
// is an error naming the row.
func ReadCSVColumns(r io.Reader, xcol, ycol string) (x, y []float64, err error) {
	cr := csv.NewReader(r)
	cr.TrimLeadingSpace = true
	cr.Comment = '#'
	head, err := cr.Read()
	if err != nil {
		return nil, nil, fmt.Errorf("csv header: %w", err)
	}
	xi, yi := -1, -1
	for i, h := range head {
		switch strings.TrimSpace(h) {
		case xcol:
			xi = i
		case ycol:
			yi = i
		}
	}
	if xi < 0 || yi < 0 {
		return nil, nil, fmt.Errorf("csv: columns %q and %q not both in header %v", xcol, ycol, head)
	}
	for row := 2; ; row++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("csv row %d: %w", row, err)
		}
		xv, err := strconv.ParseFloat(strings.TrimSpace(rec[xi]), 64)
		if err != nil {
			return nil, nil, fmt.Errorf("csv row %d column %q: %w", row, xcol, err)
		}
		yv, err := strconv.ParseFloat(strings.TrimSpace(rec[yi]), 64)
		if err != nil {
			return nil, nil, fmt.Errorf("csv row %d column %q: %w", row, ycol, err)
		}
		x, y = append(x, xv), append(y, yv)
	}
	if len(x) == 0 {
		return nil, nil, fmt.Errorf("csv: no data rows")
	}
	return x, y, nil
}

// ScatterOptions configures Scatter.
type ScatterOptions struct {
	XLabel, YLabel, Title string
	LogX, LogY            bool
	// Diagonal draws y = x; points below it (y < x: the realised MSE beat the
	// predicted lower bound) are drawn in red and counted as violations.
	Diagonal bool
}

// ScatterStats summarises a scatter plot.
type ScatterStats struct {
	N          int `json:"n"`
	Dropped    int `json:"dropped"`    // non-finite, or ≤ 0 on a log axis
	Violations int `json:"violations"` // y < x, with Diagonal
}

// Scatter draws y against x (Guo et al. 2022, Fig. 3: the MSE lower bound predicted by dFIL
// on x, the MSE the GLM attack realised on y, log-log, with the y = x cut-off).
func Scatter(x, y []float64, opt ScatterOptions) (*gplot.Plot, ScatterStats, error) {
	p, _, st, err := scatter(x, y, opt)
	return p, st, err
}

// scatter is Scatter, also returning the legend (which records where it was drawn).
func scatter(x, y []float64, opt ScatterOptions) (*gplot.Plot, *InsetLegend, ScatterStats, error) {
	var st ScatterStats
	if len(x) != len(y) {
		return nil, nil, st, fmt.Errorf("scatter: %d x values but %d y values", len(x), len(y))
	}
	var above, below plotter.XYs
	lo, hi := math.Inf(1), math.Inf(-1)
	for i := range x {
		xv, yv := x[i], y[i]
		if bad(xv, opt.LogX) || bad(yv, opt.LogY) {
			st.Dropped++
			continue
		}
		lo, hi = math.Min(lo, math.Min(xv, yv)), math.Max(hi, math.Max(xv, yv))
		if opt.Diagonal && yv < xv {
			below = append(below, plotter.XY{X: xv, Y: yv})
		} else {
			above = append(above, plotter.XY{X: xv, Y: yv})
		}
	}
	st.N = len(above) + len(below)
	st.Violations = len(below)
	if st.N == 0 {
		return nil, nil, st, fmt.Errorf("scatter: no drawable points (%d dropped)", st.Dropped)
	}
	p := gplot.New()
	p.Title.Text = opt.Title
	p.X.Label.Text, p.Y.Label.Text = opt.XLabel, opt.YLabel
	if opt.LogX {
		p.X.Scale, p.X.Tick.Marker = gplot.LogScale{}, DecadeTicks{}
	}
	if opt.LogY {
		p.Y.Scale, p.Y.Tick.Marker = gplot.LogScale{}, DecadeTicks{}
	}
	p.Add(plotter.NewGrid())
	legend := NewInsetLegend() // inside the data area, clear of the points
	add := func(pts plotter.XYs, c color.Color, label string) error {
		if len(pts) == 0 {
			return nil
		}
		s, err := plotter.NewScatter(pts)
		if err != nil {
			return fmt.Errorf("scatter: %w", err)
		}
		s.GlyphStyle.Color = c
		s.GlyphStyle.Shape = draw.CircleGlyph{}
		s.GlyphStyle.Radius = vg.Points(2)
		p.Add(s)
		for _, q := range pts {
			legend.avoid = append(legend.avoid, [2]float64{q.X, q.Y})
		}
		if label != "" {
			legend.Add(label, s)
		}
		return nil
	}
	aboveLabel, belowLabel := "", ""
	if opt.Diagonal {
		aboveLabel, belowLabel = "bound holds", "bound violated"
	}
	if err := add(above, color.RGBA{R: 31, G: 119, B: 180, A: 255}, aboveLabel); err != nil {
		return nil, nil, st, err
	}
	if err := add(below, color.RGBA{R: 214, G: 39, B: 40, A: 255}, belowLabel); err != nil {
		return nil, nil, st, err
	}
	if opt.Diagonal {
		if lo == hi {
			lo, hi = lo/2, hi*2
		}
		ln, err := plotter.NewLine(plotter.XYs{{X: lo, Y: lo}, {X: hi, Y: hi}})
		if err != nil {
			return nil, nil, st, fmt.Errorf("scatter: %w", err)
		}
		ln.LineStyle.Width = vg.Points(1)
		p.Add(ln)
		legend.Add("y = x", ln)
		legend.AvoidLine([][2]float64{{lo, lo}, {hi, hi}}, opt.LogX && opt.LogY)
	}
	p.Add(legend)
	return p, legend, st, nil
}

func bad(v float64, log bool) bool {
	return math.IsNaN(v) || math.IsInf(v, 0) || (log && v <= 0)
}
