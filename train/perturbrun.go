package train

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/dpfil/dpfil/internal/parallel"
	"github.com/dpfil/dpfil/models"
)

// g_φ defaults (the thesis's Table B.1 values where affordable: λ = 10³, Adam lr
// 0.01, s = 2 Hutchinson probes; widths and steps reduced for a CPU).
const (
	defaultPerturbHidden = 32
	defaultPerturbLambda = 1e3
	defaultPerturbSteps  = 10
	defaultPerturbBatch  = 64
	defaultPerturbLR     = 0.01
	defaultPerturbProbes = 2
	defaultPerturbWD     = 0.1
	streamTunePerturb    = uint64(0x7475_6e65_0005)

	// PerturbArchMLP, PerturbArchMLP2 and PerturbArchCNN are the bodies of g_φ
	// (TuningConfig.PerturbArch): one hidden layer on [z; g]; two (thesis Table B.5,
	// 512 and 256 units); the two convs of Table B.6 and two Dense layers.
	PerturbArchMLP  = "mlp"
	PerturbArchMLP2 = "mlp2"
	PerturbArchCNN  = "cnn"
	// PerturbArchConstant is the thesis's g_φ as its code runs it (perturbconst.go):
	// its BN layers see one sample at a time, so its output is a learned constant.
	PerturbArchConstant = "constant"

	// defaultPerturbHiddenMLP2 and defaultPerturbHidden2MLP2 are Table B.5's widths.
	defaultPerturbHiddenMLP2  = 512
	defaultPerturbHidden2MLP2 = 256
)

// PerturbNetResult is result.json's "tuning.perturb": what g_φ did (means over the
// refreshes of the last repeat).
type PerturbNetResult struct {
	// Arch is g_φ's body: omitted for the one-layer MLP, "mlp2" for thesis Table
	// B.5's, "cnn" for Table B.6's, "constant" for the thesis's network as its code
	// evaluates it. Hidden is the (first) width, Hidden2 the second one's (mlp2, cnn
	// and constant only).
	Arch    string `json:"arch,omitempty"`
	Hidden  int    `json:"hidden"`
	Hidden2 int    `json:"hidden2,omitempty"`
	// L2 says the weight decay entered Adam's gradient (TuningConfig.PerturbL2).
	L2     bool    `json:"l2,omitempty"`
	Lambda float64 `json:"lambda"`
	// LambdaDecay and MinLambda are the λ schedule (TuningConfig.PerturbLambdaDecay;
	// absent when λ is fixed); each refresh's λ is in the series.
	LambdaDecay float64 `json:"lambda_decay,omitempty"`
	MinLambda   float64 `json:"min_lambda,omitempty"`
	Steps       int     `json:"steps"` // Adam steps per refresh (−1: none, g_φ ≡ 0; 0 in the epoch mode)
	Batch       int     `json:"batch"`
	LR          float64 `json:"lr"`
	WD          float64 `json:"weight_decay"`
	Every       int     `json:"every"`
	Probes      int     `json:"probes"`
	Refreshes   int     `json:"refreshes"`
	// Epochs, EpochDecay and MinEpochs are the thesis's epoch schedule
	// (TuningConfig.PerturbEpochs; absent in the fixed-steps mode) and AdamSteps the
	// Adam steps of all the refreshes of the last repeat under it.
	Epochs     int `json:"epochs,omitempty"`
	EpochDecay int `json:"epoch_decay,omitempty"`
	MinEpochs  int `json:"min_epochs,omitempty"`
	AdamSteps  int `json:"adam_steps,omitempty"`
	// Loss is the public objective (eq. 2.9, mean over the last inner batch of each
	// refresh, averaged over refreshes); PerturbNorm the mean ‖g_φ‖ and GradNorm the
	// mean ‖∇ℓ‖ on that batch.
	Loss float64 `json:"loss"`
	// LossFirst is the same objective on the first inner batch of each refresh,
	// before that refresh's first Adam step (averaged over refreshes): Loss < LossFirst
	// says the refresh lowered it.
	LossFirst   float64 `json:"loss_first"`
	PerturbNorm float64 `json:"perturb_norm"`
	GradNorm    float64 `json:"grad_norm"`
	// CosMeanGrad is the cosine between the mean perturbation and the mean public
	// gradient on that batch (the thesis's Fig. 3.4), averaged over refreshes.
	CosMeanGrad float64 `json:"cos_mean_public_grad"`
	// Privacy says why ε is unchanged.
	Privacy string `json:"privacy"`
	// Series has the same quantities refresh by refresh (the last repeat's), in the
	// order they ran: the thesis's Fig. 3.4 per iteration.
	Series []PerturbRefresh `json:"series,omitempty"`
}

