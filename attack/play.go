package attack

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/dpfil/dpfil/accounting"
	"github.com/dpfil/dpfil/data"
	"github.com/dpfil/dpfil/models"
	"github.com/dpfil/dpfil/plot"
	"github.com/dpfil/dpfil/transcript"
	"gonum.org/v1/gonum/stat"
)

// GameSpec is one informed-adversary game of Hayes, Mahloujifar and Balle (2023),
// "Bounding Training Data Reconstruction in DP-SGD", Sec. 3.1 and 4, played on a
// dataset's training split with a named architecture.
type GameSpec struct {
	// Epsilon is the target ε at Delta; the noise multiplier σ is solved for it
	// (CalibrateSigma: the accountant train reports, the tighter of PLD and RDP,
	// add-remove, Poisson sampling) unless UseSigma is set, in which case Sigma is
	// used as given.
	Epsilon  float64
	Sigma    float64
	UseSigma bool
	Delta    float64
	Q        float64 // Poisson sampling rate in (0, 1]; 1 = full batch
	Steps    int     // DP-SGD steps T
	// PriorSize is K (κ = 1/K), Known is |D₋|, Trials the number of trials (each a
	// fresh prior, target and noise).
	PriorSize, Known, Trials int
	// Attack is the attack whose success is reported on top (one of AttackNames; the
	// prior-aware ones are always all run, the gradient attack only when named here).
	Attack string
	// Dataset (its training split is the pool, its test split the evaluation pool),
	// DataDir where its files are, Model the architecture (models.ArchNames; "mlp"
	// uses the hand-derived float64 MLP, others the engine).
	Dataset, DataDir, Model string
	// Hidden, when > 0, replaces the mlp's hidden width (10) — Hayes et al. Fig. 7's
	// 10 / 100 / 1 000; θ₀ then comes from the hand MLP's own initialiser.
	Hidden int
	// Inputs is what the network sees of a sample x ∈ [0,1]: InputsUnit ("" too) x,
	// InputsSymmetric 2x − 1 (Hayes et al.'s public notebook; the hand mlp only).
	Inputs   string
	Clip, LR float64 // hard clipping norm C; SGD learning rate on the mean gradient
	// PriorKind is where the K candidates come from: PriorData ("" too) or
	// PriorUniform (Hayes et al. Fig. 9).
	PriorKind string
	// NoSubtract also runs AttackPriorNoSub, the adversary who does not subtract the
	// known gradients (Fig. 10); implied by Attack = AttackPriorNoSub.
	NoSubtract bool
	// Out, when set, makes the run resumable (see RunOptions.Out); RecordTranscripts
	// then writes each trial's transcript to Out/transcripts/.
	Out               string
	RecordTranscripts bool
	Workers           int // parallel trials (≤ 0: all cores)
	ReRoSamples       int // Monte Carlo samples of the ReRo estimate (q < 1)
	// EvalSize, when > 0, evaluates each trial's test accuracy on the first EvalSize
	// samples of the test split instead of all of it (a conv net's forward pass over
	// CIFAR-10's 10 000 test images costs minutes per trial in float64).
	EvalSize int
	Gradient GradientConfig
	Seed     uint64
	// TuneLR, when set, replaces LR by the candidate with the best mean test accuracy
	// over TuneTrials tuning trials of the same game (LRTuning): Hayes et al. sweep the
	// learning rate for each ε and do not report it. A sweep tunes at every value.
	TuneLR     []float64
	TuneTrials int
	// Progress, when set, is called after every finished trial (tuning trials too,
	// with GameProgress.Phase naming the candidate).
	Progress func(GameProgress)
}

// GameProgress is the state of a running game, passed to GameSpec.Progress.
type GameProgress struct {
	Epsilon      float64 // ε of the run
	Done, Trials int
	Attack       string // GameSpec.Attack
	Successes    int    // of Attack so far
	PriorSize    int
	Phase        string // "" for the game's trials, "tune lr=<v>" for tuning trials
}

