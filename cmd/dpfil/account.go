package main

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/dpfil/dpfil/accounting"
	"github.com/dpfil/dpfil/train"
	"github.com/spf13/cobra"
)

// newAccountCmd is the 'account' command group: RDP, ReRo, FIL summaries and κ.
func newAccountCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "account",
		Short: "Privacy accountants: RDP, FIL, ReRo and MSE bounds",
		Long: `Privacy accountants for DP-SGD (formulas and stated errors: docs/accounting.md).

  rdp    Rényi DP of the sampled Gaussian mechanism → (ε, δ), the order-2 RDP and the
         Theorem 1 MSE bound; or the noise multiplier reaching a target ε.
  rero   ReRo bound on reconstruction success (Hayes et al.): Monte Carlo blow-up
         with a confidence interval, the q = 1 closed form, the RDP-based bound.
  fil    summary of per-sample dFIL files (.npy): max, median, quantiles, MSE bounds.
  kappa  the FIL subsampling factor κ (Guo et al. Theorem 4).
  mse    MSE lower bounds from an order-2 RDP (Theorem 1), a dFIL (Theorem 2) and a
         prior's Fisher information (van Trees).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmd.Help()
		},
	}
	cmd.AddCommand(newAccountRDPCmd(), newAccountPLDCmd(), newAccountDPSGDCmd(), newAccountReRoCmd(), newAccountFILCmd(), newAccountKappaCmd(), newAccountMSECmd())
	return cmd
}

// acctParseOrders parses a comma-separated list of Rényi orders (empty → defaults).
func acctParseOrders(s string) ([]float64, error) {
	if strings.TrimSpace(s) == "" {
		return accounting.DefaultOrders(), nil
	}
	var out []float64
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return nil, fmt.Errorf("--orders: %q is not a number", f)
		}
		if math.IsNaN(v) || math.IsInf(v, 0) || v <= 1 {
			return nil, fmt.Errorf("--orders: order %v must be finite and > 1", v)
		}
		out = append(out, v)
	}
	sort.Float64s(out)
	return out, nil
}

// acctRequireFlags returns an error naming the first of the given flags not set.
func acctRequireFlags(cmd *cobra.Command, names ...string) error {
	for _, n := range names {
		if !cmd.Flags().Changed(n) {
			return fmt.Errorf("missing required flag --%s", n)
		}
	}
	return nil
}

// acctCheckFinite rejects NaN and ±Inf flag values.
func acctCheckFinite(name string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Errorf("--%s = %v must be finite", name, v)
	}
	return nil
}

// acctCheckFiniteAll checks the named values in the given order (a deterministic
// first error, unlike iterating over a map).
func acctCheckFiniteAll(names []string, vals ...float64) error {
	for i, v := range vals {
		if err := acctCheckFinite(names[i], v); err != nil {
			return err
		}
	}
	return nil
}

// acctParseSchedule parses "q:sigma:steps,q:sigma:steps,…".
func acctParseSchedule(s string) ([]accounting.Step, error) {
	var out []accounting.Step
	for _, seg := range strings.Split(s, ",") {
		p := strings.Split(strings.TrimSpace(seg), ":")
		if len(p) != 3 {
			return nil, fmt.Errorf("--schedule: segment %q is not q:sigma:steps", seg)
		}
		q, err1 := strconv.ParseFloat(p[0], 64)
		sg, err2 := strconv.ParseFloat(p[1], 64)
		n, err3 := strconv.Atoi(p[2])
		if err1 != nil || err2 != nil || err3 != nil {
			return nil, fmt.Errorf("--schedule: segment %q is not q:sigma:steps (numbers)", seg)
		}
		if math.IsNaN(q) || math.IsInf(q, 0) || math.IsNaN(sg) || math.IsInf(sg, 0) {
			return nil, fmt.Errorf("--schedule: segment %q has a non-finite value", seg)
		}
		out = append(out, accounting.Step{Q: q, Sigma: sg, Steps: n})
	}
	return out, nil
}

// accountRDPResult is the JSON of 'account rdp' (q and sigma absent with --schedule).
type accountRDPResult struct {
	Q               *float64          `json:"q,omitempty"`
	Sigma           *float64          `json:"sigma,omitempty"`
	Schedule        []accounting.Step `json:"schedule,omitempty"`
	Steps           int               `json:"steps"`
	Delta           float64           `json:"delta"`
	Accountant      string            `json:"accountant"` // rdp
	Adjacency       string            `json:"adjacency"`
	Sampling        string            `json:"sampling"`
	ClipMode        string            `json:"clip_mode"`
	ClipConstant    float64           `json:"clip_constant"`
	NoiseMultiplier *float64          `json:"noise_multiplier,omitempty"` // σ/c, what the accountant takes
	Conversion      string            `json:"conversion"`
	Epsilon         float64           `json:"epsilon"`
	Order           float64           `json:"order"`
	// RDPOrder2 is the order-2 RDP of the run under Adjacency.
	RDPOrder2 float64 `json:"rdp_order2"`
	// MSEBoundRDP (Theorem 1) uses Theorem1.RDPOrder2, the replace-one value; null
	// when it is 0 (no leakage: the bound is +∞).
	MSEBoundRDP *float64                  `json:"mse_bound_rdp"`
	Theorem1    accounting.Theorem1Report `json:"theorem1"`
	// TargetEpsilon is set when sigma was solved for.
	TargetEpsilon *float64 `json:"target_epsilon,omitempty"`
}

// acctRDPSetting is the adjacency, sampling and clipping of 'account rdp'.
type acctRDPSetting struct {
	adj  accounting.Adjacency
	samp accounting.Sampling
	mode string
	c    float64
}

func parseRDPSetting(adjS, sampS, mode string) (acctRDPSetting, error) {
	var st acctRDPSetting
	var err error
	if st.adj, err = accounting.ParseAdjacency(adjS); err != nil {
		return st, fmt.Errorf("--adjacency: %w", err)
	}
	if st.samp, err = accounting.ParseSampling(sampS); err != nil {
		return st, fmt.Errorf("--sampling: %w", err)
	}
	if st.samp == accounting.SamplingShuffle {
		return st, fmt.Errorf("--sampling shuffle has no per-step RDP; use 'account dpsgd --sampling shuffle' (per-epoch accounting)")
	}
	if st.c, err = train.ClipConstant(mode); err != nil {
		return st, fmt.Errorf("--clip-mode: %w", err)
	}
	st.mode = mode
	return st, nil
}

// event is the privacy event of n steps at (q, σ/c).
func (st acctRDPSetting) event(q, nm float64, n int) accounting.Event {
	g := accounting.GaussianEvent{NoiseMultiplier: nm}
	var e accounting.Event = accounting.PoissonSampledEvent{Q: q, Event: g}
	if st.samp == accounting.SamplingUniform {
		e = accounting.SampledWithoutReplacementEvent{Q: q, Event: g}
	}
	return accounting.SelfComposedEvent{Event: e, Count: n}
}

// account composes ev into res: ε, rdp_order2 and Theorem 1.
func (st acctRDPSetting) account(res *accountRDPResult, ev accounting.Event, orders []float64, conv accounting.Conversion) error {
	a := accounting.NewRDPAccountant(st.adj, accounting.ShuffleRigorous, orders)
	a.Conversion = conv
	if err := a.Compose(ev); err != nil {
		return fmt.Errorf("RDP accountant: %w", err)
	}
	var err error
	if res.Epsilon, res.Order, err = a.Epsilon(res.Delta); err != nil {
		return fmt.Errorf("RDP accountant: %w", err)
	}
	res.RDPOrder2 = a.Order2()
	t1 := accounting.NewRDPAccountant(accounting.ReplaceOne, accounting.ShuffleRigorous, orders)
	if err := t1.Compose(ev); err != nil {
		return fmt.Errorf("Theorem 1: %w", err)
	}
	paper := accounting.NewRDPAccountant(accounting.AddRemove, accounting.ShuffleRigorous, orders)
	if err := paper.Compose(accounting.AsPoisson(ev)); err != nil {
		return fmt.Errorf("Theorem 1: %w", err)
	}
	res.Theorem1 = accounting.Theorem1Report{Adjacency: accounting.ReplaceOne.String(),
		RDPOrder2: t1.Order2(), MSEBoundRDP: accounting.MSEBoundRDP(t1.Order2()),
		PaperRDPOrder2: paper.Order2(), PaperMSEBoundRDP: accounting.MSEBoundRDP(paper.Order2())}
	if mse := res.Theorem1.MSEBoundRDP; !math.IsInf(mse, 1) {
		res.MSEBoundRDP = &mse
	}
	res.Accountant, res.Adjacency, res.Sampling = accounting.AccountantRDP, st.adj.String(), st.samp.String()
	res.ClipMode, res.ClipConstant, res.Conversion = st.mode, st.c, conv.String()
	return nil
}

// printRDP is the human summary of 'account rdp'.
func printRDP(w io.Writer, res accountRDPResult, head string) {
	fmt.Fprintf(w, "%s: (%.4g, %g)-DP (RDP, %s adjacency, %s sampling, %s conversion, order %g)\n",
		head, res.Epsilon, res.Delta, res.Adjacency, res.Sampling, res.Conversion, res.Order)
	fmt.Fprintf(w, "order-2 RDP of the run (%s): %.6g\n", res.Adjacency, res.RDPOrder2)
	t := res.Theorem1
	fmt.Fprintf(w, "Theorem 1 MSE lower bound on [0,1]^d (unbiased attacker): %.6g (ε₂ = %.6g, replace-one)\n", t.MSEBoundRDP, t.RDPOrder2)
	fmt.Fprintf(w, "  the paper's add-remove ε₂ = %.6g would give %.6g (not a valid bound)\n", t.PaperRDPOrder2, t.PaperMSEBoundRDP)
}

func newAccountRDPCmd() *cobra.Command {
	var (
		q, sigma, delta, target float64
		steps                   int
		ordersS, convS, sched   string
		adjS, sampS, clipMode   string
		asJSON                  bool
	)
	cmd := &cobra.Command{
		Use:   "rdp",
		Short: "RDP of DP-SGD (sampled Gaussian) → (ε, δ), order-2 RDP and the Theorem 1 MSE bound",
		Long: `Composes 'steps' steps of the sampled Gaussian mechanism (rate q, noise multiplier
sigma) in Rényi DP and converts to (ε, δ)-DP, minimising over the orders (improved
conversion by default). --adjacency add-remove (default, the usual DP-SGD ε) or
replace-one; --sampling poisson (default) or uniform (fixed-size batches without
replacement, replace-one only); --clip-mode smooth divides sigma by the smooth
clipping constant c ≈ 1.115 as 'train' does (hard: c = 1, the plain noise
multiplier). rdp_order2 is the order-2 RDP under the adjacency; mse_bound_rdp =
1/(4(e^ε₂ − 1)) is Theorem 1's MSE lower bound on [0,1]^d with the replace-one ε₂
its proof needs (theorem1; the paper's add-remove value is shown beside it).
With --target-epsilon instead of --sigma it solves for the smallest sigma reaching
that ε (bisection to 1e-6 relative). --schedule composes a heterogeneous run
(segments q:sigma:steps) instead of --q/--sigma/--steps. The PLD accountant
('account pld') is tighter; 'account dpsgd' reports both as 'train' does.`,
		Example: `  dpfil account rdp --q 0.004267 --sigma 1.1 --steps 14062 --delta 1e-5
  dpfil account rdp --q 0.01 --steps 1000 --delta 1e-5 --target-epsilon 2 --json
  dpfil account rdp --q 0.01 --sigma 1 --steps 1000 --delta 1e-5 --clip-mode smooth --sampling uniform --adjacency replace-one
  dpfil account rdp --schedule 0.01:2:500,0.01:1.5:500,0.02:1:1000 --delta 1e-5`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := parseRDPSetting(adjS, sampS, clipMode)
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("schedule") {
				return runRDPSchedule(cmd, st, sched, delta, ordersS, convS, asJSON)
			}
			if err := acctRequireFlags(cmd, "q", "steps", "delta"); err != nil {
				return err
			}
			for _, v := range []struct {
				name string
				x    float64
			}{{"q", q}, {"sigma", sigma}, {"delta", delta}, {"target-epsilon", target}} {
				if err := acctCheckFinite(v.name, v.x); err != nil {
					return err
				}
			}
			if steps < 0 {
				return fmt.Errorf("--steps = %d must be ≥ 0", steps)
			}
			orders, err := acctParseOrders(ordersS)
			if err != nil {
				return err
			}
			conv, err := accounting.ParseConversion(convS)
			if err != nil {
				return fmt.Errorf("--conversion: %w", err)
			}
			res := accountRDPResult{Q: &q, Steps: steps, Delta: delta}
			hasTarget := cmd.Flags().Changed("target-epsilon")
			if hasTarget {
				if st.adj == accounting.ReplaceOne && st.samp == accounting.SamplingPoisson {
					return fmt.Errorf("--target-epsilon: RDP has no ε bound under replace-one with Poisson sampling; use 'account pld' or 'account dpsgd'")
				}
				if st.adj == accounting.AddRemove && st.samp == accounting.SamplingUniform {
					return fmt.Errorf("uniform sampling is accounted under replace-one adjacency only")
				}
				s, err := accounting.SigmaForEpsilon(q, steps, delta, target, orders, conv)
				if err != nil {
					return fmt.Errorf("solve for sigma: %w", err)
				}
				if st.samp == accounting.SamplingUniform { // the dominating pair is the sampled Gaussian at σ/2
					s *= 2
				}
				sigma = s * st.c
				res.TargetEpsilon = &target
			}
			nm := sigma / st.c
			res.Sigma, res.NoiseMultiplier = &sigma, &nm
			if err := st.account(&res, st.event(q, nm, steps), orders, conv); err != nil {
				return err
			}
			return emit(cmd.OutOrStdout(), asJSON, res, func(w io.Writer) {
				if hasTarget {
					fmt.Fprintf(w, "noise multiplier sigma = %.6g reaches epsilon ≤ %g\n", sigma, target)
				}
				printRDP(w, res, fmt.Sprintf("q = %g, sigma = %g (%s clipping, c = %.4f), steps = %d", q, sigma, st.mode, st.c, steps))
			})
		},
	}
	f := cmd.Flags()
	f.Float64Var(&q, "q", 0, "sampling rate B/N in [0, 1] (required)")
	f.Float64Var(&sigma, "sigma", 0, "noise multiplier (> 0)")
	f.IntVar(&steps, "steps", 0, "number of DP-SGD steps (required)")
	f.Float64Var(&delta, "delta", 0, "target delta in (0, 1) (required)")
	f.Float64Var(&target, "target-epsilon", 0, "solve for the sigma reaching this epsilon (instead of --sigma)")
	f.StringVar(&ordersS, "orders", "", "comma-separated Rényi orders > 1 (default 1.1…10.9, 11…63, 128…1024)")
	f.StringVar(&convS, "conversion", "improved", "RDP → (ε, δ) conversion: improved or classic")
	f.StringVar(&sched, "schedule", "", "heterogeneous run: comma-separated q:sigma:steps segments (instead of --q/--sigma/--steps)")
	f.StringVar(&adjS, "adjacency", "add-remove", "neighbouring relation of ε: add-remove or replace-one")
	f.StringVar(&sampS, "sampling", "poisson", "poisson or uniform (fixed-size batches without replacement; replace-one only)")
	f.StringVar(&clipMode, "clip-mode", "hard", "hard (sigma is the noise multiplier) or smooth (divide by c ≈ 1.115, as train's default)")
	cmd.MarkFlagsMutuallyExclusive("sigma", "target-epsilon")
	cmd.MarkFlagsOneRequired("sigma", "target-epsilon", "schedule")
	cmd.MarkFlagsMutuallyExclusive("schedule", "q")
	cmd.MarkFlagsMutuallyExclusive("schedule", "sigma")
	cmd.MarkFlagsMutuallyExclusive("schedule", "steps")
	cmd.MarkFlagsMutuallyExclusive("schedule", "target-epsilon")
	addJSONFlag(cmd, &asJSON)
	return cmd
}

// runRDPSchedule is 'account rdp --schedule'.
func runRDPSchedule(cmd *cobra.Command, st acctRDPSetting, sched string, delta float64, ordersS, convS string, asJSON bool) error {
	if err := acctRequireFlags(cmd, "delta"); err != nil {
		return err
	}
	if err := acctCheckFinite("delta", delta); err != nil {
		return err
	}
	segs, err := acctParseSchedule(sched)
	if err != nil {
		return err
	}
	orders, err := acctParseOrders(ordersS)
	if err != nil {
		return err
	}
	conv, err := accounting.ParseConversion(convS)
	if err != nil {
		return fmt.Errorf("--conversion: %w", err)
	}
	res := accountRDPResult{Schedule: segs, Delta: delta}
	var ev accounting.ComposedEvent
	for i, s := range segs {
		if s.Steps < 0 {
			return fmt.Errorf("--schedule: segment %d: number of steps %d must be ≥ 0", i, s.Steps)
		}
		if _, err := accounting.SampledGaussianRDP(s.Q, s.Sigma, 2); err != nil {
			return fmt.Errorf("--schedule: segment %d: %w", i, err)
		}
		ev.Events = append(ev.Events, st.event(s.Q, s.Sigma/st.c, s.Steps))
		res.Steps += s.Steps
	}
	if err := st.account(&res, ev, orders, conv); err != nil {
		return fmt.Errorf("--schedule: %w", err)
	}
	return emit(cmd.OutOrStdout(), asJSON, res, func(w io.Writer) {
		printRDP(w, res, fmt.Sprintf("schedule of %d segments, %d steps", len(segs), res.Steps))
	})
}

// accountReRoResult is the JSON of 'account rero'.
type accountReRoResult struct {
	Q     float64 `json:"q"`
	Sigma float64 `json:"sigma"`
	Steps int     `json:"steps"`
	Seed  uint64  `json:"seed"`
	accounting.ReRoResult
	// GammaTradeoff is the ReRo bound from the PLD trade-off curve (no sampling
	// error; a rigorous upper bound) and GammaTradeoffLower its discretisation's
	// lower end. Adjacency add-remove, Poisson sampling, as Hayes et al.
	GammaTradeoff      float64 `json:"gamma_tradeoff"`
	GammaTradeoffLower float64 `json:"gamma_tradeoff_lower"`
}

func newAccountReRoCmd() *cobra.Command {
	var (
		q, sigma, kappa, conf float64
		steps, prior, samples int
		workers, muSamples    int
		seed                  uint64
		asJSON, quiet         bool
	)
	cmd := &cobra.Command{
		Use:   "rero",
		Short: "ReRo bound on reconstruction success (Hayes et al.): Monte Carlo, q = 1 closed form, RDP-based",
		Long: `Upper bound γ on the success probability of any reconstruction attack against
'steps' steps of DP-SGD (rate q, noise multiplier sigma) when a guess from the prior
succeeds with probability κ (--kappa, or 1/K for a uniform prior of --prior-size K).

gamma_nu is Hayes et al.'s Monte Carlo estimate (1/N)·Σ of the top ⌈κN⌉ likelihood
ratios of N draws from N(0, σ²I_T); gamma_mu the same event estimated from draws of
the mixture; [gamma_low, gamma_high] a confidence interval (DKW under both
distributions, --confidence); gamma_exact the q = 1 closed form Φ(√T/σ − Φ⁻¹(1−κ));
gamma_rdp the RDP-based bound. gamma, the number to read, is gamma_exact when q = 1,
otherwise gamma_nu, or gamma_mu (with a warning) when gamma_nu is known to be off.
advantage = (gamma − κ)/(1 − κ). The draws are split into
chunks seeded from --seed, so the result does not depend on the number of cores.`,
		Example: `  dpfil account rero --q 0.01 --sigma 1 --steps 1000 --prior-size 10
  dpfil account rero --q 1 --sigma 2 --steps 10 --kappa 0.01 --samples 1000000 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := acctRequireFlags(cmd, "q", "sigma", "steps"); err != nil {
				return err
			}
			hasK, hasP := cmd.Flags().Changed("kappa"), cmd.Flags().Changed("prior-size")
			if hasK == hasP {
				return fmt.Errorf("give exactly one of --kappa and --prior-size")
			}
			if err := acctCheckFiniteAll([]string{"q", "sigma", "kappa", "confidence"}, q, sigma, kappa, conf); err != nil {
				return err
			}
			if hasP {
				k, err := accounting.KappaFromPriorSize(prior)
				if err != nil {
					return fmt.Errorf("--prior-size: %w", err)
				}
				kappa = k
			}
			if samples < 1 {
				return fmt.Errorf("--samples = %d must be ≥ 1", samples)
			}
			if cmd.Flags().Changed("mu-samples") && muSamples < 1 {
				return fmt.Errorf("--mu-samples = %d must be ≥ 1", muSamples)
			}
			// Progress in units of 1% of the draws (ν and μ).
			prog := newProgress(100, "rero", quiet)
			reported := int64(0)
			res, err := accounting.ReRoMonteCarlo(accounting.ReRoConfig{
				Q: q, Sigma: sigma, Steps: steps, Kappa: kappa, Samples: samples, MuSamples: muSamples, Seed: seed,
				Confidence: conf, Workers: workers,
				Progress: func(done, total int64) {
					if pct := 100 * done / total; pct > reported {
						prog.Add(pct-reported, "")
						reported = pct
					}
				},
			})
			prog.Finish()
			if err != nil {
				return fmt.Errorf("ReRo: %w", err)
			}
			tr, err := accounting.ReRoTradeoff(q, sigma, steps, kappa, nil)
			if err != nil {
				return fmt.Errorf("ReRo from the trade-off curve: %w", err)
			}
			out := accountReRoResult{Q: q, Sigma: sigma, Steps: steps, Seed: seed, ReRoResult: res,
				GammaTradeoff: tr.Gamma, GammaTradeoffLower: tr.GammaLower}
			return emit(cmd.OutOrStdout(), asJSON, out, func(w io.Writer) {
				fmt.Fprintf(w, "q = %g, sigma = %g, steps = %d, kappa = %.6g, N = %d (seed %d)\n", q, sigma, steps, kappa, samples, seed)
				fmt.Fprintf(w, "ReRo gamma: %.6g   %.0f%% CI [%.6g, %.6g]   advantage %.6g\n",
					res.Gamma, 100*res.Confidence, res.GammaLow, res.GammaHigh, res.Advantage)
				fmt.Fprintf(w, "Monte Carlo: %.6g from ν draws (Hayes et al.'s estimator), %.6g from mixture draws\n", res.GammaNu, res.GammaMu)
				if res.GammaExact != nil {
					fmt.Fprintf(w, "gamma exact (q = 1 closed form): %.6g\n", *res.GammaExact)
				}
				fmt.Fprintf(w, "gamma from the PLD trade-off curve: %.6g (rigorous upper bound; discretisation lower end %.6g)\n", tr.Gamma, tr.GammaLower)
				fmt.Fprintf(w, "gamma from RDP: %.6g (order %g)\n", res.GammaRDP, res.RDPOrder)
				if res.Warning != "" {
					fmt.Fprintf(w, "warning: %s\n", res.Warning)
				}
			})
		},
	}
	f := cmd.Flags()
	f.Float64Var(&q, "q", 0, "sampling rate in [0, 1] (required)")
	f.Float64Var(&sigma, "sigma", 0, "noise multiplier > 0 (required)")
	f.IntVar(&steps, "steps", 0, "number of DP-SGD steps ≥ 1 (required)")
	f.Float64Var(&kappa, "kappa", 0, "baseline success probability κ in (0, 1]")
	f.IntVar(&prior, "prior-size", 0, "size K of a uniform prior (κ = 1/K)")
	f.IntVar(&samples, "samples", 1_000_000, "Monte Carlo draws N from N(0, σ²I_T)")
	f.IntVar(&muSamples, "mu-samples", 0, "draws from the mixture for the confidence interval (default: --samples)")
	f.Float64Var(&conf, "confidence", 0.95, "confidence level of the interval, in (0, 1)")
	f.IntVar(&workers, "workers", 0, "goroutines (default: number of CPUs); does not change the result")
	f.BoolVar(&quiet, "quiet", false, "no progress report on stderr")
	addSeedFlag(cmd, &seed)
	addJSONFlag(cmd, &asJSON)
	return cmd
}