// PerturbRefresh is one g_φ refresh: the private step it ran before (1-based), the
// public objective before its first and after its last Adam step, and on its last
// inner batch the mean ‖g_φ‖, ‖∇ℓ‖ and the cosine between the mean perturbation and
// the mean public gradient (null where either mean is zero). Under the epoch schedule
// it also has the refresh's epochs and Adam steps (absent in the fixed-steps mode,
// where every refresh runs PerturbNetResult.Steps).
type PerturbRefresh struct {
	Step        int      `json:"step"`
	Lambda      float64  `json:"lambda"` // λ of eq. 2.9 at this refresh (the λ schedule's)
	Epochs      int      `json:"epochs,omitempty"`
	AdamSteps   int      `json:"adam_steps,omitempty"`
	LossFirst   float64  `json:"loss_first"`
	Loss        float64  `json:"loss"`
	PerturbNorm float64  `json:"perturb_norm"`
	GradNorm    float64  `json:"grad_norm"`
	CosMeanGrad *float64 `json:"cos_mean_public_grad"`
	// InputScale is g_φ's standardisation scale of its two input blocks (image or
	// conv features; gradient) in force after the refresh: fitted once per repeat,
	// refitted every refresh with perturb_restandardise, 1 with perturb_no_standardise.
	InputScale [2]float64 `json:"input_scale"`
}

const perturbPrivacyNote = "g_φ is trained on public data and θ_t only (post-processing of earlier releases) and its output is added before clipping, so each private contribution still has norm ≤ c·C: the DP-SGD ε is that of the same run without g_φ; dFIL is accounted for the perturbed clipped gradient"

// lambdaText is λ for the text report: "λ=1000", or its schedule.
func (g PerturbNetResult) lambdaText() string {
	if g.LambdaDecay == 0 {
		return fmt.Sprintf("λ=%g", g.Lambda)
	}
	return fmt.Sprintf("λ=%g, then %g less per refresh down to %g", g.Lambda, g.LambdaDecay, g.MinLambda)
}

// scheduleText says how many Adam steps each refresh ran, for the text report:
// "n Adam steps" (fixed-steps mode) or the epoch schedule and the steps it took.
func (g PerturbNetResult) scheduleText() string {
	if g.Epochs == 0 {
		return fmt.Sprintf("%d Adam steps", g.Steps)
	}
	return fmt.Sprintf("%d epochs, then %d fewer per refresh down to %d (%d Adam steps in all)", g.Epochs, g.EpochDecay, g.MinEpochs, g.AdamSteps)
}

// perturbState is the run-time state of g_φ for the repeat being trained.
type perturbState struct {
	cfg   TuningConfig
	net   *perturbNet
	rng   *rand.Rand
	pcg   *rand.PCG // rng's source, checkpointed
	clip  models.Clip
	res   PerturbNetResult
	sumCo float64
	buf   pubScratch // publicSamples' storage, reused from batch to batch
}

// pubScratch holds publicSamples' buffers between batches: the float64 sample
// storage, the batch's images and labels, the probe directions (float64, kept only
// when g_φ reads them) and their float32 copies for the tangent call.
type pubScratch struct {
	f64  []float64
	x    []float32
	y    []int
	us   []float64
	xdot []float32
}

func (t TuningConfig) perturbDefaults() TuningConfig {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	switch t.PerturbArch {
	case PerturbArchCNN:
		def(&t.PerturbHidden, defaultPerturbHiddenCNN)
		def(&t.PerturbHidden2, t.PerturbHidden)
	case PerturbArchMLP2:
		def(&t.PerturbHidden, defaultPerturbHiddenMLP2)
		def(&t.PerturbHidden2, defaultPerturbHidden2MLP2)
	case PerturbArchConstant: // Table B.6's widths (the thesis's shipped configuration)
		def(&t.PerturbHidden, defaultPerturbHiddenCNN)
		def(&t.PerturbHidden2, defaultPerturbHiddenCNN)
	}
	def(&t.PerturbHidden, defaultPerturbHidden)
	if t.PerturbEpochs > 0 {
		def(&t.PerturbMinEpochs, 1)
	} else {
		def(&t.PerturbSteps, defaultPerturbSteps)
	}
	def(&t.PerturbBatch, defaultPerturbBatch)
	def(&t.PerturbEvery, 1)
	def(&t.PerturbProbes, defaultPerturbProbes)
	if t.PerturbLambda == 0 {
		t.PerturbLambda = defaultPerturbLambda
	}
	if t.PerturbLR == 0 {
		t.PerturbLR = defaultPerturbLR
	}
	switch {
	case t.PerturbWD == 0:
		t.PerturbWD = defaultPerturbWD
	case t.PerturbWD < 0:
		t.PerturbWD = 0
	}
	return t
}

