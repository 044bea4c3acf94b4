package figures

import (
	"encoding/csv"
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/dpfil/dpfil/attack"
	"github.com/dpfil/dpfil/plot"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// AttackPoint is one attack's success at one value of a sweep's x variable.
type AttackPoint struct {
	X         float64 `json:"x"`
	Rate      float64 `json:"success_rate"`
	Low       float64 `json:"ci_low"` // 95 % Clopper–Pearson interval
	High      float64 `json:"ci_high"`
	Successes int     `json:"successes"`
	Trials    int     `json:"trials"`
}

// AttackSeries is one attack variant over the sweep.
type AttackSeries struct {
	Attack string        `json:"attack"`
	Points []AttackPoint `json:"points"`
}

// BoundPoint is the bounds at one value of the sweep: the ReRo bound γ (with its
// Monte Carlo interval; equal ends when exact), the RDP-based ReRo bound and the
// prior baseline κ (1/K).
type BoundPoint struct {
	X        float64 `json:"x"`
	Gamma    float64 `json:"gamma"`
	GammaLow float64 `json:"gamma_low"`
	GammaHi  float64 `json:"gamma_high"`
	GammaRDP float64 `json:"gamma_rdp"`
	Kappa    float64 `json:"kappa"`
}

// AttackSweep is an attack sweep ('dpfil attack sweep-eps|sweep-k|sweep-q') as read
// from its sweep.json or sweep.csv: Sweep is "eps", "k" or "q", the x variable.
type AttackSweep struct {
	Sweep  string         `json:"sweep"`
	Series []AttackSeries `json:"series"` // sorted by attack name, points by x
	Bounds []BoundPoint   `json:"bounds"` // by x
}

// ReadAttackSweep reads an attack sweep's sweep.json (format "json") or sweep.csv
// (format "csv") and checks it: a known sweep variable, finite x values, rates and
// interval ends in [0, 1] with low ≤ rate ≤ high, successes ≤ trials, and one bound
// per x value.
func ReadAttackSweep(r io.Reader, format string) (*AttackSweep, error) {
	var s *AttackSweep
	var err error
	switch format {
	case "json":
		s, err = readAttackJSON(r)
	case "csv":
		s, err = readAttackCSV(r)
	default:
		return nil, fmt.Errorf("attack sweep: unknown format %q (want json or csv)", format)
	}
	if err != nil {
		return nil, fmt.Errorf("attack sweep: %w", err)
	}
	if err := s.normalize(); err != nil {
		return nil, fmt.Errorf("attack sweep: %w", err)
	}
	return s, nil
}

func readAttackJSON(r io.Reader) (*AttackSweep, error) {
	j, err := attack.ReadSweepReport(r)
	if err != nil {
		return nil, err
	}
	s := &AttackSweep{Sweep: j.Sweep}
	series := map[string]*AttackSeries{}
	for i, res := range j.Results {
		x := j.Values[i]
		s.Bounds = append(s.Bounds, BoundPoint{X: x, Gamma: res.Gamma, GammaLow: res.GammaCI[0], GammaHi: res.GammaCI[1], GammaRDP: res.GammaRDP, Kappa: res.Kappa})
		for a, st := range res.Attacks {
			se := series[a]
			if se == nil {
				se = &AttackSeries{Attack: a}
				series[a] = se
			}
			se.Points = append(se.Points, AttackPoint{X: x, Rate: st.Rate, Low: st.CI[0], High: st.CI[1], Successes: st.Successes, Trials: st.Trials})
		}
	}
	for _, se := range series {
		s.Series = append(s.Series, *se)
	}
	return s, nil
}

func readAttackCSV(r io.Reader) (*AttackSweep, error) {
	cr := csv.NewReader(r)
	cr.TrimLeadingSpace = true
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("csv header: %w", err)
	}
	col := map[string]int{}
	for i, h := range head {
		col[strings.TrimSpace(h)] = i
	}
	need := []string{"sweep", "value", "attack", "success_rate", "ci_low", "ci_high", "successes", "trials", "gamma", "gamma_low", "gamma_high", "gamma_rdp", "kappa"}
	for _, c := range need {
		if _, ok := col[c]; !ok {
			return nil, fmt.Errorf("csv: column %q missing from header %v", c, head)
		}
	}
	s := &AttackSweep{}
	series := map[string]*AttackSeries{}
	bounds := map[float64]BoundPoint{}
	for row := 2; ; row++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("csv row %d: %w", row, err)
		}
		num := func(c string) (float64, error) {
			v, err := strconv.ParseFloat(strings.TrimSpace(rec[col[c]]), 64)
			if err != nil {
				return 0, fmt.Errorf("csv row %d column %q: %w", row, c, err)
			}
			return v, nil
		}
		f := map[string]float64{}
		for _, c := range need {
			if c == "sweep" || c == "attack" {
				continue
			}
			if f[c], err = num(c); err != nil {
				return nil, err
			}
		}
		sw := strings.TrimSpace(rec[col["sweep"]])
		if s.Sweep == "" {
			s.Sweep = sw
		} else if sw != s.Sweep {
			return nil, fmt.Errorf("csv row %d: sweep %q after %q", row, sw, s.Sweep)
		}
		x, succ, trials := f["value"], f["successes"], f["trials"]
		if succ != math.Trunc(succ) || trials != math.Trunc(trials) || math.Abs(trials) > 1e12 {
			return nil, fmt.Errorf("csv row %d: successes %v and trials %v must be integers", row, succ, trials)
		}
		a := strings.TrimSpace(rec[col["attack"]])
		se := series[a]
		if se == nil {
			se = &AttackSeries{Attack: a}
			series[a] = se
		}
		se.Points = append(se.Points, AttackPoint{X: x, Rate: f["success_rate"], Low: f["ci_low"], High: f["ci_high"], Successes: int(succ), Trials: int(trials)})
		b := BoundPoint{X: x, Gamma: f["gamma"], GammaLow: f["gamma_low"], GammaHi: f["gamma_high"], GammaRDP: f["gamma_rdp"], Kappa: f["kappa"]}
		if old, ok := bounds[x]; ok && old != b {
			return nil, fmt.Errorf("csv row %d: bounds at %s = %v differ from an earlier row", row, s.Sweep, x)
		}
		bounds[x] = b
	}
	for _, se := range series {
		s.Series = append(s.Series, *se)
	}
	for _, b := range bounds {
		s.Bounds = append(s.Bounds, b)
	}
	return s, nil
}

