package attack

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/dpfil/dpfil/data"
	"github.com/dpfil/dpfil/internal/atomicfile"
	"github.com/dpfil/dpfil/internal/jsonfloat"
	"github.com/dpfil/dpfil/internal/stats"
	"github.com/dpfil/dpfil/plot"
	"github.com/dpfil/dpfil/train"
)

// RecoNNExperiment is RecoNN (Balle, Cherubin and Hayes 2022) on a dataset's own
// splits: D₋ is the first Fixed training samples, the prior pool the next Pool ones
// (0 = all the rest), the real targets the first Targets test samples. With Public >
// 0, Public training samples after D₋, drawn from the seed, are the fixed public pool
// (RecoNNOptions.Public) and the prior pool is the first Pool of the others
// (recoNNIndices).
type RecoNNExperiment struct {
	// Config is the training recipe (its Dataset and DataDir name the data; Batch 0 =
	// full batch |D₋| + 1; Seed seeds the experiment).
	Config               train.Config
	Fixed, Pool, Targets int
	Public               int // size of the fixed public pool (0 = none)
	Shadows              int
	ValFraction          float64
	SameInit             bool
	Reconstructor        string // "mlp" or "ridge"
	MLP                  MLPOptions
	RidgeLambda          float64
	// Trainer, ShadowBlock, Parallel and Checkpoint: as in RecoNNOptions.
	Trainer               string
	ShadowBlock, Parallel int
	Checkpoint            string
	Out                   string // when set: reconn_targets.csv and reconn_targets.png go here
	Progress              func(phase string, done int)
	Logf                  func(string, ...any)
}

// ProgressTotal is the number of units RunRecoNNExperiment reports through Progress:
// one per shadow model, per target and (mlp reconstructor) per training epoch.
func (e RecoNNExperiment) ProgressTotal() int {
	n := e.Shadows + e.Targets
	if e.Reconstructor == "mlp" || e.Reconstructor == "" {
		n += e.MLP.Epochs
	}
	return n
}

// RecoNNReport is the outcome of RunRecoNNExperiment. MSE = ‖x̂ − x‖²/d on [0,1] pixels.
type RecoNNReport struct {
	Config  train.Config `json:"recipe"`
	Dataset string       `json:"dataset"`
	Fixed   int          `json:"fixed"`
	Pool    int          `json:"pool"`
	// Public is the size of the fixed public pool every model was given
	// (train.Options.Public; 0 = none), PublicDisjoint that its indices were checked
	// disjoint from D₋ and the prior pool (the targets are test samples),
	// PublicSHA256 its content fingerprint.
	Public         int              `json:"public,omitempty"`
	PublicDisjoint bool             `json:"public_disjoint,omitempty"`
	PublicSHA256   string           `json:"public_sha256,omitempty"`
	SameInit       bool             `json:"same_init"`
	Shadows        int              `json:"shadows"`
	ShadowsTrain   int              `json:"shadows_train"`
	ShadowsVal     int              `json:"shadows_val"`
	Reconstructor  string           `json:"reconstructor"`
	Features       int              `json:"features"`
	Shadow         RecoNNShadowCost `json:"shadow_training"`
	RidgeLambda    float64          `json:"ridge_lambda,omitempty"`
	BestEpoch      int              `json:"reconstructor_best_epoch,omitempty"` // the epoch kept by --rec-best-epoch
	TrainMSE       jsonfloat.Float  `json:"reconstructor_train_mse"`
	ValMSE         jsonfloat.Float  `json:"reconstructor_val_mse"`
	ValBaselineMSE jsonfloat.Float  `json:"val_baseline_mse"`
	MeanMSE        jsonfloat.Float  `json:"mean_mse"`
	MeanBaseline   jsonfloat.Float  `json:"mean_baseline_mse"`
	// Means over the targets: SSIM of the reconstructions and of the class-mean
	// baseline, MSE and SSIM of the prior's mean image and of the nearest neighbour in
	// D₋ ∪ pool (an oracle reference line).
	MeanSSIM          jsonfloat.Float     `json:"mean_ssim"`
	MeanBaselineSSIM  jsonfloat.Float     `json:"mean_baseline_ssim"`
	MeanPriorMeanMSE  jsonfloat.Float     `json:"mean_prior_mean_mse"`
	MeanPriorMeanSSIM jsonfloat.Float     `json:"mean_prior_mean_ssim"`
	MeanNearestMSE    jsonfloat.Float     `json:"mean_nearest_mse"`
	MeanNearestSSIM   jsonfloat.Float     `json:"mean_nearest_ssim"`
	Epsilon           jsonfloat.Inf       `json:"epsilon"`
	RDPOrder2         jsonfloat.Inf       `json:"rdp_order2"`
	BoundRDP          jsonfloat.Inf       `json:"mse_bound_rdp"`
	MedianBoundFIL    jsonfloat.Inf       `json:"median_mse_bound_fil"` // median of 1/dFIL over the targets with a dFIL
	RDPViolations     int                 `json:"rdp_violations"`
	FILBelow          int                 `json:"targets_below_fil_bound"`
	Targets           []RecoNNTargetEntry `json:"targets"`
	Seconds           float64             `json:"seconds"`
	Files             []string            `json:"files,omitempty"`
	Note              string              `json:"note"`
}