// validatePerturb checks the g_φ fields.
func (t TuningConfig) validatePerturb() error {
	if !t.PerturbNet {
		if t.PerturbArch != "" || t.PerturbHidden != 0 || t.PerturbHidden2 != 0 || t.PerturbL2 || t.PerturbLambda != 0 || t.PerturbSteps != 0 || t.PerturbBatch != 0 ||
			t.PerturbLR != 0 || t.PerturbEvery != 0 || t.PerturbProbes != 0 || t.PerturbWD != 0 || t.PerturbNoStd || t.PerturbRestd ||
			t.PerturbEpochs != 0 || t.PerturbEpochDecay != 0 || t.PerturbMinEpochs != 0 || t.PerturbLambdaDecay != 0 || t.PerturbMinLambda != 0 {
			return errPerturbConfig("perturb_arch/hidden/hidden2/l2/lambda/lambda_decay/min_lambda/steps/epochs/epoch_decay/min_epochs/batch/lr/every/probes/no_standardise/restandardise need perturb_net")
		}
		return nil
	}
	switch t.PerturbArch {
	case "", PerturbArchMLP:
		if t.PerturbHidden2 != 0 {
			return errPerturbConfig("perturb_hidden2 = %d: the %q body has one hidden layer (use %q or %q)", t.PerturbHidden2, PerturbArchMLP, PerturbArchMLP2, PerturbArchCNN)
		}
	case PerturbArchMLP2, PerturbArchCNN:
	case PerturbArchConstant:
		if t.PerturbNoStd || t.PerturbRestd {
			return errPerturbConfig("perturb_arch %q has no input to standardise: perturb_no_standardise and perturb_restandardise do not apply", PerturbArchConstant)
		}
	default:
		return errPerturbConfig("perturb_arch = %q, want %q, %q, %q or %q", t.PerturbArch, PerturbArchMLP, PerturbArchMLP2, PerturbArchCNN, PerturbArchConstant)
	}
	if !t.hasPublic() {
		return errPerturbConfig("g_φ is trained on the public split: set pretrain_public > 0 (or give train.Options.Public)")
	}
	if t.NoiseRank > 0 {
		return errPerturbConfig("learned noise (noise_rank) accounts FIL in a metric that ignores g_φ; use one of the two")
	}
	if t.PerturbHidden < 0 || t.PerturbHidden2 < 0 || t.PerturbBatch < 0 || t.PerturbEvery < 0 || t.PerturbProbes < 0 || t.PerturbSteps < -1 {
		return errPerturbConfig("perturb_hidden, perturb_hidden2, perturb_batch, perturb_every, perturb_probes must be ≥ 0 and perturb_steps ≥ −1")
	}
	if err := t.validatePerturbEpochs(); err != nil {
		return err
	}
	if t.PerturbNoStd && t.PerturbRestd {
		return errPerturbConfig("perturb_no_standardise and perturb_restandardise exclude each other (raw inputs vs refitted constants)")
	}
	if !finite(t.PerturbWD) || t.PerturbWD < -1 || t.PerturbWD > 0 && t.PerturbWD*t.perturbDefaults().PerturbLR >= 1 {
		return errPerturbConfig("perturb_wd = %v must be −1 (none), 0 (default 0.1) or positive with perturb_wd·perturb_lr < 1", t.PerturbWD)
	}
	if !finite(t.PerturbLambda) || t.PerturbLambda < 0 || !finite(t.PerturbLR) || t.PerturbLR < 0 {
		return errPerturbConfig("perturb_lambda = %v and perturb_lr = %v must be finite and ≥ 0", t.PerturbLambda, t.PerturbLR)
	}
	if !finite(t.PerturbLambdaDecay) || t.PerturbLambdaDecay < 0 || !finite(t.PerturbMinLambda) || t.PerturbMinLambda < 0 {
		return errPerturbConfig("perturb_lambda_decay = %v and perturb_min_lambda = %v must be finite and ≥ 0", t.PerturbLambdaDecay, t.PerturbMinLambda)
	}
	if t.PerturbMinLambda != 0 && t.PerturbLambdaDecay == 0 {
		return errPerturbConfig("perturb_min_lambda = %v is the floor of the λ schedule: set perturb_lambda_decay > 0", t.PerturbMinLambda)
	}
	if lam := t.perturbDefaults().PerturbLambda; t.PerturbMinLambda > lam {
		return errPerturbConfig("perturb_min_lambda = %v must be ≤ perturb_lambda = %v", t.PerturbMinLambda, lam)
	}
	return nil
}

