// Package train is dpfil's main job: DP-SGD (Guo, Karrer, Chaudhuri & van der Maaten
// 2022, "Bounding training data reconstruction in private (deep) learning",
// Algorithm 1) with per-sample gradients, hard or smooth clipping, Gaussian noise on
// the summed clipped gradients, momentum SGD or Adam, and two privacy accountants run
// alongside: Rényi DP for the whole run (ε at δ, order-2 RDP and its MSE bound) and
// per-sample Fisher information leakage (dFIL and its MSE bounds), computed on the
// parameters before each update.
//
// Every random draw (initialisation, batch sampling, FIL coordinates, noise) comes
// from streams derived deterministically from Config.Seed, runs checkpoint
// atomically, and a resumed run ends bit-identical to an uninterrupted one on CPU.
//
// A finished run is read back with LoadRun, evaluated with EvaluateRun and used to
// classify inputs with Predict; package train/transcript records what an informed
// adversary sees of a run.
package train

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"

	"github.com/dpfil/dpfil/accounting"
	"github.com/dpfil/dpfil/models"
)

// Config is one training run. JSON names are the CLI flag names with '-' → '_'
// (a sweep grid file lists these keys with lists of values).
type Config struct {
	Model       string  `json:"model"`   // mnist-cnn, mnist-cnn-3x3, cifar-cnn, mlp, linear
	Dataset     string  `json:"dataset"` // default "mnist-embedded"
	DataDir     string  `json:"data_dir,omitempty"`
	Steps       int     `json:"steps"` // or Epochs (exactly one > 0)
	Epochs      float64 `json:"epochs,omitempty"`
	Batch       int     `json:"batch"`
	LR          float64 `json:"lr"`
	Momentum    float64 `json:"momentum"` // default 0.5; 0 under adam
	WeightDecay float64 `json:"weight_decay,omitempty"`
	// Optimizer is the update rule applied to the privatised gradient (and in
	// pretraining to the public gradient): "" or "sgd" (momentum SGD, the default)
	// or "adam" (bias-corrected Adam as torch.optim.Adam; train/optim.go). The
	// update is post-processing of the released gradient: it changes no ε, and FIL
	// is computed at each θ_t as before. Under adam, Momentum must be 0 (Adam's
	// first moment is AdamBeta1) and AdamBeta1, AdamBeta2, AdamEps are the run's
	// (UseAdam sets torch's defaults); under sgd they must be 0. Omitted from JSON
	// when empty, so older configs keep their hashes ("sgd" hashes as "").
	Optimizer string  `json:"optimizer,omitempty"`
	AdamBeta1 float64 `json:"adam_beta1,omitempty"` // β1 ∈ [0, 1): first-moment decay
	AdamBeta2 float64 `json:"adam_beta2,omitempty"` // β2 ∈ [0, 1): second-moment decay
	AdamEps   float64 `json:"adam_eps,omitempty"`   // ε > 0 added to √v̂

	Sigma float64 `json:"sigma"` // noise scale σ: N(0, σ²C²I) on the clipped sum; noise multiplier σ/c (Privacy); 0 with TargetEpsilon: solved for
	// TargetEpsilon, when > 0, solves for the smallest σ whose reported ε at Delta
	// (the chosen accountant, adjacency and sampling, with the clip constant c of
	// ClipMode) is at most this value; Sigma must then be 0. Result.Sigma is the σ used.
	TargetEpsilon float64 `json:"target_epsilon,omitempty"`
	Clip          float64 `json:"clip"`      // C
	ClipMode      string  `json:"clip_mode"` // smooth (default) | hard
	Sampling      string  `json:"sampling"`  // poisson (default) | uniform | shuffle
	Delta         float64 `json:"delta"`     // for ε, default 1e-5
	// Accountant picks the accountant behind the reported ε: auto (default: the
	// tighter of PLD and RDP, both valid upper bounds), pld or rdp.
	Accountant string  `json:"accountant,omitempty"`
	FILDelta   float64 `json:"fil_delta,omitempty"` // κ's δ_f, default 1/(T·N)
	FILCoords  int     `json:"fil_coords"`          // default 50; 0 = FIL off
	FILExact   bool    `json:"fil_exact,omitempty"` // exact trace (all d coordinates)
	// FILRate is the probability that a batch member's FIL is computed at a step
	// (independently per sample and step, weighted by 1/FILRate so that dFIL stays an
	// unbiased Monte Carlo estimate); 0 or 1 = every member of every batch. It trades
	// variance for time where the second-order pass is too slow (e.g. the CPU demo).
	FILRate float64 `json:"fil_rate,omitempty"`
	// FILRefineTop, when > 0, records the run's transcripts and, after training,
	// recomputes the m = FILRefineTop samples with the largest screen dFIL exactly
	// over all input coordinates at the replayed parameters (RefineFIL): the result
	// carries the two-stage worst-sample estimate (fil_two_stage) beside the screen's
	// dfil_max. It needs the screen to cover every member of every batch
	// (fil_rate 0 or 1, random coordinates, no tuning).
	FILRefineTop int `json:"fil_refine_top,omitempty"`
	// FILNormalizedInputs takes the FIL Jacobian w.r.t. the output of the model's
	// leading Normalize layer (as the reference code did) instead of the raw [0,1]
	// pixels; it only differs for models with a Normalize layer (cifar-cnn).
	FILNormalizedInputs bool   `json:"fil_normalized_inputs,omitempty"`
	Repeats             int    `json:"repeats"`                // default 1
	EvalEvery           int    `json:"eval_every,omitempty"`   // test accuracy every n steps (0: only at the end)
	Seed                uint64 `json:"seed"`                   // root of every random draw
	Device              string `json:"device"`                 // cpu (default) | cuda
	TrainSubset         int    `json:"train_subset,omitempty"` // use only the first n training samples (0 = all)
	// Arch, when set, is a custom architecture (an architecture file, models.ArchSpec)
	// trained instead of a built-in Model; Model must then be its name or empty
	// (WithArch sets both). Input shape and classes may come from the data.
	Arch *models.ArchSpec `json:"arch,omitempty"`
	// DataSHA256, when set, pins the data: the run refuses a dataset whose fingerprint
	// (data.Split.Fingerprint, recorded as result.dataset.fingerprint) differs.
	DataSHA256 string `json:"data_sha256,omitempty"`

	// FILEta, when > 0, also computes η per FIL member and step: ‖J_t‖₂², the top
	// eigenvalue of J_tᵀJ_t, by FILEta power iterations (each a JVP and a
	// vector-Jacobian product: measured ≈ 5–6 FIL coordinates' cost on mnist-cnn), giving
	// η²(z) = κ·Σ_t ‖J_t‖₂²/(σC)² and the MSE bound 1/η² (Result.Eta; train/eta.go).
	// Omitted from JSON when 0, so older configs keep their hashes.
	FILEta int `json:"fil_eta,omitempty"`
	// FILLabel also accounts the FIL of each sample's label, taken as a continuous
	// one-hot vector (Result.LabelFIL; train/labelfil.go): K extra first-order passes
	// per FIL member and step (≈ 13 FIL coordinates' cost on mnist-cnn).
	FILLabel bool `json:"fil_label,omitempty"`

	// ClipAlgo is how the clipped gradient sum is computed (models.ClipAlgo): ""
	// or per-sample (the default), ghost (ghost clipping: per-sample norms from
	// activations and output gradients, no per-sample gradients) or auto (per layer
	// the cheaper of the two by a FLOP model). The clip factor is ClipMode's in all
	// three; the sums agree to float32 rounding. Ghost and auto run on the CPU
	// engine only and without FIL, η, label FIL and tuning, which use the
	// per-sample engine. Omitted from JSON when empty, so older configs keep their hashes.
	ClipAlgo string `json:"clip_algo,omitempty"`

	// ConvAlgo is the conv algorithm of the per-sample clipped gradients
	// (models.ConvAlgo): "" or direct (im2col, the default), winograd (3×3
	// stride-1 conv layers as Winograd F(2×2,3×3); other layers direct), winograd4
	// (the same as F(4×4,3×3)) or auto (per layer the cheapest of the three by the
	// cost model). The sums agree with direct to float32
	// rounding. CPU engine and per-sample clipping only; FIL and tuning keep direct
	// convolutions. Omitted from JSON when empty, so older configs keep their hashes.
	ConvAlgo string `json:"conv_algo,omitempty"`

	// Tuning is Edmunds's (2024) public-data pretraining, pruning, freezing and learned
	// noise (train/tuning.go); the zero value (all off) is omitted from JSON.
	Tuning TuningConfig `json:"tuning,omitzero"`
}

