package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/dpfil/dpfil/internal/atomicfile"

	"github.com/dpfil/dpfil/attack"
	"github.com/dpfil/dpfil/data"
	"github.com/dpfil/dpfil/models"
	"github.com/spf13/cobra"
)

// newAttackCmd is the 'attack' command group: the Hayes et al. attack game and its
// sweeps.
func newAttackCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "attack",
		Short: "Reconstruction attacks on DP-SGD vs the ReRo bound",
		Long: `Reconstruction attacks on DP-SGD transcripts (Hayes, Mahloujifar, Balle 2023).

'attack game' plays the informed-adversary game: a fixed set D₋ of known examples, a
prior of K candidates drawn from the same data, a target uniform over the prior,
DP-SGD (hard clipping, full batch or Poisson sampling) on D₋ ∪ {target}, then the
attack, repeated over many trials; it reports the success rate with a 95 %
Clopper–Pearson interval next to the ReRo bound γ, the RDP-based bound and ε.
'sweep-eps', 'sweep-k' and 'sweep-q' repeat the game over ε, K or q and write JSON
and CSV for 'dpfil plot'. 'replay' runs the prior-aware attacks on a recorded
transcript file, as the adversary would, from the file and the dataset alone.`,
	}
	cmd.AddCommand(newAttackGameCmd(), newAttackSweepCmd("eps"), newAttackSweepCmd("k"), newAttackSweepCmd("q"), newAttackReplayCmd(), newAttackReconnCmd())
	return cmd
}

// attackGameOptions are the flags of one attack game.
type attackGameOptions struct {
	epsilon, sigma, delta, q, clip, lr float64
	steps, priorSize, known, trials    int
	attackName, dataset, dataDir       string
	model, out                         string
	seed                               uint64
	workers, reroSamples               int
	gradIters, gradRestarts            int
	gradLR                             float64
	transcripts, quiet                 bool
}

// defaultAttackGameOptions are the defaults of 'attack game' (the sweeps change a few).
func defaultAttackGameOptions() attackGameOptions {
	return attackGameOptions{epsilon: 10, delta: 1e-5, q: 1, steps: 100, priorSize: 10, known: 999, trials: 100,
		attackName: attack.AttackPrior, dataset: "mnist-embedded", model: "mlp", clip: 0.1, lr: 10,
		reroSamples: 1_000_000, gradIters: 300, gradRestarts: 2, gradLR: 0.01, seed: 1}
}

// addAttackGameFlags binds the game's flags to o, with o's values as the defaults.
func addAttackGameFlags(cmd *cobra.Command, o *attackGameOptions) {
	f := cmd.Flags()
	f.Float64Var(&o.epsilon, "epsilon", o.epsilon, "target ε at --delta; σ is solved with the RDP accountant (ignored when --sigma is given)")
	f.Float64Var(&o.sigma, "sigma", o.sigma, "noise multiplier σ (instead of --epsilon)")
	f.Float64Var(&o.delta, "delta", o.delta, "δ of the (ε, δ) guarantee")
	f.Float64Var(&o.q, "q", o.q, "Poisson sampling rate in (0, 1]; 1 = full batch")
	f.IntVar(&o.steps, "steps", o.steps, "DP-SGD steps T")
	f.IntVar(&o.priorSize, "prior-size", o.priorSize, "prior size K (κ = 1/K)")
	f.IntVar(&o.known, "known", o.known, "|D₋|, the examples the adversary knows")
	f.IntVar(&o.trials, "trials", o.trials, "trials (fresh prior, target and noise each)")
	f.StringVar(&o.attackName, "attack", o.attackName, "attack to report: "+strings.Join(attack.AttackNames(), ", ")+" (the prior-aware ones are always all run)")
	f.StringVar(&o.dataset, "dataset", o.dataset, "dataset (its training split is the pool): "+strings.Join(data.Names(), ", "))
	f.StringVar(&o.dataDir, "data-dir", o.dataDir, "directory holding the dataset's files")
	f.StringVar(&o.model, "model", o.model, "architecture: "+strings.Join(models.ArchNames(), ", ")+" (mlp uses the hand-derived float64 MLP, others the engine)")
	f.Float64Var(&o.clip, "clip", o.clip, "hard clipping norm C")
	f.Float64Var(&o.lr, "lr", o.lr, "SGD learning rate on the mean gradient g_t/(qN) (10 reaches ≈ 80 % test accuracy with the mlp at ε = 10)")
	f.StringVar(&o.out, "out", o.out, "directory for game.json and trials.jsonl (makes the run resumable)")
	f.IntVar(&o.workers, "workers", o.workers, "parallel trials (0 = all cores)")
	f.IntVar(&o.reroSamples, "rero-samples", o.reroSamples, "Monte Carlo samples of the ReRo estimate (q < 1)")
	f.IntVar(&o.gradIters, "grad-iters", o.gradIters, "gradient attack: Adam steps per restart")
	f.IntVar(&o.gradRestarts, "grad-restarts", o.gradRestarts, "gradient attack: random restarts")
	f.Float64Var(&o.gradLR, "grad-lr", o.gradLR, "gradient attack: Adam step size")
	f.BoolVar(&o.transcripts, "record-transcripts", o.transcripts, "write each trial's transcript to --out/transcripts/")
	f.BoolVar(&o.quiet, "quiet", o.quiet, "no progress on stderr")
	f.Uint64Var(&o.seed, "seed", o.seed, "seed for every random draw")
}

