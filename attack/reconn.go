package attack

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dpfil/dpfil/data"
	"github.com/dpfil/dpfil/models"
	"github.com/dpfil/dpfil/train"
)

// RecoNN is the informed adversary's learned reconstructor of Balle, Cherubin and
// Hayes (2022), "Reconstructing Training Data with Informed Adversaries" (the attack
// Edmunds 2024, Sec. 3.2 runs): the adversary knows every training example but the target
// (D₋), the training recipe and a prior pool of candidate targets. It trains shadow
// models on D₋ ∪ {z′} for many z′ from the pool with the trainer's exact recipe
// (train.Run: the same model, clipping, noise, sampling, steps; fresh randomness per
// shadow), then fits a reconstructor network from the released weights (and the
// label, public as in Edmunds 2024) to z′, and finally applies it to the real model
// trained on D₋ ∪ {z}.

// RecoNNOptions configures a RecoNN experiment.
type RecoNNOptions struct {
	// Config is the training recipe of the target and the shadows (its Dataset names
	// the data; Batch 0 = full batch |D₋| + 1). FIL is computed for the targets only.
	Config train.Config
	// Fixed is D₋, Pool the prior the shadow targets z′ are drawn from (with
	// replacement when Shadows exceeds its size), Targets the real targets z (not in
	// Pool).
	Fixed, Pool, Targets *data.Dataset
	// Public, when set, is the fixed public pool (Edmunds 2024, Table B.2: "Public
	// Samples 1000"): every shadow and target model gets it as train.Options.Public
	// (pretraining, g_φ and learned noise read it; it is not part of any training
	// set). It must be disjoint from D₋, Pool and Targets (the caller's duty;
	// RunRecoNNExperiment draws it so). Those features need it; it needs the engine
	// shadow trainer.
	Public  *data.Dataset
	Shadows int
	// ValFraction of the shadow models is held out to measure the reconstructor's
	// generalisation (default 0.1; 0 < f < 1).
	ValFraction float64
	// SameInit trains every model (shadows and targets) from the same initial weights
	// (a simplification Edmunds 2024 makes, which makes the attack much easier); otherwise each
	// run draws its own.
	SameInit bool
	// Reconstructor is "mlp" (Balle et al.'s network; default) or "ridge" (kernel ridge
	// regression, a fast linear baseline).
	Reconstructor string
	MLP           MLPOptions
	RidgeLambda   float64 // relative ridge penalty (0: chosen by leave-one-out error)
	// Trainer trains the shadows: ShadowTrainerAuto (default), ShadowTrainerBatched or
	// ShadowTrainerEngine (reconn_shadowset.go). The targets are always trained with
	// train.Run (their FIL and privacy accounting come from it).
	Trainer string
	// ShadowBlock is the number of shadows the batched trainer trains together
	// (default 32), Parallel the blocks trained at once (default GOMAXPROCS).
	ShadowBlock, Parallel int
	// Checkpoint, when set, is the file the shadow set is appended to block by block
	// and resumed from: a run that stops keeps every finished block, and a larger
	// Shadows extends the set.
	Checkpoint string
	Seed       uint64
	// Progress receives the phase ("shadow", "target", "fit") and the units done.
	Progress func(phase string, done int)
	Logf     func(string, ...any)
}

// RecoNNTarget is one real target's outcome.
type RecoNNTarget struct {
	Label int `json:"label"`
	// MSE = ‖x̂ − x‖²/d of the reconstruction; BaselineMSE that of the prior's class
	// mean ("perfect privacy" with a public label, Edmunds 2024, Table 3.5).
	MSE         float64 `json:"mse"`
	BaselineMSE float64 `json:"baseline_mse"`
	// SSIM (Wang et al. 2004, 11×11 Gaussian window, σ = 1.5; 1 = identical) of the
	// reconstruction and of each baseline: the class mean (BaselineSSIM), the pool's
	// mean image (PriorMean*: no label) and the target's nearest neighbour in D₋ ∪
	// pool by MSE (Nearest*: an oracle reference line — it uses the target to choose
	// —, Hayes et al.'s "NN baseline": below it a reconstruction is near-perfect).
	SSIM, BaselineSSIM          float64
	PriorMeanMSE, PriorMeanSSIM float64
	NearestMSE, NearestSSIM     float64
	// DFIL is the target's dFIL in its run and BoundFIL = 1/dFIL (Theorem 2: unbiased
	// attackers only); BoundRDP is Theorem 1's bound of the run (any attacker).
	DFIL     float64 `json:"dfil"`
	BoundFIL float64 `json:"bound_fil"`
	BoundRDP float64 `json:"bound_rdp"`
	// Reconstruction is x̂ (d values in [0,1]).
	Reconstruction []float32 `json:"-"`
}

