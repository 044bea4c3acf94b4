package train

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/dpfil/dpfil/accounting"
	"github.com/dpfil/dpfil/data"
	"github.com/dpfil/dpfil/internal/dirlock"
	"github.com/dpfil/dpfil/internal/stats"
	"github.com/dpfil/dpfil/models"
	"github.com/dpfil/dpfil/train/fil"
)

// Options controls where and how a run executes; apart from the data and model it
// may supply (Data, Public, Model), none of it changes the result.
type Options struct {
	Out      string               // run directory: result.json, dfil.npy, params, checkpoints ("" = write nothing)
	Resume   bool                 // continue from Out's checkpoint if present
	Progress func(Event)          // optional progress sink (step, loss, acc, eps, dfil max/median)
	Logf     func(string, ...any) // optional log sink

	// CheckpointEvery writes a checkpoint every n steps (> 0); 0 checkpoints after
	// the first step and then every CheckpointInterval of wall time (default 1
	// minute, so a kill loses at most about a minute of work); < 0 only on
	// cancellation and between repeats.
	CheckpointEvery    int
	CheckpointInterval time.Duration

	// Data, when set, is used instead of loading Config.Dataset (e.g. a sweep that
	// loads the data once). Its Train part must be non-empty.
	Data *data.Split
	// Model, when set, replaces the engine model built from Config.Model; its input
	// dimension must match the data. A model whose architecture name has the form
	// kind:name (e.g. a gorgonet.GraphModel) must be named by Config.Model
	// (Config.WithModel), so that the result and Config.Hash say what ran; one that
	// lacks second-order passes (models.FirstOrderOnly) trains only with FIL off
	// (fil_coords = 0), else Run fails before training with the model's reason.
	// Tests also use it to pin the optimizer glue.
	Model models.Model

	// OnStep, when set, is called at every DP-SGD step after the noise is drawn and
	// before the update (e.g. to record the adversary's transcript). An error stops
	// the run. A resumed run calls it from the checkpoint's step on, so a consumer
	// that persists records must drop those past that step (see StepRecord.Step).
	OnStep func(StepRecord) error

	// Public, when set, is the run's public data (Edmunds 2024): pretraining, g_φ
	// (perturb_net) and learned noise read it, as they read the public split of
	// pretrain_public > 0, but it is not part of the training set: every training
	// sample stays private (result tuning.n_private = dataset.n_train). Its image
	// shape and classes must be the training data's. Run records it in the config
	// (tuning.public_external, so the config hash differs from the same recipe with
	// a public split) and in the result (tuning.public_external, public_sha256); it
	// cannot be combined with pretrain_public > 0, and some feature must read it. A
	// resumed run must be given the same public data (the checkpoint holds its
	// fingerprint).
	Public *data.Dataset

	// PerturbDiag > 0 writes g_φ's per-step diagnostics into Out/perturb-diag
	// (train/perturbdiag.go): per batch member the norms of its base gradient,
	// perturbation and final contribution and their cosine; the three vectors
	// themselves for the first PerturbDiag members; test accuracy, dFIL and ε. It
	// needs Out and perturb_net. A resumed run whose directory holds them keeps
	// writing them (with the count they were started with).
	PerturbDiag int
}

// StepRecord is what an informed adversary sees of one step. Its slices are the
// trainer's buffers: valid only during the OnStep call, not to be modified.
type StepRecord struct {
	Repeat, Step, Steps int       // repeat, step t (0-based), T
	Batch               []int     // training-set indices of the batch (may be empty)
	Params              []float64 // θ_t, the master parameters before the update
	// Released is the privatised gradient sum Σ clip(∇ℓ) + N(0, σ²C²I), rounded to
	// float32 exactly as the trainer applies it: ḡ_t = float64(Released)/Denominator
	// goes into the momentum update.
	Released    []float32
	Denominator float64 // the nominal batch size B
	// Run facts for a transcript header.
	N             int     // training-set size
	Q             float64 // sampling rate B/N
	Dataset       string
	DatasetSHA256 string
}

// Event is one progress report.
type Event struct {
	Repeat, Repeats int
	Step, Steps     int     // steps done in this repeat, of T
	Loss            float64 // mean loss of the last non-empty batch
	TestAccuracy    float64 // latest test accuracy (NaN before the first evaluation)
	Epsilon         float64 // ε at δ after Step steps (+Inf without noise), from Accountant
	Accountant      string  // "pld" or "rdp": the result's accountant (accounting.RunningEpsilon); "" without noise
	DFILMax         float64 // current max / median dFIL of this repeat (0 when FIL is off)
	DFILMedian      float64
}

// setup is everything a run derives from its config and data before training.
type setup struct {
	cfg     Config  // as given (what the result records), never changed: the resolved privacy parameters are priv
	priv    Privacy // σ (solved, effective), c, σ/c, q, T, δ, sampling: built once
	arch    models.Arch
	model   models.Model
	train   *data.Dataset
	test    *data.Dataset
	n, d, p int
	steps   int
	clip    models.Clip
	kappa   float64 // FIL factor κ under the run's sampling (1 for shuffle)
	filK    int     // coordinates per sample and step (d when exact); 0 = off
	filRate float64 // probability a batch member's FIL is computed (1 = all)

	net      *models.Network[float32] // engine network for η and label FIL (extrafil.go)
	etaScale []float64                // input scale of their directions (nil: raw pixels)

	tune *tuning // pretraining, pruning, freezing, learned noise (tuning.go); nil = off

	res   residentModel // the device keeps the steps (resident.go); nil = host steps
	tally *deviceTally  // a device model's per-step counts (nil on the CPU)
}

