package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/dpfil/dpfil/data"
	"github.com/dpfil/dpfil/models"
	"github.com/dpfil/dpfil/train"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// addTrainConfigFlags registers the flags of a train.Config (names: JSON key with
// '_' → '-') with the defaults of cfg.
func addTrainConfigFlags(fs *pflag.FlagSet, cfg *train.Config) {
	fs.StringVar(&cfg.Model, "model", cfg.Model, "architecture: "+strings.Join(models.ArchNames(), ", "))
	fs.StringVar(&cfg.Dataset, "dataset", cfg.Dataset, data.FlagHelp())
	fs.StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "directory holding the dataset files (looked up first)")
	fs.IntVar(&cfg.TrainSubset, "train-subset", cfg.TrainSubset, "use only the first n training samples (0 = all)")
	fs.IntVar(&cfg.Steps, "steps", cfg.Steps, "number of DP-SGD steps T (or give --epochs)")
	fs.Float64Var(&cfg.Epochs, "epochs", cfg.Epochs, "train for this many epochs instead of --steps (T = ceil(epochs·N/B))")
	fs.IntVar(&cfg.Batch, "batch", cfg.Batch, "batch size B (expected size for Poisson sampling)")
	fs.Float64Var(&cfg.LR, "lr", cfg.LR, "learning rate ρ")
	fs.Float64Var(&cfg.Momentum, "momentum", cfg.Momentum, "SGD momentum in [0, 1) (momentum SGD only: not with --optimizer adam)")
	fs.Float64Var(&cfg.WeightDecay, "weight-decay", cfg.WeightDecay, "L2 weight decay λ (g ← ḡ + λw)")
	fs.StringVar(&cfg.Optimizer, "optimizer", cfg.Optimizer, "update rule on the privatised gradient (and in pretraining): sgd (momentum SGD, the default) or adam (bias-corrected, as torch.optim.Adam; its usual --lr is ~1e-3); post-processing: ε and FIL are accounted as before")
	fs.Float64Var(&cfg.AdamBeta1, "adam-beta1", cfg.AdamBeta1, "with --optimizer adam: first-moment decay β1 in [0, 1) (default 0.9; Adam takes no --momentum)")
	fs.Float64Var(&cfg.AdamBeta2, "adam-beta2", cfg.AdamBeta2, "with --optimizer adam: second-moment decay β2 in [0, 1) (default 0.999)")
	fs.Float64Var(&cfg.AdamEps, "adam-eps", cfg.AdamEps, "with --optimizer adam: ε > 0 added to √v̂ (default 1e-8)")
	fs.Float64Var(&cfg.Sigma, "sigma", cfg.Sigma, "noise scale σ: noise N(0, σ²C²I) on the summed clipped gradients (the accountants' noise multiplier is σ/c, c the clip constant of --clip-mode)")
	fs.Float64Var(&cfg.Clip, "clip", cfg.Clip, "per-sample clipping norm C")
	fs.StringVar(&cfg.ClipMode, "clip-mode", cfg.ClipMode, "clipping: smooth (GELU, differentiable: the paper's choice for FIL) or hard")
	fs.StringVar(&cfg.ConvAlgo, "conv-algo", cfg.ConvAlgo, "conv algorithm of the per-sample clipped gradients: direct (im2col, the default, also when empty), winograd (3×3 stride-1 conv layers as Winograd F(2×2,3×3), other layers direct), winograd4 (the same as F(4×4,3×3)) or auto (per layer the cheapest of the three by the cost model); under --clip-algo ghost/auto only the layers that form per-sample gradients; not with --device cuda")
	fs.StringVar(&cfg.ClipAlgo, "clip-algo", cfg.ClipAlgo, "clipped-sum algorithm: per-sample (the default, also when empty), ghost (norms from activations and output gradients without per-sample gradients) or auto (per layer the cheaper of the two); ghost and auto need --fil-coords 0 and the CPU")
	fs.StringVar(&cfg.Sampling, "sampling", cfg.Sampling, "batches: poisson (exact accounting), uniform (fixed size B without replacement each step; replace-one accounting) or shuffle (the papers'; ε claims no amplification, the Poisson approximation is reported beside it)")
	fs.Float64Var(&cfg.Delta, "delta", cfg.Delta, "δ at which ε is reported")
	fs.StringVar(&cfg.Accountant, "accountant", cfg.Accountant, "accountant behind the reported ε: auto (the tighter of pld and rdp), pld or rdp")
	fs.Float64Var(&cfg.TargetEpsilon, "target-epsilon", cfg.TargetEpsilon, "solve for the smallest σ reaching this ε at --delta (with the chosen accountant and clip mode); replaces --sigma")
	fs.Float64Var(&cfg.FILDelta, "fil-delta", cfg.FILDelta, "failure probability δ_f of κ (0 = 1/(T·N))")
	fs.IntVar(&cfg.FILCoords, "fil-coords", cfg.FILCoords, "input coordinates k per sample and step for the FIL trace estimate (0 = FIL off)")
	fs.BoolVar(&cfg.FILExact, "fil-exact", cfg.FILExact, "exact FIL trace over all d input coordinates")
	fs.Float64Var(&cfg.FILRate, "fil-rate", cfg.FILRate, "probability a batch member's FIL is computed at a step, weighted 1/rate (0 = always)")
	fs.IntVar(&cfg.FILRefineTop, "fil-refine-top", cfg.FILRefineTop, "after training, recompute the m samples with the largest screen dFIL exactly (two-stage worst-sample estimate, like 'account fil-refine'; records the transcripts; 0 = off)")
	fs.BoolVar(&cfg.FILNormalizedInputs, "fil-normalized-inputs", cfg.FILNormalizedInputs, "take FIL w.r.t. the normalised inputs (reference code) instead of raw [0,1] pixels")
	fs.IntVar(&cfg.FILEta, "fil-eta", cfg.FILEta, "also compute η, the spectral-norm FIL (MSE ≥ 1/η²), by this many power iterations on JᵀJ per FIL member and step (0 = off; result.json reports the last iteration's relative change)")
	fs.BoolVar(&cfg.FILLabel, "fil-label", cfg.FILLabel, "also compute the FIL of each sample's label (one-hot vector; MSE bounds on reconstructing it)")
	fs.IntVar(&cfg.Repeats, "repeats", cfg.Repeats, "independent runs R; dFIL is averaged per sample")
	fs.IntVar(&cfg.EvalEvery, "eval-every", cfg.EvalEvery, "evaluate test accuracy every n steps (0 = only at the end)")
	fs.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "seed for every random draw (init, batches, FIL coordinates, noise)")
	fs.StringVar(&cfg.Device, "device", cfg.Device, "cpu or cuda (needs the GPU build bin/dpfil-cuda: make cuda, tag dpfil_cuda)")
	addTuningFlags(fs, cfg)
}

