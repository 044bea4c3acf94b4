package glm

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sort"
	"sync"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// Analysis holds one factorisation of the Hessian H = QΛQᵀ of a fitted model and
// evaluates per-example Jacobians of the minimiser, their Frobenius and spectral norms,
// and attribute-level FIL from it.
type Analysis struct {
	m      *Model
	q      *mat.Dense // P×P eigenvectors of H (columns)
	dinv   []float64  // 1/λ_k
	u      []float64  // w* without bias (length D)
	uhat   []float64  // Qᵀũ, ũ = w* with the bias coordinate zeroed
	q0     []float64  // Qᵀe₀ (bias row of Q), nil without bias
	normU2 float64    // ‖u‖²
	gFrob2 float64    // ‖H⁻¹E‖_F²
	a, b   []float64  // ℓ''(w*ᵀx̃_i), ℓ'(w*ᵀx̃_i)
	minv   *mat.Dense // H⁻¹, built lazily for explicit Jacobians
	mu     sync.Mutex
}

// NewAnalysis factorises the Hessian of m at w* (O(NP² + P³), done once).
func NewAnalysis(m *Model) (*Analysis, error) {
	if m == nil || m.W == nil {
		return nil, errors.New("glm analysis: model is not fitted")
	}
	n, p := m.N, m.P
	an := &Analysis{m: m, a: make([]float64, n), b: make([]float64, n)}
	c := make([]float64, n)
	for i := 0; i < n; i++ {
		_, d1, d2 := m.Config.Loss.derivs(m.Margin(i), m.y[i])
		an.a[i], an.b[i] = d2, d1
		c[i] = m.Config.weight(i) * d2
	}
	h := mat.NewSymDense(p, nil)
	weightedGram(m.design, c, float64(n)*m.Config.Lambda, h)
	var es mat.EigenSym
	if !es.Factorize(h, true) {
		return nil, errors.New("glm analysis: eigendecomposition of the Hessian failed")
	}
	vals := es.Values(nil)
	an.q = &mat.Dense{}
	es.VectorsTo(an.q)
	an.dinv = make([]float64, p)
	for k, v := range vals {
		if !(v > 0) {
			return nil, fmt.Errorf("glm analysis: Hessian eigenvalue %d is %v (not positive definite)", k, v)
		}
		an.dinv[k] = 1 / v
	}
	off := 0
	if m.Config.Bias {
		off = 1
	}
	an.u = append([]float64(nil), m.W[off:]...)
	an.normU2 = floats.Dot(an.u, an.u)
	ut := make([]float64, p)
	copy(ut[off:], an.u)
	an.uhat = make([]float64, p)
	mat.NewVecDense(p, an.uhat).MulVec(an.q.T(), mat.NewVecDense(p, ut))
	if m.Config.Bias {
		an.q0 = make([]float64, p)
		for k := 0; k < p; k++ {
			an.q0[k] = an.q.At(0, k)
		}
	}
	for k := 0; k < p; k++ {
		d2 := an.dinv[k] * an.dinv[k]
		if an.q0 != nil {
			d2 *= 1 - an.q0[k]*an.q0[k]
		}
		an.gFrob2 += d2
	}
	return an, nil
}

// Model returns the analysed model.
func (an *Analysis) Model() *Model { return an.m }

// Coefficients returns a_i = ℓ”(w*ᵀx̃_i) and b_i = ℓ'(w*ᵀx̃_i): ∇_x∇_wℓ_i = a_i x̃_i uᵀ + b_i E.
func (an *Analysis) Coefficients(i int) (a, b float64) { return an.a[i], an.b[i] }

// inverse returns H⁻¹ = Q diag(1/λ) Qᵀ (built once).
func (an *Analysis) inverse() *mat.Dense {
	an.mu.Lock()
	defer an.mu.Unlock()
	if an.minv == nil {
		p := an.m.P
		qd := mat.NewDense(p, p, nil)
		qd.Apply(func(_, j int, v float64) float64 { return v * an.dinv[j] }, an.q)
		an.minv = mat.NewDense(p, p, nil)
		an.minv.Mul(qd, an.q.T())
	}
	return an.minv
}

