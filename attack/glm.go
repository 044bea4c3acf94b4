package attack

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"

	"github.com/dpfil/dpfil/glm"
	"github.com/dpfil/dpfil/internal/parallel"
	"gonum.org/v1/gonum/mat"
)

// The GLM attack of Balle et al. (2021) on output perturbation (Guo et al. 2022,
// Sec. 7.2). The informed adversary knows every training example except the target's
// input x_i (its label y_i is known), the loss, λ, the weights, and sees the release
// w̃ = w* + N(0, σ²I). With a constant-1 bias feature the optimality condition
// ω_iℓ'_i x̃_i + Σ_{j≠i} ω_j∇ℓ_j(w*) + nλw* = 0 gives, at the released w̃,
//
//	x̂_i = (B + nλw̃)[1:] / (B₀ + nλw̃₀),   B = Σ_{j≠i} ω_j ℓ'(w̃ᵀx̃_j, y_j) x̃_j,
//
// (coordinate 0 of x̃_i is the known constant 1). Without noise the attack is exact.
// Without a bias feature the scale of x_i is not identified by this closed form, so
// the attack requires Bias.

// ReconstructGLM returns the attack's estimate of the raw features of training example
// target from the release wTilde, computing B directly (reference implementation).
func ReconstructGLM(m *glm.Model, data *glm.Data, wTilde []float64, target int) ([]float64, error) {
	if err := checkGLMAttack(m, data); err != nil {
		return nil, err
	}
	if len(wTilde) != m.P {
		return nil, fmt.Errorf("GLM attack: release has %d weights, want %d", len(wTilde), m.P)
	}
	if target < 0 || target >= m.N {
		return nil, fmt.Errorf("GLM attack: target %d out of range [0,%d)", target, m.N)
	}
	nl := float64(m.N) * m.Config.Lambda
	acc := make([]float64, m.P)
	for k, v := range wTilde {
		acc[k] = nl * v
	}
	for j := 0; j < m.N; j++ {
		if j == target {
			continue
		}
		x := data.Row(j)
		g := m.Weight(j) * lossDeriv(m.Config.Loss, m.MarginOf(wTilde, x), data.Y[j])
		acc[0] += g
		for k, v := range x {
			acc[k+1] += g * v
		}
	}
	out := make([]float64, m.D)
	for k := range out {
		out[k] = acc[k+1] / acc[0]
	}
	return out, nil
}

func lossDeriv(l glm.Loss, a, y float64) float64 {
	if l == glm.LeastSquares {
		return a - (2*y - 1)
	}
	var s float64
	if a >= 0 {
		s = 1 / (1 + math.Exp(-a))
	} else {
		e := math.Exp(a)
		s = e / (1 + e)
	}
	return s - y
}

func checkGLMAttack(m *glm.Model, data *glm.Data) error {
	if m == nil || data == nil {
		return errors.New("GLM attack: nil model or data")
	}
	if !m.Config.Bias {
		return errors.New("GLM attack: the closed-form attack needs the constant-1 bias feature (fit with bias)")
	}
	if data.N != m.N || data.D != m.D {
		return fmt.Errorf("GLM attack: data is %d×%d but the model was fitted on %d×%d", data.N, data.D, m.N, m.D)
	}
	return nil
}

// GLMAttackOptions configures GLMAttack.
type GLMAttackOptions struct {
	Sigma   float64 // output-perturbation noise σ
	Trials  int     // independent releases (fresh noise each)
	Targets []int   // examples attacked (nil: all)
	Seed    uint64  // all noise flows from this seed
	// Batch is the number of trials evaluated together as matrix products (default 32).
	Batch int
	// Keep lists targets whose first-trial reconstruction is returned.
	Keep []int
	// Progress, if set, is called with the number of trials finished since the last call.
	Progress func(trials int)
}

// GLMAttackResult holds the per-target outcome over all trials.
type GLMAttackResult struct {
	Targets []int
	Trials  int
	// MSE is the mean over finite trials of ‖x̂ − x‖²/d per target (NaN if none).
	MSE []float64
	// MSEStdErr is the standard error of that mean.
	MSEStdErr []float64
	// Finite counts the finite trials per target; NonFinite = Σ(Trials − Finite).
	Finite    []int
	NonFinite int
	// Reconstructions holds the first trial's x̂ for the Keep targets.
	Reconstructions map[int][]float64
}

