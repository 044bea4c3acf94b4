package figures

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/dpfil/dpfil/data"
	"github.com/dpfil/dpfil/plot"
	"github.com/dpfil/dpfil/sweep"
	"github.com/dpfil/dpfil/train/fil"
)

// This file holds the typed requests and reports behind the 'dpfil plot' commands:
// each reads its inputs, draws, writes the figure file and reports what it drew.

// Figure is the file a figure is written to, its size in pixels (in points for SVG
// and PDF, at 96 px per inch) and its title.
type Figure struct {
	Out           string // .png, .svg or .pdf
	Width, Height int
	Title         string
}

// Check says whether the figure has a file of a known format.
func (f Figure) Check() error {
	if f.Out == "" {
		return errors.New("no output file: give -o FILE.png|.svg|.pdf")
	}
	_, err := plot.Format(f.Out)
	return err
}

// ParetoRequest is an accuracy-vs-MSE-bound figure of sweep results.
type ParetoRequest struct {
	Figure
	Inputs  []string  // results files or sweep directories, deduplicated by config hash
	Percent bool      // accuracy axis in percent
	Warn    io.Writer // optional: conflicts and unusable lines, one per line
}

// FrontierPoint is one Pareto-optimal run.
type FrontierPoint struct {
	Hash      string  `json:"hash"`
	GridIndex int     `json:"grid_index"`
	Accuracy  float64 `json:"accuracy"`
	Bound     float64 `json:"bound"`
}

// ParetoSeriesReport is one bound's series: points drawn, dropped, and its frontier.
type ParetoSeriesReport struct {
	Key      string          `json:"key"`
	Label    string          `json:"label"`
	Points   int             `json:"points"`
	Dropped  int             `json:"dropped"`
	Frontier []FrontierPoint `json:"frontier"`
}

// ParetoReport is what WritePareto drew.
type ParetoReport struct {
	Out       string               `json:"out"`
	Width     int                  `json:"width"`
	Height    int                  `json:"height"`
	Records   int                  `json:"records"`
	Conflicts int                  `json:"conflicts"`
	BadLines  int                  `json:"bad_lines"`
	Series    []ParetoSeriesReport `json:"series"`
}

// WritePareto reads the sweep results, draws Pareto (one series per MSE bound with
// its frontier) and writes the figure.
func WritePareto(req ParetoRequest) (*ParetoReport, error) {
	if err := req.Check(); err != nil {
		return nil, err
	}
	recs, rep, err := sweep.ReadInputs(req.Inputs)
	if err != nil {
		return nil, err
	}
	if req.Warn != nil {
		for _, c := range rep.Conflicts {
			fmt.Fprintf(req.Warn, "warning: config %s has different results in %s and %s (%s); using the first\n", c.Hash, c.Kept, c.Other, strings.Join(c.Fields, ", "))
		}
		for _, b := range rep.BadLines {
			fmt.Fprintf(req.Warn, "warning: skipped unusable line %s\n", b)
		}
	}
	series, err := ParetoData(recs)
	if err != nil {
		return nil, err
	}
	p, err := Pareto(series, ParetoOptions{Title: req.Title, AccuracyPercent: req.Percent})
	if err != nil {
		return nil, err
	}
	if err := plot.Save(p, req.Out, req.Width, req.Height); err != nil {
		return nil, err
	}
	res := &ParetoReport{Out: req.Out, Width: req.Width, Height: req.Height, Records: len(recs), Conflicts: len(rep.Conflicts), BadLines: len(rep.BadLines)}
	for _, s := range series {
		so := ParetoSeriesReport{Key: s.Key, Label: s.Label, Points: len(s.Points), Dropped: s.Dropped, Frontier: []FrontierPoint{}}
		for _, q := range s.Frontier {
			r := recs[q.Index]
			so.Frontier = append(so.Frontier, FrontierPoint{Hash: r.Hash, GridIndex: r.Index, Accuracy: q.Accuracy, Bound: q.Bound})
		}
		res.Series = append(res.Series, so)
	}
	return res, nil
}

// WriteText writes the figure's file and each series' frontier for people.
func (r *ParetoReport) WriteText(w io.Writer) {
	fmt.Fprintf(w, "wrote %s (%d×%d px) from %d runs", r.Out, r.Width, r.Height, r.Records)
	if r.BadLines > 0 {
		fmt.Fprintf(w, " (%d unusable lines skipped, listed on stderr)", r.BadLines)
	}
	fmt.Fprintln(w)
	for _, s := range r.Series {
		fmt.Fprintf(w, "%-24s %4d points (%d dropped), frontier:", s.Label, s.Points, s.Dropped)
		for _, q := range s.Frontier {
			fmt.Fprintf(w, " (%.4f, %.3g)", q.Accuracy, q.Bound)
		}
		fmt.Fprintln(w)
	}
}

