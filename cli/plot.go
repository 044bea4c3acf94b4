package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/dpfil/dpfil/data"
	"github.com/dpfil/dpfil/plot"
	"github.com/dpfil/dpfil/plot/figures"
	"github.com/spf13/cobra"
	gplot "gonum.org/v1/plot"
)

// newPlotCmd is the 'plot' command group: every figure of the papers in one place.
func newPlotCmd() *cobra.Command {
	return group(&cobra.Command{
		Use:   "plot",
		Short: "Pareto plots, histograms, scatter plots and image grids",
		Long: `Figures as PNG, SVG or PDF (chosen by the -o extension) at --width × --height
pixels (SVG/PDF: the same size in points at 96 px per inch): the figures of Guo,
Karrer, Chaudhuri and van der Maaten (2022), "Bounding training data reconstruction
in private (deep) learning", and of Hayes, Mahloujifar and Balle (2023), "Bounding
training data reconstruction in DP-SGD".`,
	}, newPlotParetoCmd(), newPlotHistCmd(), newPlotScatterCmd(), newPlotImagesCmd(), newPlotAttackCmd(), newPlotPerturbDiagCmd())
}

// addFigureFlags binds the output flags every figure command shares to fig, with
// the figure's default size w × h.
func addFigureFlags(cmd *cobra.Command, fig *figures.Figure, w, h int) {
	cmd.Flags().StringVarP(&fig.Out, "output", "o", "", "figure file: .png, .svg or .pdf")
	cmd.Flags().IntVar(&fig.Width, "width", w, "width in pixels")
	cmd.Flags().IntVar(&fig.Height, "height", h, "height in pixels")
	cmd.Flags().StringVar(&fig.Title, "title", "", "figure title")
}

func newPlotParetoCmd() *cobra.Command {
	var req figures.ParetoRequest
	cmd := reportCmd(&cobra.Command{
		Use:   "pareto SWEEPDIR|RESULTS.jsonl|RUNDIR|result.json... -o pareto.png",
		Short: "Test accuracy vs MSE lower bounds (RDP, FIL max, FIL median) with Pareto frontiers (Guo et al. Fig. 5)",
		Long: `Guo et al. (2022) Fig. 5: test accuracy on x, MSE lower bound on a log y axis, one series per
bound (RDP: 1/(4(e^ε₂−1)); FIL: 1/max dFIL and 1/median dFIL), each with its Pareto
frontier (no other run is both at least as accurate and at least as private) as a
dashed line, and the MSE = 1 "perfect privacy" line. Runs whose bound is infinite or
missing (e.g. FIL off) cannot sit on a log axis and are counted as dropped.

Inputs, in any mix: a sweep directory (its results.jsonl), a results.jsonl, a run
directory of 'dpfil train' (its result.json), a result.json, or a directory of run
directories (e.g. runs/). Results are deduplicated by config hash; conflicts and
unusable lines are listed on stderr.`,
		Args: cobra.MinimumNArgs(1),
	}, func(cmd *cobra.Command, args []string) (*figures.ParetoReport, error) {
		req.Inputs, req.Warn = args, cmd.ErrOrStderr()
		return figures.WritePareto(req)
	})
	addFigureFlags(cmd, &req.Figure, 800, 600)
	cmd.Flags().BoolVar(&req.Percent, "percent", false, "accuracy axis in percent")
	return cmd
}

func newPlotHistCmd() *cobra.Command {
	var req figures.HistRequest
	cmd := reportCmd(&cobra.Command{
		Use:   "hist --dfil DFIL.npy -o hist.png",
		Short: "Histogram of per-sample dFIL or of the per-sample MSE bound 1/dFIL (Guo et al. Fig. 2)",
		Long: `Guo et al. (2022) Fig. 2: the distribution over training samples of dFIL (--what dfil) or
of the MSE lower bound 1/dFIL of an unbiased reconstruction attack (--what mse), from
the dfil.npy a training run writes. Log10 x by default (--linear to turn off); a
dashed line marks MSE = 1 (dFIL = 1), "perfect privacy".`,
		Args: cobra.NoArgs,
	}, func(*cobra.Command, []string) (*figures.HistReport, error) { return figures.WriteHist(req) })
	addFigureFlags(cmd, &req.Figure, 800, 500)
	cmd.Flags().StringVar(&req.DFIL, "dfil", "", "per-sample dFIL, float64 .npy (a run's dfil.npy)")
	cmd.Flags().StringVar(&req.What, "what", "mse", "dfil or mse (1/dFIL)")
	cmd.Flags().IntVar(&req.Bins, "bins", 50, "number of bins")
	cmd.Flags().BoolVar(&req.Linear, "linear", false, "linear instead of log10 x")
	markRequired(cmd, "dfil")
	return cmd
}

