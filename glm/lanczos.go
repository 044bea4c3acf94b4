package glm

import (
	"math"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/lapack"
	"gonum.org/v1/gonum/lapack/gonum"
)

// lanczos finds the largest eigenvalue of a symmetric positive semi-definite operator
// of size p given by apply (dst = A·src), by the Lanczos iteration with full
// re-orthogonalisation. The Ritz value increases monotonically towards λ_max; the
// iteration stops when it changed by less than tol (relative) for three consecutive
// steps and the Ritz pair's residual ‖Ay − θy‖ = β_j|s_j| is below residTol·θ, when
// the Krylov space became invariant (then the value is exact), or after maxIter steps
// (converged = false; callers fall back to a dense eigensolver).
type lanczos struct {
	p       int
	maxIter int
	tol     float64
	basis   [][]float64
	w       []float64
	alpha   []float64
	beta    []float64
	d, e    []float64
	z, work []float64
}

// residTol bounds the relative residual of an accepted Ritz pair.
const residTol = 1e-7

func newLanczos(p, maxIter int, tol float64) *lanczos {
	if maxIter > p {
		maxIter = p
	}
	if maxIter < 1 {
		maxIter = 1
	}
	l := &lanczos{p: p, maxIter: maxIter, tol: tol, w: make([]float64, p)}
	l.basis = make([][]float64, maxIter)
	for i := range l.basis {
		l.basis[i] = make([]float64, p)
	}
	l.alpha = make([]float64, maxIter)
	l.beta = make([]float64, maxIter)
	l.d = make([]float64, maxIter)
	l.e = make([]float64, maxIter)
	return l
}

// top returns λ_max, the number of Lanczos steps and whether it converged.
func (l *lanczos) top(apply func(dst, src []float64), start []float64) (float64, int, bool) {
	nrm := norm2(start)
	v0 := l.basis[0]
	if !(nrm > 0) || math.IsInf(nrm, 0) {
		for i := range v0 {
			v0[i] = 1 / math.Sqrt(float64(l.p))
		}
	} else {
		for i, s := range start {
			v0[i] = s / nrm
		}
	}
	lapack := gonum.Implementation{}
	prev := math.Inf(-1)
	small := 0
	theta := 0.0
	for j := 0; j < l.maxIter; j++ {
		vj := l.basis[j]
		apply(l.w, vj)
		a := floats.Dot(vj, l.w)
		l.alpha[j] = a
		floats.AddScaled(l.w, -a, vj)
		if j > 0 {
			floats.AddScaled(l.w, -l.beta[j-1], l.basis[j-1])
		}
		// Full re-orthogonalisation (twice is enough).
		for pass := 0; pass < 2; pass++ {
			for i := 0; i <= j; i++ {
				floats.AddScaled(l.w, -floats.Dot(l.basis[i], l.w), l.basis[i])
			}
		}
		b := norm2(l.w)
		l.beta[j] = b
		copy(l.d, l.alpha[:j+1])
		copy(l.e, l.beta[:j])
		if !lapack.Dsterf(j+1, l.d[:j+1], l.e[:j+1]) {
			return math.NaN(), j + 1, false
		}
		theta = l.d[j] // ascending
		scale := math.Max(math.Abs(theta), math.SmallestNonzeroFloat64)
		if b <= 1e-13*scale || theta == 0 && b == 0 {
			return theta, j + 1, true // invariant subspace: exact
		}
		if math.Abs(theta-prev) <= l.tol*scale {
			small++
			if small >= 3 && l.residual(j+1, b) <= residTol*scale {
				return theta, j + 1, true
			}
		} else {
			small = 0
		}
		prev = theta
		if j+1 < l.maxIter {
			next := l.basis[j+1]
			for i, v := range l.w {
				next[i] = v / b
			}
		}
	}
	return theta, l.maxIter, l.maxIter == l.p
}

// residual returns β_k|s_k| for the top eigenvector s of the k×k tridiagonal matrix
// (α, β) built so far, where b = β_k is the next off-diagonal.
func (l *lanczos) residual(k int, b float64) float64 {
	if cap(l.z) < k*k {
		l.z = make([]float64, k*k)
		l.work = make([]float64, 2*k)
	}
	z := l.z[:k*k]
	d := make([]float64, k)
	e := make([]float64, k)
	copy(d, l.alpha[:k])
	copy(e, l.beta[:k-1])
	if !(gonum.Implementation{}).Dsteqr(lapack.EVTridiag, k, d, e, z, k, l.work[:max(1, 2*k-2)]) {
		return math.Inf(1)
	}
	top := 0
	for i := 1; i < k; i++ {
		if d[i] > d[top] {
			top = i
		}
	}
	return b * math.Abs(z[(k-1)*k+top]) // row k−1 (last component), column top
}
