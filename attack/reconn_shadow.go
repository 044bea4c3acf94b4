package attack

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/dpfil/dpfil/models"
	"github.com/dpfil/dpfil/train"
)

// shadowRecipe is the training recipe of train.Run restricted to what the batched
// shadow trainer implements: full-batch DP-SGD (every one of the N = |D₋| + 1 samples
// in every step, which train.Run's Poisson and shuffle samplers both give at batch N)
// of the models "linear" (Flatten → Dense(c)) and "mlp" (Flatten → Dense(h) → ELU →
// Dense(c)) on the softmax cross-entropy, per-sample clipping (models.Clip: hard or
// smooth), Gaussian noise N(0, σ²C²) on the clipped sum, ḡ = sum/B and momentum SGD
// with weight decay (train's update; optimizer adam needs train.Run). The two large GEMMs per step (the first layer
// forward and its weight gradient) run in float32 on the engine's CPU backend, as in
// train.Run; the rest is float64 (train.Run sums in float32), so the two agree to
// float32 rounding.
//
// Magnitude pruning without pretraining (train's PruneFraction, modes "freeze" and
// "zero") is part of the recipe: each model's mask is the ⌊f·P⌋ smallest-|θ₀|
// parameters of its own initialisation (ties by index, at least one kept; with a
// shared initialisation every model has the same mask), as train's pruneSet. As in
// train.Run the frozen coordinates leave each per-sample gradient before clipping
// (the clip norm is taken over the released coordinates), their noise and the
// released sum are dropped, and they keep θ₀ (mode "zero": start at 0).
type shadowRecipe struct {
	d, h, c   int  // input size, hidden width (0: linear), learned logits (classes, or classes − 1 with zero)
	zero      bool // a zero_logit layer last: the softmax's last class has the fixed logit 0
	p         int  // parameters
	steps     int
	lr, mom   float64
	wd        float64
	clip      models.Clip
	noiseStd  float64 // σC
	batch     float64 // B, the denominator of ḡ
	prune     float64 // fraction of parameters frozen by magnitude (0: no pruning)
	pruneZero bool    // prune mode "zero": the frozen parameters are set to 0
}

// newShadowRecipe returns the batched recipe of cfg for the architecture arch on n
// training samples, or an error saying why the recipe needs train.Run.
func newShadowRecipe(cfg train.Config, arch models.Arch, n int) (*shadowRecipe, error) {
	if cfg.IsAdam() {
		return nil, fmt.Errorf("batched shadows: optimizer %q needs train.Run (the batched trainer updates with momentum SGD)", cfg.Optimizer)
	}
	r := &shadowRecipe{d: arch.Input.Size(), c: arch.Classes, lr: cfg.LR, mom: cfg.Momentum, wd: cfg.WeightDecay}
	ls := arch.Layers
	if n := len(ls); n > 0 && ls[n-1].Kind == models.KindZeroLogit {
		ls, r.zero, r.c = ls[:n-1], true, arch.Classes-1
	}
	switch {
	case len(ls) == 2 && ls[0].Kind == models.KindFlatten && ls[1].Kind == models.KindDense && ls[1].Out == r.c:
	case len(ls) == 4 && ls[0].Kind == models.KindFlatten && ls[1].Kind == models.KindDense && ls[2].Kind == models.KindELU &&
		ls[3].Kind == models.KindDense && ls[3].Out == r.c:
		r.h = ls[1].Out
	default:
		return nil, fmt.Errorf("batched shadows: model %s is not Flatten → Dense or Flatten → Dense → ELU → Dense (optionally → ZeroLogit)", arch.Name)
	}
	if r.h > 0 {
		r.p = r.h*r.d + r.h + r.c*r.h + r.c
	} else {
		r.p = r.c*r.d + r.c
	}
	if np := arch.NumParams(); np != r.p {
		return nil, fmt.Errorf("batched shadows: %s has %d parameters, the batched layout %d", arch.Name, np, r.p)
	}
	if cfg.Batch != n {
		return nil, fmt.Errorf("batched shadows: batch %d is not the full training set (%d)", cfg.Batch, n)
	}
	switch {
	case cfg.Steps > 0:
		r.steps = cfg.Steps
	case cfg.Epochs > 0 && cfg.Epochs == math.Trunc(cfg.Epochs):
		r.steps = int(cfg.Epochs) // full batch: one step per epoch
	default:
		return nil, fmt.Errorf("batched shadows: %v epochs is not a whole number of full-batch steps", cfg.Epochs)
	}
	tu := cfg.Tuning
	r.prune, r.pruneZero = tu.PruneFraction, tu.PruneMode == train.PruneZero
	switch tu.PruneMode {
	case "", train.PruneFreeze, train.PruneZero:
	default:
		return nil, fmt.Errorf("batched shadows: prune mode %q", tu.PruneMode)
	}
	tu.PruneFraction, tu.PruneMode = 0, ""
	if tu != (train.TuningConfig{}) {
		return nil, errors.New("batched shadows: pretraining, freezing and shaped or learned noise need train.Run")
	}
	if !(r.prune >= 0 && r.prune < 1) {
		return nil, fmt.Errorf("batched shadows: prune fraction %v outside [0, 1)", r.prune)
	}
	if r.prune > 0 && r.wd != 0 {
		return nil, errors.New("batched shadows: weight decay would move the pruned parameters")
	}
	switch cfg.ClipMode {
	case train.ClipModeSmooth:
		r.clip = models.Clip{Mode: models.ClipSmooth, C: cfg.Clip, GELU: models.GELUExact}
	case train.ClipModeHard:
		r.clip = models.Clip{Mode: models.ClipHard, C: cfg.Clip}
	default:
		return nil, fmt.Errorf("batched shadows: clip mode %q", cfg.ClipMode)
	}
	if cfg.TargetEpsilon > 0 {
		return nil, errors.New("batched shadows: give σ, not a target ε (train.Run solves σ per run)")
	}
	r.noiseStd = cfg.Sigma * cfg.Clip
	r.batch = float64(cfg.Batch)
	return r, nil
}

