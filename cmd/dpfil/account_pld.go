package main

import (
	"fmt"
	"io"

	"github.com/dpfil/dpfil/accounting"
	"github.com/spf13/cobra"
)

// accountPLDResult is the JSON of 'account pld'.
type accountPLDResult struct {
	Accountant string  `json:"accountant"` // "pld"
	Q          float64 `json:"q"`
	Sigma      float64 `json:"sigma"`
	Steps      int     `json:"steps"`
	Delta      float64 `json:"delta"`
	Adjacency  string  `json:"adjacency"`
	Sampling   string  `json:"sampling"`
	// Interval is the discretisation interval h of the privacy loss, TailMass the
	// mass truncated per discretisation and composition.
	Interval float64 `json:"interval"`
	TailMass float64 `json:"tail_mass"`
	// Epsilon is the rigorous upper bound (pessimistic discretisation): the number to
	// report. EpsilonLower is a rigorous lower bound on the ε of the same dominating
	// pairs (optimistic discretisation); their difference bounds the discretisation
	// error.
	Epsilon             float64 `json:"epsilon"`
	EpsilonLower        float64 `json:"epsilon_lower"`
	DiscretisationError float64 `json:"discretisation_error"`
	// EpsilonRDP is the RDP accountant's ε for the same run, for comparison (absent
	// where RDP has no ε bound, with RDPNote saying why).
	EpsilonRDP *float64 `json:"epsilon_rdp,omitempty"`
	RDPOrder   *float64 `json:"rdp_order,omitempty"`
	RDPNote    string   `json:"rdp_note,omitempty"`
}

func newAccountPLDCmd() *cobra.Command {
	var (
		q, sigma, delta, interval float64
		steps                     int
		adjS, sampS               string
		asJSON                    bool
	)
	cmd := &cobra.Command{
		Use:   "pld",
		Short: "PLD accountant of DP-SGD → (ε, δ) with a rigorous upper and lower bound, RDP beside it",
		Long: `Composes 'steps' steps of the subsampled Gaussian mechanism (rate q, noise
multiplier sigma, sensitivity 1 per record) by their privacy-loss distributions and
converts to ε at --delta. The loss is discretised on a grid of width --interval twice:
pessimistically (connect-the-dots; epsilon is a rigorous upper bound, the number to
report) and optimistically (epsilon_lower, a rigorous lower bound of the same
dominating pairs), so epsilon − epsilon_lower bounds the discretisation error.

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
			if err := acctRequireFlags(cmd, "q", "sigma", "steps", "delta"); err != nil {
				return err
			}
			if err := acctCheckFiniteAll([]string{"q", "sigma", "delta", "interval"}, q, sigma, delta, interval); err != nil {
				return err
			}
			if steps < 0 {
				return fmt.Errorf("--steps = %d must be ≥ 0", steps)
			}
			if interval <= 0 {
				return fmt.Errorf("--interval = %v must be > 0", interval)
			}
			adj, err := accounting.ParseAdjacency(adjS)
			if err != nil {
				return fmt.Errorf("--adjacency: %w", err)
			}
			samp, err := accounting.ParseSampling(sampS)
			if err != nil {
				return fmt.Errorf("--sampling: %w", err)
			}
			var ev accounting.Event
			switch samp {
			case accounting.SamplingPoisson:
				ev = accounting.PoissonSampledEvent{Q: q, Event: accounting.GaussianEvent{NoiseMultiplier: sigma}}
			case accounting.SamplingUniform:
				if adj == accounting.AddRemove {
					return fmt.Errorf("--sampling uniform needs --adjacency replace-one (fixed-size batches are not defined under add/remove: the dataset size changes)")
				}
				ev = accounting.SampledWithoutReplacementEvent{Q: q, Event: accounting.GaussianEvent{NoiseMultiplier: sigma}}
			default:
				return fmt.Errorf("--sampling %s has no subsampled PLD; use poisson or uniform ('account dpsgd' accounts shuffled epochs)", samp)
			}
			cfg := &accounting.PLDConfig{Interval: interval}
			e, err := accounting.PLDEpsilon(adj, samp, q, sigma, steps, delta, cfg)
			if err != nil {
				return fmt.Errorf("PLD accountant: %w", err)
			}
			res := accountPLDResult{Accountant: "pld", Q: q, Sigma: sigma, Steps: steps, Delta: delta,
				Adjacency: adj.String(), Sampling: samp.String(), Interval: interval,
				TailMass: accounting.DefaultPLDTailMass, Epsilon: e.Upper, EpsilonLower: e.Lower,
				DiscretisationError: e.Upper - e.Lower}
			// RDP beside it, same adjacency and sampling.
			ra := accounting.NewRDPAccountant(adj, accounting.ShuffleRigorous, nil)
			if err := ra.Compose(accounting.SelfComposedEvent{Event: ev, Count: steps}); err != nil {
				return fmt.Errorf("RDP accountant: %w", err)
			}
			if re, order, err := ra.Epsilon(delta); err != nil {
				res.RDPNote = err.Error()
			} else {
				res.EpsilonRDP, res.RDPOrder = &re, &order
			}
			return emit(cmd.OutOrStdout(), asJSON, res, func(w io.Writer) {
				fmt.Fprintf(w, "q = %g, sigma = %g, steps = %d, %s, %s sampling\n", q, sigma, steps, res.Adjacency, res.Sampling)
				fmt.Fprintf(w, "PLD: (%.4g, %g)-DP (rigorous upper bound); %.4g ≤ ε of the dominating pairs (discretisation error ≤ %.2g, interval %g)\n",
					res.Epsilon, delta, res.EpsilonLower, res.DiscretisationError, interval)
				if res.EpsilonRDP != nil {
					fmt.Fprintf(w, "RDP accountant, for comparison: (%.4g, %g)-DP (order %g)\n", *res.EpsilonRDP, delta, *res.RDPOrder)
				} else {
					fmt.Fprintf(w, "RDP accountant, for comparison: none (%s)\n", res.RDPNote)
				}
			})
		},
	}
	f := cmd.Flags()
	f.Float64Var(&q, "q", 0, "sampling rate in [0, 1] (required)")
	f.Float64Var(&sigma, "sigma", 0, "noise multiplier > 0 (required)")
	f.IntVar(&steps, "steps", 0, "number of DP-SGD steps ≥ 0 (required)")
	f.Float64Var(&delta, "delta", 0, "target delta in (0, 1) (required)")
	f.StringVar(&adjS, "adjacency", "add-remove", "neighbouring relation: add-remove or replace-one")
	f.StringVar(&sampS, "sampling", "poisson", "batch sampling: poisson or uniform (replace-one only)")
	f.Float64Var(&interval, "interval", accounting.DefaultPLDInterval, "discretisation interval of the privacy loss (smaller: tighter, slower)")
	addJSONFlag(cmd, &asJSON)
	return cmd
}
