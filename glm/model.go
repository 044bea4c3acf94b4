package glm

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"
)

// Loss selects the GLM loss.
type Loss int

const (
	// Logistic is binary logistic regression with labels y ∈ {0, 1}.
	Logistic Loss = iota
	// LeastSquares is linear least squares with targets t = 2y − 1 ∈ {−1, +1}.
	LeastSquares
)

// String returns the CLI name of the loss ("logistic" or "lsq").
func (l Loss) String() string {
	switch l {
	case Logistic:
		return "logistic"
	case LeastSquares:
		return "lsq"
	}
	return fmt.Sprintf("Loss(%d)", int(l))
}

// ParseLoss parses "logistic" or "lsq" (also "least-squares").
func ParseLoss(s string) (Loss, error) {
	switch s {
	case "logistic":
		return Logistic, nil
	case "lsq", "least-squares", "leastsquares":
		return LeastSquares, nil
	}
	return 0, fmt.Errorf("unknown GLM loss %q (want logistic or lsq)", s)
}

func (l Loss) valid() bool { return l == Logistic || l == LeastSquares }

// derivs returns ℓ(a, y), ℓ'(a, y) and ℓ”(a, y) for margin a and label y ∈ {0, 1}.
func (l Loss) derivs(a, y float64) (f, d1, d2 float64) {
	switch l {
	case LeastSquares:
		t := 2*y - 1
		r := a - t
		return 0.5 * r * r, r, 1
	default:
		// softplus(a) − y·a, computed stably.
		sp := math.Max(a, 0) + math.Log1p(math.Exp(-math.Abs(a)))
		s := sigmoid(a)
		return sp - y*a, s - y, s * (1 - s)
	}
}

// deriv1 returns ℓ'(a, y) only.
func (l Loss) deriv1(a, y float64) float64 {
	if l == LeastSquares {
		return a - (2*y - 1)
	}
	return sigmoid(a) - y
}

func sigmoid(a float64) float64 {
	if a >= 0 {
		return 1 / (1 + math.Exp(-a))
	}
	e := math.Exp(a)
	return e / (1 + e)
}

// Data is a binary training set in float64: N examples of D raw features each
// (row-major in X) and labels Y ∈ {0, 1}.
type Data struct {
	N, D int
	X    []float64
	Y    []float64
}

// NewData converts float32 features (n×d, row-major, e.g. pixels in [0,1]) and integer
// labels in {0, 1} to a Data, rejecting non-finite features and other labels.
func NewData(x []float32, labels []int, n, d int) (*Data, error) {
	if n <= 0 || d <= 0 {
		return nil, fmt.Errorf("glm data: need n > 0 and d > 0, got n=%d d=%d", n, d)
	}
	if len(x) != n*d {
		return nil, fmt.Errorf("glm data: %d feature values for n=%d d=%d (want %d)", len(x), n, d, n*d)
	}
	if len(labels) != n {
		return nil, fmt.Errorf("glm data: %d labels for n=%d", len(labels), n)
	}
	out := &Data{N: n, D: d, X: make([]float64, n*d), Y: make([]float64, n)}
	for i, v := range x {
		f := float64(v)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("glm data: feature %d of example %d is %v", i%d, i/d, f)
		}
		out.X[i] = f
	}
	for i, c := range labels {
		if c != 0 && c != 1 {
			return nil, fmt.Errorf("glm data: label of example %d is %d; binary GLMs need labels 0/1", i, c)
		}
		out.Y[i] = float64(c)
	}
	return out, nil
}

// Row returns a view of example i's raw features.
func (d *Data) Row(i int) []float64 { return d.X[i*d.D : (i+1)*d.D] }

// Clone returns a deep copy.
func (d *Data) Clone() *Data {
	return &Data{N: d.N, D: d.D, X: append([]float64(nil), d.X...), Y: append([]float64(nil), d.Y...)}
}

// MaxNorm returns max_i ‖x̃_i‖₂ (including the constant-1 bias feature when bias is set).
func (d *Data) MaxNorm(bias bool) float64 {
	best := 0.0
	for i := 0; i < d.N; i++ {
		s := 0.0
		if bias {
			s = 1
		}
		for _, v := range d.Row(i) {
			s += v * v
		}
		best = math.Max(best, s)
	}
	return math.Sqrt(best)
}

