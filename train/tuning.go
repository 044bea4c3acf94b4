package train

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/dpfil/dpfil/data"
	"github.com/dpfil/dpfil/models"
)

// TuningConfig holds Edmunds's additions to DP-SGD (2024, "Fisher information for
// private training of machine learning models"): public-data pretraining, magnitude
// pruning and layer freezing during private training, and learned (FIM-shaped)
// gradient noise. The zero value turns all of them off and is
// omitted from JSON, so configs without them keep their hashes.
//
//   - Public data: a fraction PretrainPublic of the training set, drawn from the config
//     seed, becomes public data (N, q, ε and dFIL then refer to the private
//     remainder); or, with PublicExternal, the caller gives the public data
//     (train.Options.Public) and every training sample stays private. Pretraining,
//     g_φ and learned noise read it.
//   - Pretraining (public data given, PretrainSteps ≥ 0): the model is first trained on
//     the public data without privacy (PretrainSteps steps of the run's optimizer,
//     momentum SGD or Adam, on mini-batches) and then fine-tuned with DP-SGD on the private data.
//   - Pruning (PruneFraction > 0): after pretraining, the fraction of parameters with
//     the smallest magnitude is frozen (PruneMode "freeze", the thesis's choice) or set
//     to zero and frozen ("zero").
//   - Freezing (Freeze): the listed layers' parameters are not trained.
//
// Frozen coordinates are removed from every per-sample gradient before clipping (the
// clip norm is the norm of the released coordinates), from the noise, and from the
// FIL Jacobian; the released mechanism is the Gaussian mechanism on the remaining
// coordinates, with the same sensitivity c·C.
//
// Learned noise (NoiseRank > 0, train/noise_fim.go) replaces N(0, σ²C²I) by
// N(0, σ²C²(β²I + U·diag(a)·Uᵀ)) on the released coordinates.
type TuningConfig struct {
	PretrainPublic float64 `json:"pretrain_public,omitempty"` // fraction of the training set made public (0 = none)
	// PublicExternal says the public data is not part of the training set but given by
	// the caller (train.Options.Public, e.g. attack reconn's fixed public pool). Run
	// sets it whenever Options.Public is given, so that the config (and its hash)
	// says so; a config with it needs Options.Public.
	PublicExternal bool    `json:"public_external,omitempty"`
	PretrainSteps  int     `json:"pretrain_steps,omitempty"` // non-private steps on the public part (0 = 200; < 0 = none)
	PretrainBatch  int     `json:"pretrain_batch,omitempty"` // their batch size (0 = the config's batch, at most the public size)
	PretrainLR     float64 `json:"pretrain_lr,omitempty"`    // their learning rate (0 = the config's lr)
	// PretrainWD is the pretraining's weight decay λ, L2 added to the mean gradient
	// before the optimizer (g + λw; Edmunds's code, Appendix B's "Weight Decay" of
	// Pre-train: 10⁻⁴ for Fig. 3.1, 10⁻² for Table 3.2; 0 = none).
	PretrainWD    float64 `json:"pretrain_weight_decay,omitempty"`
	PruneFraction float64 `json:"prune_fraction,omitempty"` // fraction of all parameters frozen by magnitude
	PruneMode     string  `json:"prune_mode,omitempty"`     // freeze (default) or zero
	Freeze        string  `json:"freeze,omitempty"`         // layers frozen: indices into the architecture's layers or tensor names (conv0, dense9.b), comma-separated

	NoiseRank    int     `json:"noise_rank,omitempty"`    // r: learned noise directions (0 = isotropic noise)
	NoisePower   float64 `json:"noise_power,omitempty"`   // ρ: extra noise power Σa_i as a fraction of the isotropic part's (default 0.25)
	NoiseBase    float64 `json:"noise_base,omitempty"`    // β ∈ (0, 1] (default 1: same ε as isotropic noise)
	NoiseSamples int     `json:"noise_samples,omitempty"` // public samples per FIM estimate (default 128)
	NoiseEvery   int     `json:"noise_every,omitempty"`   // re-estimate U every n steps (0 = once, at the start)

	// PerturbNet turns on the learned gradient perturbation g_φ (train/perturbnet.go):
	// a network trained on the public split (eq. 2.9) whose output is added to every
	// private per-sample gradient before clipping.
	PerturbNet    bool   `json:"perturb_net,omitempty"`
	PerturbArch   string `json:"perturb_arch,omitempty"`   // body: "" or mlp (one hidden layer on [z; g]), mlp2 (thesis Table B.5: two), cnn (thesis Table B.6, 1×28×28 inputs), constant (the thesis's BN net on one sample at a time: a learned constant)
	PerturbHidden int    `json:"perturb_hidden,omitempty"` // (first) hidden width H (0 = 32 for mlp, 512 for mlp2, 256 for cnn; constant: the BN shift's width, 256)
	// PerturbHidden2 is the second Dense width of mlp2, cnn and constant (0 = 256 for
	// mlp2 and constant, perturb_hidden for cnn; refused for mlp).
	PerturbHidden2 int `json:"perturb_hidden2,omitempty"`
	// PerturbL2 adds the weight decay to g_φ's gradient before Adam (the thesis code's
	// update) instead of decoupling it (AdamW, the default).
	PerturbL2     bool    `json:"perturb_l2,omitempty"`
	PerturbLambda float64 `json:"perturb_lambda,omitempty"` // λ of eq. 2.9 (0 = 1e3, the thesis's)
	PerturbSteps  int     `json:"perturb_steps,omitempty"`  // Adam steps per refresh (0 = 10; −1 = none: g_φ stays 0)
	PerturbBatch  int     `json:"perturb_batch,omitempty"`  // public samples per Adam step (0 = 64)
	PerturbLR     float64 `json:"perturb_lr,omitempty"`     // Adam learning rate (0 = 0.01, the thesis's)
	PerturbWD     float64 `json:"perturb_wd,omitempty"`     // AdamW decoupled weight decay (0 = 0.1, the thesis's; −1 = none)
	PerturbEvery  int     `json:"perturb_every,omitempty"`  // retrain every n private steps (0 = 1: every step)
	PerturbProbes int     `json:"perturb_probes,omitempty"` // Hutchinson probes s of eq. 2.6 (0 = 2, the thesis's)
	// PerturbNoStd feeds g_φ its raw inputs [z; g] (identity standardisation constants)
	// instead of standardising them. Not Edmunds's "No BN" (Appendix A.4, Table A.1):
	// that one standardises statically, as the default does for a fresh g_φ.
	PerturbNoStd bool `json:"perturb_no_standardise,omitempty"`
	// PerturbRestd refits the standardisation constants at every refresh, from the
	// refresh's first public batch at θ_t, instead of once per repeat: the closest
	// per-sample equivalent of the thesis's BN (Table B.5, "essential since the inputs
	// cannot be statically normalized"), i.e. BN with its statistics taken on the
	// public data at the current parameters and held fixed over the private step, so
	// each private sample's perturbation still depends on that sample alone.
	PerturbRestd bool `json:"perturb_restandardise,omitempty"`
	// PerturbEpochs, PerturbEpochDecay and PerturbMinEpochs are the thesis's g_φ
	// schedule (Appendix B, Tables B.1/B.2: 200, 50, 20): refresh r (0-based, one per
	// PerturbEvery private steps) trains max(E − r·D, M) epochs over the public split,
	// each epoch ⌈N_public/B⌉ Adam steps on consecutive batches of B = PerturbBatch
	// samples of a fresh permutation. PerturbEpochs > 0 replaces the PerturbSteps mode
	// (setting both is an error).
	PerturbEpochs     int `json:"perturb_epochs,omitempty"`      // E: epochs of the first refresh (0 = off: PerturbSteps mode)
	PerturbEpochDecay int `json:"perturb_epoch_decay,omitempty"` // D: epochs fewer at each later refresh (0 = none)
	PerturbMinEpochs  int `json:"perturb_min_epochs,omitempty"`  // M: floor of the schedule (0 = 1; 1 ≤ M ≤ E)
	// PerturbLambdaDecay and PerturbMinLambda are the thesis code's λ schedule (its
	// repository's defaults lam_decay 1e2, min_lam 1e1, which its Appendix B leaves
	// in force): refresh r (0-based) trains with λ_r = max(λ_min, λ − r·decay).
	// PerturbLambdaDecay = 0 keeps λ fixed.
	PerturbLambdaDecay float64 `json:"perturb_lambda_decay,omitempty"` // λ fewer at each later refresh (0 = none)
	PerturbMinLambda   float64 `json:"perturb_min_lambda,omitempty"`   // floor of the λ schedule (0 ≤ λ_min ≤ λ)
}

