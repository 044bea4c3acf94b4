package train

import (
	"fmt"
	"math"
)

// optimizer is an update rule of the parameters from a gradient: momentum SGD or
// Adam (Config.Optimizer). In the private phase the gradient is the privatised ḡ,
// so the rule is post-processing of the released sum: no accountant sees it, and
// FIL is computed at whatever θ_t it produces.
type optimizer interface {
	// step updates params in place with the gradient grad.
	step(params, grad []float64)
	// save puts the optimizer's state into st (a checkpoint); restore takes it
	// back from a checkpoint's st, checking that it fits.
	save(st *repeatState)
	restore(st *repeatState) error
}

// newOptimizer returns cfg's optimizer with learning rate lr and weight decay wd
// for p parameters (the private phase passes cfg.LR and cfg.WeightDecay,
// pretraining its own rate and decay).
func newOptimizer(cfg Config, lr, wd float64, p int) optimizer {
	if cfg.IsAdam() {
		return newAdam(lr, cfg.AdamBeta1, cfg.AdamBeta2, cfg.AdamEps, wd, p)
	}
	return newMomentumSGD(lr, cfg.Momentum, wd, p)
}

// momentumSGD is SGD with heavy-ball momentum and L2 weight decay, in float64:
//
//	g ← ḡ + λ·w;  v ← m·v + g;  w ← w − ρ·v
//
// (the update of jax.example_libraries.optimizers.momentum and torch.optim.SGD with
// dampening 0; ḡ is the privatised gradient, weight decay is applied after the noise
// as in Opacus/torch).
type momentumSGD struct {
	lr, momentum, weightDecay float64
	velocity                  []float64
}

func newMomentumSGD(lr, momentum, weightDecay float64, p int) *momentumSGD {
	return &momentumSGD{lr: lr, momentum: momentum, weightDecay: weightDecay, velocity: make([]float64, p)}
}

// step updates params in place with the gradient grad.
func (o *momentumSGD) step(params, grad []float64) {
	m, lr, wd := o.momentum, o.lr, o.weightDecay
	v := o.velocity[:len(params)]
	grad = grad[:len(params)]
	// The explicit conversions forbid fused multiply-adds, so the update rounds the
	// same way on every platform (transcript.Transcript.Replay repeats it bit for bit).
	for i, w := range params {
		g := grad[i] + float64(wd*w)
		v[i] = float64(m*v[i]) + g
		params[i] = w - float64(lr*v[i])
	}
}

// save shares the velocity with st (the checkpoint sees it as it changes).
func (o *momentumSGD) save(st *repeatState) { st.Velocity = o.velocity }

func (o *momentumSGD) restore(st *repeatState) error {
	if len(st.Velocity) != len(o.velocity) || st.AdamV != nil || st.AdamSteps != 0 {
		return fmt.Errorf("checkpoint optimizer state (%d velocities, Adam state %v) does not fit momentum SGD on %d parameters", len(st.Velocity), st.AdamV != nil, len(o.velocity))
	}
	o.velocity = st.Velocity
	return nil
}

// adam is bias-corrected Adam (Kingma & Ba 2015) with L2 weight decay, in float64,
// as torch.optim.Adam (amsgrad off) computes it: at the t-th update (t = 1, 2, …)
//
//	g ← ḡ + λ·w;  m ← β1·m + (1−β1)·g;  v ← β2·v + (1−β2)·g²
//	w ← w − (ρ/(1−β1^t)) · m / (√v/√(1−β2^t) + ε)
//
// i.e. w ← w − ρ·m̂/(√v̂ + ε) with m̂ = m/(1−β1^t), v̂ = v/(1−β2^t) up to rounding.
// Weight decay is L2 added to the privatised gradient before the moments (torch's
// Adam, not AdamW), the convention of momentumSGD.
type adam struct {
	lr, beta1, beta2, eps, weightDecay float64
	m, v                               []float64 // first and second moments
	t                                  int       // updates applied so far
}

func newAdam(lr, beta1, beta2, eps, weightDecay float64, p int) *adam {
	return &adam{lr: lr, beta1: beta1, beta2: beta2, eps: eps, weightDecay: weightDecay,
		m: make([]float64, p), v: make([]float64, p)}
}

// adamCorrections are the step size ρ/(1−β1^t) and √(1−β2^t) of Adam's t-th update
// (transcript.Replayer computes them the same way: it must round identically).
func adamCorrections(lr, beta1, beta2 float64, t int) (stepSize, bc2Sqrt float64) {
	return lr / (1 - math.Pow(beta1, float64(t))), math.Sqrt(1 - math.Pow(beta2, float64(t)))
}

// step updates params in place with the gradient grad.
func (o *adam) step(params, grad []float64) {
	o.t++
	b1, b2, eps, wd := o.beta1, o.beta2, o.eps, o.weightDecay
	c1, c2 := 1-b1, 1-b2
	stepSize, bc2Sqrt := adamCorrections(o.lr, b1, b2, o.t)
	m, v := o.m[:len(params)], o.v[:len(params)]
	grad = grad[:len(params)]
	// Explicit conversions forbid fused multiply-adds (as in momentumSGD):
	// transcript.Replayer repeats this operation for operation.
	for i, w := range params {
		g := grad[i] + float64(wd*w)
		m[i] = float64(b1*m[i]) + float64(c1*g)
		v[i] = float64(b2*v[i]) + float64(float64(c2*g)*g)
		denom := math.Sqrt(v[i])/bc2Sqrt + eps
		params[i] = w - float64(stepSize*(m[i]/denom))
	}
}

// save shares the moments with st and records the update count (in the private
// phase one update per step: restore checks that it equals st.Step).
func (o *adam) save(st *repeatState) {
	st.Velocity, st.AdamV, st.AdamSteps = o.m, o.v, o.t
}

func (o *adam) restore(st *repeatState) error {
	if len(st.Velocity) != len(o.m) || len(st.AdamV) != len(o.v) || st.AdamSteps != st.Step {
		return fmt.Errorf("checkpoint optimizer state (%d first and %d second moments, %d updates at step %d) does not fit Adam on %d parameters (a momentum SGD checkpoint?)", len(st.Velocity), len(st.AdamV), st.AdamSteps, st.Step, len(o.m))
	}
	o.m, o.v, o.t = st.Velocity, st.AdamV, st.AdamSteps
	return nil
}
