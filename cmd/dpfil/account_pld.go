package main

import (
	"github.com/dpfil/dpfil/accounting"
	"github.com/spf13/cobra"
)

func newAccountPLDCmd() *cobra.Command {
	var req accounting.PLDRequest
	cmd := reportCmd(&cobra.Command{
		Use:   "pld",
		Short: "PLD accountant of DP-SGD → (ε, δ) with a rigorous upper and lower bound, RDP beside it",
		Long: `Composes --steps steps of the subsampled Gaussian mechanism (rate q, noise
multiplier σ, sensitivity 1 per record) by their privacy-loss distributions and
converts to ε at --delta. The loss is discretised on a grid of width --interval twice:
pessimistically (connect-the-dots, Doroshenko, Ghazi, Kamath, Kumar & Manurangsi
2022; epsilon is a rigorous upper bound, the number to report) and optimistically
(epsilon_lower, a rigorous lower bound of the same dominating pairs), so
epsilon − epsilon_lower bounds the discretisation error. Under add-remove adjacency ε
is the larger of the add and remove directions. epsilon_rdp is the RDP accountant's
ε for the same run, for comparison. Pairs, discretisation and errors:
docs/accounting.md.`,
		Example: `  dpfil account pld --q 0.01 --sigma 1 --steps 10000 --delta 1e-5
  dpfil account pld --q 0.004 --sigma 1.1 --steps 14062 --delta 1e-5 --adjacency replace-one --json
  dpfil account pld --q 0.01 --sigma 2 --steps 1000 --delta 1e-5 --adjacency replace-one --sampling uniform`,
		Args: cobra.NoArgs,
	}, func(*cobra.Command, []string) (*accounting.PLDReport, error) { return accounting.AccountPLD(req) })
	f := cmd.Flags()
	bindRunFlags(f, &req.Q, &req.Sigma, &req.Steps, &req.Delta)
	bindNeighbourFlags(f, &req.Adjacency, &req.Sampling)
	f.Float64Var(&req.Interval, "interval", accounting.DefaultPLDInterval, "discretisation interval of the privacy loss (smaller: tighter, slower)")
	markRequired(cmd, "q", "sigma", "steps", "delta")
	return cmd
}