func in01(v float64) bool { return v >= 0 && v <= 1 }

// normalize sorts the sweep and checks its values.
func (s *AttackSweep) normalize() error {
	switch s.Sweep {
	case "eps", "k", "q":
	default:
		return fmt.Errorf("sweep variable %q, want eps, k or q", s.Sweep)
	}
	if len(s.Series) == 0 || len(s.Bounds) == 0 {
		return fmt.Errorf("no results")
	}
	sort.Slice(s.Series, func(i, j int) bool { return s.Series[i].Attack < s.Series[j].Attack })
	sort.Slice(s.Bounds, func(i, j int) bool { return s.Bounds[i].X < s.Bounds[j].X })
	for i, b := range s.Bounds {
		if math.IsNaN(b.X) || math.IsInf(b.X, 0) {
			return fmt.Errorf("%s = %v is not finite", s.Sweep, b.X)
		}
		if i > 0 && b.X == s.Bounds[i-1].X {
			return fmt.Errorf("%s = %v appears twice", s.Sweep, b.X)
		}
		if !in01(b.Gamma) || !in01(b.GammaLow) || !in01(b.GammaHi) || !in01(b.GammaRDP) || !in01(b.Kappa) || b.GammaLow > b.Gamma || b.Gamma > b.GammaHi {
			return fmt.Errorf("%s = %v: bounds γ = %v [%v, %v], γ_RDP = %v, κ = %v outside [0, 1] or out of order", s.Sweep, b.X, b.Gamma, b.GammaLow, b.GammaHi, b.GammaRDP, b.Kappa)
		}
	}
	for _, se := range s.Series {
		if se.Attack == "" {
			return fmt.Errorf("an attack has no name")
		}
		sort.Slice(se.Points, func(i, j int) bool { return se.Points[i].X < se.Points[j].X })
		for i, p := range se.Points {
			if _, ok := slices.BinarySearchFunc(s.Bounds, p.X, func(b BoundPoint, x float64) int {
				switch {
				case b.X < x:
					return -1
				case b.X > x:
					return 1
				}
				return 0
			}); !ok {
				return fmt.Errorf("%s at %s = %v has no bounds", se.Attack, s.Sweep, p.X)
			}
			if i > 0 && p.X == se.Points[i-1].X {
				return fmt.Errorf("%s at %s = %v appears twice", se.Attack, s.Sweep, p.X)
			}
			if !in01(p.Rate) || !in01(p.Low) || !in01(p.High) || p.Low > p.Rate || p.Rate > p.High || p.Trials < 1 || p.Successes < 0 || p.Successes > p.Trials {
				return fmt.Errorf("%s at %s = %v: success %v [%v, %v] with %d of %d trials is inconsistent", se.Attack, s.Sweep, p.X, p.Rate, p.Low, p.High, p.Successes, p.Trials)
			}
		}
	}
	return nil
}

