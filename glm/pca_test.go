package glm

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// pcaData returns n×d rows with well-separated column scales (distinct covariance
// eigenvalues, so the principal directions are unique up to sign) and some correlation.
func pcaData(n, d int, seed uint64) []float64 {
	rng := rand.New(rand.NewPCG(seed, 7))
	x := make([]float64, n*d)
	for i := 0; i < n; i++ {
		z := make([]float64, d)
		for j := range z {
			z[j] = rng.NormFloat64() * math.Pow(1.7, float64(d-j))
		}
		for j := 0; j < d; j++ {
			// A fixed mixing: x_j = z_j + 0.3 z_{j+1} (+ an offset, so centring matters).
			v := z[j] + 3
			if j+1 < d {
				v += 0.3 * z[j+1]
			}
			x[i*d+j] = v
		}
	}
	return x
}

// covEigen is the reference: the eigendecomposition of the explicitly formed sample
// covariance (1/(n−1)), sorted by decreasing eigenvalue.
func covEigen(t *testing.T, x []float64, n, d int) (vals []float64, vecs [][]float64) {
	t.Helper()
	mu := make([]float64, d)
	for i := 0; i < n; i++ {
		for j := 0; j < d; j++ {
			mu[j] += x[i*d+j] / float64(n)
		}
	}
	cov := mat.NewSymDense(d, nil)
	for a := 0; a < d; a++ {
		for b := a; b < d; b++ {
			s := 0.0
			for i := 0; i < n; i++ {
				s += (x[i*d+a] - mu[a]) * (x[i*d+b] - mu[b])
			}
			cov.SetSym(a, b, s/float64(n-1))
		}
	}
	var es mat.EigenSym
	if !es.Factorize(cov, true) {
		t.Fatal("reference eigendecomposition failed")
	}
	ev := es.Values(nil)
	var v mat.Dense
	es.VectorsTo(&v)
	order := make([]int, d)
	for j := range order {
		order[j] = j
	}
	sort.Slice(order, func(a, b int) bool { return ev[order[a]] > ev[order[b]] })
	for _, c := range order {
		vals = append(vals, ev[c])
		col := make([]float64, d)
		for j := range col {
			col[j] = v.At(j, c)
		}
		vecs = append(vecs, col)
	}
	return vals, vecs
}

func TestFitPCAMatchesCovarianceEigen(t *testing.T) {
	const n, d, k = 300, 9, 4
	x := pcaData(n, d, 1)
	p, err := FitPCA(x, n, d, k)
	if err != nil {
		t.Fatal(err)
	}
	vals, vecs := covEigen(t, x, n, d)
	total := 0.0
	for _, v := range vals {
		total += v
	}
	if math.Abs(p.TotalVariance-total) > 1e-10*total {
		t.Errorf("total variance %v, reference trace %v", p.TotalVariance, total)
	}
	kept := 0.0
	for c := 0; c < k; c++ {
		kept += vals[c]
		if math.Abs(p.Variances[c]-vals[c]) > 1e-10*vals[0] {
			t.Errorf("variance %d: %v, reference eigenvalue %v", c, p.Variances[c], vals[c])
		}
		row := p.Components.RawRowView(c)
		dot, big := 0.0, 0.0
		for j := range row {
			dot += row[j] * vecs[c][j]
			if math.Abs(row[j]) > math.Abs(big) {
				big = row[j]
			}
		}
		if math.Abs(math.Abs(dot)-1) > 1e-9 {
			t.Errorf("component %d: |⟨v, v_ref⟩| = %v, want 1", c, math.Abs(dot))
		}
		if !(big > 0) {
			t.Errorf("component %d: largest-magnitude loading %v is not positive", c, big)
		}
	}
	if math.Abs(p.Explained()-kept/total) > 1e-12 {
		t.Errorf("explained %v, reference %v", p.Explained(), kept/total)
	}
	// Orthonormal rows.
	var g mat.Dense
	g.Mul(p.Components, p.Components.T())
	for a := 0; a < k; a++ {
		for b := 0; b < k; b++ {
			want := 0.0
			if a == b {
				want = 1
			}
			if math.Abs(g.At(a, b)-want) > 1e-12 {
				t.Errorf("VVᵀ[%d,%d] = %v", a, b, g.At(a, b))
			}
		}
	}
	// The scores z_c = v_cᵀ(x − μ) have mean 0 and sample variance Variances[c].
	for c := 0; c < k; c++ {
		row := p.Components.RawRowView(c)
		var s, s2 float64
		for i := 0; i < n; i++ {
			z := 0.0
			for j := 0; j < d; j++ {
				z += row[j] * (x[i*d+j] - p.Mean[j])
			}
			s += z
			s2 += z * z
		}
		if math.Abs(s/n) > 1e-9 || math.Abs(s2/(n-1)-p.Variances[c]) > 1e-9*p.Variances[c] {
			t.Errorf("component %d: score mean %v, variance %v (want %v)", c, s/n, s2/(n-1), p.Variances[c])
		}
	}
	// With every component kept the projection is invertible: x = μ + Vᵀz.
	full, err := FitPCA(x, n, d, d)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(full.Explained()-1) > 1e-12 {
		t.Errorf("all components explain %v", full.Explained())
	}
	for _, i := range []int{0, 17, n - 1} {
		xi := x[i*d : (i+1)*d]
		z := make([]float64, d)
		for c := 0; c < d; c++ {
			for j := 0; j < d; j++ {
				z[c] += full.Components.At(c, j) * (xi[j] - full.Mean[j])
			}
		}
		for j := 0; j < d; j++ {
			r := full.Mean[j]
			for c := 0; c < d; c++ {
				r += full.Components.At(c, j) * z[c]
			}
			if math.Abs(r-xi[j]) > 1e-9*(1+math.Abs(xi[j])) {
				t.Fatalf("row %d feature %d: reconstruction %v, want %v", i, j, r, xi[j])
			}
		}
	}
	// Deterministic: a second fit gives the same bits.
	q, err := FitPCA(x, n, d, k)
	if err != nil {
		t.Fatal(err)
	}
	if !mat.Equal(p.Components, q.Components) {
		t.Error("two fits of the same data differ")
	}
}