// Run trains cfg.Repeats independent models with DP-SGD and returns the result, also
// written to opt.Out. Cancelling ctx stops at a step boundary after writing a
// checkpoint (when opt.Out is set) and returns ctx.Err().
func Run(ctx context.Context, cfg Config, opt Options) (*Result, error) {
	if opt.Public != nil {
		cfg.Tuning.PublicExternal = true // the config says that the public data was the caller's
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.FILRefineTop > 0 && opt.OnStep == nil {
		return nil, errors.New("config: fil_refine_top needs the run's transcripts: train with RunWithTranscript, which records them and refines")
	}
	logf := opt.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	var ck *checkpoint
	if opt.Out != "" {
		unlock, err := dirlock.LockAs(opt.Out, "run directory",
			"run directory "+opt.Out+" is in use by another dpfil process (one run per directory)")
		if err != nil {
			return nil, err
		}
		defer unlock()
		if ck, err = loadCheckpoint(opt.Out); err != nil {
			return nil, err
		}
		_, statErr := os.Stat(filepath.Join(opt.Out, ResultFile))
		hasResult := statErr == nil
		if !errors.Is(statErr, fs.ErrNotExist) && statErr != nil {
			return nil, fmt.Errorf("run directory: %w", statErr)
		}
		switch {
		case !opt.Resume && (ck != nil || hasResult):
			return nil, fmt.Errorf("run directory %s already holds a run; resume it or choose another output directory", opt.Out)
		case opt.Resume && ck == nil && hasResult:
			r, err := ReadResult(opt.Out)
			if err != nil {
				return nil, err
			}
			if r.Config.Hash() != cfg.Hash() {
				return nil, fmt.Errorf("run directory %s holds a finished run of a different config (hash %s, want %s)", opt.Out, r.Config.Hash(), cfg.Hash())
			}
			if got, want := r.publicSHA256(), publicFingerprint(opt.Public); got != want {
				return nil, fmt.Errorf("run directory %s holds a finished run with other public data (train.Options.Public fingerprint %q, want %q)", opt.Out, got, want)
			}
			logf("run in %s is already finished", opt.Out)
			return r, nil
		case ck != nil && ck.ConfigHash != cfg.Hash():
			return nil, fmt.Errorf("checkpoint in %s is of a different config (hash %s, want %s)", opt.Out, ck.ConfigHash, cfg.Hash())
		case ck != nil && ck.Public != publicFingerprint(opt.Public):
			return nil, fmt.Errorf("checkpoint in %s was trained with other public data (train.Options.Public fingerprint %q, given %q)", opt.Out, ck.Public, publicFingerprint(opt.Public))
		}
	}
	s, err := prepare(cfg, opt, logf)
	if err != nil {
		return nil, err
	}
	if err := s.startPerturbDiag(opt); err != nil {
		return nil, err
	}
	if c, ok := s.model.(io.Closer); ok && opt.Model == nil {
		defer c.Close() // a device model built here holds device memory
	}
	if d, ok := s.model.(interface{ Device() string }); ok {
		logf("device: %s", d.Device())
	}
	if ck == nil {
		ck = &checkpoint{Config: cfg, ConfigHash: cfg.Hash(), Public: publicFingerprint(opt.Public)}
	} else {
		logf("resuming %s: repeat %d/%d", opt.Out, ck.Repeat+1, cfg.Repeats)
	}
	res, err := s.run(ctx, ck, opt, logf)
	if err != nil && opt.Out != "" && errors.Is(err, ErrDiverged) {
		return nil, discardDiverged(opt.Out, err)
	}
	return res, err
}

// publicFingerprint is the content fingerprint of the caller's public data
// (Options.Public; "" when none).
func publicFingerprint(pub *data.Dataset) string {
	switch {
	case pub == nil:
		return ""
	case pub.SHA256 != "":
		return pub.SHA256
	}
	return pub.Fingerprint()
}

// publicSHA256 is the fingerprint of the caller's public data the run recorded (""
// when it had none).
func (r *Result) publicSHA256() string {
	if r.Tuning == nil {
		return ""
	}
	return r.Tuning.PublicSHA256
}

// ErrDiverged is wrapped by the error of a run whose parameters or loss stopped
// being finite. Resuming such a run is pointless (it continues bit-identically from
// its last checkpoint and diverges again), so Run removes the checkpoint.
var ErrDiverged = errors.New("training diverged")

// discardDiverged removes the checkpoint (and g_φ diagnostics) of the diverged run in dir and says so in
// the returned error, which wraps err.
func discardDiverged(dir string, err error) error {
	if rerr := os.Remove(filepath.Join(dir, CheckpointFile)); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
		return fmt.Errorf("%w (and removing its checkpoint failed: %v; remove %s before starting again)", err, rerr, filepath.Join(dir, CheckpointFile))
	}
	if rerr := os.RemoveAll(filepath.Join(dir, PerturbDiagDir)); rerr != nil { // diagnostics of a run that has no result
		return fmt.Errorf("%w (and removing its g_φ diagnostics failed: %v)", err, rerr)
	}
	return fmt.Errorf("%w; the run is not resumable (it would diverge again), its checkpoint was removed from %s: start it again with other settings", err, dir)
}

