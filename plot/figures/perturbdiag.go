package figures

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/dpfil/dpfil/internal/stats"
	"github.com/dpfil/dpfil/plot"
	"github.com/dpfil/dpfil/train"
	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Edmunds (2024), Appendix A: per-iteration diagnostics of the learned gradient
// perturbation g_φ from the files 'dpfil train --perturb-diag N' writes
// (train/perturbdiag.go). Per repeat: the "2-Norms" figure (Figs. A.1, A.8, A.15,
// A.22: the norms of the base (pruned) gradients, the perturbation and the final
// gradient per iteration), the "Accuracy and dFIL" figure (Figs. A.2, A.9, A.16,
// A.23) and, per iteration, the 4-panel figure (Figs. A.3–A.7, …, A.29): PCA of the
// base gradients (top left), of the final gradients before the noise (top right),
// of the perturbations (bottom left), and the distribution of cos(perturbation,
// base) (bottom right).

// PerturbDiagRequest draws the diagnostics of one run.
type PerturbDiagRequest struct {
	Dir    string // the run directory or its perturb-diag
	OutDir string // where the figures go
	Prefix string // file name prefix (default "perturb-diag-")
	Format string // png (default), svg or pdf
	// Repeats and Steps select what is drawn (nil: all); the report covers every
	// repeat and step either way, with PCA only for the drawn panels.
	Repeats, Steps []int
	Title          string // prepended to each figure's title, e.g. "λ = 10³"
	Width, Height  int    // the 4-panel figure (the others scale from it); 0: 900 × 800
}

// Spread summarises per-sample values: their count, mean, sample standard deviation
// and 10/50/90 % quantiles (non-finite values left out, counted in Dropped).
type Spread struct {
	N       int     `json:"n"`
	Dropped int     `json:"dropped,omitempty"`
	Mean    float64 `json:"mean"`
	Std     float64 `json:"std"`
	P10     float64 `json:"p10"`
	Median  float64 `json:"median"`
	P90     float64 `json:"p90"`
}

// PCASummary is the variance along the first two principal components and the
// fraction of the total it holds.
type PCASummary struct {
	Points    int        `json:"points"`
	Variance  [2]float64 `json:"variance"`
	Explained [2]float64 `json:"explained"`
	Total     float64    `json:"total_variance"`
}

// PerturbDiagStepReport is one iteration of one repeat.
type PerturbDiagStepReport struct {
	Step         int      `json:"step"`
	Samples      int      `json:"samples"`
	Perturbed    bool     `json:"perturbed"`
	TestAccuracy float64  `json:"test_accuracy"`
	DFILMax      *float64 `json:"dfil_max"`
	DFILMean     *float64 `json:"dfil_mean"`
	DFILMedian   *float64 `json:"dfil_median"`
	Epsilon      *float64 `json:"epsilon"`
	BaseNorm     Spread   `json:"base_norm"`
	PerturbNorm  Spread   `json:"perturb_norm"`
	FinalNorm    Spread   `json:"final_norm"`
	Cosine       Spread   `json:"cosine"`
	// PCA of the base, final and perturbation vectors (drawn steps only).
	PCABase    *PCASummary `json:"pca_base,omitempty"`
	PCAFinal   *PCASummary `json:"pca_final,omitempty"`
	PCAPerturb *PCASummary `json:"pca_perturb,omitempty"`
	Figure     string      `json:"figure,omitempty"`
}

// PerturbDiagRepeatReport is one repeat: its iterations and its two series figures.
type PerturbDiagRepeatReport struct {
	Repeat       int                     `json:"repeat"`
	Lambda       float64                 `json:"lambda"`
	Standardised bool                    `json:"standardised"`
	Steps        []PerturbDiagStepReport `json:"steps"`
	NormsFigure  string                  `json:"norms_figure,omitempty"`
	AccFigure    string                  `json:"accuracy_dfil_figure,omitempty"`
}

// MeanStd is a mean over repeats and its sample standard deviation (null for one
// repeat).
type MeanStd struct {
	Mean float64  `json:"mean"`
	Std  *float64 `json:"std"`
}

