package attack

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"github.com/dpfil/dpfil/glm"
	"github.com/dpfil/dpfil/internal/csvfile"
	"github.com/dpfil/dpfil/internal/jsonfloat"
	"github.com/dpfil/dpfil/internal/stats"
	"github.com/dpfil/dpfil/plot"
	"gonum.org/v1/gonum/stat"
)

// GLMExperiment is the GLM reconstruction attack of Balle, Cherubin and Hayes (2022)
// against the per-example FIL bound, as in Guo et al. (2022), "Bounding Training Data
// Reconstruction in Private (Deep) Learning", Sec. 7.2, Fig. 3–4: the setup's model
// (which needs the bias feature) is released Trials times with fresh noise and every
// target is reconstructed from each release and the other n − 1 examples.
type GLMExperiment struct {
	Setup   glm.Setup
	Trials  int
	Targets int // attack this many training examples drawn from Seed (0 = all)
	Seed    uint64
	// Progress is called with the number of trials finished since the last call.
	Progress func(trials int)
}

// GLMReport is the outcome of RunGLMExperiment. Files are Out/glm_attack.csv (one
// row per target) and the grids Out/glm_attack_top8.png and glm_attack_bottom8.png
// (the 8 highest- and lowest-dFIL targets over their first-trial reconstructions).
type GLMReport struct {
	glm.Release
	Trials  int    `json:"trials"`
	Targets int    `json:"targets"`
	Seed    uint64 `json:"seed"`
	FILComparison
	DFILMax         jsonfloat.Float `json:"dfil_max"`
	DFILMedian      jsonfloat.Float `json:"dfil_median"`
	DFILMean        jsonfloat.Float `json:"dfil_mean"`
	BoundMedian     jsonfloat.Inf   `json:"mse_bound_fil_median"`
	NonFiniteTrials int             `json:"nonfinite_trials"`
	FILSeconds      float64         `json:"fil_seconds"`
	AttackSeconds   float64         `json:"attack_seconds"`
	Files           []string        `json:"files"`
}

// FILComparison compares realised attack MSEs with the FIL bounds 1/dFIL of the same
// targets, as Guo et al. (2022) Fig. 3 does.
type FILComparison struct {
	MSEMedian jsonfloat.Float `json:"mse_median"` // over the targets with a finite MSE
	MSEMean   jsonfloat.Float `json:"mse_mean"`
	// Violations counts targets whose realised MSE is below their bound (the bound
	// holds for unbiased attackers in expectation, so violations measure bias and
	// Monte Carlo error); BoundBelow1 the targets with bound < 1 and ViolationsBelow1
	// the violations among them.
	Violations       int `json:"violations"`
	BoundBelow1      int `json:"n_bound_below_1"`
	ViolationsBelow1 int `json:"violations_bound_below_1"`
	AllNonFinite     int `json:"targets_all_nonfinite"` // targets with no finite trial (MSE NaN)
	// LogCorr is Pearson's correlation of log bound and log MSE over the targets where
	// both are positive and finite (NaN for fewer than 2).
	LogCorr jsonfloat.Float `json:"log_corr"`
}

// CompareFIL compares per-target realised MSEs (NaN: no finite trial) with bounds.
func CompareFIL(bound, mse []float64) (FILComparison, error) {
	if len(bound) != len(mse) {
		return FILComparison{}, fmt.Errorf("compare FIL: %d bounds, %d MSEs", len(bound), len(mse))
	}
	var c FILComparison
	var finite, lb, lm []float64
	for k, b := range bound {
		m := mse[k]
		viol := false
		if math.IsNaN(m) {
			c.AllNonFinite++
		} else {
			finite = append(finite, m)
			if m < b {
				viol = true
				c.Violations++
			}
			if m > 0 && b > 0 && !math.IsInf(m, 0) && !math.IsInf(b, 0) {
				lb = append(lb, math.Log(b))
				lm = append(lm, math.Log(m))
			}
		}
		if b < 1 {
			c.BoundBelow1++
			if viol {
				c.ViolationsBelow1++
			}
		}
	}
	sort.Float64s(finite)
	c.MSEMedian, c.MSEMean = jsonfloat.Float(stats.QuantileSorted(finite, 0.5)), jsonfloat.Float(math.NaN())
	if len(finite) > 0 {
		c.MSEMean = jsonfloat.Float(stat.Mean(finite, nil))
	}
	c.LogCorr = jsonfloat.Float(math.NaN())
	if len(lb) >= 2 {
		c.LogCorr = jsonfloat.Float(stat.Correlation(lb, lm, nil))
	}
	return c, nil
}

// Validate checks the experiment's own fields (the setup is checked when fitted).
func (e GLMExperiment) Validate() error {
	switch {
	case !e.Setup.Bias:
		return errors.New("glm attack: the attack needs the bias feature (it fixes the scale of the reconstructed input)")
	case e.Trials <= 0:
		return fmt.Errorf("glm attack: trials must be positive, got %d", e.Trials)
	case e.Targets < 0:
		return fmt.Errorf("glm attack: targets must be ≥ 0, got %d", e.Targets)
	case e.Setup.PCA != 0 || e.Setup.WithLabel:
		return errors.New("glm attack: the attack reconstructs raw pixels with the label known; it takes no PCA features and no label FIL")
	}
	return nil
}

