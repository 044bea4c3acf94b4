package glm

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// Attribute inversion (Hannun et al. 2021, Sec. 6.4, after Fredrikson et al. 2014): an adversary
// who sees the output-perturbed release w̃ = w* + N(0, σ²I) of a GLM recovers a chosen
// attribute x_i[S] (a set S of raw feature columns: a pixel block, a numeric column, a
// one-hot group) of training example i.
//
// The model here is the GLM of package glm on preprocessed features: z = A·x + b
// (Preprocess: unit ball, PCA), z̃ = [1, z] with a bias, and
//
//	w* = argmin Σ_j ω_j ℓ(wᵀz̃_j, t_j) + (nλ/2)‖w‖²,
//
// with least squares on real targets t (ℓ = ½(m − t)², as is: no ±1 mapping) or
// logistic regression on t ∈ {0, 1}. Implicit differentiation of the optimality
// condition gives the Jacobian of the minimiser w.r.t. the raw attribute (labels public)
//
//	J_S = −ω_i H⁻¹ (a_i z̃_i uᵀ + b_i E) A[:, S],   a = ℓ”, b = ℓ',
//
// with H = Σ_j ω_j ℓ”_j z̃_j z̃_jᵀ + nλI, u = w* without bias and E = ∂z̃/∂z. The FIM of
// the attribute is J_SᵀJ_S/σ² (Hannun et al. 2021, eq. 16), and the label column is
// J_t = ω_i H⁻¹ z̃_i (∂ℓ'/∂t = −1 for both losses).

// InvertConfig is the GLM an Inverter fits.
type InvertConfig struct {
	Loss    Loss        // LeastSquares (real targets, used as is) or Logistic (targets 0/1)
	Lambda  float64     // λ > 0
	Bias    bool        // constant-1 feature as coordinate 0
	Weights []float64   // optional per-example weights ω (nil: 1), e.g. from IRFIL
	Pre     *Preprocess // feature map (nil: identity)
	GradTol float64     // Newton stopping tolerance on ‖∇F‖ (default 1e-11·(1+‖∇F(0)‖))
}

// Inverter holds a fitted GLM on a table and runs attribute-inversion attacks and
// their FIL predictions against it.
type Inverter struct {
	cfg     InvertConfig
	tab     *Table
	pre     *Preprocess
	N, K, P int
	off     int
	nl      float64
	zt      []float64 // N×P rows z̃_j
	W       []float64 // w*
	hinv    *mat.Dense
	hfull   *mat.SymDense // least squares: the (w-independent) full-data Hessian
	tol     float64
}

// NewInverter fits the GLM of cfg on t exactly (Newton's method to round-off).
func NewInverter(t *Table, cfg InvertConfig) (*Inverter, error) {
	if err := t.Check(); err != nil {
		return nil, err
	}
	if !cfg.Loss.valid() {
		return nil, fmt.Errorf("glm invert: invalid loss %d", int(cfg.Loss))
	}
	if !(cfg.Lambda > 0) || math.IsInf(cfg.Lambda, 0) {
		return nil, fmt.Errorf("glm invert: lambda must be positive and finite, got %v", cfg.Lambda)
	}
	if cfg.Loss == Logistic && !t.BinaryTargets() {
		return nil, errors.New("glm invert: logistic regression needs targets 0/1 (use --loss lsq for real-valued targets)")
	}
	if cfg.Weights != nil {
		if len(cfg.Weights) != t.N {
			return nil, fmt.Errorf("glm invert: %d weights for %d rows", len(cfg.Weights), t.N)
		}
		for i, w := range cfg.Weights {
			if !(w >= 0) || math.IsInf(w, 0) {
				return nil, fmt.Errorf("glm invert: weight %d is %v", i, w)
			}
		}
	}
	pre := cfg.Pre
	if pre == nil {
		pre = Identity(t.D)
	}
	if pre.D != t.D {
		return nil, fmt.Errorf("glm invert: preprocessing takes %d features, table has %d", pre.D, t.D)
	}
	iv := &Inverter{cfg: cfg, tab: t, pre: pre, N: t.N, K: pre.K}
	if cfg.Bias {
		iv.off = 1
	}
	iv.P = iv.K + iv.off
	iv.nl = float64(t.N) * cfg.Lambda
	iv.zt = make([]float64, t.N*iv.P)
	for i := 0; i < t.N; i++ {
		iv.features(t.Row(i), iv.zt[i*iv.P:(i+1)*iv.P])
	}
	g0 := iv.gradNorm0()
	iv.tol = cfg.GradTol
	if iv.tol == 0 {
		iv.tol = 1e-11 * (1 + g0)
	}
	if cfg.Loss == LeastSquares {
		iv.hfull = iv.hessian(-1, nil, nil)
	}
	w, err := iv.solve(-1, nil, nil)
	if err != nil {
		return nil, err
	}
	iv.W = w
	if iv.hinv, err = invertSym(iv.hessian(-1, nil, w)); err != nil {
		return nil, fmt.Errorf("glm invert: Hessian at w*: %w", err)
	}
	return iv, nil
}

