package attack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/dpfil/dpfil/data"
	"github.com/dpfil/dpfil/glm"
	"github.com/dpfil/dpfil/internal/atomicfile"
	"github.com/dpfil/dpfil/internal/csvfile"
	"github.com/dpfil/dpfil/internal/jsonfloat"
	"github.com/dpfil/dpfil/internal/stats"
	"github.com/dpfil/dpfil/plot"
	"gonum.org/v1/gonum/stat"
)

// InvertExperiment is attribute inversion of an output-perturbed GLM (Hannun et al.
// 2021, "Measuring Data Leakage in Machine-Learning Models with Fisher Information",
// Sec. 6.4; Fredrikson et al. 2014) with its FIL prediction. The table comes from
// CSVPath, a Synthetic generator, or else the binary image Dataset (pixel columns).
type InvertExperiment struct {
	Dataset, DataDir string
	CSVPath, Target  string // CSV table and its target column (default: the last)
	Synthetic        string // SyntheticIWPC or SyntheticAdult
	// Rows: rows of the synthetic table (0 = 1000); of a CSV or dataset the first Rows
	// rows (0 = all).
	Rows     int
	WriteCSV string // also write the table as loaded to this file
	// Loss is "logistic", "lsq" or "auto" (logistic when every target is 0/1).
	Loss          string
	Lambda, Sigma float64
	Bias          bool
	UnitBall      bool // scale the features so that max ‖x_i‖ = 1
	PCA           int  // project onto this many principal components (0 = off)
	// Columns names the attacked attribute (names or 0-based indices/ranges); Block is
	// an image patch ROW,COL,H,W instead. Both empty: the synthetic table's attribute
	// or the image's centre 2×2 block.
	Columns string
	Block   []int
	// AttrType is "discrete", "continuous" or "auto" (discrete when ≤ 10 values).
	AttrType       string
	Targets        int       // rows attacked, drawn from Seed (0 = all)
	Trials         int       // releases per target
	SharedReleases bool      // attack every target in the same releases
	IRFIL          int       // attribute-level IRFIL iterations before releasing
	Box            []float64 // LO, HI clipping the white-box iterates (empty: none)
	NoiseFree      bool      // attack w* itself (σ = 0)
	Out            string    // write glm_invert.csv here
	Scatter        string    // draw realised white-box MSE vs the CRB to this file
	Seed           uint64
	// Progress is called with the (target, trial) pairs finished since the last call
	// and their total; it may be called concurrently.
	Progress func(done, total int)
	Logf     func(string, ...any)
}

// InvertReport is the outcome of RunInvert.
type InvertReport struct {
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

	WhiteMSE    jsonfloat.Float `json:"white_box_mse"`
	BlackMSE    jsonfloat.Float `json:"black_box_mse"`
	BaselineMSE jsonfloat.Float `json:"baseline_mse"`
	WhiteAcc    jsonfloat.Float `json:"white_box_accuracy"`
	BlackAcc    jsonfloat.Float `json:"black_box_accuracy"`
	BaselineAcc jsonfloat.Float `json:"baseline_accuracy"`
	// FIL predictions (means over targets) and how the realised white-box MSE
	// compares with the CRB per target.
	MeanCRB        jsonfloat.Inf     `json:"mean_crb"`
	MeanBoundDFIL  jsonfloat.Inf     `json:"mean_bound_dfil"`
	MeanEtaSq      jsonfloat.Float   `json:"mean_eta_sq"`
	MedianRatio    jsonfloat.Float   `json:"median_ratio_mse_to_crb"`
	LogCorr        jsonfloat.Float   `json:"log_corr_crb_mse"`
	BelowCRB       int               `json:"targets_below_crb"`
	BelowBoundDFIL int               `json:"targets_below_bound_dfil"`
	Deciles        []InversionDecile `json:"eta_deciles,omitempty"`
	// DecileBy names the deciles' key: "eta_sq" (η² of the attacked model) or, with
	// IRFIL, "initial_eta_sq" (η² of the unweighted model, as Hannun et al. 2021 Fig. 7b
	// sort the examples by their initial η).
	DecileBy      string   `json:"eta_deciles_by,omitempty"`
	FitSeconds    float64  `json:"fit_seconds"`
	AttackSeconds float64  `json:"attack_seconds"`
	Files         []string `json:"files,omitempty"`
	Note          string   `json:"note"`
	// PerTarget holds every target's outcome (also in Out/glm_invert.csv).
	PerTarget []InversionTarget `json:"-"`
	// initial is the unweighted model when IRFIL reweights (for the deciles' key).
	initial *glm.Inverter
}