// attackGameResult is the JSON result of 'attack game'.
type attackGameResult struct {
	Attack      string     `json:"attack"`
	SuccessRate float64    `json:"success_rate"`
	SuccessCI   [2]float64 `json:"success_ci"` // 95 % Clopper–Pearson
	Successes   int        `json:"successes"`
	Trials      int        `json:"trials"`
	Gamma       float64    `json:"gamma"`
	GammaCI     [2]float64 `json:"gamma_ci"`
	GammaRDP    float64    `json:"gamma_rdp"`
	GammaExact  bool       `json:"gamma_exact"`
	// SuccessOrthogonal (q = 1) is the prior-aware attack\'s success if all candidates\' clipped gradients had norm C and were mutually orthogonal.
	SuccessOrthogonal *float64                      `json:"success_orthogonal,omitempty"`
	Kappa             float64                       `json:"kappa"`
	Epsilon           float64                       `json:"epsilon"`
	Delta             float64                       `json:"delta"`
	Sigma             float64                       `json:"sigma"`
	Q                 float64                       `json:"q"`
	Steps             int                           `json:"steps"`
	PriorSize         int                           `json:"prior_size"`
	Known             int                           `json:"known"`
	Clip              float64                       `json:"clip"`
	LR                float64                       `json:"lr"`
	Model             string                        `json:"model"`
	Dataset           string                        `json:"dataset"`
	Seed              uint64                        `json:"seed"`
	Attacks           map[string]attack.AttackStats `json:"attacks"`
	GradientMSE       *float64                      `json:"gradient_mse,omitempty"`  // mean over trials
	FinalLoss         float64                       `json:"final_loss"`              // mean training loss of D₋ at θ_T
	TestAccuracy      *float64                      `json:"test_accuracy,omitempty"` // mean over trials of θ_T\'s accuracy on the test split
	PriorCosine       float64                       `json:"prior_cosine"`            // mean cosine of non-target candidates\' clipped gradients with the target\'s
	WallSeconds       float64                       `json:"wall_seconds"`
	Out               string                        `json:"out,omitempty"`
}

func (o *attackGameOptions) validate(cmd *cobra.Command) error {
	if cmd.Flags().Changed("sigma") && cmd.Flags().Changed("epsilon") {
		return fmt.Errorf("give --epsilon or --sigma, not both")
	}
	useSigma := cmd.Flags().Changed("sigma")
	if useSigma && (!(o.sigma >= 0) || math.IsInf(o.sigma, 0)) {
		return fmt.Errorf("--sigma %v must be finite and ≥ 0", o.sigma)
	}
	if !useSigma && (!(o.epsilon > 0) || math.IsInf(o.epsilon, 0)) {
		return fmt.Errorf("--epsilon %v must be positive and finite", o.epsilon)
	}
	if !useSigma {
		o.sigma = -1 // solved later
	}
	if !(o.delta > 0 && o.delta < 1) {
		return fmt.Errorf("--delta %v outside (0, 1)", o.delta)
	}
	if !(o.q > 0 && o.q <= 1) {
		return fmt.Errorf("--q %v outside (0, 1]", o.q)
	}
	if o.priorSize < 2 {
		return fmt.Errorf("--prior-size %d < 2", o.priorSize)
	}
	if o.trials < 1 {
		return fmt.Errorf("--trials %d < 1", o.trials)
	}
	if o.steps < 1 {
		return fmt.Errorf("--steps %d < 1", o.steps)
	}
	if o.known < 0 {
		return fmt.Errorf("--known %d < 0", o.known)
	}
	ok := false
	for _, a := range attack.AttackNames() {
		ok = ok || a == o.attackName
	}
	if !ok {
		return fmt.Errorf("unknown --attack %q (known: %s)", o.attackName, strings.Join(attack.AttackNames(), ", "))
	}
	if o.transcripts && o.out == "" {
		return fmt.Errorf("--record-transcripts needs --out")
	}
	return nil
}