// Config describes the regularised objective and the solver's stopping rule.
type Config struct {
	Loss    Loss
	Lambda  float64   // λ > 0; the regulariser is (nλ/2)‖w‖²
	Bias    bool      // append a constant-1 feature as coordinate 0 of x̃
	Weights []float64 // optional per-example weights ω_i ≥ 0 (nil: all 1)
	GradTol float64   // stop when ‖∇F‖₂ ≤ GradTol (default 1e-12)
	MaxIter int       // Newton iterations (default 100)
	Init    []float64 // optional warm start (length p)
}

// Model is a fitted GLM: the exact minimiser w* (length P = D or D+1) of its objective
// on the data it was fitted on, with the solver's diagnostics.
type Model struct {
	Config    Config
	N, D, P   int
	W         []float64
	GradNorm  float64 // ‖∇F(w*)‖₂ reached
	Objective float64 // F(w*)
	Iters     int     // Newton iterations taken

	design *mat.Dense // N×P design matrix X̃
	y      []float64
}

// P returns the parameter count for d features.
func paramCount(d int, bias bool) int {
	if bias {
		return d + 1
	}
	return d
}

// Design builds the N×P design matrix X̃ (with a leading constant-1 column if bias).
func (d *Data) Design(bias bool) *mat.Dense {
	p := paramCount(d.D, bias)
	xt := make([]float64, d.N*p)
	for i := 0; i < d.N; i++ {
		row := xt[i*p : (i+1)*p]
		if bias {
			row[0] = 1
			copy(row[1:], d.Row(i))
		} else {
			copy(row, d.Row(i))
		}
	}
	return mat.NewDense(d.N, p, xt)
}

func (c *Config) validate(n, p int) error {
	if !c.Loss.valid() {
		return fmt.Errorf("glm: invalid loss %d", int(c.Loss))
	}
	if !(c.Lambda > 0) || math.IsInf(c.Lambda, 0) {
		return fmt.Errorf("glm: lambda must be a positive finite number, got %v", c.Lambda)
	}
	if c.Weights != nil {
		if len(c.Weights) != n {
			return fmt.Errorf("glm: %d weights for %d examples", len(c.Weights), n)
		}
		for i, w := range c.Weights {
			if !(w >= 0) || math.IsInf(w, 0) {
				return fmt.Errorf("glm: weight %d is %v; weights must be finite and ≥ 0", i, w)
			}
		}
	}
	if c.Init != nil && len(c.Init) != p {
		return fmt.Errorf("glm: warm start has %d values, want %d", len(c.Init), p)
	}
	if c.GradTol < 0 || math.IsNaN(c.GradTol) {
		return fmt.Errorf("glm: gradient tolerance must be ≥ 0, got %v", c.GradTol)
	}
	if c.GradTol == 0 {
		c.GradTol = 1e-12
	}
	if c.MaxIter < 0 {
		return fmt.Errorf("glm: max iterations must be ≥ 0, got %d", c.MaxIter)
	}
	if c.MaxIter == 0 {
		c.MaxIter = 100
	}
	return nil
}

func (c Config) weight(i int) float64 {
	if c.Weights == nil {
		return 1
	}
	return c.Weights[i]
}

// ErrNotConverged is wrapped by Fit when Newton's method stops far from the optimum.
var ErrNotConverged = errors.New("newton did not converge")

// Fit minimises Σ ω_i ℓ(wᵀx̃_i, y_i) + (nλ/2)‖w‖² by Newton's method with a Cholesky
// solve and a backtracking line search. It iterates until ‖∇F‖ ≤ cfg.GradTol or until
// floating-point round-off stops further progress (the reached norm is in
// Model.GradNorm); it fails if the gradient is still above 1e-6·(1+‖∇F(w₀)‖).
func Fit(data *Data, cfg Config) (*Model, error) {
	if data == nil || data.N == 0 {
		return nil, errors.New("glm: empty data")
	}
	p := paramCount(data.D, cfg.Bias)
	if err := cfg.validate(data.N, p); err != nil {
		return nil, err
	}
	for i, y := range data.Y {
		if y != 0 && y != 1 {
			return nil, fmt.Errorf("glm: label of example %d is %v, want 0 or 1", i, y)
		}
	}
	m := &Model{Config: cfg, N: data.N, D: data.D, P: p, design: data.Design(cfg.Bias), y: data.Y}
	if cfg.Weights != nil {
		m.Config.Weights = append([]float64(nil), cfg.Weights...)
	}
	m.Config.Init = nil
	w := make([]float64, p)
	if cfg.Init != nil {
		copy(w, cfg.Init)
	}
	if err := m.newton(w); err != nil {
		return nil, err
	}
	return m, nil
}