// Table returns the fitted table; Preprocess the feature map.
func (iv *Inverter) Table() *Table { return iv.tab }

// Preprocess returns the feature map of the model.
func (iv *Inverter) Preprocess() *Preprocess { return iv.pre }

// Config returns the model's configuration.
func (iv *Inverter) Config() InvertConfig { return iv.cfg }

func (iv *Inverter) weight(i int) float64 {
	if iv.cfg.Weights == nil {
		return 1
	}
	return iv.cfg.Weights[i]
}

// features writes z̃ = [1?, A·x + b] (length P).
func (iv *Inverter) features(x, dst []float64) {
	if iv.off == 1 {
		dst[0] = 1
	}
	iv.pre.Apply(x, dst[iv.off:])
}

// derivs returns ℓ, ℓ', ℓ” at margin m for target t (real-valued least squares).
func (iv *Inverter) derivs(m, t float64) (f, d1, d2 float64) {
	if iv.cfg.Loss == LeastSquares {
		r := m - t
		return 0.5 * r * r, r, 1
	}
	return iv.cfg.Loss.derivs(m, t)
}

func (iv *Inverter) gradNorm0() float64 {
	g := make([]float64, iv.P)
	for i := 0; i < iv.N; i++ {
		_, d1, _ := iv.derivs(0, iv.tab.T[i])
		floats.AddScaled(g, iv.weight(i)*d1, iv.zt[i*iv.P:(i+1)*iv.P])
	}
	return norm2(g)
}

// eachRow calls fn(j, z_j, ω_j) for every row j of nonzero weight ω_j in order, with
// row i's features replaced by zi (i < 0: none).
func (iv *Inverter) eachRow(i int, zi []float64, fn func(j int, z []float64, om float64)) {
	p := iv.P
	for j := 0; j < iv.N; j++ {
		z := iv.zt[j*p : (j+1)*p]
		if j == i {
			z = zi
		}
		if om := iv.weight(j); om != 0 {
			fn(j, z, om)
		}
	}
}

// objective evaluates F(w) with row i's features replaced by zi (i < 0: none) and
// writes its gradient into grad (O(NP)).
func (iv *Inverter) objective(i int, zi, w, grad []float64) float64 {
	clear(grad)
	f := 0.0
	iv.eachRow(i, zi, func(j int, z []float64, om float64) {
		l, d1, _ := iv.derivs(floats.Dot(w, z), iv.tab.T[j])
		f += om * l
		floats.AddScaled(grad, om*d1, z)
	})
	floats.AddScaled(grad, iv.nl, w)
	return f + 0.5*iv.nl*floats.Dot(w, w)
}

// hessian returns ∇²F(w) with row i's features replaced by zi (i < 0: none). For
// least squares it does not depend on w (w may be nil) and is an O(P²) update of the
// full-data Hessian; for logistic regression it costs O(NP²).
func (iv *Inverter) hessian(i int, zi, w []float64) *mat.SymDense {
	p := iv.P
	h := mat.NewSymDense(p, nil)
	if iv.cfg.Loss == LeastSquares && iv.hfull != nil {
		h.CopySym(iv.hfull)
		if i >= 0 {
			om := iv.weight(i)
			zo := iv.zt[i*p : (i+1)*p]
			for a := 0; a < p; a++ {
				for b := a; b < p; b++ {
					h.SetSym(a, b, h.At(a, b)+om*(zi[a]*zi[b]-zo[a]*zo[b]))
				}
			}
		}
		return h
	}
	hd := make([]float64, p*p)
	iv.eachRow(i, zi, func(j int, z []float64, om float64) {
		m := 0.0 // the margin at w = nil (the least-squares Hessian, which does not depend on it)
		if w != nil {
			m = floats.Dot(w, z)
		}
		_, _, d2 := iv.derivs(m, iv.tab.T[j])
		c := om * d2
		for a := 0; a < p; a++ {
			ca := c * z[a]
			if ca == 0 {
				continue
			}
			row := hd[a*p:]
			for b := a; b < p; b++ {
				row[b] += ca * z[b]
			}
		}
	})
	for a := 0; a < p; a++ {
		for b := a; b < p; b++ {
			v := hd[a*p+b]
			if a == b {
				v += iv.nl
			}
			h.SetSym(a, b, v)
		}
	}
	return h
}