// Sampling schemes.
const (
	SamplingPoisson = "poisson" // each sample independently with probability q = B/N (exact accounting)
	SamplingUniform = "uniform" // an independent fixed-size subset of B without replacement each step
	SamplingShuffle = "shuffle" // fixed-size batches of one permutation per epoch (the papers'; see Result.Privacy)
)

// Accountants (Config.Accountant).
const (
	AccountantAuto = accounting.AccountantAuto
	AccountantPLD  = accounting.AccountantPLD
	AccountantRDP  = accounting.AccountantRDP
)

// Clip modes (Config.ClipMode).
const (
	ClipModeSmooth = "smooth"
	ClipModeHard   = "hard"
)

// Optimizers (Config.Optimizer).
const (
	OptimizerSGD  = "sgd"  // momentum SGD (also "")
	OptimizerAdam = "adam" // bias-corrected Adam
)

// torch.optim.Adam's defaults, which UseAdam sets.
const (
	DefaultAdamBeta1 = 0.9
	DefaultAdamBeta2 = 0.999
	DefaultAdamEps   = 1e-8
)

// UseAdam switches c to Adam with torch.optim.Adam's defaults (β1 0.9, β2 0.999,
// ε 1e-8) and momentum 0 (momentum SGD's parameter; Adam's first moment is β1).
// The learning rate stays c.LR: Adam's usual rates (1e-3) are far below SGD's.
func (c *Config) UseAdam() {
	c.Optimizer, c.Momentum = OptimizerAdam, 0
	c.AdamBeta1, c.AdamBeta2, c.AdamEps = DefaultAdamBeta1, DefaultAdamBeta2, DefaultAdamEps
}