// RecoNNShadowCost is the shadow training of a run: the experiment's cost.
// ShadowsPerSecond counts the shadows trained in this run (not those loaded from the
// checkpoint) over its wall time, at the 1-minute load averages of its start and end
// (-1: not readable).
type RecoNNShadowCost struct {
	Trainer          string          `json:"trainer"`
	Loaded           int             `json:"loaded"`
	Trained          int             `json:"trained"`
	Seconds          float64         `json:"seconds"`
	ShadowsPerSecond jsonfloat.Float `json:"shadows_per_second"`
	LoadAvgStart     float64         `json:"load_avg_start"`
	LoadAvgEnd       float64         `json:"load_avg_end"`
	Block            int             `json:"block,omitempty"`
	Parallel         int             `json:"parallel,omitempty"`
	Checkpoint       string          `json:"checkpoint,omitempty"`
}

// RecoNNTargetEntry is one target of a RecoNNReport.
type RecoNNTargetEntry struct {
	Index         int             `json:"test_index"`
	Label         int             `json:"label"`
	MSE           jsonfloat.Float `json:"mse"`
	BaselineMSE   jsonfloat.Float `json:"baseline_mse"`
	SSIM          jsonfloat.Float `json:"ssim"`
	BaselineSSIM  jsonfloat.Float `json:"baseline_ssim"`
	PriorMeanMSE  jsonfloat.Float `json:"prior_mean_mse"`
	PriorMeanSSIM jsonfloat.Float `json:"prior_mean_ssim"`
	NearestMSE    jsonfloat.Float `json:"nearest_mse"`
	NearestSSIM   jsonfloat.Float `json:"nearest_ssim"`
	DFIL          jsonfloat.Float `json:"dfil"`
	BoundFIL      jsonfloat.Inf   `json:"mse_bound_fil"`
	BoundRDP      jsonfloat.Inf   `json:"mse_bound_rdp"`
}

const recoNNNote = "MSE = ‖x̂ − x‖²/d on [0,1] pixels; SSIM (Wang et al. 2004, 11×11 Gaussian window σ = 1.5, K1 = 0.01, K2 = 0.03, L = 1, mean over the valid windows; 1 = identical). " +
	"Baselines: baseline_* = the pool's class mean (the label is public), prior_mean_* = the pool's mean image, nearest_* = the target's nearest neighbour in D₋ ∪ pool by MSE (an oracle reference line: it uses the target). mse_bound_rdp (Theorem 1) holds for every attacker in expectation; " +
	"mse_bound_fil = 1/dFIL (Theorem 2) only for unbiased ones, and RecoNN is biased (it outputs prior-like images), so it may go below it"

// recoNNSplits are D₋, the pool, the targets and the public pool (nil: none) of an
// experiment; disjoint says the public pool's indices were checked disjoint from
// D₋'s and the pool's.
type recoNNSplits struct {
	fixed, pool, targets, public *data.Dataset
	disjoint                     bool
}