// accountFILResult is the JSON of 'account fil'.
type accountFILResult struct {
	Files   []string              `json:"files"`
	Runs    int                   `json:"runs"`
	Summary accounting.FILSummary `json:"summary"`
	Out     string                `json:"out,omitempty"`
}

func newAccountFILCmd() *cobra.Command {
	var (
		files  []string
		out    string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "fil",
		Short: "Summarise per-sample dFIL files (.npy): max, median, quantiles, Theorem 2 MSE bounds",
		Long: `Reads one or more per-sample dFIL vectors (.npy float64, as written by 'dpfil
train'); several files are repeated runs and are merged by the per-sample mean. Prints
max, median, mean, quantiles, and the Theorem 2 MSE lower bounds 1/max dFIL (worst
sample) and 1/median dFIL. --out writes the merged vector.`,
		Example: `  dpfil account fil --dfil run1/dfil.npy --dfil run2/dfil.npy --out merged.npy --json`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(files) == 0 {
				return fmt.Errorf("missing required flag --dfil")
			}
			runs := make([][]float64, 0, len(files))
			for _, p := range files {
				x, err := accounting.LoadDFIL(p)
				if err != nil {
					return err
				}
				runs = append(runs, x)
			}
			mean, err := accounting.MeanDFIL(runs...)
			if err != nil {
				return fmt.Errorf("merge dFIL runs: %w", err)
			}
			if out != "" {
				if err := accounting.SaveDFIL(out, mean); err != nil {
					return err
				}
			}
			s := accounting.SummarizeDFIL(mean)
			res := accountFILResult{Files: files, Runs: len(files), Summary: s, Out: out}
			return emit(cmd.OutOrStdout(), asJSON, res, func(w io.Writer) {
				fmt.Fprintf(w, "%d samples, %d run(s)\n", s.Count, len(files))
				fmt.Fprintf(w, "dFIL max %.6g  median %.6g  mean %.6g  min %.6g\n", s.Max, s.Median, s.Mean, s.Min)
				keys := make([]string, 0, len(s.Quantiles))
				for k := range s.Quantiles {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				for _, k := range keys {
					fmt.Fprintf(w, "  %s %.6g\n", k, s.Quantiles[k])
				}
				fmt.Fprintf(w, "Theorem 2 MSE lower bound: worst sample 1/max = %.6g, median sample 1/median = %.6g\n",
					s.MSEBoundMax, s.MSEBoundMedian)
			})
		},
	}
	cmd.Flags().StringArrayVar(&files, "dfil", nil, "per-sample dFIL .npy file (repeat for several runs)")
	cmd.Flags().StringVar(&out, "out", "", "write the merged (mean) dFIL vector to this .npy file")
	addJSONFlag(cmd, &asJSON)
	return cmd
}