// perturbScheduleLambda is λ at refresh r (0-based) under the thesis code's λ
// schedule: max(minLambda, lambda − r·decay); lambda itself when decay is 0.
func perturbScheduleLambda(lambda, decay, minLambda float64, r int) float64 {
	if decay <= 0 || r <= 0 {
		return lambda
	}
	return max(minLambda, lambda-float64(r)*decay)
}

// validatePerturbEpochs checks the thesis's epoch schedule (perturb_epochs,
// perturb_epoch_decay, perturb_min_epochs) against the fixed-steps mode.
func (t TuningConfig) validatePerturbEpochs() error {
	if t.PerturbEpochs < 0 || t.PerturbEpochDecay < 0 || t.PerturbMinEpochs < 0 {
		return errPerturbConfig("perturb_epochs = %d, perturb_epoch_decay = %d and perturb_min_epochs = %d must be ≥ 0",
			t.PerturbEpochs, t.PerturbEpochDecay, t.PerturbMinEpochs)
	}
	if t.PerturbEpochs == 0 {
		if t.PerturbEpochDecay != 0 || t.PerturbMinEpochs != 0 {
			return errPerturbConfig("perturb_epoch_decay and perturb_min_epochs are part of the epoch schedule: set perturb_epochs > 0")
		}
		return nil
	}
	if t.PerturbSteps != 0 {
		return errPerturbConfig("perturb_steps = %d and perturb_epochs = %d: set one of them (perturb_steps: fixed Adam steps per refresh; perturb_epochs: the thesis's epoch schedule)",
			t.PerturbSteps, t.PerturbEpochs)
	}
	if t.PerturbMinEpochs > t.PerturbEpochs {
		return errPerturbConfig("perturb_min_epochs = %d must be ≤ perturb_epochs = %d", t.PerturbMinEpochs, t.PerturbEpochs)
	}
	return nil
}

// perturbScheduleEpochs is the number of g_φ epochs of refresh r (0-based) under the
// thesis's schedule (Appendix B): epochs at the first refresh, then decay fewer at
// each later one, never below minEpochs: max(epochs − r·decay, minEpochs).
func perturbScheduleEpochs(epochs, decay, minEpochs, r int) int {
	if decay <= 0 || r <= 0 {
		return max(epochs, minEpochs)
	}
	if r > (epochs-minEpochs)/decay { // also keeps r·decay from overflowing
		return minEpochs
	}
	return max(epochs-r*decay, minEpochs)
}

// epochBatches is one epoch over n samples: a fresh permutation of 0…n−1 from rng,
// cut into consecutive batches of b (the last one smaller when b does not divide n;
// one batch of all n when b ≥ n), so every sample is in exactly one batch.
func epochBatches(rng *rand.Rand, n, b int) [][]int {
	perm := rng.Perm(n)
	out := make([][]int, 0, (n+b-1)/b)
	for i := 0; i < n; i += b {
		out = append(out, perm[i:min(i+b, n)])
	}
	return out
}

// checkPerturbInput refuses the CNN body on inputs that are not 1×28×28 (its conv
// geometry is Table B.6's, for MNIST).
func (t TuningConfig) checkPerturbInput(c, h, w int) error {
	if !t.PerturbNet || t.PerturbArch != PerturbArchCNN {
		return nil
	}
	if c != 1 || h != cnnSide || w != cnnSide {
		return errPerturbConfig("perturb_arch cnn (thesis Table B.6) takes 1×%d×%d images; the data are %d×%d×%d (use perturb_arch mlp)", cnnSide, cnnSide, c, h, w)
	}
	return nil
}