// PerturbDiagAcross is one iteration over all repeats (the thesis's "Mean (STD)" of
// Table A.1); the dFIL fields are absent when FIL was off.
type PerturbDiagAcross struct {
	Step       int      `json:"step"`
	Repeats    int      `json:"repeats"`
	Accuracy   MeanStd  `json:"test_accuracy"`
	DFILMax    *MeanStd `json:"dfil_max,omitempty"`
	DFILMean   *MeanStd `json:"dfil_mean,omitempty"`
	DFILMedian *MeanStd `json:"dfil_median,omitempty"`
}

// PerturbDiagReport is what WritePerturbDiag drew and read.
type PerturbDiagReport struct {
	Dir     string                    `json:"dir"`
	Files   []string                  `json:"files"`
	Repeats []PerturbDiagRepeatReport `json:"repeats"`
	Across  []PerturbDiagAcross       `json:"across_repeats"`
}

// WritePerturbDiag reads a run's g_φ diagnostics and writes the figures.
func WritePerturbDiag(req PerturbDiagRequest) (*PerturbDiagReport, error) {
	if req.OutDir == "" {
		return nil, errors.New("plot perturb-diag: no output directory (--out-dir)")
	}
	if req.Prefix == "" {
		req.Prefix = "perturb-diag-"
	}
	if req.Format == "" {
		req.Format = "png"
	}
	if _, err := plot.Format("x." + req.Format); err != nil {
		return nil, fmt.Errorf("plot perturb-diag: %w", err)
	}
	if req.Width == 0 && req.Height == 0 {
		req.Width, req.Height = 900, 800
	}
	recs, err := train.ReadPerturbDiag(req.Dir)
	if err != nil {
		return nil, err
	}
	rep := &PerturbDiagReport{Dir: req.Dir, Files: []string{}}
	for _, want := range req.Repeats {
		if !slices.ContainsFunc(recs, func(r train.PerturbDiagStep) bool { return r.Repeat == want }) {
			return nil, fmt.Errorf("plot perturb-diag: %s has no repeat %d", req.Dir, want)
		}
	}
	for _, want := range req.Steps {
		if !slices.ContainsFunc(recs, func(r train.PerturbDiagStep) bool { return r.Step == want }) {
			return nil, fmt.Errorf("plot perturb-diag: %s has no step %d", req.Dir, want)
		}
	}
	file := func(name string) string {
		return filepath.Join(req.OutDir, req.Prefix+name+"."+req.Format)
	}
	for i := 0; i < len(recs); {
		j := i
		for j < len(recs) && recs[j].Repeat == recs[i].Repeat {
			j++
		}
		rr, err := drawRepeat(req, recs[i:j], file, &rep.Files)
		if err != nil {
			return nil, err
		}
		rep.Repeats = append(rep.Repeats, *rr)
		i = j
	}
	rep.Across = acrossRepeats(rep.Repeats)
	return rep, nil
}