// accountKappaResult is the JSON of 'account kappa'.
type accountKappaResult struct {
	Q            float64 `json:"q"`
	Sigma        float64 `json:"sigma"`
	ClipConstant float64 `json:"clip_constant"`
	DeltaF       float64 `json:"delta_f"`
	Kappa        float64 `json:"kappa"`
	Epsilon0     float64 `json:"epsilon0"` // one step's ε₀ at δ_f (replace-one)
	// Epsilon0Method names how ε₀ was computed.
	Epsilon0Method string `json:"epsilon0_method"`
	// PaperEpsilon0 and PaperKappa use the classical Gaussian-mechanism formula
	// (valid only when PaperEpsilon0 < 1), as the paper did.
	PaperEpsilon0 float64 `json:"paper_epsilon0_classical"`
	PaperKappa    float64 `json:"paper_kappa_classical"`
}

func newAccountKappaCmd() *cobra.Command {
	var (
		q, sigma, c, deltaF float64
		steps, n            int
		clipMode            string
		asJSON              bool
	)
	cmd := &cobra.Command{
		Use:   "kappa",
		Short: "FIL subsampling factor κ = q/(q + (1−q)e^{−ε₀}) (Guo et al. Theorem 4)",
		Long: `ε₀ is the per-step (ε₀, δ_f)-DP of the Gaussian mechanism under replace-one
adjacency (sensitivity 2cC, noise σC; c the clipping constant: 1 hard, ≈1.115 smooth),
from the analytic Gaussian mechanism (Balle & Wang 2018), valid for every σ. The
paper's classical ε₀ = c·2·√(2 ln(1.25/δ_f))/σ (valid only when < 1) is shown beside
it. δ_f is --delta-f, or 1/(T·N) from --steps and --n. --clip-mode sets c as 'train'
does (instead of --clip-constant).`,
		Example: `  dpfil account kappa --q 0.0043 --sigma 1.1 --steps 14062 --n 60000`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := acctRequireFlags(cmd, "q", "sigma"); err != nil {
				return err
			}
			if !cmd.Flags().Changed("delta-f") {
				if steps <= 0 || n <= 0 {
					return fmt.Errorf("give --delta-f, or --steps and --n (both > 0) for δ_f = 1/(T·N)")
				}
				deltaF = accounting.DefaultFILDelta(steps, n)
			}
			if cmd.Flags().Changed("clip-mode") {
				var err error
				if c, err = train.ClipConstant(clipMode); err != nil {
					return fmt.Errorf("--clip-mode: %w", err)
				}
			}
			k, err := accounting.Kappa(q, sigma, c, deltaF)
			if err != nil {
				return fmt.Errorf("kappa: %w", err)
			}
			eps0, err := accounting.KappaEpsilon0(sigma, c, deltaF)
			if err != nil {
				return fmt.Errorf("kappa: %w", err)
			}
			kc, err := accounting.KappaClassic(q, sigma, c, deltaF)
			if err != nil {
				return fmt.Errorf("kappa: %w", err)
			}
			res := accountKappaResult{Q: q, Sigma: sigma, ClipConstant: c, DeltaF: deltaF, Kappa: k, Epsilon0: eps0,
				Epsilon0Method: "analytic Gaussian mechanism (Balle & Wang 2018)",
				PaperEpsilon0:  c * 2 * math.Sqrt(2*math.Log(1.25/deltaF)) / sigma, PaperKappa: kc}
			return emit(cmd.OutOrStdout(), asJSON, res, func(w io.Writer) {
				fmt.Fprintf(w, "kappa = %.6g (q = %g, sigma = %g, c = %g, delta_f = %.3g; ε₀ = %.4g, analytic Gaussian mechanism)\n", k, q, sigma, c, deltaF, eps0)
				valid := "valid"
				if res.PaperEpsilon0 >= 1 {
					valid = "not valid: ≥ 1"
				}
				fmt.Fprintf(w, "the paper's classical ε₀ = %.4g (%s) would give kappa = %.6g\n", res.PaperEpsilon0, valid, kc)
			})
		},
	}
	f := cmd.Flags()
	f.Float64Var(&q, "q", 0, "sampling rate in [0, 1] (required)")
	f.Float64Var(&sigma, "sigma", 0, "noise multiplier > 0 (required)")
	f.Float64Var(&c, "clip-constant", 1, "clipping constant c (1 hard clipping; ≈1.115 smooth)")
	f.StringVar(&clipMode, "clip-mode", "", "hard or smooth: the clipping constant of train's clip mode (instead of --clip-constant)")
	cmd.MarkFlagsMutuallyExclusive("clip-constant", "clip-mode")
	f.Float64Var(&deltaF, "delta-f", 0, "per-step failure probability δ_f in (0, 1)")
	f.IntVar(&steps, "steps", 0, "number of steps T (for δ_f = 1/(T·N))")
	f.IntVar(&n, "n", 0, "training set size N (for δ_f = 1/(T·N))")
	addJSONFlag(cmd, &asJSON)
	return cmd
}