// RecoNNResult is the outcome of RunRecoNN.
type RecoNNResult struct {
	Shadows, Train, Val int
	Reconstructor       string
	// TrainMSE and ValMSE are the reconstructor's MSE on its training shadows and on
	// the held-out shadows; ValBaselineMSE the class-mean baseline there.
	TrainMSE, ValMSE, ValBaselineMSE float64
	Targets                          []RecoNNTarget
	MeanMSE, MeanBaselineMSE         float64
	// Means over the targets of the SSIMs and of the other baselines (RecoNNTarget).
	MeanSSIM, MeanBaselineSSIM          float64
	MeanPriorMeanMSE, MeanPriorMeanSSIM float64
	MeanNearestMSE, MeanNearestSSIM     float64
	// Epsilon (at the recipe's δ), ε₂ and the Theorem 1 bound of the recipe (the
	// same for every run of it).
	Epsilon, RDPOrder2, BoundRDP float64
	// RDPViolations counts targets reconstructed below Theorem 1's bound (must be 0
	// up to Monte Carlo noise: the bound is on the expectation), FILBelow those below
	// 1/dFIL (allowed: RecoNN is biased).
	RDPViolations, FILBelow int
	Features                int // length of the reconstructor's input (parameters + one-hot label)
	// Shadow training: the trainer used, the shadows loaded from the checkpoint and
	// trained in this run, its wall seconds and the 1-minute load averages at its start
	// and end.
	ShadowTrainer                                 string
	ShadowsLoaded, ShadowsTrained                 int
	ShadowSeconds, ShadowLoadStart, ShadowLoadEnd float64
	ShadowBlock, ShadowParallel                   int
	RidgeLambda                                   float64 // the ridge reconstructor's relative penalty
	BestEpoch                                     int     // the reconstructor network's epoch kept (MLPOptions.BestEpoch; 0 = the last)
}

// fixedInitModel trains every run from the initial weights of one seed.
type fixedInitModel struct {
	models.Model
	seed uint64
}

func (m fixedInitModel) Init(uint64) []float32 { return m.Model.Init(m.seed) }

// fixedInitNetModel is fixedInitModel over an engine model: it keeps the engine's
// network visible, which pruning, freezing and g_φ (train's tuning) need.
type fixedInitNetModel struct {
	fixedInitModel
	net *models.Network[float32]
}

func (m fixedInitNetModel) Network() *models.Network[float32] { return m.net }

// withFixedInit returns m with its initialisation drawn from seed whatever the run's
// seed, keeping its engine network when it has one.
func withFixedInit(m models.Model, seed uint64) models.Model {
	f := fixedInitModel{Model: m, seed: seed}
	if nm, ok := m.(interface {
		Network() *models.Network[float32]
	}); ok {
		return fixedInitNetModel{fixedInitModel: f, net: nm.Network()}
	}
	return f
}