// prepare loads the data and the model and computes the accounting constants.
func prepare(cfg Config, opt Options, logf func(string, ...any)) (*setup, error) {
	s := &setup{cfg: cfg}
	var err error
	split := opt.Data
	if split == nil {
		split, err = data.Load(cfg.Dataset, data.Options{DataDir: cfg.DataDir, Logf: logf})
		if err != nil {
			return nil, fmt.Errorf("load dataset %s: %w", cfg.Dataset, err)
		}
	}
	if split.Train == nil || split.Train.N == 0 {
		return nil, fmt.Errorf("dataset %s has no training samples", cfg.Dataset)
	}
	s.train, s.test = split.Train, split.Test
	if s.arch, err = resolveArch(cfg, split); err != nil {
		return nil, err
	}
	if cfg.TrainSubset > 0 {
		if cfg.TrainSubset > s.train.N {
			return nil, fmt.Errorf("train_subset = %d exceeds the %d training samples of %s", cfg.TrainSubset, s.train.N, cfg.Dataset)
		}
		if s.train, err = s.train.Head(cfg.TrainSubset); err != nil {
			return nil, fmt.Errorf("train subset: %w", err)
		}
	}
	s.model = opt.Model
	if s.model == nil {
		if callerModel(cfg.Model) {
			return nil, fmt.Errorf("model %s is supplied by the caller through train.Options.Model, and none was given", cfg.Model)
		}
		if s.model, err = newModelFor(s.arch, cfg); err != nil {
			return nil, err
		}
	} else {
		s.arch = s.model.Arch()
		if err := checkCallerModel(cfg, s.model); err != nil {
			return nil, err
		}
	}
	if err := applyClipAlgo(cfg, s.model); err != nil {
		return nil, err
	}
	if err := applyConvAlgo(cfg, s.model); err != nil {
		return nil, err
	}
	if cfg.FILNormalizedInputs {
		nm, ok := s.model.(interface {
			Network() *models.Network[float32]
		})
		if !ok {
			return nil, fmt.Errorf("fil_normalized_inputs: model %s does not support FIL w.r.t. normalised inputs", s.arch.Name)
		}
		nm.Network().SetFILNormalizedInputs(true)
	}
	if err := s.prepareTuning(opt.Public); err != nil {
		return nil, err
	}
	s.n, s.d, s.p = s.train.N, s.train.Dim(), s.model.NumParams()
	if s.model.InputDim() != s.d {
		return nil, fmt.Errorf("model %s takes %d input values, dataset %s has %d (%dx%dx%d)", s.arch.Name, s.model.InputDim(), cfg.Dataset, s.d, s.train.C, s.train.H, s.train.W)
	}
	if s.train.Classes > s.arch.Classes {
		return nil, fmt.Errorf("dataset %s has %d classes, model %s only %d outputs", cfg.Dataset, s.train.Classes, s.arch.Name, s.arch.Classes)
	}
	if s.test != nil && (s.test.Dim() != s.d || s.test.Classes > s.arch.Classes) {
		return nil, fmt.Errorf("dataset %s: test split shape does not match the training split", cfg.Dataset)
	}
	if cfg.Batch > s.n {
		return nil, fmt.Errorf("batch = %d exceeds the %d training samples", cfg.Batch, s.n)
	}
	s.steps = cfg.ResolveSteps(s.n)
	if s.steps < 1 {
		return nil, fmt.Errorf("epochs = %v gives no steps", cfg.Epochs)
	}
	if s.clip, err = cfg.clip(); err != nil {
		return nil, err
	}
	c := s.clip.Constant()
	if !(c >= 1) || math.IsInf(c, 0) {
		return nil, fmt.Errorf("clip constant c = %v must be finite and ≥ 1", c)
	}
	if s.priv, err = resolvePrivacy(cfg, s.n, s.steps, c, s.tuneSigma(cfg), logf); err != nil {
		return nil, err
	}
	if s.priv.Noisy() {
		e0, _ := s.priv.dpsgd().StepEvent(0)
		if s.kappa, err = accounting.KappaOf(e0, s.priv.FILDelta, accounting.ShuffleRigorous); err != nil {
			return nil, fmt.Errorf("FIL accounting: %w", err)
		}
	} else {
		s.kappa = 1
	}
	s.filRate = cfg.FILRate
	if s.filRate == 0 {
		s.filRate = 1
	}
	if err := s.prepareExtraFIL(); err != nil {
		return nil, err
	}
	if cfg.FILCoords > s.d && !cfg.FILExact {
		return nil, fmt.Errorf("fil_coords = %d exceeds the %d input values of %s: at most %d coordinates per sample and step, or fil_exact for the exact trace", cfg.FILCoords, s.d, cfg.Dataset, s.d)
	}
	if cfg.FILEnabled() {
		s.filK = cfg.FILCoords
		if cfg.FILExact {
			s.filK = s.d
		}
	}
	if err := s.prepareResident(logf); err != nil {
		return nil, err
	}
	return s, nil
}

// checkCallerModel checks a model given through Options.Model against the config:
// one with a kind:name architecture (Config.WithModel) must be the config's Model and
// runs on the CPU, and a model without second-order passes (models.FirstOrderOnly)
// refuses FIL, η and label FIL before any work, with its reason.
func checkCallerModel(cfg Config, m models.Model) error {
	name := m.Arch().Name
	if (callerModel(name) || callerModel(cfg.Model)) && (cfg.Arch != nil || cfg.Model != name) {
		return fmt.Errorf("config: model = %q but train.Options.Model is %s: set the config's model to it (Config.WithModel) so that results name what ran", cfg.ModelName(), name)
	}
	if callerModel(name) && cfg.Device != "cpu" {
		return fmt.Errorf("config: device = %q, but model %s runs on the CPU: set device cpu so that results say where it ran", cfg.Device, name)
	}
	fo, ok := m.(models.FirstOrderOnly)
	if !ok {
		return nil
	}
	err := fo.SecondOrderErr()
	switch {
	case err == nil:
	case cfg.FILEnabled():
		return fmt.Errorf("FIL (fil_coords = %d, fil_exact = %v): %w", cfg.FILCoords, cfg.FILExact, err)
	case cfg.FILEta > 0 || cfg.FILLabel:
		return fmt.Errorf("fil_eta / fil_label: %w", err)
	}
	return nil
}