// resolveOptimizerFlags completes the optimizer settings after fs is parsed:
// --optimizer adam starts from train.Config.UseAdam (torch's β1, β2, ε and momentum
// 0, momentum SGD's default 0.5 not being Adam's), then the --adam-* and --momentum
// flags given override it (a --momentum other than 0 is then refused by
// Config.Validate rather than ignored).
func resolveOptimizerFlags(fs *pflag.FlagSet, cfg *train.Config) {
	if !cfg.IsAdam() {
		return
	}
	given := *cfg
	cfg.UseAdam()
	for name, v := range map[string][2]*float64{
		"momentum":   {&cfg.Momentum, &given.Momentum},
		"adam-beta1": {&cfg.AdamBeta1, &given.AdamBeta1},
		"adam-beta2": {&cfg.AdamBeta2, &given.AdamBeta2},
		"adam-eps":   {&cfg.AdamEps, &given.AdamEps},
	} {
		if fs.Changed(name) {
			*v[0] = *v[1]
		}
	}
}

// markResumeExclusive makes --resume exclusive with every configuration flag: a
// resumed run takes its configuration from its directory.
func markResumeExclusive(cmd *cobra.Command) {
	probe := pflag.NewFlagSet("probe", pflag.ContinueOnError)
	var c train.Config
	addTrainConfigFlags(probe, &c)
	probe.VisitAll(func(f *pflag.Flag) { cmd.MarkFlagsMutuallyExclusive("resume", f.Name) })
}