func newPlotScatterCmd() *cobra.Command {
	var req figures.ScatterRequest
	cmd := reportCmd(&cobra.Command{
		Use:   "scatter --csv FILE --x COL --y COL -o scatter.png",
		Short: "Scatter plot of two CSV columns, e.g. predicted vs realised MSE (log-log, y = x; Guo et al. Fig. 3)",
		Long: `Guo et al. (2022) Fig. 3: the MSE lower bound predicted from dFIL (x) against the MSE the
attack realised (y), log-log, with the y = x cut-off; points below it (the attack did
better than the bound) are red and counted as violations.`,
		Args: cobra.NoArgs,
	}, func(*cobra.Command, []string) (*figures.ScatterReport, error) { return figures.WriteScatter(req) })
	addFigureFlags(cmd, &req.Figure, 600, 600)
	f := cmd.Flags()
	f.StringVar(&req.CSV, "csv", "", "CSV file with a header row")
	f.StringVar(&req.X, "x", "", "column for x")
	f.StringVar(&req.Y, "y", "", "column for y")
	f.StringVar(&req.XLabel, "xlabel", "", "x axis label (default the column name)")
	f.StringVar(&req.YLabel, "ylabel", "", "y axis label (default the column name)")
	f.BoolVar(&req.LinearX, "linear-x", false, "linear x axis")
	f.BoolVar(&req.LinearY, "linear-y", false, "linear y axis")
	f.BoolVar(&req.NoDiagonal, "no-diagonal", false, "no y = x line")
	markRequired(cmd, "csv", "x", "y")
	return cmd
}

func newPlotImagesCmd() *cobra.Command {
	var req figures.ImagesRequest
	cmd := reportCmd(&cobra.Command{
		Use:   "images (--indices LIST | --dfil DFIL.npy --top K --bottom K) -o grid.png",
		Short: "Grid of dataset samples, e.g. those with the highest and lowest dFIL (Guo et al. Fig. 4, 6)",
		Long: `Guo et al. (2022) Fig. 4 and 6: a grid of training (or test) images. Pick samples with
--indices (e.g. 0,5,10-15), or with --dfil (a run's dfil.npy, indexed like the
training split) the --top K samples of highest dFIL (most exposed) followed by the
--bottom K of lowest dFIL. Writes a PNG at --scale pixels per image pixel; --width and
--height do not apply.`,
		Args: cobra.NoArgs,
	}, func(*cobra.Command, []string) (*figures.ImagesReport, error) { return figures.WriteImages(req) })
	f := cmd.Flags()
	f.StringVarP(&req.Out, "output", "o", "", "PNG file")
	f.StringVar(&req.Dataset, "dataset", "mnist-embedded", data.FlagHelp())
	f.StringVar(&req.DataDir, "data-dir", "", "directory holding the dataset files")
	f.StringVar(&req.Split, "split", "train", "train or test")
	f.StringVar(&req.Indices, "indices", "", "sample indices, e.g. 0,3,10-19")
	f.StringVar(&req.DFIL, "dfil", "", "per-sample dFIL .npy: pick the --top/--bottom samples")
	f.IntVar(&req.Top, "top", 8, "with --dfil: samples of highest dFIL")
	f.IntVar(&req.Bottom, "bottom", 8, "with --dfil: samples of lowest dFIL")
	f.IntVar(&req.Cols, "cols", 0, "images per row (default: top/bottom in two rows, else up to 16)")
	f.IntVar(&req.Scale, "scale", 3, "output pixels per image pixel")
	cmd.MarkFlagsOneRequired("indices", "dfil")
	cmd.MarkFlagsMutuallyExclusive("indices", "dfil")
	return cmd
}

// plotAttackOut is the --json result of 'plot attack': the figure and exactly the
// points drawn.
type plotAttackOut struct {
	Out    string `json:"out"`
	Width  int    `json:"width"`
	Height int    `json:"height"`
	XLabel string `json:"x_label"`
	LogX   bool   `json:"log_x"`
	*figures.AttackSweep
	// Panels and Labels: with --grid, one drawn sweep per panel (the embedded sweep is
	// then absent).
	Panels []*figures.AttackSweep `json:"panels,omitempty"`
	Labels []string               `json:"labels,omitempty"`
}