// progressEpsilon is ε at δ of the steps done so far, from the accountant the
// result will report (accounting.RunningEpsilon: auto is the tighter of a slightly
// coarser PLD and RDP), and that accountant's name.
func (w *worker) progressEpsilon() (float64, string) {
	if w.progress == nil {
		return math.Inf(1), ""
	}
	eps, acct, err := accounting.RunningEpsilon(w.ledger, w.s.priv.Delta, w.s.priv.Accountant)
	if err != nil {
		return math.NaN(), ""
	}
	return eps, acct
}

// worker holds the buffers and state of the repeat being trained.
type worker struct {
	s        *setup
	st       *repeatState
	opt      optimizer
	sampler  sampler
	coordRNG *rngState
	// coordsOnDevice: the step's FIL coordinates were drawn on the device and
	// coordRNG waits for the count of what that consumed (skipDeviceCoords).
	coordsOnDevice bool
	noiseKey       [2]uint32 // Philox key of the repeat's noise (noise.go)
	fil            *accounting.FIL
	ledger         accounting.Ledger         // the privacy events emitted so far
	progress       *accounting.RDPAccountant // the same events in RDP, for progress (nil when σ = 0)

	p32    []float32
	x      []float32
	y      []int
	sum    []float32
	losses []float64
	grad   []float64
	coords [][]int
	sq     []float64
	traceI []float64
	fidx   []int     // FIL members of the batch (when fil_rate < 1)
	fx     []float32 // and their inputs and labels
	fy     []int
	onStep func(StepRecord) error
	// ctx is the run's context: long work inside a step (a g_φ refresh) stops when
	// it is done, and the step fails with its error (nil: context.Background()).
	ctx context.Context
	res residentModel // s.res: the steps run on the device (resident.go)
	pre []float64     // θ_t for OnStep on a resident device
}

func (s *setup) newWorker(repeat int, st *repeatState) (*worker, error) {
	w := &worker{s: s}
	w.sampler = nil
	samplerRNG := newRNG(newStream(s.cfg.Seed, repeat, streamSampler))
	w.coordRNG = newRNG(newStream(s.cfg.Seed, repeat, streamCoords))
	w.noiseKey = noiseKey(s.cfg.Seed, repeat)
	var err error
	if w.sampler, err = newSampler(s.cfg.Sampling, s.n, s.cfg.Batch, samplerRNG); err != nil {
		return nil, err
	}
	w.opt = newOptimizer(s.cfg, s.cfg.LR, s.cfg.WeightDecay, s.p)
	if st == nil {
		st = &repeatState{Repeat: repeat, InitSeed: deriveSeed(s.cfg.Seed, repeat, streamInit), LastLoss: math.NaN()}
		init := s.model.Init(st.InitSeed)
		if len(init) != s.p {
			return nil, fmt.Errorf("model init returned %d parameters, want %d", len(init), s.p)
		}
		st.Params = make([]float64, s.p)
		for i, v := range init {
			st.Params[i] = float64(v)
		}
		w.opt.save(st)
		if s.filK > 0 {
			if st.FIL, err = accounting.NewFIL(s.n, s.d, s.kappa); err != nil {
				return nil, fmt.Errorf("FIL accounting: %w", err)
			}
		}
		if err := s.initExtraFIL(st, true); err != nil {
			return nil, err
		}
	} else {
		if st.Repeat != repeat || len(st.Params) != s.p || st.Step < 0 || st.Step > s.steps {
			return nil, fmt.Errorf("checkpoint state does not fit the run (repeat %d, %d params, step %d)", st.Repeat, len(st.Params), st.Step)
		}
		if (st.FIL != nil) != (s.filK > 0) || st.FIL != nil && (st.FIL.N != s.n || st.FIL.D != s.d || len(st.FIL.Sum) != s.n) {
			return nil, fmt.Errorf("checkpoint FIL state does not fit the run")
		}
		if err := s.initExtraFIL(st, false); err != nil {
			return nil, err
		}
		if err := json.Unmarshal(st.Ledger, &w.ledger); err != nil {
			return nil, fmt.Errorf("checkpoint privacy ledger: %w", err)
		}
		if err := w.sampler.restore(st.Sampler); err != nil {
			return nil, err
		}
		if err := w.coordRNG.unmarshal(st.CoordsRNG); err != nil {
			return nil, err
		}
		if st.Noise != NoiseGenerator {
			return nil, fmt.Errorf("checkpoint drew its noise with %q, this dpfil with %q: it cannot continue the run bit-identically (start it again)", st.Noise, NoiseGenerator)
		}
		if err := w.opt.restore(st); err != nil {
			return nil, err
		}
	}
	w.st, w.fil = st, st.FIL
	if err := s.startTuning(st); err != nil {
		return nil, err
	}
	if s.priv.Noisy() {
		w.progress = accounting.NewRDPAccountant(s.priv.Adjacency, accounting.ShuffleRigorous, nil)
		if err := w.progress.Compose(w.ledger.Event()); err != nil {
			return nil, fmt.Errorf("checkpoint privacy ledger: %w", err)
		}
	}
	w.p32 = make([]float32, s.p)
	w.syncParams()
	if err := w.startResident(); err != nil {
		return nil, err
	}
	w.sum = make([]float32, s.p)
	w.grad = make([]float64, s.p)
	return w, nil
}

// syncParams refreshes the float32 copy the model consumes from the float64 master.
func (w *worker) syncParams() {
	for i, v := range w.st.Params {
		w.p32[i] = float32(v)
	}
}