func (o *RecoNNOptions) check() error {
	if o.Fixed == nil || o.Pool == nil || o.Targets == nil || o.Fixed.N == 0 || o.Pool.N == 0 || o.Targets.N == 0 {
		return errors.New("reconn: need a non-empty fixed set D₋, prior pool and target set")
	}
	d := o.Fixed.Dim()
	if o.Pool.Dim() != d || o.Targets.Dim() != d {
		return errors.New("reconn: fixed set, pool and targets differ in shape")
	}
	if o.Shadows < 2 {
		return fmt.Errorf("reconn: need at least 2 shadow models, got %d", o.Shadows)
	}
	if o.ValFraction == 0 {
		o.ValFraction = 0.1
	}
	if !(o.ValFraction > 0 && o.ValFraction < 1) {
		return fmt.Errorf("reconn: validation fraction %v outside (0, 1)", o.ValFraction)
	}
	switch o.Reconstructor {
	case "":
		o.Reconstructor = "mlp"
	case "mlp", "ridge":
	default:
		return fmt.Errorf("reconn: reconstructor %q, want mlp or ridge", o.Reconstructor)
	}
	if o.Config.Batch == 0 {
		o.Config.Batch = o.Fixed.N + 1
	}
	if o.Config.Tuning.PretrainPublic > 0 {
		return errors.New("reconn: pretrain_public would split D₋ ∪ {z} into public and private parts (the target could leave the training set); give a fixed public pool instead (RecoNNOptions.Public, --public N)")
	}
	if o.Public != nil {
		if o.Public.N == 0 || o.Public.C != o.Fixed.C || o.Public.H != o.Fixed.H || o.Public.W != o.Fixed.W || o.Public.Classes != o.Fixed.Classes {
			return fmt.Errorf("reconn: the public pool (%d samples, %dx%dx%d, %d classes) must be non-empty and shaped as D₋ (%dx%dx%d, %d classes)",
				o.Public.N, o.Public.C, o.Public.H, o.Public.W, o.Public.Classes, o.Fixed.C, o.Fixed.H, o.Fixed.W, o.Fixed.Classes)
		}
		o.Config.Tuning.PublicExternal = true // what train.Run records for every model
	}
	if t := o.Config.Tuning; o.Public == nil && (t.PublicExternal || t.PerturbNet || t.NoiseRank > 0 || t.PretrainSteps > 0 || t.PretrainBatch > 0 || t.PretrainLR > 0) {
		return errors.New("reconn: pretraining, g_φ (perturb_net) and learned noise are trained on public data: give a fixed public pool (RecoNNOptions.Public, --public N)")
	}
	if o.Config.Repeats != 1 {
		return fmt.Errorf("reconn: the recipe must train one model per run (repeats = 1, got %d)", o.Config.Repeats)
	}
	return nil
}

// withTarget returns D₋ ∪ {z} (z last) as a split (the test part is the pool's first
// few samples, only for the runs' accuracy).
func withTarget(fixed *data.Dataset, img []float32, label int, test *data.Dataset) *data.Split {
	d := fixed.Dim()
	tr := &data.Dataset{Name: fixed.Name, Source: fixed.Source, N: fixed.N + 1, C: fixed.C, H: fixed.H, W: fixed.W,
		Classes: fixed.Classes, Images: make([]float32, (fixed.N+1)*d), Labels: make([]int, fixed.N+1), ClassNames: fixed.ClassNames}
	copy(tr.Images, fixed.Images)
	copy(tr.Images[fixed.N*d:], img)
	copy(tr.Labels, fixed.Labels)
	tr.Labels[fixed.N] = label
	tr.SHA256 = tr.Fingerprint()
	return &data.Split{Train: tr, Test: test}
}