// DefaultGameSpec is the game of 'dpfil attack game' without flags: Hayes et al.'s
// MNIST setting (|D₋| = 999, K = 10, T = 100, full batch, C = 0.1) at ε = 10 on the
// embedded MNIST, with learning rate 10 (≈ 80 % test accuracy with the mlp).
func DefaultGameSpec() GameSpec {
	return GameSpec{Epsilon: 10, Delta: 1e-5, Q: 1, Steps: 100, PriorSize: 10, Known: 999, Trials: 100,
		Attack: AttackPrior, Dataset: "mnist-embedded", Model: "mlp", Clip: 0.1, LR: 10, PriorKind: PriorData,
		ReRoSamples: 1_000_000, Gradient: GradientConfig{Iters: 300, Restarts: 2, LR: 0.01}, Seed: 1, TuneTrials: 3}
}

// Validate rejects impossible specs, checking the fields in declaration order.
func (s GameSpec) Validate() error {
	switch {
	case !s.UseSigma && (!(s.Epsilon > 0) || math.IsInf(s.Epsilon, 0)):
		return fmt.Errorf("attack game: target epsilon %v must be positive and finite", s.Epsilon)
	case s.UseSigma && (!(s.Sigma >= 0) || math.IsInf(s.Sigma, 0)):
		return fmt.Errorf("attack game: noise multiplier sigma %v must be finite and ≥ 0", s.Sigma)
	case !(s.Delta > 0 && s.Delta < 1):
		return fmt.Errorf("attack game: delta %v outside (0, 1)", s.Delta)
	}
	if err := validateGameShape(s.Q, s.Steps, s.PriorSize, s.Known); err != nil {
		return err
	}
	switch {
	case s.Trials < 1:
		return fmt.Errorf("attack game: trials %d < 1", s.Trials)
	case !slices.Contains(AttackNames(), s.Attack):
		return fmt.Errorf("attack game: unknown attack %q (known: %s)", s.Attack, strings.Join(AttackNames(), ", "))
	case s.RecordTranscripts && s.Out == "":
		return fmt.Errorf("attack game: recording transcripts needs an output directory (--out)")
	case s.Hidden < 0:
		return fmt.Errorf("attack game: hidden width %d < 0", s.Hidden)
	case s.EvalSize < 0:
		return fmt.Errorf("attack game: evaluation size %d < 0 (0 = the whole test split)", s.EvalSize)
	case s.Hidden > 0 && s.Model != "mlp":
		return fmt.Errorf("attack game: --hidden sets the mlp's hidden width; model %s has its own", s.Model)
	case checkInputs(s.Inputs, s.Model) != nil:
		return fmt.Errorf("attack game: %w", checkInputs(s.Inputs, s.Model))
	case s.PriorKind != "" && s.PriorKind != PriorData && s.PriorKind != PriorUniform:
		return fmt.Errorf("attack game: unknown prior kind %q (known: %s, %s)", s.PriorKind, PriorData, PriorUniform)
	case s.RecordTranscripts && s.PriorKind == PriorUniform:
		return fmt.Errorf("attack game: transcripts name prior candidates by dataset index; a uniform-noise prior has none (drop --record-transcripts)")
	}
	return s.validateTuning()
}

