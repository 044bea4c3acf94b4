package figures

import (
	"fmt"
	"image/color"
	"math"

	"github.com/dpfil/dpfil/plot"
	"github.com/dpfil/dpfil/sweep"
	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// BoundKind names one of the MSE lower bounds a train.Result carries.
type BoundKind struct {
	Key   string     // JSON name in the result
	Label string     // legend label
	Color color.RGBA // Guo et al. (2022) Fig. 5 colours: RDP blue, max dFIL red, median orange
	Shape draw.GlyphDrawer
	// Optional series are left out of the figure when no record has the bound.
	Optional bool
}

// BoundKinds are the three bounds of Guo et al. (2022) Fig. 5, in legend order, and
// the optional two-stage worst-sample FIL bound.
func BoundKinds() []BoundKind {
	return []BoundKind{
		{Key: "mse_bound_rdp", Label: "RDP bound", Color: color.RGBA{R: 31, G: 119, B: 180, A: 255}, Shape: draw.CircleGlyph{}},
		{Key: "mse_bound_fil_max", Label: "FIL bound (max dFIL)", Color: color.RGBA{R: 214, G: 39, B: 40, A: 255}, Shape: draw.TriangleGlyph{}},
		{Key: "mse_bound_fil_median", Label: "FIL bound (median dFIL)", Color: color.RGBA{R: 255, G: 127, B: 14, A: 255}, Shape: draw.SquareGlyph{}},
		// Not in the paper: the worst sample from the two-stage estimate (runs trained
		// with fil_refine_top), which the screen's noisy max over-states.
		{Key: "mse_bound_fil_two_stage", Label: "FIL bound (two-stage max dFIL)", Color: color.RGBA{R: 120, G: 0, B: 60, A: 255}, Shape: draw.PyramidGlyph{}, Optional: true},
	}
}

func boundOf(m sweep.Metrics, key string) float64 {
	switch key {
	case "mse_bound_rdp":
		return m.MSEBoundRDP
	case "mse_bound_fil_max":
		return m.MSEBoundFILMax
	case "mse_bound_fil_median":
		return m.MSEBoundFILMedian
	case "mse_bound_fil_two_stage":
		return m.MSEBoundFILTwoStage
	}
	return math.NaN()
}

// ParetoSeries is one bound's points (test accuracy, MSE bound) over a sweep and its
// Pareto frontier. Points index into the records the series was built from; records
// whose bound or accuracy cannot be drawn on a log axis (missing, zero, negative,
// infinite or NaN: e.g. FIL turned off) are left out and counted in Dropped.
type ParetoSeries struct {
	Key      string        `json:"key"`
	Label    string        `json:"label"`
	Points   []sweep.Point `json:"-"`
	Frontier []sweep.Point `json:"frontier"`
	Dropped  int           `json:"dropped"`
	kind     BoundKind
}

// ParetoData extracts the three series of Guo et al. (2022) Fig. 5 from sweep records and
// computes each one's frontier with sweep.Frontier.
func ParetoData(recs []sweep.Record) ([]ParetoSeries, error) {
	ms := make([]sweep.Metrics, len(recs))
	for i, r := range recs {
		m, err := r.Metrics()
		if err != nil {
			return nil, err
		}
		ms[i] = m
	}
	var out []ParetoSeries
	for _, k := range BoundKinds() {
		s := ParetoSeries{Key: k.Key, Label: k.Label, kind: k, Points: []sweep.Point{}}
		for i, m := range ms {
			b := boundOf(m, k.Key)
			if !(b > 0) || math.IsInf(b, 0) || math.IsNaN(m.TestAccuracy) || math.IsInf(m.TestAccuracy, 0) {
				s.Dropped++
				continue
			}
			s.Points = append(s.Points, sweep.Point{Index: i, Accuracy: m.TestAccuracy, Bound: b})
		}
		f, err := sweep.Frontier(s.Points)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k.Key, err)
		}
		s.Frontier = f
		if k.Optional && len(s.Points) == 0 {
			continue
		}
		out = append(out, s)
	}
	return out, nil
}

type xys []sweep.Point

func (p xys) Len() int                { return len(p) }
func (p xys) XY(i int) (x, y float64) { return p[i].Accuracy, p[i].Bound }

// ParetoOptions labels the figure.
type ParetoOptions struct {
	Title string
	// AccuracyPercent shows accuracy in percent on the x axis.
	AccuracyPercent bool
}