// drawRepeat reads one repeat's steps, draws what req selects and reports it.
func drawRepeat(req PerturbDiagRequest, recs []train.PerturbDiagStep, file func(string) string, files *[]string) (*PerturbDiagRepeatReport, error) {
	r := recs[0].Repeat
	draw := req.Repeats == nil || slices.Contains(req.Repeats, r)
	rr := &PerturbDiagRepeatReport{Repeat: r, Lambda: recs[0].Lambda, Standardised: recs[0].Standardised}
	title := func(s string) string {
		if req.Title != "" {
			s = req.Title + "; " + s
		}
		return s + "; repeat " + strconv.Itoa(r)
	}
	for _, rec := range recs {
		a, err := train.ReadPerturbDiagArrays(req.Dir, rec)
		if err != nil {
			return nil, err
		}
		sr := PerturbDiagStepReport{Step: rec.Step, Samples: rec.Samples, Perturbed: rec.Perturbed, TestAccuracy: rec.TestAccuracy,
			DFILMax: rec.DFILMax, DFILMean: rec.DFILMean, DFILMedian: rec.DFILMedian, Epsilon: rec.Epsilon,
			BaseNorm: spread(a.BaseNorm), PerturbNorm: spread(a.PerturbNorm), FinalNorm: spread(a.FinalNorm), Cosine: spread(a.Cosine)}
		if draw && (req.Steps == nil || slices.Contains(req.Steps, rec.Step)) {
			name := file(fmt.Sprintf("r%d-step%d", r, rec.Step))
			if err := drawPanels(req, a, rec, &sr, title(fmt.Sprintf("iteration %d", rec.Step)), name); err != nil {
				return nil, err
			}
			sr.Figure = name
			*files = append(*files, name)
		}
		rr.Steps = append(rr.Steps, sr)
	}
	if !draw {
		return rr, nil
	}
	w, h := req.Width*7/9, req.Height*9/16
	norms, err := normsPlot(rr.Steps, title("2-norms (mean, bars 10–90 %)"))
	if err != nil {
		return nil, err
	}
	rr.NormsFigure = file(fmt.Sprintf("r%d-norms", r))
	if err := plot.Save(norms, rr.NormsFigure, w, h); err != nil {
		return nil, err
	}
	acc, dfil, err := accDFILPlots(rr.Steps, title("accuracy and dFIL"))
	if err != nil {
		return nil, err
	}
	rr.AccFigure = file(fmt.Sprintf("r%d-accuracy-dfil", r))
	if err := plot.SaveTiles([][]*gplot.Plot{{acc}, {dfil}}, rr.AccFigure, w, req.Height*3/4); err != nil {
		return nil, err
	}
	*files = append(*files, rr.NormsFigure, rr.AccFigure)
	return rr, nil
}

// spread summarises the finite values of v.
func spread(v []float64) Spread {
	var s []float64
	for _, x := range v {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			s = append(s, x)
		}
	}
	out := Spread{N: len(s), Dropped: len(v) - len(s)}
	if len(s) == 0 {
		return out
	}
	slices.Sort(s)
	for _, x := range s {
		out.Mean += x
	}
	out.Mean /= float64(len(s))
	if len(s) > 1 {
		for _, x := range s {
			out.Std += (x - out.Mean) * (x - out.Mean)
		}
		out.Std = math.Sqrt(out.Std / float64(len(s)-1))
	}
	out.P10, out.Median, out.P90 = stats.QuantileSorted(s, 0.1), stats.QuantileSorted(s, 0.5), stats.QuantileSorted(s, 0.9)
	return out
}

var (
	colBase    = color.NRGBA{R: 31, G: 119, B: 180, A: 255}
	colPerturb = color.NRGBA{R: 214, G: 39, B: 40, A: 255}
	colFinal   = color.NRGBA{R: 44, G: 160, B: 44, A: 255}
)