// startPerturb initialises g_φ for a repeat (zero output layer).
func (tu *tuning) startPerturb(seed uint64, repeat int, mask []bool, d int) {
	c := tu.cfg.perturbDefaults()
	pcg := newStream(seed, repeat, streamTunePerturb)
	rng := rand.New(pcg)
	var net *perturbNet
	switch c.PerturbArch {
	case PerturbArchConstant:
		net = newPerturbConst(d, tu.p, c.PerturbHidden, c.PerturbHidden2, c.PerturbLambda, c.PerturbProbes, tu.clip, mask, c.PerturbLR, rng)
	case PerturbArchCNN, PerturbArchMLP2:
		net = newPerturbDeep(d, tu.p, c.PerturbHidden, c.PerturbHidden2, c.PerturbArch == PerturbArchCNN, c.PerturbLambda, c.PerturbProbes, tu.clip, mask, c.PerturbLR, rng)
	default:
		net = newPerturbNet(d, tu.p, c.PerturbHidden, c.PerturbLambda, c.PerturbProbes, tu.clip, mask, c.PerturbLR, rng)
	}
	tu.perturb = &perturbState{cfg: c, rng: rng, pcg: pcg, clip: tu.clip, net: net,
		res: PerturbNetResult{Arch: c.PerturbArch, Hidden: c.PerturbHidden, Hidden2: c.PerturbHidden2, L2: c.PerturbL2, Lambda: c.PerturbLambda, LambdaDecay: c.PerturbLambdaDecay, MinLambda: c.PerturbMinLambda, Steps: c.PerturbSteps, Batch: c.PerturbBatch,
			LR: c.PerturbLR, WD: c.PerturbWD, Every: c.PerturbEvery, Probes: c.PerturbProbes, Privacy: perturbPrivacyNote,
			Epochs: c.PerturbEpochs, EpochDecay: c.PerturbEpochDecay, MinEpochs: c.PerturbMinEpochs}}
	tu.perturb.net.wd, tu.perturb.net.l2 = c.PerturbWD, c.PerturbL2
	tu.perturb.net.standardised = tu.perturb.net.standardised || c.PerturbNoStd // identity constants: never set from data
}

// refresh trains g_φ on the public split at θ_t (Algorithm 1 lines 9–12) when the
// step is a multiple of perturb_every: perturb_steps Adam steps on batches drawn
// uniformly without replacement, or under the epoch schedule the refresh's epochs
// (its index r = step/perturb_every counts the refreshes run, so a resumed run
// continues the schedule from its checkpointed step). It stops between Adam steps
// once ctx is done and returns an error wrapping ctx's (g_φ is then half-trained:
// the run resumes from its last checkpoint, taken before the step).
func (ps *perturbState) refresh(ctx context.Context, tu *tuning, step int, params []float32) error {
	c := ps.cfg
	if c.PerturbSteps < 0 || step%c.PerturbEvery != 0 {
		return nil
	}
	pub := tu.public
	B := min(c.PerturbBatch, pub.N)
	rec := PerturbRefresh{Step: step + 1}
	rec.Lambda = perturbScheduleLambda(c.PerturbLambda, c.PerturbLambdaDecay, c.PerturbMinLambda, step/c.PerturbEvery)
	ps.net.lambda = rec.Lambda
	steps, nextBatch := ps.refreshPlan(step, pub.N, B, &rec)
	var last []pnSample
	for it := 0; it < steps; it++ {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("g_φ refresh before private step %d stopped after %d of %d Adam steps: %w", step+1, it, steps, err)
		}
		idx := nextBatch()
		sms, err := tu.publicSamples(params, idx, c.PerturbProbes, ps.rng, &ps.buf, !ps.net.constant, ps.net.free)
		if err != nil {
			return fmt.Errorf("g_φ refresh at step %d: %w", step+1, err)
		}
		if !ps.net.standardised || (c.PerturbRestd && it == 0) {
			ps.net.standardiseSamples(sms)
		}
		var tot, gn float64
		if ps.net.constant {
			tot, gn = ps.net.constTrainStep(sms)
		} else {
			grad := make([]float64, len(ps.net.phi))
			tot = ps.net.lossBatch(sms, grad)
			for i := range grad {
				grad[i] /= float64(len(sms))
				gn += grad[i] * grad[i]
			}
			gn = math.Sqrt(gn)
			ps.net.adamStep(grad)
		}
		if it == 0 {
			rec.LossFirst = tot / float64(len(sms))
		}
		if it == steps-1 {
			if len(ps.net.inv) > 0 {
				rec.InputScale = [2]float64{ps.net.inv[0], ps.net.inv[len(ps.net.inv)-1]}
			}
			rec.Loss = tot / float64(len(sms))
			rec.GradNorm = gn
			last = sms
		}
	}
	if last == nil {
		return nil
	}
	// Diagnostics on the last batch: ‖δ‖ and cos(mean δ, mean public gradient).
	P := tu.p
	md, mg := make([]float64, P), make([]float64, P)
	deltas := make([]float64, len(last)*P)
	ps.net.perturbBatch(last, deltas)
	nrm := 0.0
	for i := range last {
		delta := deltas[i*P : (i+1)*P]
		s := 0.0
		for j, v := range delta {
			md[j] += v
			s += v * v
		}
		if ps.net.packed(last) {
			for t, j := range ps.net.free {
				mg[j] += last[i].g[t]
			}
		} else {
			axpyF64(1, last[i].g, mg)
		}
		nrm += math.Sqrt(s) / float64(len(last))
	}
	var dot, a, b float64
	for j := range md {
		dot += md[j] * mg[j]
		a += md[j] * md[j]
		b += mg[j] * mg[j]
	}
	if a > 0 && b > 0 {
		cos := dot / math.Sqrt(a*b)
		rec.CosMeanGrad = &cos
	}
	rec.PerturbNorm = nrm
	ps.res.Series = append(ps.res.Series, rec)
	return nil
}

