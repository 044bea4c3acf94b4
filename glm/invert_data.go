package glm

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/mat"

	"github.com/dpfil/dpfil/internal/splitmix"
	"github.com/dpfil/dpfil/internal/stats"
)

// Table is a feature matrix with one real-valued or binary target per row: the input of
// attribute inversion (Hannun et al. 2021, Sec. 6.4). X holds N rows of D raw features
// (row-major); T holds the targets: real numbers for least squares, 0/1 for logistic
// regression. Names names the D feature columns and Target the target column.
type Table struct {
	N, D   int
	X      []float64
	T      []float64
	Names  []string
	Target string
}

// Row returns a view of row i's raw features.
func (t *Table) Row(i int) []float64 { return t.X[i*t.D : (i+1)*t.D] }

// Column returns the index of the feature column called name.
func (t *Table) Column(name string) (int, error) {
	for j, n := range t.Names {
		if n == name {
			return j, nil
		}
	}
	return 0, fmt.Errorf("table: no feature column %q (columns: %s)", name, strings.Join(t.Names, ", "))
}

// Check verifies shapes and that every value is finite.
func (t *Table) Check() error {
	if t == nil || t.N <= 0 || t.D <= 0 {
		return errors.New("table: empty")
	}
	if len(t.X) != t.N*t.D || len(t.T) != t.N {
		return fmt.Errorf("table: %d feature values and %d targets for %d×%d", len(t.X), len(t.T), t.N, t.D)
	}
	if t.Names != nil && len(t.Names) != t.D {
		return fmt.Errorf("table: %d column names for %d columns", len(t.Names), t.D)
	}
	for i, v := range t.X {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("table: feature %d of row %d is %v", i%t.D, i/t.D, v)
		}
	}
	for i, v := range t.T {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("table: target of row %d is %v", i, v)
		}
	}
	return nil
}

// BinaryTargets reports whether every target is 0 or 1.
func (t *Table) BinaryTargets() bool {
	for _, v := range t.T {
		if v != 0 && v != 1 {
			return false
		}
	}
	return true
}

// Head returns a copy of the first n rows (all if n ≥ N).
func (t *Table) Head(n int) *Table {
	n = min(max(n, 0), t.N)
	return &Table{N: n, D: t.D, X: append([]float64(nil), t.X[:n*t.D]...), T: append([]float64(nil), t.T[:n]...),
		Names: t.Names, Target: t.Target}
}

// TableFromData converts a binary image Data (labels 0/1, e.g. mnist01) to a Table
// with pixel columns "p0", "p1", …; least-squares targets are then t = 2y − 1.
func TableFromData(d *Data, loss Loss) *Table {
	t := &Table{N: d.N, D: d.D, X: append([]float64(nil), d.X...), T: make([]float64, d.N), Names: make([]string, d.D), Target: "label"}
	for i, y := range d.Y {
		t.T[i] = y
		if loss == LeastSquares {
			t.T[i] = 2*y - 1
		}
	}
	for j := range t.Names {
		t.Names[j] = "p" + strconv.Itoa(j)
	}
	return t
}

// ReadCSV reads a table from CSV: a header row of column names, then one row per
// example of numbers (blank lines are skipped). target names the target column ("" =
// the last column). Cells that do not parse as finite numbers are refused with their
// row and column; nominal features must be one-hot encoded beforehand (Hannun et al. drop
// the last level of each).
func ReadCSV(r io.Reader, target string) (*Table, error) {
	cr := csv.NewReader(r)
	cr.TrimLeadingSpace = true
	cr.ReuseRecord = false
	header, err := cr.Read()
	if err == io.EOF {
		return nil, errors.New("csv: empty input (want a header row and data rows)")
	}
	if err != nil {
		return nil, fmt.Errorf("csv header: %w", err)
	}
	if len(header) < 2 {
		return nil, fmt.Errorf("csv: %d column(s); need at least one feature and a target", len(header))
	}
	seen := map[string]bool{}
	for j, h := range header {
		h = strings.TrimSpace(h)
		header[j] = h
		if h == "" {
			return nil, fmt.Errorf("csv: column %d has an empty name", j+1)
		}
		if seen[h] {
			return nil, fmt.Errorf("csv: column name %q appears twice", h)
		}
		seen[h] = true
	}
	tcol := len(header) - 1
	if target != "" {
		tcol = -1
		for j, h := range header {
			if h == target {
				tcol = j
			}
		}
		if tcol < 0 {
			return nil, fmt.Errorf("csv: no target column %q (columns: %s)", target, strings.Join(header, ", "))
		}
	}
	t := &Table{D: len(header) - 1, Target: header[tcol]}
	for j, h := range header {
		if j != tcol {
			t.Names = append(t.Names, h)
		}
	}
	line := 1
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		line++
		if err != nil {
			return nil, fmt.Errorf("csv: %w", err)
		}
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue
		}
		if len(rec) != len(header) {
			return nil, fmt.Errorf("csv row %d: %d fields, header has %d", line, len(rec), len(header))
		}
		for j, cell := range rec {
			v, err := strconv.ParseFloat(strings.TrimSpace(cell), 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("csv row %d column %q: %q is not a finite number (one-hot encode nominal features)", line, header[j], cell)
			}
			if j == tcol {
				t.T = append(t.T, v)
			} else {
				t.X = append(t.X, v)
			}
		}
		t.N++
	}
	if t.N == 0 {
		return nil, errors.New("csv: no data rows")
	}
	return t, nil
}