// attackPools are the game's pool (the training split) and the evaluation pool (the
// test split) of a dataset.
type attackPools struct {
	train, test attack.Pool
	fingerprint string // of the training split
}

func attackToPool(d *data.Dataset) attack.Pool {
	p := attack.Pool{X: make([]float64, len(d.Images)), Y: append([]int(nil), d.Labels...), D: d.Dim()}
	for i, v := range d.Images {
		p.X[i] = float64(v)
	}
	return p
}

// attackLoadPool loads the dataset's training split as the game's pool.
func attackLoadPool(name, dir string) (attack.Pool, string, error) {
	ps, err := attackLoadPools(name, dir)
	if err != nil {
		return attack.Pool{}, "", err
	}
	return ps.train, ps.fingerprint, nil
}

func attackLoadPools(name, dir string) (*attackPools, error) {
	l, err := data.LoadFiles(name, data.Options{DataDir: dir})
	if err != nil {
		return nil, fmt.Errorf("load dataset: %w", err)
	}
	ps := &attackPools{train: attackToPool(l.Train), fingerprint: l.Train.Fingerprint()}
	if l.Test != nil && l.Test.N > 0 {
		ps.test = attackToPool(l.Test)
	}
	return ps, nil
}

// attackNetFactory returns per-worker networks and the initialiser for the model.
func attackNetFactory(model string, d int) (func() attack.Net, func(uint64) []float64, error) {
	arch, err := models.ArchByName(model)
	if err != nil {
		return nil, nil, err
	}
	if arch.InputDim() != d {
		return nil, nil, fmt.Errorf("model %s takes %d inputs, the dataset has %d", model, arch.InputDim(), d)
	}
	init := func(seed uint64) []float64 { return models.InitParams(arch, seed) }
	if model == "mlp" {
		m, err := attack.NewMLP(arch.InputDim(), arch.Layers[1].Out, arch.Classes)
		if err != nil {
			return nil, nil, err
		}
		if m.NumParams() != arch.NumParams() {
			return nil, nil, fmt.Errorf("hand MLP has %d parameters, the mlp architecture %d", m.NumParams(), arch.NumParams())
		}
		return func() attack.Net { return m }, init, nil
	}
	if _, err := attack.NewEngineNet(arch); err != nil {
		return nil, nil, err
	}
	return func() attack.Net {
		e, _ := attack.NewEngineNet(arch) // validated above
		return e
	}, init, nil
}

