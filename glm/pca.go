package glm

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat"

	"github.com/dpfil/dpfil/internal/stats"
)

// PCA is a principal-component projection z = Vᵀ(x − μ) of D features onto their K
// leading principal components, fitted by a singular value decomposition of the
// centred data (gonum stat.PC: X − 1μᵀ = UΣVᵀ, so the columns of V are the
// eigenvectors of the covariance and Σ²/(n−1) its eigenvalues), never forming the
// D×D covariance.
type PCA struct {
	D, K int
	Mean []float64 // μ, length D
	// Components is K×D: row c is the c-th principal direction (unit norm), in
	// decreasing order of variance, signed so that its largest-magnitude entry is
	// positive (a deterministic choice; the SVD fixes a direction only up to sign).
	Components *mat.Dense
	// Variances are the K leading eigenvalues of the sample covariance (1/(n−1)
	// normalisation), decreasing; TotalVariance is the sum of all of them (the trace
	// of the covariance).
	Variances     []float64
	TotalVariance float64
}

// FitPCA fits the K leading principal components of the n rows of x (row-major,
// n×d). It needs n ≥ 2 and 1 ≤ k ≤ min(n, d).
func FitPCA(x []float64, n, d, k int) (*PCA, error) {
	if n < 2 || d < 1 {
		return nil, fmt.Errorf("pca: need n ≥ 2 rows and d ≥ 1 features, got n=%d d=%d", n, d)
	}
	if len(x) != n*d {
		return nil, fmt.Errorf("pca: %d values for n=%d d=%d", len(x), n, d)
	}
	if k < 1 || k > min(n, d) {
		return nil, fmt.Errorf("pca: dimension %d outside [1, min(n, d) = %d]", k, min(n, d))
	}
	for i, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("pca: feature %d of row %d is %v", i%d, i/d, v)
		}
	}
	var pc stat.PC
	if !pc.PrincipalComponents(mat.NewDense(n, d, x), nil) {
		return nil, errors.New("pca: the singular value decomposition failed")
	}
	var vecs mat.Dense
	pc.VectorsTo(&vecs)
	vars := pc.VarsTo(nil)
	p := &PCA{D: d, K: k, Mean: make([]float64, d), Components: mat.NewDense(k, d, nil), Variances: append([]float64(nil), vars[:k]...)}
	for _, v := range vars {
		p.TotalVariance += v
	}
	for i := 0; i < n; i++ {
		for j, v := range x[i*d : (i+1)*d] {
			p.Mean[j] += v
		}
	}
	for j := range p.Mean {
		p.Mean[j] /= float64(n)
	}
	for c := 0; c < k; c++ {
		sgn := stats.ComponentSign(&vecs, c)
		for j := 0; j < d; j++ {
			p.Components.Set(c, j, sgn*vecs.At(j, c))
		}
	}
	return p, nil
}

// Explained is the fraction of the total variance the K components keep.
func (p *PCA) Explained() float64 {
	if !(p.TotalVariance > 0) {
		return 1
	}
	s := 0.0
	for _, v := range p.Variances {
		s += v
	}
	return s / p.TotalVariance
}

// FeaturePreprocess fits the feature map of Hannun et al. (2021, Sec. 6.1) on the n
// training rows x (n×d): scale every row by s = 1/max_i ‖x_i‖ (so that the training
// inputs lie in the unit ball), then project onto the k leading principal components
// of the scaled rows, z = Vᵀ(s·x − μ). The result is the fixed affine map z = A·x + b
// (A = s·Vᵀ, b = −Vᵀμ), fitted once on the training data and applied unchanged to any
// other split; the FIL is taken w.r.t. the k features z, as in the paper.
func FeaturePreprocess(x []float64, n, d, k int) (*Preprocess, *PCA, error) {
	if n < 1 || len(x) != n*d {
		return nil, nil, fmt.Errorf("preprocess: %d values for n=%d d=%d", len(x), n, d)
	}
	mx := 0.0
	for i := 0; i < n; i++ {
		mx = math.Max(mx, norm2(x[i*d:(i+1)*d]))
	}
	if !(mx > 0) || math.IsInf(mx, 0) {
		return nil, nil, fmt.Errorf("preprocess: largest row norm is %v; cannot scale into the unit ball", mx)
	}
	s := 1 / mx
	xs := make([]float64, len(x))
	for i, v := range x {
		xs[i] = s * v
	}
	p, err := FitPCA(xs, n, d, k)
	if err != nil {
		return nil, nil, err
	}
	a := mat.NewDense(k, d, nil)
	a.Scale(s, p.Components)
	b := make([]float64, k)
	for c := 0; c < k; c++ {
		b[c] = -mat.Dot(p.Components.RowView(c), mat.NewVecDense(d, p.Mean))
	}
	pre := &Preprocess{D: d, K: k, A: a, B: b, Scale: s, Explained: p.Explained(),
		Steps: []string{"unit-ball", "pca-" + strconv.Itoa(k)}}
	return pre, p, nil
}

// ApplyData maps every row of d (D = pp.D features) through the preprocessing and
// returns the K-feature data with the same labels.
func (pp *Preprocess) ApplyData(d *Data) (*Data, error) {
	if d.D != pp.D {
		return nil, fmt.Errorf("preprocess: data has %d features, the map takes %d", d.D, pp.D)
	}
	out := &Data{N: d.N, D: pp.K, X: make([]float64, d.N*pp.K), Y: append([]float64(nil), d.Y...)}
	for i := 0; i < d.N; i++ {
		pp.Apply(d.Row(i), out.X[i*pp.K:(i+1)*pp.K])
	}
	return out, nil
}
