package plot

import (
	"fmt"
	"image/color"
	"math"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

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
	if opt.Bins == 0 {
		opt.Bins = 50
	}
	if opt.Bins < 1 || opt.Bins > 10000 {
		return nil, nil, fmt.Errorf("grouped histogram: bins = %d, want 1..10000", opt.Bins)
	}
	stats := make([]HistStats, len(groups))
	vals := make([][]float64, len(groups))
	lo, hi := math.Inf(1), math.Inf(-1)
	for g, vs := range groups {
		st := HistStats{Min: math.Inf(1), Max: math.Inf(-1)}
		for _, v := range vs {
			if math.IsNaN(v) || math.IsInf(v, 0) || (opt.Log10 && v <= 0) {
				st.Dropped++
				continue
			}
			st.Min, st.Max = math.Min(st.Min, v), math.Max(st.Max, v)
			if opt.Log10 {
				v = math.Log10(v)
			}
			vals[g] = append(vals[g], v)
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
		st.N = len(vals[g])
		stats[g] = st
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