// IsAdam reports whether the run updates with Adam (else momentum SGD).
func (c Config) IsAdam() bool { return c.Optimizer == OptimizerAdam }

// validateOptimizer checks Optimizer and its parameters.
func (c Config) validateOptimizer() error {
	switch c.Optimizer {
	case "", OptimizerSGD:
		if c.AdamBeta1 != 0 || c.AdamBeta2 != 0 || c.AdamEps != 0 {
			return fmt.Errorf("config: adam_beta1 = %v, adam_beta2 = %v, adam_eps = %v are Adam's: set optimizer = %q (or leave them 0 for momentum SGD)", c.AdamBeta1, c.AdamBeta2, c.AdamEps, OptimizerAdam)
		}
		return nil
	case OptimizerAdam:
	default:
		return fmt.Errorf("config: optimizer = %q, want %q (momentum SGD, the default) or %q", c.Optimizer, OptimizerSGD, OptimizerAdam)
	}
	for _, b := range []struct {
		name string
		v    float64
	}{{"adam_beta1", c.AdamBeta1}, {"adam_beta2", c.AdamBeta2}} {
		if !(b.v >= 0 && b.v < 1) {
			return fmt.Errorf("config: %s = %v must be in [0, 1)", b.name, b.v)
		}
	}
	if !finite(c.AdamEps) || c.AdamEps <= 0 {
		return fmt.Errorf("config: adam_eps = %v must be positive and finite (torch's default %g; Config.UseAdam sets the defaults)", c.AdamEps, DefaultAdamEps)
	}
	if c.Momentum != 0 {
		return fmt.Errorf("config: momentum = %v is momentum SGD's and is not used by adam (its first moment is adam_beta1 = %v): set momentum to 0", c.Momentum, c.AdamBeta1)
	}
	return nil
}

