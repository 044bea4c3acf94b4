package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/dpfil/dpfil/accounting"
	"github.com/dpfil/dpfil/data"
	"github.com/dpfil/dpfil/plot"
	"github.com/dpfil/dpfil/sweep"
	"github.com/spf13/cobra"
)

// newPlotCmd is the 'plot' command group: every figure of the papers in one place.
func newPlotCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "plot",
		Short: "Pareto plots, histograms, scatter plots and image grids",
		Long: `Figures as PNG, SVG or PDF (chosen by the -o extension) at --width × --height
pixels (SVG/PDF: the same size in points at 96 px per inch).

  pareto   accuracy vs MSE lower bound of a sweep, with Pareto frontiers (Guo et al. (2022) Fig. 5)
  hist     per-sample dFIL or MSE-bound histogram (Fig. 2)
  scatter  predicted vs realised MSE from a CSV file, log-log with y = x (Fig. 3)
  images   grid of dataset samples, e.g. the highest/lowest-dFIL ones (Fig. 4, 6)
  attack   attack success with 95 % CIs and the ReRo bounds vs ε, K or q (Hayes et al. 2023, Fig. 2, 3, 5)`,
	}
	cmd.AddCommand(newPlotParetoCmd(), newPlotHistCmd(), newPlotScatterCmd(), newPlotImagesCmd(), newPlotAttackCmd())
	return cmd
}

// figureFlags are the output flags every figure command shares.
type figureFlags struct {
	out           string
	width, height int
	title         string
	asJSON        bool
}

func (f *figureFlags) add(cmd *cobra.Command, w, h int) {
	cmd.Flags().StringVarP(&f.out, "output", "o", "", "figure file: .png, .svg or .pdf")
	cmd.Flags().IntVar(&f.width, "width", w, "width in pixels")
	cmd.Flags().IntVar(&f.height, "height", h, "height in pixels")
	cmd.Flags().StringVar(&f.title, "title", "", "figure title")
	addJSONFlag(cmd, &f.asJSON)
}

func (f *figureFlags) check() error {
	if f.out == "" {
		return errors.New("no output file: give -o FILE.png|.svg|.pdf")
	}
	_, err := plot.Format(f.out)
	return err
}

// frontierPoint is one Pareto-optimal configuration in --json output.
type frontierPoint struct {
	Hash      string  `json:"hash"`
	GridIndex int     `json:"grid_index"`
	Accuracy  float64 `json:"accuracy"`
	Bound     float64 `json:"bound"`
}

type paretoSeriesOut struct {
	Key      string          `json:"key"`
	Label    string          `json:"label"`
	Points   int             `json:"points"`
	Dropped  int             `json:"dropped"`
	Frontier []frontierPoint `json:"frontier"`
}

type paretoOut struct {
	Out       string            `json:"out"`
	Width     int               `json:"width"`
	Height    int               `json:"height"`
	Records   int               `json:"records"`
	Conflicts int               `json:"conflicts"`
	BadLines  int               `json:"bad_lines"`
	Series    []paretoSeriesOut `json:"series"`
}

// readResultInputs reads and deduplicates (by config hash) results files or sweep
// directories.
func readResultInputs(paths []string) ([]sweep.Record, sweep.MergeReport, error) {
	var srcs []sweep.Source
	var bad []sweep.BadLine
	for _, p := range paths {
		file := p
		if fi, err := os.Stat(p); err != nil {
			return nil, sweep.MergeReport{}, fmt.Errorf("results: %w", err)
		} else if fi.IsDir() {
			file = sweep.ResultsPath(p)
		}
		if _, err := os.Stat(file); err != nil {
			return nil, sweep.MergeReport{}, fmt.Errorf("results: %w", err)
		}
		recs, b, err := sweep.ReadResults(file)
		if err != nil {
			return nil, sweep.MergeReport{}, err
		}
		if len(recs) == 0 {
			return nil, sweep.MergeReport{}, explainNoRecords(file, b)
		}
		bad = append(bad, b...)
		srcs = append(srcs, sweep.Source{Name: file, Records: recs})
	}
	recs, rep, err := sweep.Merge(srcs)
	rep.BadLines = append(rep.BadLines, bad...)
	return recs, rep, err
}