// GameReport is the outcome of PlayGame.
type GameReport struct {
	Attack      string     `json:"attack"`
	SuccessRate float64    `json:"success_rate"`
	SuccessCI   [2]float64 `json:"success_ci"` // 95 % Clopper–Pearson
	Successes   int        `json:"successes"`
	Trials      int        `json:"trials"`
	Gamma       float64    `json:"gamma"`
	GammaCI     [2]float64 `json:"gamma_ci"`
	GammaRDP    float64    `json:"gamma_rdp"`
	GammaExact  bool       `json:"gamma_exact"`
	// Fano is the Fano bound on any attack's success (Guo et al. 2022b; nil at σ = 0).
	Fano *accounting.FanoBound `json:"fano,omitempty"`
	// SuccessOrthogonal (q = 1, σ > 0) is the prior-aware attack's success if all
	// candidates' clipped gradients had norm C and were mutually orthogonal
	// (OrthogonalSuccess).
	SuccessOrthogonal *float64               `json:"success_orthogonal,omitempty"`
	Kappa             float64                `json:"kappa"`
	Epsilon           float64                `json:"epsilon"`
	Delta             float64                `json:"delta"`
	Accountant        string                 `json:"accountant,omitempty"` // what ε holds for (Bounds)
	Adjacency         string                 `json:"adjacency,omitempty"`
	Sampling          string                 `json:"sampling,omitempty"`
	Sigma             float64                `json:"sigma"`
	Q                 float64                `json:"q"`
	Steps             int                    `json:"steps"`
	PriorSize         int                    `json:"prior_size"`
	Known             int                    `json:"known"`
	Clip              float64                `json:"clip"`
	LR                float64                `json:"lr"`
	Model             string                 `json:"model"`
	Dataset           string                 `json:"dataset"`
	Seed              uint64                 `json:"seed"`
	Attacks           map[string]AttackStats `json:"attacks"`
	GradientMSE       *float64               `json:"gradient_mse,omitempty"`  // mean over trials
	FinalLoss         float64                `json:"final_loss"`              // mean training loss of D₋ at θ_T
	TestAccuracy      *float64               `json:"test_accuracy,omitempty"` // mean over trials of θ_T's test accuracy
	PriorCosine       float64                `json:"prior_cosine"`            // mean cosine of non-target candidates' clipped gradients with the target's
	// Linf is the gradient attack's success at ℓ∞ tolerance δ on a fraction ρ of the
	// pixels, with its prior-free baseline and bounds (Hayes et al. App. I, Fig. 12a).
	Linf []LinfPoint `json:"linf,omitempty"`
	// ReconstructionsPNG is the gradient attack's figure (ReconstructionsFile).
	ReconstructionsPNG string `json:"reconstructions_png,omitempty"`
	// OptimalSuccess is the mean over trials of TrialResult.OptimalSuccess: the best
	// possible prior-aware attack on these trajectories (q = 1, K ≤ 32); omitted when
	// any trial lacks it (trials resumed from a run before the field existed).
	OptimalSuccess *float64 `json:"optimal_success,omitempty"`
	// ClippedNorm and ClippedFraction: means over trials of TrialResult's (Fig. 13a).
	ClippedNorm     float64 `json:"clipped_norm"`
	ClippedFraction float64 `json:"clipped_fraction"`
	// LRTuning is how LR was chosen (GameSpec.TuneLR), nil when it was given.
	LRTuning  *LRTuning `json:"lr_tuning,omitempty"`
	Hidden    int       `json:"hidden,omitempty"`     // the mlp's hidden width when not 10
	Inputs    string    `json:"inputs,omitempty"`     // InputsSymmetric, or omitted for [0,1] inputs
	PriorKind string    `json:"prior_kind,omitempty"` // PriorUniform, or omitted for the data prior
	// NoiseHalfWidth is the uniform prior's half-width h around ½.
	NoiseHalfWidth float64 `json:"noise_half_width,omitempty"`
	WallSeconds    float64 `json:"wall_seconds"`
	Out            string  `json:"out,omitempty"`
}

// Pools are a dataset's training split (the game's pool) and test split (the
// evaluation pool; empty when the dataset has none), as the game uses them.
type Pools struct {
	Train, Test Pool
	Fingerprint string // of the training split
	// C, H, W is a sample's image shape (C·H·W = Train.D), when known: the gradient
	// attack's reconstructions are then drawn as images.
	C, H, W int
}

// PoolFromDataset returns a dataset split as a pool. The pool shares the split's
// float32 images (no float64 copy of the split is made), which must not change while
// it is in use; the labels are copied.
func PoolFromDataset(d *data.Dataset) Pool {
	return Pool{X32: slices.Clip(d.Images[:d.N*d.Dim()]), Y: slices.Clone(d.Labels), D: d.Dim()}
}

// LoadPools loads the named dataset's files from dir.
func LoadPools(dataset, dir string) (*Pools, error) {
	l, err := data.LoadFiles(dataset, data.Options{DataDir: dir})
	if err != nil {
		return nil, fmt.Errorf("load dataset: %w", err)
	}
	ps := &Pools{Train: PoolFromDataset(l.Train), Fingerprint: l.Train.Fingerprint(), C: l.Train.C, H: l.Train.H, W: l.Train.W}
	if l.Test != nil && l.Test.N > 0 {
		ps.Test = PoolFromDataset(l.Test)
	}
	return ps, nil
}

