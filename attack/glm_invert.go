package attack

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/dpfil/dpfil/glm"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// AttributePrior is what both attacks know about the attribute's distribution: for a discrete
// attribute its observed values (tuples over S) and their frequencies, for a
// continuous one its mean and covariance; both estimated from the training table
// (the adversary knows the population prior p(x[S]), Hannun et al. 2021, Sec. 6.4).
type AttributePrior struct {
	Cols []int
	// Discrete attribute: Values[v] is one tuple of len(Cols) values, Prob[v] its
	// frequency. Nil for a continuous attribute.
	Values [][]float64
	Prob   []float64
	// Continuous attribute: Mean (len(Cols)) and Cov (|S|×|S|, row-major).
	Mean []float64
	Cov  []float64
}

// Discrete reports whether the prior is over a finite set of values.
func (p *AttributePrior) Discrete() bool { return p.Values != nil }

// maxDiscreteValues caps the candidate set of a discrete attribute.
const maxDiscreteValues = 64

// NewAttributePrior estimates the prior of columns cols from the table. discrete selects the
// finite candidate set (the distinct observed tuples, at most 64) or, when false, a
// Gaussian with the empirical mean and covariance.
func NewAttributePrior(t *glm.Table, cols []int, discrete bool) (*AttributePrior, error) {
	if len(cols) == 0 {
		return nil, errors.New("prior: no attribute columns")
	}
	for _, c := range cols {
		if c < 0 || c >= t.D {
			return nil, fmt.Errorf("prior: column %d outside [0,%d)", c, t.D)
		}
	}
	s := len(cols)
	p := &AttributePrior{Cols: append([]int(nil), cols...)}
	if discrete {
		idx := map[string]int{}
		var counts []float64
		for i := 0; i < t.N; i++ {
			v := make([]float64, s)
			for c, col := range cols {
				v[c] = t.Row(i)[col]
			}
			key := fmt.Sprint(v)
			k, ok := idx[key]
			if !ok {
				if len(p.Values) == maxDiscreteValues {
					return nil, fmt.Errorf("prior: attribute takes more than %d distinct values; treat it as continuous", maxDiscreteValues)
				}
				k = len(p.Values)
				idx[key] = k
				p.Values = append(p.Values, v)
				counts = append(counts, 0)
			}
			counts[k]++
		}
		// Deterministic order: lexicographic in the values.
		order := make([]int, len(p.Values))
		for k := range order {
			order[k] = k
		}
		sort.Slice(order, func(a, b int) bool {
			va, vb := p.Values[order[a]], p.Values[order[b]]
			for c := range va {
				if va[c] != vb[c] {
					return va[c] < vb[c]
				}
			}
			return false
		})
		vals := make([][]float64, len(order))
		p.Prob = make([]float64, len(order))
		for r, k := range order {
			vals[r] = p.Values[k]
			p.Prob[r] = counts[k] / float64(t.N)
		}
		p.Values = vals
		return p, nil
	}
	p.Mean = make([]float64, s)
	p.Cov = make([]float64, s*s)
	for i := 0; i < t.N; i++ {
		for c, col := range cols {
			p.Mean[c] += t.Row(i)[col] / float64(t.N)
		}
	}
	for i := 0; i < t.N; i++ {
		r := t.Row(i)
		for a := 0; a < s; a++ {
			for b := 0; b < s; b++ {
				p.Cov[a*s+b] += (r[cols[a]] - p.Mean[a]) * (r[cols[b]] - p.Mean[b]) / float64(t.N)
			}
		}
	}
	return p, nil
}

// Mode returns the most probable discrete value (the baseline adversary's guess).
func (p *AttributePrior) Mode() []float64 {
	best := 0
	for k, pr := range p.Prob {
		if pr > p.Prob[best] {
			best = k
		}
	}
	return p.Values[best]
}

// WhiteBoxOptions tunes the white-box attack's Gauss–Newton iteration.
type WhiteBoxOptions struct {
	MaxIter int     // Levenberg–Marquardt iterations (default 50)
	Tol     float64 // stop when the step is below Tol·(1+‖x‖) (default 1e-9)
	// Lo, Hi, when Lo < Hi, clip every iterate to [Lo, Hi] (e.g. pixels in [0, 1]);
	// the default (no box) keeps the attack close to unbiased, as the FIL
	// prediction assumes.
	Lo, Hi float64
}