// drawPanels draws the 4-panel figure of one step into name and fills the PCA
// summaries of sr.
func drawPanels(req PerturbDiagRequest, a *train.PerturbDiagArrays, rec train.PerturbDiagStep, sr *PerturbDiagStepReport, title, name string) error {
	if a.M < 2 {
		return fmt.Errorf("plot perturb-diag: repeat %d step %d kept %d vectors; PCA needs ≥ 2 (train with a larger --perturb-diag)", rec.Repeat, rec.Step, a.M)
	}
	pca := func(x []float64, what string, col color.Color) (*gplot.Plot, *PCASummary, error) {
		p, err := PCAOf(x, a.M, a.K, 2)
		if err != nil {
			return nil, nil, fmt.Errorf("repeat %d step %d, %s: %w", rec.Repeat, rec.Step, what, err)
		}
		sum := &PCASummary{Points: a.M, Total: p.Total}
		copy(sum.Variance[:], p.Variance)
		copy(sum.Explained[:], p.Explained)
		pts := make(plotter.XYs, a.M)
		nc := len(p.Variance)
		for i := range pts {
			pts[i].X = p.Scores[i*nc]
			if nc > 1 {
				pts[i].Y = p.Scores[i*nc+1]
			}
		}
		pl := gplot.New()
		pl.Title.Text = what
		pl.X.Label.Text = fmt.Sprintf("PC1 (%.1f %%)", 100*sum.Explained[0])
		pl.Y.Label.Text = fmt.Sprintf("PC2 (%.1f %%)", 100*sum.Explained[1])
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return nil, nil, fmt.Errorf("repeat %d step %d, %s: %w", rec.Repeat, rec.Step, what, err)
		}
		sc.GlyphStyle.Color = col
		sc.GlyphStyle.Radius = vg.Points(1.5)
		sc.GlyphStyle.Shape = draw.CircleGlyph{}
		pl.Add(plotter.NewGrid(), sc)
		return pl, sum, nil
	}
	pb, sb, err := pca(a.Base, "Prune (base) gradients: PCA", colBase)
	if err != nil {
		return err
	}
	pf, sf, err := pca(a.Final, "FIM before noise (final): PCA", colFinal)
	if err != nil {
		return err
	}
	pp, spp, err := pca(a.Perturb, "Perturbation g_φ: PCA", colPerturb)
	if err != nil {
		return err
	}
	sr.PCABase, sr.PCAFinal, sr.PCAPerturb = sb, sf, spp
	var ph *gplot.Plot
	if sr.Cosine.N > 0 {
		if ph, _, err = plot.Histogram(a.Cosine, plot.HistOptions{Bins: 40, XLabel: "cos(perturbation, prune)", Title: "Cosine similarity"}); err != nil {
			return fmt.Errorf("repeat %d step %d, cosine: %w", rec.Repeat, rec.Step, err)
		}
	} else {
		ph = gplot.New()
		ph.Title.Text = "Cosine similarity: no perturbation (g_φ not active)"
		ph.X.Label.Text = "cos(perturbation, prune)"
	}
	pb.Title.Text = title + "\n" + pb.Title.Text
	return plot.SaveTiles([][]*gplot.Plot{{pb, pf}, {pp, ph}}, name, req.Width, req.Height)
}

// normsPlot draws the mean norm per iteration of the base gradients, the
// perturbations and the final gradients, with bars from the 10 % to the 90 %
// quantile; log y when every drawn value is positive.
func normsPlot(steps []PerturbDiagStepReport, title string) (*gplot.Plot, error) {
	p := gplot.New()
	p.Title.Text = title
	p.X.Label.Text = "iteration"
	p.Y.Label.Text = "2-norm"
	logY := true
	series := []struct {
		name string
		get  func(PerturbDiagStepReport) Spread
		col  color.Color
		dx   float64
	}{
		{"Base (prune)", func(s PerturbDiagStepReport) Spread { return s.BaseNorm }, colBase, -0.08},
		{"Perturbation", func(s PerturbDiagStepReport) Spread { return s.PerturbNorm }, colPerturb, 0},
		{"Final", func(s PerturbDiagStepReport) Spread { return s.FinalNorm }, colFinal, 0.08},
	}
	for _, s := range series {
		for _, st := range steps {
			if sp := s.get(st); sp.N > 0 && !(sp.P10 > 0) {
				logY = false
			}
		}
	}
	p.Add(plotter.NewGrid())
	legend := plot.NewInsetLegend()
	for _, s := range series {
		var pts plotter.XYs
		var errs plotter.YErrors
		for _, st := range steps {
			sp := s.get(st)
			if sp.N == 0 {
				continue
			}
			pts = append(pts, plotter.XY{X: float64(st.Step) + s.dx, Y: sp.Mean})
			errs = append(errs, struct{ Low, High float64 }{sp.Mean - sp.P10, sp.P90 - sp.Mean})
		}
		if len(pts) == 0 {
			continue
		}
		ln, sc, err := plotter.NewLinePoints(pts)
		if err != nil {
			return nil, fmt.Errorf("norms figure: %w", err)
		}
		ln.Color, sc.Color = s.col, s.col
		eb, err := plotter.NewYErrorBars(struct {
			plotter.XYer
			plotter.YErrorer
		}{pts, errs})
		if err != nil {
			return nil, fmt.Errorf("norms figure: %w", err)
		}
		eb.Color = s.col
		p.Add(ln, sc, eb)
		legend.Add(s.name, ln, sc)
		var line [][2]float64
		for i, q := range pts {
			line = append(line, [2]float64{q.X, q.Y}, [2]float64{q.X, q.Y - errs[i].Low}, [2]float64{q.X, q.Y + errs[i].High})
		}
		legend.AvoidLine(line, logY)
	}
	p.Add(legend)
	if logY {
		p.Y.Scale = gplot.LogScale{}
		p.Y.Tick.Marker = plot.DecadeTicks{}
	}
	padSteps(p, steps)
	return p, nil
}