// eval returns F(w), fills grad (length p) and, if hess is non-nil, the Hessian.
func (m *Model) eval(w, grad []float64, hess *mat.SymDense, scratch []float64) float64 {
	n, p := m.N, m.P
	nl := float64(n) * m.Config.Lambda
	marg := mat.NewVecDense(n, scratch[:n])
	marg.MulVec(m.design, mat.NewVecDense(p, w))
	f := 0.0
	g1 := scratch[n : 2*n]
	g2 := scratch[2*n : 3*n]
	for i := 0; i < n; i++ {
		om := m.Config.weight(i)
		l, d1, d2 := m.Config.Loss.derivs(marg.AtVec(i), m.y[i])
		f += om * l
		g1[i] = om * d1
		g2[i] = om * d2
	}
	gv := mat.NewVecDense(p, grad)
	gv.MulVec(m.design.T(), mat.NewVecDense(n, g1))
	sq := 0.0
	for j := range w {
		grad[j] += nl * w[j]
		sq += w[j] * w[j]
	}
	f += 0.5 * nl * sq
	if hess != nil {
		weightedGram(m.design, g2, nl, hess)
	}
	return f
}

// weightedGram sets h = X̃ᵀ diag(c) X̃ + shift·I (c ≥ 0), splitting the rows over the
// available CPUs and using a symmetric rank-k update per chunk.
func weightedGram(x *mat.Dense, c []float64, shift float64, h *mat.SymDense) {
	n, p := x.Dims()
	raw := x.RawMatrix()
	workers := runtime.GOMAXPROCS(0)
	if workers > 8 {
		workers = 8
	}
	if n < 256 {
		workers = 1
	}
	chunk := (n + workers - 1) / workers
	parts := make([][]float64, workers)
	var wg sync.WaitGroup
	for k := 0; k < workers; k++ {
		lo, hi := k*chunk, min((k+1)*chunk, n)
		if lo >= hi {
			continue
		}
		wg.Add(1)
		go func(k, lo, hi int) {
			defer wg.Done()
			rows := hi - lo
			s := make([]float64, rows*p)
			for i := lo; i < hi; i++ {
				sc := math.Sqrt(c[i])
				src := raw.Data[i*raw.Stride : i*raw.Stride+p]
				dst := s[(i-lo)*p : (i-lo+1)*p]
				for j, v := range src {
					dst[j] = sc * v
				}
			}
			acc := make([]float64, p*p)
			blas64.Syrk(blas.Trans, 1, blas64.General{Rows: rows, Cols: p, Stride: p, Data: s}, 0,
				blas64.Symmetric{N: p, Stride: p, Data: acc, Uplo: blas.Upper})
			parts[k] = acc
		}(k, lo, hi)
	}
	wg.Wait()
	for i := 0; i < p; i++ {
		for j := i; j < p; j++ {
			v := 0.0
			for _, part := range parts {
				if part != nil {
					v += part[i*p+j]
				}
			}
			if i == j {
				v += shift
			}
			h.SetSym(i, j, v)
		}
	}
}

func norm2(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x * x
	}
	return math.Sqrt(s)
}