// explainNoRecords says why a results file gave no run: empty, not a results file
// (binary), or every line unusable (the first reason).
func explainNoRecords(file string, bad []sweep.BadLine) error {
	head := make([]byte, 512)
	f, err := os.Open(file)
	if err != nil {
		return fmt.Errorf("results: %w", err)
	}
	n, _ := f.Read(head)
	f.Close()
	switch {
	case n == 0 || len(bytes.TrimSpace(head[:n])) == 0:
		return fmt.Errorf("%s is empty: no run recorded yet (has the sweep finished a run? see 'dpfil sweep status')", file)
	case bytes.IndexByte(head[:n], 0) >= 0 || !utf8.Valid(head[:n-min(n, 3)]): // a rune may be cut at the end
		return fmt.Errorf("%s is not a results file: it holds binary data (want the results.jsonl a sweep writes, one JSON record per line)", file)
	case len(bad) > 0:
		return fmt.Errorf("%s has no usable record: %d unusable lines, the first %s", file, len(bad), bad[0])
	}
	return fmt.Errorf("%s has no record", file)
}

// warnBadLines reports skipped lines on stderr (human and --json output alike).
func warnBadLines(w io.Writer, bad []sweep.BadLine) {
	for _, b := range bad {
		fmt.Fprintf(w, "warning: skipped unusable line %s\n", b)
	}
}