const invertNote = "MSEs are per coordinate of the attribute, in the raw (unscaled) units of the table; " +
	"crb = σ²·Tr((J_SᵀJ_S)⁻¹)/|S| is what an efficient unbiased estimator attains (the white-box attack, to first order in σ); " +
	"bound_dfil = 1/dFIL ≤ crb; accuracies count exact recoveries (discrete attributes)"

// Validate checks the experiment's options, in field order.
func (e InvertExperiment) Validate() error {
	switch {
	case e.CSVPath != "" && e.Synthetic != "":
		return errors.New("glm invert: give at most one of a CSV table and a synthetic one")
	case e.Rows < 0:
		return fmt.Errorf("glm invert: rows must be ≥ 0, got %d", e.Rows)
	case !slices.Contains([]string{"auto", "logistic", "lsq"}, e.Loss):
		return fmt.Errorf("glm invert: loss %q: want logistic, lsq or auto", e.Loss)
	case !(e.Lambda > 0) || math.IsInf(e.Lambda, 0):
		return fmt.Errorf("glm invert: lambda must be positive and finite, got %v", e.Lambda)
	case !e.NoiseFree && (!(e.Sigma > 0) || math.IsInf(e.Sigma, 0)):
		return fmt.Errorf("glm invert: sigma must be positive and finite, got %v (or attack noise-free)", e.Sigma)
	case e.PCA < 0 || e.Targets < 0 || e.IRFIL < 0:
		return errors.New("glm invert: pca, targets and irfil must be ≥ 0")
	case e.Columns != "" && len(e.Block) > 0:
		return errors.New("glm invert: give the attribute's columns or a block, not both")
	case !slices.Contains([]string{"auto", "discrete", "continuous"}, e.AttrType):
		return fmt.Errorf("glm invert: attribute type %q: want discrete, continuous or auto", e.AttrType)
	case e.Trials < 1:
		return fmt.Errorf("glm invert: trials must be ≥ 1, got %d", e.Trials)
	case e.IRFIL > 0 && e.NoiseFree:
		return errors.New("glm invert: glm.IRFIL needs σ > 0 (it equalises η = ‖J‖/σ); do not attack noise-free")
	case len(e.Box) > 0 && (len(e.Box) != 2 || !(e.Box[0] < e.Box[1]) || math.IsInf(e.Box[0], 0) || math.IsInf(e.Box[1], 0)):
		return fmt.Errorf("glm invert: box wants finite LO < HI, got %v", e.Box)
	case e.NoiseFree && e.Scatter != "":
		return errors.New("glm invert: the scatter plot needs σ > 0 (no FIL prediction without noise)")
	}
	return nil
}

// invertTable is a loaded table and, for images, their shape.
type invertTable struct {
	t      *glm.Table
	source string
	h, w   int
}

// table loads the experiment's table.
func (e InvertExperiment) table() (*invertTable, error) {
	switch {
	case e.Synthetic != "":
		n := e.Rows
		if n == 0 {
			n = 1000
		}
		t, err := glm.GenerateTable(e.Synthetic, n, e.Seed)
		if err != nil {
			return nil, err
		}
		return &invertTable{t: t, source: "synthetic-" + e.Synthetic}, nil
	case e.CSVPath != "":
		f, err := os.Open(e.CSVPath)
		if err != nil {
			return nil, fmt.Errorf("open table: %w", err)
		}
		defer f.Close()
		t, err := glm.ReadCSV(f, e.Target)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e.CSVPath, err)
		}
		if e.Rows > 0 {
			t = t.Head(e.Rows)
		}
		return &invertTable{t: t, source: e.CSVPath}, nil
	}
	return e.imageTable()
}