// solve minimises F with row i's features replaced by zi (i < 0: the training data)
// from init (nil: zero) and returns the minimiser. Least squares: one exact Newton
// step. Logistic: Newton steps with the Hessian refreshed only while the gradient
// does not shrink fast (a warm start near the minimiser keeps one Hessian), and a
// backtracking line search; it stops at ‖∇F‖ ≤ tol or at the round-off floor.
func (iv *Inverter) solve(i int, zi, init []float64) ([]float64, error) {
	p := iv.P
	w := make([]float64, p)
	if init != nil {
		copy(w, init)
	}
	grad := make([]float64, p)
	tgrad := make([]float64, p)
	trial := make([]float64, p)
	f := iv.objective(i, zi, w, grad)
	var chol mat.Cholesky
	step := mat.NewVecDense(p, nil)
	have, atW := false, false // a factorisation exists; it is of the Hessian at w
	for it := 0; it < 200; it++ {
		gn := norm2(grad)
		if gn <= iv.tol {
			return w, nil
		}
		if !have {
			if !chol.Factorize(iv.hessian(i, zi, w)) {
				return nil, errors.New("glm invert: Hessian not positive definite")
			}
			have, atW = true, true
		}
		if err := chol.SolveVecTo(step, mat.NewVecDense(p, grad)); err != nil {
			return nil, fmt.Errorf("glm invert: Newton solve: %w", err)
		}
		alpha := 1.0
		ok := false
		var ft float64
		for ls := 0; ls < 40; ls++ {
			for a := range w {
				trial[a] = w[a] - alpha*step.AtVec(a)
			}
			ft = iv.objective(i, zi, trial, tgrad)
			if ft <= f-1e-4*alpha*floats.Dot(grad, step.RawVector().Data) || (ft-f <= 1e-13*math.Max(1, math.Abs(f)) && norm2(tgrad) < gn) {
				ok = true
				break
			}
			alpha /= 2
		}
		if !ok {
			if !atW && iv.cfg.Loss == Logistic {
				have = false // retry with the Hessian at w
				continue
			}
			break // round-off floor
		}
		copy(w, trial)
		copy(grad, tgrad)
		f = ft
		// Least squares: the Hessian never changes. Logistic: keep the factorisation
		// while the gradient shrinks at least 10× per step.
		atW = iv.cfg.Loss == LeastSquares
		have = atW || norm2(grad) < 0.1*gn
	}
	if gn := norm2(grad); gn > 1e3*iv.tol {
		return nil, fmt.Errorf("glm invert: %w: ‖∇F‖ = %.3g", ErrNotConverged, gn)
	}
	return w, nil
}

func invertSym(h *mat.SymDense) (*mat.Dense, error) {
	var chol mat.Cholesky
	if !chol.Factorize(h) {
		return nil, errors.New("not positive definite")
	}
	var inv mat.SymDense
	if err := chol.InverseTo(&inv); err != nil {
		return nil, err
	}
	p := inv.SymmetricDim()
	out := mat.NewDense(p, p, nil)
	out.Copy(&inv)
	return out, nil
}

// jacobianCols returns J_S = −ω H⁻¹ (a z̃ uᵀ + b E) A[:, cols] (P×|cols|) of the
// minimiser w (Hessian inverse hinv) w.r.t. the raw columns cols of row i whose
// features are z̃ = zi. When label is set a last column J_t = ω H⁻¹ z̃ is appended.
func (iv *Inverter) jacobianCols(i int, zi, w []float64, hinv *mat.Dense, cols []int, label bool) *mat.Dense {
	p := iv.P
	_, b1, a2 := iv.derivs(floats.Dot(w, zi), iv.tab.T[i])
	om := iv.weight(i)
	u := w[iv.off:]
	nc := len(cols)
	if label {
		nc++
	}
	m := mat.NewDense(p, nc, nil)
	for c, col := range cols {
		ua := 0.0
		for r := 0; r < iv.K; r++ {
			ua += u[r] * iv.pre.A.At(r, col)
		}
		for r := 0; r < p; r++ {
			v := a2 * ua * zi[r]
			if r >= iv.off {
				v += b1 * iv.pre.A.At(r-iv.off, col)
			}
			m.Set(r, c, -om*v)
		}
	}
	if label {
		for r := 0; r < p; r++ {
			m.Set(r, nc-1, om*zi[r])
		}
	}
	var j mat.Dense
	j.Mul(hinv, m)
	return &j
}

