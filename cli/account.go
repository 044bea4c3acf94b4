package cli

import (
	"fmt"
	"math"
	"os"
	"strings"

	"github.com/dpfil/dpfil/accounting"
	"github.com/dpfil/dpfil/internal/termprogress"
	"github.com/dpfil/dpfil/train"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// newAccountCmd is the 'account' command group: RDP, PLD, ReRo, FIL summaries and κ.
func newAccountCmd() *cobra.Command {
	return group(&cobra.Command{
		Use:   "account",
		Short: "Privacy accountants: RDP, PLD, FIL, ReRo and MSE bounds",
		Long: `Privacy accountants for DP-SGD; every formula, its source and its stated error are
in docs/accounting.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmd.Help()
		},
	}, newAccountRDPCmd(), newAccountPLDCmd(), newAccountDPSGDCmd(), newAccountReRoCmd(), newAccountFILCmd(), newAccountFILRefineCmd(), newAccountKappaCmd(), newAccountMSECmd())
}

// parsedValue is a flag whose text parse turns into a T (an adjacency, a sampling,
// a conversion): a bad spelling is refused when the flags are parsed.
type parsedValue[T fmt.Stringer] struct {
	dst   *T
	parse func(string) (T, error)
}

func (v parsedValue[T]) String() string { return (*v.dst).String() }
func (v parsedValue[T]) Type() string   { return "string" }
func (v parsedValue[T]) Set(s string) error {
	x, err := v.parse(s)
	if err != nil {
		return err
	}
	*v.dst = x
	return nil
}

// parsedVar defines a flag parsed by parse into *dst, with default def.
func parsedVar[T fmt.Stringer](f *pflag.FlagSet, dst *T, name string, def T, parse func(string) (T, error), usage string) {
	*dst = def
	f.Var(parsedValue[T]{dst, parse}, name, usage)
}

// bindRunFlags binds --q, --sigma and --steps, the sampled Gaussian mechanism every
// accountant composes, to a request's fields, and --delta when delta is not nil.
func bindRunFlags(f *pflag.FlagSet, q, sigma *float64, steps *int, delta *float64) {
	f.Float64Var(q, "q", 0, "sampling rate q = B/N in [0, 1]")
	f.Float64Var(sigma, "sigma", 0, "noise scale σ > 0 (noise N(0, σ²C²) on a sum of gradients clipped to c·C; the noise multiplier is σ/c, with c = 1 unless --clip-mode or --clip-constant sets it)")
	f.IntVar(steps, "steps", 0, "number of DP-SGD steps T")
	if delta != nil {
		f.Float64Var(delta, "delta", 0, "target δ in (0, 1)")
	}
}

// bindNeighbourFlags binds --adjacency and --sampling: the neighbouring relation ε
// holds for and how batches are drawn.
func bindNeighbourFlags(f *pflag.FlagSet, adj *accounting.Adjacency, s *accounting.Sampling) {
	parsedVar(f, adj, "adjacency", accounting.AddRemove, accounting.ParseAdjacency, "neighbouring relation of ε: add-remove (the usual DP-SGD ε) or replace-one")
	parsedVar(f, s, "sampling", accounting.SamplingPoisson, accounting.ParseSampling, "batches: poisson (each record joins with probability q) or uniform (fixed size qN without replacement; replace-one only)")
}

// setClipMode sets a request's clip mode (--clip-mode) and the clipping constant c
// that train uses for it.
func setClipMode(mode string, dstMode *string, c *float64) error {
	var err error
	if *c, err = train.ClipConstant(mode); err != nil {
		return fmt.Errorf("--clip-mode: %w", err)
	}
	*dstMode = mode
	return nil
}

func newAccountRDPCmd() *cobra.Command {
	var (
		req                      accounting.RDPRequest
		target                   float64
		orders, schedule, clipMd string
	)
	cmd := reportCmd(&cobra.Command{
		Use:   "rdp",
		Short: "RDP of DP-SGD (sampled Gaussian) → (ε, δ), order-2 RDP and the Theorem 1 MSE bound; or σ for a target ε",
		Long: `Composes --steps steps of the sampled Gaussian mechanism in Rényi DP (Mironov,
Talwar & Zhang 2019) and converts to (ε, δ)-DP, minimising over the orders (by
default with the improved conversion of Balle et al. 2020). rdp_order2 is the order-2
RDP under the adjacency; mse_bound_rdp = 1/(4(e^ε₂ − 1)) is the MSE lower bound on
[0,1]^d of Guo, Karrer, Chaudhuri & van der Maaten (2022, Theorem 1) with the
replace-one ε₂ its proof needs (theorem1; the paper's add-remove value beside it).
--target-epsilon solves for the smallest σ reaching that ε (bisection to 1e-6
relative). 'account pld' is tighter; 'account dpsgd' reports both.`,
		Example: `  dpfil account rdp --q 0.004267 --sigma 1.1 --steps 14062 --delta 1e-5
  dpfil account rdp --q 0.01 --steps 1000 --delta 1e-5 --target-epsilon 2 --json
  dpfil account rdp --q 0.01 --sigma 1 --steps 1000 --delta 1e-5 --clip-mode smooth --sampling uniform --adjacency replace-one
  dpfil account rdp --schedule 0.01:2:500,0.01:1.5:500,0.02:1:1000 --delta 1e-5`,
		Args: cobra.NoArgs,
	}, func(cmd *cobra.Command, _ []string) (*accounting.RDPReport, error) {
		if err := setClipMode(clipMd, &req.ClipMode, &req.ClipConstant); err != nil {
			return nil, err
		}
		var err error
		if req.Orders, err = accounting.ParseOrders(orders); err != nil {
			return nil, fmt.Errorf("--%w", err)
		}
		req.TargetEpsilon = changed(cmd, "target-epsilon", &target)
		if cmd.Flags().Changed("schedule") {
			if req.Schedule, err = accounting.ParseSchedule(schedule); err != nil {
				return nil, fmt.Errorf("--%w", err)
			}
		}
		return accounting.AccountRDP(req)
	})
	f := cmd.Flags()
	bindRunFlags(f, &req.Q, &req.Sigma, &req.Steps, &req.Delta)
	f.Float64Var(&target, "target-epsilon", 0, "solve for the σ reaching this ε (instead of --sigma)")
	f.StringVar(&orders, "orders", "", "comma-separated Rényi orders > 1 (default 1.1…10.9, 11…63, 128…1024)")
	parsedVar(f, &req.Conversion, "conversion", accounting.ConversionImproved, accounting.ParseConversion, "RDP → (ε, δ) conversion: improved or classic")
	f.StringVar(&schedule, "schedule", "", "heterogeneous run: comma-separated q:sigma:steps segments (instead of --q/--sigma/--steps)")
	bindNeighbourFlags(f, &req.Adjacency, &req.Sampling)
	f.StringVar(&clipMd, "clip-mode", train.ClipModeHard, "hard (c = 1: σ is the noise multiplier) or smooth (noise multiplier σ/c, c ≈ 1.115, as train's default)")
	markRequired(cmd, "delta")
	cmd.MarkFlagsOneRequired("q", "schedule")
	cmd.MarkFlagsRequiredTogether("q", "steps")
	cmd.MarkFlagsOneRequired("sigma", "target-epsilon", "schedule")
	cmd.MarkFlagsMutuallyExclusive("sigma", "target-epsilon")
	for _, n := range []string{"q", "sigma", "steps", "target-epsilon"} {
		cmd.MarkFlagsMutuallyExclusive("schedule", n)
	}
	return cmd
}

// reroFlags are the flags of 'account rero' beside the configuration they fill.
type reroFlags struct {
	cfg       accounting.ReRoConfig
	prior     int
	quiet, mc bool
	maxDraws  float64
}

func newAccountReRoCmd() *cobra.Command {
	var fl reroFlags
	cmd := reportCmd(&cobra.Command{
		Use:   "rero",
		Short: "ReRo bound on reconstruction success (Hayes et al.): rigorous trade-off bound, q = 1 closed form, RDP; Monte Carlo as a check",
		Long: `Upper bound γ on the success probability of any reconstruction attack against
--steps steps of DP-SGD when a guess from the prior succeeds with probability κ
(--kappa, or 1/K for a uniform prior of --prior-size K), after Hayes, Mahloujifar &
Balle (2023, "Bounding training data reconstruction in DP-SGD", Sec. 3).

gamma, the number to read, is rigorous (no sampling error): the q = 1 closed form
Φ(√T/σ − Φ⁻¹(1−κ)) when q = 1, otherwise the smaller of the bounds from the PLD
trade-off curve (gamma_tradeoff; the exact γ is at least gamma_tradeoff_lower) and
from RDP (gamma_rdp); advantage = (gamma − κ)/(1 − κ). It is computed and shown (on
stderr) first. Then Hayes et al.'s Monte Carlo estimate runs as a check
(monte_carlo: its estimate with a DKW confidence interval), costing steps ×
(samples + mu-samples) normal draws (about 10⁸ per second and core), with progress
on stderr; it is skipped, saying so, above --max-draws or with --monte-carlo=false.
For a uniform prior (κ = 1/K) the Fano bound of Guo, Sablayrolles & Sanjabi (2022b)
is given beside it (fano: success and advantage bounds from a bound on the mutual
information). Estimators and their errors: docs/accounting.md.`,
		Example: `  dpfil account rero --q 0.01 --sigma 1 --steps 1000 --prior-size 10
  dpfil account rero --q 0.01 --sigma 1 --steps 100000 --kappa 0.01 --monte-carlo=false
  dpfil account rero --q 1 --sigma 2 --steps 10 --kappa 0.01 --samples 1000000 --json`,
		Args: cobra.NoArgs,
	}, fl.run)
	f := cmd.Flags()
	bindRunFlags(f, &fl.cfg.Q, &fl.cfg.Sigma, &fl.cfg.Steps, nil)
	f.Float64Var(&fl.cfg.Kappa, "kappa", 0, "baseline success probability κ in (0, 1]")
	f.IntVar(&fl.prior, "prior-size", 0, "size K of a uniform prior (κ = 1/K)")
	f.BoolVar(&fl.mc, "monte-carlo", true, "run Hayes et al.'s Monte Carlo estimate as a check of the rigorous bound")
	f.IntVar(&fl.cfg.Samples, "samples", 1_000_000, "Monte Carlo draws N from N(0, σ²I_T)")
	f.IntVar(&fl.cfg.MuSamples, "mu-samples", 0, "draws from the mixture for the confidence interval (default: --samples)")
	f.Float64Var(&fl.maxDraws, "max-draws", accounting.DefaultReRoMaxDraws, "skip the Monte Carlo (saying so) when it needs more than this many normal draws, steps × (samples + mu-samples); 0 = no cap")
	f.Float64Var(&fl.cfg.Confidence, "confidence", 0.95, "confidence level of the interval, in (0, 1)")
	f.IntVar(&fl.cfg.Workers, "workers", 0, "goroutines (default: number of CPUs); does not change the result")
	addQuietFlag(cmd, &fl.quiet)
	markRequired(cmd, "q", "sigma", "steps")
	cmd.MarkFlagsOneRequired("kappa", "prior-size")
	cmd.MarkFlagsMutuallyExclusive("kappa", "prior-size")
	addSeedFlag(cmd, &fl.cfg.Seed)
	return cmd
}

func (fl *reroFlags) run(cmd *cobra.Command, _ []string) (*accounting.ReRoReport, error) {
	req := accounting.ReRoRequest{ReRoConfig: fl.cfg, SkipMonteCarlo: !fl.mc}
	cfg := &req.ReRoConfig
	if cmd.Flags().Changed("prior-size") {
		k, err := accounting.KappaFromPriorSize(fl.prior)
		if err != nil {
			return nil, fmt.Errorf("--prior-size: %w", err)
		}
		cfg.Kappa = k
	}
	if cfg.Samples < 1 { // 0 would mean the library's default
		return nil, fmt.Errorf("--samples = %d must be ≥ 1 (--monte-carlo=false skips the Monte Carlo)", cfg.Samples)
	}
	if cmd.Flags().Changed("mu-samples") && cfg.MuSamples < 1 {
		return nil, fmt.Errorf("--mu-samples = %d must be ≥ 1", cfg.MuSamples)
	}
	switch {
	case !(fl.maxDraws >= 0) || math.IsInf(fl.maxDraws, 0) || fl.maxDraws > math.MaxInt64/2:
		return nil, fmt.Errorf("--max-draws = %v must be finite and ≥ 0 (0: no cap)", fl.maxDraws)
	case fl.maxDraws == 0:
		req.MaxDraws = -1
	default:
		req.MaxDraws = max(1, int64(fl.maxDraws))
	}
	// The rigorous bound is shown at once; the Monte Carlo reports progress in units
	// of 1% of its draws (ν and μ).
	var prog *progress
	defer func() { finishProgress(prog) }()
	req.Bound = func(r *accounting.ReRoReport) {
		// Only when a Monte Carlo follows: otherwise the report comes at once and the
		// bound would be printed twice.
		d := accounting.ReRoDraws(*cfg)
		if fl.quiet || req.SkipMonteCarlo || r.Q <= 0 || (req.MaxDraws >= 0 && d > float64(req.MaxDraws)) {
			return
		}
		var b strings.Builder
		r.WriteBound(&b)
		fmt.Fprint(cmd.ErrOrStderr(), b.String())
		fmt.Fprintf(cmd.ErrOrStderr(), "Monte Carlo check: %.3g normal draws (cap --max-draws %.3g; --monte-carlo=false skips it)\n", d, fl.maxDraws)
	}
	reported := int64(0)
	cfg.Progress = func(done, total int64) {
		if prog == nil {
			prog = cmdProgress(cmd, 100, "rero Monte Carlo", fl.quiet)
		}
		if pct := 100 * done / total; pct > reported {
			prog.Add(pct-reported, "")
			reported = pct
		}
	}
	return accounting.ReRoBounds(req)
}

// cmdProgress is newProgress on the command's stderr (plain lines when that is not
// the process's stderr, e.g. in tests).
func cmdProgress(cmd *cobra.Command, total int64, label string, quiet bool) *progress {
	if w := cmd.ErrOrStderr(); w != os.Stderr {
		return termprogress.New(w, false, total, label, quiet)
	}
	return newProgress(total, label, quiet)
}

func newAccountFILCmd() *cobra.Command {
	var (
		files []string
		out   string
	)
	cmd := reportCmd(&cobra.Command{
		Use:   "fil [DFIL.npy|RUNDIR]...",
		Short: "Summarise per-sample dFIL (a run's dfil.npy, or its run directory): max, median, quantiles, Theorem 2 MSE bounds",
		Long: `Reads one or more per-sample dFIL vectors: a run's dfil.npy (.npy float64, as written
by 'dpfil train'), or the run directory itself, given as arguments or with --dfil;
several are repeated runs and are merged by the per-sample mean. Prints how the dFIL
was computed (exact trace, or the random-coordinate estimate with its k; from the
run's result.json), max, median, mean, quantiles, and the MSE lower bounds of Guo,
Karrer, Chaudhuri & van der Maaten (2022, Theorem 2) 1/max dFIL (worst sample) and
1/median dFIL for an unbiased attacker. --out writes the merged vector.`,
		Example: `  dpfil account fil runs/a/dfil.npy
  dpfil account fil runs/a runs/b --out merged.npy --json`,
		Args: cobra.ArbitraryArgs,
	}, func(_ *cobra.Command, args []string) (*train.FILSummaryReport, error) {
		return train.SummarizeFIL(append(append([]string(nil), files...), args...), out)
	})
	cmd.Flags().StringArrayVar(&files, "dfil", nil, "per-sample dFIL .npy file or run directory (repeat for several runs; or give them as arguments)")
	cmd.Flags().StringVar(&out, "out", "", "write the merged (mean) dFIL vector to this .npy file")
	return cmd
}

func newAccountKappaCmd() *cobra.Command {
	var (
		req      accounting.KappaRequest
		clipMode string
	)
	cmd := reportCmd(&cobra.Command{
		Use:   "kappa",
		Short: "FIL subsampling factor κ = q/(q + (1−q)e^{−ε₀}) (Guo et al. Theorem 4)",
		Long: `κ is the factor of Guo, Karrer, Chaudhuri & van der Maaten (2022, Theorem 4). ε₀ is
the per-step (ε₀, δ_f)-DP of the Gaussian mechanism under replace-one adjacency
(sensitivity 2cC, noise σC; c the clipping constant: 1 hard, ≈1.115 smooth), from
the analytic Gaussian mechanism (Balle & Wang 2018), valid for every σ. The paper's
classical ε₀ = c·2·√(2 ln(1.25/δ_f))/σ (valid only when < 1) is shown beside it.
δ_f is --delta-f, or 1/(T·N) from --steps and --n.`,
		Example: `  dpfil account kappa --q 0.0043 --sigma 1.1 --steps 14062 --n 60000`,
		Args:    cobra.NoArgs,
	}, func(cmd *cobra.Command, _ []string) (*accounting.KappaReport, error) {
		if cmd.Flags().Changed("clip-mode") {
			if err := setClipMode(clipMode, &clipMode, &req.ClipConstant); err != nil {
				return nil, err
			}
		}
		return accounting.AccountKappa(req)
	})
	f := cmd.Flags()
	bindRunFlags(f, &req.Q, &req.Sigma, &req.Steps, nil)
	f.Float64Var(&req.ClipConstant, "clip-constant", 1, "clipping constant c (1 hard clipping; ≈1.115 smooth)")
	f.StringVar(&clipMode, "clip-mode", "", "hard or smooth: the clipping constant of train's clip mode (instead of --clip-constant)")
	f.Float64Var(&req.DeltaF, "delta-f", 0, "per-step failure probability δ_f in (0, 1) (default 1/(T·N) from --steps and --n)")
	f.IntVar(&req.N, "n", 0, "training set size N (for δ_f = 1/(T·N))")
	markRequired(cmd, "q", "sigma")
	cmd.MarkFlagsMutuallyExclusive("clip-constant", "clip-mode")
	cmd.MarkFlagsOneRequired("delta-f", "steps")
	cmd.MarkFlagsRequiredTogether("steps", "n")
	return cmd
}

func newAccountMSECmd() *cobra.Command {
	var (
		req                accounting.MSERequest
		eps2, dfil, jprior float64
	)
	cmd := reportCmd(&cobra.Command{
		Use:   "mse",
		Short: "MSE lower bounds on reconstruction: Theorem 1 (RDP), Theorem 2 (dFIL), van Trees",
		Long: `Lower bounds on the mean squared error of any reconstruction attack, from Guo,
Karrer, Chaudhuri & van der Maaten (2022) and Edmunds (2024): --eps2: Theorem 1 for
an unbiased attacker, MSE ≥ diam²/(4(e^eps2 − 1)) with every coordinate of diameter
--diameter; --dfil: Theorem 2, MSE ≥ 1/dFIL.
--dfil with --prior-fisher-trace J and --d: the van Trees inequality (Edmunds 2024,
eq. 1.3) for a biased attacker averaged over the prior, MSE ≥ 1/(E_π[dFIL] + J/d)
(--dfil is then E_π[dFIL]).`,
		Example: `  dpfil account mse --eps2 0.33 --dfil 0.5
  dpfil account mse --dfil 2 --prior-fisher-trace 3136 --d 784 --json`,
		Args: cobra.NoArgs,
	}, func(cmd *cobra.Command, _ []string) (*accounting.MSEReport, error) {
		req.Eps2, req.DFIL = changed(cmd, "eps2", &eps2), changed(cmd, "dfil", &dfil)
		req.PriorFisherTrace = changed(cmd, "prior-fisher-trace", &jprior)
		return accounting.MSEBounds(req)
	})
	f := cmd.Flags()
	f.Float64Var(&eps2, "eps2", 0, "order-2 RDP of the whole run (Theorem 1)")
	f.Float64Var(&req.Diameter, "diameter", 1, "per-coordinate diameter of the data space (1 for [0,1]^d)")
	f.Float64Var(&dfil, "dfil", 0, "dFIL = Tr(I)/d of a sample (Theorem 2), or its prior mean (van Trees)")
	f.Float64Var(&jprior, "prior-fisher-trace", 0, "trace of the prior's Fisher information J(f_π) (van Trees)")
	f.IntVar(&req.D, "d", 0, "data dimension (van Trees)")
	cmd.MarkFlagsOneRequired("eps2", "dfil")
	return cmd
}

func newAccountPLDCmd() *cobra.Command {
	var req accounting.PLDRequest
	cmd := reportCmd(&cobra.Command{
		Use:   "pld",
		Short: "PLD accountant of DP-SGD → (ε, δ) with a rigorous upper and lower bound, RDP beside it",
		Long: `Composes --steps steps of the subsampled Gaussian mechanism (sensitivity 1 per
record) by their privacy-loss distributions and converts to ε at --delta, discretising
the loss on a grid of width --interval twice: pessimistically (connect-the-dots,
Doroshenko, Ghazi, Kamath, Kumar & Manurangsi 2022; epsilon, a rigorous upper bound,
the number to report) and optimistically (epsilon_lower, a rigorous lower bound), so
epsilon − epsilon_lower bounds the discretisation error. Under add-remove ε is the
larger of the two directions; epsilon_rdp is the RDP accountant's ε, for comparison.
Pairs, discretisation and errors: docs/accounting.md.`,
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

func newAccountDPSGDCmd() *cobra.Command {
	var (
		req               accounting.DPSGDRequest
		target            float64
		adjacency, clipMd string
	)
	cmd := reportCmd(&cobra.Command{
		Use:   "dpsgd",
		Short: "Every privacy number of a DP-SGD run, exactly as 'train' reports it",
		Long: `Accounts a DP-SGD run of --steps steps with batches of --batch out of --n records
(noise multiplier σ/c, c the clip constant of --clip-mode) and prints the privacy
report 'train' writes into result.json: ε at --delta from the PLD and RDP accountants
(the tighter valid bound, or --accountant), the adjacency and sampling it holds for,
the Poisson approximation for shuffled batches, Theorem 1's replace-one ε₂ (Guo,
Karrer, Chaudhuri & van der Maaten 2022) with its MSE bound (and the paper's
add-remove value, labelled), κ, and the privacy events; or σ for --target-epsilon.`,
		Example: `  dpfil account dpsgd --n 60000 --batch 600 --steps 1000 --sigma 1 --delta 1e-5
  dpfil account dpsgd --n 60000 --batch 600 --steps 1000 --target-epsilon 2 --sampling uniform --json`,
		Args: cobra.NoArgs,
	}, func(cmd *cobra.Command, _ []string) (*accounting.DPSGDReport, error) {
		if err := setClipMode(clipMd, &req.ClipMode, &req.ClipConstant); err != nil {
			return nil, err
		}
		if adjacency != "" {
			a, err := accounting.ParseAdjacency(adjacency)
			if err != nil {
				return nil, fmt.Errorf("--adjacency: %w", err)
			}
			req.Adjacency = &a
		}
		req.TargetEpsilon = changed(cmd, "target-epsilon", &target)
		return accounting.AccountDPSGD(req)
	})
	f := cmd.Flags()
	f.IntVar(&req.N, "n", 0, "number of training records N")
	f.IntVar(&req.Batch, "batch", 0, "batch size B (expected size for Poisson)")
	f.IntVar(&req.Steps, "steps", 0, "number of DP-SGD steps T")
	f.Float64Var(&req.Sigma, "sigma", 0, "noise scale σ (noise N(0, σ²C²I); the noise multiplier is σ/c)")
	f.Float64Var(&target, "target-epsilon", 0, "solve for the smallest σ reaching this ε at --delta")
	f.Float64Var(&req.Delta, "delta", 1e-5, "δ at which ε is reported")
	f.Float64Var(&req.FILDelta, "fil-delta", 0, "κ's failure probability δ_f (0 = 1/(T·N), as train)")
	parsedVar(f, &req.Sampling, "sampling", accounting.SamplingPoisson, accounting.ParseSampling, "poisson, uniform or shuffle")
	f.StringVar(&clipMd, "clip-mode", train.ClipModeSmooth, "smooth (c ≈ 1.115) or hard (c = 1)")
	f.StringVar(&req.Accountant, "accountant", accounting.AccountantAuto, "auto (tighter of pld and rdp), pld or rdp")
	f.StringVar(&adjacency, "adjacency", "", "add-remove or replace-one (default: add-remove, replace-one for uniform)")
	markRequired(cmd, "n")
	cmd.MarkFlagsRequiredTogether("n", "batch", "steps")
	cmd.MarkFlagsOneRequired("sigma", "target-epsilon")
	cmd.MarkFlagsMutuallyExclusive("sigma", "target-epsilon")
	return cmd
}