// trainProgress adapts train events to a progress report, created on the first
// event (when the number of steps is known, also for --epochs).
type trainProgress struct {
	lazyProgress
	last int
}

func (tp *trainProgress) event(e train.Event) {
	tp.once.Do(func() { tp.p = newProgress(int64(e.Steps*e.Repeats), "train", tp.quiet) })
	done := e.Repeat*e.Steps + e.Step
	msg := fmt.Sprintf("r%d step %d loss %.3f", e.Repeat+1, e.Step, e.Loss)
	if !math.IsNaN(e.TestAccuracy) {
		msg += fmt.Sprintf(" acc %.3f", e.TestAccuracy)
	}
	if e.Accountant != "" {
		msg += fmt.Sprintf(" ε(%s) %.3g", e.Accountant, e.Epsilon)
	} else {
		msg += fmt.Sprintf(" ε %.3g", e.Epsilon)
	}
	if e.DFILMax > 0 {
		msg += fmt.Sprintf(" dFIL max %.3g med %.3g", e.DFILMax, e.DFILMedian)
	}
	tp.p.Add(int64(done-tp.last), msg)
	tp.last = done
}

// runTraining runs cfg into out with a progress report and explains interruptions;
// with record (or when out holds a transcript being resumed) it also writes the
// adversary's transcript into out; with diag > 0, g_φ's per-step diagnostics into
// out/perturb-diag.
func runTraining(cmd *cobra.Command, cfg train.Config, m models.Model, out string, resume bool, ckEvery int, quiet, record bool, diag int) (*train.Result, error) {
	ctx, stop := interruptContext(cmd)
	defer stop()
	tp := &trainProgress{lazyProgress: lazyProgress{quiet: quiet}}
	logf := func(format string, args ...any) {
		switch {
		case quiet:
		case tp.p != nil:
			tp.p.Logf(format, args...) // above the bar, never on its line
		default:
			fmt.Fprintf(cmd.ErrOrStderr(), format+"\n", args...)
		}
	}
	opt := train.Options{Out: out, Resume: resume, CheckpointEvery: ckEvery, Logf: logf, Progress: tp.event, Model: m, PerturbDiag: diag}
	res, err := train.RunWithTranscript(ctx, cfg, opt, record)
	tp.finish()
	if err != nil {
		if errors.Is(err, context.Canceled) && out != "" {
			if _, serr := os.Stat(filepath.Join(out, train.CheckpointFile)); serr != nil {
				return nil, fmt.Errorf("interrupted before the run's first checkpoint (%v): nothing to resume in %s; run the command again to start over", err, out)
			}
			return nil, fmt.Errorf("interrupted; checkpoint saved in %s, continue with: dpfil train --resume %s", out, out)
		}
		return nil, err
	}
	return res, nil
}

// printResult is the human summary of a training result and where it was written.
func printResult(w io.Writer, res *train.Result, dir string) {
	res.WriteText(w)
	if dir != "" {
		fmt.Fprintf(w, "results in         %s\n", dir)
	}
}

// trainFlags are the flags of 'train' beside the configuration they fill.
type trainFlags struct {
	cfg                             train.Config
	asJSON, describe, quiet, record bool
	diag                            int
	archFile, out, resume           string
	cont                            bool // --continue: resume out if it holds this config's run
	ckEvery                         int
	models                          train.Registry // the program's registered models
}