// attackRunGame plays one game with the options (pool already loaded) and summarises it.
func attackRunGame(ctx context.Context, o attackGameOptions, pools *attackPools) (*attackGameResult, error) {
	pool, fingerprint := pools.train, pools.fingerprint
	start := time.Now()
	if o.sigma < 0 {
		s, err := attack.SigmaFor(o.epsilon, o.delta, o.q, o.steps)
		if err != nil {
			return nil, err
		}
		o.sigma = s
	}
	newNet, init, err := attackNetFactory(o.model, pool.D)
	if err != nil {
		return nil, err
	}
	cfg := attack.GameConfig{Known: o.known, PriorSize: o.priorSize, Steps: o.steps, Q: o.q, Sigma: o.sigma,
		Clip: o.clip, LR: o.lr, Seed: o.seed, Gradient: attack.GradientConfig{
			Enabled: o.attackName == attack.AttackGradient, Iters: o.gradIters, Restarts: o.gradRestarts, LR: o.gradLR}}
	g, err := attack.NewGame(cfg, pool, newNet, init)
	if err != nil {
		return nil, err
	}
	if pools.test.N() > 0 {
		if err := g.SetEval(pools.test); err != nil {
			return nil, err
		}
	}
	bounds, err := attack.ComputeBounds(o.q, o.sigma, o.steps, o.priorSize, o.delta, o.reroSamples, o.seed)
	if err != nil {
		return nil, err
	}
	prog := newProgress(int64(o.trials), fmt.Sprintf("attack game ε=%.3g K=%d", bounds.Epsilon, o.priorSize), o.quiet)
	succ := 0
	opt := attack.RunOptions{Trials: o.trials, Workers: o.workers, Out: o.out,
		Meta: map[string]any{"model": o.model, "dataset": o.dataset, "data_fingerprint": fingerprint},
		Progress: func(done int, r *attack.TrialResult) {
			if r.Success[o.attackName] {
				succ++
			}
			prog.Add(1, fmt.Sprintf("%s %d ok", o.attackName, succ))
		}}
	if o.transcripts {
		opt.Record = g.TranscriptRecorder(filepath.Join(o.out, "transcripts"), attack.TranscriptHeader{
			Model: o.model, Dataset: o.dataset, DatasetSHA256: fingerprint})
	}
	res, err := g.Run(ctx, opt)
	prog.Finish()
	if err != nil {
		return nil, err
	}
	stats, err := attack.Summarize(res)
	if err != nil {
		return nil, err
	}
	s := stats[o.attackName]
	out := &attackGameResult{Attack: o.attackName, SuccessRate: s.Rate, SuccessCI: s.CI, Successes: s.Successes, Trials: s.Trials,
		Gamma: bounds.Gamma, GammaCI: bounds.GammaCI, GammaRDP: bounds.GammaRDP, GammaExact: bounds.Exact, Kappa: bounds.Kappa,
		Epsilon: bounds.Epsilon, Delta: o.delta, Sigma: o.sigma, Q: o.q, Steps: o.steps, PriorSize: o.priorSize,
		Known: o.known, Clip: o.clip, LR: o.lr, Model: o.model, Dataset: o.dataset, Seed: o.seed, Attacks: stats, Out: o.out}
	if o.q == 1 && o.sigma > 0 {
		so, err := attack.OrthogonalSuccess(o.sigma, o.steps, o.priorSize)
		if err != nil {
			return nil, err
		}
		out.SuccessOrthogonal = &so
	}
	loss, mse, nm, acc, na, cos := 0.0, 0.0, 0, 0.0, 0, 0.0
	for _, r := range res {
		loss += r.FinalLoss / float64(len(res))
		cos += r.PriorCosine / float64(len(res))
		if r.TestAccuracy != nil {
			acc += *r.TestAccuracy
			na++
		}
		if r.GradientMSE != nil {
			mse += *r.GradientMSE
			nm++
		}
	}
	out.FinalLoss, out.PriorCosine = loss, cos
	if na > 0 {
		acc /= float64(na)
		out.TestAccuracy = &acc
	}
	if nm > 0 {
		mse /= float64(nm)
		out.GradientMSE = &mse
	}
	out.WallSeconds = time.Since(start).Seconds()
	return out, nil
}

func (r *attackGameResult) human(w io.Writer) {
	fmt.Fprintf(w, "attack game: %s on %s, |D₋| = %d, K = %d, T = %d, q = %g, C = %g, lr = %g\n",
		r.Model, r.Dataset, r.Known, r.PriorSize, r.Steps, r.Q, r.Clip, r.LR)
	fmt.Fprintf(w, "privacy:     σ = %.4g, (ε, δ) = (%.4g, %g)\n", r.Sigma, r.Epsilon, r.Delta)
	fmt.Fprintf(w, "bounds:      ReRo γ = %.4f", r.Gamma)
	if r.GammaExact {
		fmt.Fprint(w, " (q = 1 closed form)")
	} else {
		fmt.Fprintf(w, " (Monte Carlo, 95 %% CI [%.4f, %.4f])", r.GammaCI[0], r.GammaCI[1])
	}
	fmt.Fprintf(w, ", RDP-ReRo γ = %.4f, prior κ = %.4f\n", r.GammaRDP, r.Kappa)
	if r.SuccessOrthogonal != nil {
		fmt.Fprintf(w, "reference:   prior-aware success with orthogonal clipped gradients %.4f\n", *r.SuccessOrthogonal)
	}
	names := make([]string, 0, len(r.Attacks))
	for a := range r.Attacks {
		names = append(names, a)
	}
	sort.Strings(names)
	for _, a := range names {
		s := r.Attacks[a]
		mark := ""
		if a == r.Attack {
			mark = "  ←"
		}
		fmt.Fprintf(w, "  %-11s success %.4f  95 %% CI [%.4f, %.4f]  (%d/%d)%s\n", a, s.Rate, s.CI[0], s.CI[1], s.Successes, s.Trials, mark)
	}
	if r.GradientMSE != nil {
		fmt.Fprintf(w, "gradient attack mean MSE %.4f\n", *r.GradientMSE)
	}
	fmt.Fprintf(w, "final training loss %.4f", r.FinalLoss)
	if r.TestAccuracy != nil {
		fmt.Fprintf(w, ", test accuracy %.4f", *r.TestAccuracy)
	}
	fmt.Fprintf(w, ", mean prior gradient cosine %.3f, %.1f s\n", r.PriorCosine, r.WallSeconds)
}