// snapshot captures the RNG and sampler states into w.st (for a checkpoint).
func (w *worker) snapshot() error {
	if err := w.residentSync(); err != nil {
		return err
	}
	w.opt.save(w.st)
	var err error
	if w.st.Ledger, err = json.Marshal(w.ledger); err != nil {
		return fmt.Errorf("privacy ledger: %w", err)
	}
	if w.st.Sampler, err = w.sampler.state(); err != nil {
		return err
	}
	if w.st.CoordsRNG, err = w.coordRNG.marshal(); err != nil {
		return err
	}
	if tu := w.s.tune; tu != nil && tu.perturb != nil {
		if w.st.Perturb, err = tu.perturb.checkpoint(); err != nil {
			return err
		}
	}
	w.st.Noise = NoiseGenerator
	return nil
}

// step performs one DP-SGD step (Guo, Karrer, Chaudhuri & van der Maaten 2022, Algorithm 1, lines 6–13) and returns the
// batch size.
func (w *worker) step() (int, error) {
	s := w.s
	if w.res != nil {
		return w.residentStep()
	}
	if err := w.tuneStep(); err != nil {
		return 0, err
	}
	idx := w.sampler.next()
	nb := len(idx)
	clear(w.sum)
	if nb > 0 {
		d := s.d
		w.x = slices.Grow(w.x[:0], nb*d)[:nb*d]
		w.y = slices.Grow(w.y[:0], nb)[:nb]
		for j, i := range idx {
			copy(w.x[j*d:(j+1)*d], s.train.Image(i))
			w.y[j] = s.train.Labels[i]
		}
		w.losses = slices.Grow(w.losses[:0], nb)[:nb]
		if err := s.model.ClippedGradSum(w.p32, w.x, w.y, s.clip, w.sum, w.losses); err != nil {
			return 0, fmt.Errorf("step %d: clipped gradients: %w", w.st.Step+1, err)
		}
		loss := 0.0
		for _, l := range w.losses {
			loss += l
		}
		w.st.LastLoss = loss / float64(nb)
		if s.filK > 0 || s.extraFILOn() {
			if err := w.filStep(idx); err != nil {
				return 0, fmt.Errorf("step %d: %w", w.st.Step+1, err)
			}
		}
	}
	// ḡ = (Σ g̃ + N(0, σ²C²I)) / B, B the nominal batch size (also for Poisson). The
	// released noisy sum is rounded to float32 (kept in w.sum) so that a transcript
	// holds exactly the gradient that was applied.
	b := float64(s.cfg.Batch)
	if s.priv.NoiseStd > 0 {
		addNoise(w.sum, s.priv.NoiseStd, w.noiseKey, w.st.Step)
	}
	w.tuneRelease()
	if err := w.perturbDiagCapture(nb); err != nil {
		return 0, err
	}
	for i, v := range w.sum {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return 0, fmt.Errorf("step %d: %w (released gradient sum %d is %v); lower lr or clip", w.st.Step+1, ErrDiverged, i, v)
		}
		w.grad[i] = float64(v) / b
	}
	if err := w.record(idx, w.st.Params, b); err != nil {
		return 0, err
	}
	w.opt.step(w.st.Params, w.grad)
	w.syncParams()
	for i, v := range w.p32 { // the float32 copy the model consumes: it overflows first
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			what := fmt.Sprintf("parameter %d is %v", i, w.st.Params[i])
			if p := w.st.Params[i]; !math.IsNaN(p) && !math.IsInf(p, 0) {
				what = fmt.Sprintf("parameter %d = %.3g overflows float32", i, p)
			}
			return 0, fmt.Errorf("step %d: %w (%s); lower lr or clip", w.st.Step+1, ErrDiverged, what)
		}
	}
	return w.finishStep(nb)
}

// record passes the step to the transcript callback, when there is one: the
// parameters before the update, the released noisy sum and its denominator.
func (w *worker) record(idx []int, params []float64, denominator float64) error {
	if w.onStep == nil {
		return nil
	}
	s := w.s
	if err := w.onStep(StepRecord{Repeat: w.st.Repeat, Step: w.st.Step, Steps: s.steps, Batch: idx,
		Params: params, Released: w.sum, Denominator: denominator, N: s.n, Q: s.priv.Q,
		Dataset: s.train.Name, DatasetSHA256: s.train.SHA256}); err != nil {
		return fmt.Errorf("step %d: %w", w.st.Step+1, err)
	}
	return nil
}

// finishStep ends a step of nb samples that updated the parameters: its privacy
// event goes to the ledger, and the state counts it.
func (w *worker) finishStep(nb int) (int, error) {
	if err := w.emit(w.st.Step); err != nil {
		return 0, fmt.Errorf("step %d: privacy accounting: %w", w.st.Step+1, err)
	}
	w.st.Step++
	w.st.Samples += int64(nb)
	return nb, nil
}