// DefaultConfig is the paper's MNIST setting (Guo et al. 2022, Table 3: batch 600, momentum
// 0.5) on the embedded MNIST with σ = 1, C = 1, lr 0.1, T = 1000, smooth clipping,
// Poisson sampling (exact accounting; the paper shuffled), FIL with k = 50
// coordinates and δ = 1e-5.
func DefaultConfig() Config {
	return Config{
		Model:     "mnist-cnn",
		Dataset:   "mnist-embedded",
		Steps:     1000,
		Batch:     600,
		LR:        0.1,
		Momentum:  0.5,
		Sigma:     1,
		Clip:      1,
		ClipMode:  ClipModeSmooth,
		Sampling:  SamplingPoisson,
		Delta:     1e-5,
		FILCoords: 50,
		Repeats:   1,
		Seed:      1,
		Device:    "cpu",
	}
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// Validate checks the hyperparameters that do not depend on the dataset (batch ≤ N
// and the training subset size are checked by Run once the data is loaded).
func (c Config) Validate() error {
	if err := c.validateArch(); err != nil {
		return err
	}
	if c.Dataset == "" {
		return fmt.Errorf("config: dataset is empty")
	}
	switch {
	case c.Steps < 0:
		return fmt.Errorf("config: steps = %d must be positive", c.Steps)
	case !finite(c.Epochs) || c.Epochs < 0:
		return fmt.Errorf("config: epochs = %v must be a positive number", c.Epochs)
	case c.Steps > 0 && c.Epochs > 0:
		return fmt.Errorf("config: give steps or epochs, not both (steps = %d, epochs = %v)", c.Steps, c.Epochs)
	case c.Steps == 0 && c.Epochs == 0:
		return fmt.Errorf("config: one of steps or epochs must be positive")
	}
	if c.Batch < 1 {
		return fmt.Errorf("config: batch = %d must be at least 1", c.Batch)
	}
	if !finite(c.LR) || c.LR <= 0 {
		return fmt.Errorf("config: lr = %v must be positive and finite", c.LR)
	}
	if !finite(c.Momentum) || c.Momentum < 0 || c.Momentum >= 1 {
		return fmt.Errorf("config: momentum = %v must be in [0, 1)", c.Momentum)
	}
	if !finite(c.WeightDecay) || c.WeightDecay < 0 {
		return fmt.Errorf("config: weight_decay = %v must be ≥ 0 and finite", c.WeightDecay)
	}
	if err := c.validateOptimizer(); err != nil {
		return err
	}
	if !finite(c.Sigma) || c.Sigma < 0 {
		return fmt.Errorf("config: sigma = %v must be ≥ 0 and finite", c.Sigma)
	}
	if !finite(c.Clip) || c.Clip <= 0 {
		return fmt.Errorf("config: clip = %v must be positive and finite", c.Clip)
	}
	if _, err := c.clip(); err != nil {
		return err
	}
	if err := c.validateClipAlgo(); err != nil {
		return err
	}
	if err := c.validateConvAlgo(); err != nil {
		return err
	}
	if c.Sampling != SamplingShuffle && c.Sampling != SamplingPoisson && c.Sampling != SamplingUniform {
		return fmt.Errorf("config: sampling = %q, want %q, %q or %q", c.Sampling, SamplingPoisson, SamplingUniform, SamplingShuffle)
	}
	switch c.Accountant {
	case "", AccountantAuto, AccountantPLD, AccountantRDP:
	default:
		return fmt.Errorf("config: accountant = %q, want %q, %q or %q", c.Accountant, AccountantAuto, AccountantPLD, AccountantRDP)
	}
	if !(c.Delta > 0 && c.Delta < 1) {
		return fmt.Errorf("config: delta = %v must be in (0, 1)", c.Delta)
	}
	if !finite(c.FILDelta) || c.FILDelta < 0 || c.FILDelta >= 1 {
		return fmt.Errorf("config: fil_delta = %v must be in (0, 1), or 0 for the default 1/(T·N)", c.FILDelta)
	}
	if c.FILCoords < 0 {
		return fmt.Errorf("config: fil_coords = %d must be ≥ 0 (0 turns FIL off)", c.FILCoords)
	}
	if !finite(c.FILRate) || c.FILRate < 0 || c.FILRate > 1 {
		return fmt.Errorf("config: fil_rate = %v must be in (0, 1], or 0 for every step", c.FILRate)
	}
	if c.FILRefineTop < 0 {
		return fmt.Errorf("config: fil_refine_top = %d must be ≥ 0 (0: no refinement)", c.FILRefineTop)
	}
	if c.FILRefineTop > 0 {
		switch {
		case c.FILCoords == 0 || c.FILExact:
			return fmt.Errorf("config: fil_refine_top = %d refines a random-coordinate screen: it needs fil_coords > 0 without fil_exact (an exact run needs no refinement)", c.FILRefineTop)
		case c.FILRate > 0 && c.FILRate < 1:
			return fmt.Errorf("config: fil_refine_top = %d needs the screen to cover every batch member at every step: fil_rate = %v must be 0 or 1", c.FILRefineTop, c.FILRate)
		case c.Tuning.On():
			return fmt.Errorf("config: fil_refine_top = %d supports plain DP-SGD runs, not pretraining, pruning, freezing or learned noise", c.FILRefineTop)
		}
	}
	if !finite(c.TargetEpsilon) || c.TargetEpsilon < 0 {
		return fmt.Errorf("config: target_epsilon = %v must be > 0 and finite (or 0: use sigma)", c.TargetEpsilon)
	}
	if c.TargetEpsilon > 0 && c.Sigma != 0 {
		return fmt.Errorf("config: give sigma or target_epsilon, not both (sigma = %v, target_epsilon = %v)", c.Sigma, c.TargetEpsilon)
	}
	if c.FILEta < 0 || c.FILEta > maxFILEta {
		return fmt.Errorf("config: fil_eta = %d power iterations must be in [0, %d] (0 = η off)", c.FILEta, maxFILEta)
	}
	if (c.FILEnabled() || c.FILEta > 0 || c.FILLabel) && c.Sigma == 0 && c.TargetEpsilon == 0 {
		return fmt.Errorf("config: FIL is infinite without noise (sigma = 0); set sigma > 0 or fil_coords = 0")
	}
	if c.Repeats < 1 {
		return fmt.Errorf("config: repeats = %d must be at least 1", c.Repeats)
	}
	if c.EvalEvery < 0 {
		return fmt.Errorf("config: eval_every = %d must be ≥ 0", c.EvalEvery)
	}
	if c.TrainSubset < 0 {
		return fmt.Errorf("config: train_subset = %d must be ≥ 0", c.TrainSubset)
	}
	if c.Device != "cpu" && c.Device != "cuda" {
		return fmt.Errorf("config: device = %q, want cpu or cuda", c.Device)
	}
	return nil
}

// maxFILEta caps fil_eta (power iterations per FIL member and step).
const maxFILEta = 10000

// FILEnabled reports whether the run accounts FIL (fil_coords > 0 or fil_exact).
func (c Config) FILEnabled() bool { return c.FILCoords > 0 || c.FILExact }

// clip is the models.Clip of the config.
func (c Config) clip() (models.Clip, error) {
	switch c.ClipMode {
	case ClipModeSmooth:
		return models.Clip{Mode: models.ClipSmooth, C: c.Clip, GELU: models.GELUExact}, nil
	case ClipModeHard:
		return models.Clip{Mode: models.ClipHard, C: c.Clip}, nil
	}
	return models.Clip{}, fmt.Errorf("config: clip_mode = %q, want %q or %q", c.ClipMode, ClipModeSmooth, ClipModeHard)
}

// ResolveSteps is the number of steps T: Steps, or ceil(Epochs·N/Batch) for a training
// set of n samples.
func (c Config) ResolveSteps(n int) int {
	if c.Steps > 0 {
		return c.Steps
	}
	return int(math.Ceil(c.Epochs * float64(n) / float64(c.Batch)))
}

// Hash is a stable short hex hash of the config (the sweep dedupe key). It covers
// every field that can change the result, the architecture spec (Arch) and the data
// pin (DataSHA256) included; DataDir (where the named dataset is read from) is left
// out, and optimizer "sgd" hashes as the default "" (the same run).
func (c Config) Hash() string {
	c.DataDir = ""
	if c.Optimizer == OptimizerSGD {
		c.Optimizer = ""
	}
	b, err := json.Marshal(c)
	if err != nil { // Config holds only plain values; Marshal cannot fail on finite ones
		b = []byte(fmt.Sprintf("%#v", c))
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// ClipConstant returns c (‖g̃‖ ≤ c·C) of a clip mode: 1 for hard clipping, ≈ 1.115
// for smooth clipping with the exact GELU. Accountants take the noise multiplier σ/c (accounting.NoiseMultiplier).
func ClipConstant(mode string) (float64, error) {
	c := Config{ClipMode: mode, Clip: 1}
	cl, err := c.clip()
	if err != nil {
		return 0, err
	}
	return cl.Constant(), nil
}