func newAttackGameCmd() *cobra.Command {
	o := defaultAttackGameOptions()
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "game",
		Short: "Play the informed-adversary reconstruction game and compare with the ReRo bound",
		Long: `Play Hayes et al.'s reconstruction game on DP-SGD: |D₋| (--known) fixed examples
from the dataset's training split, a prior of K candidates drawn from the rest for each
trial, a target uniform over it, T steps of DP-SGD with hard clipping at C, Poisson
sampling at rate q (q = 1: full batch) and noise N(0, σ²C²I), SGD on the mean gradient.
The adversary sees every θ_t and privatised gradient, knows D₋ (and, for q < 1, which
known points were in each batch) and subtracts their clipped gradients.

Attacks: prior (Algorithm 2), prior-topk (Algorithm 3: top ⌈qT⌉ terms), loglik
(Appendix G, with the sign of ‖ḡ_t‖² corrected), gradient (Eq. 1 by projected Adam,
success = the reconstruction's nearest prior point is the target, Appendix D).
The success interval is 95 % Clopper–Pearson. The ReRo bound γ is the q = 1 closed
form or the Monte Carlo blow-up estimate (q < 1); gamma_rdp is the RDP-based bound.
With --out the run is resumable: finished trials are kept in --out/trials.jsonl.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(cmd); err != nil {
				return err
			}
			pools, err := attackLoadPools(o.dataset, o.dataDir)
			if err != nil {
				return err
			}
			r, err := attackRunGame(cmd.Context(), o, pools)
			if err != nil {
				return err
			}
			return emit(cmd.OutOrStdout(), asJSON, r, r.human)
		},
	}
	addAttackGameFlags(cmd, &o)
	addJSONFlag(cmd, &asJSON)
	return cmd
}

// attackSweepHeader names the columns of a sweep CSV: one row per (value, attack).
func attackSweepHeader() []string {
	return []string{"sweep", "value", "attack", "success_rate", "ci_low", "ci_high", "successes", "trials",
		"gamma", "gamma_low", "gamma_high", "gamma_rdp", "kappa", "epsilon", "sigma", "q", "steps", "prior_size", "success_orthogonal"}
}

// attackSweepResult is the JSON result of the sweep commands.
type attackSweepResult struct {
	Sweep   string              `json:"sweep"`
	Values  []float64           `json:"values"`
	Results []*attackGameResult `json:"results"`
	JSON    string              `json:"json"`
	CSV     string              `json:"csv"`
}

func attackParseValues(s string, integer bool) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("bad value %q in --values", f)
		}
		if integer && v != math.Trunc(v) {
			return nil, fmt.Errorf("--values for K must be integers, got %q", f)
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--values is empty")
	}
	return out, nil
}

func newAttackSweepCmd(kind string) *cobra.Command {
	o := defaultAttackGameOptions()
	o.trials = 50 // cheap defaults for sweeps
	if kind == "q" {
		o.epsilon, o.attackName = 4, attack.AttackPriorTopK
	}
	var asJSON bool
	var values string
	use, short, defVals := "", "", ""
	switch kind {
	case "eps":
		use, short, defVals = "sweep-eps", "Attack success and ReRo bound vs ε at fixed K (Hayes et al. Fig. 2/3)", "1,4,10,40,100"
	case "k":
		use, short, defVals = "sweep-k", "Attack success and ReRo bound vs the prior size K at fixed ε", "2,10,100"
	case "q":
		use, short, defVals = "sweep-q", "Attack success and ReRo bound vs q at fixed ε = 4, σ re-tuned (Hayes et al. Fig. 5)", "0.1,0.25,0.5,1"
	}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Long: short + `.

Each value plays one attack game (see 'dpfil attack game', whose flags apply; the swept
flag is replaced by --values) in --out/<sweep>=<value>/, resumable. The results go to
--out/sweep.json and --out/sweep.csv (one row per value and attack, with the success
rate, its 95 % Clopper–Pearson interval, the ReRo bound with its interval, the RDP
bound, ε and σ) for 'dpfil plot'. Defaults are cheap (few trials); raise --trials for
tight intervals.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.out == "" {
				return fmt.Errorf("%s needs --out", use)
			}
			vals, err := attackParseValues(values, kind == "k")
			if err != nil {
				return err
			}
			if err := o.validate(cmd); err != nil {
				return err
			}
			if kind == "eps" && cmd.Flags().Changed("sigma") {
				return fmt.Errorf("sweep-eps sweeps ε: --sigma is not allowed")
			}
			pools, err := attackLoadPools(o.dataset, o.dataDir)
			if err != nil {
				return err
			}
			sr := &attackSweepResult{Sweep: kind, Values: vals, JSON: filepath.Join(o.out, "sweep.json"), CSV: filepath.Join(o.out, "sweep.csv")}
			for _, v := range vals {
				oo := o
				switch kind {
				case "eps":
					if !(v > 0) {
						return fmt.Errorf("ε = %v must be positive", v)
					}
					oo.epsilon, oo.sigma = v, -1
				case "k":
					if v < 2 {
						return fmt.Errorf("K = %v < 2", v)
					}
					oo.priorSize = int(v)
				case "q":
					if !(v > 0 && v <= 1) {
						return fmt.Errorf("q = %v outside (0, 1]", v)
					}
					oo.q = v
				}
				oo.out = filepath.Join(o.out, fmt.Sprintf("%s=%s", kind, strconv.FormatFloat(v, 'g', -1, 64)))
				r, err := attackRunGame(cmd.Context(), oo, pools)
				if err != nil {
					return fmt.Errorf("%s = %v: %w", kind, v, err)
				}
				sr.Results = append(sr.Results, r)
			}
			if err := attackWriteSweep(sr); err != nil {
				return err
			}
			return emit(cmd.OutOrStdout(), asJSON, sr, func(w io.Writer) {
				fmt.Fprintf(w, "%-8s %-11s %-8s %-19s %-8s %-8s %-8s %-8s\n", kind, "attack", "success", "95% CI", "gamma", "gammaRDP", "epsilon", "sigma")
				for i, r := range sr.Results {
					s := r.Attacks[r.Attack]
					fmt.Fprintf(w, "%-8g %-11s %-8.4f [%.4f, %.4f] %-8.4f %-8.4f %-8.4g %-8.4g\n", vals[i], r.Attack, s.Rate, s.CI[0], s.CI[1], r.Gamma, r.GammaRDP, r.Epsilon, r.Sigma)
				}
				fmt.Fprintf(w, "wrote %s and %s\n", sr.JSON, sr.CSV)
			})
		},
	}
	addAttackGameFlags(cmd, &o)
	addJSONFlag(cmd, &asJSON)
	cmd.Flags().StringVar(&values, "values", defVals, "comma-separated values of the swept parameter")
	return cmd
}