func (m *Model) newton(w []float64) error {
	n, p := m.N, m.P
	scratch := make([]float64, 3*n)
	grad := make([]float64, p)
	hess := mat.NewSymDense(p, nil)
	f := m.eval(w, grad, hess, scratch)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Errorf("glm: objective is %v at the start point", f)
	}
	g0 := norm2(grad)
	gn := g0
	trial := make([]float64, p)
	tgrad := make([]float64, p)
	step := mat.NewVecDense(p, nil)
	var chol mat.Cholesky
	iter := 0
	stalls := 0
	for ; iter < m.Config.MaxIter && stalls < 2 && gn > m.Config.GradTol; iter++ {
		if iter > 0 && m.Config.Loss == Logistic {
			m.eval(w, grad, hess, scratch)
		}
		if ok := chol.Factorize(hess); !ok {
			return fmt.Errorf("glm: Hessian not positive definite at iteration %d", iter)
		}
		if err := chol.SolveVecTo(step, mat.NewVecDense(p, grad)); err != nil {
			return fmt.Errorf("glm: Newton solve at iteration %d: %w", iter, err)
		}
		dec := 0.0 // gᵀH⁻¹g ≥ 0
		for j := 0; j < p; j++ {
			dec += grad[j] * step.AtVec(j)
		}
		alpha := 1.0
		accepted := false
		for ls := 0; ls < 40; ls++ {
			for j := 0; j < p; j++ {
				trial[j] = w[j] - alpha*step.AtVec(j)
			}
			ft := m.eval(trial, tgrad, nil, scratch)
			gt := norm2(tgrad)
			armijo := ft <= f-1e-4*alpha*dec
			// Near the optimum F's changes fall below its round-off; accept a step
			// that does not raise F beyond round-off and shrinks the gradient.
			flat := ft-f <= 1e-13*math.Max(1, math.Abs(f)) && gt < gn
			if !math.IsNaN(ft) && (armijo || flat) {
				// Progress stalls when neither F (beyond round-off) nor ‖∇F‖ (by half)
				// decrease: twice in a row means the floating-point floor.
				if ft > f-1e-13*math.Max(1, math.Abs(f)) && gt > 0.5*gn {
					stalls++
				} else {
					stalls = 0
				}
				copy(w, trial)
				copy(grad, tgrad)
				f, gn = ft, gt
				accepted = true
				break
			}
			alpha /= 2
		}
		if !accepted {
			// No step along the Newton direction decreases F (beyond round-off) or
			// ‖∇F‖: the round-off floor has been reached.
			break
		}
	}
	m.W = w
	m.GradNorm = gn
	m.Objective = f
	m.Iters = iter
	if math.IsNaN(gn) || gn > 1e-6*(1+g0) {
		return fmt.Errorf("glm: %w: ‖∇F‖ = %.3g after %d iterations", ErrNotConverged, gn, iter)
	}
	return nil
}

// Margin returns w*ᵀx̃_i for training example i.
func (m *Model) Margin(i int) float64 {
	return mat.Dot(m.design.RowView(i), mat.NewVecDense(m.P, m.W))
}

// MarginOf returns wᵀx̃ for raw features x (length D) and weights w (length P).
func (m *Model) MarginOf(w, x []float64) float64 {
	s := 0.0
	off := 0
	if m.Config.Bias {
		s = w[0]
		off = 1
	}
	for j, v := range x {
		s += w[off+j] * v
	}
	return s
}

// Accuracy returns the fraction of examples of d classified correctly by weights w
// (class 1 iff wᵀx̃ > 0; nil w means w*).
func (m *Model) Accuracy(d *Data, w []float64) (float64, error) {
	if w == nil {
		w = m.W
	}
	if d.D != m.D {
		return 0, fmt.Errorf("glm accuracy: data has %d features, model %d", d.D, m.D)
	}
	if d.N == 0 {
		return 0, errors.New("glm accuracy: empty data")
	}
	ok := 0
	for i := 0; i < d.N; i++ {
		pred := 0.0
		if m.MarginOf(w, d.Row(i)) > 0 {
			pred = 1
		}
		if pred == d.Y[i] {
			ok++
		}
	}
	return float64(ok) / float64(d.N), nil
}

// Perturb returns the output-perturbed release w̃ = w* + N(0, σ²I) drawn from rng.
func (m *Model) Perturb(sigma float64, rng *rand.Rand) ([]float64, error) {
	if !(sigma >= 0) || math.IsInf(sigma, 0) {
		return nil, fmt.Errorf("glm perturb: sigma must be finite and ≥ 0, got %v", sigma)
	}
	out := make([]float64, m.P)
	for j, v := range m.W {
		out[j] = v + sigma*rng.NormFloat64()
	}
	return out, nil
}

// Design returns the model's N×P design matrix X̃ (read-only view).
func (m *Model) Design() mat.Matrix { return m.design }

// Labels returns the training labels (read-only).
func (m *Model) Labels() []float64 { return m.y }

// Weight returns example i's weight ω_i.
func (m *Model) Weight(i int) float64 { return m.Config.weight(i) }

// Gradient returns ∇F(w) of the training objective at w (length P).
func (m *Model) Gradient(w []float64) ([]float64, error) {
	if len(w) != m.P {
		return nil, fmt.Errorf("glm gradient: %d weights, want %d", len(w), m.P)
	}
	g := make([]float64, m.P)
	m.eval(w, g, nil, make([]float64, 3*m.N))
	return g, nil
}
