package train

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