// Tuning defaults.
const (
	defaultPretrainSteps = 200
	defaultNoisePower    = 0.25
	defaultNoiseSamples  = 128
	PruneFreeze          = "freeze"
	PruneZero            = "zero"
)

// On reports whether any of the tuning features is on.
func (t TuningConfig) On() bool {
	return t.PretrainPublic > 0 || t.PublicExternal || t.PruneFraction > 0 || t.Freeze != "" || t.NoiseRank > 0 || t.PerturbNet
}

// hasPublic reports whether the run has public data (a split of the training set or
// the caller's).
func (t TuningConfig) hasPublic() bool { return t.PretrainPublic > 0 || t.PublicExternal }

// validate checks the tuning fields that do not depend on the data.
func (t TuningConfig) validate(c Config) error {
	if !finite(t.PretrainPublic) || t.PretrainPublic < 0 || t.PretrainPublic >= 1 {
		return fmt.Errorf("config: pretrain_public = %v must be in [0, 1)", t.PretrainPublic)
	}
	if t.PretrainBatch < 0 || !finite(t.PretrainLR) || t.PretrainLR < 0 || !finite(t.PretrainWD) || t.PretrainWD < 0 {
		return fmt.Errorf("config: pretrain_batch = %d, pretrain_lr = %v and pretrain_weight_decay = %v must be finite and ≥ 0", t.PretrainBatch, t.PretrainLR, t.PretrainWD)
	}
	if t.PretrainPublic > 0 && t.PublicExternal {
		return fmt.Errorf("config: pretrain_public = %v splits the training set into public and private parts, but the public data is given by the caller (public_external, train.Options.Public): use one of the two", t.PretrainPublic)
	}
	if !t.hasPublic() && (t.PretrainSteps > 0 || t.PretrainBatch > 0 || t.PretrainLR > 0 || t.PretrainWD > 0) {
		return fmt.Errorf("config: pretraining needs public data: set pretrain_public > 0 (or give train.Options.Public)")
	}
	if t.PublicExternal && t.pretrainSteps() == 0 && !t.PerturbNet && t.NoiseRank == 0 {
		return fmt.Errorf("config: public data is given (public_external, train.Options.Public) but nothing reads it: pretraining is off (pretrain_steps < 0) and neither perturb_net nor noise_rank is set")
	}
	if !finite(t.PruneFraction) || t.PruneFraction < 0 || t.PruneFraction >= 1 {
		return fmt.Errorf("config: prune_fraction = %v must be in [0, 1)", t.PruneFraction)
	}
	switch t.PruneMode {
	case "", PruneFreeze, PruneZero:
	default:
		return fmt.Errorf("config: prune_mode = %q, want %q or %q", t.PruneMode, PruneFreeze, PruneZero)
	}
	if (t.PruneFraction > 0 || t.Freeze != "") && c.WeightDecay != 0 {
		return fmt.Errorf("config: weight_decay would move frozen parameters; use weight_decay = 0 with pruning or freezing")
	}
	if t.NoiseRank < 0 || t.NoiseSamples < 0 || t.NoiseEvery < 0 {
		return fmt.Errorf("config: noise_rank, noise_samples and noise_every must be ≥ 0")
	}
	if !finite(t.NoisePower) || t.NoisePower < 0 || !finite(t.NoiseBase) || t.NoiseBase < 0 || t.NoiseBase > 1 {
		return fmt.Errorf("config: noise_power = %v must be ≥ 0 and noise_base = %v in (0, 1] (0 = 1)", t.NoisePower, t.NoiseBase)
	}
	if t.NoiseRank > 0 && !t.hasPublic() {
		return fmt.Errorf("config: learned noise (noise_rank > 0) is estimated on public data: set pretrain_public > 0 (or give train.Options.Public)")
	}
	if t.NoiseRank == 0 && (t.NoisePower != 0 || t.NoiseBase != 0 || t.NoiseSamples != 0 || t.NoiseEvery != 0) {
		return fmt.Errorf("config: noise_power/base/samples/every need noise_rank > 0")
	}
	if t.On() && c.Sigma == 0 && c.TargetEpsilon == 0 && t.NoiseRank > 0 {
		return fmt.Errorf("config: learned noise needs sigma > 0")
	}
	if err := t.validatePerturb(); err != nil {
		return err
	}
	if t.On() && (c.FILEta > 0 || c.FILLabel) {
		return fmt.Errorf("config: fil_eta and fil_label do not yet account frozen coordinates, the public/private split or learned noise; turn them off with pretraining/pruning/freezing/learned noise")
	}
	if t.On() && c.FILNormalizedInputs {
		return fmt.Errorf("config: pretraining/pruning/freezing/learned noise take FIL w.r.t. raw inputs; drop fil_normalized_inputs")
	}
	return nil
}