func (e InvertExperiment) imageTable() (*invertTable, error) {
	ds, err := data.Load(e.Dataset, data.Options{DataDir: e.DataDir, Logf: e.Logf})
	if err != nil {
		return nil, fmt.Errorf("load dataset %s: %w", e.Dataset, err)
	}
	tr := ds.Train
	if tr.Classes != 2 {
		return nil, fmt.Errorf("dataset %s has %d classes; glm invert needs a binary dataset (mnist01-embedded, mnist01, fashion01) or a table", e.Dataset, tr.Classes)
	}
	if tr.C != 1 {
		return nil, fmt.Errorf("dataset %s has %d channels; glm invert takes single-channel images", e.Dataset, tr.C)
	}
	d, err := glm.NewData(tr.Images, tr.Labels, tr.N, tr.Dim())
	if err != nil {
		return nil, err
	}
	loss := glm.Logistic
	if e.Loss == "lsq" {
		loss = glm.LeastSquares
	}
	t := glm.TableFromData(d, loss)
	if e.Rows > 0 {
		t = t.Head(e.Rows)
	}
	return &invertTable{t: t, source: e.Dataset + " (" + tr.Source + ")", h: tr.H, w: tr.W}, nil
}

// BlockColumns returns the column indices of the pixel block ROW,COL,H,W of an h×w
// image (row-major).
func BlockColumns(block []int, h, w int) ([]int, error) {
	if h == 0 {
		return nil, errors.New("glm invert: a pixel block needs an image dataset (name the table's columns instead)")
	}
	if len(block) != 4 {
		return nil, fmt.Errorf("glm invert: block %v: want ROW,COL,H,W", block)
	}
	r0, c0, bh, bw := block[0], block[1], block[2], block[3]
	if r0 < 0 || c0 < 0 || bh < 1 || bw < 1 || r0+bh > h || c0+bw > w {
		return nil, fmt.Errorf("glm invert: block %v outside the %d×%d image", block, h, w)
	}
	var cols []int
	for r := r0; r < r0+bh; r++ {
		for c := c0; c < c0+bw; c++ {
			cols = append(cols, r*w+c)
		}
	}
	return cols, nil
}

// columns resolves the attacked attribute to column indices.
func (e InvertExperiment) columns(it *invertTable) ([]int, error) {
	if len(e.Block) > 0 {
		return BlockColumns(e.Block, it.h, it.w)
	}
	spec := e.Columns
	if spec == "" {
		switch {
		case e.Synthetic == glm.SyntheticIWPC:
			spec = "vkorc1_a,vkorc1_b"
		case e.Synthetic == glm.SyntheticAdult:
			spec = "married"
		case it.h > 0: // the centre 2×2 pixel block
			return BlockColumns([]int{it.h/2 - 1, it.w/2 - 1, 2, 2}, it.h, it.w)
		default:
			return nil, errors.New("glm invert: say which attribute to attack: --columns NAME[,NAME…] (or indices)")
		}
	}
	var cols []int
	seen := map[int]bool{}
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		idx := []int{0}
		if c, err := it.t.Column(part); err == nil {
			idx[0] = c
		} else if idx, err = glm.ParseColumns(part, it.t.D); err != nil {
			return nil, fmt.Errorf("glm invert: %q is neither a column name nor an index range (columns: %s)", part, columnNames(it.t))
		}
		for _, c := range idx {
			if seen[c] {
				return nil, fmt.Errorf("glm invert: column %q given twice", it.t.Names[c])
			}
			seen[c] = true
			cols = append(cols, c)
		}
	}
	return cols, nil
}

// columnNames lists the first column names of t (for error messages).
func columnNames(t *glm.Table) string {
	if len(t.Names) > 12 {
		return strings.Join(t.Names[:12], ", ") + ", …"
	}
	return strings.Join(t.Names, ", ")
}