// NetFactory returns a constructor of per-worker networks for the named architecture
// (models.ArchNames) on d inputs, and the initialiser θ₀(seed) of that architecture.
// "mlp" is the hand-derived float64 MLP (the same parameters as the engine's mlp);
// every other architecture runs on the engine (NewEngineNet).
func NetFactory(model string, d int) (func() Net, func(uint64) []float64, error) {
	return netFactory(model, 0, "", d)
}

// netFactory is NetFactory with the mlp's hidden width replaced by hidden when > 0
// (the hand MLP and its own initialiser) and the input range inputs (InputsUnit,
// InputsSymmetric; the hand MLP only).
func netFactory(model string, hidden int, inputs string, d int) (func() Net, func(uint64) []float64, error) {
	if err := checkInputs(inputs, model); err != nil {
		return nil, nil, err
	}
	arch, err := models.ArchByName(model)
	if err == nil && hidden > 0 {
		if model != "mlp" {
			return nil, nil, fmt.Errorf("a hidden width applies to the mlp only, not %s", model)
		}
		if arch.InputDim() != d {
			return nil, nil, fmt.Errorf("model %s takes %d inputs, the dataset has %d", model, arch.InputDim(), d)
		}
		m, err := NewMLP(d, hidden, arch.Classes)
		if err != nil {
			return nil, nil, err
		}
		newNet, err := withInputs(m, inputs)
		return newNet, m.Init, err
	}
	if err != nil {
		return nil, nil, err
	}
	if arch.InputDim() != d {
		return nil, nil, fmt.Errorf("model %s takes %d inputs, the dataset has %d", model, arch.InputDim(), d)
	}
	init := func(seed uint64) []float64 { return models.InitParams(arch, seed) }
	if model == "mlp" {
		m, err := NewMLP(arch.InputDim(), arch.Layers[1].Out, arch.Classes)
		if err != nil {
			return nil, nil, err
		}
		if m.NumParams() != arch.NumParams() {
			return nil, nil, fmt.Errorf("hand MLP has %d parameters, the mlp architecture %d", m.NumParams(), arch.NumParams())
		}
		newNet, err := withInputs(m, inputs)
		return newNet, init, err
	}
	if _, err := NewEngineNet(arch); err != nil {
		return nil, nil, err
	}
	return func() Net {
		e, _ := NewEngineNet(arch) // validated above
		return e
	}, init, nil
}

// PlayGame loads the spec's dataset, plays the game and summarises it.
func PlayGame(ctx context.Context, spec GameSpec) (*GameReport, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	pools, err := LoadPools(spec.Dataset, spec.DataDir)
	if err != nil {
		return nil, err
	}
	return PlayGameOn(ctx, spec, pools)
}