// padSteps labels the integer iterations on x and pads the range by 0.3 on each side.
func padSteps(p *gplot.Plot, steps []PerturbDiagStepReport) {
	p.X.Tick.Marker = stepTicks(steps)
	p.X.Min, p.X.Max = float64(steps[0].Step)-0.3, float64(steps[len(steps)-1].Step)+0.3
}

// stepTicks labels the integer iterations.
func stepTicks(steps []PerturbDiagStepReport) gplot.ConstantTicks {
	var t gplot.ConstantTicks
	for _, s := range steps {
		t = append(t, gplot.Tick{Value: float64(s.Step), Label: strconv.Itoa(s.Step)})
	}
	return t
}

// accDFILPlots draws test accuracy and the cumulative max / mean / median dFIL per
// iteration (the dFIL panel empty when FIL was off).
func accDFILPlots(steps []PerturbDiagStepReport, title string) (acc, dfil *gplot.Plot, err error) {
	line := func(p *gplot.Plot, legend *plot.InsetLegend, name string, col color.Color, get func(PerturbDiagStepReport) *float64) error {
		var pts plotter.XYs
		for _, s := range steps {
			if v := get(s); v != nil && !math.IsNaN(*v) {
				pts = append(pts, plotter.XY{X: float64(s.Step), Y: *v})
			}
		}
		if len(pts) == 0 {
			return nil
		}
		ln, sc, err := plotter.NewLinePoints(pts)
		if err != nil {
			return fmt.Errorf("accuracy and dFIL figure: %w", err)
		}
		ln.Color, sc.Color = col, col
		p.Add(ln, sc)
		if legend != nil {
			legend.Add(name, ln, sc)
			var l [][2]float64
			for _, q := range pts {
				l = append(l, [2]float64{q.X, q.Y})
			}
			legend.AvoidLine(l, false)
		}
		return nil
	}
	acc = gplot.New()
	acc.Title.Text = title
	acc.Y.Label.Text = "test accuracy"
	acc.Add(plotter.NewGrid())
	if err := line(acc, nil, "accuracy", colBase, func(s PerturbDiagStepReport) *float64 { return &s.TestAccuracy }); err != nil {
		return nil, nil, err
	}
	dfil = gplot.New()
	dfil.X.Label.Text = "iteration"
	dfil.Y.Label.Text = "dFIL (cumulative)"
	dfil.Add(plotter.NewGrid())
	legend := plot.NewInsetLegend()
	for _, s := range []struct {
		name string
		col  color.Color
		get  func(PerturbDiagStepReport) *float64
	}{
		{"max", colPerturb, func(s PerturbDiagStepReport) *float64 { return s.DFILMax }},
		{"mean", colFinal, func(s PerturbDiagStepReport) *float64 { return s.DFILMean }},
		{"median", colBase, func(s PerturbDiagStepReport) *float64 { return s.DFILMedian }},
	} {
		if err := line(dfil, legend, s.name, s.col, s.get); err != nil {
			return nil, nil, err
		}
	}
	dfil.Add(legend)
	padSteps(acc, steps)
	padSteps(dfil, steps)
	return acc, dfil, nil
}

