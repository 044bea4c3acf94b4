package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/dpfil/dpfil/plot"
	"github.com/spf13/cobra"
	gplot "gonum.org/v1/plot"
)

// isLogScale reports whether p's x axis is logarithmic.
func isLogScale(p *gplot.Plot) bool {
	_, ok := p.X.Scale.(gplot.LogScale)
	return ok
}

// plotAttackOut is the --json result of 'plot attack': the figure and exactly the
// points drawn.
type plotAttackOut struct {
	Out    string `json:"out"`
	Width  int    `json:"width"`
	Height int    `json:"height"`
	XLabel string `json:"x_label"`
	LogX   bool   `json:"log_x"`
	plot.AttackSweep
}

func newPlotAttackCmd() *cobra.Command {
	var (
		ff         figureFlags
		logX, linX bool
	)
	cmd := reportCmd(&cobra.Command{
		Use:   "attack SWEEP.json|SWEEP.csv -o attack.png",
		Short: "Attack success (95 % CI) and the ReRo / RDP-ReRo bounds vs ε, K or q (Hayes et al. Fig. 2, 3, 5)",
		Long: `Hayes et al. (2023) Fig. 2, 3 and 5 from the sweep.json or sweep.csv of
'dpfil attack sweep-eps|sweep-k|sweep-q': the sweep variable on x (log10 when it
spans a factor 10 or more; --log-x / --linear-x to force), the success rate of every
attack variant in the file with its 95 % Clopper–Pearson interval as error bars
(variants are nudged sideways a little so that identical results stay visible), the
ReRo bound γ (solid black, with its Monte Carlo interval for q < 1), the RDP-based
ReRo bound (dashed) and the prior baseline κ = 1/K (dotted). --json prints the
points drawn.`,
		Args: cobra.ExactArgs(1),
	}, func(_ *cobra.Command, args []string) (*plotAttackOut, error) {
		if err := ff.figure().Check(); err != nil {
			return nil, err
		}
		sw, err := readAttackSweep(args[0])
		if err != nil {
			return nil, err
		}
		opt := plot.AttackOptions{Title: ff.title}
		if logX || linX {
			opt.LogX = &logX
		}
		p, err := plot.Attack(sw, opt)
		if err != nil {
			return nil, err
		}
		if err := plot.Save(p, ff.out, ff.width, ff.height); err != nil {
			return nil, err
		}
		return &plotAttackOut{Out: ff.out, Width: ff.width, Height: ff.height, XLabel: sw.XLabel(), LogX: isLogScale(p), AttackSweep: *sw}, nil
	})
	ff.add(cmd, 800, 560)
	cmd.Flags().BoolVar(&logX, "log-x", false, "log10 x axis")
	cmd.Flags().BoolVar(&linX, "linear-x", false, "linear x axis")
	cmd.MarkFlagsMutuallyExclusive("log-x", "linear-x")
	return cmd
}

// readAttackSweep reads a sweep.json or sweep.csv of the attack sweeps.
func readAttackSweep(path string) (*plot.AttackSweep, error) {
	format := strings.ToLower(strings.TrimPrefix(filepath.Ext(path), "."))
	if format != "json" && format != "csv" {
		return nil, fmt.Errorf("plot attack: %s: want a sweep .json or .csv file", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("plot attack: %w", err)
	}
	defer f.Close()
	sw, err := plot.ReadAttackSweep(f, format)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return sw, nil
}

// WriteText writes what was drawn: the bounds and each attack's rate and interval
// per value.
func (r *plotAttackOut) WriteText(w io.Writer) {
	sw := r.AttackSweep
	fmt.Fprintf(w, "wrote %s (%d×%d px): %d attack variants at %d values of %s\n", r.Out, r.Width, r.Height, len(sw.Series), len(sw.Bounds), sw.XLabel())
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