// WriteCSV writes t as CSV (feature columns, then the target column).
func (t *Table) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	header := append(append([]string(nil), t.Names...), t.Target)
	if err := cw.Write(header); err != nil {
		return err
	}
	rec := make([]string, t.D+1)
	for i := 0; i < t.N; i++ {
		for j, v := range t.Row(i) {
			rec[j] = strconv.FormatFloat(v, 'g', -1, 64)
		}
		rec[t.D] = strconv.FormatFloat(t.T[i], 'g', -1, 64)
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// Synthetic table kinds for GenerateTable.
const (
	// SyntheticIWPC mimics Hannun et al.'s (2021) IWPC setting: standardised numeric features, a
	// 3-level nominal attribute one-hot encoded in two columns ("vkorc1_a",
	// "vkorc1_b"; both 0 is the dropped third level) and a real-valued target
	// (a dose) that depends on it; linear regression.
	SyntheticIWPC = "iwpc"
	// SyntheticAdult mimics the UCI Adult setting: numeric features, a binary
	// attribute ("married") and a binary target that depends on it; logistic regression.
	SyntheticAdult = "adult"
)

// GenerateTable draws a synthetic table of n rows (kind SyntheticIWPC or
// SyntheticAdult) from seed. The real IWPC and Adult datasets are not reachable
// offline; these tables have the same structure (numeric + one-hot nominal features, a
// target that depends on the attacked attribute) with known generating weights.
func GenerateTable(kind string, n int, seed uint64) (*Table, error) {
	if n < 2 {
		return nil, fmt.Errorf("synthetic table: need n ≥ 2 rows, got %d", n)
	}
	rng := rand.New(rand.NewPCG(seed, seed^splitmix.Golden))
	const numeric = 4
	switch kind {
	case SyntheticIWPC:
		t := &Table{N: n, D: numeric + 2, Target: "dose",
			Names: []string{"age", "height", "weight", "amiodarone", "vkorc1_a", "vkorc1_b"}}
		coef := []float64{-0.3, 0.2, 0.35, -0.25}
		for i := 0; i < n; i++ {
			row := make([]float64, t.D)
			for j := 0; j < numeric; j++ {
				row[j] = rng.NormFloat64()
			}
			// Allele frequencies 0.4 / 0.35 / 0.25; levels shift the dose strongly.
			u := rng.Float64()
			shift := 0.0
			switch {
			case u < 0.4:
				row[4], shift = 1, 0.8
			case u < 0.75:
				row[5], shift = 1, -0.6
			default:
				shift = 0.1
			}
			y := shift + 0.1*rng.NormFloat64()
			for j, c := range coef {
				y += c * row[j]
			}
			t.X = append(t.X, row...)
			t.T = append(t.T, y)
		}
		return t, nil
	case SyntheticAdult:
		t := &Table{N: n, D: numeric + 1, Target: "income",
			Names: []string{"age", "education", "hours", "capital", "married"}}
		coef := []float64{0.6, 0.9, 0.5, 0.7}
		for i := 0; i < n; i++ {
			row := make([]float64, t.D)
			for j := 0; j < numeric; j++ {
				row[j] = rng.NormFloat64()
			}
			if rng.Float64() < 0.47 {
				row[numeric] = 1
			}
			a := -0.8 + 1.6*row[numeric]
			for j, c := range coef {
				a += c * row[j]
			}
			y := 0.0
			if rng.Float64() < sigmoid(a) {
				y = 1
			}
			t.X = append(t.X, row...)
			t.T = append(t.T, y)
		}
		return t, nil
	}
	return nil, fmt.Errorf("synthetic table: unknown kind %q (want %s or %s)", kind, SyntheticIWPC, SyntheticAdult)
}

// Preprocess is a fixed affine feature map z = A·x + b from the D raw features to the
// K model features (Hannun et al. 2021, Sec. 6.1: scale into the unit ball, then project onto the
// top principal components). It is fitted once on the training data and then treated
// as public and constant: the FIL and the attacks differentiate through A but not
// through the data dependence of A and b (a one-example change moves the scale and
// the principal components by O(1/n)).
type Preprocess struct {
	D, K  int
	A     *mat.Dense // K×D
	B     []float64  // K
	Scale float64    // unit-ball scale s (1 when not normalised)
	// Explained is the fraction of the (scaled) data variance the PCA components keep
	// (1 without PCA).
	Explained float64
	Steps     []string // what was applied, in order ("unit-ball", "pca-20")
}

// Identity returns the identity preprocessing for d features.
func Identity(d int) *Preprocess {
	a := mat.NewDense(d, d, nil)
	for j := 0; j < d; j++ {
		a.Set(j, j, 1)
	}
	return &Preprocess{D: d, K: d, A: a, B: make([]float64, d), Scale: 1, Explained: 1}
}

// NewPreprocess fits the preprocessing on t: when unitBall is set, every row is
// scaled by s = 1/max_i ‖x_i‖ (so max_i ‖s·x_i‖ = 1); when pca > 0, the scaled rows are
// centred and projected onto their top pca principal components (z = Pᵀ(s·x − μ)).
func NewPreprocess(t *Table, unitBall bool, pca int) (*Preprocess, error) {
	if err := t.Check(); err != nil {
		return nil, err
	}
	if pca < 0 || pca > t.D {
		return nil, fmt.Errorf("preprocess: PCA dimension %d outside [0, %d]", pca, t.D)
	}
	pp := Identity(t.D)
	if unitBall {
		mx := 0.0
		for i := 0; i < t.N; i++ {
			mx = math.Max(mx, norm2(t.Row(i)))
		}
		if !(mx > 0) {
			return nil, errors.New("preprocess: every row is zero; cannot scale into the unit ball")
		}
		pp.Scale = 1 / mx
		pp.A.Scale(pp.Scale, pp.A)
		pp.Steps = append(pp.Steps, "unit-ball")
	}
	if pca == 0 {
		return pp, nil
	}
	n, d := t.N, t.D
	mu := make([]float64, d)
	for i := 0; i < n; i++ {
		for j, v := range t.Row(i) {
			mu[j] += pp.Scale * v / float64(n)
		}
	}
	cen := mat.NewDense(n, d, nil)
	for i := 0; i < n; i++ {
		for j, v := range t.Row(i) {
			cen.Set(i, j, pp.Scale*v-mu[j])
		}
	}
	var cov mat.SymDense
	cov.SymOuterK(1/float64(n), cen.T())
	var es mat.EigenSym
	if !es.Factorize(&cov, true) {
		return nil, errors.New("preprocess: PCA eigendecomposition failed")
	}
	vals := es.Values(nil)
	var vecs mat.Dense
	es.VectorsTo(&vecs)
	order := make([]int, d)
	for j := range order {
		order[j] = j
	}
	sort.SliceStable(order, func(a, b int) bool { return vals[order[a]] > vals[order[b]] })
	total, kept := 0.0, 0.0
	for _, v := range vals {
		total += math.Max(v, 0)
	}
	a := mat.NewDense(pca, d, nil)
	b := make([]float64, pca)
	for c := 0; c < pca; c++ {
		col := order[c]
		kept += math.Max(vals[col], 0)
		// Sign convention: the largest-magnitude loading is positive (deterministic).
		sgn := stats.ComponentSign(&vecs, col)
		for j := 0; j < d; j++ {
			v := sgn * vecs.At(j, col)
			a.Set(c, j, pp.Scale*v)
			b[c] -= v * mu[j]
		}
	}
	pp.K, pp.A, pp.B = pca, a, b
	pp.Explained = 1
	if total > 0 {
		pp.Explained = kept / total
	}
	pp.Steps = append(pp.Steps, "pca-"+strconv.Itoa(pca))
	return pp, nil
}

// Apply writes z = A·x + b (length K) for raw features x (length D).
func (pp *Preprocess) Apply(x, z []float64) {
	for c := 0; c < pp.K; c++ {
		s := pp.B[c]
		row := pp.A.RawRowView(c)
		for j, v := range x {
			s += row[j] * v
		}
		z[c] = s
	}
}

// String describes the preprocessing ("none", "unit-ball", "unit-ball+pca-20").
func (pp *Preprocess) String() string {
	if len(pp.Steps) == 0 {
		return "none"
	}
	return strings.Join(pp.Steps, "+")
}