func (t TuningConfig) pretrainSteps() int {
	switch {
	case !t.hasPublic() || t.PretrainSteps < 0:
		return 0
	case t.PretrainSteps == 0:
		return defaultPretrainSteps
	}
	return t.PretrainSteps
}

func (t TuningConfig) noisePower() float64 {
	if t.NoisePower == 0 {
		return defaultNoisePower
	}
	return t.NoisePower
}

func (t TuningConfig) noiseBase() float64 {
	if t.NoiseBase == 0 {
		return 1
	}
	return t.NoiseBase
}

func (t TuningConfig) noiseSamples() int {
	if t.NoiseSamples == 0 {
		return defaultNoiseSamples
	}
	return t.NoiseSamples
}

// TuningResult is result.json's "tuning": what pretraining, pruning, freezing and
// learned noise did.
type TuningResult struct {
	NPublic  int `json:"n_public"`  // public samples (not part of the private training set)
	NPrivate int `json:"n_private"` // private samples (= dataset.n_train)
	// PublicExternal: the public data was given by the caller (train.Options.Public),
	// not split off the training set (all n_train samples are private);
	// PublicSHA256 is its content fingerprint (data.Dataset.Fingerprint).
	PublicExternal bool   `json:"public_external,omitempty"`
	PublicSHA256   string `json:"public_sha256,omitempty"`
	// PretrainSteps is the number of non-private steps on the public part;
	// PretrainAccuracy the test accuracy after them (mean over repeats; the thesis's
	// "Pretrain" row).
	PretrainSteps    int     `json:"pretrain_steps"`
	PretrainAccuracy float64 `json:"pretrain_accuracy,omitempty"`
	// Released is the number of trained (released) coordinates, Frozen the rest.
	Released int `json:"released_params"`
	Frozen   int `json:"frozen_params"`
	// FrozenTensors names the tensors frozen by Freeze.
	FrozenTensors []string `json:"frozen_tensors,omitempty"`
	// Noise describes learned noise (nil when isotropic).
	Noise *NoiseFIMResult `json:"noise,omitempty"`
	// Perturb describes the learned gradient perturbation g_φ (nil when off).
	Perturb *PerturbNetResult `json:"perturb,omitempty"`
}