// XLabel is the axis label of the sweep variable.
func (s *AttackSweep) XLabel() string {
	switch s.Sweep {
	case "eps":
		return "ε"
	case "k":
		return "prior size K"
	}
	return "sampling rate q"
}

// attackColors cycles through the matplotlib tab10 palette for attack series.
var attackColors = [...]color.RGBA{
	{R: 31, G: 119, B: 180, A: 255}, {R: 255, G: 127, B: 14, A: 255}, {R: 44, G: 160, B: 44, A: 255},
	{R: 148, G: 103, B: 189, A: 255}, {R: 140, G: 86, B: 75, A: 255}, {R: 227, G: 119, B: 194, A: 255},
}

var attackGlyphs = [...]draw.GlyphDrawer{draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.PlusGlyph{}, draw.CrossGlyph{}, draw.RingGlyph{}}

// AttackOptions labels the attack figure.
type AttackOptions struct {
	Title string
	// LogX forces a log10 x axis (on) or a linear one (off); nil chooses log when
	// all x are positive and span at least a factor 10.
	LogX *bool
}

type errPoints struct {
	xy     plotter.XYs
	lo, hi []float64
}

func (e errPoints) Len() int                    { return len(e.xy) }
func (e errPoints) XY(i int) (float64, float64) { return e.xy[i].X, e.xy[i].Y }
func (e errPoints) YError(i int) (float64, float64) {
	return e.xy[i].Y - e.lo[i], e.hi[i] - e.xy[i].Y
}