// TestFeaturePreprocessMatchesEigenPreprocess checks the SVD-based unit-ball + PCA map
// against the covariance-eigendecomposition one of glm invert (NewPreprocess).
func TestFeaturePreprocessMatchesEigenPreprocess(t *testing.T) {
	const n, d, k = 250, 8, 3
	x := pcaData(n, d, 2)
	pre, p, err := FeaturePreprocess(x, n, d, k)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := NewPreprocess(&Table{N: n, D: d, X: x, T: make([]float64, n)}, true, k)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(pre.Scale-ref.Scale) > 1e-15 || math.Abs(pre.Explained-ref.Explained) > 1e-12 || pre.String() != ref.String() {
		t.Errorf("scale %v / %v, explained %v / %v, %s / %s", pre.Scale, ref.Scale, pre.Explained, ref.Explained, pre, ref)
	}
	if !mat.EqualApprox(pre.A, ref.A, 1e-10*pre.Scale) {
		t.Errorf("A differs from the eigendecomposition reference:\n%v\n%v", mat.Formatted(pre.A), mat.Formatted(ref.A))
	}
	for c := range pre.B {
		if math.Abs(pre.B[c]-ref.B[c]) > 1e-9 {
			t.Errorf("b[%d] = %v, reference %v", c, pre.B[c], ref.B[c])
		}
	}
	if p.K != k {
		t.Errorf("K = %d", p.K)
	}
	// The training features are centred.
	dat := &Data{N: n, D: d, X: x, Y: make([]float64, n)}
	z, err := pre.ApplyData(dat)
	if err != nil {
		t.Fatal(err)
	}
	for c := 0; c < k; c++ {
		s := 0.0
		for i := 0; i < n; i++ {
			s += z.X[i*k+c]
		}
		if math.Abs(s/n) > 1e-12 {
			t.Errorf("feature %d has mean %v", c, s/n)
		}
	}
	if _, err := pre.ApplyData(&Data{N: 1, D: d + 1, X: make([]float64, d+1), Y: []float64{0}}); err == nil {
		t.Error("data of the wrong width accepted")
	}
}

func TestFitPCARejectsBadInput(t *testing.T) {
	x := pcaData(10, 4, 3)
	nan := append([]float64(nil), x...)
	nan[5] = math.NaN()
	for _, c := range []struct {
		name    string
		x       []float64
		n, d, k int
	}{
		{"k zero", x, 10, 4, 0},
		{"k above d", x, 10, 4, 5},
		{"one row", x[:4], 1, 4, 1},
		{"short", x[:8], 10, 4, 2},
		{"nan", nan, 10, 4, 2},
	} {
		if _, err := FitPCA(c.x, c.n, c.d, c.k); err == nil {
			t.Errorf("%s: accepted", c.name)
		}
	}
	if _, _, err := FeaturePreprocess(make([]float64, 20), 5, 4, 2); err == nil {
		t.Error("all-zero rows accepted")
	}
}