// tuning is the run-time state of the tuning features.
type tuning struct {
	cfg      TuningConfig
	public   *data.Dataset
	external bool                     // public is the caller's (Options.Public), not a split of the training set
	net      *models.Network[float32] // the engine network (masked gradients and FIL)
	base     models.Model
	frozen   []bool // static freeze mask from Freeze (nil: none)
	tensors  []string
	steps    int     // pretraining steps
	runCfg   Config  // the run's config (its optimizer pretrains too)
	lr, wd   float64 // pretraining's learning rate and weight decay
	batch    int
	p        int
	clip     models.Clip

	// Per repeat (the repeat being trained).
	cache    map[uint64]*tunedRepeat // by init seed
	cur      *tunedRepeat
	noise    *noiseFIM
	perturb  *perturbState
	diag     *perturbDiag    // g_φ diagnostics (perturbdiag.go); nil = off
	pretrAcc map[int]float64 // by repeat
	test     *data.Dataset
	classes  int
}

// tunedRepeat is what a repeat's start derives from its init seed.
type tunedRepeat struct {
	params  []float32 // initial parameters of the private phase (pretrained, pruned)
	mask    []bool    // released coordinates (nil: all)
	acc     float64   // test accuracy of params
	nFrozen int
}

// prepareTuning splits the training set into public and private parts (or takes the
// caller's public data, external), resolves the frozen layers and wraps the model (run.go's
// prepare, before N is read).
func (s *setup) prepareTuning(external *data.Dataset) error {
	t := s.cfg.Tuning
	switch {
	case external != nil && !t.PublicExternal:
		return errors.New("train.Options.Public is given but config.tuning.public_external is not set (train.Run sets it)")
	case external == nil && t.PublicExternal:
		return errors.New("config.tuning.public_external: the public data is given by the caller, and train.Options.Public is nil (resume such a run through the program that started it)")
	}
	if t == (TuningConfig{}) {
		return nil
	}
	if err := t.validate(s.cfg); err != nil {
		return err
	}
	if !t.On() {
		return nil
	}
	tu := &tuning{cfg: t, base: s.model, p: s.model.NumParams(), runCfg: s.cfg,
		cache: map[uint64]*tunedRepeat{}, pretrAcc: map[int]float64{}, test: s.test, classes: s.arch.Classes}
	var err error
	if tu.clip, err = s.cfg.clip(); err != nil {
		return err
	}
	nm, ok := s.model.(interface {
		Network() *models.Network[float32]
	})
	if ok {
		tu.net = nm.Network()
	} else if t.PruneFraction > 0 || t.Freeze != "" || t.NoiseRank > 0 || t.PerturbNet {
		if s.cfg.Device != "cpu" {
			return fmt.Errorf("pruning, freezing, learned noise and perturb_net need the engine's per-sample passes; model %s on device %s does not offer them (use --device cpu)", s.arch.Name, s.cfg.Device)
		}
		return fmt.Errorf("pruning, freezing, learned noise and perturb_net need the engine's per-sample passes; the model given for %s (%T) does not expose the engine network", s.arch.Name, s.model)
	}
	if err := t.checkPerturbInput(s.train.C, s.train.H, s.train.W); err != nil {
		return err
	}
	if t.PublicExternal {
		if err := checkPublicShape(external, s.train); err != nil {
			return err
		}
		if s.cfg.FILRefineTop > 0 {
			return fmt.Errorf("config: fil_refine_top = %d supports plain DP-SGD runs, not runs with public data", s.cfg.FILRefineTop)
		}
		tu.public = external
		tu.external = true
	}
	if t.PretrainPublic > 0 {
		n := s.train.N
		nPub := int(math.Floor(t.PretrainPublic * float64(n)))
		if nPub < 1 || n-nPub < s.cfg.Batch {
			return fmt.Errorf("pretrain_public = %v of %d samples leaves %d public and %d private samples (need ≥ 1 public and ≥ batch = %d private)", t.PretrainPublic, n, nPub, n-nPub, s.cfg.Batch)
		}
		perm := data.Permutation(n, deriveSeed(s.cfg.Seed, 0, streamTuneSplit))
		pub := slices.Clone(perm[:nPub])
		priv := slices.Clone(perm[nPub:])
		slices.Sort(pub)
		slices.Sort(priv)
		if tu.public, err = s.train.Select(pub); err != nil {
			return fmt.Errorf("public split: %w", err)
		}
		if s.train, err = s.train.Select(priv); err != nil {
			return fmt.Errorf("private split: %w", err)
		}
	}
	if tu.public != nil {
		tu.steps = t.pretrainSteps()
		tu.lr, tu.wd = t.PretrainLR, t.PretrainWD
		if tu.lr == 0 {
			tu.lr = s.cfg.LR
		}
		tu.batch = t.PretrainBatch
		if tu.batch == 0 {
			tu.batch = s.cfg.Batch
		}
		tu.batch = min(tu.batch, tu.public.N)
	}
	if t.Freeze != "" {
		if tu.frozen, tu.tensors, err = freezeMask(s.arch, t.Freeze); err != nil {
			return err
		}
	}
	s.tune = tu
	s.model = &tunedModel{base: s.model, t: tu}
	return nil
}