// attackWriteSweep writes sweep.json and sweep.csv atomically.
func attackWriteSweep(sr *attackSweepResult) error {
	js, err := json.MarshalIndent(sr, "", "  ")
	if err != nil {
		return fmt.Errorf("encode sweep: %w", err)
	}
	if err := attackWriteFile(sr.JSON, append(js, '\n')); err != nil {
		return err
	}
	var b strings.Builder
	w := csv.NewWriter(&b)
	_ = w.Write(attackSweepHeader())
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 8, 64) }
	for i, r := range sr.Results {
		names := make([]string, 0, len(r.Attacks))
		for a := range r.Attacks {
			names = append(names, a)
		}
		sort.Strings(names)
		so := ""
		if r.SuccessOrthogonal != nil {
			so = f(*r.SuccessOrthogonal)
		}
		for _, a := range names {
			s := r.Attacks[a]
			_ = w.Write([]string{sr.Sweep, f(sr.Values[i]), a, f(s.Rate), f(s.CI[0]), f(s.CI[1]), strconv.Itoa(s.Successes), strconv.Itoa(s.Trials),
				f(r.Gamma), f(r.GammaCI[0]), f(r.GammaCI[1]), f(r.GammaRDP), f(r.Kappa), f(r.Epsilon), f(r.Sigma), f(r.Q), strconv.Itoa(r.Steps), strconv.Itoa(r.PriorSize), so})
		}
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return fmt.Errorf("encode sweep CSV: %w", err)
	}
	return attackWriteFile(sr.CSV, []byte(b.String()))
}