func newTrainCmd(opts Options) *cobra.Command {
	fl := trainFlags{cfg: train.DefaultConfig(), models: opts.Models}
	cmd := &cobra.Command{
		Use:   "train",
		Short: "Train a model with DP-SGD and FIL/RDP accounting",
		Long: `Train a model with DP-SGD (Guo, Karrer, Chaudhuri & van der Maaten 2022, Algorithm 1):
per-sample gradients, smooth (default) or hard clipping, Gaussian noise N(0, σ²C²I)
on the summed clipped gradients, division by the batch size, SGD with momentum
(--optimizer adam: Adam on the same privatised gradient; ε and FIL unchanged).
The privacy report (ε at δ, the order-2 MSE bound 1/(4(e^ε₂−1)) of the paper's
Theorem 1) is that of 'dpfil account dpsgd'. FIL accounting (k sampled pixel
coordinates per sample and step) gives per-sample dFIL and the MSE bounds 1/max dFIL
and 1/median dFIL for an unbiased attacker (Theorem 2).

Writes DIR/result.json, DIR/dfil.npy (per-sample dFIL), DIR/params.npy and, while
running, DIR/checkpoint.bin. Ctrl-C stops at a step boundary after a checkpoint
(inside a g_φ refresh, which can take minutes, between two of its Adam steps, keeping
the checkpoint taken before that step);
--resume DIR continues and ends with the same result as an uninterrupted run;
--continue does the same from the configuration flags, so that one command line can
be rerun until it finishes (a checkpoint or finished run of another configuration in
the directory is refused).
A run that diverges (a non-finite gradient, parameter or loss) removes its
checkpoint, since resuming would diverge again; a run that fails before writing
anything removes the DIR it created.
--record-transcript also writes what an informed adversary sees (θ₀, every released
noisy gradient sum exactly as applied, the batches, the hyperparameters; θ_t is
regenerated from these) to DIR/transcript.bin, transcript_r<r>.bin for repeat r > 0,
and a resumed run keeps recording into them; format in docs/attacks.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runTrain(cmd, &fl) },
	}
	f := cmd.Flags()
	addTrainConfigFlags(f, &fl.cfg)
	cmd.MarkFlagsMutuallyExclusive("sigma", "target-epsilon")
	f.StringVar(&fl.out, "out", "", "run directory (default runs/<model>-<config hash>)")
	f.StringVar(&fl.resume, "resume", "", "continue the run in this directory from its checkpoint (its configuration: no configuration flags)")
	f.BoolVar(&fl.cont, "continue", false, "if the run directory (--out, or the default one) holds a checkpoint of this same configuration, continue it; if it holds this configuration's finished run, print that result; otherwise start the run (for scripts and requeued jobs that rerun one command line)")
	f.IntVar(&fl.ckEvery, "checkpoint-every", 0, "checkpoint every n steps (0 = after the first step, then every minute)")
	f.BoolVar(&fl.describe, "describe", false, "print the architecture of --model or --arch (layers, shapes, parameters, init; JSON with --json) and exit")
	f.StringVar(&fl.archFile, "arch", "", "train the architecture of this YAML/JSON file instead of --model (see 'dpfil arch layers'; input shape and classes default to the dataset's)")
	cmd.MarkFlagsMutuallyExclusive("model", "arch")
	cmd.MarkFlagsMutuallyExclusive("resume", "arch")
	cmd.MarkFlagsMutuallyExclusive("resume", "continue")
	markResumeExclusive(cmd)
	if len(opts.Models) > 0 {
		f.Lookup("model").Usage += "; registered by this program: " + strings.Join(opts.Models.Names(), ", ")
	}
	addQuietFlag(cmd, &fl.quiet)
	f.BoolVar(&fl.record, "record-transcript", false, "write the adversary's transcript (θ₀, released gradients, batches) to DIR/transcript.bin")
	f.IntVar(&fl.diag, "perturb-diag", 0, "with --perturb-net: write g_φ's per-step diagnostics to DIR/perturb-diag: per batch member the norms of its base gradient, perturbation and final gradient and their cosine, the vectors themselves for the first N members, accuracy, dFIL, ε (0 = off; format in docs/tuning.md; draw with 'dpfil plot perturb-diag')")
	addJSONFlag(cmd, &fl.asJSON)
	setGroupedUsage(cmd, trainFlagGroups())
	return cmd
}

// trainFlagGroups are the sections of 'train --help'; every flag is in exactly one
// (TestTrainFlagGroups).
func trainFlagGroups() []flagGroup {
	return []flagGroup{
		{"Model and data", []string{"model", "arch", "describe", "dataset", "data-dir", "train-subset"}},
		{"DP-SGD", []string{"steps", "epochs", "batch", "lr", "momentum", "weight-decay", "optimizer", "adam-beta1", "adam-beta2", "adam-eps", "sigma", "clip", "clip-mode", "clip-algo", "conv-algo", "sampling", "repeats", "seed"}},
		{"Privacy accounting", []string{"delta", "accountant", "target-epsilon"}},
		{"Fisher information leakage (FIL)", []string{"fil-coords", "fil-exact", "fil-rate", "fil-refine-top", "fil-delta", "fil-normalized-inputs", "fil-eta", "fil-label"}},
		{"Output and run control", []string{"out", "resume", "continue", "checkpoint-every", "eval-every", "record-transcript", "perturb-diag", "device", "json", "quiet", "help"}},
		{"Tuning (Edmunds 2024: public pretraining, pruning, learned noise, g_φ)", []string{"pretrain-public", "pretrain-steps", "pretrain-batch", "pretrain-lr", "pretrain-weight-decay",
			"prune-fraction", "prune-mode", "freeze", "noise-rank", "noise-power", "noise-base", "noise-samples", "noise-every",
			"perturb-net", "perturb-arch", "perturb-hidden", "perturb-hidden2", "perturb-l2", "perturb-lambda", "perturb-lambda-decay", "perturb-min-lambda", "perturb-steps", "perturb-epochs", "perturb-epoch-decay", "perturb-min-epochs", "perturb-batch", "perturb-lr", "perturb-wd", "perturb-every", "perturb-probes", "perturb-no-standardise", "perturb-restandardise"}},
	}
}

func runTrain(cmd *cobra.Command, fl *trainFlags) error {
	cfg, out := fl.cfg, fl.out
	if fl.describe && fl.models.Has(cfg.Model) {
		return describeRegistered(cmd, fl.models, cfg.Model, fl.asJSON)
	}
	if fl.describe {
		return describeModel(cmd, cfg, fl.archFile, fl.asJSON, stderrLogf(cmd, fl.quiet))
	}
	if fl.diag < 0 {
		return fmt.Errorf("--perturb-diag = %d must be ≥ 0 (0: off; N: keep the vectors of the first N batch members of every step)", fl.diag)
	}
	if fl.ckEvery < 0 {
		return fmt.Errorf("--checkpoint-every = %d must be ≥ 0 (0: after the first step, then every minute)", fl.ckEvery)
	}
	var (
		err error
		m   models.Model // a registered model (nil: the engine's)
	)
	if fl.resume != "" {
		if cfg, err = train.LoadRunConfig(fl.resume); err != nil {
			return fmt.Errorf("resume: %w", err)
		}
		out = fl.resume
		if cfg, m, err = fl.models.Resolve(cfg); err != nil {
			return fmt.Errorf("resume %s: %w", fl.resume, err)
		}
	} else {
		if cmd.Flags().Changed("epochs") && !cmd.Flags().Changed("steps") {
			cfg.Steps = 0
		}
		resolveOptimizerFlags(cmd.Flags(), &cfg)
		if cmd.Flags().Changed("target-epsilon") {
			if e := cfg.TargetEpsilon; !(e > 0) || math.IsInf(e, 0) {
				return fmt.Errorf("--target-epsilon = %v must be finite and > 0 (no noise multiplier reaches it; to train without noise, give --sigma 0)", e)
			}
			cfg.Sigma = 0 // solved for
		}
		if cfg, err = train.PrepareConfig(cfg, fl.archFile, stderrLogf(cmd, fl.quiet)); err != nil {
			return err
		}
		name := cfg.Model
		if cfg, m, err = fl.models.Resolve(cfg); err != nil {
			return err
		}
		if err := cfg.Validate(); err != nil {
			return err
		}
		if out == "" {
			out = filepath.Join("runs", name+"-"+cfg.Hash())
		}
	}
	res, err := runTraining(cmd, cfg, m, out, fl.resume != "" || fl.cont, fl.ckEvery, fl.quiet, fl.record, fl.diag)
	if err != nil {
		return err
	}
	return emit(cmd.OutOrStdout(), fl.asJSON, res, func(w io.Writer) { printResult(w, res, out) })
}

// addTuningFlags registers the flags of train.TuningConfig (Edmunds 2024: public-data
// pretraining, pruning, freezing, learned noise).
func addTuningFlags(fs *pflag.FlagSet, cfg *train.Config) {
	t := &cfg.Tuning
	fs.Float64Var(&t.PretrainPublic, "pretrain-public", t.PretrainPublic, "hold out this fraction of the training set as public data and pretrain on it without privacy before DP-SGD on the rest (0 = off; Edmunds 2024)")
	fs.IntVar(&t.PretrainSteps, "pretrain-steps", t.PretrainSteps, "non-private pretraining steps on the public part (0 = 200; -1 = hold the public part out without pretraining)")
	fs.IntVar(&t.PretrainBatch, "pretrain-batch", t.PretrainBatch, "pretraining batch size (0 = --batch)")
	fs.Float64Var(&t.PretrainLR, "pretrain-lr", t.PretrainLR, "pretraining learning rate (0 = --lr)")
	fs.Float64Var(&t.PretrainWD, "pretrain-weight-decay", t.PretrainWD, "pretraining weight decay λ, L2 added to the mean gradient (g + λw) before the optimizer, as Edmunds's code (thesis App. B: 10⁻⁴ for Fig. 3.1, 10⁻² for Table 3.2; 0 = none)")
	fs.Float64Var(&t.PruneFraction, "prune-fraction", t.PruneFraction, "freeze this fraction of the parameters, those of smallest magnitude after pretraining (the magnitude pruning of Edmunds 2024)")
	fs.StringVar(&t.PruneMode, "prune-mode", t.PruneMode, "freeze (keep the pruned values, the thesis's choice; default) or zero (set them to 0)")
	fs.StringVar(&t.Freeze, "freeze", t.Freeze, "layers not trained: indices into the architecture's layers or tensor names (e.g. 0 or conv0,dense9.b)")
	fs.IntVar(&t.NoiseRank, "noise-rank", t.NoiseRank, "learned gradient noise: add noise along the top r directions of the public data's gradient FIM (needs --pretrain-public; 0 = isotropic noise)")
	fs.Float64Var(&t.NoisePower, "noise-power", t.NoisePower, "learned noise budget ρ: extra noise power as a fraction of the isotropic part's, water-filled over the directions (0 = 0.25)")
	fs.Float64Var(&t.NoiseBase, "noise-base", t.NoiseBase, "learned noise base β ∈ (0,1]: isotropic part β²σ²C² (ε is that of σ_eff = β·σ; 0 = 1)")
	fs.IntVar(&t.NoiseSamples, "noise-samples", t.NoiseSamples, "public samples per FIM estimate (0 = 128)")
	fs.IntVar(&t.NoiseEvery, "noise-every", t.NoiseEvery, "re-estimate the noise directions every n steps at the current parameters (0 = once)")
	fs.BoolVar(&t.PerturbNet, "perturb-net", t.PerturbNet, "learned gradient perturbation g_φ (Edmunds 2024, eq. 2.9): a network trained on the public split, added to each private per-sample gradient before clipping (needs --pretrain-public; ε unchanged)")
	fs.StringVar(&t.PerturbArch, "perturb-arch", t.PerturbArch, "g_φ body: mlp (one hidden layer on [z; g]; default), mlp2 (thesis Table B.5: two hidden layers on [z; g]), cnn (thesis Table B.6: two convs on the image, then two Dense layers on [features; g]; 1×28×28 inputs) or constant (the thesis's BN network as its code evaluates it, one sample at a time: a learned constant vector V·GeLU(A·β + a) + c)")
	fs.IntVar(&t.PerturbHidden, "perturb-hidden", t.PerturbHidden, "g_φ (first) hidden width (0 = 32 for mlp, 512 for mlp2, 256 for cnn; constant: the width of the BN shift β, 256)")
	fs.IntVar(&t.PerturbHidden2, "perturb-hidden2", t.PerturbHidden2, "g_φ second hidden width, mlp2, cnn and constant only (0 = 256 for mlp2 and constant, --perturb-hidden for cnn)")
	fs.BoolVar(&t.PerturbL2, "perturb-l2", t.PerturbL2, "g_φ weight decay as an L2 term in Adam's gradient (the thesis code's update) instead of decoupled AdamW")
	fs.Float64Var(&t.PerturbLambda, "perturb-lambda", t.PerturbLambda, "g_φ's λ: weight of the FIL/SNR term against ‖g_φ‖² (0 = 1000, the thesis's)")
	fs.Float64Var(&t.PerturbLambdaDecay, "perturb-lambda-decay", t.PerturbLambdaDecay, "λ fewer at each later g_φ refresh: refresh r trains with max(--perturb-min-lambda, --perturb-lambda − r·decay) (0 = λ fixed; the thesis's code: 100, with --perturb-min-lambda 10)")
	fs.Float64Var(&t.PerturbMinLambda, "perturb-min-lambda", t.PerturbMinLambda, "floor of the --perturb-lambda-decay schedule, ≤ --perturb-lambda (thesis code 10)")
	fs.IntVar(&t.PerturbSteps, "perturb-steps", t.PerturbSteps, "g_φ Adam steps per refresh (0 = 10; -1 = never trained: g_φ ≡ 0, a check that equals plain DP-SGD)")
	fs.IntVar(&t.PerturbEpochs, "perturb-epochs", t.PerturbEpochs, "the thesis's g_φ schedule (App. B, Tables B.1/B.2: 200, then --perturb-epoch-decay 50, --perturb-min-epochs 20): g_φ epochs over the public split at the first refresh, each epoch ceil(public/--perturb-batch) Adam steps over a fresh permutation (0 = off: --perturb-steps mode; not with --perturb-steps)")
	fs.IntVar(&t.PerturbEpochDecay, "perturb-epoch-decay", t.PerturbEpochDecay, "epochs fewer at each later g_φ refresh under --perturb-epochs (0 = none; thesis 50)")
	fs.IntVar(&t.PerturbMinEpochs, "perturb-min-epochs", t.PerturbMinEpochs, "floor of the --perturb-epochs schedule, ≤ --perturb-epochs (0 = 1; thesis 20)")
	fs.IntVar(&t.PerturbBatch, "perturb-batch", t.PerturbBatch, "public samples per g_φ Adam step (0 = 64)")
	fs.Float64Var(&t.PerturbLR, "perturb-lr", t.PerturbLR, "g_φ Adam learning rate (0 = 0.01)")
	fs.Float64Var(&t.PerturbWD, "perturb-wd", t.PerturbWD, "g_φ AdamW weight decay (0 = 0.1, the thesis's; -1 = none)")
	fs.IntVar(&t.PerturbEvery, "perturb-every", t.PerturbEvery, "retrain g_φ every n private steps (0 = 1: every step)")
	fs.IntVar(&t.PerturbProbes, "perturb-probes", t.PerturbProbes, "Hutchinson probes per public sample for g_φ's FIL term (0 = 2)")
	fs.BoolVar(&t.PerturbNoStd, "perturb-no-standardise", t.PerturbNoStd, "feed g_φ its raw inputs instead of standardising them (not the thesis's \"No BN\" of Appendix A.4, which standardises statically as the default does: docs/tuning.md)")
	fs.BoolVar(&t.PerturbRestd, "perturb-restandardise", t.PerturbRestd, "refit g_φ's input standardisation at every refresh on the public data at the current parameters (BN's statistics, held fixed over each private step) instead of once per repeat")
}

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
// smooth clipping and FIL from k = 8 coordinates on a random 25 % of the batch
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
median training sample. Settings: σ = 1, C = 8, lr 0.1, batch 600, momentum 0.5 (Table
3 of Guo, Karrer, Chaudhuri and van der Maaten (2022), "Bounding training data
reconstruction in private (deep) learning"), 200 steps, FIL from k = 8 random pixel
coordinates for a random 25 % of the batch members at each step (weighted ×4, an
unbiased estimate; 'dpfil train --fil-coords 50 --fil-rate 1' is the paper's estimator).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := cfg.Validate(); err != nil {
				return err
			}
			res, err := runTraining(cmd, cfg, nil, out, false, 0, quiet, false, 0)
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
