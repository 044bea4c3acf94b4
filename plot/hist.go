package plot

import (
	"fmt"
	"image/color"
	"math"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// HistOptions configures Histogram.
type HistOptions struct {
	Bins   int    // number of bins (default 50)
	Log10  bool   // histogram of log10(value)
	XLabel string // quantity name, e.g. "dFIL" or "MSE lower bound"
	Title  string
	// Marker, if > 0 and finite, draws a vertical line at this value (e.g. MSE = 1).
	Marker      float64
	MarkerLabel string
}

// HistStats summarises the values a histogram was drawn from.
type HistStats struct {
	N       int       `json:"n"`       // values drawn
	Dropped int       `json:"dropped"` // non-finite, or ≤ 0 with Log10
	Min     float64   `json:"min"`
	Max     float64   `json:"max"`
	Counts  []float64 `json:"counts"` // per bin
	Edges   []float64 `json:"edges"`  // Bins+1 bin edges (in log10 units with Log10)
}

// Histogram draws the distribution of per-sample values (Guo et al. 2022, Fig. 2: dFIL or the
// per-sample MSE bound 1/dFIL across the training set).
func Histogram(values []float64, opt HistOptions) (*gplot.Plot, HistStats, error) {
	if opt.Bins == 0 {
		opt.Bins = 50
	}
	if opt.Bins < 1 || opt.Bins > 10000 {
		return nil, HistStats{}, fmt.Errorf("histogram: bins = %d, want 1..10000", opt.Bins)
	}
	st := HistStats{Min: math.Inf(1), Max: math.Inf(-1)}
	var vs plotter.Values
	for _, v := range values {
		if math.IsNaN(v) || math.IsInf(v, 0) || (opt.Log10 && v <= 0) {
			st.Dropped++
			continue
		}
		st.Min, st.Max = math.Min(st.Min, v), math.Max(st.Max, v)
		if opt.Log10 {
			v = math.Log10(v)
		}
		vs = append(vs, v)
	}
	st.N = len(vs)
	if st.N == 0 {
		return nil, st, fmt.Errorf("histogram: no finite values to draw (%d dropped)", st.Dropped)
	}
	h, err := plotter.NewHist(vs, opt.Bins)
	if err != nil {
		return nil, st, fmt.Errorf("histogram: %w", err)
	}
	for i, b := range h.Bins {
		st.Counts = append(st.Counts, b.Weight)
		if i == 0 {
			st.Edges = append(st.Edges, b.Min)
		}
		st.Edges = append(st.Edges, b.Max)
	}
	h.FillColor = color.NRGBA{R: 214, G: 39, B: 40, A: 200}
	h.LineStyle.Width = vg.Points(0.5)
	p := gplot.New()
	p.Title.Text = opt.Title
	label := opt.XLabel
	if label == "" {
		label = "value"
	}
	if opt.Log10 {
		label = "log10 " + label
	}
	p.X.Label.Text = label
	p.Y.Label.Text = "training samples"
	p.Add(plotter.NewGrid(), h)
	if m := opt.Marker; m > 0 && !math.IsInf(m, 0) {
		x := m
		if opt.Log10 {
			x = math.Log10(m)
		}
		top := 0.0
		for _, c := range st.Counts {
			top = math.Max(top, c)
		}
		ln, err := plotter.NewLine(plotter.XYs{{X: x, Y: 0}, {X: x, Y: top * 1.05}})
		if err != nil {
			return nil, st, fmt.Errorf("histogram marker: %w", err)
		}
		ln.LineStyle.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		ln.LineStyle.Color = color.Gray{Y: 60}
		p.Add(ln)
		if opt.MarkerLabel != "" {
			p.Legend.Add(opt.MarkerLabel, ln)
			p.Legend.Top = true
		}
	}
	return p, st, nil
}