// Attack draws attack success against the sweep variable like Hayes et al. Fig. 2, 3
// and 5: one series per attack variant (points joined by a line, 95 % Clopper–
// Pearson intervals as error bars; variants are nudged sideways by a few percent of
// the axis so that identical results stay visible), the ReRo bound γ as a solid black
// line (its Monte Carlo interval as error bars where it has one), the RDP-based ReRo
// bound as a dashed grey line and the prior baseline κ = 1/K as a dotted line.
func Attack(s *AttackSweep, opt AttackOptions) (*gplot.Plot, error) {
	if s == nil || len(s.Series) == 0 || len(s.Bounds) == 0 {
		return nil, fmt.Errorf("attack figure: no results to plot")
	}
	logX := s.Bounds[0].X > 0 && s.Bounds[len(s.Bounds)-1].X >= 10*s.Bounds[0].X
	if opt.LogX != nil {
		logX = *opt.LogX
		if logX && !(s.Bounds[0].X > 0) {
			return nil, fmt.Errorf("attack figure: log x axis with %s = %v", s.Sweep, s.Bounds[0].X)
		}
	}
	p := gplot.New()
	p.Title.Text = opt.Title
	p.X.Label.Text = s.XLabel()
	p.Y.Label.Text = "reconstruction success"
	p.Y.Min, p.Y.Max = 0, 1.08
	var yt gplot.ConstantTicks
	for k := 0; k <= 10; k++ {
		t := gplot.Tick{Value: float64(k) / 10}
		if k%2 == 0 {
			t.Label = strconv.FormatFloat(t.Value, 'f', -1, 64)
		}
		yt = append(yt, t)
	}
	p.Y.Tick.Marker = yt
	// success grows with ε and q and falls with K: the legend goes where it is low
	p.Legend.Top = true
	p.Legend.Left = s.Sweep != "k"
	p.Legend.XOffs, p.Legend.YOffs = vg.Points(8), -vg.Points(6)
	if !p.Legend.Left {
		p.Legend.XOffs = -vg.Points(8)
	}
	p.Add(plotter.NewGrid())
	lo, hi := s.Bounds[0].X, s.Bounds[len(s.Bounds)-1].X
	// sideways nudge of series i (in axis units: a factor on a log axis)
	nudge := func(x float64, i, n int) float64 {
		off := (float64(i) - float64(n-1)/2) * 0.012
		if logX {
			return x * math.Pow(hi/lo, off)
		}
		if hi == lo {
			return x + off
		}
		return x + off*(hi-lo)
	}
	if logX {
		p.X.Scale = gplot.LogScale{}
		p.X.Tick.Marker = plot.DecadeTicks{}
		p.X.Min, p.X.Max = lo/math.Pow(hi/lo, 0.05), hi*math.Pow(hi/lo, 0.05)
	} else {
		pad := 0.05 * (hi - lo)
		if pad == 0 {
			pad = 0.1 * math.Max(math.Abs(lo), 1)
		}
		p.X.Min, p.X.Max = lo-pad, hi+pad
	}
	line := func(ys func(BoundPoint) float64) plotter.XYs {
		xy := make(plotter.XYs, len(s.Bounds))
		for i, b := range s.Bounds {
			xy[i] = plotter.XY{X: b.X, Y: ys(b)}
		}
		return xy
	}
	type boundLine struct {
		label  string
		y      func(BoundPoint) float64
		col    color.Color
		width  float64
		dashes []vg.Length
	}
	for _, bl := range []boundLine{
		{"ReRo bound γ", func(b BoundPoint) float64 { return b.Gamma }, color.Black, 1.6, nil},
		{"RDP-ReRo bound", func(b BoundPoint) float64 { return b.GammaRDP }, color.Gray{Y: 110}, 1.4, []vg.Length{vg.Points(6), vg.Points(3)}},
		{"prior baseline κ = 1/K", func(b BoundPoint) float64 { return b.Kappa }, color.Gray{Y: 140}, 1, []vg.Length{vg.Points(1), vg.Points(2.5)}},
	} {
		ln, err := plotter.NewLine(line(bl.y))
		if err != nil {
			return nil, fmt.Errorf("attack figure %s: %w", bl.label, err)
		}
		ln.LineStyle.Color, ln.LineStyle.Width, ln.LineStyle.Dashes = bl.col, vg.Points(bl.width), bl.dashes
		p.Add(ln)
		p.Legend.Add(bl.label, ln)
	}
	// γ's Monte Carlo interval (q < 1), where it is not a point
	var gi errPoints
	for _, b := range s.Bounds {
		if b.GammaHi > b.GammaLow {
			gi.xy = append(gi.xy, plotter.XY{X: b.X, Y: b.Gamma})
			gi.lo, gi.hi = append(gi.lo, b.GammaLow), append(gi.hi, b.GammaHi)
		}
	}
	if gi.Len() > 0 {
		eb, err := plotter.NewYErrorBars(gi)
		if err != nil {
			return nil, fmt.Errorf("attack figure γ interval: %w", err)
		}
		eb.LineStyle.Color, eb.LineStyle.Width, eb.CapWidth = color.Black, vg.Points(0.8), vg.Points(4)
		p.Add(eb)
	}
	n := len(s.Series)
	for i, se := range s.Series {
		ep := errPoints{}
		for _, q := range se.Points {
			ep.xy = append(ep.xy, plotter.XY{X: nudge(q.X, i, n), Y: q.Rate})
			ep.lo, ep.hi = append(ep.lo, q.Low), append(ep.hi, q.High)
		}
		col := attackColors[i%len(attackColors)]
		ln, sc, err := plotter.NewLinePoints(ep)
		if err != nil {
			return nil, fmt.Errorf("attack figure %s: %w", se.Attack, err)
		}
		ln.LineStyle.Color, ln.LineStyle.Width = col, vg.Points(1)
		sc.GlyphStyle.Color, sc.GlyphStyle.Shape, sc.GlyphStyle.Radius = col, attackGlyphs[i%len(attackGlyphs)], vg.Points(2.8)
		eb, err := plotter.NewYErrorBars(ep)
		if err != nil {
			return nil, fmt.Errorf("attack figure %s: %w", se.Attack, err)
		}
		eb.LineStyle.Color, eb.LineStyle.Width, eb.CapWidth = col, vg.Points(1), vg.Points(5)
		p.Add(ln, eb, sc)
		p.Legend.Add(se.Attack+" (95 % CI)", ln, sc)
	}
	return p, nil
}