// shadowBatch is the working state of a block of S models trained together.
type shadowBatch struct {
	r *shadowRecipe
	s int
	// Parameters and velocities, by tensor, the S models' blocks contiguous: w1 is
	// (S·h)×d (linear: (S·c)×d), b1 S·h, w2 S·c×h, b2 S·c (linear: b1 is the bias).
	w1, b1, w2, b2     []float64
	vw1, vb1, vw2, vb2 []float64
	gw1, gb1, gw2, gb2 []float64
	// The two GEMMs per step run in float32 on the engine's CPU backend (as train.Run
	// does): w1f is the float32 copy of w1, a1 the n0 × S·u first-layer outputs of
	// the fixed rows (u = h; linear: u = c, the logits), dl their clipped first-layer
	// deltas and gw1f the fixed rows' first-layer weight gradient sum.
	w1f, a1, dl, gw1f []float32
	be                models.Backend[float32]
	// Pruning (nil without): masks[k] is model k's released coordinates (1, else 0)
	// in train's flat layout, one slice shared by models with the same θ₀; qf is the
	// n0 × S·u released squared input norms of the fixed rows, qf[i, k·u+j] =
	// Σ_l masks[k][W1 j,l]·x_il² (the squared norm of row j of the masked W1 gradient
	// is δ_j²·qf[i, k·u+j]), qz the same for the target rows (S·u).
	masks  [][]float64
	qf, qz []float64
}