// recoNNIndices returns the training-set indices of D₋ (the first fixed), the public
// pool (public of the samples after D₋, drawn from seed) and the prior pool (the
// first pool of the remaining ones in order; 0 = all of them). Without a public pool
// a pool larger than the rest is cut to the rest; with one, fixed + public + pool
// must fit the nTrain samples.
func recoNNIndices(nTrain, fixed, pool, public int, seed uint64) (fixedIdx, poolIdx, publicIdx []int, err error) {
	if fixed < 1 || pool < 0 || public < 0 {
		return nil, nil, nil, errors.New("reconn: the known set needs ≥ 1 sample and the pool and the public pool ≥ 0")
	}
	if fixed >= nTrain {
		return nil, nil, nil, fmt.Errorf("reconn: a known set of %d leaves no pool in the %d training samples", fixed, nTrain)
	}
	rest := nTrain - fixed - public
	if rest < 1 {
		return nil, nil, nil, fmt.Errorf("reconn: D₋ (%d) and the public pool (%d) leave no prior pool in the %d training samples", fixed, public, nTrain)
	}
	if public > 0 && pool > rest {
		return nil, nil, nil, fmt.Errorf("reconn: D₋ (%d) + public pool (%d) + prior pool (%d) = %d exceed the %d training samples", fixed, public, pool, fixed+public+pool, nTrain)
	}
	poolN := rest
	if pool > 0 {
		poolN = min(rest, pool)
	}
	fixedIdx = indexRange(0, fixed)
	if public == 0 {
		return fixedIdx, indexRange(fixed, poolN), nil, nil
	}
	perm := rand.New(rand.NewPCG(seed, seed^0x7075626c6963)).Perm(nTrain - fixed) // "public"
	publicIdx = make([]int, public)
	for k, i := range perm[:public] {
		publicIdx[k] = fixed + i
	}
	others := make([]int, 0, nTrain-fixed-public)
	for _, i := range perm[public:] {
		others = append(others, fixed+i)
	}
	slices.Sort(publicIdx)
	slices.Sort(others)
	return fixedIdx, others[:poolN], publicIdx, nil
}

// disjointIndices reports whether no index is in two of the sets.
func disjointIndices(sets ...[]int) bool {
	seen := map[int]bool{}
	for _, s := range sets {
		for _, i := range s {
			if seen[i] {
				return false
			}
			seen[i] = true
		}
	}
	return true
}

func (e *RecoNNExperiment) splits() (*recoNNSplits, error) {
	if e.Fixed < 1 || e.Pool < 0 || e.Targets < 1 || e.Public < 0 {
		return nil, errors.New("reconn: the known set and the targets need ≥ 1 sample and the pool and the public pool ≥ 0")
	}
	ds, err := data.Load(e.Config.Dataset, data.Options{DataDir: e.Config.DataDir, Logf: e.Logf})
	if err != nil {
		return nil, fmt.Errorf("load dataset %s: %w", e.Config.Dataset, err)
	}
	tr := ds.Train
	if ds.Test == nil || ds.Test.N == 0 {
		return nil, fmt.Errorf("dataset %s has no test part to draw the targets from", e.Config.Dataset)
	}
	fixedIdx, poolIdx, publicIdx, err := recoNNIndices(tr.N, e.Fixed, e.Pool, e.Public, e.Config.Seed)
	if err != nil {
		return nil, err
	}
	e.Pool = len(poolIdx)
	if e.Targets > ds.Test.N {
		return nil, fmt.Errorf("reconn: %d targets exceed the %d test samples", e.Targets, ds.Test.N)
	}
	var s recoNNSplits
	if s.fixed, err = tr.Select(fixedIdx); err != nil {
		return nil, err
	}
	if s.pool, err = tr.Select(poolIdx); err != nil {
		return nil, err
	}
	if publicIdx != nil {
		if s.public, err = tr.Select(publicIdx); err != nil {
			return nil, err
		}
		if s.disjoint = disjointIndices(fixedIdx, poolIdx, publicIdx); !s.disjoint {
			return nil, errors.New("reconn: the public pool overlaps D₋ or the prior pool") // recoNNIndices draws it disjoint
		}
	}
	if s.targets, err = ds.Test.Select(indexRange(0, e.Targets)); err != nil {
		return nil, err
	}
	return &s, nil
}

