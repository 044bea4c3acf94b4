package attack

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
)

// GradientConfig configures the gradient-based reconstruction attack (Hayes et al.
// Eq. 1): projected Adam on ẑ ∈ [0,1]^d from uniform random starts, label known.
type GradientConfig struct {
	Enabled  bool    `json:"enabled"`
	Iters    int     `json:"iters"`    // Adam steps per restart
	Restarts int     `json:"restarts"` // random restarts; the lowest final loss wins
	LR       float64 `json:"lr"`       // Adam step size
}

// DefaultGradientConfig is disabled, 300 Adam steps of size 0.01, 2 restarts (the paper
// ran 1M steps of gradient descent with 5 restarts, which is far beyond a CPU budget).
func DefaultGradientConfig() GradientConfig {
	return GradientConfig{Iters: 300, Restarts: 2, LR: 0.01}
}

func (c GradientConfig) validate() error {
	if !c.Enabled {
		return nil
	}
	switch {
	case c.Iters < 1:
		return fmt.Errorf("gradient attack: iterations %d < 1", c.Iters)
	case c.Restarts < 1:
		return fmt.Errorf("gradient attack: restarts %d < 1", c.Restarts)
	case !(c.LR > 0) || math.IsInf(c.LR, 0):
		return fmt.Errorf("gradient attack: step size %v must be positive and finite", c.LR)
	}
	return nil
}

// GradientLoss evaluates Hayes et al.'s Eq. 1 at the candidate x with label y:
// L(x) = Σ_t −⟨c_t(x), ḡ_t⟩ + ‖c_t(x) − ḡ_t‖₁ with c_t(x) = clip_C(∇_θℓ(θ_t, x, y)),
// and writes its exact gradient in x to dx (when non-nil): Σ_t ∂⟨v_t, c_t(x)⟩/∂x with
// v_t = −ḡ_t + sign(c_t − ḡ_t) held fixed (the L1 term's subgradient).
func GradientLoss(net InputGrader, obs []Observation, x []float64, y int, clip float64, dx []float64) (float64, error) {
	P, d := net.NumParams(), net.InputDim()
	if len(x) != d || (dx != nil && len(dx) != d) {
		return 0, fmt.Errorf("gradient loss: input has %d values, want %d", len(x), d)
	}
	c := make([]float64, P)
	v := make([]float64, P)
	scratch := make([]float64, P)
	dxt := make([]float64, d)
	if dx != nil {
		clear(dx)
	}
	loss := 0.0
	for t, o := range obs {
		if len(o.Theta) != P || len(o.GBar) != P {
			return 0, fmt.Errorf("gradient loss: step %d observation has %d/%d values, want %d", t, len(o.Theta), len(o.GBar), P)
		}
		if err := net.PerSampleGrads(o.Theta, x, []int{y}, 1, c, nil); err != nil {
			return 0, fmt.Errorf("gradient loss step %d: %w", t, err)
		}
		clipRows(c, 1, P, clip, nil)
		for i, ci := range c {
			diff := ci - o.GBar[i]
			loss += -ci*o.GBar[i] + math.Abs(diff)
			s := 0.0
			if diff > 0 {
				s = 1
			} else if diff < 0 {
				s = -1
			}
			v[i] = -o.GBar[i] + s
		}
		if dx == nil {
			continue
		}
		if err := net.ClippedDotInputGrad(o.Theta, x, y, v, clip, scratch, dxt); err != nil {
			return 0, fmt.Errorf("gradient loss step %d: %w", t, err)
		}
		for i, g := range dxt {
			dx[i] += g
		}
	}
	return loss, nil
}

// Reconstruction is the gradient attack's output.
type Reconstruction struct {
	X    []float64 // ẑ ∈ [0,1]^d
	Loss float64   // Eq. 1 at ẑ
	MSE  float64   // mean squared error to the target (when known)
}

// Reconstruct runs projected Adam on Eq. 1 from cfg.Restarts uniform random starts
// drawn from seed and returns the candidate with the lowest loss.
func Reconstruct(ctx context.Context, net InputGrader, obs []Observation, y int, clip float64, cfg GradientConfig, seed uint64) (*Reconstruction, error) {
	cfg.Enabled = true
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if len(obs) == 0 {
		return nil, fmt.Errorf("gradient attack: no observations")
	}
	d := net.InputDim()
	r := rand.New(rand.NewPCG(seed, 0x6772))
	var best *Reconstruction
	const b1, b2, eps = 0.9, 0.999, 1e-8
	for rs := 0; rs < cfg.Restarts; rs++ {
		x := make([]float64, d)
		for i := range x {
			x[i] = r.Float64()
		}
		m := make([]float64, d)
		v := make([]float64, d)
		g := make([]float64, d)
		for it := 1; it <= cfg.Iters; it++ {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if _, err := GradientLoss(net, obs, x, y, clip, g); err != nil {
				return nil, err
			}
			c1 := 1 - math.Pow(b1, float64(it))
			c2 := 1 - math.Pow(b2, float64(it))
			for i, gi := range g {
				m[i] = b1*m[i] + (1-b1)*gi
				v[i] = b2*v[i] + (1-b2)*gi*gi
				x[i] -= cfg.LR * (m[i] / c1) / (math.Sqrt(v[i]/c2) + eps)
				x[i] = math.Min(1, math.Max(0, x[i]))
			}
		}
		loss, err := GradientLoss(net, obs, x, y, clip, nil)
		if err != nil {
			return nil, err
		}
		if math.IsNaN(loss) {
			continue
		}
		if best == nil || loss < best.Loss {
			best = &Reconstruction{X: x, Loss: loss}
		}
	}
	if best == nil {
		return nil, fmt.Errorf("gradient attack: every restart diverged")
	}
	return best, nil
}

// gradientAttack reconstructs the trial's target from its observations.
func (g *Game) gradientAttack(ctx context.Context, st *trialState, trial, target int, obs []Observation) (*Reconstruction, error) {
	ig, ok := st.net.(InputGrader)
	if !ok {
		return nil, fmt.Errorf("gradient attack: the network has no exact input gradient")
	}
	rec, err := Reconstruct(ctx, ig, obs, g.pool.Y[target], g.cfg.Clip, g.cfg.Gradient, deriveSeed(g.cfg.Seed^0x67726164, uint64(trial)))
	if err != nil {
		return nil, fmt.Errorf("trial %d: %w", trial, err)
	}
	tx := g.pool.ImageInto(target, make([]float64, g.pool.D))
	s := 0.0
	for i, v := range rec.X {
		e := v - tx[i]
		s += e * e
	}
	rec.MSE = s / float64(len(tx))
	return rec, nil
}