// refreshPlan returns the number of Adam steps of the refresh before private step
// `step` and the source of their batches of public indices (n public samples, batch
// b ≤ n). Fixed-steps mode: perturb_steps batches of b drawn uniformly without
// replacement, each from its own permutation. Epoch mode: the refresh's epochs from
// perturbScheduleEpochs, each the ⌈n/b⌉ batches of epochBatches; rec gets the epochs
// and steps.
func (ps *perturbState) refreshPlan(step, n, b int, rec *PerturbRefresh) (int, func() []int) {
	c := ps.cfg
	if c.PerturbEpochs == 0 {
		return c.PerturbSteps, func() []int { return ps.rng.Perm(n)[:b] }
	}
	epochs := perturbScheduleEpochs(c.PerturbEpochs, c.PerturbEpochDecay, c.PerturbMinEpochs, step/c.PerturbEvery)
	steps := epochs * ((n + b - 1) / b)
	rec.Epochs, rec.AdamSteps = epochs, steps
	var epoch [][]int
	return steps, func() []int {
		if len(epoch) == 0 {
			epoch = epochBatches(ps.rng, n, b)
		}
		idx := epoch[0]
		epoch = epoch[1:]
		return idx
	}
}

// publicSamples returns the g_φ inputs of public samples idx at params: the image
// (when withX), its masked gradient and `probes` Gaussian input probes u with
// ġ = J_g u (masked). With free (the constant body's free coordinates, nil for
// none frozen) g and ġ hold those coordinates only, in order. The float64 vectors
// live in sc, which the next call reuses: the samples are valid until then.
func (tu *tuning) publicSamples(params []float32, idx []int, probes int, rng *rand.Rand, sc *pubScratch, withX bool, free []int) ([]pnSample, error) {
	pub := tu.public
	D, P := pub.Dim(), tu.p
	n := len(idx)
	sc.x, sc.y = resize(sc.x, n*D), resize(sc.y, n)
	x, y := sc.x, sc.y
	for j, i := range idx {
		copy(x[j*D:(j+1)*D], pub.Image(i))
		y[j] = pub.Labels[i]
	}
	// The probe directions, drawn in the same order whether or not g_φ reads them
	// (withX: the sample-dependent g_φ; the constant needs only their tangents).
	sc.xdot = resize(sc.xdot, n*probes*D)
	xdot := sc.xdot
	var us []float64
	if withX {
		sc.us = resize(sc.us, n*probes*D)
		us = sc.us
		for i := range us {
			us[i] = rng.NormFloat64()
			xdot[i] = float32(us[i])
		}
	} else {
		for i := range xdot {
			xdot[i] = float32(rng.NormFloat64())
		}
	}
	tg, err := tu.net.Tangent(params, x, y, n, probes, xdot, nil, false)
	if err != nil {
		return nil, err
	}
	mask := tu.curMask()
	G := P // the stored length of g and ġ
	if free != nil {
		G = len(free)
	}
	per := (1 + probes) * G
	if withX {
		per += D
	}
	sc.f64 = resize(sc.f64, n*per)
	b := sc.f64
	take := func(k int) []float64 {
		v := b[:k:k]
		b = b[k:]
		return v
	}
	sms := make([]pnSample, n)
	for s := 0; s < n; s++ {
		sm := pnSample{g: take(G)}
		if withX {
			sm.x = take(D)
		}
		for k := 0; k < probes; k++ {
			if us != nil {
				r := s*probes + k
				sm.u = append(sm.u, us[r*D:(r+1)*D])
			}
			sm.gdots = append(sm.gdots, take(G))
		}
		sms[s] = sm
	}
	parallel.Chunks(n, constChunk, func(lo, hi int) { // the conversions, sample by sample
		for s := lo; s < hi; s++ {
			sm := &sms[s]
			conv := func(dst []float64, src []float32) {
				if free == nil {
					maskedF64Into(dst, src, mask)
					return
				}
				for t, i := range free {
					dst[t] = float64(src[i])
				}
			}
			conv(sm.g, tg.Grads[s*P:(s+1)*P])
			if withX {
				f64Into(sm.x, x[s*D:(s+1)*D])
			}
			for k := range sm.gdots {
				r := s*probes + k
				conv(sm.gdots[k], tg.GradDots[r*P:(r+1)*P])
			}
		}
	})
	return sms, nil
}

