package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/dpfil/dpfil/accounting"
	"github.com/dpfil/dpfil/data"
	"github.com/dpfil/dpfil/glm"
	"github.com/dpfil/dpfil/internal/atomicfile"
	"github.com/dpfil/dpfil/plot"
	"github.com/spf13/cobra"
	"gonum.org/v1/gonum/stat"
)

// glmInvertOptions are the flags of 'glm invert'.
type glmInvertOptions struct {
	dataset, dataDir string
	csvPath, target  string
	synthetic        string
	rows             int
	writeCSV         string
	loss             string
	lambda, sigma    float64
	bias, unitBall   bool
	pca              int
	columns, block   string
	attrType         string
	targets, trials  int
	irfil            int
	box              string
	noiseFree        bool
	shared           bool
	out              string
	scatter          string
	seed             uint64
	asJSON, quiet    bool
}

func newGLMInvertCmd() *cobra.Command {
	var o glmInvertOptions
	cmd := &cobra.Command{
		Use:   "invert",
		Short: "Attribute inversion (white-box and black-box) of an output-perturbed GLM, with its FIL prediction",
		Long: `Attribute inversion of seed 001 (Hannun et al., Sec. 6.4; Fredrikson et al. 2014).
A GLM is fitted on a table (--csv FILE, a generated --synthetic iwpc|adult table, or a
binary image dataset with pixel columns) and released as w̃ = w* + N(0, σ²I). For each
attacked row the adversaries recover the attribute x[S] (--columns, or --block for
an image patch):
  white-box  x̂ = argmin_v ‖w̃ − f(D with x_i[S] = v)‖ (refits; knows all other data)
  black-box  x̂ = argmax_v p(v)·π(w̃ᵀz̃(x_i with v), y_i) (predictions + prior; Fredrikson)
  baseline   the prior's mode (discrete) or mean (continuous)
The FIL of the attribute predicts the white-box error: per-coordinate MSE ≈ CRB =
Tr(I_S⁻¹)/|S| ≥ 1/dFIL ≥ 1/η². Features may be scaled into the unit ball and projected
onto --pca principal components first (seed 001 Sec. 6.1); --irfil reweights the examples
by attribute-level IRFIL before releasing.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			res, err := runGLMInvert(cmd, o)
			if err != nil {
				return err
			}
			return emit(cmd.OutOrStdout(), o.asJSON, res, res.human)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.dataset, "dataset", "mnist01-embedded", "binary image dataset (pixel columns p0…p783) when neither --csv nor --synthetic is given")
	fl.StringVar(&o.dataDir, "data-dir", "", "directory holding the dataset's files (searched first)")
	fl.StringVar(&o.csvPath, "csv", "", "read the table from this CSV file (header row; numbers only; nominal features one-hot encoded)")
	fl.StringVar(&o.target, "target", "", "target column of --csv (default: the last column)")
	fl.StringVar(&o.synthetic, "synthetic", "", "generate a table instead: iwpc (real target, 3-level one-hot attribute vkorc1_a,vkorc1_b) or adult (binary target, binary attribute married)")
	fl.IntVar(&o.rows, "rows", 0, "rows of the --synthetic table (0 = 1000); with --dataset/--csv use only the first N rows (0 = all)")
	fl.StringVar(&o.writeCSV, "write-csv", "", "also write the table (as loaded, before preprocessing) to this CSV file")
	fl.StringVar(&o.loss, "loss", "auto", "logistic (targets 0/1), lsq (least squares on the targets as given) or auto (logistic when every target is 0/1)")
	fl.Float64Var(&o.lambda, "lambda", 1e-2, "L2 regularisation λ (objective Σℓ + (nλ/2)‖w‖²)")
	fl.Float64Var(&o.sigma, "sigma", 1e-2, "output-perturbation noise standard deviation σ")
	fl.BoolVar(&o.bias, "bias", true, "append a constant-1 bias feature")
	fl.BoolVar(&o.unitBall, "unit-ball", true, "scale the features so that max ‖x_i‖ = 1 (seed 001 Sec. 6.1)")
	fl.IntVar(&o.pca, "pca", 0, "project the (scaled) features onto this many principal components (seed 001 uses 20 for images; 0 = off)")
	fl.StringVar(&o.columns, "columns", "", "attacked attribute: column names or 0-based indices/ranges, comma-separated (default: vkorc1_a,vkorc1_b / married for the synthetic tables)")
	fl.StringVar(&o.block, "block", "", "attacked attribute for images: a pixel block ROW,COL,H,W (0-based)")
	fl.StringVar(&o.attrType, "attr-type", "auto", "discrete (candidates = the observed values), continuous (Gaussian prior, Gauss–Newton) or auto (discrete when ≤ 10 distinct values)")
	fl.IntVar(&o.targets, "targets", 50, "attack this many rows chosen at random from --seed (0 = all)")
	fl.IntVar(&o.trials, "trials", 100, "independent releases (fresh noise each) per target")
	fl.BoolVar(&o.shared, "shared-releases", false, "attack every target in the same --trials releases (as one deployment exposes all rows) instead of independent releases per target")
	fl.IntVar(&o.irfil, "irfil", 0, "reweight the examples by this many iterations of attribute-level IRFIL before releasing (0 = off)")
	fl.StringVar(&o.box, "box", "", "clip the white-box iterates to LO,HI (e.g. 0,1 for pixels; default: unconstrained, as the FIL prediction assumes)")
	fl.BoolVar(&o.noiseFree, "noise-free", false, "attack the exact minimiser (σ = 0): the white-box attack must then be exact")
	fl.StringVar(&o.out, "out", "", "write per-target CSV (glm_invert.csv) here")
	fl.StringVar(&o.scatter, "scatter", "", "draw realised white-box MSE vs its FIL prediction (CRB) to this PNG/SVG/PDF file")
	fl.BoolVar(&o.quiet, "quiet", false, "no progress output on stderr")
	addSeedFlag(cmd, &o.seed)
	addJSONFlag(cmd, &o.asJSON)
	return cmd
}

// glmInvertResult is what 'glm invert' prints.
type glmInvertResult struct {
	Source        string                   `json:"source"`
	N             int                      `json:"n"`
	D             int                      `json:"d"`
	K             int                      `json:"k"`
	P             int                      `json:"p"`
	Preprocess    string                   `json:"preprocess"`
	Explained     float64                  `json:"pca_explained_variance"`
	Loss          string                   `json:"loss"`
	Lambda        float64                  `json:"lambda"`
	Bias          bool                     `json:"bias"`
	Sigma         float64                  `json:"sigma"`
	NoiseFree     bool                     `json:"noise_free"`
	TrainMetric   float64                  `json:"train_metric"` // accuracy (logistic) or mean squared error (lsq) of w*
	TrainMetricIs string                   `json:"train_metric_is"`
	Columns       []string                 `json:"columns"`
	Discrete      bool                     `json:"discrete"`
	PriorValues   int                      `json:"prior_values,omitempty"`
	IRFIL         []glm.AttributeIRFILStep `json:"irfil,omitempty"`
	Targets       int                      `json:"targets"`
	Trials        int                      `json:"trials"`
	Shared        bool                     `json:"shared_releases"`
	Seed          uint64                   `json:"seed"`

	WhiteMSE    glmNum `json:"white_box_mse"`
	BlackMSE    glmNum `json:"black_box_mse"`
	BaselineMSE glmNum `json:"baseline_mse"`
	WhiteAcc    glmNum `json:"white_box_accuracy"`
	BlackAcc    glmNum `json:"black_box_accuracy"`
	BaselineAcc glmNum `json:"baseline_accuracy"`
	// FIL predictions (means over targets) and how the realised white-box MSE
	// compares with the CRB per target.
	MeanCRB        glmNum                `json:"mean_crb"`
	MeanBoundDFIL  glmNum                `json:"mean_bound_dfil"`
	MeanEtaSq      glmNum                `json:"mean_eta_sq"`
	MedianRatio    glmNum                `json:"median_ratio_mse_to_crb"`
	LogCorr        glmNum                `json:"log_corr_crb_mse"`
	BelowCRB       int                   `json:"targets_below_crb"`
	BelowBoundDFIL int                   `json:"targets_below_bound_dfil"`
	Deciles        []glm.InversionDecile `json:"eta_deciles,omitempty"`
	FitSeconds     float64               `json:"fit_seconds"`
	AttackSeconds  float64               `json:"attack_seconds"`
	Files          []string              `json:"files,omitempty"`
	Note           string                `json:"note"`
	perTarget      []glm.InversionTarget
}

const glmInvertNote = "MSEs are per coordinate of the attribute, in the raw (unscaled) units of the table; " +
	"crb = σ²·Tr((J_SᵀJ_S)⁻¹)/|S| is what an efficient unbiased estimator attains (the white-box attack, to first order in σ); " +
	"bound_dfil = 1/dFIL ≤ crb; accuracies count exact recoveries (discrete attributes)"

func (r *glmInvertResult) human(w io.Writer) {
	fmt.Fprintf(w, "table %s: n=%d, d=%d → %d features (%s), p=%d; %s loss, λ=%g, bias=%v\n", r.Source, r.N, r.D, r.K, r.Preprocess, r.P, r.Loss, r.Lambda, r.Bias)
	fmt.Fprintf(w, "fit: train %s %.4g; release σ=%g%s\n", r.TrainMetricIs, r.TrainMetric, r.Sigma, map[bool]string{true: " (noise-free: σ = 0)", false: ""}[r.NoiseFree])
	kind := "continuous (Gaussian prior)"
	if r.Discrete {
		kind = fmt.Sprintf("discrete (%d observed values)", r.PriorValues)
	}
	fmt.Fprintf(w, "attribute %s: %s; %d targets × %d trials in %.1fs\n", strings.Join(r.Columns, ","), kind, r.Targets, r.Trials, r.AttackSeconds)
	if len(r.IRFIL) > 0 {
		first, last := r.IRFIL[0], r.IRFIL[len(r.IRFIL)-1]
		fmt.Fprintf(w, "IRFIL: η spread %.4f → %.4f after %d iterations\n", first.Spread, last.Spread, last.Iter)
	}
	fmt.Fprintf(w, "%-10s %12s %10s\n", "adversary", "MSE/coord", "accuracy")
	for _, row := range []struct {
		name     string
		mse, acc glmNum
	}{{"white-box", r.WhiteMSE, r.WhiteAcc}, {"black-box", r.BlackMSE, r.BlackAcc}, {"baseline", r.BaselineMSE, r.BaselineAcc}} {
		fmt.Fprintf(w, "%-10s %12.4g %10.4f\n", row.name, float64(row.mse), float64(row.acc))
	}
	if !r.NoiseFree {
		fmt.Fprintf(w, "FIL prediction: mean CRB %.4g, mean 1/dFIL %.4g; median realised/CRB %.3f, corr(log CRB, log MSE) %.3f; targets below CRB %d, below 1/dFIL %d of %d\n",
			float64(r.MeanCRB), float64(r.MeanBoundDFIL), float64(r.MedianRatio), float64(r.LogCorr), r.BelowCRB, r.BelowBoundDFIL, r.Targets)
		if len(r.Deciles) > 0 {
			fmt.Fprintln(w, "η² decile            white acc  black acc  white MSE   mean CRB")
			for _, d := range r.Deciles {
				fmt.Fprintf(w, "[%8.3g, %8.3g]  %9.3f  %9.3f  %9.4g  %9.4g\n", d.EtaSqLo, d.EtaSqHi, d.WhiteAcc, d.BlackAcc, d.WhiteMSE, d.CRB)
			}
		}
	}
	if len(r.Files) > 0 {
		fmt.Fprintf(w, "wrote %s\n", strings.Join(r.Files, ", "))
	}
}

// glmInvertTable loads the table of the options and says where it came from.
func glmInvertTable(cmd *cobra.Command, o glmInvertOptions) (*glm.Table, string, int, int, error) {
	given := 0
	for _, s := range []string{o.csvPath, o.synthetic} {
		if s != "" {
			given++
		}
	}
	if given > 1 {
		return nil, "", 0, 0, errors.New("give at most one of --csv and --synthetic")
	}
	if o.rows < 0 {
		return nil, "", 0, 0, fmt.Errorf("--rows must be ≥ 0, got %d", o.rows)
	}
	switch {
	case o.synthetic != "":
		n := o.rows
		if n == 0 {
			n = 1000
		}
		t, err := glm.GenerateTable(o.synthetic, n, o.seed)
		if err != nil {
			return nil, "", 0, 0, err
		}
		return t, "synthetic-" + o.synthetic, 0, 0, nil
	case o.csvPath != "":
		f, err := os.Open(o.csvPath)
		if err != nil {
			return nil, "", 0, 0, fmt.Errorf("open --csv: %w", err)
		}
		defer f.Close()
		t, err := glm.ReadCSV(f, o.target)
		if err != nil {
			return nil, "", 0, 0, fmt.Errorf("%s: %w", o.csvPath, err)
		}
		if o.rows > 0 {
			t = t.Head(o.rows)
		}
		return t, o.csvPath, 0, 0, nil
	}
	logf := func(format string, args ...any) {
		if !o.quiet {
			fmt.Fprintf(cmd.ErrOrStderr(), format+"\n", args...)
		}
	}
	ds, err := data.Load(o.dataset, data.Options{DataDir: o.dataDir, Logf: logf})
	if err != nil {
		return nil, "", 0, 0, fmt.Errorf("load dataset %s: %w", o.dataset, err)
	}
	tr := ds.Train
	if tr.Classes != 2 {
		return nil, "", 0, 0, fmt.Errorf("dataset %s has %d classes; glm invert needs a binary dataset (mnist01-embedded, mnist01, fashion01) or a table", o.dataset, tr.Classes)
	}
	if tr.C != 1 {
		return nil, "", 0, 0, fmt.Errorf("dataset %s has %d channels; glm invert takes single-channel images", o.dataset, tr.C)
	}
	d, err := glm.NewData(tr.Images, tr.Labels, tr.N, tr.Dim())
	if err != nil {
		return nil, "", 0, 0, err
	}
	loss := glm.Logistic
	if o.loss == "lsq" {
		loss = glm.LeastSquares
	}
	t := glm.TableFromData(d, loss)
	if o.rows > 0 {
		t = t.Head(o.rows)
	}
	return t, o.dataset + " (" + tr.Source + ")", tr.H, tr.W, nil
}

// glmInvertColumns resolves --columns / --block to column indices.
func glmInvertColumns(t *glm.Table, o glmInvertOptions, h, w int) ([]int, error) {
	if o.block != "" {
		if o.columns != "" {
			return nil, errors.New("give --columns or --block, not both")
		}
		if h == 0 {
			return nil, errors.New("--block needs an image dataset (use --columns for tables)")
		}
		var v [4]int
		parts := strings.Split(o.block, ",")
		if len(parts) != 4 {
			return nil, fmt.Errorf("--block %q: want ROW,COL,H,W", o.block)
		}
		for k, s := range parts {
			x, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil {
				return nil, fmt.Errorf("--block %q: %q is not an integer", o.block, s)
			}
			v[k] = x
		}
		r0, c0, bh, bw := v[0], v[1], v[2], v[3]
		if r0 < 0 || c0 < 0 || bh < 1 || bw < 1 || r0+bh > h || c0+bw > w {
			return nil, fmt.Errorf("--block %q outside the %d×%d image", o.block, h, w)
		}
		var cols []int
		for r := r0; r < r0+bh; r++ {
			for c := c0; c < c0+bw; c++ {
				cols = append(cols, r*w+c)
			}
		}
		return cols, nil
	}
	spec := o.columns
	if spec == "" {
		switch o.synthetic {
		case glm.SyntheticIWPC:
			spec = "vkorc1_a,vkorc1_b"
		case glm.SyntheticAdult:
			spec = "married"
		default:
			if h > 0 {
				// The centre 2×2 pixel block.
				return glmInvertColumns(t, glmInvertOptions{block: fmt.Sprintf("%d,%d,2,2", h/2-1, w/2-1)}, h, w)
			}
			return nil, errors.New("say which attribute to attack: --columns NAME[,NAME…] (or indices)")
		}
	}
	var cols []int
	seen := map[int]bool{}
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		if c, err := t.Column(part); err == nil {
			if seen[c] {
				return nil, fmt.Errorf("--columns: column %q given twice", part)
			}
			seen[c] = true
			cols = append(cols, c)
			continue
		}
		idx, err := glmParseColumns(part, t.D)
		if err != nil {
			return nil, fmt.Errorf("--columns: %q is neither a column name nor an index range (columns: %s)", part, glmInvertNames(t))
		}
		for _, c := range idx {
			if seen[c] {
				return nil, fmt.Errorf("--columns: column %d given twice", c)
			}
			seen[c] = true
			cols = append(cols, c)
		}
	}
	return cols, nil
}

func glmInvertNames(t *glm.Table) string {
	if len(t.Names) > 12 {
		return strings.Join(t.Names[:12], ", ") + ", …"
	}
	return strings.Join(t.Names, ", ")
}

func runGLMInvert(cmd *cobra.Command, o glmInvertOptions) (*glmInvertResult, error) {
	if !(o.lambda > 0) || math.IsInf(o.lambda, 0) {
		return nil, fmt.Errorf("--lambda must be positive and finite, got %v", o.lambda)
	}
	if !o.noiseFree && (!(o.sigma > 0) || math.IsInf(o.sigma, 0)) {
		return nil, fmt.Errorf("--sigma must be positive and finite, got %v (or use --noise-free)", o.sigma)
	}
	if o.trials < 1 {
		return nil, fmt.Errorf("--trials must be ≥ 1, got %d", o.trials)
	}
	if o.targets < 0 || o.irfil < 0 || o.pca < 0 {
		return nil, errors.New("--targets, --irfil and --pca must be ≥ 0")
	}
	if o.noiseFree && o.irfil > 0 {
		return nil, errors.New("--irfil needs σ > 0 (it equalises η = ‖J‖/σ); drop --noise-free")
	}
	switch o.loss {
	case "auto", "logistic", "lsq":
	default:
		return nil, fmt.Errorf("--loss %q: want logistic, lsq or auto", o.loss)
	}
	switch o.attrType {
	case "auto", "discrete", "continuous":
	default:
		return nil, fmt.Errorf("--attr-type %q: want discrete, continuous or auto", o.attrType)
	}
	var attack glm.AttackOptions
	if o.box != "" {
		lo, hi, err := glmInvertParseBox(o.box)
		if err != nil {
			return nil, err
		}
		attack.Lo, attack.Hi = lo, hi
	}
	t, source, h, w, err := glmInvertTable(cmd, o)
	if err != nil {
		return nil, err
	}
	if o.writeCSV != "" {
		if err := atomicfile.Write(o.writeCSV, t.WriteCSV); err != nil {
			return nil, fmt.Errorf("--write-csv: %w", err)
		}
	}
	loss := glm.LeastSquares
	switch {
	case o.loss == "logistic", o.loss == "auto" && t.BinaryTargets():
		loss = glm.Logistic
	}
	cols, err := glmInvertColumns(t, o, h, w)
	if err != nil {
		return nil, err
	}
	discrete := o.attrType == "discrete"
	if o.attrType == "auto" {
		if p, err := glm.NewPrior(t, cols, true); err == nil && len(p.Values) <= 10 {
			discrete = true
		}
	}
	prior, err := glm.NewPrior(t, cols, discrete)
	if err != nil {
		return nil, err
	}
	pre, err := glm.NewPreprocess(t, o.unitBall, o.pca)
	if err != nil {
		return nil, err
	}
	cfg := glm.InvertConfig{Loss: loss, Lambda: o.lambda, Bias: o.bias, Pre: pre}
	res := &glmInvertResult{Source: source, N: t.N, D: t.D, K: pre.K, Preprocess: pre.String(), Explained: pre.Explained,
		Loss: loss.String(), Lambda: o.lambda, Bias: o.bias, Sigma: o.sigma, NoiseFree: o.noiseFree,
		Discrete: discrete, Trials: o.trials, Shared: o.shared, Seed: o.seed, Note: glmInvertNote}
	if o.noiseFree {
		res.Sigma = 0
	}
	for _, c := range cols {
		res.Columns = append(res.Columns, t.Names[c])
	}
	if discrete {
		res.PriorValues = len(prior.Values)
	}
	t0 := time.Now()
	if o.irfil > 0 {
		wts, steps, err := glm.AttributeIRFIL(t, cfg, cols, o.sigma, o.irfil)
		if err != nil {
			return nil, err
		}
		cfg.Weights = wts
		res.IRFIL = steps
	}
	iv, err := glm.NewInverter(t, cfg)
	if err != nil {
		return nil, fmt.Errorf("fit: %w", err)
	}
	res.FitSeconds = time.Since(t0).Seconds()
	res.P = iv.P
	res.TrainMetric, res.TrainMetricIs = glmInvertTrainMetric(iv)
	tidx := make([]int, t.N)
	for i := range tidx {
		tidx[i] = i
	}
	if o.targets > 0 && o.targets < t.N {
		perm := rand.New(rand.NewPCG(o.seed, 0x696e76)).Perm(t.N)
		tidx = perm[:o.targets]
		sort.Ints(tidx)
	}
	res.Targets = len(tidx)
	pr := newProgress(int64(len(tidx)*o.trials), "glm invert", o.quiet)
	t1 := time.Now()
	ctx := cmd.Context()
	inv, err := iv.RunInversion(glm.InversionOptions{Sigma: o.sigma, NoiseFree: o.noiseFree, Prior: prior, Targets: tidx,
		Trials: o.trials, Seed: o.seed, Attack: attack, Predict: !o.noiseFree, SharedReleases: o.shared,
		Progress: func(k int) { pr.Add(int64(k), "") },
		Stop: func() error {
			if ctx != nil {
				return ctx.Err()
			}
			return nil
		}})
	pr.Finish()
	if err != nil {
		return nil, err
	}
	res.AttackSeconds = time.Since(t1).Seconds()
	res.perTarget = inv.Targets
	res.WhiteMSE, res.BlackMSE, res.BaselineMSE = glmNum(inv.WhiteMSE), glmNum(inv.BlackMSE), glmNum(inv.BaselineMSE)
	res.WhiteAcc, res.BlackAcc, res.BaselineAcc = glmNum(inv.WhiteAcc), glmNum(inv.BlackAcc), glmNum(inv.BaselineAcc)
	res.MeanCRB, res.MeanBoundDFIL, res.MeanEtaSq = glmNum(math.NaN()), glmNum(math.NaN()), glmNum(math.NaN())
	res.MedianRatio, res.LogCorr = glmNum(math.NaN()), glmNum(math.NaN())
	if !o.noiseFree {
		res.MeanCRB, res.MeanBoundDFIL, res.MeanEtaSq = glmNum(inv.MeanCRB), glmNum(inv.MeanBoundDFIL), glmNum(inv.MeanEtaSq)
		res.Deciles = inv.Deciles
		var ratios, lc, lm []float64
		for _, tg := range inv.Targets {
			if tg.WhiteMSE < tg.CRB {
				res.BelowCRB++
			}
			if tg.WhiteMSE < tg.BoundDFIL {
				res.BelowBoundDFIL++
			}
			if !math.IsInf(tg.CRB, 0) && tg.CRB > 0 && tg.WhiteMSE > 0 {
				ratios = append(ratios, tg.WhiteMSE/tg.CRB)
				lc = append(lc, math.Log(tg.CRB))
				lm = append(lm, math.Log(tg.WhiteMSE))
			}
		}
		if len(ratios) > 0 {
			sort.Float64s(ratios)
			res.MedianRatio = glmNum(accounting.QuantileSorted(ratios, 0.5))
		}
		if len(lc) > 2 {
			res.LogCorr = glmNum(stat.Correlation(lc, lm, nil))
		}
	}
	if o.writeCSV != "" {
		res.Files = append(res.Files, o.writeCSV)
	}
	if o.out != "" {
		path := filepath.Join(o.out, "glm_invert.csv")
		if err := glmWriteCSV(path, glmInvertCSVHeader, glmInvertCSVRows(inv.Targets)); err != nil {
			return nil, err
		}
		res.Files = append(res.Files, path)
	}
	if o.scatter != "" {
		if o.noiseFree {
			return nil, errors.New("--scatter needs σ > 0 (no FIL prediction without noise)")
		}
		x := make([]float64, len(inv.Targets))
		y := make([]float64, len(inv.Targets))
		for k, tg := range inv.Targets {
			x[k], y[k] = tg.CRB, tg.WhiteMSE
		}
		p, _, err := plot.Scatter(x, y, plot.ScatterOptions{LogX: true, LogY: true, Diagonal: true,
			XLabel: "FIL prediction: CRB = σ²Tr(I_S⁻¹)/|S|", YLabel: "realised white-box MSE per coordinate",
			Title: fmt.Sprintf("attribute inversion, %s, σ=%g, %d trials", strings.Join(res.Columns, ","), o.sigma, o.trials)})
		if err != nil {
			return nil, err
		}
		if err := plot.Save(p, o.scatter, 600, 600); err != nil {
			return nil, err
		}
		res.Files = append(res.Files, o.scatter)
	}
	return res, nil
}

// glmInvertTrainMetric is the training accuracy (logistic) or MSE (least squares) of w*.
func glmInvertTrainMetric(iv *glm.Inverter) (float64, string) {
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
	if iv.Config().Loss == glm.Logistic {
		return acc / float64(t.N), "accuracy"
	}
	return mse / float64(t.N), "mse"
}

var glmInvertCSVHeader = []string{"row", "true", "crb", "bound_dfil", "bound_eta", "dfil", "eta_sq", "eta_xy",
	"white_mse", "black_mse", "baseline_mse", "white_acc", "black_acc", "baseline_acc", "white_residual"}

func glmInvertCSVRows(ts []glm.InversionTarget) [][]string {
	rows := make([][]string, len(ts))
	for k, tg := range ts {
		vals := make([]string, len(tg.True))
		for c, v := range tg.True {
			vals[c] = glmFmt(v)
		}
		rows[k] = []string{strconv.Itoa(tg.Row), strings.Join(vals, " "), glmFmt(tg.CRB), glmFmt(tg.BoundDFIL), glmFmt(tg.BoundEta),
			glmFmt(tg.DFIL), glmFmt(tg.EtaSq), glmFmt(tg.EtaXY), glmFmt(tg.WhiteMSE), glmFmt(tg.BlackMSE), glmFmt(tg.BaselineMSE),
			glmFmt(tg.WhiteAcc), glmFmt(tg.BlackAcc), glmFmt(tg.BaselineAcc), glmFmt(tg.WhiteResidual)}
	}
	return rows
}

// glmInvertParseBox parses --box LO,HI (LO < HI, finite).
func glmInvertParseBox(s string) (lo, hi float64, err error) {
	parts := strings.Split(s, ",")
	if len(parts) != 2 {
		return 0, 0, fmt.Errorf("--box wants LO,HI, got %q", s)
	}
	lo, err1 := strconv.ParseFloat(strings.TrimSpace(parts[0]), 64)
	hi, err2 := strconv.ParseFloat(strings.TrimSpace(parts[1]), 64)
	if err1 != nil || err2 != nil || !(lo < hi) || math.IsInf(lo, 0) || math.IsInf(hi, 0) {
		return 0, 0, fmt.Errorf("--box wants finite LO < HI, got %q", s)
	}
	return lo, hi, nil
}