// MergeAttackSweeps draws several sweeps of the same variable on one figure (Hayes
// et al. Figs. 7, 9, 10, 13: one curve per setting): series i of sweep j becomes
// "labels[j]: attack" (the attack alone for an empty label), keeping only the attacks named in keep (all when keep is
// empty). The sweeps must agree on the bounds wherever they share an x value (they
// depend on σ, T and K only, which such variants keep), to 1e-9; the merged bounds
// are their union.
func MergeAttackSweeps(sweeps []*AttackSweep, labels, keep []string) (*AttackSweep, error) {
	if len(sweeps) == 0 {
		return nil, fmt.Errorf("attack sweeps: none to merge")
	}
	if len(labels) != len(sweeps) {
		return nil, fmt.Errorf("attack sweeps: %d labels for %d sweeps", len(labels), len(sweeps))
	}
	out := &AttackSweep{Sweep: sweeps[0].Sweep}
	bounds := map[float64]BoundPoint{}
	for j, s := range sweeps {
		if s.Sweep != out.Sweep {
			return nil, fmt.Errorf("attack sweeps: sweep %d varies %s, the first %s", j+1, s.Sweep, out.Sweep)
		}
		for _, b := range s.Bounds {
			if o, ok := bounds[b.X]; ok {
				if math.Abs(o.Gamma-b.Gamma) > 1e-9 || math.Abs(o.GammaRDP-b.GammaRDP) > 1e-9 || math.Abs(o.Kappa-b.Kappa) > 1e-9 {
					return nil, fmt.Errorf("attack sweeps: at %s = %v sweep %d (%s) has bounds γ = %v, γ_RDP = %v, κ = %v, an earlier one γ = %v, γ_RDP = %v, κ = %v: not the same privacy setting",
						s.Sweep, b.X, j+1, labels[j], b.Gamma, b.GammaRDP, b.Kappa, o.Gamma, o.GammaRDP, o.Kappa)
				}
				continue
			}
			bounds[b.X] = b
		}
		found := 0
		for _, se := range s.Series {
			if len(keep) > 0 && !slices.Contains(keep, se.Attack) {
				continue
			}
			found++
			name := se.Attack
			if labels[j] != "" {
				name = labels[j] + ": " + se.Attack
			}
			out.Series = append(out.Series, AttackSeries{Attack: name, Points: slices.Clone(se.Points)})
		}
		if found == 0 {
			return nil, fmt.Errorf("attack sweeps: sweep %d (%s) has none of the attacks %v", j+1, labels[j], keep)
		}
	}
	for _, b := range bounds {
		out.Bounds = append(out.Bounds, b)
	}
	if err := out.normalize(); err != nil {
		return nil, fmt.Errorf("attack sweeps: %w", err)
	}
	return out, nil
}

// AttackPanels draws one panel per sweep (Hayes et al. Fig. 14: one per ε and prior
// size, whose bounds differ), each titled by its label and keeping only the attacks
// named in keep (all when empty), laid out in rows of cols panels (the last row
// padded with blank tiles) for plot.SaveTiles. It returns the sweeps as drawn.
func AttackPanels(sweeps []*AttackSweep, labels, keep []string, cols int, opt AttackOptions) ([][]*gplot.Plot, []*AttackSweep, error) {
	if len(sweeps) == 0 {
		return nil, nil, fmt.Errorf("attack panels: no sweeps")
	}
	if len(labels) != len(sweeps) {
		return nil, nil, fmt.Errorf("attack panels: %d labels for %d sweeps", len(labels), len(sweeps))
	}
	if cols < 1 {
		return nil, nil, fmt.Errorf("attack panels: %d columns < 1", cols)
	}
	var rows [][]*gplot.Plot
	var drawn []*AttackSweep
	for j, s := range sweeps {
		if j > 0 && s.Sweep != sweeps[0].Sweep {
			return nil, nil, fmt.Errorf("attack panels: sweep %d varies %s, the first %s", j+1, s.Sweep, sweeps[0].Sweep)
		}
		kept, err := MergeAttackSweeps([]*AttackSweep{s}, []string{""}, keep)
		if err != nil {
			return nil, nil, fmt.Errorf("attack panels: %s: %w", labels[j], err)
		}
		o := opt
		o.Title = labels[j]
		if opt.Title != "" {
			o.Title = opt.Title + ": " + labels[j]
		}
		p, err := Attack(kept, o)
		if err != nil {
			return nil, nil, fmt.Errorf("attack panels: %s: %w", labels[j], err)
		}
		if j%cols == 0 {
			rows = append(rows, make([]*gplot.Plot, cols))
		}
		rows[len(rows)-1][j%cols] = p
		drawn = append(drawn, kept)
	}
	return rows, drawn, nil
}
