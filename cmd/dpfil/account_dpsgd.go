package main

import (
	"fmt"
	"io"
	"math"

	"github.com/dpfil/dpfil/accounting"
	"github.com/dpfil/dpfil/train"
	"github.com/spf13/cobra"
)

// accountDPSGDFlags are the flags of 'account dpsgd' (a DP-SGD run as train sees it).
type accountDPSGDFlags struct {
	n, batch, steps          int
	sigma, target, delta     float64
	filDelta                 float64
	sampling, clipMode, acct string
	adjacency                string
	asJSON                   bool
}

// accountDPSGDResult is the JSON of 'account dpsgd'.
type accountDPSGDResult struct {
	N               int     `json:"n"`
	Batch           int     `json:"batch"`
	Steps           int     `json:"steps"`
	Sigma           float64 `json:"sigma"`
	ClipMode        string  `json:"clip_mode"`
	ClipConstant    float64 `json:"clip_constant"`
	NoiseMultiplier float64 `json:"noise_multiplier"` // σ/c, what the accountants take
	// TargetEpsilon is set when sigma was solved for.
	TargetEpsilon *float64           `json:"target_epsilon,omitempty"`
	Privacy       *accounting.Report `json:"privacy"`
}

func newAccountDPSGDCmd() *cobra.Command {
	var f accountDPSGDFlags
	cmd := &cobra.Command{
		Use:   "dpsgd",
		Short: "Every privacy number of a DP-SGD run, exactly as 'train' reports it",
		Long: `Accounts a DP-SGD run of --steps steps with batches of --batch out of --n records,
noise multiplier --sigma and the clip constant c of --clip-mode (the accountants take
σ/c), and prints the same privacy report 'train' writes into result.json: ε at
--delta from the PLD and RDP accountants (the reported one is the tighter valid
bound, or --accountant), the adjacency and sampling it holds for, the Poisson
approximation for shuffled batches, Guo et al.'s Theorem 1 ε₂ under replace-one
adjacency with its MSE bound (and the paper's add-remove value, labelled), κ, and
the privacy events. With --target-epsilon instead of --sigma it solves for σ.`,
		Example: `  dpfil account dpsgd --n 60000 --batch 600 --steps 1000 --sigma 1 --delta 1e-5
  dpfil account dpsgd --n 60000 --batch 600 --steps 1000 --target-epsilon 2 --sampling uniform --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runAccountDPSGD(cmd, &f) },
	}
	fl := cmd.Flags()
	fl.IntVar(&f.n, "n", 0, "number of training records N")
	fl.IntVar(&f.batch, "batch", 0, "batch size B (expected size for Poisson)")
	fl.IntVar(&f.steps, "steps", 0, "number of DP-SGD steps T")
	fl.Float64Var(&f.sigma, "sigma", 0, "noise multiplier σ (noise N(0, σ²C²I))")
	fl.Float64Var(&f.target, "target-epsilon", 0, "solve for the smallest σ reaching this ε at --delta")
	fl.Float64Var(&f.delta, "delta", 1e-5, "δ at which ε is reported")
	fl.Float64Var(&f.filDelta, "fil-delta", 0, "κ's failure probability δ_f (0 = 1/(T·N), as train)")
	fl.StringVar(&f.sampling, "sampling", train.SamplingPoisson, "poisson, uniform or shuffle")
	fl.StringVar(&f.clipMode, "clip-mode", train.ClipModeSmooth, "smooth (c ≈ 1.115) or hard (c = 1)")
	fl.StringVar(&f.acct, "accountant", accounting.AccountantAuto, "auto (tighter of pld and rdp), pld or rdp")
	fl.StringVar(&f.adjacency, "adjacency", "", "add-remove or replace-one (default: add-remove, replace-one for uniform)")
	cmd.MarkFlagsRequiredTogether("n", "batch", "steps")
	cmd.MarkFlagsOneRequired("sigma", "target-epsilon")
	cmd.MarkFlagsMutuallyExclusive("sigma", "target-epsilon")
	_ = cmd.MarkFlagRequired("n")
	addJSONFlag(cmd, &f.asJSON)
	return cmd
}

func runAccountDPSGD(cmd *cobra.Command, f *accountDPSGDFlags) error {
	for _, v := range []struct {
		name string
		x    float64
	}{{"sigma", f.sigma}, {"target-epsilon", f.target}, {"delta", f.delta}, {"fil-delta", f.filDelta}} {
		if err := acctCheckFinite(v.name, v.x); err != nil {
			return err
		}
	}
	sm, err := accounting.ParseSampling(f.sampling)
	if err != nil {
		return fmt.Errorf("--sampling: %w", err)
	}
	c, err := train.ClipConstant(f.clipMode)
	if err != nil {
		return fmt.Errorf("--clip-mode: %w", err)
	}
	opt := accounting.ReportOptions{Delta: f.delta, Accountant: f.acct, FILDelta: f.filDelta, ClipConstant: c}
	if f.adjacency != "" {
		a, err := accounting.ParseAdjacency(f.adjacency)
		if err != nil {
			return fmt.Errorf("--adjacency: %w", err)
		}
		opt.Adjacency = &a
	}
	if opt.FILDelta == 0 && f.n > 0 && f.steps > 0 {
		opt.FILDelta = accounting.DefaultFILDelta(f.steps, f.n)
	}
	d := accounting.DPSGD{Sampling: sm, N: f.n, Batch: f.batch, Steps: f.steps, NoiseMultiplier: f.sigma / c}
	res := accountDPSGDResult{N: f.n, Batch: f.batch, Steps: f.steps, ClipMode: f.clipMode, ClipConstant: c}
	if cmd.Flags().Changed("target-epsilon") {
		nm, err := accounting.CalibrateNoise(d, opt, f.target)
		if err != nil {
			return fmt.Errorf("solve for sigma: %w", err)
		}
		d.NoiseMultiplier, f.sigma = nm, nm*c
		res.TargetEpsilon = &f.target
	}
	res.Sigma, res.NoiseMultiplier = f.sigma, d.NoiseMultiplier
	l, err := d.Ledger()
	if err != nil {
		return err
	}
	if res.Privacy, err = accounting.NewReport(l, opt); err != nil {
		return err
	}
	return emit(cmd.OutOrStdout(), f.asJSON, res, func(w io.Writer) {
		if res.TargetEpsilon != nil {
			fmt.Fprintf(w, "noise multiplier σ = %.6g (σ/c = %.6g) reaches ε ≤ %g\n", res.Sigma, res.NoiseMultiplier, f.target)
		}
		fmt.Fprintf(w, "N = %d, B = %d (q = %.4g), T = %d, σ = %.6g, %s clipping (c = %.4f)\n", f.n, f.batch, d.Q(), f.steps, res.Sigma, f.clipMode, c)
		printPrivacy(w, res.Privacy)
		if p := res.Privacy; p.Kappa != nil {
			fmt.Fprintf(w, "FIL factor         κ = %.6g (ε₀ = %.4g at δ_f = %.3g)", *p.Kappa, *p.KappaEpsilon0, opt.FILDelta)
			if p.KappaPoissonApprox != nil && !math.IsNaN(*p.KappaPoissonApprox) {
				fmt.Fprintf(w, "; Poisson approximation κ = %.6g", *p.KappaPoissonApprox)
			}
			fmt.Fprintln(w)
		}
	})
}