// trainShadows trains S = len(labels) models, model k on D₋ ∪ {z_k} (z_k the k-th row
// of zs, label labels[k], last), from the initial parameters init[k·P:(k+1)·P], with
// the noise drawn from noise[k], and writes the final parameters (train's flat layout)
// to out (S×P). fixedX is D₋ (n0×d), fixedSq its rows' squared norms. The S models
// share D₋, so the dominant work is two GEMMs per step with S·h columns.
func (r *shadowRecipe) trainShadows(ctx context.Context, fixedX, fixedSq []float64, fixedY []int, zs []float64, labels []int,
	init []float64, noise []*rand.Rand, out []float64) error {
	S, d, c, P := len(labels), r.d, r.c, r.p
	n0 := len(fixedY)
	h := r.h
	u := h // width of the first layer's output
	if h == 0 {
		u = c
	}
	b := &shadowBatch{r: r, s: S, w1: make([]float64, S*u*d), b1: make([]float64, S*u), vw1: make([]float64, S*u*d), vb1: make([]float64, S*u),
		gw1: make([]float64, S*u*d), gb1: make([]float64, S*u), w1f: make([]float32, S*u*d), a1: make([]float32, n0*S*u),
		dl: make([]float32, n0*S*u), gw1f: make([]float32, S*u*d), be: models.NewCPUBackend[float32]()}
	if h > 0 {
		b.w2, b.b2 = make([]float64, S*c*h), make([]float64, S*c)
		b.vw2, b.vb2 = make([]float64, S*c*h), make([]float64, S*c)
		b.gw2, b.gb2 = make([]float64, S*c*h), make([]float64, S*c)
	}
	b.unpack(init)
	zSq := make([]float64, S)
	for k := 0; k < S; k++ {
		for _, v := range zs[k*d : (k+1)*d] {
			zSq[k] += v * v
		}
	}
	fx32 := make([]float32, len(fixedX))
	for i, v := range fixedX {
		fx32[i] = float32(v)
	}
	if r.prune > 0 {
		b.prepareMasks(init, fixedX, zs)
	}
	pre := make([]float64, u) // a fixed row's first-layer output
	az := make([]float64, u)  // a target row's first-layer output
	dz := make([]float64, u)  // its clipped first-layer delta
	sc := newSampleScratch(r) // per-sample buffers
	for t := 0; t < r.steps; t++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		// First layer on the fixed rows of every model at once: a1 = X₋ · W1ᵀ.
		for i, v := range b.w1 {
			b.w1f[i] = float32(v)
		}
		if n0 > 0 {
			b.be.Gemm(false, true, n0, S*u, d, 1, fx32, d, b.w1f, d, 0, b.a1, S*u)
		}
		clear(b.gw1)
		clear(b.gb1)
		clear(b.gw2)
		clear(b.gb2)
		for k := 0; k < S; k++ {
			w1k := b.w1[k*u*d : (k+1)*u*d]
			for i := 0; i < n0; i++ {
				for j, v := range b.a1[i*S*u+k*u : i*S*u+(k+1)*u] {
					pre[j] = float64(v)
				}
				var q []float64
				if b.qf != nil {
					q = b.qf[i*S*u+k*u : i*S*u+(k+1)*u]
				}
				s := b.sample(k, pre, fixedSq[i], q, fixedY[i], sc)
				dst := b.dl[i*S*u+k*u : i*S*u+(k+1)*u]
				for j := range dst {
					dst[j] = float32(s * sc.d1[j])
				}
			}
			// The target row: its first-layer product and rank-one weight gradient.
			zk := zs[k*d : (k+1)*d]
			for j := 0; j < u; j++ {
				az[j] = dotF(w1k[j*d:(j+1)*d], zk)
			}
			var q []float64
			if b.qz != nil {
				q = b.qz[k*u : (k+1)*u]
			}
			s := b.sample(k, az, zSq[k], q, labels[k], sc)
			gb := b.gb1[k*u : (k+1)*u]
			for j := 0; j < u; j++ {
				dz[j] = s * sc.d1[j]
				gb[j] += dz[j]
			}
			g := b.gw1[k*u*d : (k+1)*u*d]
			for j := 0; j < u; j++ {
				if dz[j] != 0 {
					axpyF(dz[j], zk, g[j*d:(j+1)*d])
				}
			}
		}
		// Clipped first-layer weight gradients of the fixed rows: G1 += Δᵀ · X₋ (its
		// fixed-row sum is added to the target's rank-one term, in the same order for
		// every S).
		if n0 > 0 {
			b.be.Gemm(true, false, S*u, d, n0, 1, b.dl, S*u, fx32, d, 0, b.gw1f, d)
			for i, v := range b.gw1f {
				b.gw1[i] += float64(v)
			}
			for i := 0; i < n0; i++ {
				for j, v := range b.dl[i*S*u : (i+1)*S*u] {
					b.gb1[j] += float64(v)
				}
			}
		}
		// Noise, ḡ = sum/B, and the momentum SGD update, model by model.
		for k := 0; k < S; k++ {
			b.update(k, noise[k])
		}
	}
	b.pack(out[:S*P])
	return nil
}

