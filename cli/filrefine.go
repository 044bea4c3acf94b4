package cli

import (
	"fmt"

	"github.com/dpfil/dpfil/train"
	"github.com/spf13/cobra"
)

// newAccountFILRefineCmd is 'dpfil account fil-refine': the two-stage worst-sample
// FIL estimate of a run (train.RefineFIL).
func newAccountFILRefineCmd() *cobra.Command {
	var (
		req   train.RefineRequest
		quiet bool
		save  bool
	)
	cmd := reportCmd(&cobra.Command{
		Use:   "fil-refine RUNDIR",
		Short: "Worst-sample dFIL without the noisy-max bias: screen (the run's dfil.npy), then the top m exact, replayed from the transcript",
		Long: `The maximum of N noisy per-sample dFIL estimates (k random input coordinates per
sample and step) is biased upward. fil-refine takes the run's dfil.npy as the screen
(it must cover every batch member at every step: fil_rate 1), recomputes the --top m
samples with the largest screen values exactly (the trace over all d input
coordinates, as --fil-exact computes it) at the parameters replayed from the run's
recorded transcripts (train with --record-transcript), and reports the largest
exact value: the exact maximum when the true argmax is among the m, lower otherwise.
With --repeats ≥ 2 (a transcript each) per-sample dFIL is the mean over repeats and
the maximum gets a percentile bootstrap interval over the repeats. The exact top-m
values are listed (--json: all of them).`,
		Example: `  dpfil train --model mnist-cnn --fil-coords 4 --repeats 3 --record-transcript --out runs/a
  dpfil account fil-refine runs/a --top 100 --json`,
		Args: cobra.ExactArgs(1),
	}, func(cmd *cobra.Command, args []string) (*train.RefineReport, error) {
		req.Run = args[0]
		if !cmd.Flags().Changed("seed") { // the run's own seed, as train --fil-refine-top uses
			res, err := train.ReadResult(req.Run)
			if err != nil {
				return nil, fmt.Errorf("fil refine: %w", err)
			}
			req.Seed = res.Config.Seed
		}
		if !quiet {
			req.Logf = func(f string, a ...any) { fmt.Fprintf(cmd.ErrOrStderr(), f+"\n", a...) }
		}
		rep, err := train.RefineRun(req)
		if err == nil && save {
			err = train.SaveRefine(req.Run, rep)
		}
		return rep, err
	})
	cmd.Flags().IntVar(&req.Top, "top", 100, "m: how many of the screen's largest samples are recomputed exactly")
	cmd.Flags().IntVar(&req.Bootstrap, "bootstrap", 2000, "bootstrap resamples over the repeats (runs with ≥ 2 repeats)")
	cmd.Flags().BoolVar(&save, "save", true, "record the estimate in RUNDIR (fil_refine.json, and result.json's fil_two_stage) so that plot pareto and sweep reports show it")
	cmd.Flags().Uint64Var(&req.Seed, "seed", 1, "seed of the bootstrap resampling (default: the run's seed)")
	addQuietFlag(cmd, &quiet)
	return cmd
}