func newPlotAttackCmd() *cobra.Command {
	var (
		fig          figures.Figure
		logX, linX   bool
		labels, keep []string
		grid         int
	)
	cmd := reportCmd(&cobra.Command{
		Use:   "attack SWEEP.json|SWEEP.csv... -o attack.png",
		Short: "Attack success (95 % CI) and the ReRo / RDP-ReRo bounds vs ε, K or q (Hayes et al. Fig. 2, 3, 5)",
		Long: `Hayes et al. (2023) Fig. 2, 3 and 5 from the sweep.json or sweep.csv of
'dpfil attack sweep-eps|sweep-k|sweep-q': the sweep variable on x (log10 when it
spans a factor 10 or more), the success rate of every attack variant in the file with
its 95 % Clopper–Pearson interval (variants nudged sideways so that identical results
stay visible), the ReRo bound γ (solid, with its Monte Carlo interval for q < 1), the
RDP-based ReRo bound (dashed) and the prior baseline κ = 1/K (dotted).

Several sweeps of the same variable and privacy setting (Hayes et al. Figs. 7, 9, 10,
13: one per model width, prior type, |D₋| or clipping norm) go on one figure with
--labels, one per file; --attacks keeps only the named attacks of each. With --grid N
each file gets its own panel, titled by its label, N panels per row (Fig. 14: one
panel per ε and prior size, whose bounds differ).`,
		Args: cobra.MinimumNArgs(1),
	}, func(_ *cobra.Command, args []string) (*plotAttackOut, error) {
		if err := fig.Check(); err != nil {
			return nil, err
		}
		if len(args) > 1 && len(labels) != len(args) {
			return nil, fmt.Errorf("plot attack: %d sweeps need %d --labels (got %d; labels are split at commas, so a label cannot contain one)", len(args), len(args), len(labels))
		}
		var sws []*figures.AttackSweep
		for _, a := range args {
			sw, err := readAttackSweep(a)
			if err != nil {
				return nil, err
			}
			sws = append(sws, sw)
		}
		opt := figures.AttackOptions{Title: fig.Title}
		if logX || linX {
			opt.LogX = &logX
		}
		if grid > 0 {
			if len(labels) != len(args) {
				return nil, fmt.Errorf("plot attack: --grid needs one --labels entry per sweep (%d)", len(args))
			}
			rows, drawn, err := figures.AttackPanels(sws, labels, keep, grid, opt)
			if err != nil {
				return nil, err
			}
			if err := plot.SaveTiles(rows, fig.Out, fig.Width, fig.Height); err != nil {
				return nil, err
			}
			_, logScale := rows[0][0].X.Scale.(gplot.LogScale)
			return &plotAttackOut{Out: fig.Out, Width: fig.Width, Height: fig.Height, XLabel: drawn[0].XLabel(), LogX: logScale, Panels: drawn, Labels: labels}, nil
		}
		sw := sws[0]
		if len(labels) > 0 || len(keep) > 0 {
			if len(labels) == 0 {
				labels = []string{""} // one file: the attacks' own names
			}
			m, err := figures.MergeAttackSweeps(sws, labels, keep)
			if err != nil {
				return nil, err
			}
			sw = m
		}
		p, err := figures.Attack(sw, opt)
		if err != nil {
			return nil, err
		}
		if err := plot.Save(p, fig.Out, fig.Width, fig.Height); err != nil {
			return nil, err
		}
		_, logScale := p.X.Scale.(gplot.LogScale)
		return &plotAttackOut{Out: fig.Out, Width: fig.Width, Height: fig.Height, XLabel: sw.XLabel(), LogX: logScale, AttackSweep: sw}, nil
	})
	addFigureFlags(cmd, &fig, 800, 560)
	cmd.Flags().BoolVar(&logX, "log-x", false, "log10 x axis")
	cmd.Flags().BoolVar(&linX, "linear-x", false, "linear x axis")
	cmd.Flags().StringSliceVar(&labels, "labels", nil, "one label per sweep file, prefixed to its series (needed with several files; split at commas)")
	cmd.Flags().StringSliceVar(&keep, "attacks", nil, "draw only these attacks of each sweep (e.g. prior,prior-nosub)")
	cmd.Flags().IntVar(&grid, "grid", 0, "one panel per sweep file, this many per row (0: all on one figure)")
	cmd.MarkFlagsMutuallyExclusive("log-x", "linear-x")
	return cmd
}