// checkPublicShape checks the caller's public data (train.Options.Public) against
// the training data: non-empty, the same image shape and classes, labels in range.
func checkPublicShape(pub, tr *data.Dataset) error {
	if pub == nil || pub.N < 1 {
		return errors.New("train.Options.Public is empty: the public data needs ≥ 1 sample")
	}
	if pub.C != tr.C || pub.H != tr.H || pub.W != tr.W || pub.Classes != tr.Classes {
		return fmt.Errorf("train.Options.Public has shape %dx%dx%d with %d classes, the training data %dx%dx%d with %d classes: the public data must be drawn from the same kind of data",
			pub.C, pub.H, pub.W, pub.Classes, tr.C, tr.H, tr.W, tr.Classes)
	}
	if len(pub.Images) != pub.N*pub.Dim() || len(pub.Labels) != pub.N {
		return fmt.Errorf("train.Options.Public holds %d values and %d labels for %d samples of %d values", len(pub.Images), len(pub.Labels), pub.N, pub.Dim())
	}
	for i, y := range pub.Labels {
		if y < 0 || y >= pub.Classes {
			return fmt.Errorf("train.Options.Public: sample %d has label %d outside [0, %d)", i, y, pub.Classes)
		}
	}
	return nil
}

// Stream of the public/private split (per run, not per repeat) and of the tuning
// draws of each repeat (pretraining batches, FIM samples, learned noise).
const (
	streamTuneSplit uint64 = 0x7475_6e65_0001
	streamTuneDraws uint64 = 0x7475_6e65_0002
)

