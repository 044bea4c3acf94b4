package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/dpfil/dpfil/attack"
	"github.com/dpfil/dpfil/data"
	"github.com/dpfil/dpfil/models"
	"github.com/dpfil/dpfil/train"
	"github.com/spf13/cobra"
)

// newAttackCmd is the 'attack' command group: the Hayes et al. attack game, its
// sweeps, the transcript replay and RecoNN.
func newAttackCmd() *cobra.Command {
	return group(&cobra.Command{
		Use:   "attack",
		Short: "Reconstruction attacks on DP-SGD vs the ReRo bound",
		Long: `Reconstruction attacks on DP-SGD transcripts by an informed adversary who knows every
training example but the target (Hayes, Mahloujifar & Balle 2023, "Bounding training
data reconstruction in DP-SGD"; Balle, Cherubin & Hayes 2022). The game, the attacks,
the bounds and measured results: docs/attacks.md.`,
	}, newAttackGameCmd(), newAttackSweepCmd(attack.SweepEpsilon), newAttackSweepCmd(attack.SweepPriorSize),
		newAttackSweepCmd(attack.SweepQ), newAttackReplayCmd(), newAttackReconnCmd())
}

// gameCmd completes c, a command that plays attack games on spec: the game's flags
// (bound to spec, its values the defaults; --epsilon and --sigma exclude each other),
// --json, and a run with one progress report per game.
func gameCmd[R any, P report[R]](c *cobra.Command, s *attack.GameSpec, play func(context.Context) (P, error)) *cobra.Command {
	var quiet bool
	reportCmd(c, func(cmd *cobra.Command, _ []string) (P, error) {
		s.UseSigma = cmd.Flags().Changed("sigma")
		pr := &gameProgress{lazyProgress: lazyProgress{quiet: quiet}}
		defer pr.finish()
		s.Progress = pr.update
		return play(cmd.Context())
	})
	f := c.Flags()
	f.Float64Var(&s.Epsilon, "epsilon", s.Epsilon, "target ε at --delta; σ is solved with the RDP accountant (ignored when --sigma is given)")
	f.Float64Var(&s.Sigma, "sigma", s.Sigma, "noise scale σ, the noise multiplier under the game's hard clipping (instead of --epsilon)")
	f.Float64Var(&s.Delta, "delta", s.Delta, "δ of the (ε, δ) guarantee")
	f.Float64Var(&s.Q, "q", s.Q, "Poisson sampling rate in (0, 1]; 1 = full batch")
	f.IntVar(&s.Steps, "steps", s.Steps, "DP-SGD steps T")
	f.IntVar(&s.PriorSize, "prior-size", s.PriorSize, "prior size K (κ = 1/K)")
	f.IntVar(&s.Known, "known", s.Known, "|D₋|, the examples the adversary knows")
	f.IntVar(&s.Trials, "trials", s.Trials, "trials (fresh prior, target and noise each)")
	f.StringVar(&s.Attack, "attack", s.Attack, "attack to report: "+strings.Join(attack.AttackNames(), ", ")+" (prior, prior-topk and loglik are always run; gradient and prior-nosub when named, prior-nosub also with --no-subtract)")
	f.StringVar(&s.Dataset, "dataset", s.Dataset, "the pool is its training split; "+data.FlagHelp())
	f.StringVar(&s.DataDir, "data-dir", s.DataDir, "directory holding the dataset's files")
	f.StringVar(&s.Model, "model", s.Model, "architecture: "+strings.Join(models.ArchNames(), ", ")+" (mlp uses the hand-derived float64 MLP, others the engine)")
	f.Float64Var(&s.Clip, "clip", s.Clip, "hard clipping norm C")
	f.IntVar(&s.Hidden, "hidden", s.Hidden, "the mlp's hidden width (0: the architecture's 10; Hayes et al. Fig. 7 uses 10, 100, 1000)")
	f.StringVar(&s.Inputs, "inputs", attack.InputsUnit, "what the mlp sees of a pixel x ∈ [0,1]: unit (x) or symmetric (2x − 1 ∈ [−1,1], the preprocessing of Hayes et al.'s public notebook; more gradients then reach C). Priors, reconstructions and their MSE stay in [0,1]")
	f.StringVar(&s.PriorKind, "prior", s.PriorKind, "where the K candidates come from: data (the pool outside D₋) or uniform (noise matched to the data's mean pairwise distance, random labels; Hayes et al. Fig. 9)")
	f.BoolVar(&s.NoSubtract, "no-subtract", s.NoSubtract, "also run prior-nosub, Algorithm 2 without subtracting the known gradients (Hayes et al. Fig. 10)")
	f.Float64Var(&s.LR, "lr", s.LR, "SGD learning rate on the mean gradient g_t/(qN) (10 reaches ≈ 80 % test accuracy with the mlp at ε = 10)")
	f.Float64SliceVar(&s.TuneLR, "tune-lr", s.TuneLR, "choose the learning rate from these (comma-separated) by the best mean test accuracy over --tune-trials tuning trials of the same game, at every swept value (Hayes et al. sweep 0.001 … 100 per ε); replaces --lr")
	f.IntVar(&s.TuneTrials, "tune-trials", s.TuneTrials, "tuning trials per --tune-lr candidate (numbered apart from the game's trials)")
	f.StringVar(&s.Out, "out", s.Out, "directory for game.json and trials.jsonl (makes the run resumable)")
	f.IntVar(&s.Workers, "workers", s.Workers, "parallel trials (0 = all cores)")
	f.IntVar(&s.ReRoSamples, "rero-samples", s.ReRoSamples, "Monte Carlo samples of the ReRo estimate (q < 1)")
	f.IntVar(&s.EvalSize, "eval-size", s.EvalSize, "test accuracy on the first N test samples (0 = the whole test split; a conv net on CIFAR-10's 10 000 takes minutes per trial)")
	f.IntVar(&s.Gradient.Iters, "grad-iters", s.Gradient.Iters, "gradient attack: Adam steps per restart")
	f.IntVar(&s.Gradient.Restarts, "grad-restarts", s.Gradient.Restarts, "gradient attack: random restarts")
	f.Float64Var(&s.Gradient.LR, "grad-lr", s.Gradient.LR, "gradient attack: Adam step size")
	f.BoolVar(&s.RecordTranscripts, "record-transcripts", s.RecordTranscripts, "write each trial's transcript to --out/transcripts/")
	addQuietFlag(c, &quiet)
	f.Uint64Var(&s.Seed, "seed", s.Seed, "seed for every random draw")
	c.MarkFlagsMutuallyExclusive("epsilon", "sigma")
	c.MarkFlagsMutuallyExclusive("lr", "tune-lr")
	return c
}

