package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/dpfil/dpfil/attack"
	"github.com/dpfil/dpfil/data"
	"github.com/dpfil/dpfil/plot"
	"github.com/dpfil/dpfil/train"
	"github.com/spf13/cobra"
)

// attackReconnOptions are the flags of 'attack reconn' besides the training recipe.
type attackReconnOptions struct {
	fixed, pool, shadows, targets int
	valFraction                   float64
	sameInit                      bool
	reconstructor                 string
	hidden, epochs, recBatch      int
	recLR, recDecay, ridgeLambda  float64
	out                           string
	asJSON, quiet                 bool
}

func newAttackReconnCmd() *cobra.Command {
	cfg := train.DefaultConfig()
	cfg.Model, cfg.Steps, cfg.Batch, cfg.LR, cfg.Sigma, cfg.FILCoords = "mlp", 100, 0, 0.5, 0.5, 20
	o := attackReconnOptions{fixed: 99, shadows: 200, targets: 10, valFraction: 0.1, reconstructor: "mlp",
		hidden: 256, epochs: 100, recBatch: 32, recLR: 1e-3}
	cmd := &cobra.Command{
		Use:   "reconn",
		Short: "RecoNN (Balle et al. 2022): shadow models on D₋ ∪ {z′}, a reconstructor network from released weights to z′",
		Long: `The informed adversary's learned reconstruction attack (Balle, Cherubin, Hayes 2022;
the attack of seed 002 Sec. 3.2). The adversary knows D₋ (the first --fixed training
samples), the training recipe (the train flags below; --batch 0 = full batch) and a prior
pool (the next --pool training samples). It trains --shadows models on D₋ ∪ {z′}, z′ from
the pool, with exactly that recipe, fits a reconstructor (--reconstructor mlp: Balle et
al.'s network from the standardised weights and the one-hot label to the image; ridge:
kernel ridge regression) and reconstructs each of --targets test images z from the model
trained on D₋ ∪ {z}. Reported per target: MSE, the label-only baseline (class mean of the
pool), the target's dFIL in its run with 1/dFIL (Theorem 2, unbiased attackers only) and
Theorem 1's RDP bound (any attacker).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			res, err := runAttackReconn(cmd, cfg, o)
			if err != nil {
				return err
			}
			return emit(cmd.OutOrStdout(), o.asJSON, res, res.human)
		},
	}
	fs := cmd.Flags()
	addTrainConfigFlags(fs, &cfg)
	fs.IntVar(&o.fixed, "fixed", o.fixed, "size of D₋, the training samples the adversary knows (the first ones of the dataset)")
	fs.IntVar(&o.pool, "pool", 0, "prior pool: the training samples after D₋ the shadow targets are drawn from (0 = all the rest)")
	fs.IntVar(&o.shadows, "shadows", o.shadows, "shadow models to train (Balle et al. use thousands; a pool smaller than this is reused)")
	fs.IntVar(&o.targets, "targets", o.targets, "real targets: the first test images, each trained on D₋ ∪ {z} and reconstructed")
	fs.Float64Var(&o.valFraction, "val-fraction", o.valFraction, "fraction of the shadow models held out to measure the reconstructor's generalisation")
	fs.BoolVar(&o.sameInit, "same-init", false, "train every model from the same initial weights (seed 002's simplification; makes the attack much easier)")
	fs.StringVar(&o.reconstructor, "reconstructor", o.reconstructor, "mlp (Balle et al.'s network) or ridge (kernel ridge regression)")
	fs.IntVar(&o.hidden, "hidden", o.hidden, "reconstructor network: hidden width")
	fs.IntVar(&o.epochs, "rec-epochs", o.epochs, "reconstructor network: training epochs")
	fs.IntVar(&o.recBatch, "rec-batch", o.recBatch, "reconstructor network: mini-batch")
	fs.Float64Var(&o.recLR, "rec-lr", o.recLR, "reconstructor network: Adam step size")
	fs.Float64Var(&o.recDecay, "rec-decay", 0, "reconstructor network: L2 weight decay")
	fs.Float64Var(&o.ridgeLambda, "ridge-lambda", o.ridgeLambda, "ridge reconstructor: penalty relative to the mean kernel diagonal (0 = chosen by leave-one-out error over 1e-4 … 1e4)")
	fs.StringVar(&o.out, "out", "", "write reconn_targets.csv and reconn_targets.png (targets over reconstructions) here")
	fs.BoolVar(&o.quiet, "quiet", false, "no progress output on stderr")
	addJSONFlag(cmd, &o.asJSON)
	return cmd
}

// attackReconnResult is what 'attack reconn' prints.
type attackReconnResult struct {
	Config         train.Config         `json:"recipe"`
	Dataset        string               `json:"dataset"`
	Fixed          int                  `json:"fixed"`
	Pool           int                  `json:"pool"`
	SameInit       bool                 `json:"same_init"`
	Shadows        int                  `json:"shadows"`
	ShadowsTrain   int                  `json:"shadows_train"`
	ShadowsVal     int                  `json:"shadows_val"`
	Reconstructor  string               `json:"reconstructor"`
	Features       int                  `json:"features"`
	RidgeLambda    float64              `json:"ridge_lambda,omitempty"`
	TrainMSE       glmNum               `json:"reconstructor_train_mse"`
	ValMSE         glmNum               `json:"reconstructor_val_mse"`
	ValBaselineMSE glmNum               `json:"val_baseline_mse"`
	MeanMSE        glmNum               `json:"mean_mse"`
	MeanBaseline   glmNum               `json:"mean_baseline_mse"`
	Epsilon        glmNum               `json:"epsilon"`
	RDPOrder2      glmNum               `json:"rdp_order2"`
	BoundRDP       glmNum               `json:"mse_bound_rdp"`
	MedianBoundFIL glmNum               `json:"median_mse_bound_fil"`
	RDPViolations  int                  `json:"rdp_violations"`
	FILBelow       int                  `json:"targets_below_fil_bound"`
	Targets        []attackReconnTarget `json:"targets"`
	Seconds        float64              `json:"seconds"`
	Files          []string             `json:"files,omitempty"`
	Note           string               `json:"note"`
}

type attackReconnTarget struct {
	Index       int    `json:"test_index"`
	Label       int    `json:"label"`
	MSE         glmNum `json:"mse"`
	BaselineMSE glmNum `json:"baseline_mse"`
	DFIL        glmNum `json:"dfil"`
	BoundFIL    glmNum `json:"mse_bound_fil"`
	BoundRDP    glmNum `json:"mse_bound_rdp"`
}

const attackReconnNote = "MSE = ‖x̂ − x‖²/d on [0,1] pixels. mse_bound_rdp (Theorem 1) holds for every attacker in expectation; " +
	"mse_bound_fil = 1/dFIL (Theorem 2) only for unbiased ones, and RecoNN is biased (it outputs prior-like images), so it may go below it"

func (r *attackReconnResult) human(w io.Writer) {
	fmt.Fprintf(w, "RecoNN on %s: D₋ = %d samples, pool %d, recipe %s (%d steps, batch %d, σ=%g, C=%g)%s\n", r.Dataset, r.Fixed, r.Pool,
		r.Config.Model, r.Config.Steps, r.Config.Batch, r.Config.Sigma, r.Config.Clip, map[bool]string{true: ", shared init", false: ""}[r.SameInit])
	fmt.Fprintf(w, "shadows: %d (%d to fit the %s reconstructor on %d features, %d held out) in %.1fs\n", r.Shadows, r.ShadowsTrain, r.Reconstructor, r.Features, r.ShadowsVal, r.Seconds)
	fmt.Fprintf(w, "reconstructor MSE: train %.4g, held-out shadows %.4g (label-only baseline %.4g)\n", float64(r.TrainMSE), float64(r.ValMSE), float64(r.ValBaselineMSE))
	fmt.Fprintf(w, "targets: mean MSE %.4g vs label-only baseline %.4g; ε = %.4g, ε₂ = %.4g → Theorem 1 bound %.4g (%d targets below it); median 1/dFIL %.4g (%d of %d targets below it)\n",
		float64(r.MeanMSE), float64(r.MeanBaseline), float64(r.Epsilon), float64(r.RDPOrder2), float64(r.BoundRDP), r.RDPViolations, float64(r.MedianBoundFIL), r.FILBelow, len(r.Targets))
	if len(r.Files) > 0 {
		fmt.Fprintf(w, "wrote %v\n", r.Files)
	}
}

func runAttackReconn(cmd *cobra.Command, cfg train.Config, o attackReconnOptions) (*attackReconnResult, error) {
	if o.fixed < 1 || o.pool < 0 || o.targets < 1 {
		return nil, errors.New("--fixed and --targets must be ≥ 1 and --pool ≥ 0")
	}
	if cfg.Repeats != 1 {
		return nil, errors.New("--repeats must be 1: each shadow and target run trains one model")
	}
	if cfg.Batch == 0 {
		cfg.Batch = o.fixed + 1
	}
	if cfg.Sigma == 0 && cfg.TargetEpsilon == 0 {
		cfg.FILCoords, cfg.FILExact = 0, false // no noise: FIL is infinite, every bound is 0
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	logf := func(format string, args ...any) {
		if !o.quiet {
			fmt.Fprintf(cmd.ErrOrStderr(), format+"\n", args...)
		}
	}
	ds, err := data.Load(cfg.Dataset, data.Options{DataDir: cfg.DataDir, Logf: logf})
	if err != nil {
		return nil, fmt.Errorf("load dataset %s: %w", cfg.Dataset, err)
	}
	tr := ds.Train
	if ds.Test == nil || ds.Test.N == 0 {
		return nil, fmt.Errorf("dataset %s has no test part to draw the targets from", cfg.Dataset)
	}
	if o.fixed >= tr.N {
		return nil, fmt.Errorf("--fixed %d leaves no pool in the %d training samples", o.fixed, tr.N)
	}
	poolN := tr.N - o.fixed
	if o.pool > 0 {
		poolN = min(poolN, o.pool)
	}
	if o.targets > ds.Test.N {
		return nil, fmt.Errorf("--targets %d exceeds the %d test samples", o.targets, ds.Test.N)
	}
	idx := func(lo, n int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = lo + i
		}
		return out
	}
	fixed, err := tr.Select(idx(0, o.fixed))
	if err != nil {
		return nil, err
	}
	pool, err := tr.Select(idx(o.fixed, poolN))
	if err != nil {
		return nil, err
	}
	targets, err := ds.Test.Select(idx(0, o.targets))
	if err != nil {
		return nil, err
	}
	total := o.shadows + o.targets
	if o.reconstructor == "mlp" {
		total += o.epochs
	}
	pr := newProgress(int64(total), "reconn", o.quiet)
	t0 := time.Now()
	res, err := attack.RunRecoNN(cmd.Context(), attack.RecoNNOptions{Config: cfg, Fixed: fixed, Pool: pool, Targets: targets,
		Shadows: o.shadows, ValFraction: o.valFraction, SameInit: o.sameInit, Reconstructor: o.reconstructor,
		MLP:         attack.MLPOptions{Hidden: o.hidden, Epochs: o.epochs, Batch: o.recBatch, LR: o.recLR, Decay: o.recDecay},
		RidgeLambda: o.ridgeLambda, Seed: cfg.Seed,
		Progress: func(phase string, n int) { pr.Add(int64(n), phase) }, Logf: logf})
	pr.Finish()
	if err != nil {
		return nil, err
	}
	out := &attackReconnResult{Config: cfg, Dataset: cfg.Dataset, Fixed: o.fixed, Pool: poolN, SameInit: o.sameInit,
		Shadows: res.Shadows, ShadowsTrain: res.Train, ShadowsVal: res.Val, Reconstructor: res.Reconstructor, Features: res.Features, RidgeLambda: res.RidgeLambda,
		TrainMSE: glmNum(res.TrainMSE), ValMSE: glmNum(res.ValMSE), ValBaselineMSE: glmNum(res.ValBaselineMSE),
		MeanMSE: glmNum(res.MeanMSE), MeanBaseline: glmNum(res.MeanBaselineMSE), Epsilon: glmNum(res.Epsilon),
		RDPOrder2: glmNum(res.RDPOrder2), BoundRDP: glmNum(res.BoundRDP), RDPViolations: res.RDPViolations, FILBelow: res.FILBelow,
		Seconds: time.Since(t0).Seconds(), Note: attackReconnNote}
	var bounds []float64
	for k, tg := range res.Targets {
		out.Targets = append(out.Targets, attackReconnTarget{Index: k, Label: tg.Label, MSE: glmNum(tg.MSE), BaselineMSE: glmNum(tg.BaselineMSE),
			DFIL: glmNum(tg.DFIL), BoundFIL: glmNum(tg.BoundFIL), BoundRDP: glmNum(tg.BoundRDP)})
		bounds = append(bounds, tg.BoundFIL)
	}
	out.MedianBoundFIL = glmNum(medianOf(bounds))
	if o.out != "" {
		if err := os.MkdirAll(o.out, 0o755); err != nil {
			return nil, fmt.Errorf("--out: %w", err)
		}
		rows := make([][]string, len(res.Targets))
		imgs := make([][]float32, 0, 2*len(res.Targets))
		for k, tg := range res.Targets {
			rows[k] = []string{strconv.Itoa(k), strconv.Itoa(tg.Label), glmFmt(tg.MSE), glmFmt(tg.BaselineMSE), glmFmt(tg.DFIL), glmFmt(tg.BoundFIL), glmFmt(tg.BoundRDP)}
			imgs = append(imgs, targets.Image(k))
		}
		for _, tg := range res.Targets {
			imgs = append(imgs, tg.Reconstruction)
		}
		csvPath := filepath.Join(o.out, "reconn_targets.csv")
		if err := glmWriteCSV(csvPath, []string{"test_index", "label", "mse", "baseline_mse", "dfil", "mse_bound_fil", "mse_bound_rdp"}, rows); err != nil {
			return nil, err
		}
		img, err := plot.ImageGrid(imgs, targets.C, targets.H, targets.W, plot.GridOptions{Cols: len(res.Targets)})
		if err != nil {
			return nil, err
		}
		pngPath := filepath.Join(o.out, "reconn_targets.png")
		if err := plot.SavePNG(pngPath, img); err != nil {
			return nil, err
		}
		out.Files = []string{csvPath, pngPath}
	}
	return out, nil
}

func medianOf(v []float64) float64 {
	var f []float64
	for _, x := range v {
		if !math.IsNaN(x) {
			f = append(f, x)
		}
	}
	if len(f) == 0 {
		return math.NaN()
	}
	s := glmSorted(f)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