// tuneSigma returns how learned noise turns σ into the effective σ the accountants
// and the FIL normalisation use (resolvePrivacy, after σ is given or calibrated;
// nil without learned noise): with learned noise of base β the released covariance
// σ²C²(β²I + UAUᵀ) has smallest eigenvalue β²σ²C² on the released coordinates
// (noise_fim.go), so σ_eff = βσ; with target_epsilon the calibrated σ is σ_eff and
// σ = σ_eff/β.
func (s *setup) tuneSigma(cfg Config) func(sigma float64) float64 {
	if s.tune == nil || s.tune.cfg.NoiseRank == 0 {
		return nil
	}
	return func(sigma float64) float64 {
		beta := s.tune.cfg.noiseBase()
		nominal := sigma
		if cfg.TargetEpsilon > 0 {
			nominal = sigma / beta
		} else {
			sigma = beta * nominal
		}
		s.tune.noise = &noiseFIM{rank: s.tune.cfg.NoiseRank, power: s.tune.cfg.noisePower(), beta: beta,
			samples: s.tune.cfg.noiseSamples(), every: s.tune.cfg.NoiseEvery, nominal: nominal, clipC: cfg.Clip}
		return sigma
	}
}

// freezeMask resolves the freeze list to a parameter mask (true = frozen).
func freezeMask(arch models.Arch, spec string) ([]bool, []string, error) {
	ps, err := arch.Params()
	if err != nil {
		return nil, nil, err
	}
	p := arch.NumParams()
	mask := make([]bool, p)
	var names []string
	for _, tok := range strings.Split(spec, ",") {
		tok = strings.TrimSpace(tok)
		if tok == "" {
			continue
		}
		hit := false
		idx, numErr := strconv.Atoi(tok)
		for _, t := range ps {
			match := numErr == nil && t.Layer == idx ||
				numErr != nil && (t.Name == tok || strings.HasPrefix(t.Name, tok+"."))
			if !match {
				continue
			}
			hit = true
			for i := t.Offset; i < t.Offset+t.Size; i++ {
				mask[i] = true
			}
			if !slices.Contains(names, t.Name) {
				names = append(names, t.Name)
			}
		}
		if !hit {
			var all []string
			for _, t := range ps {
				all = append(all, fmt.Sprintf("%d:%s", t.Layer, t.Name))
			}
			return nil, nil, fmt.Errorf("freeze: %q names no parameter tensor of %s (layer:tensor = %s)", tok, arch.Name, strings.Join(all, ", "))
		}
	}
	frozen := 0
	for _, f := range mask {
		if f {
			frozen++
		}
	}
	if frozen == p {
		return nil, nil, fmt.Errorf("freeze %q freezes all %d parameters of %s", spec, p, arch.Name)
	}
	return mask, names, nil
}