func attackWriteFile(path string, b []byte) error {
	return atomicfile.WriteFile(path, b)
}

// attackReplayResult is the JSON result of 'attack replay'.
type attackReplayResult struct {
	Transcript string         `json:"transcript"`
	Complete   bool           `json:"complete"` // false: recovered from a crashed write
	Steps      int            `json:"steps"`
	Prior      []int          `json:"prior"`
	Guess      map[string]int `json:"guess"`       // per attack: guessed position in the prior
	GuessIndex map[string]int `json:"guess_index"` // per attack: guessed dataset index
}

func newAttackReplayCmd() *cobra.Command {
	var asJSON bool
	var dataDir string
	cmd := &cobra.Command{
		Use:   "replay TRANSCRIPT",
		Short: "Run the prior-aware attacks on a recorded attack-game transcript",
		Long: `Replay a transcript written by 'attack game --record-transcripts' as the informed
adversary: verify it (checksums; a file cut short by a crash is used up to its last
good record), rebuild θ_t from θ₀ and the released gradients, subtract the clipped
gradients of the known points (D₋, by dataset index, from the header) and score the
prior's candidates with the prior-aware attacks. The dataset named in the header is
loaded and its fingerprint checked.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			tr, err := attack.OpenTranscript(args[0])
			if err != nil {
				return err
			}
			h := tr.Header
			if len(h.Prior) < 2 {
				return fmt.Errorf("transcript %s has no prior to attack", args[0])
			}
			if len(tr.Steps) == 0 {
				return fmt.Errorf("transcript %s holds no steps", args[0])
			}
			pool, fp, err := attackLoadPool(h.Dataset, dataDir)
			if err != nil {
				return err
			}
			if h.DatasetSHA256 != "" && h.DatasetSHA256 != fp {
				return fmt.Errorf("dataset %s has fingerprint %s, the transcript was recorded on %s", h.Dataset, fp, h.DatasetSHA256)
			}
			newNet, _, err := attackNetFactory(h.Model, pool.D)
			if err != nil {
				return err
			}
			net := newNet()
			gather := func(idx []int) ([]float64, []int, error) {
				var x []float64
				var y []int
				for _, i := range idx {
					if i < 0 || i >= pool.N() {
						return nil, nil, fmt.Errorf("transcript names sample %d, the dataset has %d", i, pool.N())
					}
					x = append(x, pool.Image(i)...)
					y = append(y, pool.Y[i])
				}
				return x, y, nil
			}
			kx, ky, err := gather(h.Known)
			if err != nil {
				return err
			}
			obs, err := tr.Observations(net, kx, ky)
			if err != nil {
				return err
			}
			px, py, err := gather(h.Prior)
			if err != nil {
				return err
			}
			sc, err := attack.PriorScores(net, obs, px, py, h.Clip)
			if err != nil {
				return err
			}
			guess, err := attack.Decide(sc, h.Q, h.Sigma)
			if err != nil {
				return err
			}
			r := attackReplayResult{Transcript: args[0], Complete: tr.Complete, Steps: len(tr.Steps), Prior: h.Prior,
				Guess: guess, GuessIndex: map[string]int{}}
			for a, g := range guess {
				r.GuessIndex[a] = h.Prior[g]
			}
			return emit(cmd.OutOrStdout(), asJSON, r, func(w io.Writer) {
				state := "complete"
				if !r.Complete {
					state = "recovered after a crash"
				}
				fmt.Fprintf(w, "transcript %s: %d steps (%s), %s on %s, q = %g, σ = %.4g, C = %g\n", r.Transcript, r.Steps, state, h.Model, h.Dataset, h.Q, h.Sigma, h.Clip)
				for _, a := range []string{attack.AttackPrior, attack.AttackPriorTopK, attack.AttackLogLik} {
					fmt.Fprintf(w, "  %-11s guesses prior[%d] = sample %d\n", a, r.Guess[a], r.GuessIndex[a])
				}
			})
		},
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", "", "directory holding the dataset's files")
	addJSONFlag(cmd, &asJSON)
	return cmd
}