// acrossRepeats is, per step, the mean and sample standard deviation over the
// repeats that reached it.
func acrossRepeats(reps []PerturbDiagRepeatReport) []PerturbDiagAcross {
	byStep := map[int][]PerturbDiagStepReport{}
	maxStep := 0
	for _, r := range reps {
		for _, s := range r.Steps {
			byStep[s.Step] = append(byStep[s.Step], s)
			maxStep = max(maxStep, s.Step)
		}
	}
	ms := func(v []float64) MeanStd {
		m := 0.0
		for _, x := range v {
			m += x
		}
		m /= float64(len(v))
		out := MeanStd{Mean: m}
		if len(v) > 1 {
			s := 0.0
			for _, x := range v {
				s += (x - m) * (x - m)
			}
			sd := math.Sqrt(s / float64(len(v)-1))
			out.Std = &sd
		}
		return out
	}
	opt := func(ss []PerturbDiagStepReport, get func(PerturbDiagStepReport) *float64) *MeanStd {
		var v []float64
		for _, s := range ss {
			if p := get(s); p != nil {
				v = append(v, *p)
			}
		}
		if len(v) != len(ss) {
			return nil
		}
		m := ms(v)
		return &m
	}
	var out []PerturbDiagAcross
	for t := 1; t <= maxStep; t++ {
		ss := byStep[t]
		if len(ss) == 0 {
			continue
		}
		var acc []float64
		for _, s := range ss {
			acc = append(acc, s.TestAccuracy)
		}
		out = append(out, PerturbDiagAcross{Step: t, Repeats: len(ss), Accuracy: ms(acc),
			DFILMax:    opt(ss, func(s PerturbDiagStepReport) *float64 { return s.DFILMax }),
			DFILMean:   opt(ss, func(s PerturbDiagStepReport) *float64 { return s.DFILMean }),
			DFILMedian: opt(ss, func(s PerturbDiagStepReport) *float64 { return s.DFILMedian })})
	}
	return out
}

// WriteText lists the figures and, per repeat and iteration, the numbers drawn.
func (r *PerturbDiagReport) WriteText(w io.Writer) {
	fmt.Fprintf(w, "read %s: %d repeats; wrote %d figures\n", r.Dir, len(r.Repeats), len(r.Files))
	for _, f := range r.Files {
		fmt.Fprintf(w, "  %s\n", f)
	}
	opt := func(v *float64) string {
		if v == nil {
			return "-"
		}
		return fmt.Sprintf("%.4g", *v)
	}
	for _, rr := range r.Repeats {
		fmt.Fprintf(w, "repeat %d (λ = %g, standardised inputs %v)\n", rr.Repeat, rr.Lambda, rr.Standardised)
		fmt.Fprintf(w, "  %-4s %-8s %-9s %-9s %-9s %-10s %-10s %-10s %-14s\n", "step", "accuracy", "dFIL max", "mean", "median", "‖base‖", "‖pert‖", "‖final‖", "cos(pert,base)")
		for _, s := range rr.Steps {
			fmt.Fprintf(w, "  %-4d %-8.4f %-9s %-9s %-9s %-10.4g %-10.4g %-10.4g %.3f ± %.3f\n", s.Step, s.TestAccuracy, opt(s.DFILMax), opt(s.DFILMean), opt(s.DFILMedian),
				s.BaseNorm.Mean, s.PerturbNorm.Mean, s.FinalNorm.Mean, s.Cosine.Mean, s.Cosine.Std)
		}
	}
	if len(r.Repeats) > 1 {
		fmt.Fprintln(w, "over repeats: mean (std)")
		for _, a := range r.Across {
			ms := func(m *MeanStd) string {
				if m == nil {
					return "-"
				}
				if m.Std == nil {
					return fmt.Sprintf("%.4g", m.Mean)
				}
				return fmt.Sprintf("%.4g (%.4g)", m.Mean, *m.Std)
			}
			fmt.Fprintf(w, "  step %d (%d repeats): accuracy %s, dFIL max %s, mean %s, median %s\n", a.Step, a.Repeats, ms(&a.Accuracy), ms(a.DFILMax), ms(a.DFILMean), ms(a.DFILMedian))
		}
	}
}