// startTuning derives the repeat's tuning state from its init seed (run.go's
// newWorker, after the state is known): the pretrained parameters and the mask. A
// fresh repeat already took its parameters from tunedModel.Init; a resumed one
// recomputes the (deterministic) pretraining for its mask.
func (s *setup) startTuning(st *repeatState) error {
	if s.tune == nil {
		return nil
	}
	tr, err := s.tune.repeat(st.InitSeed)
	if err != nil {
		return err
	}
	s.tune.cur = tr
	s.tune.pretrAcc[st.Repeat] = tr.acc
	if s.tune.noise != nil {
		s.tune.noise.start(s.cfg.Seed, st.Repeat, tr.mask)
	}
	if s.tune.cfg.PerturbNet {
		s.tune.startPerturb(s.cfg.Seed, st.Repeat, tr.mask, s.d)
		if st.Perturb != nil { // resuming: continue g_φ where the checkpoint left it
			if err := s.tune.perturb.restore(st.Perturb); err != nil {
				return err
			}
		}
	}
	return nil
}

// tuneStep runs at the start of every DP-SGD step (learned noise: re-estimate U).
func (w *worker) tuneStep() error {
	tu := w.s.tune
	if tu == nil {
		return nil
	}
	if tu.perturb != nil {
		ctx := w.ctx
		if ctx == nil {
			ctx = context.Background()
		}
		if err := tu.perturb.refresh(ctx, tu, w.st.Step, w.p32); err != nil {
			return err
		}
	}
	if tu.noise == nil {
		return nil
	}
	return tu.noise.refresh(tu, w.st.Step, w.p32)
}

// tuneRelease shapes the released noisy sum of the step (run.go's step, after the
// isotropic noise): it adds the learned noise component and zeroes the frozen
// coordinates, which are neither released nor updated.
func (w *worker) tuneRelease() {
	tu := w.s.tune
	if tu == nil {
		return
	}
	if tu.noise != nil {
		tu.noise.add(w.st.Step, w.sum)
	}
	if m := tu.cur.mask; m != nil {
		for i, on := range m {
			if !on {
				w.sum[i] = 0
			}
		}
	}
}

// tuningResult fills result.json's "tuning".
func (s *setup) tuningResult(res *Result) error {
	tu := s.tune
	if tu == nil {
		return nil
	}
	tr := &TuningResult{NPrivate: s.n, PretrainSteps: tu.steps, FrozenTensors: tu.tensors, Released: tu.p}
	if tu.public != nil {
		tr.NPublic = tu.public.N
		if tu.external {
			tr.PublicExternal, tr.PublicSHA256 = true, publicFingerprint(tu.public)
		}
	}
	if tu.cur != nil {
		tr.Frozen = tu.cur.nFrozen
		tr.Released = tu.p - tu.cur.nFrozen
	}
	if tu.steps > 0 {
		// In repeat order (a fixed summation order); a resumed run did not start the
		// repeats finished before its checkpoint and recomputes their (deterministic)
		// pretraining.
		for _, rr := range res.Repeats {
			a, ok := tu.pretrAcc[rr.Repeat]
			if !ok {
				pre, err := tu.repeat(rr.InitSeed)
				if err != nil {
					return fmt.Errorf("pretraining accuracy of repeat %d: %w", rr.Repeat, err)
				}
				a = pre.acc
			}
			tr.PretrainAccuracy += a / float64(len(res.Repeats))
		}
	}
	if tu.noise != nil {
		tr.Noise = tu.noise.result(s.priv.Sigma)
	}
	if ps := tu.perturb; ps != nil {
		r := ps.summary()
		tr.Perturb = &r
	}
	res.Tuning = tr
	return nil
}