// RunRecoNN trains the shadow models, fits the reconstructor and attacks the targets.
func RunRecoNN(ctx context.Context, o RecoNNOptions) (*RecoNNResult, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	logf := o.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	prog := func(phase string) {
		if o.Progress != nil {
			o.Progress(phase, 1)
		}
	}
	d := o.Fixed.Dim()
	classes := o.Fixed.Classes
	arch, err := models.ArchByName(o.Config.Model)
	if o.Config.Arch != nil { // an architecture file (train.Config.WithArch)
		arch, err = o.Config.Arch.Resolve(models.Shape{C: o.Fixed.C, H: o.Fixed.H, W: o.Fixed.W}, classes)
	}
	if err != nil {
		return nil, fmt.Errorf("reconn: %w", err)
	}
	base, err := models.NewCPUModel(arch)
	if err != nil {
		return nil, err
	}
	P := base.NumParams()
	F := P + classes
	rng := rand.New(rand.NewPCG(o.Seed, o.Seed^0x7265636f6e6e)) // "reconn"
	initSeed := rng.Uint64()
	test := o.Pool
	if test.N > 200 {
		if test, err = test.Head(200); err != nil {
			return nil, err
		}
	}
	runOne := func(img []float32, label int, seed uint64, fil bool) (*train.Result, error) {
		cfg := o.Config
		cfg.Seed = seed
		if !fil || cfg.Sigma == 0 && cfg.TargetEpsilon == 0 {
			cfg.FILCoords, cfg.FILExact = 0, false
		}
		if !fil {
			cfg.Accountant = train.AccountantRDP // ε is not used for shadows; RDP is fastest
		}
		var m models.Model
		if m, err = models.NewCPUModel(arch); err != nil {
			return nil, err
		}
		if o.SameInit {
			m = withFixedInit(m, initSeed)
		}
		return train.Run(ctx, cfg, train.Options{Data: withTarget(o.Fixed, img, label, test), Model: m, Public: o.Public})
	}
	features := func(res *train.Result, label int, dst []float64) {
		for i, v := range res.Repeats[0].Params {
			dst[i] = float64(v)
		}
		clear(dst[P:])
		dst[P+label] = 1
	}
	// Shadow models.
	m := o.Shadows
	set, err := trainShadowSet(ctx, &o, arch, rng, initSeed, F, func(img []float32, label int, seed uint64) ([]float32, error) {
		res, err := runOne(img, label, seed, false)
		if err != nil {
			return nil, err
		}
		return res.Repeats[0].Params, nil
	}, logf)
	if err != nil {
		return nil, err
	}
	xs := set.xs
	ys := make([]float64, m*d)
	labels := make([]int, m)
	for k, i := range set.pool {
		for j, v := range o.Pool.Image(i) {
			ys[k*d+j] = float64(v)
		}
		labels[k] = o.Pool.Labels[i]
	}
	nVal := max(1, int(math.Round(o.ValFraction*float64(m))))
	nTr := m - nVal
	if nTr < 1 {
		return nil, fmt.Errorf("reconn: %d shadow models leave none to train on after holding out %d", m, nVal)
	}
	// Class means of the pool: the label-only baseline.
	classMean := make([]float64, classes*d)
	counts := make([]float64, classes)
	for i := 0; i < o.Pool.N; i++ {
		c := o.Pool.Labels[i]
		counts[c]++
		for j, v := range o.Pool.Image(i) {
			classMean[c*d+j] += float64(v)
		}
	}
	for c := 0; c < classes; c++ {
		for j := 0; j < d; j++ {
			if counts[c] > 0 {
				classMean[c*d+j] /= counts[c]
			}
		}
	}
	logf("reconn: fitting the %s reconstructor on %d shadow models (%d features), %d held out", o.Reconstructor, nTr, F, nVal)
	var rec Reconstructor
	res := &RecoNNResult{Shadows: m, Train: nTr, Val: nVal, Reconstructor: o.Reconstructor, Features: F,
		ShadowTrainer: set.trainer, ShadowsLoaded: set.loaded, ShadowsTrained: set.trained, ShadowSeconds: set.seconds,
		ShadowLoadStart: set.loadStart, ShadowLoadEnd: set.loadEnd, ShadowBlock: set.blockSize, ShadowParallel: set.parallel}
	if o.Reconstructor == "ridge" {
		rr, err := fitRidge(xs[:nTr*F], ys[:nTr*d], nTr, F, d, o.RidgeLambda)
		if err != nil {
			return nil, err
		}
		rec, res.RidgeLambda = rr, rr.lambda
		logf("reconn: ridge penalty %g (relative)", rr.lambda)
	} else {
		vpred := make([]float64, nVal*d)
		best, bestEpoch := math.Inf(1), 0
		var bestParams [][]float64
		r, err := fitMLP(xs[:nTr*F], ys[:nTr*d], nTr, F, d, o.MLP, rng.Uint64(), func(ep int, loss float64, r *mlpReconstructor) {
			// The learning curve: training loss and held-out shadow MSE per epoch.
			r.Predict(xs[nTr*F:], nVal, vpred)
			v := 0.0
			for i, p := range vpred {
				v += (p - ys[nTr*d+i]) * (p - ys[nTr*d+i])
			}
			v /= float64(nVal * d)
			logf("reconn: reconstructor epoch %d: training MSE %.5f, held-out shadow MSE %.5f", ep, loss, v)
			if o.MLP.BestEpoch && v < best {
				best, bestEpoch, bestParams = v, ep, r.snapshot()
			}
			prog("fit")
		})
		if err != nil {
			return nil, err
		}
		if bestParams != nil {
			r.restore(bestParams)
			res.BestEpoch = bestEpoch
			logf("reconn: kept the reconstructor of epoch %d (lowest held-out shadow MSE)", bestEpoch)
		}
		rec = r
	}
	mse := func(a []float64, b []float64) float64 {
		s := 0.0
		for j := range a {
			s += (a[j] - b[j]) * (a[j] - b[j])
		}
		return s / float64(len(a))
	}
	pred := make([]float64, m*d)
	rec.Predict(xs, m, pred)
	for k := 0; k < m; k++ {
		e := mse(pred[k*d:(k+1)*d], ys[k*d:(k+1)*d])
		if k < nTr {
			res.TrainMSE += e / float64(nTr)
		} else {
			res.ValMSE += e / float64(nVal)
			res.ValBaselineMSE += mse(classMean[labels[k]*d:(labels[k]+1)*d], ys[k*d:(k+1)*d]) / float64(nVal)
		}
	}
	// The prior's mean image and the SSIM of every image pair (per channel, averaged).
	priorMean := make([]float64, d)
	for c := 0; c < classes; c++ {
		for j := 0; j < d; j++ {
			priorMean[j] += classMean[c*d+j] * counts[c] / float64(o.Pool.N)
		}
	}
	ssimW, err := NewSSIM(11, 1.5)
	if err != nil {
		return nil, err
	}
	ch, hh, ww := o.Targets.C, o.Targets.H, o.Targets.W
	ssim := func(a, b []float64) float64 {
		if hh < ssimW.Size || ww < ssimW.Size {
			return math.NaN()
		}
		v := 0.0
		for c := 0; c < ch; c++ {
			x, err := ssimW.Index(a[c*hh*ww:(c+1)*hh*ww], b[c*hh*ww:(c+1)*hh*ww], hh, ww)
			if err != nil {
				return math.NaN()
			}
			v += x / float64(ch)
		}
		return v
	}
	// nearest returns the image of D₋ ∪ pool closest to x in MSE and that MSE.
	nearest := func(x []float64) ([]float64, float64) {
		best, bestImg := math.Inf(1), []float32(nil)
		for _, ds := range []*data.Dataset{o.Fixed, o.Pool} {
			for i := 0; i < ds.N; i++ {
				img := ds.Image(i)
				e := 0.0
				for j, v := range img {
					dv := float64(v) - x[j]
					e += dv * dv
				}
				if e < best {
					best, bestImg = e, img
				}
			}
		}
		out := make([]float64, d)
		for j, v := range bestImg {
			out[j] = float64(v)
		}
		return out, best / float64(d)
	}
	// The real targets.
	res.Targets = make([]RecoNNTarget, o.Targets.N)
	feat := make([]float64, F)
	out := make([]float64, d)
	truth := make([]float64, d)
	for t := 0; t < o.Targets.N; t++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		img, lab := o.Targets.Image(t), o.Targets.Labels[t]
		run, err := runOne(img, lab, rng.Uint64(), true)
		if err != nil {
			return nil, fmt.Errorf("reconn target %d: %w", t+1, err)
		}
		features(run, lab, feat)
		rec.Predict(feat, 1, out)
		for j, v := range img {
			truth[j] = float64(v)
		}
		cm := classMean[lab*d : (lab+1)*d]
		tg := RecoNNTarget{Label: lab, MSE: mse(out, truth), BaselineMSE: mse(cm, truth), SSIM: ssim(out, truth), BaselineSSIM: ssim(cm, truth),
			PriorMeanMSE: mse(priorMean, truth), PriorMeanSSIM: ssim(priorMean, truth),
			DFIL: math.NaN(), BoundFIL: math.Inf(1), BoundRDP: run.MSEBoundRDP, Reconstruction: make([]float32, d)}
		nImg, nMSE := nearest(truth)
		tg.NearestMSE = nMSE
		tg.NearestSSIM = ssim(nImg, truth)
		for j, v := range out {
			tg.Reconstruction[j] = float32(v)
		}
		if run.DFIL != nil {
			tg.DFIL = run.DFIL[o.Fixed.N]
			tg.BoundFIL = 1 / tg.DFIL
		}
		res.Epsilon, res.RDPOrder2, res.BoundRDP = run.Epsilon, run.RDPOrder2, run.MSEBoundRDP
		if tg.MSE < tg.BoundRDP {
			res.RDPViolations++
		}
		if run.DFIL != nil && tg.MSE < tg.BoundFIL { // without FIL there is no bound to be below
			res.FILBelow++
		}
		res.MeanMSE += tg.MSE / float64(o.Targets.N)
		nt := float64(o.Targets.N)
		res.MeanBaselineMSE += tg.BaselineMSE / nt
		res.MeanSSIM += tg.SSIM / nt
		res.MeanBaselineSSIM += tg.BaselineSSIM / nt
		res.MeanPriorMeanMSE += tg.PriorMeanMSE / nt
		res.MeanPriorMeanSSIM += tg.PriorMeanSSIM / nt
		res.MeanNearestMSE += tg.NearestMSE / nt
		res.MeanNearestSSIM += tg.NearestSSIM / nt
		res.Targets[t] = tg
		prog("target")
	}
	return res, nil
}