// Pareto draws Guo et al. (2022) Fig. 5: test accuracy on x, MSE lower bound on a log y axis,
// one scatter series per bound with its Pareto frontier as a dashed line, and the
// MSE = 1 "perfect privacy" line.
func Pareto(series []ParetoSeries, opt ParetoOptions) (*gplot.Plot, error) {
	p, _, err := pareto(series, opt)
	return p, err
}

// pareto is Pareto, also returning the legend (which records where it was drawn).
func pareto(series []ParetoSeries, opt ParetoOptions) (*gplot.Plot, *plot.InsetLegend, error) {
	p := gplot.New()
	p.Title.Text = opt.Title
	p.X.Label.Text = "test accuracy"
	scale := 1.0
	if opt.AccuracyPercent {
		p.X.Label.Text = "test accuracy (%)"
		scale = 100
	}
	p.Y.Label.Text = "MSE lower bound"
	p.Y.Scale = gplot.LogScale{}
	p.Y.Tick.Marker = plot.DecadeTicks{}
	p.X.Tick.Marker = plot.LinearTicks{Labels: 4}
	// Inside the data area, preferably top right: high accuracy and high bound at
	// once is the region the privacy–utility trade-off leaves empty.
	legend := plot.NewInsetLegend()
	p.Add(plotter.NewGrid())

	ymin, ymax := 1.0, 1.0 // the MSE = 1 line is always shown
	xmin, xmax := math.Inf(1), math.Inf(-1)
	total := 0
	for _, s := range series {
		pts := make(xys, len(s.Points))
		for i, q := range s.Points {
			pts[i] = sweep.Point{Index: q.Index, Accuracy: q.Accuracy * scale, Bound: q.Bound}
			ymin, ymax = math.Min(ymin, q.Bound), math.Max(ymax, q.Bound)
			xmin, xmax = math.Min(xmin, pts[i].Accuracy), math.Max(xmax, pts[i].Accuracy)
		}
		total += len(pts)
		if len(pts) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return nil, nil, fmt.Errorf("pareto %s: %w", s.Key, err)
		}
		sc.GlyphStyle.Color = s.kind.Color
		sc.GlyphStyle.Shape = s.kind.Shape
		sc.GlyphStyle.Radius = vg.Points(2.5)
		front := make(xys, len(s.Frontier))
		for i, q := range s.Frontier {
			front[i] = sweep.Point{Accuracy: q.Accuracy * scale, Bound: q.Bound}
		}
		ln, err := plotter.NewLine(front)
		if err != nil {
			return nil, nil, fmt.Errorf("pareto %s frontier: %w", s.Key, err)
		}
		ln.LineStyle.Color = s.kind.Color
		ln.LineStyle.Width = vg.Points(1.2)
		ln.LineStyle.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		p.Add(sc, ln)
		legend.Add(s.Label, sc, ln)
		var line [][2]float64
		for _, q := range pts {
			legend.Avoid([2]float64{q.Accuracy, q.Bound})
		}
		for _, q := range front {
			line = append(line, [2]float64{q.Accuracy, q.Bound})
		}
		legend.AvoidLine(line, true)
	}
	if total == 0 {
		return nil, nil, fmt.Errorf("pareto: no points with a positive finite bound to plot")
	}
	if xmin == xmax {
		xmin, xmax = xmin-0.01*scale, xmax+0.01*scale
	}
	pad := 0.03 * (xmax - xmin)
	xmin, xmax = xmin-pad, xmax+pad
	perfect, err := plotter.NewLine(plotter.XYs{{X: xmin, Y: 1}, {X: xmax, Y: 1}})
	if err != nil {
		return nil, nil, fmt.Errorf("pareto: %w", err)
	}
	perfect.LineStyle.Color = color.Gray{Y: 90}
	perfect.LineStyle.Width = vg.Points(1)
	perfect.LineStyle.Dashes = []vg.Length{vg.Points(1), vg.Points(2)}
	p.Add(perfect)
	legend.Add("MSE = 1 (perfect privacy)", perfect)
	p.Add(legend) // last: over the grid and the lines
	p.X.Min, p.X.Max = xmin, xmax
	// Head room above the highest point (a fifth of the log range, at least a decade)
	// leaves the top right corner free for the legend.
	p.Y.Min = ymin / 2
	p.Y.Max = ymax * math.Pow(10, math.Max(1, 0.2*math.Log10(ymax/ymin)))
	return p, legend, nil
}
