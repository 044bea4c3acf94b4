package glm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/dpfil/dpfil/accounting"
	"github.com/dpfil/dpfil/data"
	"github.com/dpfil/dpfil/internal/jsonfloat"
	"github.com/dpfil/dpfil/internal/stats"
	"gonum.org/v1/gonum/stat"
)

// Setup names the data, model and release of the experiments on a binary image
// dataset (Guo et al. 2022, "Bounding Training Data Reconstruction in Private (Deep)
// Learning", Sec. 7.1–7.2; Hannun et al. 2021, "Measuring Data Leakage in
// Machine-Learning Models with Fisher Information", Sec. 5).
type Setup struct {
	Dataset, DataDir string  // a binary dataset: mnist01-embedded, mnist01 or fashion01
	Loss             string  // "logistic" or "lsq" (ParseLoss)
	Lambda           float64 // λ of the objective Σℓ + (nλ/2)‖w‖²
	Sigma            float64 // output-perturbation noise σ
	Bias             bool    // append the constant-1 bias feature
	TrainSubset      int     // use only the first N training examples (0 = all)
	// Radius is the input norm bound R of the accounting, bias feature included; 0 =
	// the largest ‖x̃‖ over the training data (see Fitted.Account).
	Radius float64
	// PCA, when positive, replaces the raw pixels by Hannun et al.'s (2021, Sec. 6.1)
	// features: the training images scaled into the unit ball and projected onto
	// their PCA leading principal components (FeaturePreprocess; the test split goes
	// through the same map). The model and its FIL are then over these PCA features.
	PCA int
	// WithLabel includes the label in the per-example FIL (FILOptions.WithLabel):
	// Hannun et al.'s η is over (x_i, y_i); Guo et al.'s dFIL keeps labels public.
	WithLabel bool
	Out       string // directory for the CSV and PNG files
	Logf      func(string, ...any)
}

// Fitted is a Setup's loaded data and fitted model w*.
type Fitted struct {
	Setup       Setup
	Train, Test *Data // the model's features; Test is nil when the dataset has none
	// Images holds the training images (raw pixels, as Train without PCA): what the
	// image grids show.
	Images *Data
	// Pre is the feature map with Setup.PCA (nil without).
	Pre        *Preprocess
	Model      *Model
	Loss       Loss
	Source     string  // where the dataset came from
	C, H, W    int     // image shape (channels, height, width)
	FitSeconds float64 // time of Fit
}

// Validate checks the setup's numbers, in field order.
func (s Setup) Validate() error {
	if _, err := ParseLoss(s.Loss); err != nil {
		return err
	}
	switch {
	case !(s.Lambda > 0) || math.IsInf(s.Lambda, 0):
		return fmt.Errorf("glm: lambda must be positive and finite, got %v", s.Lambda)
	case !(s.Sigma > 0) || math.IsInf(s.Sigma, 0):
		return fmt.Errorf("glm: sigma must be positive and finite, got %v", s.Sigma)
	case s.TrainSubset < 0:
		return fmt.Errorf("glm: train subset must be ≥ 0, got %d", s.TrainSubset)
	case !(s.Radius >= 0) || math.IsInf(s.Radius, 0):
		return fmt.Errorf("glm: radius must be finite and ≥ 0, got %v", s.Radius)
	case s.PCA < 0:
		return fmt.Errorf("glm: PCA dimension must be ≥ 0 (0 = raw pixels), got %d", s.PCA)
	}
	return nil
}

func (s Setup) logf(format string, args ...any) {
	if s.Logf != nil {
		s.Logf(format, args...)
	}
}

