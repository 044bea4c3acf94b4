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

// checkBins defaults Bins to 50 and checks it is in 1..10000; what names the figure
// in the error.
func (opt *HistOptions) checkBins(what string) error {
	if opt.Bins == 0 {
		opt.Bins = 50
	}
	if opt.Bins < 1 || opt.Bins > 10000 {
		return fmt.Errorf("%s: bins = %d, want 1..10000", what, opt.Bins)
	}
	return nil
}

// histValues returns the values a histogram draws (log10 of them with log10) and
// their stats without the bins: the non-finite values, and those ≤ 0 with log10, are
// dropped; Min and Max are of the values before log10.
func histValues(values []float64, log10 bool) ([]float64, HistStats) {
	st := HistStats{Min: math.Inf(1), Max: math.Inf(-1)}
	var vs []float64
	for _, v := range values {
		if math.IsNaN(v) || math.IsInf(v, 0) || (log10 && v <= 0) {
			st.Dropped++
			continue
		}
		st.Min, st.Max = math.Min(st.Min, v), math.Max(st.Max, v)
		if log10 {
			v = math.Log10(v)
		}
		vs = append(vs, v)
	}
	st.N = len(vs)
	return vs, st
}

// newPlot returns an empty histogram plot with opt's title and axis labels.
func (opt HistOptions) newPlot() *gplot.Plot {
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
	return p
}

// Histogram draws the distribution of per-sample values (Guo et al. 2022, Fig. 2: dFIL or the
// per-sample MSE bound 1/dFIL across the training set).
func Histogram(values []float64, opt HistOptions) (*gplot.Plot, HistStats, error) {
	if err := opt.checkBins("histogram"); err != nil {
		return nil, HistStats{}, err
	}
	vs, st := histValues(values, opt.Log10)
	if st.N == 0 {
		return nil, st, fmt.Errorf("histogram: no finite values to draw (%d dropped)", st.Dropped)
	}
	h, err := plotter.NewHist(plotter.Values(vs), opt.Bins)
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
	p := opt.newPlot()
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

// groupColors are the fill colours of GroupedHistogram's groups, in order.
var groupColors = []color.NRGBA{{R: 31, G: 119, B: 180, A: 150}, {R: 214, G: 39, B: 40, A: 150},
	{R: 44, G: 160, B: 44, A: 150}, {R: 148, G: 103, B: 189, A: 150}}

// GroupedHistogram draws several samples as overlaid histograms over common bins,
// each with a dashed vertical line at its mean (Hannun et al. 2021, Fig. 2: per-example
// η separated by class label, the class means dashed). names labels the groups in the
// legend. With opt.Log10 the bins and means are of log10(value) and values ≤ 0 are
// dropped. The stats are per group, with the shared edges.
func GroupedHistogram(groups [][]float64, names []string, opt HistOptions) (*gplot.Plot, []HistStats, error) {
	if len(groups) == 0 || len(groups) != len(names) || len(groups) > len(groupColors) {
		return nil, nil, fmt.Errorf("grouped histogram: %d groups and %d names (want 1..%d of each)", len(groups), len(names), len(groupColors))
	}
	if err := opt.checkBins("grouped histogram"); err != nil {
		return nil, nil, err
	}
	stats := make([]HistStats, len(groups))
	vals := make([][]float64, len(groups))
	lo, hi := math.Inf(1), math.Inf(-1)
	for g, vs := range groups {
		vals[g], stats[g] = histValues(vs, opt.Log10)
		for _, v := range vals[g] {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	if math.IsInf(lo, 1) {
		return nil, nil, fmt.Errorf("grouped histogram: no finite values to draw")
	}
	if hi == lo {
		lo, hi = lo-0.5, hi+0.5
	}
	width := (hi - lo) / float64(opt.Bins)
	edges := make([]float64, opt.Bins+1)
	for k := range edges {
		edges[k] = lo + float64(k)*width
	}
	p := opt.newPlot()
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	top := 0.0
	for g := range groups {
		counts := make([]float64, opt.Bins)
		for _, v := range vals[g] {
			k := min(int((v-lo)/width), opt.Bins-1)
			counts[k]++
		}
		stats[g].Counts, stats[g].Edges = counts, edges
		if len(vals[g]) == 0 {
			continue
		}
		bins := make([]plotter.HistogramBin, opt.Bins)
		for k := range bins {
			bins[k] = plotter.HistogramBin{Min: edges[k], Max: edges[k+1], Weight: counts[k]}
			top = math.Max(top, counts[k])
		}
		h := &plotter.Histogram{Bins: bins, Width: width, FillColor: groupColors[g], LineStyle: plotter.DefaultLineStyle}
		h.LineStyle.Width = vg.Points(0.4)
		p.Add(h)
		p.Legend.Add(names[g], h)
	}
	for g := range groups {
		if len(vals[g]) == 0 {
			continue
		}
		mean := 0.0
		for _, v := range vals[g] {
			mean += v
		}
		mean /= float64(len(vals[g]))
		ln, err := plotter.NewLine(plotter.XYs{{X: mean, Y: 0}, {X: mean, Y: top * 1.05}})
		if err != nil {
			return nil, nil, fmt.Errorf("grouped histogram mean line: %w", err)
		}
		c := groupColors[g]
		c.A = 255
		ln.LineStyle.Color = c
		ln.LineStyle.Width = vg.Points(1.5)
		ln.LineStyle.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		p.Add(ln)
	}
	return p, stats, nil
}
