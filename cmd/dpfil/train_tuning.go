package main

import (
	"github.com/dpfil/dpfil/train"
	"github.com/spf13/pflag"
)

// addTuningFlags registers the flags of train.TuningConfig (Edmunds 2024: public-data
// pretraining, pruning, freezing, learned noise).
func addTuningFlags(fs *pflag.FlagSet, cfg *train.Config) {
	t := &cfg.Tuning
	fs.Float64Var(&t.PretrainPublic, "pretrain-public", t.PretrainPublic, "hold out this fraction of the training set as public data and pretrain on it without privacy before DP-SGD on the rest (0 = off; Edmunds 2024)")
	fs.IntVar(&t.PretrainSteps, "pretrain-steps", t.PretrainSteps, "non-private pretraining steps on the public part (0 = 200; -1 = hold the public part out without pretraining)")
	fs.IntVar(&t.PretrainBatch, "pretrain-batch", t.PretrainBatch, "pretraining batch size (0 = --batch)")
	fs.Float64Var(&t.PretrainLR, "pretrain-lr", t.PretrainLR, "pretraining learning rate (0 = --lr)")
	fs.Float64Var(&t.PruneFraction, "prune-fraction", t.PruneFraction, "freeze this fraction of the parameters, those of smallest magnitude after pretraining (the magnitude pruning of Edmunds 2024)")
	fs.StringVar(&t.PruneMode, "prune-mode", t.PruneMode, "freeze (keep the pruned values, the thesis's choice; default) or zero (set them to 0)")
	fs.StringVar(&t.Freeze, "freeze", t.Freeze, "layers not trained: indices into the architecture's layers or tensor names (e.g. 0 or conv0,dense9.b)")
	fs.IntVar(&t.NoiseRank, "noise-rank", t.NoiseRank, "learned gradient noise: add noise along the top r directions of the public data's gradient FIM (needs --pretrain-public; 0 = isotropic noise)")
	fs.Float64Var(&t.NoisePower, "noise-power", t.NoisePower, "learned noise budget ρ: extra noise power as a fraction of the isotropic part's, water-filled over the directions (0 = 0.25)")
	fs.Float64Var(&t.NoiseBase, "noise-base", t.NoiseBase, "learned noise base β ∈ (0,1]: isotropic part β²σ²C² (ε is that of σ_eff = β·σ; 0 = 1)")
	fs.IntVar(&t.NoiseSamples, "noise-samples", t.NoiseSamples, "public samples per FIM estimate (0 = 128)")
	fs.IntVar(&t.NoiseEvery, "noise-every", t.NoiseEvery, "re-estimate the noise directions every n steps at the current parameters (0 = once)")
}