// GLMAttack runs the attack for every target over opt.Trials fresh releases. Trials are
// processed in blocks as matrix products: margins X̃W̃, r = X̃ᵀG + nλW̃ (the full
// gradient at each release) and X̃r; then for target i with g_i = ω_iℓ'(w̃ᵀx̃_i),
// x̂_i − x_i = (r[1:] − r₀x_i)/(r₀ − g_i), so each (target, trial) costs O(1).
func GLMAttack(m *glm.Model, data *glm.Data, opt GLMAttackOptions) (*GLMAttackResult, error) {
	if err := checkGLMAttack(m, data); err != nil {
		return nil, err
	}
	if !(opt.Sigma >= 0) || math.IsInf(opt.Sigma, 0) {
		return nil, fmt.Errorf("GLM attack: sigma must be finite and ≥ 0, got %v", opt.Sigma)
	}
	if opt.Trials <= 0 {
		return nil, fmt.Errorf("GLM attack: trials must be positive, got %d", opt.Trials)
	}
	targets := opt.Targets
	if targets == nil {
		targets = make([]int, m.N)
		for i := range targets {
			targets[i] = i
		}
	}
	if len(targets) == 0 {
		return nil, errors.New("GLM attack: no targets")
	}
	for _, i := range targets {
		if i < 0 || i >= m.N {
			return nil, fmt.Errorf("GLM attack: target %d out of range [0,%d)", i, m.N)
		}
	}
	batch := opt.Batch
	if batch <= 0 {
		batch = 32
	}
	n, p, d := m.N, m.P, m.D
	nl := float64(n) * m.Config.Lambda
	design := m.Design()
	xt := mat.NewDense(len(targets), p, nil)
	xnorm2 := make([]float64, len(targets))
	for k, i := range targets {
		row := data.Row(i)
		xt.Set(k, 0, 1)
		for j, v := range row {
			xt.Set(k, j+1, v)
			xnorm2[k] += v * v
		}
	}
	for _, i := range opt.Keep {
		if i < 0 || i >= n {
			return nil, fmt.Errorf("GLM attack: kept target %d out of range [0,%d)", i, n)
		}
	}
	res := &GLMAttackResult{Targets: append([]int(nil), targets...), Trials: opt.Trials,
		MSE: make([]float64, len(targets)), MSEStdErr: make([]float64, len(targets)),
		Finite: make([]int, len(targets)), Reconstructions: map[int][]float64{}}
	sum := make([]float64, len(targets))
	sumSq := make([]float64, len(targets))
	rng := rand.New(rand.NewPCG(opt.Seed, 0x61747461636b)) // stream "attack"
	workers := runtime.GOMAXPROCS(0)
	wt := mat.NewDense(p, batch, nil)
	marg := mat.NewDense(n, batch, nil)
	grad := mat.NewDense(n, batch, nil)
	rm := mat.NewDense(p, batch, nil)
	xr := mat.NewDense(len(targets), batch, nil)
	for done := 0; done < opt.Trials; {
		tb := min(batch, opt.Trials-done)
		w := wt.Slice(0, p, 0, tb).(*mat.Dense)
		for j := 0; j < p; j++ {
			for t := 0; t < tb; t++ {
				w.Set(j, t, m.W[j]+opt.Sigma*rng.NormFloat64())
			}
		}
		mg := marg.Slice(0, n, 0, tb).(*mat.Dense)
		mg.Mul(design, w)
		g := grad.Slice(0, n, 0, tb).(*mat.Dense)
		parallelRows(n, workers, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				om, y := m.Weight(i), data.Y[i]
				for t := 0; t < tb; t++ {
					g.Set(i, t, om*lossDeriv(m.Config.Loss, mg.At(i, t), y))
				}
			}
		})
		r := rm.Slice(0, p, 0, tb).(*mat.Dense)
		r.Mul(design.T(), g)
		r.Apply(func(j, t int, v float64) float64 { return v + nl*w.At(j, t) }, r)
		xrs := xr.Slice(0, len(targets), 0, tb).(*mat.Dense)
		xrs.Mul(xt, r)
		rx2 := make([]float64, tb) // ‖r[1:]‖²
		for t := 0; t < tb; t++ {
			for j := 1; j < p; j++ {
				v := r.At(j, t)
				rx2[t] += v * v
			}
		}
		parallelRows(len(targets), workers, func(lo, hi int) {
			for k := lo; k < hi; k++ {
				i := targets[k]
				for t := 0; t < tb; t++ {
					r0 := r.At(0, t)
					xdot := xrs.At(k, t) - r0 // x_i·r[1:]
					num := rx2[t] - 2*r0*xdot + r0*r0*xnorm2[k]
					den := r0 - g.At(i, t)
					e := math.Max(num, 0) / (den * den) / float64(d)
					if math.IsNaN(e) || math.IsInf(e, 0) {
						continue
					}
					res.Finite[k]++
					sum[k] += e
					sumSq[k] += e * e
				}
			}
		})
		if done == 0 {
			for _, i := range opt.Keep {
				den := r.At(0, 0) - g.At(i, 0)
				rec := make([]float64, d)
				for j := range rec {
					rec[j] = (r.At(j+1, 0) - g.At(i, 0)*data.Row(i)[j]) / den
				}
				res.Reconstructions[i] = rec
			}
		}
		done += tb
		if opt.Progress != nil {
			opt.Progress(tb)
		}
	}
	for k := range targets {
		c := res.Finite[k]
		res.NonFinite += opt.Trials - c
		if c == 0 {
			res.MSE[k], res.MSEStdErr[k] = math.NaN(), math.NaN()
			continue
		}
		mean := sum[k] / float64(c)
		res.MSE[k] = mean
		if c > 1 {
			v := (sumSq[k] - float64(c)*mean*mean) / float64(c-1)
			res.MSEStdErr[k] = math.Sqrt(math.Max(v, 0) / float64(c))
		}
	}
	return res, nil
}

func parallelRows(n, workers int, f func(lo, hi int)) {
	if workers < 2 || n < 512 {
		f(0, n)
		return
	}
	parallel.Chunks(n, (n+workers-1)/workers, f)
}
