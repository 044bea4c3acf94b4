package main

import (
	"github.com/dpfil/dpfil/accounting"
	"github.com/spf13/cobra"
)

func newAccountPLDCmd() *cobra.Command {
	var (
		req    accounting.PLDRequest
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "pld",
		Short: "PLD accountant of DP-SGD → (ε, δ) with a rigorous upper and lower bound, RDP beside it",
		Long: `Composes 'steps' steps of the subsampled Gaussian mechanism (rate q, noise
multiplier sigma, sensitivity 1 per record) by their privacy-loss distributions and
converts to ε at --delta. The loss is discretised on a grid of width --interval twice:
pessimistically (connect-the-dots, Doroshenko, Ghazi, Kamath, Kumar & Manurangsi
2022; epsilon is a rigorous upper bound, the number to report) and optimistically
(epsilon_lower, a rigorous lower bound of the same dominating pairs), so
epsilon − epsilon_lower bounds the discretisation error.

--adjacency add-remove (the usual DP-SGD ε; the larger of the add and remove
directions) or replace-one. --sampling poisson (each record joins each batch with
probability q) or uniform (a fixed-size batch of qN records drawn without replacement
at every step; replace-one only). epsilon_rdp is the RDP accountant's ε for the same
run, for comparison. Pairs, discretisation and errors: docs/accounting.md.`,
		Example: `  dpfil account pld --q 0.01 --sigma 1 --steps 10000 --delta 1e-5
  dpfil account pld --q 0.004 --sigma 1.1 --steps 14062 --delta 1e-5 --adjacency replace-one --json
  dpfil account pld --q 0.01 --sigma 2 --steps 1000 --delta 1e-5 --adjacency replace-one --sampling uniform`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			res, err := accounting.AccountPLD(req)
			return emitReport(cmd, asJSON, res, err)
		},
	}
	f := cmd.Flags()
	f.Float64Var(&req.Q, "q", 0, "sampling rate in [0, 1] (required)")
	f.Float64Var(&req.Sigma, "sigma", 0, "noise multiplier > 0 (required)")
	f.IntVar(&req.Steps, "steps", 0, "number of DP-SGD steps ≥ 0 (required)")
	f.Float64Var(&req.Delta, "delta", 0, "target delta in (0, 1) (required)")
	parsedVar(f, &req.Adjacency, "adjacency", accounting.AddRemove, accounting.ParseAdjacency, "neighbouring relation: add-remove or replace-one")
	parsedVar(f, &req.Sampling, "sampling", accounting.SamplingPoisson, accounting.ParseSampling, "batch sampling: poisson or uniform (replace-one only)")
	f.Float64Var(&req.Interval, "interval", accounting.DefaultPLDInterval, "discretisation interval of the privacy loss (smaller: tighter, slower)")
	for _, n := range []string{"q", "sigma", "steps", "delta"} {
		_ = cmd.MarkFlagRequired(n)
	}
	addJSONFlag(cmd, &asJSON)
	return cmd
}