// Jacobian returns the explicit P×D Jacobian J_i = ∂w*/∂x_i of the minimiser w.r.t.
// the raw features of example i (labels public). O(P·D) memory: for checks and small
// problems; per-example norms should use PerExample.
func (an *Analysis) Jacobian(i int) (*mat.Dense, error) {
	if i < 0 || i >= an.m.N {
		return nil, fmt.Errorf("glm jacobian: example %d out of range [0,%d)", i, an.m.N)
	}
	cols := make([]int, an.m.D)
	for j := range cols {
		cols[j] = j
	}
	return an.jacobianCols(i, cols), nil
}

// jacobianCols returns the P×|cols| block J_i[:, cols].
func (an *Analysis) jacobianCols(i int, cols []int) *mat.Dense {
	m := an.m
	p := m.P
	minv := an.inverse()
	off := 0
	if m.Config.Bias {
		off = 1
	}
	v := mat.NewVecDense(p, nil)
	v.MulVec(minv, m.design.RowView(i))
	om := m.Config.weight(i)
	a, b := an.a[i], an.b[i]
	j := mat.NewDense(p, len(cols), nil)
	for c, col := range cols {
		uc := an.u[col]
		for r := 0; r < p; r++ {
			j.Set(r, c, -om*(a*v.AtVec(r)*uc+b*minv.At(r, col+off)))
		}
	}
	return j
}

// FILOptions controls PerExample.
type FILOptions struct {
	// Indices restricts the computation to these examples (nil: all).
	Indices []int
	// SkipSpectral skips η (the Lanczos step) and leaves Eta/Spec2 empty.
	SkipSpectral bool
	// WithLabel takes the Jacobian w.r.t. (x_i, y_i) instead of x_i alone: it gains
	// the label column ∂w*/∂y_i = ω_i H⁻¹x̃_i (Hannun et al. 2021, eqs. 22 and 27:
	// ∇_y∇_wℓ = −x̃ for both losses, the target t of least squares and the label y of
	// the logistic loss treated as real numbers). Hannun et al.'s η is this one.
	WithLabel bool
	// LanczosTol is the relative tolerance of the top-eigenvalue iteration (default 1e-10).
	LanczosTol float64
	// LanczosMaxSteps caps the Lanczos iteration (default 150); examples reaching it are
	// computed by a dense eigensolver instead (FILResult.DenseFallbacks).
	LanczosMaxSteps int
	// Workers bounds the goroutines (default GOMAXPROCS).
	Workers int
	// Progress, if set, is called with the number of examples finished since the last call.
	Progress func(done int)
}

// FILResult holds per-example leakage for the examples in Indices (in that order).
type FILResult struct {
	Sigma   float64
	D       int       // coordinates the Jacobian is taken over: the features, plus 1 WithLabel
	Label   bool      // the Jacobian includes the label column (FILOptions.WithLabel)
	Indices []int     // example indices
	Frob2   []float64 // ‖J_i‖_F²
	Spec2   []float64 // ‖J_i‖₂² (empty if SkipSpectral)
	DFIL    []float64 // ‖J_i‖_F²/(σ²D)
	Eta     []float64 // ‖J_i‖₂/σ (empty if SkipSpectral)
	// LanczosMaxSteps is the most Lanczos steps any example took. DenseFallbacks counts
	// examples whose Lanczos iteration hit its step limit (a tight cluster at the top of
	// the spectrum) and whose ‖J‖₂² was then computed by a dense symmetric eigensolver
	// of the P×P operator instead; NotConverged counts examples where that failed too.
	LanczosMaxSteps int
	DenseFallbacks  int
	NotConverged    int
}