// prepareMasks computes each model's pruning mask from its initialisation init
// (S×P, float32-rounded as train.Run's θ₀), zeroes the frozen parameters in mode
// "zero", and fills qf and qz from the fixed rows fixedX (n0×d) and the targets zs.
func (b *shadowBatch) prepareMasks(init, fixedX, zs []float64) {
	r := b.r
	S, P, d := b.s, r.p, r.d
	u := r.h
	if u == 0 {
		u = r.c
	}
	b.masks = make([][]float64, S)
	for k := 0; k < S; k++ {
		p0 := init[k*P : (k+1)*P]
		if k > 0 && slices.Equal(p0, init[(k-1)*P:k*P]) {
			b.masks[k] = b.masks[k-1]
			continue
		}
		b.masks[k] = pruneMask(p0, r.prune)
	}
	if r.pruneZero {
		flat := make([]float64, S*P)
		b.pack(flat)
		for k, mk := range b.masks {
			for i, on := range mk {
				if on == 0 {
					flat[k*P+i] = 0
				}
			}
		}
		b.unpack(flat)
	}
	// The W1 masks of the S models stacked as the (S·u)×d matrix M; qf = X²·Mᵀ.
	m1 := make([]float64, S*u*d)
	for k, mk := range b.masks {
		copy(m1[k*u*d:(k+1)*u*d], mk[:u*d])
	}
	n0 := len(fixedX) / max(d, 1)
	if n0 > 0 {
		x2 := make([]float64, len(fixedX))
		for i, v := range fixedX {
			x2[i] = v * v
		}
		b.qf = make([]float64, n0*S*u)
		models.NewCPUBackend[float64]().Gemm(false, true, n0, S*u, d, 1, x2, d, m1, d, 0, b.qf, S*u)
	}
	b.qz = make([]float64, S*u)
	z2 := make([]float64, d)
	for k := 0; k < S; k++ {
		for l, v := range zs[k*d : (k+1)*d] {
			z2[l] = v * v
		}
		for j := 0; j < u; j++ {
			b.qz[k*u+j] = dotF(m1[(k*u+j)*d:(k*u+j+1)*d], z2)
		}
	}
}

// pruneMask returns the released coordinates (1, else 0) of parameters p0 pruned by
// magnitude: the ⌊frac·P⌋ of smallest |θ₀| are frozen, ties broken by index, at
// least one parameter kept (train's pruneSet without a Freeze list).
func pruneMask(p0 []float64, frac float64) []float64 {
	P := len(p0)
	mk := make([]float64, P)
	for i := range mk {
		mk[i] = 1
	}
	k := min(int(math.Floor(frac*float64(P))), P-1)
	if k <= 0 {
		return mk
	}
	idx := make([]int, P)
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(math.Abs(p0[a]), math.Abs(p0[b])) })
	for _, i := range idx[:k] {
		mk[i] = 0
	}
	return mk
}

// sampleScratch holds one sample's intermediate vectors.
type sampleScratch struct {
	act, dact, logits, d2, d1 []float64
}

func newSampleScratch(r *shadowRecipe) *sampleScratch {
	u := max(r.h, r.c)
	return &sampleScratch{act: make([]float64, u), dact: make([]float64, u), logits: make([]float64, r.c), d2: make([]float64, r.c), d1: make([]float64, u)}
}

