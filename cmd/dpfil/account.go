package main

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/dpfil/dpfil/accounting"
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
	cmd.AddCommand(newAccountRDPCmd(), newAccountPLDCmd(), newAccountReRoCmd(), newAccountFILCmd(), newAccountKappaCmd(), newAccountMSECmd())
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
	Q          *float64          `json:"q,omitempty"`
	Sigma      *float64          `json:"sigma,omitempty"`
	Schedule   []accounting.Step `json:"schedule,omitempty"`
	Steps      int               `json:"steps"`
	Delta      float64           `json:"delta"`
	Conversion string            `json:"conversion"`
	Epsilon    float64           `json:"epsilon"`
	Order      float64           `json:"order"`
	RDPOrder2  float64           `json:"rdp_order2"`
	// MSEBoundRDP is null when the order-2 RDP is 0 (no leakage: the bound is +∞).
	MSEBoundRDP *float64 `json:"mse_bound_rdp"`
	// TargetEpsilon is set when sigma was solved for.
	TargetEpsilon *float64 `json:"target_epsilon,omitempty"`
}

func newAccountRDPCmd() *cobra.Command {
	var (
		q, sigma, delta, target float64
		steps                   int
		ordersS, convS, sched   string
		asJSON                  bool
	)
	cmd := &cobra.Command{
		Use:   "rdp",
		Short: "RDP of DP-SGD (sampled Gaussian) → (ε, δ), order-2 RDP and the Theorem 1 MSE bound",
		Long: `Composes 'steps' steps of the sampled Gaussian mechanism (Poisson rate q, noise
multiplier sigma) in Rényi DP and converts to (ε, δ)-DP, minimising over the orders
(improved conversion by default). rdp_order2 is the order-2 RDP of the whole run and
mse_bound_rdp = 1/(4(e^rdp_order2 − 1)) the Theorem 1 MSE lower bound on [0,1]^d.
With --target-epsilon instead of --sigma it solves for the smallest sigma reaching
that ε (bisection to 1e-6 relative). --schedule composes a heterogeneous run
(segments q:sigma:steps, e.g. a noise multiplier decaying during training) instead
of --q/--sigma/--steps.`,
		Example: `  dpfil account rdp --q 0.004267 --sigma 1.1 --steps 14062 --delta 1e-5
  dpfil account rdp --q 0.01 --steps 1000 --delta 1e-5 --target-epsilon 2 --json
  dpfil account rdp --schedule 0.01:2:500,0.01:1.5:500,0.02:1:1000 --delta 1e-5`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("schedule") {
				for _, f := range []string{"q", "sigma", "steps", "target-epsilon"} {
					if cmd.Flags().Changed(f) {
						return fmt.Errorf("--schedule replaces --%s; give one or the other", f)
					}
				}
				if err := acctRequireFlags(cmd, "delta"); err != nil {
					return err
				}
				return runRDPSchedule(cmd, sched, delta, ordersS, convS, asJSON)
			}
			if err := acctRequireFlags(cmd, "q", "steps", "delta"); err != nil {
				return err
			}
			hasSigma, hasTarget := cmd.Flags().Changed("sigma"), cmd.Flags().Changed("target-epsilon")
			if hasSigma == hasTarget {
				return fmt.Errorf("give exactly one of --sigma and --target-epsilon")
			}
			for name, v := range map[string]float64{"q": q, "delta": delta, "sigma": sigma, "target-epsilon": target} {
				if err := acctCheckFinite(name, v); err != nil {
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
			res := accountRDPResult{Q: &q, Steps: steps, Delta: delta, Conversion: conv.String()}
			if hasTarget {
				s, err := accounting.SigmaForEpsilon(q, steps, delta, target, orders, conv)
				if err != nil {
					return fmt.Errorf("solve for sigma: %w", err)
				}
				sigma = s
				res.TargetEpsilon = &target
			}
			res.Sigma = &sigma
			if res.Epsilon, res.Order, err = accounting.EpsilonFor(q, sigma, steps, delta, orders, conv); err != nil {
				return fmt.Errorf("RDP accountant: %w", err)
			}
			r2, err := accounting.SampledGaussianRDP(q, sigma, 2)
			if err != nil {
				return fmt.Errorf("order-2 RDP: %w", err)
			}
			res.RDPOrder2 = float64(steps) * r2
			mse := accounting.MSEBoundRDP(res.RDPOrder2)
			if !math.IsInf(mse, 1) {
				res.MSEBoundRDP = &mse
			}
			return emit(cmd.OutOrStdout(), asJSON, res, func(w io.Writer) {
				if hasTarget {
					fmt.Fprintf(w, "noise multiplier sigma = %.6g reaches epsilon ≤ %g\n", sigma, target)
				}
				fmt.Fprintf(w, "q = %g, sigma = %g, steps = %d: (%.4g, %g)-DP (%s conversion, order %g)\n",
					q, sigma, steps, res.Epsilon, delta, res.Conversion, res.Order)
				fmt.Fprintf(w, "order-2 RDP of the run: %.6g\n", res.RDPOrder2)
				fmt.Fprintf(w, "Theorem 1 MSE lower bound on [0,1]^d (unbiased attacker): %.6g\n", mse)
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
	addJSONFlag(cmd, &asJSON)
	return cmd
}

// runRDPSchedule is 'account rdp --schedule'.
func runRDPSchedule(cmd *cobra.Command, sched string, delta float64, ordersS, convS string, asJSON bool) error {
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
	r := accounting.NewRDP(orders)
	if err := r.ComposeSchedule(segs); err != nil {
		return fmt.Errorf("--schedule: %w", err)
	}
	res := accountRDPResult{Schedule: segs, Delta: delta, Conversion: conv.String()}
	if res.Epsilon, res.Order, err = r.Epsilon(delta, conv); err != nil {
		return fmt.Errorf("RDP accountant: %w", err)
	}
	for _, s := range segs {
		r2, err := accounting.SampledGaussianRDP(s.Q, s.Sigma, 2)
		if err != nil {
			return fmt.Errorf("order-2 RDP: %w", err)
		}
		res.RDPOrder2 += float64(s.Steps) * r2
		res.Steps += s.Steps
	}
	mse := accounting.MSEBoundRDP(res.RDPOrder2)
	if !math.IsInf(mse, 1) {
		res.MSEBoundRDP = &mse
	}
	return emit(cmd.OutOrStdout(), asJSON, res, func(w io.Writer) {
		fmt.Fprintf(w, "schedule of %d segments, %d steps: (%.4g, %g)-DP (%s conversion, order %g)\n",
			len(segs), res.Steps, res.Epsilon, delta, res.Conversion, res.Order)
		fmt.Fprintf(w, "order-2 RDP of the run: %.6g\n", res.RDPOrder2)
		fmt.Fprintf(w, "Theorem 1 MSE lower bound on [0,1]^d (unbiased attacker): %.6g\n", mse)
	})
}

// accountReRoResult is the JSON of 'account rero'.
type accountReRoResult struct {
	Q     float64 `json:"q"`
	Sigma float64 `json:"sigma"`
	Steps int     `json:"steps"`
	Seed  uint64  `json:"seed"`
	accounting.ReRoResult
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
			for name, v := range map[string]float64{"q": q, "sigma": sigma, "kappa": kappa, "confidence": conf} {
				if err := acctCheckFinite(name, v); err != nil {
					return err
				}
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
			out := accountReRoResult{Q: q, Sigma: sigma, Steps: steps, Seed: seed, ReRoResult: res}
			return emit(cmd.OutOrStdout(), asJSON, out, func(w io.Writer) {
				fmt.Fprintf(w, "q = %g, sigma = %g, steps = %d, kappa = %.6g, N = %d (seed %d)\n", q, sigma, steps, kappa, samples, seed)
				fmt.Fprintf(w, "ReRo gamma: %.6g   %.0f%% CI [%.6g, %.6g]   advantage %.6g\n",
					res.Gamma, 100*res.Confidence, res.GammaLow, res.GammaHigh, res.Advantage)
				fmt.Fprintf(w, "Monte Carlo: %.6g from ν draws (Hayes et al.'s estimator), %.6g from mixture draws\n", res.GammaNu, res.GammaMu)
				if res.GammaExact != nil {
					fmt.Fprintf(w, "gamma exact (q = 1 closed form): %.6g\n", *res.GammaExact)
				}
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
}

func newAccountKappaCmd() *cobra.Command {
	var (
		q, sigma, c, deltaF float64
		steps, n            int
		asJSON              bool
	)
	cmd := &cobra.Command{
		Use:   "kappa",
		Short: "FIL subsampling factor κ = q/(q + (1−q)e^{−ε₀}) (Guo et al. Theorem 4)",
		Long: `ε₀ = c·2·√(2 ln(1.25/δ_f))/σ is the per-step (ε₀, δ_f)-DP of the Gaussian mechanism
(replace-one sensitivity 2cC, c the clipping constant: 1 hard, ≈1.115 smooth).
δ_f is --delta-f, or 1/(T·N) from --steps and --n.`,
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
			k, err := accounting.Kappa(q, sigma, c, deltaF)
			if err != nil {
				return fmt.Errorf("kappa: %w", err)
			}
			res := accountKappaResult{Q: q, Sigma: sigma, ClipConstant: c, DeltaF: deltaF, Kappa: k}
			return emit(cmd.OutOrStdout(), asJSON, res, func(w io.Writer) {
				fmt.Fprintf(w, "kappa = %.6g (q = %g, sigma = %g, c = %g, delta_f = %.3g)\n", k, q, sigma, c, deltaF)
			})
		},
	}
	f := cmd.Flags()
	f.Float64Var(&q, "q", 0, "sampling rate in [0, 1] (required)")
	f.Float64Var(&sigma, "sigma", 0, "noise multiplier > 0 (required)")
	f.Float64Var(&c, "clip-constant", 1, "clipping constant c (1 hard clipping; ≈1.115 smooth)")
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