// gameProgress shows one progress report per game (a sweep plays several).
type gameProgress struct {
	lazyProgress // restarted by update, not once
	done         int
}

func (g *gameProgress) update(ev attack.GameProgress) {
	if g.p == nil || ev.Done <= g.done {
		g.finish()
		label := fmt.Sprintf("attack game ε=%.3g K=%d", ev.Epsilon, ev.PriorSize)
		if ev.Phase != "" {
			label += " " + ev.Phase
		}
		g.p = newProgress(int64(ev.Trials), label, g.quiet)
		g.done = 0
	}
	g.p.Add(int64(ev.Done-g.done), fmt.Sprintf("%s %d ok", ev.Attack, ev.Successes))
	g.done = ev.Done
}

func newAttackGameCmd() *cobra.Command {
	spec := attack.DefaultGameSpec()
	return gameCmd(&cobra.Command{
		Use:   "game",
		Short: "Play the informed-adversary reconstruction game and compare with the ReRo bound",
		Long: `Play Hayes et al.'s reconstruction game on DP-SGD: |D₋| (--known) fixed examples
from the dataset's training split, a prior of K candidates drawn from the rest for each
trial, a target uniform over it, T steps of DP-SGD with hard clipping at C, Poisson
sampling at rate q (q = 1: full batch) and noise N(0, σ²C²I), SGD on the mean gradient.
The adversary sees every θ_t and privatised gradient and knows D₋. Attacks: prior
(Algorithm 2), prior-topk (Algorithm 3), loglik (Appendix G), gradient (Eq. 1,
Appendix D); details in docs/attacks.md. The success rate comes with its 95 %
Clopper–Pearson interval, beside the ReRo bound γ (the q = 1 closed form, else Monte
Carlo) and gamma_rdp, the RDP-based bound. --out makes the run resumable.`,
		Args: cobra.NoArgs,
	}, &spec, func(ctx context.Context) (*attack.GameReport, error) { return attack.PlayGame(ctx, spec) })
}