// PerExample computes ‖J_i‖_F², ‖J_i‖₂², dFIL and η at noise σ for every requested
// example, streaming over examples in blocks: O(P²) per example for the rotated input
// Qᵀx̃_i plus O(P) per Lanczos step, never materialising a Jacobian.
func (an *Analysis) PerExample(sigma float64, opt FILOptions) (*FILResult, error) {
	if !(sigma > 0) || math.IsInf(sigma, 0) {
		return nil, fmt.Errorf("glm FIL: sigma must be positive and finite, got %v", sigma)
	}
	m := an.m
	idx := opt.Indices
	if idx == nil {
		idx = make([]int, m.N)
		for i := range idx {
			idx[i] = i
		}
	}
	for _, i := range idx {
		if i < 0 || i >= m.N {
			return nil, fmt.Errorf("glm FIL: example %d out of range [0,%d)", i, m.N)
		}
	}
	tol := opt.LanczosTol
	if tol == 0 {
		tol = 1e-10
	}
	if !(tol > 0) || tol >= 1 {
		return nil, fmt.Errorf("glm FIL: Lanczos tolerance must be in (0,1), got %v", opt.LanczosTol)
	}
	steps := opt.LanczosMaxSteps
	if steps == 0 {
		steps = lanczosSteps
	}
	if steps < 0 {
		return nil, fmt.Errorf("glm FIL: Lanczos step cap must be ≥ 0, got %d", steps)
	}
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	dcols := m.D
	if opt.WithLabel {
		dcols++
	}
	res := &FILResult{Sigma: sigma, D: dcols, Label: opt.WithLabel, Indices: append([]int(nil), idx...),
		Frob2: make([]float64, len(idx)), DFIL: make([]float64, len(idx))}
	if !opt.SkipSpectral {
		res.Spec2 = make([]float64, len(idx))
		res.Eta = make([]float64, len(idx))
	}
	const block = 128
	nb := (len(idx) + block - 1) / block
	jobs := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	p := m.P
	for wk := 0; wk < workers; wk++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			xb := mat.NewDense(block, p, nil)
			xh := mat.NewDense(block, p, nil)
			lz := newLanczos(p, steps, tol)
			start := make([]float64, p)
			maxSteps, notConv, fallbacks := 0, 0, 0
			for bi := range jobs {
				lo, hi := bi*block, min((bi+1)*block, len(idx))
				rows := hi - lo
				for r := 0; r < rows; r++ {
					xb.SetRow(r, m.design.RawRowView(idx[lo+r]))
				}
				xs := xb.Slice(0, rows, 0, p).(*mat.Dense)
				hs := xh.Slice(0, rows, 0, p).(*mat.Dense)
				hs.Mul(xs, an.q)
				for r := 0; r < rows; r++ {
					k := lo + r
					xhat := hs.RawRowView(r)
					f2, s2, steps, ok := an.norms(idx[k], xhat, lz, start, opt.SkipSpectral, opt.WithLabel)
					if !ok {
						fallbacks++
						s2, ok = an.denseSpec2(idx[k], xhat, opt.WithLabel)
						s2 = math.Min(s2, f2)
					}
					res.Frob2[k] = f2
					res.DFIL[k] = f2 / (sigma * sigma * float64(dcols))
					if !opt.SkipSpectral {
						res.Spec2[k] = s2
						res.Eta[k] = math.Sqrt(s2) / sigma
						maxSteps = max(maxSteps, steps)
						if !ok {
							notConv++
						}
					}
				}
				if opt.Progress != nil {
					opt.Progress(rows)
				}
			}
			mu.Lock()
			res.LanczosMaxSteps = max(res.LanczosMaxSteps, maxSteps)
			res.NotConverged += notConv
			res.DenseFallbacks += fallbacks
			mu.Unlock()
		}()
	}
	for bi := 0; bi < nb; bi++ {
		jobs <- bi
	}
	close(jobs)
	wg.Wait()
	for k, v := range res.DFIL {
		if math.IsNaN(v) || math.IsInf(v, 0) || (res.Eta != nil && math.IsNaN(res.Eta[k])) {
			return nil, fmt.Errorf("glm FIL: example %d has non-finite leakage (dFIL %v)", idx[k], v)
		}
	}
	return res, nil
}