// targets draws the attacked rows from the seed (all rows when Targets is 0 or ≥ n).
func (e InvertExperiment) targets(n int) []int {
	return glm.SampleRows(n, e.Targets, e.Seed, 0x696e76) // stream "inv"
}

// RunInvert loads the table, fits and (optionally) IRFIL-reweights the GLM, attacks
// the targets over the releases and compares the white-box error with its FIL
// prediction; it writes the files the experiment names.
func RunInvert(ctx context.Context, e InvertExperiment) (*InvertReport, error) {
	if err := e.Validate(); err != nil {
		return nil, err
	}
	it, err := e.table()
	if err != nil {
		return nil, err
	}
	if e.WriteCSV != "" {
		if err := atomicfile.Write(e.WriteCSV, it.t.WriteCSV); err != nil {
			return nil, fmt.Errorf("write table: %w", err)
		}
	}
	res, iv, prior, err := e.fit(it)
	if err != nil {
		return nil, err
	}
	tidx := e.targets(it.t.N)
	res.Targets = len(tidx)
	var attack WhiteBoxOptions
	if len(e.Box) == 2 {
		attack.Lo, attack.Hi = e.Box[0], e.Box[1]
	}
	var progress func(int)
	if e.Progress != nil {
		progress = func(k int) { e.Progress(k, len(tidx)*e.Trials) }
	}
	var key []float64
	if res.initial != nil {
		key = make([]float64, len(tidx))
		for k, i := range tidx {
			pr, err := res.initial.Predict(i, prior.Cols, e.Sigma)
			if err != nil {
				return nil, fmt.Errorf("initial η of row %d: %w", i, err)
			}
			key[k] = pr.EtaSq
		}
	}
	t1 := time.Now()
	inv, err := RunInversion(iv, InversionOptions{Sigma: e.Sigma, NoiseFree: e.NoiseFree, Prior: prior, Targets: tidx,
		Trials: e.Trials, Seed: e.Seed, Attack: attack, Predict: !e.NoiseFree, SharedReleases: e.SharedReleases,
		Progress: progress, Stop: ctxStop(ctx), DecileKey: key})
	if err != nil {
		return nil, err
	}
	res.AttackSeconds = time.Since(t1).Seconds()
	res.summarise(inv, e.NoiseFree)
	if err := e.writeFiles(res, inv); err != nil {
		return nil, err
	}
	return res, nil
}

func ctxStop(ctx context.Context) func() error {
	return func() error {
		if ctx != nil {
			return ctx.Err()
		}
		return nil
	}
}

// fit resolves the loss, the attribute, its prior and the preprocessing, fits the
// GLM (after IRFIL when asked) and starts the report.
func (e InvertExperiment) fit(it *invertTable) (*InvertReport, *glm.Inverter, *AttributePrior, error) {
	t := it.t
	loss := glm.LeastSquares
	if e.Loss == "logistic" || e.Loss == "auto" && t.BinaryTargets() {
		loss = glm.Logistic
	}
	cols, err := e.columns(it)
	if err != nil {
		return nil, nil, nil, err
	}
	discrete := e.AttrType == "discrete"
	if e.AttrType == "auto" {
		if p, err := NewAttributePrior(t, cols, true); err == nil && len(p.Values) <= 10 {
			discrete = true
		}
	}
	prior, err := NewAttributePrior(t, cols, discrete)
	if err != nil {
		return nil, nil, nil, err
	}
	pre, err := glm.NewPreprocess(t, e.UnitBall, e.PCA)
	if err != nil {
		return nil, nil, nil, err
	}
	cfg := glm.InvertConfig{Loss: loss, Lambda: e.Lambda, Bias: e.Bias, Pre: pre}
	res := &InvertReport{Source: it.source, N: t.N, D: t.D, K: pre.K, Preprocess: pre.String(), Explained: pre.Explained,
		Loss: loss.String(), Lambda: e.Lambda, Bias: e.Bias, Sigma: e.Sigma, NoiseFree: e.NoiseFree,
		Discrete: discrete, Trials: e.Trials, Shared: e.SharedReleases, Seed: e.Seed, Note: invertNote}
	if e.NoiseFree {
		res.Sigma = 0
	}
	for _, c := range cols {
		res.Columns = append(res.Columns, t.Names[c])
	}
	if discrete {
		res.PriorValues = len(prior.Values)
	}
	t0 := time.Now()
	if e.IRFIL > 0 {
		if res.initial, err = glm.NewInverter(t, cfg); err != nil {
			return nil, nil, nil, fmt.Errorf("fit: %w", err)
		}
		if cfg.Weights, res.IRFIL, err = glm.AttributeIRFIL(t, cfg, cols, e.Sigma, e.IRFIL); err != nil {
			return nil, nil, nil, err
		}
	}
	iv, err := glm.NewInverter(t, cfg)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("fit: %w", err)
	}
	res.FitSeconds = time.Since(t0).Seconds()
	res.P = iv.P
	res.TrainMetric, res.TrainMetricIs = iv.TrainMetric()
	return res, iv, prior, nil
}