// PlayGameOn plays the game on pools already loaded (spec.Dataset and DataDir are then
// only recorded).
func PlayGameOn(ctx context.Context, spec GameSpec, pools *Pools) (*GameReport, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	start := time.Now()
	sigma := spec.Sigma
	if !spec.UseSigma {
		s, err := CalibrateSigma(spec.Q, spec.Steps, spec.Delta, spec.Epsilon)
		if err != nil {
			return nil, fmt.Errorf("noise for ε = %v: %w", spec.Epsilon, err)
		}
		sigma = s
	}
	bounds, err := ComputeBounds(BoundsRequest{Q: spec.Q, Sigma: sigma, Steps: spec.Steps, PriorSize: spec.PriorSize,
		Delta: spec.Delta, Samples: spec.ReRoSamples, Seed: spec.Seed})
	if err != nil {
		return nil, err
	}
	var tuning *LRTuning
	if len(spec.TuneLR) > 0 {
		t, err := tuneLR(ctx, spec, sigma, bounds.Epsilon, pools)
		if err != nil {
			return nil, err
		}
		tuning, spec.LR = t, t.Chosen
	}
	g, err := newSpecGame(spec, sigma, pools)
	if err != nil {
		return nil, err
	}
	res, err := g.Run(ctx, spec.runOptions(g, pools.Fingerprint, bounds.Epsilon))
	if err != nil {
		return nil, err
	}
	stats, err := Summarize(res)
	if err != nil {
		return nil, err
	}
	out := newGameReport(spec, sigma, bounds, stats)
	out.LRTuning = tuning
	out.PriorKind = g.cfg.PriorKind
	out.NoiseHalfWidth = g.NoiseHalfWidth()
	if spec.Q == 1 && sigma > 0 {
		so, err := OrthogonalSuccess(sigma, spec.Steps, spec.PriorSize)
		if err != nil {
			return nil, err
		}
		out.SuccessOrthogonal = &so
	}
	out.meanTrials(res)
	if spec.Attack == AttackGradient && spec.Out != "" && pools.C*pools.H*pools.W == g.pool.D && g.pool.D > 0 {
		path := filepath.Join(spec.Out, ReconstructionsFile)
		if err := saveReconstructions(path, g.pool, res, pools.C, pools.H, pools.W); err != nil {
			return nil, err
		}
		out.ReconstructionsPNG = path
	}
	if spec.Attack == AttackGradient {
		if out.Linf, err = linfPoints(g.pool, res, spec.Q, sigma, spec.Steps); err != nil {
			return nil, err
		}
	}
	out.WallSeconds = time.Since(start).Seconds()
	return out, nil
}

// ReconstructionsFile is the gradient attack's figure in a game's output directory.
const ReconstructionsFile = "gradient-reconstructions.png"

// saveReconstructions draws the first (up to 16) trials' targets above the gradient
// attack's reconstructions, each captioned with its MSE (Hayes et al. Fig. 6a).
func saveReconstructions(path string, pool Pool, res []TrialResult, c, h, w int) error {
	var top, bottom [][]float32
	var caps []string
	for _, r := range res {
		if len(top) == 16 {
			break
		}
		if len(r.Reconstruction) != pool.D || r.GradientMSE == nil {
			continue
		}
		top = append(top, toFloat32(pool.ImageInto(r.Prior[r.Target], make([]float64, pool.D))))
		bottom = append(bottom, toFloat32(r.Reconstruction))
		caps = append(caps, fmt.Sprintf("%.3f", *r.GradientMSE))
	}
	if len(top) == 0 {
		return fmt.Errorf("gradient attack figure: no trial has a reconstruction")
	}
	captions := append(make([]string, len(top)), caps...)
	img, err := plot.ImageGrid(append(top, bottom...), c, h, w, plot.GridOptions{Cols: len(top), Scale: 3,
		Title: "gradient attack (Eq. 1): targets above reconstructions, MSE below", RowLabels: []string{"target", "reconstruction"}, Captions: captions})
	if err != nil {
		return fmt.Errorf("gradient attack figure: %w", err)
	}
	if err := plot.SavePNG(path, img); err != nil {
		return fmt.Errorf("gradient attack figure: %w", err)
	}
	return nil
}

func toFloat32(x []float64) []float32 {
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = float32(v)
	}
	return out
}

// meta is what game.json records beside the game's config: model, dataset and its
// fingerprint, and the mlp's hidden width when it is not the architecture's.
func (s GameSpec) meta(fingerprint string) map[string]any {
	m := map[string]any{"model": s.Model, "dataset": s.Dataset, "data_fingerprint": fingerprint}
	if s.Hidden > 0 {
		m["hidden"] = s.Hidden
	}
	if s.Inputs == InputsSymmetric { // a resumed run must map its inputs the same way
		m["inputs"] = s.Inputs
	}
	if s.EvalSize > 0 { // a resumed run must report its accuracy on the same samples
		m["eval_size"] = s.EvalSize
	}
	return m
}