// targets returns the attacked rows of n, sorted.
func (e GLMExperiment) targets(n int) []int {
	return glm.SampleRows(n, e.Targets, e.Seed, 0x74617267) // stream "targ"
}

// RunGLMExperiment fits the model, computes the targets' FIL, runs the attack and
// writes the report's files.
func RunGLMExperiment(e GLMExperiment) (*GLMReport, error) {
	if err := e.Validate(); err != nil {
		return nil, err
	}
	f, rel, err := e.Setup.FitRelease()
	if err != nil {
		return nil, err
	}
	tidx := e.targets(f.Train.N)
	t0 := time.Now()
	an, err := glm.NewAnalysis(f.Model)
	if err != nil {
		return nil, err
	}
	fil, err := an.PerExample(e.Setup.Sigma, glm.FILOptions{Indices: tidx, SkipSpectral: true})
	if err != nil {
		return nil, err
	}
	filSeconds := time.Since(t0).Seconds()
	top, bottom := glm.Extremes(fil.DFIL, 8)
	var keep []int
	for _, pos := range append(append([]int(nil), top...), bottom...) {
		keep = append(keep, tidx[pos])
	}
	t1 := time.Now()
	att, err := GLMAttack(f.Model, f.Train, GLMAttackOptions{Sigma: e.Setup.Sigma, Trials: e.Trials,
		Targets: tidx, Seed: e.Seed, Keep: keep, Progress: e.Progress})
	if err != nil {
		return nil, err
	}
	res := &GLMReport{Release: rel, Trials: e.Trials, Targets: len(tidx), Seed: e.Seed,
		FILSeconds: filSeconds, AttackSeconds: time.Since(t1).Seconds(), NonFiniteTrials: att.NonFinite}
	if err := res.fill(f, tidx, fil, att); err != nil {
		return nil, err
	}
	if err := res.write(f, tidx, fil, att, top, bottom); err != nil {
		return nil, err
	}
	return res, nil
}

// fill computes the summary fields from the FIL and the attack.
func (res *GLMReport) fill(f *glm.Fitted, tidx []int, fil *glm.FILResult, att *GLMAttackResult) error {
	bound := make([]float64, len(tidx))
	for k := range tidx {
		bound[k] = 1 / fil.DFIL[k]
	}
	c, err := CompareFIL(bound, att.MSE)
	if err != nil {
		return err
	}
	res.FILComparison = c
	s := glm.SpreadOf(fil.DFIL)
	res.DFILMax, res.DFILMedian, res.DFILMean = jsonfloat.Float(s.Max), jsonfloat.Float(s.Median), jsonfloat.Float(s.Mean)
	res.BoundMedian = jsonfloat.Inf(1 / s.Median)
	return nil
}

// write writes the per-target CSV and the image grids.
func (res *GLMReport) write(f *glm.Fitted, tidx []int, fil *glm.FILResult, att *GLMAttackResult, top, bottom []int) error {
	g := csvfile.FormatFloat
	rows := make([][]string, len(tidx))
	for k, i := range tidx {
		bound, mse := 1/fil.DFIL[k], att.MSE[k]
		viol := !math.IsNaN(mse) && mse < bound
		rows[k] = []string{strconv.Itoa(i), strconv.Itoa(int(f.Train.Y[i])), g(fil.DFIL[k]), g(bound), g(mse),
			g(att.MSEStdErr[k]), strconv.Itoa(att.Finite[k]), strconv.FormatBool(viol)}
	}
	path := filepath.Join(f.Setup.Out, "glm_attack.csv")
	if err := csvfile.Write(path, []string{"index", "label", "dfil", "mse_bound", "mse_realised", "mse_stderr", "finite_trials", "violation"}, rows); err != nil {
		return err
	}
	res.Files = append(res.Files, path)
	for _, part := range []struct {
		name, title string
		pos         []int
	}{{"glm_attack_top8.png", "highest-dFIL targets over their reconstructions", top},
		{"glm_attack_bottom8.png", "lowest-dFIL targets over their reconstructions", bottom}} {
		imgs := make([][]float32, 0, 2*len(part.pos))
		caps := make([]string, 0, 2*len(part.pos))
		for _, p := range part.pos {
			imgs = append(imgs, glm.Float32s(f.Train.Row(tidx[p])))
			caps = append(caps, fmt.Sprintf("1/dFIL %.2g", 1/fil.DFIL[p]))
		}
		for _, p := range part.pos {
			rec := att.Reconstructions[tidx[p]]
			imgs = append(imgs, glm.Float32s(rec))
			caps = append(caps, fmt.Sprintf("MSE %.2g", meanSqDiff(rec, f.Train.Row(tidx[p]))))
		}
		out := filepath.Join(f.Setup.Out, part.name)
		if err := plot.SaveGrid(out, imgs, f.H, f.W, plot.GridOptions{Cols: len(part.pos), Title: part.title,
			RowLabels: []string{"target", "reconstruction"}, Captions: caps}); err != nil {
			return err
		}
		res.Files = append(res.Files, out)
	}
	return nil
}

// meanSqDiff is ‖a − b‖²/len(a), the per-pixel MSE of one reconstruction (NaN when
// the lengths differ or a is empty).
func meanSqDiff(a, b []float64) float64 {
	if len(a) == 0 || len(a) != len(b) {
		return math.NaN()
	}
	s := 0.0
	for i, v := range a {
		d := v - b[i]
		s += d * d
	}
	return s / float64(len(a))
}