// HistRequest is a histogram of a run's per-sample dFIL.
type HistRequest struct {
	Figure
	DFIL   string // per-sample dFIL, float64 .npy (a run's dfil.npy)
	What   string // "dfil", or "mse": the MSE lower bound 1/dFIL
	Bins   int
	Linear bool // linear instead of log10 x
}

// HistReport is what WriteHist drew.
type HistReport struct {
	Out  string `json:"out"`
	What string `json:"what"`
	plot.HistStats
	label string
}

// WriteHist draws the histogram of dFIL or of 1/dFIL, with a dashed line at
// MSE = 1 (perfect privacy), and writes the figure.
func WriteHist(req HistRequest) (*HistReport, error) {
	if err := req.Check(); err != nil {
		return nil, err
	}
	vals, err := fil.Load(req.DFIL)
	if err != nil {
		return nil, err
	}
	label := "dFIL"
	switch req.What {
	case "dfil":
	case "mse":
		label = "MSE lower bound 1/dFIL"
		for i, v := range vals {
			vals[i] = 1 / v // dFIL 0 → +Inf: dropped as not finite
		}
	default:
		return nil, fmt.Errorf("plot hist: --what %q, want dfil or mse", req.What)
	}
	p, st, err := plot.Histogram(vals, plot.HistOptions{Bins: req.Bins, Log10: !req.Linear, XLabel: label, Title: req.Title, Marker: 1, MarkerLabel: "MSE = 1 (perfect privacy)"})
	if err != nil {
		return nil, err
	}
	if err := plot.Save(p, req.Out, req.Width, req.Height); err != nil {
		return nil, err
	}
	return &HistReport{Out: req.Out, What: req.What, HistStats: st, label: label}, nil
}

// WriteText writes one line about the histogram for people.
func (r *HistReport) WriteText(w io.Writer) {
	fmt.Fprintf(w, "wrote %s: %s of %d samples (%d not drawable), range %.4g … %.4g\n", r.Out, r.label, r.N, r.Dropped, r.Min, r.Max)
}

// ScatterRequest is a scatter plot of two columns of a CSV file.
type ScatterRequest struct {
	Figure
	CSV              string // with a header row
	X, Y             string // column names
	XLabel, YLabel   string // default the column names
	LinearX, LinearY bool   // linear instead of log axes
	NoDiagonal       bool   // no y = x line
}

// ScatterReport is what WriteScatter drew.
type ScatterReport struct {
	Out string `json:"out"`
	plot.ScatterStats
}

// WriteScatter reads the two columns, draws plot.Scatter and writes the figure.
func WriteScatter(req ScatterRequest) (*ScatterReport, error) {
	if err := req.Check(); err != nil {
		return nil, err
	}
	f, err := os.Open(req.CSV)
	if err != nil {
		return nil, fmt.Errorf("plot scatter: %w", err)
	}
	defer f.Close()
	x, y, err := plot.ReadCSVColumns(f, req.X, req.Y)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", req.CSV, err)
	}
	opt := plot.ScatterOptions{XLabel: cmp.Or(req.XLabel, req.X), YLabel: cmp.Or(req.YLabel, req.Y), Title: req.Title, LogX: !req.LinearX, LogY: !req.LinearY, Diagonal: !req.NoDiagonal}
	p, st, err := plot.Scatter(x, y, opt)
	if err != nil {
		return nil, err
	}
	if err := plot.Save(p, req.Out, req.Width, req.Height); err != nil {
		return nil, err
	}
	return &ScatterReport{Out: req.Out, ScatterStats: st}, nil
}

// WriteText writes one line about the scatter plot for people.
func (r *ScatterReport) WriteText(w io.Writer) {
	fmt.Fprintf(w, "wrote %s: %d points (%d not drawable), %d below y = x\n", r.Out, r.N, r.Dropped, r.Violations)
}

// ParseIndices parses a list of sample indices and inclusive ranges, e.g.
// "0,5,10-15" (a range spans at most 10 001 indices).
func ParseIndices(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if a, b, ok := strings.Cut(f, "-"); ok {
			lo, err1 := strconv.Atoi(a)
			hi, err2 := strconv.Atoi(b)
			if err1 != nil || err2 != nil || lo > hi || hi-lo > 10000 {
				return nil, fmt.Errorf("index range %q: want lo-hi", f)
			}
			for i := lo; i <= hi; i++ {
				out = append(out, i)
			}
			continue
		}
		i, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("index %q: %w", f, err)
		}
		out = append(out, i)
	}
	return out, nil
}

// ImagesRequest is a grid of dataset samples: those of Indices, or, with DFIL, the
// Top samples of highest dFIL followed by the Bottom of lowest.
type ImagesRequest struct {
	Out              string // .png
	Dataset, DataDir string
	Split            string // "train" or "test"
	Indices          string // e.g. "0,3,10-19" (ParseIndices)
	DFIL             string // a run's dfil.npy, indexed like the training split
	Top, Bottom      int
	Cols, Scale      int // plot.GridOptions; Cols defaults to max(Top, Bottom) with DFIL
}