// readAttackSweep reads a sweep.json or sweep.csv of the attack sweeps.
func readAttackSweep(path string) (*figures.AttackSweep, error) {
	format := strings.ToLower(strings.TrimPrefix(filepath.Ext(path), "."))
	if format != "json" && format != "csv" {
		return nil, fmt.Errorf("plot attack: %s: want a sweep .json or .csv file", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("plot attack: %w", err)
	}
	defer f.Close()
	sw, err := figures.ReadAttackSweep(f, format)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return sw, nil
}

// WriteText writes what was drawn: the bounds and each attack's rate and interval
// per value.
func (r *plotAttackOut) WriteText(w io.Writer) {
	if len(r.Panels) > 0 {
		fmt.Fprintf(w, "wrote %s (%d×%d px): %d panels\n", r.Out, r.Width, r.Height, len(r.Panels))
		for i, sw := range r.Panels {
			fmt.Fprintf(w, "panel %s:\n", r.Labels[i])
			writeAttackTable(w, sw)
		}
		return
	}
	sw := r.AttackSweep
	fmt.Fprintf(w, "wrote %s (%d×%d px): %d attack variants at %d values of %s\n", r.Out, r.Width, r.Height, len(sw.Series), len(sw.Bounds), sw.XLabel())
	writeAttackTable(w, sw)
}

// writeAttackTable writes one sweep's bounds and each attack's rate and interval per
// value.
func writeAttackTable(w io.Writer, sw *figures.AttackSweep) {
	fmt.Fprintf(w, "%-8s %-8s %-8s", sw.Sweep, "gamma", "gammaRDP")
	for _, s := range sw.Series {
		fmt.Fprintf(w, " %-22s", s.Attack)
	}
	fmt.Fprintln(w)
	for _, b := range sw.Bounds {
		fmt.Fprintf(w, "%-8g %-8.4f %-8.4f", b.X, b.Gamma, b.GammaRDP)
		for _, s := range sw.Series {
			cell := "-"
			for _, q := range s.Points {
				if q.X == b.X {
					cell = fmt.Sprintf("%.3f [%.3f, %.3f]", q.Rate, q.Low, q.High)
				}
			}
			fmt.Fprintf(w, " %-22s", cell)
		}
		fmt.Fprintln(w)
	}
}

func newPlotPerturbDiagCmd() *cobra.Command {
	var req figures.PerturbDiagRequest
	cmd := reportCmd(&cobra.Command{
		Use:   "perturb-diag RUNDIR --out-dir DIR",
		Short: "Per-iteration diagnostics of the learned perturbation g_φ: norms, accuracy and dFIL, PCA and cosine panels (Edmunds Figs. A.1–A.29)",
		Long: `Edmunds (2024), Appendix A, from the files 'dpfil train --perturb-net --perturb-diag N'
writes into RUNDIR/perturb-diag. Per repeat r, into --out-dir:

  PREFIXr<r>-norms.png           mean 2-norm per iteration of the base (pruned) gradients,
                                 the perturbations g_φ and the final gradients
                                 CLIP(g + g_φ) before the noise, bars from the 10 % to the
                                 90 % quantile over the batch (Figs. A.1, A.8, A.15, A.22)
  PREFIXr<r>-accuracy-dfil.png   test accuracy and the cumulative max / mean / median
                                 dFIL per iteration (Figs. A.2, A.9, A.16, A.23)
  PREFIXr<r>-step<t>.png         PCA (first two components, each matrix its own) of the
                                 base gradients (top left), the final gradients (top
                                 right) and the perturbations (bottom left) of the N
                                 recorded batch members, and the histogram of
                                 cos(perturbation, base) over the batch (bottom right)
                                 (Figs. A.3–A.7, A.10–A.14, A.17–A.21, A.24–A.29)

The report (--json) has every iteration's numbers and, per iteration, their mean and
sample standard deviation over the repeats (the "Mean (STD)" of Table A.1).`,
		Args: cobra.ExactArgs(1),
	}, func(_ *cobra.Command, args []string) (*figures.PerturbDiagReport, error) {
		req.Dir = args[0]
		return figures.WritePerturbDiag(req)
	})
	f := cmd.Flags()
	f.StringVar(&req.OutDir, "out-dir", "", "directory for the figures")
	f.StringVar(&req.Prefix, "prefix", "perturb-diag-", "figure file name prefix")
	f.StringVar(&req.Format, "format", "png", "png, svg or pdf")
	f.IntSliceVar(&req.Repeats, "repeats", nil, "draw only these repeats (default all; the report covers all)")
	f.IntSliceVar(&req.Steps, "steps", nil, "draw the 4-panel figure only for these iterations (default all)")
	f.StringVar(&req.Title, "title", "", "prepended to every figure title, e.g. 'λ = 1e6'")
	f.IntVar(&req.Width, "width", 900, "width of the 4-panel figure in pixels (the others are 7/9 of it)")
	f.IntVar(&req.Height, "height", 800, "height of the 4-panel figure in pixels")
	markRequired(cmd, "out-dir")
	return cmd
}