// accountMSEResult is the JSON of 'account mse'; absent bounds were not requested,
// null ones are +∞ (no leakage).
type accountMSEResult struct {
	Eps2             *float64 `json:"eps2,omitempty"`
	Diameter         *float64 `json:"diameter,omitempty"`
	DFIL             *float64 `json:"dfil,omitempty"`
	PriorFisherTrace *float64 `json:"prior_fisher_trace,omitempty"`
	D                int      `json:"d,omitempty"`
	MSEBoundRDP      *float64 `json:"mse_bound_rdp,omitempty"`
	MSEBoundFIL      *float64 `json:"mse_bound_fil,omitempty"`
	MSEBoundVanTrees *float64 `json:"mse_bound_van_trees,omitempty"`
}

func newAccountMSECmd() *cobra.Command {
	var (
		eps2, diam, dfil, jprior float64
		d                        int
		asJSON                   bool
	)
	cmd := &cobra.Command{
		Use:   "mse",
		Short: "MSE lower bounds on reconstruction: Theorem 1 (RDP), Theorem 2 (dFIL), van Trees",
		Long: `--eps2: Theorem 1 for an unbiased attacker, MSE ≥ diam²/(4(e^eps2 − 1)) with every
coordinate of diameter --diameter (1 for [0,1]^d).
--dfil: Theorem 2, MSE ≥ 1/dFIL.
--dfil with --prior-fisher-trace J and --d: van Trees (Edmunds eq. 1.3) for a biased
attacker averaged over the prior, MSE ≥ 1/(E_π[dFIL] + J/d) (--dfil is then E_π[dFIL]).`,
		Example: `  dpfil account mse --eps2 0.33 --dfil 0.5
  dpfil account mse --dfil 2 --prior-fisher-trace 3136 --d 784 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			hasE, hasF, hasJ := cmd.Flags().Changed("eps2"), cmd.Flags().Changed("dfil"), cmd.Flags().Changed("prior-fisher-trace")
			if !hasE && !hasF {
				return fmt.Errorf("give --eps2 and/or --dfil")
			}
			if hasJ && !hasF {
				return fmt.Errorf("--prior-fisher-trace needs --dfil (the prior mean dFIL)")
			}
			var res accountMSEResult
			bound := func(v float64) *float64 {
				if math.IsInf(v, 1) {
					return nil
				}
				return &v
			}
			if hasE {
				b, err := accounting.MSEBoundRDPGeneral(eps2, []float64{diam}, nil, 0)
				if err != nil {
					return fmt.Errorf("Theorem 1 bound: %w", err)
				}
				res.Eps2, res.Diameter, res.MSEBoundRDP = &eps2, &diam, bound(b)
			}
			if hasF {
				if err := acctCheckFinite("dfil", dfil); err != nil {
					return err
				}
				if dfil < 0 {
					return fmt.Errorf("--dfil = %v must be ≥ 0", dfil)
				}
				res.DFIL, res.MSEBoundFIL = &dfil, bound(accounting.MSEBoundFIL(dfil))
			}
			if hasJ {
				b, err := accounting.MSEBoundVanTrees(dfil, jprior, d)
				if err != nil {
					return fmt.Errorf("van Trees bound: %w", err)
				}
				res.PriorFisherTrace, res.D, res.MSEBoundVanTrees = &jprior, d, bound(b)
			}
			show := func(p *float64) string {
				if p == nil {
					return "+Inf (no leakage)"
				}
				return fmt.Sprintf("%.6g", *p)
			}
			return emit(cmd.OutOrStdout(), asJSON, res, func(w io.Writer) {
				if hasE {
					fmt.Fprintf(w, "Theorem 1 (RDP, eps2 = %g, diameter %g): MSE ≥ %s\n", eps2, diam, show(res.MSEBoundRDP))
				}
				if hasF {
					fmt.Fprintf(w, "Theorem 2 (dFIL = %g, unbiased attacker): MSE ≥ %s\n", dfil, show(res.MSEBoundFIL))
				}
				if hasJ {
					fmt.Fprintf(w, "van Trees (prior Fisher trace %g, d = %d): MSE ≥ %s\n", jprior, d, show(res.MSEBoundVanTrees))
				}
			})
		},
	}
	f := cmd.Flags()
	f.Float64Var(&eps2, "eps2", 0, "order-2 RDP of the whole run (Theorem 1)")
	f.Float64Var(&diam, "diameter", 1, "per-coordinate diameter of the data space (1 for [0,1]^d)")
	f.Float64Var(&dfil, "dfil", 0, "dFIL = Tr(I)/d of a sample (Theorem 2), or its prior mean (van Trees)")
	f.Float64Var(&jprior, "prior-fisher-trace", 0, "trace of the prior's Fisher information J(f_π) (van Trees)")
	f.IntVar(&d, "d", 0, "data dimension (van Trees)")
	addJSONFlag(cmd, &asJSON)
	return cmd
}
