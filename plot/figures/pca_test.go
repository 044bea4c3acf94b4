package figures

import (
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat"
)

// Four points (±3, 0), (0, ±1) (mean 0): the components are the axes, with variances
// 18/3 = 6 and 2/3 (divisor n − 1), explained 0.9 and 0.1, and the scores the
// coordinates (the sign fixed by the largest loading, +1 here).
func TestPCAOfClosedForm(t *testing.T) {
	x := []float64{3, 0, -3, 0, 0, 1, 0, -1}
	p, err := PCAOf(x, 4, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{3, 0, -3, 0, 0, 1, 0, -1}
	for i, w := range want {
		if math.Abs(p.Scores[i]-w) > 1e-12 {
			t.Fatalf("scores %v, want %v", p.Scores, want)
		}
	}
	if math.Abs(p.Variance[0]-6) > 1e-12 || math.Abs(p.Variance[1]-2.0/3) > 1e-12 ||
		math.Abs(p.Explained[0]-0.9) > 1e-12 || math.Abs(p.Explained[1]-0.1) > 1e-12 || math.Abs(p.Total-20.0/3) > 1e-12 {
		t.Fatalf("variance %v explained %v total %v, want [6 2/3] [0.9 0.1] 20/3", p.Variance, p.Explained, p.Total)
	}
}

// PCAOf (SVD of the centred matrix) against a second implementation: the
// eigendecomposition of the sample covariance (gonum stat.CovarianceMatrix and
// mat.EigenSym); variances equal the largest eigenvalues and the scores, up to the
// sign of each component, the centred points projected on the eigenvectors.
func TestPCAOfMatchesCovarianceEigen(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const n, k = 40, 6
	x := make([]float64, n*k)
	for i := 0; i < n; i++ {
		a, b := 3*r.NormFloat64(), r.NormFloat64()
		for j := 0; j < k; j++ {
			x[i*k+j] = a*float64(j+1) + b*math.Sin(float64(j)) + 0.1*r.NormFloat64() + 5
		}
	}
	p, err := PCAOf(x, n, k, 3)
	if err != nil {
		t.Fatal(err)
	}
	X := mat.NewDense(n, k, x)
	var cov mat.SymDense
	stat.CovarianceMatrix(&cov, X, nil)
	var eig mat.EigenSym
	if !eig.Factorize(&cov, true) {
		t.Fatal("eigendecomposition failed")
	}
	vals := eig.Values(nil)
	var vecs mat.Dense
	eig.VectorsTo(&vecs)
	order := []int{0, 1, 2, 3, 4, 5}
	sort.Slice(order, func(a, b int) bool { return vals[order[a]] > vals[order[b]] })
	total := 0.0
	for _, v := range vals {
		total += v
	}
	if math.Abs(p.Total-total) > 1e-9*total {
		t.Fatalf("total variance %v, trace of the covariance %v", p.Total, total)
	}
	means := make([]float64, k)
	for j := range means {
		for i := 0; i < n; i++ {
			means[j] += x[i*k+j] / n
		}
	}
	for c := 0; c < 3; c++ {
		ev := vals[order[c]]
		if math.Abs(p.Variance[c]-ev) > 1e-9*ev || math.Abs(p.Explained[c]-ev/total) > 1e-9 {
			t.Fatalf("component %d: variance %v explained %v, eigenvalue %v (fraction %v)", c, p.Variance[c], p.Explained[c], ev, ev/total)
		}
		sign := 0.0
		for i := 0; i < n; i++ {
			proj := 0.0
			for j := 0; j < k; j++ {
				proj += (x[i*k+j] - means[j]) * vecs.At(j, order[c])
			}
			if sign == 0 {
				sign = math.Copysign(1, proj*p.Scores[i*3+c])
			}
			if math.Abs(p.Scores[i*3+c]-sign*proj) > 1e-8*(1+math.Abs(proj)) {
				t.Fatalf("component %d point %d: score %v, projection %v", c, i, p.Scores[i*3+c], sign*proj)
			}
		}
	}
}

func TestPCAOfEdgeCases(t *testing.T) {
	p, err := PCAOf(make([]float64, 12), 4, 3, 2)
	if err != nil || p.Total != 0 || p.Explained[0] != 0 || p.Scores[0] != 0 {
		t.Fatalf("all points equal: %+v, %v", p, err)
	}
	for _, c := range []struct {
		x       []float64
		n, k, c int
		want    string
	}{
		{[]float64{1, 2}, 1, 2, 2, "n ≥ 2"},
		{[]float64{1, 2, 3}, 2, 2, 2, "3 values for 2 × 2"},
		{[]float64{1, math.NaN(), 3, 4}, 2, 2, 2, "NaN"},
	} {
		if _, err := PCAOf(c.x, c.n, c.k, c.c); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("PCAOf(%v, %d, %d): %v, want an error with %q", c.x, c.n, c.k, err, c.want)
		}
	}
}