func indexRange(lo, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = lo + i
	}
	return out
}

// RunRecoNNExperiment loads the data, runs RunRecoNN and reports per target the MSE,
// the label-only baseline, the target's dFIL with 1/dFIL (Guo et al. 2022, Theorem 2:
// unbiased attackers only) and the RDP bound (Theorem 1: any attacker).
func RunRecoNNExperiment(ctx context.Context, e RecoNNExperiment) (*RecoNNReport, error) {
	cfg := e.Config
	if cfg.Repeats != 1 {
		return nil, errors.New("reconn: the recipe must train one model per run (repeats = 1)")
	}
	if cfg.Batch == 0 {
		cfg.Batch = e.Fixed + 1
	}
	if e.Public > 0 {
		cfg.Tuning.PublicExternal = true // the recipe's models get the public pool (train.Options.Public)
	}
	if cfg.Sigma == 0 && cfg.TargetEpsilon == 0 {
		cfg.FILCoords, cfg.FILExact = 0, false // no noise: FIL is infinite, every bound is 0
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s, err := e.splits()
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	res, err := RunRecoNN(ctx, RecoNNOptions{Config: cfg, Fixed: s.fixed, Pool: s.pool, Targets: s.targets, Public: s.public,
		Shadows: e.Shadows, ValFraction: e.ValFraction, SameInit: e.SameInit, Reconstructor: e.Reconstructor,
		MLP: e.MLP, RidgeLambda: e.RidgeLambda, Trainer: e.Trainer, ShadowBlock: e.ShadowBlock, Parallel: e.Parallel,
		Checkpoint: e.Checkpoint, Seed: cfg.Seed, Progress: e.Progress, Logf: e.Logf})
	if err != nil {
		return nil, err
	}
	out := newRecoNNReport(cfg, e, res)
	if s.public != nil {
		out.Public, out.PublicDisjoint, out.PublicSHA256 = s.public.N, s.disjoint, s.public.SHA256
	}
	out.Seconds = time.Since(t0).Seconds()
	if e.Out != "" {
		if out.Files, err = writeRecoNNFiles(e.Out, s.targets, res); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func newRecoNNReport(cfg train.Config, e RecoNNExperiment, res *RecoNNResult) *RecoNNReport {
	f := func(v float64) jsonfloat.Float { return jsonfloat.Float(v) }
	inf := func(v float64) jsonfloat.Inf { return jsonfloat.Inf(v) }
	out := &RecoNNReport{Config: cfg, Dataset: cfg.Dataset, Fixed: e.Fixed, Pool: e.Pool, SameInit: e.SameInit,
		Shadows: res.Shadows, ShadowsTrain: res.Train, ShadowsVal: res.Val, Reconstructor: res.Reconstructor, Features: res.Features,
		RidgeLambda: res.RidgeLambda, BestEpoch: res.BestEpoch, TrainMSE: f(res.TrainMSE), ValMSE: f(res.ValMSE), ValBaselineMSE: f(res.ValBaselineMSE),
		MeanMSE: f(res.MeanMSE), MeanBaseline: f(res.MeanBaselineMSE), MeanSSIM: f(res.MeanSSIM), MeanBaselineSSIM: f(res.MeanBaselineSSIM),
		MeanPriorMeanMSE: f(res.MeanPriorMeanMSE), MeanPriorMeanSSIM: f(res.MeanPriorMeanSSIM), MeanNearestMSE: f(res.MeanNearestMSE),
		MeanNearestSSIM: f(res.MeanNearestSSIM), Epsilon: inf(res.Epsilon),
		RDPOrder2: inf(res.RDPOrder2), BoundRDP: inf(res.BoundRDP), RDPViolations: res.RDPViolations, FILBelow: res.FILBelow,
		Note: recoNNNote}
	la := func(v float64) float64 {
		if math.IsNaN(v) {
			return -1
		}
		return v
	}
	out.Shadow = RecoNNShadowCost{Trainer: res.ShadowTrainer, Loaded: res.ShadowsLoaded, Trained: res.ShadowsTrained,
		Seconds: res.ShadowSeconds, ShadowsPerSecond: f(math.NaN()), LoadAvgStart: la(res.ShadowLoadStart), LoadAvgEnd: la(res.ShadowLoadEnd),
		Block: res.ShadowBlock, Parallel: res.ShadowParallel, Checkpoint: e.Checkpoint}
	if res.ShadowsTrained > 0 && res.ShadowSeconds > 0 {
		out.Shadow.ShadowsPerSecond = f(float64(res.ShadowsTrained) / res.ShadowSeconds)
	}
	var bounds []float64
	for k, tg := range res.Targets {
		out.Targets = append(out.Targets, RecoNNTargetEntry{Index: k, Label: tg.Label, MSE: f(tg.MSE), BaselineMSE: f(tg.BaselineMSE),
			SSIM: f(tg.SSIM), BaselineSSIM: f(tg.BaselineSSIM), PriorMeanMSE: f(tg.PriorMeanMSE), PriorMeanSSIM: f(tg.PriorMeanSSIM),
			NearestMSE: f(tg.NearestMSE), NearestSSIM: f(tg.NearestSSIM),
			DFIL: f(tg.DFIL), BoundFIL: inf(tg.BoundFIL), BoundRDP: inf(tg.BoundRDP)})
		if tg.BoundFIL == tg.BoundFIL { // not NaN
			bounds = append(bounds, tg.BoundFIL)
		}
	}
	sort.Float64s(bounds)
	out.MedianBoundFIL = inf(stats.QuantileSorted(bounds, 0.5))
	return out
}

// RecoNNFigureTargets is how many targets reconn_targets.png draws (the first ones;
// the CSV has them all): one row of 500 would be an image 30 000 pixels wide.
const RecoNNFigureTargets = 10

// writeRecoNNFiles writes reconn_targets.csv (every target) and reconn_targets.png
// (the first RecoNNFigureTargets targets over their reconstructions) to dir.
func writeRecoNNFiles(dir string, targets *data.Dataset, res *RecoNNResult) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("reconn output: %w", err)
	}
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', 10, 64) }
	rows := make([][]string, len(res.Targets))
	shown := res.Targets[:min(len(res.Targets), RecoNNFigureTargets)]
	imgs := make([][]float32, 0, 2*len(shown))
	caps := make([]string, 0, 2*len(shown))
	for k, tg := range res.Targets {
		rows[k] = []string{strconv.Itoa(k), strconv.Itoa(tg.Label), g(tg.MSE), g(tg.BaselineMSE), g(tg.DFIL), g(tg.BoundFIL), g(tg.BoundRDP),
			g(tg.SSIM), g(tg.BaselineSSIM), g(tg.PriorMeanMSE), g(tg.PriorMeanSSIM), g(tg.NearestMSE), g(tg.NearestSSIM)}
	}
	for k, tg := range shown {
		imgs = append(imgs, targets.Image(k))
		caps = append(caps, fmt.Sprintf("label %d", tg.Label))
	}
	for _, tg := range shown {
		imgs = append(imgs, tg.Reconstruction)
		caps = append(caps, fmt.Sprintf("MSE %.3g", tg.MSE))
	}
	csvPath := filepath.Join(dir, "reconn_targets.csv")
	header := []string{"test_index", "label", "mse", "baseline_mse", "dfil", "mse_bound_fil", "mse_bound_rdp",
		"ssim", "baseline_ssim", "prior_mean_mse", "prior_mean_ssim", "nearest_mse", "nearest_ssim"}
	if err := atomicfile.Write(csvPath, func(w io.Writer) error {
		cw := csv.NewWriter(w)
		_ = cw.Write(header)
		_ = cw.WriteAll(rows)
		return cw.Error()
	}); err != nil {
		return nil, err
	}
	img, err := plot.ImageGrid(imgs, targets.C, targets.H, targets.W, plot.GridOptions{Cols: len(shown),
		Title: "RecoNN: test targets over their reconstructions", RowLabels: []string{"target", "reconstruction"}, Captions: caps})
	if err != nil {
		return nil, err
	}
	pngPath := filepath.Join(dir, "reconn_targets.png")
	if err := plot.SavePNG(pngPath, img); err != nil {
		return nil, err
	}
	return []string{csvPath, pngPath}, nil
}
