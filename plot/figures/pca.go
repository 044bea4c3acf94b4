package figures

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/dpfil/dpfil/internal/stats"
)

// PCA is the projection of n points (rows of an n × k matrix) on their first
// principal components.
type PCA struct {
	// Scores holds, per point, its coordinates on the components (row-major
	// n × len(Variance)): (x − mean)·v_c.
	Scores []float64
	// Variance is the variance (divisor n − 1) along each component, largest first;
	// Explained the fraction of the total variance it holds (0 when the total is 0).
	Variance  []float64
	Explained []float64
	Total     float64 // total variance, Σ over all k columns
}

// PCAOf returns the first c principal components of the n × k row-major matrix x,
// from the thin SVD of the column-centred matrix (gonum mat.SVD): the scores are
// U_c·S_c and the variances s_c²/(n − 1). Each component's sign is fixed so that its
// loading of largest magnitude is positive, so equal inputs give equal figures.
func PCAOf(x []float64, n, k, c int) (*PCA, error) {
	if n < 2 || k < 1 || c < 1 || len(x) != n*k {
		return nil, fmt.Errorf("PCA: %d values for %d × %d points (need n ≥ 2, k ≥ 1) and %d components", len(x), n, k, c)
	}
	for i, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("PCA: value %d (point %d, column %d) is %v", i, i/k, i%k, v)
		}
	}
	cen := mat.NewDense(n, k, nil)
	total := 0.0
	for j := 0; j < k; j++ {
		mu := 0.0
		for i := 0; i < n; i++ {
			mu += x[i*k+j]
		}
		mu /= float64(n)
		for i := 0; i < n; i++ {
			v := x[i*k+j] - mu
			cen.Set(i, j, v)
			total += v * v
		}
	}
	total /= float64(n - 1)
	c = min(c, n, k)
	out := &PCA{Scores: make([]float64, n*c), Variance: make([]float64, c), Explained: make([]float64, c), Total: total}
	if total == 0 {
		return out, nil // every point at the mean: no direction
	}
	var svd mat.SVD
	if !svd.Factorize(cen, mat.SVDThin) {
		return nil, fmt.Errorf("PCA: the SVD of the %d × %d matrix did not converge", n, k)
	}
	s := svd.Values(nil)
	var u, v mat.Dense
	svd.UTo(&u)
	svd.VTo(&v)
	for comp := 0; comp < c; comp++ {
		sign := stats.ComponentSign(&v, comp)
		for i := 0; i < n; i++ {
			out.Scores[i*c+comp] = sign * u.At(i, comp) * s[comp]
		}
		out.Variance[comp] = s[comp] * s[comp] / float64(n-1)
		out.Explained[comp] = out.Variance[comp] / total
	}
	return out, nil
}