func newAttackSweepCmd(param string) *cobra.Command {
	sw := attack.SweepSpec{Param: param, Game: attack.DefaultGameSpec()}
	sw.Game.Trials = 50 // cheap defaults for sweeps
	var use, short string
	switch param {
	case attack.SweepEpsilon:
		use, short, sw.Values = "sweep-eps", "Attack success and ReRo bound vs ε at fixed K (Hayes et al. Fig. 2/3)", []float64{1, 4, 10, 40, 100}
	case attack.SweepPriorSize:
		use, short, sw.Values = "sweep-k", "Attack success and ReRo bound vs the prior size K at fixed ε", []float64{2, 10, 100}
	case attack.SweepQ:
		use, short, sw.Values = "sweep-q", "Attack success and ReRo bound vs q at fixed ε = 4, σ re-tuned (Hayes et al. Fig. 5)", []float64{0.1, 0.25, 0.5, 1}
		sw.Game.Epsilon, sw.Game.Attack = 4, attack.AttackPriorTopK
	}
	cmd := gameCmd(&cobra.Command{
		Use:   use,
		Short: short,
		Long: short + `. Each value plays one attack game ('dpfil attack game',
whose flags apply; --values replaces the swept flag) in --out/<sweep>=<value>/,
resumable. --out/sweep.json and --out/sweep.csv hold per value and attack the success
rate with its 95 % Clopper–Pearson interval, the ReRo bound with its interval, the RDP
bound, ε and σ, for 'dpfil plot attack'. Defaults are cheap: raise --trials for tight
intervals.`,
		Args: cobra.NoArgs,
	}, &sw.Game, func(ctx context.Context) (*attack.SweepReport, error) { return attack.Sweep(ctx, sw) })
	cmd.Flags().Float64SliceVar(&sw.Values, "values", sw.Values, "comma-separated values of the swept parameter")
	markRequired(cmd, "out")
	return cmd
}

func newAttackReplayCmd() *cobra.Command {
	var dataDir string
	cmd := reportCmd(&cobra.Command{
		Use:   "replay TRANSCRIPT",
		Short: "Run the prior-aware attacks on a recorded attack-game transcript",
		Long: `Replay a transcript written by 'attack game --record-transcripts' as the informed
adversary: verify it (checksums; a file cut short by a crash is used up to its last
good record), rebuild θ_t from θ₀ and the released gradients, subtract the clipped
gradients of the known points (D₋, by dataset index, from the header) and score the
prior's candidates with the prior-aware attacks. The dataset named in the header is
loaded and its fingerprint checked.`,
		Args: cobra.ExactArgs(1),
	}, func(_ *cobra.Command, args []string) (*attack.ReplayReport, error) {
		return attack.Replay(args[0], dataDir)
	})
	cmd.Flags().StringVar(&dataDir, "data-dir", "", "directory holding the dataset's files")
	return cmd
}