// xxCoef is the coefficient of x̂x̂ᵀ in JJᵀ/ω² (in the eigenbasis of H, between the
// two factors D = Λ⁻¹): a²‖u‖² from the feature columns, plus 1 from the label column
// H⁻¹x̃ when it is included.
func (an *Analysis) xxCoef(a float64, label bool) float64 {
	c := a * a * an.normU2
	if label {
		c++
	}
	return c
}

// norms returns ‖J_i‖_F² and (unless skipped) ‖J_i‖₂² for example i with rotated
// input xhat = Qᵀx̃_i; with label, J_i includes the label column ω_i H⁻¹x̃_i.
func (an *Analysis) norms(i int, xhat []float64, lz *lanczos, start []float64, skip, label bool) (f2, s2 float64, steps int, ok bool) {
	om := an.m.Config.weight(i)
	a, b := an.a[i], an.b[i]
	var v2, vgu float64
	for k, x := range xhat {
		d2 := an.dinv[k] * an.dinv[k]
		v2 += d2 * x * x
		vgu += d2 * x * an.uhat[k]
	}
	aa := an.xxCoef(a, label)
	f2 = om * om * (aa*v2 + 2*a*b*vgu + b*b*an.gFrob2)
	if f2 < 0 {
		f2 = 0 // round-off of a PSD quantity
	}
	if skip {
		return f2, 0, 0, true
	}
	// JJᵀ = ω² Q D [c x̂x̂ᵀ + ab(x̂ûᵀ + ûx̂ᵀ) + b²(I − q̂₀q̂₀ᵀ)] D Qᵀ, c = xxCoef.
	ab := a * b
	bb := b * b
	om2 := om * om
	dinv, uhat, q0 := an.dinv, an.uhat, an.q0
	tmp := make([]float64, len(xhat))
	apply := func(dst, src []float64) {
		for k, s := range src {
			tmp[k] = dinv[k] * s
		}
		sx := floats.Dot(xhat, tmp)
		su := floats.Dot(uhat, tmp)
		s0 := 0.0
		if q0 != nil {
			s0 = floats.Dot(q0, tmp)
		}
		for k := range dst {
			v := bb*tmp[k] + (aa*sx+ab*su)*xhat[k] + ab*sx*uhat[k]
			if q0 != nil {
				v -= bb * s0 * q0[k]
			}
			dst[k] = om2 * dinv[k] * v
		}
	}
	for k := range start {
		start[k] = dinv[k]*(xhat[k]+uhat[k]) + 1e-3*dinv[k]
	}
	s2, steps, ok = lz.top(apply, start)
	// The Frobenius norm bounds the spectral norm: guard against round-off.
	if s2 > f2 {
		s2 = f2
	}
	return f2, s2, steps, ok
}

// lanczosSteps caps the Lanczos iteration before the dense fallback.
const lanczosSteps = 150

// denseSpec2 returns ‖J_i‖₂² as the largest eigenvalue of the explicitly formed P×P
// operator ω²D[c x̂x̂ᵀ + ab(x̂ûᵀ + ûx̂ᵀ) + b²(I − q̂₀q̂₀ᵀ)]D (O(P³)), c = xxCoef.
func (an *Analysis) denseSpec2(i int, xhat []float64, label bool) (float64, bool) {
	p := len(xhat)
	om := an.m.Config.weight(i)
	a, b := an.a[i], an.b[i]
	aa, ab, bb := an.xxCoef(a, label), a*b, b*b
	s := mat.NewSymDense(p, nil)
	for k := 0; k < p; k++ {
		for l := k; l < p; l++ {
			v := aa*xhat[k]*xhat[l] + ab*(xhat[k]*an.uhat[l]+an.uhat[k]*xhat[l])
			if an.q0 != nil {
				v -= bb * an.q0[k] * an.q0[l]
			}
			if k == l {
				v += bb
			}
			s.SetSym(k, l, om*om*an.dinv[k]*an.dinv[l]*v)
		}
	}
	var es mat.EigenSym
	if !es.Factorize(s, false) {
		return math.NaN(), false
	}
	vals := es.Values(nil)
	return math.Max(vals[len(vals)-1], 0), true
}