// ImagesReport is what WriteImages drew.
type ImagesReport struct {
	Out     string    `json:"out"`
	Dataset string    `json:"dataset"`
	Split   string    `json:"split"`
	Indices []int     `json:"indices"`
	Labels  []int     `json:"labels"`
	DFIL    []float64 `json:"dfil,omitempty"`
	Width   int       `json:"width"`
	Height  int       `json:"height"`
}

// WriteImages selects the samples, draws plot.ImageGrid and writes the PNG.
func WriteImages(req ImagesRequest) (*ImagesReport, error) {
	if req.Out == "" {
		return nil, errors.New("plot images: no output file: give -o FILE.png")
	}
	if f, err := plot.Format(req.Out); err != nil || f != "png" {
		return nil, fmt.Errorf("plot images: %s: the image grid is written as .png", req.Out)
	}
	if (req.Indices == "") == (req.DFIL == "") {
		return nil, errors.New("plot images: give exactly one of --indices and --dfil")
	}
	sp, err := data.Load(req.Dataset, data.Options{DataDir: req.DataDir})
	if err != nil {
		return nil, err
	}
	ds := sp.Train
	if req.Split == "test" {
		ds = sp.Test
	} else if req.Split != "train" {
		return nil, fmt.Errorf("plot images: --split %q, want train or test", req.Split)
	}
	if ds == nil || ds.N == 0 {
		return nil, fmt.Errorf("plot images: dataset %s has no %s split", req.Dataset, req.Split)
	}
	res := &ImagesReport{Out: req.Out, Dataset: req.Dataset, Split: req.Split}
	if err := req.selectSamples(res, ds.N); err != nil {
		return nil, fmt.Errorf("plot images: %w", err)
	}
	imgs := make([][]float32, len(res.Indices))
	res.Labels = make([]int, len(res.Indices))
	for k, i := range res.Indices {
		if i < 0 || i >= ds.N {
			return nil, fmt.Errorf("plot images: index %d outside the %d samples of the %s split", i, ds.N, req.Split)
		}
		imgs[k], res.Labels[k] = ds.Image(i), ds.Labels[i]
	}
	if req.Cols == 0 && req.Top > 0 && req.Bottom > 0 && req.DFIL != "" {
		req.Cols = max(req.Top, req.Bottom)
	}
	img, err := plot.ImageGrid(imgs, ds.C, ds.H, ds.W, plot.GridOptions{Cols: req.Cols, Scale: req.Scale})
	if err != nil {
		return nil, err
	}
	if err := plot.SavePNG(req.Out, img); err != nil {
		return nil, err
	}
	b := img.Bounds().Size()
	res.Width, res.Height = b.X, b.Y
	return res, nil
}

// selectSamples fills res.Indices (and res.DFIL) from the indices or the dFIL file;
// n is the number of samples of the split.
func (req ImagesRequest) selectSamples(res *ImagesReport, n int) error {
	var err error
	if req.Indices != "" {
		res.Indices, err = ParseIndices(req.Indices)
	} else {
		res.Indices, res.DFIL, err = extremeDFIL(req.DFIL, req.Split, n, req.Top, req.Bottom)
	}
	if err == nil && len(res.Indices) == 0 {
		err = errors.New("no samples selected")
	}
	return err
}

// extremeDFIL is the indices and dFIL of the top samples of highest dFIL followed by
// the bottom samples of lowest (stable: ties in index order).
func extremeDFIL(file, split string, n, top, bottom int) ([]int, []float64, error) {
	if split != "train" {
		return nil, nil, errors.New("--dfil indexes the training split")
	}
	d, err := fil.Load(file)
	if err != nil {
		return nil, nil, err
	}
	if len(d) > n {
		return nil, nil, fmt.Errorf("%s has %d values but the training split only %d samples", file, len(d), n)
	}
	if top < 0 || bottom < 0 || top+bottom == 0 || top+bottom > len(d) {
		return nil, nil, fmt.Errorf("--top %d --bottom %d for %d samples", top, bottom, len(d))
	}
	order := make([]int, len(d))
	for i, v := range d {
		if math.IsNaN(v) {
			return nil, nil, fmt.Errorf("%s has NaN at %d", file, i)
		}
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return d[order[a]] > d[order[b]] })
	idx := append(append([]int{}, order[:top]...), order[len(order)-bottom:]...)
	vals := make([]float64, len(idx))
	for k, i := range idx {
		vals[k] = d[i]
	}
	return idx, vals, nil
}

// WriteText writes the grid's file and, with dFIL, each sample's label and dFIL.
func (r *ImagesReport) WriteText(w io.Writer) {
	fmt.Fprintf(w, "wrote %s (%d×%d px): %d %s samples of %s\n", r.Out, r.Width, r.Height, len(r.Indices), r.Split, r.Dataset)
	for k, i := range r.Indices {
		if r.DFIL != nil {
			fmt.Fprintf(w, "  #%d label %d dFIL %.4g\n", i, r.Labels[k], r.DFIL[k])
		}
	}
}