// sample takes the first-layer output row (before the bias) of one sample of model
// k, its input's squared norm and its label; it adds the sample's clipped
// second-layer gradient to the model's sums, leaves its unclipped first-layer delta
// in sc.d1 and returns its clipping factor s (the caller adds s·d1 to the first-layer
// sums). The per-sample gradient norm is exact without forming the gradient: a dense
// layer's gradient is δaᵀ plus the bias δ, so its squared norm is ‖δ‖²(‖a‖² + 1).
// With pruning the norm is over the released coordinates only: q[j] is the released
// part of ‖x‖² in row j of W1 (from b.qf or b.qz), and the masked norm is
// Σ_j δ_j²(q_j + m_bj) per layer (m the layer's mask). The frozen coordinates of the
// sums are dropped in update, which gives the sum of the clipped masked gradients.
func (b *shadowBatch) sample(k int, pre []float64, xSq float64, q []float64, y int, sc *sampleScratch) float64 {
	r := b.r
	h, c := r.h, r.c
	logits := sc.logits
	var hSq float64
	if h > 0 {
		bk := b.b1[k*h : (k+1)*h]
		for j := 0; j < h; j++ {
			z := pre[j] + bk[j]
			if z > 0 {
				sc.act[j], sc.dact[j] = z, 1
			} else {
				e := math.Expm1(z)
				sc.act[j], sc.dact[j] = e, e+1
			}
			hSq += sc.act[j] * sc.act[j]
		}
		w2 := b.w2[k*c*h : (k+1)*c*h]
		b2 := b.b2[k*c : (k+1)*c]
		for o := 0; o < c; o++ {
			logits[o] = dotF(w2[o*h:(o+1)*h], sc.act[:h]) + b2[o]
		}
	} else {
		bk := b.b1[k*c : (k+1)*c]
		for o := 0; o < c; o++ {
			logits[o] = pre[o] + bk[o]
		}
	}
	// Softmax cross-entropy: δ = softmax − onehot (over the c learned logits and,
	// with r.zero, the fixed logit 0 of class c, whose δ reaches no parameter).
	mx := logits[0]
	for _, v := range logits[1:] {
		mx = math.Max(mx, v)
	}
	if r.zero {
		mx = math.Max(mx, 0)
	}
	z := 0.0
	for o := 0; o < c; o++ {
		sc.d2[o] = math.Exp(logits[o] - mx)
		z += sc.d2[o]
	}
	if r.zero {
		z += math.Exp(-mx)
	}
	d2Sq := 0.0
	for o := 0; o < c; o++ {
		sc.d2[o] /= z
		if o == y {
			sc.d2[o]--
		}
		d2Sq += sc.d2[o] * sc.d2[o]
	}
	var normSq float64
	if q != nil {
		normSq = b.maskedNormSq(k, q, sc)
	} else if h == 0 {
		copy(sc.d1[:c], sc.d2)
		normSq = d2Sq * (xSq + 1)
	} else {
		b.hiddenDelta(k, sc)
		d1Sq := 0.0
		for _, v := range sc.d1[:h] {
			d1Sq += v * v
		}
		normSq = d1Sq*(xSq+1) + d2Sq*(hSq+1)
	}
	s, _ := r.clip.Scale(math.Sqrt(normSq))
	if h > 0 {
		gw2 := b.gw2[k*c*h : (k+1)*c*h]
		gb2 := b.gb2[k*c : (k+1)*c]
		for o := 0; o < c; o++ {
			f := s * sc.d2[o]
			gb2[o] += f
			if f != 0 {
				axpyF(f, sc.act[:h], gw2[o*h:(o+1)*h])
			}
		}
	}
	return s
}

// hiddenDelta writes model k's first-layer delta, (W₂ᵀ d2) ⊙ act′, to sc.d1[:h].
func (b *shadowBatch) hiddenDelta(k int, sc *sampleScratch) {
	h, c := b.r.h, b.r.c
	w2 := b.w2[k*c*h : (k+1)*c*h]
	for j := 0; j < h; j++ {
		v := 0.0
		for o := 0; o < c; o++ {
			v += w2[o*h+j] * sc.d2[o]
		}
		sc.d1[j] = v * sc.dact[j]
	}
}