// Jacobian returns J_S of training row i at w* (P×|cols|), with the label column
// appended when label is set.
func (iv *Inverter) Jacobian(i int, cols []int, label bool) (*mat.Dense, error) {
	if i < 0 || i >= iv.N {
		return nil, fmt.Errorf("glm invert: row %d outside [0,%d)", i, iv.N)
	}
	if err := iv.CheckCols(cols); err != nil {
		return nil, err
	}
	return iv.jacobianCols(i, iv.zt[i*iv.P:(i+1)*iv.P], iv.W, iv.hinv, cols, label), nil
}

// CheckCols checks that cols are distinct columns of the table, at least one.
func (iv *Inverter) CheckCols(cols []int) error {
	if len(cols) == 0 {
		return errors.New("glm invert: no attribute columns")
	}
	seen := map[int]bool{}
	for _, c := range cols {
		if c < 0 || c >= iv.tab.D {
			return fmt.Errorf("glm invert: column %d outside [0,%d)", c, iv.tab.D)
		}
		if seen[c] {
			return fmt.Errorf("glm invert: column %d given twice", c)
		}
		seen[c] = true
	}
	return nil
}

// Prediction is the FIL prediction of an attack's error on one attribute of one row
// at noise σ (Hannun et al. 2021, eqs. 3–5, 16).
type Prediction struct {
	// DFIL = Tr(I_S)/|S| = ‖J_S‖_F²/(σ²|S|); BoundDFIL = 1/DFIL ≤ CRB.
	DFIL, BoundDFIL float64
	// EtaSq = ‖I_S‖₂ = ‖J_S‖₂²/σ² (the attribute-level FIL η²); BoundEta = 1/η², the
	// variance bound of Hannun et al. 2021, eq. 3 for any single coordinate (weakest).
	EtaSq, BoundEta float64
	// CRB = Tr(I_S⁻¹)/|S|: the Cramér–Rao bound on the per-coordinate MSE of an unbiased
	// estimator of x[S], attained to first order by the white-box (maximum-likelihood)
	// attack at small σ; +Inf when J_S has rank < |S| (the attribute is not identified).
	CRB float64
	// EtaXY is the example-level η over all raw features and the label (Hannun et al. 2021, eq. 17
	// with the label column): ‖[J_x, J_t]‖₂/σ.
	EtaXY float64
}

// Predict returns the FIL prediction for columns cols of row i at noise sigma.
func (iv *Inverter) Predict(i int, cols []int, sigma float64) (Prediction, error) {
	if !(sigma > 0) || math.IsInf(sigma, 0) {
		return Prediction{}, fmt.Errorf("glm invert: sigma must be positive and finite, got %v", sigma)
	}
	j, err := iv.Jacobian(i, cols, false)
	if err != nil {
		return Prediction{}, err
	}
	s := float64(len(cols))
	s2 := sigma * sigma
	var pr Prediction
	fro := mat.Norm(j, 2)
	fro *= fro
	pr.DFIL = fro / (s2 * s)
	pr.BoundDFIL = 1 / pr.DFIL
	var g mat.SymDense
	g.SymOuterK(1, j.T()) // |S|×|S| Gram JᵀJ
	var es mat.EigenSym
	if !es.Factorize(&g, false) {
		return Prediction{}, errors.New("glm invert: eigendecomposition of JᵀJ failed")
	}
	vals := es.Values(nil)
	top := vals[len(vals)-1]
	pr.EtaSq = top / s2
	pr.BoundEta = 1 / pr.EtaSq
	tr := 0.0
	for _, v := range vals {
		if !(v > 1e-13*top) {
			tr = math.Inf(1)
			break
		}
		tr += 1 / v
	}
	pr.CRB = s2 * tr / s
	// Example-level η with the label: top eigenvalue of J_x J_xᵀ + J_t J_tᵀ (P×P).
	all := make([]int, iv.tab.D)
	for c := range all {
		all[c] = c
	}
	jx := iv.jacobianCols(i, iv.zt[i*iv.P:(i+1)*iv.P], iv.W, iv.hinv, all, true)
	var gx mat.SymDense
	gx.SymOuterK(1, jx)
	if !es.Factorize(&gx, false) {
		return Prediction{}, errors.New("glm invert: eigendecomposition of JJᵀ failed")
	}
	vx := es.Values(nil)
	pr.EtaXY = math.Sqrt(math.Max(vx[len(vx)-1], 0)) / sigma
	return pr, nil
}