// summarise fills the means and the comparison of realised MSE with the CRB.
func (res *InvertReport) summarise(inv *InversionResult, noiseFree bool) {
	f := func(v float64) jsonfloat.Float { return jsonfloat.Float(v) }
	res.PerTarget = inv.Targets
	res.WhiteMSE, res.BlackMSE, res.BaselineMSE = f(inv.WhiteMSE), f(inv.BlackMSE), f(inv.BaselineMSE)
	res.WhiteAcc, res.BlackAcc, res.BaselineAcc = f(inv.WhiteAcc), f(inv.BlackAcc), f(inv.BaselineAcc)
	nan := math.NaN()
	res.MeanCRB, res.MeanBoundDFIL, res.MeanEtaSq = jsonfloat.Inf(nan), jsonfloat.Inf(nan), f(nan)
	res.MedianRatio, res.LogCorr = f(nan), f(nan)
	if noiseFree {
		return
	}
	res.MeanCRB, res.MeanBoundDFIL, res.MeanEtaSq = jsonfloat.Inf(inv.MeanCRB), jsonfloat.Inf(inv.MeanBoundDFIL), f(inv.MeanEtaSq)
	res.Deciles, res.DecileBy = inv.Deciles, "eta_sq"
	if res.initial != nil {
		res.DecileBy = "initial_eta_sq"
	}
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
		res.MedianRatio = f(stats.QuantileSorted(ratios, 0.5))
	}
	if len(lc) > 2 {
		res.LogCorr = f(stat.Correlation(lc, lm, nil))
	}
}

// InvertCSVHeader names the columns of glm_invert.csv: one row per target.
func InvertCSVHeader() []string {
	return []string{"row", "true", "crb", "bound_dfil", "bound_eta", "dfil", "eta_sq", "eta_xy",
		"white_mse", "black_mse", "baseline_mse", "white_acc", "black_acc", "baseline_acc", "white_residual"}
}

func invertCSVRows(ts []InversionTarget) [][]string {
	g := csvfile.FormatFloat
	rows := make([][]string, len(ts))
	for k, tg := range ts {
		vals := make([]string, len(tg.True))
		for c, v := range tg.True {
			vals[c] = g(v)
		}
		rows[k] = []string{strconv.Itoa(tg.Row), strings.Join(vals, " "), g(tg.CRB), g(tg.BoundDFIL), g(tg.BoundEta),
			g(tg.DFIL), g(tg.EtaSq), g(tg.EtaXY), g(tg.WhiteMSE), g(tg.BlackMSE), g(tg.BaselineMSE),
			g(tg.WhiteAcc), g(tg.BlackAcc), g(tg.BaselineAcc), g(tg.WhiteResidual)}
	}
	return rows
}