func (tu *tuning) curMask() []bool {
	if tu.cur == nil {
		return nil
	}
	return tu.cur.mask
}

func f64(v []float32) []float64 {
	return f64Into(make([]float64, len(v)), v)
}

// f64Into converts v into dst (len(dst) = len(v)) and returns dst.
func f64Into(dst []float64, v []float32) []float64 {
	for i, x := range v {
		dst[i] = float64(x)
	}
	return dst
}

func maskedF64(v []float32, mask []bool) []float64 {
	return maskedF64Into(make([]float64, len(v)), v, mask)
}

// maskedF64Into is maskedF64 into dst.
func maskedF64Into(dst []float64, v []float32, mask []bool) []float64 {
	f64Into(dst, v)
	for i, on := range mask {
		if !on {
			dst[i] = 0
		}
	}
	return dst
}

// perturbActive reports whether g_φ has a non-zero output layer (before that its
// output is exactly zero and the plain paths are used).
func (tu *tuning) perturbActive() bool {
	return tu.perturb != nil && tu.perturb.net.trained
}

// perturbedClippedGradSum writes Σ_i CLIP(g_i + g_φ(z_i, g_i)) over the batch.
func (tu *tuning) perturbedClippedGradSum(params, x []float32, y []int, clip models.Clip, sum []float32, losses []float64) error {
	D := tu.base.InputDim()
	mask := tu.curMask()
	var sms []pnSample
	var deltas []float64
	var first int
	return clippedSumOf("perturbed clipped gradients", tu.net, params, x, y, D, clip, sum, losses,
		func(s0, c int, grads []float32) {
			// g_φ of the whole chunk at once (perturbBatch).
			first = s0
			sms = sms[:0]
			for s := 0; s < c; s++ {
				sms = append(sms, pnSample{x: f64(x[(s0+s)*D : (s0+s+1)*D]), g: maskedF64(grads[s*tu.p:(s+1)*tu.p], mask)})
			}
			deltas = resize(deltas, c*tu.p)
			tu.perturb.net.perturbBatch(sms, deltas)
		},
		func(s int, _ []float32, v []float64) {
			sm := &sms[s-first]
			copy(v, deltas[(s-first)*tu.p:(s-first+1)*tu.p])
			if tu.diag != nil {
				tu.diag.capture(s, sm.g, v, clip)
			}
			for i := range v {
				v[i] += sm.g[i]
			}
		})
}

