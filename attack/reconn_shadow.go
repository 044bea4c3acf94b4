package attack

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dpfil/dpfil/models"
	"github.com/dpfil/dpfil/train"
)

// shadowRecipe is the training recipe of train.Run restricted to what the batched
// shadow trainer implements: full-batch DP-SGD (every one of the N = |D₋| + 1 samples
// in every step, which train.Run's Poisson and shuffle samplers both give at batch N)
// of the models "linear" (Flatten → Dense(c)) and "mlp" (Flatten → Dense(h) → ELU →
// Dense(c)) on the softmax cross-entropy, per-sample clipping (models.Clip: hard or
// smooth), Gaussian noise N(0, σ²C²) on the clipped sum, ḡ = sum/B and momentum SGD
// with weight decay (train's update). The two large GEMMs per step (the first layer
// forward and its weight gradient) run in float32 on the engine's CPU backend, as in
// train.Run; the rest is float64 (train.Run sums in float32), so the two agree to
// float32 rounding.
type shadowRecipe struct {
	d, h, c  int // input size, hidden width (0: linear), classes
	p        int // parameters
	steps    int
	lr, mom  float64
	wd       float64
	clip     models.Clip
	noiseStd float64 // σC
	batch    float64 // B, the denominator of ḡ
}

// newShadowRecipe returns the batched recipe of cfg for the architecture arch on n
// training samples, or an error saying why the recipe needs train.Run.
func newShadowRecipe(cfg train.Config, arch models.Arch, n int) (*shadowRecipe, error) {
	r := &shadowRecipe{d: arch.Input.Size(), c: arch.Classes, lr: cfg.LR, mom: cfg.Momentum, wd: cfg.WeightDecay}
	ls := arch.Layers
	switch {
	case len(ls) == 2 && ls[0].Kind == models.KindFlatten && ls[1].Kind == models.KindDense && ls[1].Out == arch.Classes:
	case len(ls) == 4 && ls[0].Kind == models.KindFlatten && ls[1].Kind == models.KindDense && ls[2].Kind == models.KindELU &&
		ls[3].Kind == models.KindDense && ls[3].Out == arch.Classes:
		r.h = ls[1].Out
	default:
		return nil, fmt.Errorf("batched shadows: model %s is not Flatten → Dense or Flatten → Dense → ELU → Dense", arch.Name)
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
	if cfg.Tuning.On() {
		return nil, errors.New("batched shadows: pretraining, pruning, freezing and shaped or learned noise need train.Run")
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
				s := b.sample(k, pre, fixedSq[i], fixedY[i], sc)
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
			s := b.sample(k, az, zSq[k], labels[k], sc)
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
func (b *shadowBatch) sample(k int, pre []float64, xSq float64, y int, sc *sampleScratch) float64 {
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
	// Softmax cross-entropy: δ = softmax − onehot.
	mx := logits[0]
	for _, v := range logits[1:] {
		mx = math.Max(mx, v)
	}
	z := 0.0
	for o := 0; o < c; o++ {
		sc.d2[o] = math.Exp(logits[o] - mx)
		z += sc.d2[o]
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
	if h == 0 {
		copy(sc.d1[:c], sc.d2)
		normSq = d2Sq * (xSq + 1)
	} else {
		w2 := b.w2[k*c*h : (k+1)*c*h]
		d1Sq := 0.0
		for j := 0; j < h; j++ {
			v := 0.0
			for o := 0; o < c; o++ {
				v += w2[o*h+j] * sc.d2[o]
			}
			v *= sc.dact[j]
			sc.d1[j] = v
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

// update adds model k's noise to its clipped sums, divides by B and takes the
// momentum SGD step g ← ḡ + λw; v ← m·v + g; w ← w − ρ·v (train's momentumSGD).
// The noise is drawn in the flat parameter order, one normal per coordinate.
func (b *shadowBatch) update(k int, rng *rand.Rand) {
	r := b.r
	d, c, h := r.d, r.c, r.h
	u := h
	if h == 0 {
		u = c
	}
	step := func(w, v, g []float64) {
		for i := range w {
			gi := g[i]
			if r.noiseStd > 0 {
				gi += r.noiseStd * rng.NormFloat64()
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