// filStep adds the FIL of the step for the batch idx, on the parameters before the
// update: Tr(I_t) = (d/k)·Σ_j ‖J e_{i_j}‖² / (σC)², coordinates i_j drawn with
// replacement independently per sample, step and draw (exact: all d coordinates).
// With fil_rate r < 1 each member is accounted with probability r and weight 1/r.
func (w *worker) filStep(idx []int) error {
	s := w.s
	k := s.filK
	x, y := w.x, w.y
	if s.filRate < 1 {
		d := s.d
		w.fidx, w.fx, w.fy = w.fidx[:0], w.fx[:0], w.fy[:0]
		for j, i := range idx {
			if w.coordRNG.r.Float64() < s.filRate {
				w.fidx = append(w.fidx, i)
				if w.res == nil { // resident: the device gathers the rows
					w.fx = append(w.fx, w.x[j*d:(j+1)*d]...)
				}
				w.fy = append(w.fy, w.y[j])
			}
		}
		idx, x, y = w.fidx, w.fx, w.fy
		if len(idx) == 0 {
			return nil
		}
	}
	if err := w.extraFILStep(idx, x, y); err != nil {
		return err
	}
	if k == 0 {
		return nil
	}
	nb := len(idx)
	w.sq = slices.Grow(w.sq[:0], nb)[:nb]
	w.traceI = slices.Grow(w.traceI[:0], nb)[:nb]
	drawn, err := w.residentFILDrawn(idx, y)
	if err != nil {
		return fmt.Errorf("FIL: %w", err)
	}
	if !drawn {
		if err := w.hostCoordsFIL(idx, x, y); err != nil {
			return err
		}
	}
	scale := float64(s.d) / float64(k) / (s.priv.NoiseStd * s.priv.NoiseStd) / s.filRate
	for j, v := range w.sq {
		w.traceI[j] = scale * v
	}
	if err := w.fil.AddStep(idx, w.traceI); err != nil {
		return fmt.Errorf("FIL accounting: %w", err)
	}
	return nil
}

// hostCoordsFIL draws the FIL coordinates of the members idx on the host (k per
// member, in order; all d in order when exact) and writes their FIL norms to w.sq.
func (w *worker) hostCoordsFIL(idx []int, x []float32, y []int) error {
	s := w.s
	k := s.filK
	nb := len(idx)
	if cap(w.coords) < nb {
		w.coords = make([][]int, nb)
	}
	w.coords = w.coords[:nb]
	for j := range w.coords {
		if cap(w.coords[j]) < k {
			w.coords[j] = make([]int, k)
		}
		c := w.coords[j][:k]
		if s.cfg.FILExact {
			for i := range c {
				c[i] = i
			}
		} else {
			for i := range c {
				c[i] = w.coordRNG.r.IntN(s.d)
			}
		}
		w.coords[j] = c
	}
	if err := w.filSqNorms(idx, x, y); err != nil {
		return fmt.Errorf("FIL: %w", err)
	}
	return nil
}

// dfilStats returns the current max and median dFIL of the repeat.
func (w *worker) dfilStats() (maxV, median float64) {
	if w.fil == nil {
		return 0, 0
	}
	v := slices.Clone(w.fil.Sum)
	slices.Sort(v)
	return v[len(v)-1], stats.QuantileSorted(v, 0.5) // the median of FILSummary
}

// evaluation of a model on a dataset.
type evaluation struct {
	Accuracy, Loss float64
	PerClass       Floats
}

// evaluate computes accuracy, mean cross-entropy and per-class accuracy of params on
// ds (in chunks of 500 samples).
func evaluate(m models.Model, params []float32, ds *data.Dataset, classes int) (evaluation, error) {
	if ds == nil || ds.N == 0 {
		return evaluation{Accuracy: math.NaN(), Loss: math.NaN()}, nil
	}
	d := ds.Dim()
	return evaluateWith(ds, classes, func(s0, n int, out []float32) error {
		return m.Logits(params, ds.Images[s0*d:(s0+n)*d], n, out)
	})
}

// evaluateWith is evaluate with the logits of samples s0 … s0+n−1 of ds from logitsOf
// (the model's, or a resident device's copy of ds).
func evaluateWith(ds *data.Dataset, classes int, logitsOf func(s0, n int, out []float32) error) (evaluation, error) {
	if ds == nil || ds.N == 0 {
		return evaluation{Accuracy: math.NaN(), Loss: math.NaN()}, nil
	}
	const chunk = 500
	logits := make([]float32, chunk*classes)
	correct := make([]int, ds.Classes)
	counts := ds.ClassCounts()
	var loss float64
	total := 0
	for s0 := 0; s0 < ds.N; s0 += chunk {
		n := min(chunk, ds.N-s0)
		if err := logitsOf(s0, n, logits[:n*classes]); err != nil {
			return evaluation{}, fmt.Errorf("evaluate on %s: %w", ds.Name, err)
		}
		for i := 0; i < n; i++ {
			z := logits[i*classes : (i+1)*classes]
			y := ds.Labels[s0+i]
			best, mx := 0, float64(z[0])
			for c := 1; c < classes; c++ {
				if float64(z[c]) > mx {
					best, mx = c, float64(z[c])
				}
			}
			lse := 0.0
			for _, v := range z {
				lse += math.Exp(float64(v) - mx)
			}
			loss += mx + math.Log(lse) - float64(z[y])
			if best == y {
				correct[y]++
				total++
			}
		}
	}
	ev := evaluation{Accuracy: float64(total) / float64(ds.N), Loss: loss / float64(ds.N), PerClass: make(Floats, ds.Classes)}
	for c := range ev.PerClass {
		if counts[c] > 0 {
			ev.PerClass[c] = float64(correct[c]) / float64(counts[c])
		} else {
			ev.PerClass[c] = math.NaN()
		}
	}
	if math.IsNaN(ev.Loss) || math.IsInf(ev.Loss, 0) {
		return evaluation{}, fmt.Errorf("evaluate on %s: %w (the loss is %v); lower lr or clip", ds.Name, ErrDiverged, ev.Loss)
	}
	return ev, nil
}