// perturbedFILSqNorms writes, per sample, Σ_j ‖∂CLIP(g + g_φ(z, g))/∂z_j‖² over its
// sampled coordinates j (the Jacobian of the released per-sample contribution).
func (tu *tuning) perturbedFILSqNorms(params, x []float32, y []int, coords [][]int, out []float64) error {
	P, D := tu.p, tu.base.InputDim()
	mask := tu.curMask()
	return coordTangents(tu.net, params, x, y, coords, D, P, out, func(s0, c, k int, tg *models.Tangents[float32]) {
		sms := make([]pnSample, c)
		for s := range sms {
			sm := pnSample{x: f64(x[(s0+s)*D : (s0+s+1)*D]), g: maskedF64(tg.Grads[s*P:(s+1)*P], mask), uIdx: coords[s0+s]}
			for j := range coords[s0+s] {
				r := s*k + j
				sm.gdots = append(sm.gdots, maskedF64(tg.GradDots[r*P:(r+1)*P], mask))
			}
			sms[s] = sm
		}
		tu.perturb.net.filSqBatch(sms, out[s0:s0+c])
	})
}

// perturbCheckpoint is g_φ's state in a checkpoint (repeatState.Perturb): φ, its
// standardisation and AdamW state, the draws' generator and the report so far, so a
// resumed run continues g_φ bit-identically.
type perturbCheckpoint struct {
	Phi, Mean, Inv     []float64
	Trained, Standard  bool
	AdamM, AdamV       []float64
	AdamT              int
	LastLoss, LastPert float64
	RNG                []byte
	Result             PerturbNetResult
	SumCo              float64
}

// checkpoint captures ps (copies: training continues after the checkpoint).
func (ps *perturbState) checkpoint() (*perturbCheckpoint, error) {
	b, err := ps.pcg.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("g_φ: save RNG state: %w", err)
	}
	n := ps.net
	return &perturbCheckpoint{Phi: slices.Clone(n.phi), Mean: slices.Clone(n.mean), Inv: slices.Clone(n.inv),
		Trained: n.trained, Standard: n.standardised, AdamM: slices.Clone(n.adamM), AdamV: slices.Clone(n.adamV),
		AdamT: n.adamT, LastLoss: n.lastLoss, LastPert: n.lastPert, RNG: b, Result: ps.resultCopy(), SumCo: ps.sumCo}, nil
}

// resultCopy is ps.res with its own copy of the series.
func (ps *perturbState) resultCopy() PerturbNetResult {
	r := ps.res
	r.Series = slices.Clone(r.Series)
	return r
}

// summary is ps.res with the refresh count and the means over the series filled in
// (a refresh without a cosine counts as 0 in its mean).
func (ps *perturbState) summary() PerturbNetResult {
	r := ps.resultCopy()
	r.Refreshes = len(r.Series)
	for _, s := range r.Series {
		r.AdamSteps += s.AdamSteps
		r.LossFirst += s.LossFirst
		r.Loss += s.Loss
		r.GradNorm += s.GradNorm
		r.PerturbNorm += s.PerturbNorm
		if s.CosMeanGrad != nil {
			r.CosMeanGrad += *s.CosMeanGrad
		}
	}
	if n := float64(r.Refreshes); n > 0 {
		r.Loss /= n
		r.LossFirst /= n
		r.GradNorm /= n
		r.PerturbNorm /= n
		r.CosMeanGrad /= n
	}
	return r
}

// restore continues ps from a checkpoint of the same configuration.
func (ps *perturbState) restore(ck *perturbCheckpoint) error {
	n := ps.net
	if len(ck.Phi) != len(n.phi) || len(ck.Mean) != len(n.mean) || len(ck.Inv) != len(n.inv) ||
		len(ck.AdamM) != len(n.phi) || len(ck.AdamV) != len(n.phi) {
		return fmt.Errorf("checkpoint g_φ state does not fit the run (%d parameters, want %d)", len(ck.Phi), len(n.phi))
	}
	if err := ps.pcg.UnmarshalBinary(ck.RNG); err != nil {
		return fmt.Errorf("checkpoint g_φ RNG state: %w", err)
	}
	copy(n.phi, ck.Phi)
	copy(n.mean, ck.Mean)
	copy(n.inv, ck.Inv)
	copy(n.adamM, ck.AdamM)
	copy(n.adamV, ck.AdamV)
	n.trained, n.standardised, n.adamT, n.lastLoss, n.lastPert = ck.Trained, ck.Standard, ck.AdamT, ck.LastLoss, ck.LastPert
	ps.res, ps.sumCo = ck.Result, ck.SumCo
	return nil
}