// WhiteBox is Hannun et al. 2021, eq. 30: x̂ = argmin_v ‖w̃ − f(D with x_i[S] = v)‖₂, where f refits
// the model exactly. For a discrete prior the minimum is over its values; otherwise a
// Levenberg–Marquardt (Gauss–Newton) iteration from the prior mean with the exact
// Jacobian of the refitted minimiser. It returns the estimate and the residual
// ‖w̃ − f(·)‖ at it.
func WhiteBox(iv *glm.Inverter, i int, release []float64, prior *AttributePrior, opt WhiteBoxOptions) ([]float64, float64, error) {
	if i < 0 || i >= iv.N {
		return nil, 0, fmt.Errorf("white-box attack: row %d outside [0,%d)", i, iv.N)
	}
	if len(release) != iv.P {
		return nil, 0, fmt.Errorf("white-box attack: release has %d weights, want %d", len(release), iv.P)
	}
	cols := prior.Cols
	p := iv.P
	zi := make([]float64, p)
	resid := func(w []float64) float64 {
		s := 0.0
		for a := range w {
			d := w[a] - release[a]
			s += d * d
		}
		return math.Sqrt(s)
	}
	if prior.Discrete() {
		best, bestR := -1, math.Inf(1)
		for k, v := range prior.Values {
			iv.WithRow(i, cols, v, zi)
			w, err := iv.Refit(i, zi, release)
			if err != nil {
				return nil, 0, fmt.Errorf("white-box attack: refit: %w", err)
			}
			if r := resid(w); r < bestR {
				best, bestR = k, r
			}
		}
		return append([]float64(nil), prior.Values[best]...), bestR, nil
	}
	maxIter, tol := opt.MaxIter, opt.Tol
	if maxIter <= 0 {
		maxIter = 50
	}
	if tol <= 0 {
		tol = 1e-9
	}
	box := opt.Lo < opt.Hi
	clampV := func(v []float64) {
		if box {
			for c := range v {
				v[c] = math.Min(math.Max(v[c], opt.Lo), opt.Hi)
			}
		}
	}
	s := len(cols)
	x := append([]float64(nil), prior.Mean...)
	clampV(x)
	iv.WithRow(i, cols, x, zi)
	w, err := iv.Refit(i, zi, release)
	if err != nil {
		return nil, 0, fmt.Errorf("white-box attack: refit: %w", err)
	}
	h := iv.Hessian(i, zi, w)
	r := resid(w)
	mu := -1.0
	trial := make([]float64, s)
	zt := make([]float64, p)
	for it := 0; it < maxIter && r > 0; it++ {
		hinv, err := glm.InvertSym(h)
		if err != nil {
			return nil, 0, fmt.Errorf("white-box attack: Hessian: %w", err)
		}
		j := iv.JacobianCols(i, zi, w, hinv, cols, false)
		res := mat.NewVecDense(p, nil)
		for a := range w {
			res.SetVec(a, w[a]-release[a])
		}
		var jtj mat.SymDense
		jtj.SymOuterK(1, j.T())
		var jtr mat.VecDense
		jtr.MulVec(j.T(), res)
		if mu < 0 {
			mx := 0.0
			for a := 0; a < s; a++ {
				mx = math.Max(mx, jtj.At(a, a))
			}
			mu = 1e-6 * mx
			if mu == 0 {
				return x, r, nil // the attribute does not move the model at all
			}
		}
		accepted := false
		for tries := 0; tries < 30; tries++ {
			a := mat.NewSymDense(s, nil)
			a.CopySym(&jtj)
			for c := 0; c < s; c++ {
				a.SetSym(c, c, jtj.At(c, c)+mu*math.Max(jtj.At(c, c), 1e-300))
			}
			var chol mat.Cholesky
			var delta mat.VecDense
			if !chol.Factorize(a) || chol.SolveVecTo(&delta, &jtr) != nil {
				mu *= 10
				continue
			}
			for c := 0; c < s; c++ {
				trial[c] = x[c] - delta.AtVec(c)
			}
			clampV(trial)
			iv.WithRow(i, cols, trial, zt)
			wt, err := iv.Refit(i, zt, w)
			if err != nil {
				mu *= 10
				continue
			}
			if rt := resid(wt); rt < r || rt == 0 {
				step := 0.0
				for c := range x {
					step = math.Max(step, math.Abs(trial[c]-x[c]))
				}
				copy(x, trial)
				copy(zi, zt)
				w, r = wt, rt
				h = iv.Hessian(i, zi, w)
				mu = math.Max(mu/3, 1e-15)
				accepted = true
				if step <= tol*(1+norm2(x)) {
					return x, r, nil
				}
				break
			}
			mu *= 4
		}
		if !accepted {
			break // no decrease: a (local) minimum to round-off
		}
	}
	return x, r, nil
}

