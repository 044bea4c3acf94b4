package main

import (
	"fmt"
	"io"

	"github.com/dpfil/dpfil/train"
	"github.com/spf13/cobra"
)

// demoReading is the one-sentence guide to the demo's bounds.
const demoReading = "How to read the bounds: no unbiased reconstruction attack can recover a training image " +
	"with a per-pixel mean squared error below them (pixels in [0,1]; MSE = 1 is the largest per-pixel error possible on [0,1] images, " +
	"so a bound ≥ 1 means perfect privacy); the RDP bound (Guo et al. 2022, Theorem 1, from the order-2 RDP under replace-one adjacency) holds for every sample, the FIL bounds for the " +
	"worst-leaking (max dFIL) and the typical (median dFIL) training sample."

// demoGlossary explains, one line per concept, the words the summary uses.
const demoGlossary = `
What the words mean:
  ε, δ        the run is (ε, δ)-differentially private: smaller ε is more private; δ = 1e-5 is the
              chance the guarantee fails. "pld"/"rdp" name the accountant that computed ε; "add-remove"
              means it protects against adding or removing one training image; "poisson" how batches are drawn.
  ε₂          the Rényi-DP of order 2 between two trainings that differ in one image (replace-one);
              Theorem 1 of Guo et al. (2022) turns it into the RDP MSE bound.
  κ (kappa)   the weight of a step in which a sample was in the batch, after the privacy gained by
              sampling batches at random (≤ 1).
  dFIL        a sample's Fisher information leakage per pixel, summed over training; its MSE bound is 1/dFIL.
  MSE bound   a lower bound on the per-pixel mean squared error of any unbiased reconstruction of a
              training image (pixels in [0,1]): ≥ 1 is perfect privacy, +Inf means no leakage was measured.
  Read more:  docs/accounting.md (every bound, its assumptions and its source).
`

// demoConfig is the demo's run: mnist-cnn on the embedded MNIST, privately, with
// smooth clipping and FIL from k = 8 coordinates on a random 10 % of the batch
// members (weighted ×4, unbiased), so that it takes a few minutes on 2 cores.
func demoConfig() train.Config {
	c := train.DefaultConfig()
	c.Model, c.Dataset = "mnist-cnn", "mnist-embedded"
	c.Steps, c.Batch, c.LR, c.Momentum = 200, 600, 0.1, 0.5
	c.Sigma, c.Clip, c.ClipMode = 1, 8, train.ClipModeSmooth
	c.FILCoords, c.FILRate = 8, 0.25
	c.EvalEvery = 50
	return c
}

// demoOutput is the --json output of the demo.
type demoOutput struct {
	Result  *train.Result `json:"result"`
	Reading string        `json:"reading"`
}

func newDemoCmd() *cobra.Command {
	cfg := demoConfig()
	var (
		asJSON, quiet bool
		out           string
	)
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "The main job on the embedded MNIST, offline, in a few minutes",
		Long: `Train mnist-cnn privately on the embedded MNIST (8 000 training digits compiled into
the binary; no network) with DP-SGD, smooth clipping and both accountants, then print
the test accuracy, ε, the RDP MSE bound and the FIL MSE bounds of the worst and the
median training sample.

Settings: σ = 1, C = 8, lr 0.1, batch 600, momentum 0.5 (values of Table 3 of Guo,
Karrer, Chaudhuri and van der Maaten (2022), "Bounding training data reconstruction
in private (deep) learning"),
200 steps, FIL from k = 8 random pixel coordinates for a random 25 % of the batch
members at each step (weighted ×4, an unbiased estimate; use 'dpfil train' with
--fil-coords 50 --fil-rate 1 for the paper's estimator).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := cfg.Validate(); err != nil {
				return err
			}
			res, err := runTraining(cmd, cfg, out, false, 0, quiet, false)
			if err != nil {
				return err
			}
			return emit(cmd.OutOrStdout(), asJSON, demoOutput{Result: res, Reading: demoReading}, func(w io.Writer) {
				fmt.Fprintf(w, "dpfil demo: %s trained privately on %s\n\n", cfg.Model, res.Dataset.Name)
				printResult(w, res, out)
				fmt.Fprintf(w, "\nMSE lower bounds: RDP %.4g, FIL worst sample %.4g, FIL median sample %.4g\n",
					res.MSEBoundRDP, res.MSEBoundFILMax, res.MSEBoundFILMedian)
				fmt.Fprintln(w, demoReading)
				fmt.Fprint(w, demoGlossary)
			})
		},
	}
	cmd.Flags().IntVar(&cfg.Steps, "steps", cfg.Steps, "number of DP-SGD steps")
	cmd.Flags().IntVar(&cfg.FILCoords, "fil-coords", cfg.FILCoords, "FIL coordinates k per sample and step")
	cmd.Flags().Float64Var(&cfg.FILRate, "fil-rate", cfg.FILRate, "fraction of batch members whose FIL is computed at each step")
	addSeedFlag(cmd, &cfg.Seed)
	cmd.Flags().StringVar(&out, "out", "", "write result.json, dfil.npy and params here (default: write nothing)")
	addQuietFlag(cmd, &quiet)
	addJSONFlag(cmd, &asJSON)
	return cmd
}