func newAttackReconnCmd() *cobra.Command {
	e := attack.RecoNNExperiment{Config: train.DefaultConfig(), Fixed: 99, Shadows: 200, Targets: 10, ValFraction: 0.1,
		Reconstructor: "mlp", MLP: attack.MLPOptions{Hidden: 256, Epochs: 100, Batch: 32, LR: 1e-3}}
	e.Config.Model, e.Config.Steps, e.Config.Batch, e.Config.LR, e.Config.Sigma, e.Config.FILCoords = "mlp", 100, 0, 0.5, 0.5, 20
	var quiet bool
	var archFile string
	cmd := reportCmd(&cobra.Command{
		Use:   "reconn",
		Short: "RecoNN (Balle et al. 2022): shadow models on D₋ ∪ {z′}, a reconstructor network from released weights to z′",
		Long: `The informed adversary's learned reconstruction attack (Balle, Cherubin & Hayes 2022,
"Reconstructing Training Data with Informed Adversaries"; docs/attacks.md). The
adversary knows D₋ (the first --fixed training samples), the training recipe (the train
flags below; --batch 0 = full batch) and a prior pool (the next --pool samples). It
trains --shadows models on D₋ ∪ {z′}, z′ from the pool, fits a reconstructor from
released weights to z′ (--reconstructor) and reconstructs each of --targets test images
z from the model trained on D₋ ∪ {z}. With --public N, N further training samples
(drawn from --seed, disjoint from D₋ and the pool) are the fixed public data of every
model, so --perturb-net (Edmunds's FIM), learned noise and pretraining can run
(--pretrain-public cannot: it would split D₋ ∪ {z}). Reported per target: MSE, the label-only baseline
(class mean of the pool), the target's dFIL with 1/dFIL (Guo et al. 2022, Theorem 2:
unbiased attackers only) and Theorem 1's RDP bound (any attacker).`,
		Args: cobra.NoArgs,
	}, func(cmd *cobra.Command, _ []string) (*attack.RecoNNReport, error) {
		e.Logf = stderrLogf(cmd, quiet)
		resolveOptimizerFlags(cmd.Flags(), &e.Config)
		if archFile != "" {
			cfg, err := train.PrepareConfig(e.Config, archFile, e.Logf)
			if err != nil {
				return nil, err
			}
			e.Config = cfg
		}
		pr := newProgress(int64(e.ProgressTotal()), "reconn", quiet)
		defer pr.Finish()
		e.Progress = func(phase string, n int) { pr.Add(int64(n), phase) }
		return attack.RunRecoNNExperiment(cmd.Context(), e)
	})
	fs := cmd.Flags()
	addTrainConfigFlags(fs, &e.Config)
	fs.StringVar(&archFile, "arch", "", "train the architecture of this YAML/JSON file instead of --model (input shape and classes default to the dataset's; e.g. examples/linear-logit.yaml, one logit against a fixed zero)")
	cmd.MarkFlagsMutuallyExclusive("model", "arch")
	fs.IntVar(&e.Fixed, "fixed", e.Fixed, "size of D₋, the training samples the adversary knows (the first ones of the dataset)")
	fs.IntVar(&e.Pool, "pool", 0, "prior pool: the training samples after D₋ the shadow targets are drawn from (0 = all the rest)")
	fs.IntVar(&e.Public, "public", 0, "fixed public pool: this many training samples after D₋, drawn from --seed and disjoint from D₋ and the prior pool, given to every shadow and target model as public data for --perturb-net, learned noise and pretraining (Edmunds 2024, Table B.2: 1000; 0 = none; needs the engine shadow trainer)")
	fs.IntVar(&e.Shadows, "shadows", e.Shadows, "shadow models to train (Balle et al. use thousands; a pool smaller than this is reused)")
	fs.IntVar(&e.Targets, "targets", e.Targets, "real targets: the first test images, each trained on D₋ ∪ {z} and reconstructed")
	fs.Float64Var(&e.ValFraction, "val-fraction", e.ValFraction, "fraction of the shadow models held out to measure the reconstructor's generalisation")
	fs.BoolVar(&e.SameInit, "same-init", false, "train every model from the same initial weights (a simplification that makes the attack much easier)")
	fs.StringVar(&e.Reconstructor, "reconstructor", e.Reconstructor, "mlp (Balle et al.'s network) or ridge (kernel ridge regression)")
	fs.IntVar(&e.MLP.Hidden, "hidden", e.MLP.Hidden, "reconstructor network: hidden width")
	fs.IntVar(&e.MLP.Epochs, "rec-epochs", e.MLP.Epochs, "reconstructor network: training epochs")
	fs.IntVar(&e.MLP.Batch, "rec-batch", e.MLP.Batch, "reconstructor network: mini-batch")
	fs.Float64Var(&e.MLP.LR, "rec-lr", e.MLP.LR, "reconstructor network: Adam step size")
	fs.Float64Var(&e.MLP.Decay, "rec-decay", 0, "reconstructor network: L2 weight decay")
	fs.BoolVar(&e.MLP.BestEpoch, "rec-best-epoch", false, "reconstructor network: keep the epoch with the lowest held-out shadow MSE (early stopping)")
	fs.Float64Var(&e.RidgeLambda, "ridge-lambda", e.RidgeLambda, "ridge reconstructor: penalty relative to the mean kernel diagonal (0 = chosen by leave-one-out error over 1e-4 … 1e4)")
	fs.StringVar(&e.Trainer, "shadow-trainer", attack.ShadowTrainerAuto, "shadow trainer: batched (blocks of shadows as GEMMs; full batch, linear or mlp, --sigma given, momentum SGD, magnitude pruning allowed; no --optimizer adam, pretraining, freezing, learned noise, g_φ or --public), engine (train.Run per shadow) or auto (batched when the recipe allows)")
	fs.IntVar(&e.ShadowBlock, "shadow-block", 32, "batched trainer: shadows trained together")
	fs.IntVar(&e.Parallel, "shadow-parallel", 0, "batched trainer: blocks trained at once (0 = all cores)")
	fs.StringVar(&e.Checkpoint, "checkpoint", "", "file the shadow set is appended to and resumed from (a rerun with more --shadows extends it)")
	fs.StringVar(&e.Out, "out", "", "write reconn_targets.csv (every target) and reconn_targets.png (the first 10 targets over their reconstructions) here")
	addQuietFlag(cmd, &quiet)
	setGroupedUsage(cmd, append([]flagGroup{{"Attack (RecoNN)", []string{"arch", "fixed", "pool", "public", "shadows", "targets", "val-fraction", "same-init",
		"reconstructor", "hidden", "rec-epochs", "rec-batch", "rec-lr", "rec-decay", "rec-best-epoch", "ridge-lambda",
		"shadow-trainer", "shadow-block", "shadow-parallel", "checkpoint"}}}, trainFlagGroups()...))
	return cmd
}