// BlackBox is Hannun et al. 2021, eq. 31 (Fredrikson et al. 2014): with black-box access to the
// released model's predictions, x̂ = argmax_v p(v)·π(w̃ᵀz̃(x_i with v), t_i), where π is
// the Gaussian N(t_i, s²) of the training residuals (least squares) or the predicted
// probability of the label (logistic). For a continuous attribute it returns the
// posterior mode under the Gaussian prior (closed form for least squares, Newton for
// logistic). s2 is the adversary's residual variance (0: computed from release).
func BlackBox(iv *glm.Inverter, i int, release []float64, prior *AttributePrior, s2 float64) ([]float64, error) {
	if i < 0 || i >= iv.N {
		return nil, fmt.Errorf("black-box attack: row %d outside [0,%d)", i, iv.N)
	}
	if len(release) != iv.P {
		return nil, fmt.Errorf("black-box attack: release has %d weights, want %d", len(release), iv.P)
	}
	if s2 <= 0 {
		s2 = iv.ResidualVariance(release)
	}
	t := iv.Table().T[i]
	cols := prior.Cols
	z := make([]float64, iv.P)
	logLik := func(m float64) float64 {
		if iv.Config().Loss == glm.LeastSquares {
			return -(m - t) * (m - t) / (2 * s2)
		}
		f, _, _ := iv.Config().Loss.Derivs(m, t)
		return -f
	}
	if prior.Discrete() {
		best, bestS := 0, math.Inf(-1)
		for k, v := range prior.Values {
			iv.WithRow(i, cols, v, z)
			sc := math.Log(prior.Prob[k]) + logLik(floats.Dot(release, z))
			if sc > bestS {
				best, bestS = k, sc
			}
		}
		return append([]float64(nil), prior.Values[best]...), nil
	}
	// The margin is affine in x[S]: m(v) = c + gᵀv.
	s := len(cols)
	zero := make([]float64, s)
	iv.WithRow(i, cols, zero, z)
	c := floats.Dot(release, z)
	g := iv.MarginGrad(release, cols)
	cov := mat.NewSymDense(s, nil)
	for a := 0; a < s; a++ {
		for b := a; b < s; b++ {
			cov.SetSym(a, b, prior.Cov[a*s+b])
		}
	}
	mu := prior.Mean
	gv := mat.NewVecDense(s, g)
	var sg mat.VecDense
	sg.MulVec(cov, gv)
	gsg := mat.Dot(gv, &sg)
	if iv.Config().Loss == glm.LeastSquares {
		// Gaussian prior × Gaussian likelihood of a linear observation.
		k := (t - c - floats.Dot(g, mu)) / (s2 + gsg)
		out := make([]float64, s)
		for a := range out {
			out[a] = mu[a] + sg.AtVec(a)*k
		}
		return out, nil
	}
	// Logistic: maximise −½(v−μ)ᵀΣ⁻¹(v−μ) + log p(t | c + gᵀv). Writing v = μ + Σg·τ +
	// (directions the likelihood does not see, kept at the prior mean) reduces it to
	// a 1-D concave problem in τ: −½τ²·gᵀΣg + log p(t | c + gᵀμ + τ·gᵀΣg).
	if !(gsg > 0) {
		return append([]float64(nil), mu...), nil
	}
	m0 := c + floats.Dot(g, mu)
	tau := 0.0
	for it := 0; it < 100; it++ {
		m := m0 + tau*gsg
		_, d1, d2 := iv.Config().Loss.Derivs(m, t) // −log p = ℓ
		grad := -tau*gsg - d1*gsg
		hess := -gsg - d2*gsg*gsg
		stepT := grad / hess
		tau -= stepT
		if math.Abs(stepT) <= 1e-13*(1+math.Abs(tau)) {
			break
		}
	}
	out := make([]float64, s)
	for a := range out {
		out[a] = mu[a] + sg.AtVec(a)*tau
	}
	return out, nil
}

// norm2 is the Euclidean norm of v, summed in order (the white-box attack's step
// test, as in glm).
func norm2(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x * x
	}
	return math.Sqrt(s)
}