func newPlotParetoCmd() *cobra.Command {
	var (
		ff      figureFlags
		percent bool
	)
	cmd := &cobra.Command{
		Use:   "pareto RESULTS.jsonl|SWEEPDIR... -o pareto.png",
		Short: "Test accuracy vs MSE lower bounds (RDP, FIL max, FIL median) with Pareto frontiers",
		Long: `Guo et al. (2022) Fig. 5: test accuracy on x, MSE lower bound on a log y axis, one series per
bound (RDP: 1/(4(e^ε₂−1)); FIL: 1/max dFIL and 1/median dFIL), each with its Pareto
frontier (no other run is both at least as accurate and at least as private) as a
dashed line, and the MSE = 1 "perfect privacy" line. Runs whose bound is infinite or
missing (e.g. FIL off) cannot sit on a log axis and are counted as dropped. --json
prints the frontier points.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := ff.check(); err != nil {
				return err
			}
			recs, rep, err := readResultInputs(args)
			if err != nil {
				return err
			}
			for _, c := range rep.Conflicts {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: config %s has different results in %s and %s (%s); using the first\n", c.Hash, c.Kept, c.Other, strings.Join(c.Fields, ", "))
			}
			warnBadLines(cmd.ErrOrStderr(), rep.BadLines)
			series, err := plot.ParetoData(recs)
			if err != nil {
				return err
			}
			p, err := plot.Pareto(series, plot.ParetoOptions{Title: ff.title, AccuracyPercent: percent})
			if err != nil {
				return err
			}
			if err := plot.Save(p, ff.out, ff.width, ff.height); err != nil {
				return err
			}
			res := paretoOut{Out: ff.out, Width: ff.width, Height: ff.height, Records: len(recs), Conflicts: len(rep.Conflicts), BadLines: len(rep.BadLines)}
			for _, s := range series {
				so := paretoSeriesOut{Key: s.Key, Label: s.Label, Points: len(s.Points), Dropped: s.Dropped, Frontier: []frontierPoint{}}
				for _, q := range s.Frontier {
					r := recs[q.Index]
					so.Frontier = append(so.Frontier, frontierPoint{Hash: r.Hash, GridIndex: r.Index, Accuracy: q.Accuracy, Bound: q.Bound})
				}
				res.Series = append(res.Series, so)
			}
			return emit(cmd.OutOrStdout(), ff.asJSON, res, func(w io.Writer) {
				fmt.Fprintf(w, "wrote %s (%d×%d px) from %d runs", ff.out, ff.width, ff.height, len(recs))
				if len(rep.BadLines) > 0 {
					fmt.Fprintf(w, " (%d unusable lines skipped, listed on stderr)", len(rep.BadLines))
				}
				fmt.Fprintln(w)
				for _, s := range res.Series {
					fmt.Fprintf(w, "%-24s %4d points (%d dropped), frontier:", s.Label, s.Points, s.Dropped)
					for _, q := range s.Frontier {
						fmt.Fprintf(w, " (%.4f, %.3g)", q.Accuracy, q.Bound)
					}
					fmt.Fprintln(w)
				}
			})
		},
	}
	ff.add(cmd, 800, 600)
	cmd.Flags().BoolVar(&percent, "percent", false, "accuracy axis in percent")
	return cmd
}

func newPlotHistCmd() *cobra.Command {
	var (
		ff     figureFlags
		dfil   string
		what   string
		bins   int
		linear bool
	)
	cmd := &cobra.Command{
		Use:   "hist --dfil DFIL.npy -o hist.png",
		Short: "Histogram of per-sample dFIL or of the per-sample MSE bound 1/dFIL",
		Long: `Guo et al. (2022) Fig. 2: the distribution over training samples of dFIL (--what dfil) or
of the MSE lower bound 1/dFIL of an unbiased reconstruction attack (--what mse), from
the dfil.npy a training run writes. Log10 x by default (--linear to turn off); a
dashed line marks MSE = 1 (dFIL = 1), "perfect privacy".`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := ff.check(); err != nil {
				return err
			}
			if dfil == "" {
				return errors.New("plot hist: --dfil FILE.npy is required")
			}
			vals, err := accounting.LoadDFIL(dfil)
			if err != nil {
				return err
			}
			label := "dFIL"
			switch what {
			case "dfil":
			case "mse":
				label = "MSE lower bound 1/dFIL"
				for i, v := range vals {
					vals[i] = 1 / v // dFIL 0 → +Inf: dropped as not finite
				}
			default:
				return fmt.Errorf("plot hist: --what %q, want dfil or mse", what)
			}
			p, st, err := plot.Histogram(vals, plot.HistOptions{Bins: bins, Log10: !linear, XLabel: label, Title: ff.title, Marker: 1, MarkerLabel: "MSE = 1 (perfect privacy)"})
			if err != nil {
				return err
			}
			if err := plot.Save(p, ff.out, ff.width, ff.height); err != nil {
				return err
			}
			type histOut struct {
				Out  string `json:"out"`
				What string `json:"what"`
				plot.HistStats
			}
			return emit(cmd.OutOrStdout(), ff.asJSON, histOut{Out: ff.out, What: what, HistStats: st}, func(w io.Writer) {
				fmt.Fprintf(w, "wrote %s: %s of %d samples (%d not drawable), range %.4g … %.4g\n", ff.out, label, st.N, st.Dropped, st.Min, st.Max)
			})
		},
	}
	ff.add(cmd, 800, 500)
	cmd.Flags().StringVar(&dfil, "dfil", "", "per-sample dFIL, float64 .npy (a run's dfil.npy)")
	cmd.Flags().StringVar(&what, "what", "mse", "dfil or mse (1/dFIL)")
	cmd.Flags().IntVar(&bins, "bins", 50, "number of bins")
	cmd.Flags().BoolVar(&linear, "linear", false, "linear instead of log10 x")
	return cmd
}

func newPlotScatterCmd() *cobra.Command {
	var (
		ff                  figureFlags
		csvPath, xcol, ycol string
		linX, linY, noDiag  bool
		xlabel, ylabel      string
	)
	cmd := &cobra.Command{
		Use:   "scatter --csv FILE --x COL --y COL -o scatter.png",
		Short: "Scatter plot of two CSV columns, e.g. predicted vs realised MSE (log-log, y = x)",
		Long: `Guo et al. (2022) Fig. 3: the MSE lower bound predicted from dFIL (x) against the MSE the
attack realised (y), log-log, with the y = x cut-off; points below it (the attack did
better than the bound) are red and counted as violations.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := ff.check(); err != nil {
				return err
			}
			if csvPath == "" || xcol == "" || ycol == "" {
				return errors.New("plot scatter: --csv, --x and --y are required")
			}
			f, err := os.Open(csvPath)
			if err != nil {
				return fmt.Errorf("plot scatter: %w", err)
			}
			defer f.Close()
			x, y, err := plot.ReadCSVColumns(f, xcol, ycol)
			if err != nil {
				return fmt.Errorf("%s: %w", csvPath, err)
			}
			if xlabel == "" {
				xlabel = xcol
			}
			if ylabel == "" {
				ylabel = ycol
			}
			p, st, err := plot.Scatter(x, y, plot.ScatterOptions{XLabel: xlabel, YLabel: ylabel, Title: ff.title, LogX: !linX, LogY: !linY, Diagonal: !noDiag})
			if err != nil {
				return err
			}
			if err := plot.Save(p, ff.out, ff.width, ff.height); err != nil {
				return err
			}
			type scatterOut struct {
				Out string `json:"out"`
				plot.ScatterStats
			}
			return emit(cmd.OutOrStdout(), ff.asJSON, scatterOut{Out: ff.out, ScatterStats: st}, func(w io.Writer) {
				fmt.Fprintf(w, "wrote %s: %d points (%d not drawable), %d below y = x\n", ff.out, st.N, st.Dropped, st.Violations)
			})
		},
	}
	ff.add(cmd, 600, 600)
	cmd.Flags().StringVar(&csvPath, "csv", "", "CSV file with a header row")
	cmd.Flags().StringVar(&xcol, "x", "", "column for x")
	cmd.Flags().StringVar(&ycol, "y", "", "column for y")
	cmd.Flags().StringVar(&xlabel, "xlabel", "", "x axis label (default the column name)")
	cmd.Flags().StringVar(&ylabel, "ylabel", "", "y axis label (default the column name)")
	cmd.Flags().BoolVar(&linX, "linear-x", false, "linear x axis")
	cmd.Flags().BoolVar(&linY, "linear-y", false, "linear y axis")
	cmd.Flags().BoolVar(&noDiag, "no-diagonal", false, "no y = x line")
	return cmd
}