// run trains the repeats from ck onwards, checkpointing into opt.Out.
func (s *setup) run(ctx context.Context, ck *checkpoint, opt Options, logf func(string, ...any)) (*Result, error) {
	segStart := time.Now()
	var segSamples int64
	var segStep time.Duration // time spent in DP-SGD steps (FIL included) this segment
	wall := func() float64 { return ck.Wall + time.Since(segStart).Seconds() }
	interval := opt.CheckpointInterval
	if interval <= 0 {
		interval = time.Minute
	}
	lastCk := time.Now()
	savedStep := -1 // the step of the last checkpoint written this segment (−1: none yet)
	save := func(w *worker) error {
		if opt.Out == "" {
			return nil
		}
		if w != nil {
			if err := w.snapshot(); err != nil {
				return err
			}
			ck.Cur = w.st
		} else {
			ck.Cur = nil
		}
		saved := *ck
		saved.Wall = wall()
		saved.Samples = ck.Samples + segSamples
		saved.StepSeconds = ck.StepSeconds + segStep.Seconds()
		if err := saveCheckpoint(opt.Out, &saved); err != nil {
			return err
		}
		lastCk, savedStep = time.Now(), 0
		if w != nil {
			savedStep = w.st.Step
		}
		return nil
	}
	progressEvery := max(1, s.steps/200)
	for ck.Repeat < s.cfg.Repeats {
		r := ck.Repeat
		w, err := s.newWorker(r, ck.Cur)
		if err != nil {
			return nil, err
		}
		w.onStep, w.ctx = opt.OnStep, ctx
		ck.Cur = w.st
		testAcc := math.NaN()
		if n := len(w.st.History); n > 0 {
			testAcc = w.st.History[n-1].TestAccuracy
		}
		for w.st.Step < s.steps {
			if err := ctx.Err(); err != nil {
				if serr := save(w); serr != nil {
					return nil, fmt.Errorf("%w (and the checkpoint failed: %v)", err, serr)
				}
				return nil, err
			}
			t0 := time.Now()
			nb, err := w.countedStep()
			if err != nil {
				if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
					// Interrupted inside the step: its state is half-updated, so the
					// checkpoint on disk (an earlier step's) is the one to resume from.
					if savedStep >= 0 {
						logf("interrupted inside step %d; the checkpoint of step %d is kept", w.st.Step+1, savedStep)
					} else if opt.Out != "" {
						logf("interrupted inside step %d, before this segment's first checkpoint", w.st.Step+1)
					}
				}
				return nil, err
			}
			segStep += time.Since(t0)
			segSamples += int64(nb)
			if err := w.perturbDiagStep(); err != nil {
				return nil, err
			}
			t := w.st.Step
			if s.cfg.EvalEvery > 0 && t%s.cfg.EvalEvery == 0 && t < s.steps {
				ev, err := w.evaluate(s.test)
				if err != nil {
					return nil, err
				}
				testAcc = ev.Accuracy
				w.st.History = append(w.st.History, EvalPoint{Step: t, BatchLoss: w.st.LastLoss, TestAccuracy: ev.Accuracy, TestLoss: ev.Loss})
			}
			if opt.Progress != nil && (t%progressEvery == 0 || t == s.steps) {
				mx, med := w.dfilStats()
				eps, acct := w.progressEpsilon()
				opt.Progress(Event{Repeat: r, Repeats: s.cfg.Repeats, Step: t, Steps: s.steps, Loss: w.st.LastLoss,
					TestAccuracy: testAcc, Epsilon: eps, Accountant: acct, DFILMax: mx, DFILMedian: med})
			}
			due := opt.CheckpointEvery > 0 && t%opt.CheckpointEvery == 0 ||
				opt.CheckpointEvery == 0 && (t == 1 || time.Since(lastCk) >= interval)
			if due && t < s.steps {
				if err := save(w); err != nil {
					return nil, err
				}
			}
		}
		rr, err := s.finishRepeat(w)
		if err != nil {
			return nil, err
		}
		logf("repeat %d/%d: test accuracy %.4f, train loss %.4f", r+1, s.cfg.Repeats, rr.TestAccuracy, rr.TrainLoss)
		ck.Done = append(ck.Done, rr)
		ck.Repeat++
		ck.Cur = nil
		if err := save(nil); err != nil {
			return nil, err
		}
	}
	res, err := s.result(ck, wall(), ck.StepSeconds+segStep.Seconds(), ck.Samples+segSamples)
	if err != nil {
		return nil, err
	}
	if opt.Out != "" {
		if err := s.writeOutputs(opt.Out, ck, res); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// trainEvalMax caps the training samples the final training loss and accuracy are
// computed on (the first ones), so that evaluation stays cheap on 50 000-sample sets.
const trainEvalMax = 10000

// finishRepeat evaluates the final model of a repeat.
func (s *setup) finishRepeat(w *worker) (RepeatResult, error) {
	if err := w.residentSync(); err != nil { // the final parameters from the device
		return RepeatResult{}, err
	}
	te, err := w.evaluate(s.test)
	if err != nil {
		return RepeatResult{}, err
	}
	trainEval := s.train
	if trainEval.N > trainEvalMax {
		var err error
		if trainEval, err = trainEval.Head(trainEvalMax); err != nil {
			return RepeatResult{}, fmt.Errorf("train evaluation: %w", err)
		}
	}
	tr, err := w.evaluate(trainEval)
	if err != nil {
		return RepeatResult{}, err
	}
	mx, med := w.dfilStats()
	rr := RepeatResult{
		Repeat: w.st.Repeat, InitSeed: w.st.InitSeed,
		TestAccuracy: te.Accuracy, TestLoss: te.Loss, PerClassAccuracy: te.PerClass,
		TrainLoss: tr.Loss, TrainAccuracy: tr.Accuracy, SamplesSeen: w.st.Samples,
		DFILMax: mx, DFILMedian: med, History: w.st.History,
		Params: slices.Clone(w.p32), Ledger: w.ledger,
	}
	if w.fil != nil {
		rr.DFIL = w.fil.DFIL()
	}
	w.finishExtraFIL(&rr)
	return rr, nil
}

// result aggregates the finished repeats.
func (s *setup) result(ck *checkpoint, wallSec, stepSec float64, samples int64) (*Result, error) {
	cfg, pr := s.cfg, s.priv
	res := &Result{
		Config: s.cfg, Sigma: pr.Sigma, Epsilon: math.Inf(1), EpsilonOrder: math.NaN(), RDPOrder2: math.Inf(1),
		Conversion:         accounting.ConversionImproved.String(),
		NoiseMultiplierRDP: pr.NoiseMultiplier, ClipConstant: s.priv.ClipConstant, SampleRate: s.priv.Q, Steps: s.steps,
		Sampling: cfg.Sampling, FIL: s.filK > 0, FILCoordsUsed: s.filK, FILRate: s.filRate, FILInput: filInput(cfg),
		Kappa: s.kappa, FILDelta: s.priv.FILDelta, Repeats: ck.Done, NumParams: s.p, InputDim: s.d,
		Dataset:     DatasetInfo{Name: s.train.Name, Source: s.train.Source, SHA256: s.train.SHA256, NTrain: s.n, Classes: s.train.Classes},
		GitCommit:   gitCommit(),
		WallSeconds: wallSec, StepSeconds: stepSec,
	}
	if s.test != nil {
		res.Dataset.NTest = s.test.N
	}
	s.describe(res)
	if stepSec > 0 {
		res.SamplesPerSec = float64(samples) / stepSec
	}
	if !pr.Noisy() {
		res.MSEBoundRDP = 0 // no noise: no reconstruction bound
	} else {
		l := ck.Done[0].Ledger
		for _, rr := range ck.Done[1:] {
			if !rr.Ledger.Equal(l) {
				return nil, fmt.Errorf("privacy accounting: repeat %d emitted other events than repeat 0", rr.Repeat)
			}
		}
		p, err := s.privacy(l)
		if err != nil {
			return nil, err
		}
		res.Privacy = p
		res.Epsilon, res.RDPOrder2, res.MSEBoundRDP, res.Kappa = p.Epsilon, p.Theorem1.RDPOrder2, p.Theorem1.MSEBoundRDP, *p.Kappa
		res.RDPOrder2Adjacency = p.Theorem1.Adjacency
		if p.Accountant == AccountantRDP && p.EpsilonRDPOrder != nil {
			res.EpsilonOrder = *p.EpsilonRDPOrder
		}
	}
	k := float64(len(ck.Done))
	res.PerClassAccuracy = make(Floats, len(ck.Done[0].PerClassAccuracy))
	for _, rr := range ck.Done {
		res.TestAccuracies = append(res.TestAccuracies, rr.TestAccuracy)
		res.TestAccuracy += rr.TestAccuracy / k
		res.TrainLoss += rr.TrainLoss / k
		res.TrainAccuracy += rr.TrainAccuracy / k
		res.TestLoss += rr.TestLoss / k
		for c, a := range rr.PerClassAccuracy {
			res.PerClassAccuracy[c] += a / k
		}
	}
	if s.filK > 0 {
		runs := make([][]float64, len(ck.Done))
		for i, rr := range ck.Done {
			runs[i] = rr.DFIL
		}
		mean, err := accounting.MeanDFIL(runs...)
		if err != nil {
			return nil, fmt.Errorf("FIL accounting: %w", err)
		}
		sum := fil.Summarize(mean)
		res.DFILMax, res.DFILMedian, res.DFILMean = sum.Max, sum.Median, sum.Mean
		res.MSEBoundFILMax, res.MSEBoundFILMedian = sum.MSEBoundMax, sum.MSEBoundMedian
		res.DFILQuantiles = sum.Quantiles
		res.DFIL = mean
		res.FILEstimator = resultFILEstimator(res, s.cfg.FILExact || s.filK == s.d)
		sq, err := fil.SqrtSummary(runs...)
		if err != nil {
			return nil, fmt.Errorf("FIL accounting: %w", err)
		}
		res.SqrtDFIL = &sq
	} else {
		res.MSEBoundFILMax, res.MSEBoundFILMedian = math.Inf(1), math.Inf(1)
	}
	if err := s.tuningResult(res); err != nil {
		return nil, err
	}
	res.Device = s.deviceReport()
	if err := s.extraFILResult(res, ck.Done); err != nil {
		return nil, err
	}
	return res, nil
}

// writeOutputs writes dfil.npy, the parameter files and result.json (last), then
// removes the checkpoint.
func (s *setup) writeOutputs(dir string, ck *checkpoint, res *Result) error {
	if res.DFIL != nil {
		if err := fil.Save(filepath.Join(dir, DFILFile), res.DFIL); err != nil {
			return fmt.Errorf("save dFIL: %w", err)
		}
		res.DFILPath = DFILFile
	}
	if err := writeExtraFIL(dir, res); err != nil {
		return err
	}
	for _, rr := range ck.Done {
		if err := SaveParams(filepath.Join(dir, paramsFileName(rr.Repeat)), rr.Params); err != nil {
			return err
		}
	}
	res.ParamsPath = ParamsFile
	if err := s.saveNamedParams(dir, ck, res); err != nil {
		return err
	}
	if err := WriteResult(dir, res); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(dir, CheckpointFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove checkpoint: %w", err)
	}
	return nil
}

// filInput names the input space FIL is taken w.r.t.
func filInput(cfg Config) string {
	if cfg.FILNormalizedInputs {
		return "normalized_inputs"
	}
	return "raw_pixels"
}