// maskedNormSq returns the squared norm of model k's per-sample gradient restricted
// to its released coordinates, from the deltas in sc (sample's) and q, and leaves the
// first-layer delta in sc.d1.
func (b *shadowBatch) maskedNormSq(k int, q []float64, sc *sampleScratch) float64 {
	r := b.r
	d, h, c := r.d, r.h, r.c
	mk := b.masks[k]
	normSq := 0.0
	if h == 0 {
		mb := mk[c*d : c*d+c]
		for o := 0; o < c; o++ {
			sc.d1[o] = sc.d2[o]
			normSq += sc.d2[o] * sc.d2[o] * (q[o] + mb[o])
		}
		return normSq
	}
	b.hiddenDelta(k, sc)
	mb1 := mk[h*d : h*d+h]
	for j, v := range sc.d1[:h] {
		normSq += v * v * (q[j] + mb1[j])
	}
	m2 := mk[h*d+h : h*d+h+c*h]
	mb2 := mk[h*d+h+c*h : h*d+h+c*h+c]
	for o := 0; o < c; o++ {
		aSq := mb2[o]
		for j, a := range sc.act[:h] {
			aSq += m2[o*h+j] * a * a
		}
		normSq += sc.d2[o] * sc.d2[o] * aSq
	}
	return normSq
}

// update adds model k's noise to its clipped sums, divides by B and takes the
// momentum SGD step g ← ḡ + λw; v ← m·v + g; w ← w − ρ·v (train's momentumSGD).
// The noise is drawn in the flat parameter order, one normal per coordinate. With
// pruning the frozen coordinates' noise draws are discarded and they do not move
// (train.Run zeroes their released sum; with no weight decay their velocity stays 0).
func (b *shadowBatch) update(k int, rng *rand.Rand) {
	r := b.r
	d, c, h := r.d, r.c, r.h
	u := h
	if h == 0 {
		u = c
	}
	var mk []float64 // model k's mask, in the order of the four steps below
	if b.masks != nil {
		mk = b.masks[k]
	}
	step := func(w, v, g []float64) {
		var m []float64
		if mk != nil {
			m, mk = mk[:len(w)], mk[len(w):]
		}
		for i := range w {
			gi := g[i]
			if r.noiseStd > 0 {
				gi += r.noiseStd * rng.NormFloat64()
			}
			if m != nil && m[i] == 0 {
				continue
			}
			gi = gi/r.batch + float64(r.wd*w[i])
			v[i] = float64(r.mom*v[i]) + gi
			w[i] -= float64(r.lr * v[i])
		}
	}
	step(b.w1[k*u*d:(k+1)*u*d], b.vw1[k*u*d:(k+1)*u*d], b.gw1[k*u*d:(k+1)*u*d])
	step(b.b1[k*u:(k+1)*u], b.vb1[k*u:(k+1)*u], b.gb1[k*u:(k+1)*u])
	if h > 0 {
		step(b.w2[k*c*h:(k+1)*c*h], b.vw2[k*c*h:(k+1)*c*h], b.gw2[k*c*h:(k+1)*c*h])
		step(b.b2[k*c:(k+1)*c], b.vb2[k*c:(k+1)*c], b.gb2[k*c:(k+1)*c])
	}
}

// unpack copies the S flat parameter vectors (train's layout: W1, b1[, W2, b2]) into
// the per-tensor blocks; pack copies them back.
func (b *shadowBatch) unpack(flat []float64) { b.copyFlat(flat, false) }
func (b *shadowBatch) pack(flat []float64)   { b.copyFlat(flat, true) }

func (b *shadowBatch) copyFlat(flat []float64, toFlat bool) {
	r := b.r
	d, c, h, P := r.d, r.c, r.h, r.p
	u := h
	if h == 0 {
		u = c
	}
	mv := func(flatPart, block []float64) {
		if toFlat {
			copy(flatPart, block)
		} else {
			copy(block, flatPart)
		}
	}
	for k := 0; k < b.s; k++ {
		f := flat[k*P : (k+1)*P]
		mv(f[:u*d], b.w1[k*u*d:(k+1)*u*d])
		f = f[u*d:]
		mv(f[:u], b.b1[k*u:(k+1)*u])
		if h > 0 {
			f = f[u:]
			mv(f[:c*h], b.w2[k*c*h:(k+1)*c*h])
			mv(f[c*h:c*h+c], b.b2[k*c:(k+1)*c])
		}
	}
}

func dotF(a, b []float64) float64 {
	s := 0.0
	for i, v := range a {
		s += v * b[i]
	}
	return s
}
