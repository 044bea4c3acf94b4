package main

import (
	"fmt"

	"github.com/dpfil/dpfil/accounting"
	"github.com/dpfil/dpfil/train"
	"github.com/spf13/cobra"
)

// dpsgdFlags are the flags of 'account dpsgd' beside the request they fill.
type dpsgdFlags struct {
	req               accounting.DPSGDRequest
	target            float64
	adjacency, clipMd string
}

func newAccountDPSGDCmd() *cobra.Command {
	var fl dpsgdFlags
	cmd := reportCmd(&cobra.Command{
		Use:   "dpsgd",
		Short: "Every privacy number of a DP-SGD run, exactly as 'train' reports it",
		Long: `Accounts a DP-SGD run of --steps steps with batches of --batch out of --n records,
noise multiplier --sigma and the clip constant c of --clip-mode (the accountants take
σ/c), and prints the same privacy report 'train' writes into result.json: ε at
--delta from the PLD and RDP accountants (the reported one is the tighter valid
bound, or --accountant), the adjacency and sampling it holds for, the Poisson
approximation for shuffled batches, Theorem 1's ε₂ (Guo, Karrer, Chaudhuri & van der
Maaten 2022) under replace-one adjacency with its MSE bound (and the paper's
add-remove value, labelled), κ, and the privacy events. With --target-epsilon
instead of --sigma it solves for σ.`,
		Example: `  dpfil account dpsgd --n 60000 --batch 600 --steps 1000 --sigma 1 --delta 1e-5
  dpfil account dpsgd --n 60000 --batch 600 --steps 1000 --target-epsilon 2 --sampling uniform --json`,
		Args: cobra.NoArgs,
	}, fl.run)
	f := cmd.Flags()
	f.IntVar(&fl.req.N, "n", 0, "number of training records N")
	f.IntVar(&fl.req.Batch, "batch", 0, "batch size B (expected size for Poisson)")
	f.IntVar(&fl.req.Steps, "steps", 0, "number of DP-SGD steps T")
	f.Float64Var(&fl.req.Sigma, "sigma", 0, "noise multiplier σ (noise N(0, σ²C²I))")
	f.Float64Var(&fl.target, "target-epsilon", 0, "solve for the smallest σ reaching this ε at --delta")
	f.Float64Var(&fl.req.Delta, "delta", 1e-5, "δ at which ε is reported")
	f.Float64Var(&fl.req.FILDelta, "fil-delta", 0, "κ's failure probability δ_f (0 = 1/(T·N), as train)")
	parsedVar(f, &fl.req.Sampling, "sampling", accounting.SamplingPoisson, accounting.ParseSampling, "poisson, uniform or shuffle")
	f.StringVar(&fl.clipMd, "clip-mode", train.ClipModeSmooth, "smooth (c ≈ 1.115) or hard (c = 1)")
	f.StringVar(&fl.req.Accountant, "accountant", accounting.AccountantAuto, "auto (tighter of pld and rdp), pld or rdp")
	f.StringVar(&fl.adjacency, "adjacency", "", "add-remove or replace-one (default: add-remove, replace-one for uniform)")
	markRequired(cmd, "n")
	cmd.MarkFlagsRequiredTogether("n", "batch", "steps")
	cmd.MarkFlagsOneRequired("sigma", "target-epsilon")
	cmd.MarkFlagsMutuallyExclusive("sigma", "target-epsilon")
	return cmd
}

func (fl *dpsgdFlags) run(cmd *cobra.Command, _ []string) (*accounting.DPSGDReport, error) {
	req := fl.req
	var err error
	if req.ClipConstant, err = clipConstant(fl.clipMd); err != nil {
		return nil, err
	}
	req.ClipMode = fl.clipMd
	if fl.adjacency != "" {
		a, err := accounting.ParseAdjacency(fl.adjacency)
		if err != nil {
			return nil, fmt.Errorf("--adjacency: %w", err)
		}
		req.Adjacency = &a
	}
	req.TargetEpsilon = changed(cmd, "target-epsilon", &fl.target)
	return accounting.AccountDPSGD(req)
}