// spectralNorm returns ‖j‖₂ (the largest singular value) from the smaller Gram matrix.
func spectralNorm(j *mat.Dense) float64 {
	r, c := j.Dims()
	var g mat.SymDense
	if c <= r {
		g.SymOuterK(1, j.T())
	} else {
		g.SymOuterK(1, j)
	}
	var es mat.EigenSym
	if !es.Factorize(&g, false) {
		return math.NaN()
	}
	v := es.Values(nil)
	return math.Sqrt(math.Max(v[len(v)-1], 0))
}

// TrainMetric is the training accuracy (logistic) or mean squared error (least
// squares) of w*, and which of the two it is.
func (iv *Inverter) TrainMetric() (float64, string) {
	t := iv.Table()
	z := make([]float64, iv.P)
	off := 0
	if iv.Config().Bias {
		off = 1
		z[0] = 1
	}
	acc, mse := 0.0, 0.0
	for i := 0; i < t.N; i++ {
		iv.Preprocess().Apply(t.Row(i), z[off:])
		m := 0.0
		for a, v := range z {
			m += v * iv.W[a]
		}
		if (m > 0) == (t.T[i] == 1) {
			acc++
		}
		mse += (m - t.T[i]) * (m - t.T[i])
	}
	if iv.Config().Loss == Logistic {
		return acc / float64(t.N), "accuracy"
	}
	return mse / float64(t.N), "mse"
}

// WithRow returns z̃ of row i with its columns cols set to v.
func (iv *Inverter) WithRow(i int, cols []int, v []float64, dst []float64) {
	x := append([]float64(nil), iv.tab.Row(i)...)
	for c, col := range cols {
		x[col] = v[c]
	}
	iv.features(x, dst)
}

// ResidualVariance is the black-box adversary's model statistics: s², the mean
// squared residual of the released model on the training set (least squares; seed
// 001 Sec. 6.4's "standard error").
func (iv *Inverter) ResidualVariance(release []float64) float64 {
	s := 0.0
	for j := 0; j < iv.N; j++ {
		d := floats.Dot(release, iv.zt[j*iv.P:(j+1)*iv.P]) - iv.tab.T[j]
		s += d * d
	}
	return math.Max(s/float64(iv.N), 1e-300)
}

// Refit is the model refitted exactly on the training set with row i's features
// replaced by zi (Newton from init): f(D with x_i changed), what the white-box
// inversion attack compares with the release.
func (iv *Inverter) Refit(i int, zi, init []float64) ([]float64, error) { return iv.solve(i, zi, init) }

// Hessian is the Hessian of the training objective at w with row i's features zi.
func (iv *Inverter) Hessian(i int, zi, w []float64) *mat.SymDense { return iv.hessian(i, zi, w) }

// JacobianCols is the Jacobian of the refitted minimiser with respect to columns
// cols of row i (or its label), given the inverse Hessian hinv at w.
func (iv *Inverter) JacobianCols(i int, zi, w []float64, hinv *mat.Dense, cols []int, label bool) *mat.Dense {
	return iv.jacobianCols(i, zi, w, hinv, cols, label)
}

// InvertSym is the inverse of the symmetric positive definite h (an error when it is
// not).
func InvertSym(h *mat.SymDense) (*mat.Dense, error) { return invertSym(h) }

// MarginGrad is g, the gradient of the released model's margin wᵀz̃(x) with respect
// to the columns cols of the raw row x (the margin is affine in them).
func (iv *Inverter) MarginGrad(release []float64, cols []int) []float64 {
	g := make([]float64, len(cols))
	u := release[iv.off:]
	for k, col := range cols {
		for r := 0; r < iv.K; r++ {
			g[k] += u[r] * iv.pre.A.At(r, col)
		}
	}
	return g
}

// Derivs is the loss ℓ(m, t) at margin m and target t with its first two
// derivatives in m.
func (l Loss) Derivs(m, t float64) (f, d1, d2 float64) { return l.derivs(m, t) }
