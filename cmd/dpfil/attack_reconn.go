package main

import (
	"github.com/dpfil/dpfil/attack"
	"github.com/dpfil/dpfil/train"
	"github.com/spf13/cobra"
)

func newAttackReconnCmd() *cobra.Command {
	e := attack.RecoNNExperiment{Config: train.DefaultConfig(), Fixed: 99, Shadows: 200, Targets: 10, ValFraction: 0.1,
		Reconstructor: "mlp", MLP: attack.MLPOptions{Hidden: 256, Epochs: 100, Batch: 32, LR: 1e-3}}
	e.Config.Model, e.Config.Steps, e.Config.Batch, e.Config.LR, e.Config.Sigma, e.Config.FILCoords = "mlp", 100, 0, 0.5, 0.5, 20
	var quiet bool
	cmd := reportCmd(&cobra.Command{
		Use:   "reconn",
		Short: "RecoNN (Balle et al. 2022): shadow models on D₋ ∪ {z′}, a reconstructor network from released weights to z′",
		Long: `The informed adversary's learned reconstruction attack (Balle, Cherubin, Hayes 2022,
"Reconstructing Training Data with Informed Adversaries"). The adversary knows D₋ (the
first --fixed training samples), the training recipe (the train flags below; --batch 0 =
full batch) and a prior pool (the next --pool training samples). It trains --shadows
models on D₋ ∪ {z′}, z′ from the pool, with exactly that recipe, fits a reconstructor
(--reconstructor mlp: Balle et al.'s network from the standardised weights and the
one-hot label to the image; ridge: kernel ridge regression) and reconstructs each of
--targets test images z from the model trained on D₋ ∪ {z}. Reported per target: MSE,
the label-only baseline (class mean of the pool), the target's dFIL in its run with
1/dFIL (Guo et al. 2022, Theorem 2: unbiased attackers only) and Theorem 1's RDP bound
(any attacker).`,
		Args: cobra.NoArgs,
	}, func(cmd *cobra.Command, _ []string) (*attack.RecoNNReport, error) {
		e.Logf = stderrLogf(cmd, quiet)
		pr := newProgress(int64(e.ProgressTotal()), "reconn", quiet)
		defer pr.Finish()
		e.Progress = func(phase string, n int) { pr.Add(int64(n), phase) }
		return attack.RunRecoNNExperiment(cmd.Context(), e)
	})
	fs := cmd.Flags()
	addTrainConfigFlags(fs, &e.Config)
	fs.IntVar(&e.Fixed, "fixed", e.Fixed, "size of D₋, the training samples the adversary knows (the first ones of the dataset)")
	fs.IntVar(&e.Pool, "pool", 0, "prior pool: the training samples after D₋ the shadow targets are drawn from (0 = all the rest)")
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
	fs.Float64Var(&e.RidgeLambda, "ridge-lambda", e.RidgeLambda, "ridge reconstructor: penalty relative to the mean kernel diagonal (0 = chosen by leave-one-out error over 1e-4 … 1e4)")
	fs.StringVar(&e.Out, "out", "", "write reconn_targets.csv and reconn_targets.png (targets over reconstructions) here")
	addQuietFlag(cmd, &quiet)
	return cmd
}