// newSpecGame prepares the game of spec with noise multiplier sigma.
func newSpecGame(spec GameSpec, sigma float64, pools *Pools) (*Game, error) {
	newNet, init, err := netFactory(spec.Model, spec.Hidden, spec.Inputs, pools.Train.D)
	if err != nil {
		return nil, err
	}
	grad := spec.Gradient
	grad.Enabled = spec.Attack == AttackGradient
	cfg := GameConfig{Known: spec.Known, PriorSize: spec.PriorSize, Steps: spec.Steps, Q: spec.Q, Sigma: sigma,
		Clip: spec.Clip, LR: spec.LR, Seed: spec.Seed, Gradient: grad,
		NoSubtract: spec.NoSubtract || spec.Attack == AttackPriorNoSub}
	if spec.PriorKind == PriorUniform {
		cfg.PriorKind = PriorUniform
	}
	g, err := NewGame(cfg, pools.Train, newNet, init)
	if err != nil {
		return nil, err
	}
	if pools.Test.N() > 0 {
		if err := g.SetEval(pools.Test.Head(spec.EvalSize)); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// runOptions are the trial-batch options of spec: output directory, metadata,
// progress and transcripts.
func (s GameSpec) runOptions(g *Game, fingerprint string, eps float64) RunOptions {
	succ := 0
	opt := RunOptions{Trials: s.Trials, Workers: s.Workers, Out: s.Out,
		Meta: s.meta(fingerprint),
		Progress: func(done int, r *TrialResult) {
			if r.Success[s.Attack] {
				succ++
			}
			if s.Progress != nil {
				s.Progress(GameProgress{Epsilon: eps, Done: done, Trials: s.Trials, Attack: s.Attack, Successes: succ, PriorSize: s.PriorSize})
			}
		}}
	if s.RecordTranscripts {
		opt.Record = g.TranscriptRecorder(filepath.Join(s.Out, "transcripts"), transcript.Header{
			Model: s.Model, Dataset: s.Dataset, DatasetSHA256: fingerprint})
	}
	return opt
}

func newGameReport(s GameSpec, sigma float64, b Bounds, stats map[string]AttackStats) *GameReport {
	a := stats[s.Attack]
	r := &GameReport{Attack: s.Attack, SuccessRate: a.Rate, SuccessCI: a.CI, Successes: a.Successes, Trials: a.Trials,
		Gamma: b.Gamma, GammaCI: b.GammaCI, GammaRDP: b.GammaRDP, GammaExact: b.Exact, Fano: b.Fano, Kappa: b.Kappa,
		Epsilon: b.Epsilon, Delta: s.Delta, Accountant: b.Accountant, Adjacency: b.Adjacency, Sampling: b.Sampling, Sigma: sigma, Q: s.Q, Steps: s.Steps, PriorSize: s.PriorSize,
		Known: s.Known, Clip: s.Clip, LR: s.LR, Model: s.Model, Dataset: s.Dataset, Seed: s.Seed, Attacks: stats, Out: s.Out,
		Hidden: s.Hidden}
	if s.Inputs == InputsSymmetric {
		r.Inputs = s.Inputs
	}
	return r
}

// meanTrials fills the means over trials: final loss and prior cosine over all
// trials, test accuracy and gradient-attack MSE over the trials that report them.
func (r *GameReport) meanTrials(res []TrialResult) {
	var loss, cos, acc, mse, cn, cf, opt []float64
	for _, t := range res {
		if t.OptimalSuccess != nil {
			opt = append(opt, *t.OptimalSuccess)
		}
		loss = append(loss, t.FinalLoss)
		cos = append(cos, t.PriorCosine)
		cn = append(cn, t.ClippedNorm)
		cf = append(cf, t.Clipped)
		if t.TestAccuracy != nil {
			acc = append(acc, *t.TestAccuracy)
		}
		if t.GradientMSE != nil {
			mse = append(mse, *t.GradientMSE)
		}
	}
	r.FinalLoss, r.PriorCosine = stat.Mean(loss, nil), stat.Mean(cos, nil)
	r.ClippedNorm, r.ClippedFraction = stat.Mean(cn, nil), stat.Mean(cf, nil)
	if len(opt) > 0 && len(opt) == len(res) {
		m := stat.Mean(opt, nil)
		r.OptimalSuccess = &m
	}
	if len(acc) > 0 {
		m := stat.Mean(acc, nil)
		r.TestAccuracy = &m
	}
	if len(mse) > 0 {
		m := stat.Mean(mse, nil)
		r.GradientMSE = &m
	}
}