// Fit validates the setup, loads the dataset and fits w*.
func (s Setup) Fit() (*Fitted, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	loss, _ := ParseLoss(s.Loss)
	ds, err := data.Load(s.Dataset, data.Options{DataDir: s.DataDir, Logf: s.Logf})
	if err != nil {
		return nil, fmt.Errorf("load dataset %s: %w", s.Dataset, err)
	}
	if ds.Train.Classes != 2 {
		return nil, fmt.Errorf("dataset %s has %d classes; the GLM experiments need a binary dataset (mnist01-embedded, mnist01, fashion01)", s.Dataset, ds.Train.Classes)
	}
	tr := ds.Train
	if s.TrainSubset > 0 && s.TrainSubset < tr.N {
		idx := make([]int, s.TrainSubset)
		for i := range idx {
			idx[i] = i
		}
		tr = tr.Subset(idx)
	}
	f := &Fitted{Setup: s, Loss: loss, Source: ds.Train.Source, C: tr.C, H: tr.H, W: tr.W}
	if f.Train, err = NewData(tr.Images, tr.Labels, tr.N, tr.Dim()); err != nil {
		return nil, fmt.Errorf("dataset %s train: %w", s.Dataset, err)
	}
	if ds.Test != nil && ds.Test.N > 0 {
		if f.Test, err = NewData(ds.Test.Images, ds.Test.Labels, ds.Test.N, ds.Test.Dim()); err != nil {
			return nil, fmt.Errorf("dataset %s test: %w", s.Dataset, err)
		}
	}
	f.Images = f.Train
	if s.PCA > 0 {
		if s.PCA > f.Train.D || s.PCA >= f.Train.N {
			return nil, fmt.Errorf("glm: PCA dimension %d must be at most the %d pixels and below the %d training examples", s.PCA, f.Train.D, f.Train.N)
		}
		t0 := time.Now()
		if f.Pre, _, err = FeaturePreprocess(f.Train.X, f.Train.N, f.Train.D, s.PCA); err != nil {
			return nil, fmt.Errorf("dataset %s: %w", s.Dataset, err)
		}
		if f.Train, err = f.Pre.ApplyData(f.Train); err != nil {
			return nil, err
		}
		if f.Test != nil {
			if f.Test, err = f.Pre.ApplyData(f.Test); err != nil {
				return nil, err
			}
		}
		s.logf("glm: %s features (%.4g of the variance kept) in %.1fs", f.Pre, f.Pre.Explained, time.Since(t0).Seconds())
	}
	s.logf("glm: fitting %s (λ=%g, bias=%v) on %d×%d", loss, s.Lambda, s.Bias, f.Train.N, f.Train.D)
	t0 := time.Now()
	if f.Model, err = Fit(f.Train, Config{Loss: loss, Lambda: s.Lambda, Bias: s.Bias}); err != nil {
		return nil, fmt.Errorf("fit: %w", err)
	}
	f.FitSeconds = time.Since(t0).Seconds()
	return f, nil
}

// Account is the order-2 RDP accounting of releasing w* with noise σ = Setup.Sigma
// (Guo et al. 2022, Sec. 7.1, corrected: ε₂ = Δ²/σ² with the replace-one sensitivity
// Δ = 2·L·R/(nλ)). R is Setup.Radius, or the largest training input norm (bias
// included) when Radius is 0; a Radius below that norm is refused. L bounds |ℓ'|: 1
// for the logistic loss, accounting.LeastSquaresDerivBound for least squares.
func (f *Fitted) Account() (accounting.GLMAccount, error) {
	r := f.Setup.Radius
	dataR := f.Train.MaxNorm(f.Model.Config.Bias)
	if r == 0 {
		r = dataR
	} else if r < dataR {
		return accounting.GLMAccount{}, fmt.Errorf("glm: radius %v is below the largest training input norm %v", r, dataR)
	}
	rel := accounting.GLMRelease{DerivBound: accounting.LogisticDerivBound, R: r, N: f.Train.N, Lambda: f.Model.Config.Lambda, Sigma: f.Setup.Sigma}
	if f.Loss == LeastSquares {
		var err error
		if rel.DerivBound, err = rel.LeastSquaresDerivBound(float64(f.Train.N)); err != nil {
			return accounting.GLMAccount{}, err
		}
	}
	return accounting.AccountGLM(rel)
}

// Release.RSource values: where the input norm bound R of the accounting came from.
const (
	RadiusFromData = "data"  // the largest training input norm (data-dependent)
	RadiusGiven    = "given" // Setup.Radius (--radius)
)

// What Release.Eps2 holds for, by RSource.
const (
	eps2DataDependent = "not a DP guarantee: R is the largest input norm of this training set (data-dependent), " +
		"so a neighbouring dataset may have another R; give --radius (√d, or √(d+1) with bias, for inputs in [0,1]^d) for an order-2 RDP guarantee"
	eps2Guaranteed = "order-2 RDP under replace-one adjacency for every dataset whose inputs satisfy ‖x̃‖ ≤ R (--radius)"
)

// Eps2Note explains the ε₂ fields of a Release.
const Eps2Note = "eps2 is the order-2 RDP Δ²/σ² of output perturbation with Δ = 2·L·R/(nλ) " +
	"(R = max ‖x̃‖ over the training data incl. bias unless --radius is given, L = sup|ℓ'|: 1 for logistic, " +
	"1 + R·√(1/λ) for least squares); " +
	"eps2_paper is Guo et al.'s 2/(nλσ), which is linear in 1/σ and ignores R, so it is not the order-2 RDP"