func parseIndices(s string) ([]int, error) {
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

func newPlotImagesCmd() *cobra.Command {
	var (
		ff               figureFlags
		dataset, dataDir string
		split, indices   string
		dfil             string
		top, bottom      int
		cols, scale      int
	)
	cmd := &cobra.Command{
		Use:   "images (--indices LIST | --dfil DFIL.npy --top K --bottom K) -o grid.png",
		Short: "Grid of dataset samples, e.g. those with the highest and lowest dFIL",
		Long: `Guo et al. (2022) Fig. 4 and 6: a grid of training (or test) images. Pick samples with
--indices (e.g. 0,5,10-15), or with --dfil (a run's dfil.npy, indexed like the
training split) the --top K samples of highest dFIL (most exposed) followed by the
--bottom K of lowest dFIL. Writes a PNG at --scale pixels per image pixel; --width and
--height do not apply.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if ff.out == "" {
				return errors.New("plot images: no output file: give -o FILE.png")
			}
			if f, err := plot.Format(ff.out); err != nil || f != "png" {
				return fmt.Errorf("plot images: %s: the image grid is written as .png", ff.out)
			}
			if (indices == "") == (dfil == "") {
				return errors.New("plot images: give exactly one of --indices and --dfil")
			}
			sp, err := data.Load(dataset, data.Options{DataDir: dataDir})
			if err != nil {
				return err
			}
			ds := sp.Train
			if split == "test" {
				ds = sp.Test
			} else if split != "train" {
				return fmt.Errorf("plot images: --split %q, want train or test", split)
			}
			if ds == nil || ds.N == 0 {
				return fmt.Errorf("plot images: dataset %s has no %s split", dataset, split)
			}
			var idx []int
			var vals []float64
			if indices != "" {
				if idx, err = parseIndices(indices); err != nil {
					return fmt.Errorf("plot images: %w", err)
				}
			} else {
				if split != "train" {
					return errors.New("plot images: --dfil indexes the training split")
				}
				d, err := accounting.LoadDFIL(dfil)
				if err != nil {
					return err
				}
				if len(d) > ds.N {
					return fmt.Errorf("plot images: %s has %d values but the training split only %d samples", dfil, len(d), ds.N)
				}
				if top < 0 || bottom < 0 || top+bottom == 0 || top+bottom > len(d) {
					return fmt.Errorf("plot images: --top %d --bottom %d for %d samples", top, bottom, len(d))
				}
				order := make([]int, len(d))
				for i := range order {
					order[i] = i
				}
				for i, v := range d {
					if math.IsNaN(v) {
						return fmt.Errorf("plot images: %s has NaN at %d", dfil, i)
					}
				}
				sort.SliceStable(order, func(a, b int) bool { return d[order[a]] > d[order[b]] })
				idx = append(append(idx, order[:top]...), order[len(order)-bottom:]...)
				for _, i := range idx {
					vals = append(vals, d[i])
				}
			}
			if len(idx) == 0 {
				return errors.New("plot images: no samples selected")
			}
			imgs := make([][]float32, len(idx))
			labels := make([]int, len(idx))
			for k, i := range idx {
				if i < 0 || i >= ds.N {
					return fmt.Errorf("plot images: index %d outside the %d samples of the %s split", i, ds.N, split)
				}
				imgs[k], labels[k] = ds.Image(i), ds.Labels[i]
			}
			if cols == 0 && top > 0 && bottom > 0 && dfil != "" {
				cols = max(top, bottom)
			}
			img, err := plot.ImageGrid(imgs, ds.C, ds.H, ds.W, plot.GridOptions{Cols: cols, Scale: scale})
			if err != nil {
				return err
			}
			if err := plot.SavePNG(ff.out, img); err != nil {
				return err
			}
			type imagesOut struct {
				Out     string    `json:"out"`
				Dataset string    `json:"dataset"`
				Split   string    `json:"split"`
				Indices []int     `json:"indices"`
				Labels  []int     `json:"labels"`
				DFIL    []float64 `json:"dfil,omitempty"`
				Width   int       `json:"width"`
				Height  int       `json:"height"`
			}
			b := img.Bounds().Size()
			res := imagesOut{Out: ff.out, Dataset: dataset, Split: split, Indices: idx, Labels: labels, DFIL: vals, Width: b.X, Height: b.Y}
			return emit(cmd.OutOrStdout(), ff.asJSON, res, func(w io.Writer) {
				fmt.Fprintf(w, "wrote %s (%d×%d px): %d %s samples of %s\n", ff.out, b.X, b.Y, len(idx), split, dataset)
				for k, i := range idx {
					if vals != nil {
						fmt.Fprintf(w, "  #%d label %d dFIL %.4g\n", i, labels[k], vals[k])
					}
				}
			})
		},
	}
	cmd.Flags().StringVarP(&ff.out, "output", "o", "", "PNG file")
	addJSONFlag(cmd, &ff.asJSON)
	cmd.Flags().StringVar(&dataset, "dataset", "mnist-embedded", "dataset name (dpfil data list)")
	cmd.Flags().StringVar(&dataDir, "data-dir", "", "directory holding the dataset files")
	cmd.Flags().StringVar(&split, "split", "train", "train or test")
	cmd.Flags().StringVar(&indices, "indices", "", "sample indices, e.g. 0,3,10-19")
	cmd.Flags().StringVar(&dfil, "dfil", "", "per-sample dFIL .npy: pick the --top/--bottom samples")
	cmd.Flags().IntVar(&top, "top", 8, "with --dfil: samples of highest dFIL")
	cmd.Flags().IntVar(&bottom, "bottom", 8, "with --dfil: samples of lowest dFIL")
	cmd.Flags().IntVar(&cols, "cols", 0, "images per row (default: top/bottom in two rows, else up to 16)")
	cmd.Flags().IntVar(&scale, "scale", 3, "output pixels per image pixel")
	return cmd
}