// AttributeResult is attribute-level leakage of a subset S of input columns for each
// requested example (Hannun et al. 2021, Sec. 3.1: the FIM block of those columns).
type AttributeResult struct {
	Columns []int
	Indices []int
	DFIL    []float64 // ‖J_i[:,S]‖_F²/(σ²|S|)
	Eta     []float64 // ‖J_i[:,S]‖₂/σ
}

// AttributeFIL returns the FIL of the input columns cols of each example in indices
// (nil: all), at noise σ. Cost O(P² + P|S|·steps) per example.
func (an *Analysis) AttributeFIL(sigma float64, cols, indices []int) (*AttributeResult, error) {
	if !(sigma > 0) || math.IsInf(sigma, 0) {
		return nil, fmt.Errorf("glm attribute FIL: sigma must be positive and finite, got %v", sigma)
	}
	if len(cols) == 0 {
		return nil, errors.New("glm attribute FIL: no columns given")
	}
	seen := make(map[int]bool, len(cols))
	for _, c := range cols {
		if c < 0 || c >= an.m.D {
			return nil, fmt.Errorf("glm attribute FIL: column %d out of range [0,%d)", c, an.m.D)
		}
		if seen[c] {
			return nil, fmt.Errorf("glm attribute FIL: column %d given twice", c)
		}
		seen[c] = true
	}
	if indices == nil {
		indices = make([]int, an.m.N)
		for i := range indices {
			indices[i] = i
		}
	}
	cs := append([]int(nil), cols...)
	sort.Ints(cs)
	res := &AttributeResult{Columns: cs, Indices: append([]int(nil), indices...),
		DFIL: make([]float64, len(indices)), Eta: make([]float64, len(indices))}
	s := len(cs)
	lz := newLanczos(s, lanczosSteps, 1e-10)
	tmp := make([]float64, an.m.P)
	start := make([]float64, s)
	for k, i := range indices {
		if i < 0 || i >= an.m.N {
			return nil, fmt.Errorf("glm attribute FIL: example %d out of range [0,%d)", i, an.m.N)
		}
		j := an.jacobianCols(i, cs)
		f2 := mat.Norm(j, 2)
		f2 *= f2
		apply := func(dst, src []float64) {
			t := mat.NewVecDense(an.m.P, tmp)
			t.MulVec(j, mat.NewVecDense(s, src))
			mat.NewVecDense(s, dst).MulVec(j.T(), t)
		}
		for c := range start {
			start[c] = 1 + 0.1*float64(c%7)
		}
		s2, _, ok := lz.top(apply, start)
		if !ok {
			// Dense fallback: largest eigenvalue of the |S|×|S| Gram matrix.
			var gram mat.SymDense
			gram.SymOuterK(1, j.T())
			var es mat.EigenSym
			if !es.Factorize(&gram, false) {
				return nil, fmt.Errorf("glm attribute FIL: eigendecomposition failed for example %d", i)
			}
			vals := es.Values(nil)
			s2 = vals[len(vals)-1]
		}
		s2 = math.Min(s2, f2)
		res.DFIL[k] = f2 / (sigma * sigma * float64(s))
		res.Eta[k] = math.Sqrt(math.Max(s2, 0)) / sigma
	}
	return res, nil
}