// Release describes a fitted model and the accounting of its release; every GLM
// report starts with it.
type Release struct {
	Dataset     string          `json:"dataset"`
	Source      string          `json:"source"`
	Loss        string          `json:"loss"`
	Bias        bool            `json:"bias"`
	Lambda      float64         `json:"lambda"`
	Sigma       float64         `json:"sigma"`
	N           int             `json:"n"`
	D           int             `json:"d"`
	P           int             `json:"p"`
	Accuracy    jsonfloat.Float `json:"accuracy"` // of w* on the test split (NaN without one)
	TrainAcc    jsonfloat.Float `json:"train_accuracy"`
	GradNorm    float64         `json:"grad_norm"`
	NewtonIters int             `json:"newton_iters"`
	R           float64         `json:"r"`
	// RSource is "data" when R is the largest training input norm (data-dependent,
	// so Eps2 is not a DP guarantee) and "given" when --radius set it;
	// Eps2Guarantee says what Eps2 holds for.
	RSource string `json:"r_source"`
	// Preprocess is "none" (raw pixels) or "unit-ball+pca-K"; PCAExplained is the
	// fraction of the scaled training images' variance the K components keep.
	Preprocess   string  `json:"preprocess"`
	PCAExplained float64 `json:"pca_explained_variance,omitempty"`
	// WithLabel: the per-example FIL includes the label column (Hannun et al.'s η).
	WithLabel     bool          `json:"with_label"`
	Eps2Guarantee string        `json:"eps2_guarantee"`
	Sensitivity   float64       `json:"sensitivity"`
	Eps2          jsonfloat.Inf `json:"eps2"`
	MSEBoundRDP   jsonfloat.Inf `json:"mse_bound_rdp"`
	Eps2Paper     jsonfloat.Inf `json:"eps2_paper"`
	Eps2Note      string        `json:"eps2_note"`
	FitSeconds    float64       `json:"fit_seconds"`
	OutDir        string        `json:"out_dir"`
}

// Release returns the description of the fitted model with its accuracies and
// accounting.
func (f *Fitted) Release() (Release, error) {
	trainAcc, err := f.Model.Accuracy(f.Train, nil)
	if err != nil {
		return Release{}, err
	}
	testAcc := math.NaN()
	if f.Test != nil {
		if testAcc, err = f.Model.Accuracy(f.Test, nil); err != nil {
			return Release{}, err
		}
	}
	acc, err := f.Account()
	if err != nil {
		return Release{}, err
	}
	s := f.Setup
	rel := Release{Dataset: s.Dataset, Source: f.Source, Loss: f.Loss.String(), Bias: s.Bias,
		Lambda: s.Lambda, Sigma: s.Sigma, N: f.Train.N, D: f.Train.D, P: f.Model.P,
		Accuracy: jsonfloat.Float(testAcc), TrainAcc: jsonfloat.Float(trainAcc), GradNorm: f.Model.GradNorm, NewtonIters: f.Model.Iters,
		R: acc.R, Sensitivity: acc.Sensitivity, Eps2: jsonfloat.Inf(acc.Eps2), MSEBoundRDP: jsonfloat.Inf(acc.MSEBoundRDP),
		Eps2Paper: jsonfloat.Inf(acc.Eps2Paper), Eps2Note: Eps2Note, FitSeconds: f.FitSeconds, OutDir: s.Out,
		RSource: RadiusFromData, Eps2Guarantee: eps2DataDependent, Preprocess: "none", WithLabel: s.WithLabel}
	if f.Pre != nil {
		rel.Preprocess, rel.PCAExplained = f.Pre.String(), f.Pre.Explained
	}
	if s.Radius > 0 {
		rel.RSource, rel.Eps2Guarantee = RadiusGiven, eps2Guaranteed
	}
	return rel, nil
}

// Spread is the maximum, median (numpy's default linear interpolation, as
// stats.QuantileSorted) and mean of a sample.
type Spread struct{ Max, Median, Mean float64 }

// SpreadOf returns the spread of v (NaN for an empty v).
func SpreadOf(v []float64) Spread {
	if len(v) == 0 {
		return Spread{math.NaN(), math.NaN(), math.NaN()}
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return Spread{Max: s[len(s)-1], Median: stats.QuantileSorted(s, 0.5), Mean: stat.Mean(s, nil)}
}

// Extremes returns the positions of the k largest and k smallest values of v (both
// in decreasing order of value, as Guo et al. 2022 Fig. 4 shows them; ties keep
// their order).
func Extremes(v []float64, k int) (top, bottom []int) {
	order := make([]int, len(v))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return v[order[a]] > v[order[b]] })
	k = min(k, len(v))
	return order[:k], order[len(order)-k:]
}

// Float32s converts v to float32 (for images).
func Float32s(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

// FitRelease fits the setup's model and returns it with its release description: the
// first step of every GLM experiment.
func (s Setup) FitRelease() (*Fitted, Release, error) {
	f, err := s.Fit()
	if err != nil {
		return nil, Release{}, err
	}
	rel, err := f.Release()
	if err != nil {
		return nil, Release{}, err
	}
	return f, rel, nil
}

// SampleRows returns k of the rows 0..n−1, drawn without replacement from (seed,
// stream) and sorted; every row when k is 0 or ≥ n. The experiments that attack a
// subset of the training rows draw it here, each with its own stream.
func SampleRows(n, k int, seed, stream uint64) []int {
	if k > 0 && k < n {
		rows := rand.New(rand.NewPCG(seed, stream)).Perm(n)[:k]
		sort.Ints(rows)
		return rows
	}
	rows := make([]int, n)
	for i := range rows {
		rows[i] = i
	}
	return rows
}