// The scatter's axis labels, in characters the figures' font has (its superscript
// minus is missing: "I_S⁻¹" rendered as "I_S¹").
const (
	invertScatterXLabel = "FIL prediction: CRB = σ²Tr(I_S^-1)/|S|"
	invertScatterYLabel = "realised white-box MSE per coordinate"
)

// writeFiles writes the per-target CSV and the scatter plot the experiment names.
func (e InvertExperiment) writeFiles(res *InvertReport, inv *InversionResult) error {
	if e.WriteCSV != "" {
		res.Files = append(res.Files, e.WriteCSV)
	}
	if e.Out != "" {
		path := filepath.Join(e.Out, "glm_invert.csv")
		if err := csvfile.Write(path, InvertCSVHeader(), invertCSVRows(inv.Targets)); err != nil {
			return err
		}
		res.Files = append(res.Files, path)
	}
	if e.Scatter == "" {
		return nil
	}
	x := make([]float64, len(inv.Targets))
	y := make([]float64, len(inv.Targets))
	for k, tg := range inv.Targets {
		x[k], y[k] = tg.CRB, tg.WhiteMSE
	}
	p, _, err := plot.Scatter(x, y, plot.ScatterOptions{LogX: true, LogY: true, Diagonal: true,
		XLabel: invertScatterXLabel, YLabel: invertScatterYLabel,
		Title: fmt.Sprintf("attribute inversion, %s, σ=%g, %d trials", strings.Join(res.Columns, ","), e.Sigma, e.Trials)})
	if err != nil {
		return err
	}
	if err := plot.Save(p, e.Scatter, 600, 600); err != nil {
		return err
	}
	res.Files = append(res.Files, e.Scatter)
	return nil
}

// WriteText writes the table, the adversaries' errors and the FIL prediction.
func (r *InvertReport) WriteText(w io.Writer) {
	noise := ""
	if r.NoiseFree {
		noise = " (noise-free: σ = 0)"
	}
	fmt.Fprintf(w, "table %s: n=%d, d=%d → %d features (%s), p=%d; %s loss, λ=%g, bias=%v\n", r.Source, r.N, r.D, r.K, r.Preprocess, r.P, r.Loss, r.Lambda, r.Bias)
	fmt.Fprintf(w, "fit: train %s %.4g; release σ=%g%s\n", r.TrainMetricIs, r.TrainMetric, r.Sigma, noise)
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
	fmt.Fprintf(w, "%-10s %12.4g %10.4f\n", "white-box", float64(r.WhiteMSE), float64(r.WhiteAcc))
	fmt.Fprintf(w, "%-10s %12.4g %10.4f\n", "black-box", float64(r.BlackMSE), float64(r.BlackAcc))
	fmt.Fprintf(w, "%-10s %12.4g %10.4f\n", "baseline", float64(r.BaselineMSE), float64(r.BaselineAcc))
	if !r.NoiseFree {
		fmt.Fprintf(w, "FIL prediction: mean CRB %.4g, mean 1/dFIL %.4g; median realised/CRB %.3f, corr(log CRB, log MSE) %.3f; targets below CRB %d, below 1/dFIL %d of %d\n",
			float64(r.MeanCRB), float64(r.MeanBoundDFIL), float64(r.MedianRatio), float64(r.LogCorr), r.BelowCRB, r.BelowBoundDFIL, r.Targets)
		if len(r.Deciles) > 0 {
			head := "η² decile"
			if r.DecileBy == "initial_eta_sq" {
				head = "initial η² decile"
			}
			fmt.Fprintf(w, "%-20s white acc  black acc  white MSE   mean CRB\n", head)
			for _, d := range r.Deciles {
				fmt.Fprintf(w, "[%8.3g, %8.3g]  %9.3f  %9.3f  %9.4g  %9.4g\n", d.EtaSqLo, d.EtaSqHi, d.WhiteAcc, d.BlackAcc, d.WhiteMSE, d.CRB)
			}
		}
	}
	if len(r.Files) > 0 {
		fmt.Fprintf(w, "wrote %s\n", strings.Join(r.Files, ", "))
	}
}
