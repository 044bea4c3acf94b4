package main

import (
	"encoding/csv"
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
	"sync"
	"time"

	"github.com/dpfil/dpfil/accounting"
	"github.com/dpfil/dpfil/attack"
	"github.com/dpfil/dpfil/data"
	"github.com/dpfil/dpfil/glm"
	"github.com/dpfil/dpfil/internal/atomicfile"
	"github.com/dpfil/dpfil/plot"
	"github.com/spf13/cobra"
	"gonum.org/v1/gonum/stat"
)

// newGLMCmd is the 'glm' command group: output-perturbed GLMs (Guo et al. (2022) Sec. 7.1–7.2,
// seed 001).
func newGLMCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "glm",
		Short: "Output-perturbed GLMs: per-example FIL, the GLM reconstruction attack, IRFIL",
		Long: `Output-perturbed L2-regularised logistic / least-squares regression on a binary
dataset (mnist01-embedded, mnist01, fashion01): w̃ = w* + N(0, σ²I) with
w* = argmin Σℓ(wᵀx̃_i, y_i) + (nλ/2)‖w‖², features = raw pixels in [0,1]
(optionally with a constant-1 bias feature).`,
	}
	cmd.AddCommand(newGLMFilCmd(), newGLMAttackCmd(), newGLMIRFILCmd(), newGLMInvertCmd())
	return cmd
}

// glmFlags are the flags shared by the glm subcommands.
type glmFlags struct {
	dataset     string
	dataDir     string
	lambda      float64
	sigma       float64
	bias        bool
	loss        string
	out         string
	trainSubset int
	radius      float64
	asJSON      bool
	quiet       bool
}

func (f *glmFlags) register(cmd *cobra.Command, sigma float64, bias bool, out string) {
	fl := cmd.Flags()
	fl.StringVar(&f.dataset, "dataset", "mnist01-embedded", "binary dataset: mnist01-embedded, mnist01 or fashion01")
	fl.StringVar(&f.dataDir, "data-dir", "", "directory holding the dataset's files (searched first)")
	fl.Float64Var(&f.lambda, "lambda", 1e-2, "L2 regularisation λ (objective Σℓ + (nλ/2)‖w‖²)")
	fl.Float64Var(&f.sigma, "sigma", sigma, "output-perturbation noise standard deviation σ")
	fl.BoolVar(&f.bias, "bias", bias, "append a constant-1 bias feature")
	fl.StringVar(&f.loss, "loss", "logistic", "loss: logistic (labels 0/1) or lsq (least squares, targets ±1)")
	fl.StringVar(&f.out, "out", out, "output directory for CSV and PNG files")
	fl.IntVar(&f.trainSubset, "train-subset", 0, "use only the first N training examples (0 = all)")
	fl.Float64Var(&f.radius, "radius", 0, "input norm bound R for the RDP accounting, incl. the bias feature (0 = max ‖x̃‖ over the training data, see docs/glm.md; use √d or √(d+1) for the whole [0,1]^d domain)")
	fl.BoolVar(&f.quiet, "quiet", false, "no progress output on stderr")
	addJSONFlag(cmd, &f.asJSON)
}

// glmSetup is a loaded dataset and fitted model.
type glmSetup struct {
	ds         *data.Split
	train      *glm.Data
	test       *glm.Data
	loss       glm.Loss
	model      *glm.Model
	fitSeconds float64
	h, w       int
}

func (f *glmFlags) setup(cmd *cobra.Command) (*glmSetup, error) {
	loss, err := glm.ParseLoss(f.loss)
	if err != nil {
		return nil, err
	}
	if !(f.lambda > 0) || math.IsInf(f.lambda, 0) {
		return nil, fmt.Errorf("--lambda must be positive and finite, got %v", f.lambda)
	}
	if !(f.sigma > 0) || math.IsInf(f.sigma, 0) {
		return nil, fmt.Errorf("--sigma must be positive and finite, got %v", f.sigma)
	}
	if !(f.radius >= 0) || math.IsInf(f.radius, 0) {
		return nil, fmt.Errorf("--radius must be finite and ≥ 0, got %v", f.radius)
	}
	if f.trainSubset < 0 {
		return nil, fmt.Errorf("--train-subset must be ≥ 0, got %d", f.trainSubset)
	}
	logf := func(format string, args ...any) {
		if !f.quiet {
			fmt.Fprintf(cmd.ErrOrStderr(), format+"\n", args...)
		}
	}
	ds, err := data.Load(f.dataset, data.Options{DataDir: f.dataDir, Logf: logf})
	if err != nil {
		return nil, fmt.Errorf("load dataset %s: %w", f.dataset, err)
	}
	if ds.Train.Classes != 2 {
		return nil, fmt.Errorf("dataset %s has %d classes; the GLM commands need a binary dataset (mnist01-embedded, mnist01, fashion01)", f.dataset, ds.Train.Classes)
	}
	tr := ds.Train
	if f.trainSubset > 0 && f.trainSubset < tr.N {
		idx := make([]int, f.trainSubset)
		for i := range idx {
			idx[i] = i
		}
		tr = tr.Subset(idx)
	}
	train, err := glm.NewData(tr.Images, tr.Labels, tr.N, tr.Dim())
	if err != nil {
		return nil, fmt.Errorf("dataset %s train: %w", f.dataset, err)
	}
	var test *glm.Data
	if ds.Test != nil && ds.Test.N > 0 {
		if test, err = glm.NewData(ds.Test.Images, ds.Test.Labels, ds.Test.N, ds.Test.Dim()); err != nil {
			return nil, fmt.Errorf("dataset %s test: %w", f.dataset, err)
		}
	}
	logf("glm: fitting %s (λ=%g, bias=%v) on %d×%d", loss, f.lambda, f.bias, train.N, train.D)
	t0 := time.Now()
	m, err := glm.Fit(train, glm.Config{Loss: loss, Lambda: f.lambda, Bias: f.bias})
	if err != nil {
		return nil, fmt.Errorf("fit: %w", err)
	}
	return &glmSetup{ds: ds, train: train, test: test, loss: loss, model: m,
		fitSeconds: time.Since(t0).Seconds(), h: tr.H, w: tr.W}, nil
}

// accuracies returns train and test accuracy of w*.
func (s *glmSetup) accuracies() (train, test float64, err error) {
	if train, err = s.model.Accuracy(s.train, nil); err != nil {
		return 0, 0, err
	}
	test = math.NaN()
	if s.test != nil {
		if test, err = s.model.Accuracy(s.test, nil); err != nil {
			return 0, 0, err
		}
	}
	return train, test, nil
}

// account returns the order-2 RDP accounting of the release (R = max data norm).
func (s *glmSetup) account(sigma, radius float64) (accounting.GLMAccount, error) {
	r := radius
	if r == 0 {
		r = s.train.MaxNorm(s.model.Config.Bias)
	} else if dataR := s.train.MaxNorm(s.model.Config.Bias); r < dataR {
		return accounting.GLMAccount{}, fmt.Errorf("--radius %v is below the largest training input norm %v", r, dataR)
	}
	deriv := accounting.LogisticDerivBound
	if s.loss == glm.LeastSquares {
		var err error
		if deriv, err = accounting.LeastSquaresDerivBound(r, s.model.Config.Lambda, float64(s.train.N), s.train.N); err != nil {
			return accounting.GLMAccount{}, err
		}
	}
	return accounting.AccountGLM(deriv, r, s.train.N, s.model.Config.Lambda, 1, sigma)
}

// num is a float that encodes NaN/±Inf as JSON null.
type glmNum float64

func (v glmNum) MarshalJSON() ([]byte, error) {
	f := float64(v)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return []byte(strconv.FormatFloat(f, 'g', -1, 64)), nil
}

const glmEps2Note = "eps2 is the order-2 RDP Δ²/σ² of output perturbation with Δ = 2·L·R/(nλ) " +
	"(R = max ‖x̃‖ over the training data incl. bias unless --radius is given, L = sup|ℓ'|: 1 for logistic, " +
	"1 + R·√(1/λ) for least squares); " +
	"eps2_paper is Guo et al.'s 2/(nλσ), which is linear in 1/σ and ignores R, so it is not the order-2 RDP"

type glmCommon struct {
	Dataset     string  `json:"dataset"`
	Source      string  `json:"source"`
	Loss        string  `json:"loss"`
	Bias        bool    `json:"bias"`
	Lambda      float64 `json:"lambda"`
	Sigma       float64 `json:"sigma"`
	N           int     `json:"n"`
	D           int     `json:"d"`
	P           int     `json:"p"`
	Accuracy    glmNum  `json:"accuracy"`
	TrainAcc    glmNum  `json:"train_accuracy"`
	GradNorm    float64 `json:"grad_norm"`
	NewtonIters int     `json:"newton_iters"`
	R           float64 `json:"r"`
	Sensitivity float64 `json:"sensitivity"`
	Eps2        glmNum  `json:"eps2"`
	MSEBoundRDP glmNum  `json:"mse_bound_rdp"`
	Eps2Paper   glmNum  `json:"eps2_paper"`
	Eps2Note    string  `json:"eps2_note"`
	FitSeconds  float64 `json:"fit_seconds"`
	OutDir      string  `json:"out_dir"`
}

func (f *glmFlags) common(s *glmSetup, sigma float64) (glmCommon, error) {
	trainAcc, testAcc, err := s.accuracies()
	if err != nil {
		return glmCommon{}, err
	}
	acc, err := s.account(sigma, f.radius)
	if err != nil {
		return glmCommon{}, err
	}
	return glmCommon{Dataset: f.dataset, Source: s.ds.Train.Source, Loss: s.loss.String(), Bias: f.bias,
		Lambda: f.lambda, Sigma: sigma, N: s.train.N, D: s.train.D, P: s.model.P,
		Accuracy: glmNum(testAcc), TrainAcc: glmNum(trainAcc), GradNorm: s.model.GradNorm, NewtonIters: s.model.Iters,
		R: acc.R, Sensitivity: acc.Sensitivity, Eps2: glmNum(acc.Eps2), MSEBoundRDP: glmNum(acc.MSEBoundRDP),
		Eps2Paper: glmNum(acc.Eps2Paper), Eps2Note: glmEps2Note, FitSeconds: s.fitSeconds, OutDir: f.out}, nil
}

func (c glmCommon) human(w io.Writer) {
	fmt.Fprintf(w, "dataset %s (%s): n=%d d=%d, %s loss, λ=%g, bias=%v, σ=%g\n", c.Dataset, c.Source, c.N, c.D, c.Loss, c.Lambda, c.Bias, c.Sigma)
	fmt.Fprintf(w, "fit: %d Newton iterations, ‖∇F‖ = %.3g, %.1fs; accuracy test %.4f train %.4f\n", c.NewtonIters, c.GradNorm, c.FitSeconds, float64(c.Accuracy), float64(c.TrainAcc))
	fmt.Fprintf(w, "RDP: R=%.4g, Δ=%.4g, ε₂=Δ²/σ²=%.4g → MSE ≥ %.4g (paper's 2/(nλσ) = %.4g is not the order-2 RDP)\n",
		c.R, c.Sensitivity, float64(c.Eps2), float64(c.MSEBoundRDP), float64(c.Eps2Paper))
}

// glmSyncProgress makes a progress report safe for concurrent Add calls.
type glmSyncProgress struct {
	mu sync.Mutex
	p  *progress
}

func (s *glmSyncProgress) add(n int) {
	s.mu.Lock()
	s.p.Add(int64(n), "")
	s.mu.Unlock()
}

func glmSorted(v []float64) []float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s
}

// writeCSV writes rows atomically to path.
func glmWriteCSV(path string, header []string, rows [][]string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	return atomicfile.Write(path, func(w io.Writer) error {
		cw := csv.NewWriter(w)
		_ = cw.Write(header)
		_ = cw.WriteAll(rows)
		return cw.Error()
	})
}

func glmFmt(v float64) string { return strconv.FormatFloat(v, 'g', 10, 64) }

// extremes returns the positions of the k largest and k smallest values (largest first,
// smallest last, as in Guo et al. (2022) Fig. 4: decreasing order).
func glmExtremes(v []float64, k int) (top, bottom []int) {
	order := make([]int, len(v))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return v[order[a]] > v[order[b]] })
	k = min(k, len(v))
	return order[:k], order[len(order)-k:]
}

func glmToF32(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

// glmParseColumns parses a pixel-column list such as "0-27,400,401" (0-based, inclusive
// ranges) for d input features.
func glmParseColumns(spec string, d int) ([]int, error) {
	var cols []int
	seen := map[int]bool{}
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		lo, hi := part, part
		if a, b, ok := strings.Cut(part, "-"); ok {
			lo, hi = a, b
		}
		l, err1 := strconv.Atoi(strings.TrimSpace(lo))
		h, err2 := strconv.Atoi(strings.TrimSpace(hi))
		if err1 != nil || err2 != nil || l < 0 || h < l || h >= d {
			return nil, fmt.Errorf("--columns: bad item %q (want 0-based indices or ranges in [0,%d))", part, d)
		}
		for c := l; c <= h; c++ {
			if seen[c] {
				return nil, fmt.Errorf("--columns: column %d given twice", c)
			}
			seen[c] = true
			cols = append(cols, c)
		}
	}
	return cols, nil
}

func newGLMFilCmd() *cobra.Command {
	var f glmFlags
	var columns string
	cmd := &cobra.Command{
		Use:   "fil",
		Short: "Per-example dFIL and η of an output-perturbed GLM, and the RDP bound (Guo et al. (2022) Fig. 2)",
		Long: `Fits the GLM exactly, then computes for every training example the Jacobian of the
minimiser w.r.t. its pixels (labels public), dFIL = ‖J‖_F²/(σ²d), η = ‖J‖₂/σ and the
unbiased-attacker MSE bound 1/dFIL; and the order-2 RDP ε₂ = Δ²/σ² with its bound
1/(4(e^ε₂ − 1)). The defaults are the paper's Sec. 7.1 setting (λ = σ = 1e-2, raw
pixels, no bias). Writes DIR/glm_fil.csv and PNG grids of the 8 highest- and
8 lowest-dFIL training images (DIR/glm_fil_top8.png, DIR/glm_fil_bottom8.png).
With --columns (e.g. 350-360,406) it also computes attribute-level FIL of that subset S
of pixels for every example (Hannun et al. (2021) Sec. 3.1: the FIM block of those inputs),
dFIL_S = ‖J[:,S]‖_F²/(σ²|S|) and η_S = ‖J[:,S]‖₂/σ, into DIR/glm_fil_attr.csv.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := f.setup(cmd)
			if err != nil {
				return err
			}
			c, err := f.common(s, f.sigma)
			if err != nil {
				return err
			}
			t0 := time.Now()
			an, err := glm.NewAnalysis(s.model)
			if err != nil {
				return err
			}
			pr := &glmSyncProgress{p: newProgress(int64(s.train.N), "glm fil", f.quiet)}
			fil, err := an.PerExample(f.sigma, glm.FILOptions{Progress: pr.add})
			pr.p.Finish()
			if err != nil {
				return err
			}
			filSeconds := time.Since(t0).Seconds()
			res, err := glmWriteFILOutputs(f, s, fil)
			if err != nil {
				return err
			}
			if columns != "" {
				cols, err := glmParseColumns(columns, s.train.D)
				if err != nil {
					return err
				}
				attr, err := an.AttributeFIL(f.sigma, cols, nil)
				if err != nil {
					return err
				}
				rows := make([][]string, len(attr.Indices))
				for k, i := range attr.Indices {
					rows[k] = []string{strconv.Itoa(i), strconv.Itoa(int(s.train.Y[i])), glmFmt(attr.DFIL[k]), glmFmt(attr.Eta[k]), glmFmt(1 / attr.DFIL[k])}
				}
				p := filepath.Join(f.out, "glm_fil_attr.csv")
				if err := glmWriteCSV(p, []string{"index", "label", "dfil_attr", "eta_attr", "mse_bound_attr"}, rows); err != nil {
					return err
				}
				sa := glmSorted(attr.DFIL)
				res.AttrColumns = len(cols)
				res.AttrDFILMax, res.AttrDFILMedian, res.AttrDFILMean = glmNum(sa[len(sa)-1]), glmNum(accounting.QuantileSorted(sa, 0.5)), glmNum(stat.Mean(sa, nil))
				res.Files = append(res.Files, p)
			}
			res.glmCommon = c
			res.FILSeconds = filSeconds
			return emit(cmd.OutOrStdout(), f.asJSON, res, func(w io.Writer) {
				c.human(w)
				fmt.Fprintf(w, "dFIL: max %.4g median %.4g mean %.4g → MSE bound min %.4g median %.4g (%d/%d examples with bound > 1)\n",
					float64(res.DFILMax), float64(res.DFILMedian), float64(res.DFILMean), float64(res.MSEBoundFILMin), float64(res.MSEBoundFILMedian), res.BoundAbove1, c.N)
				fmt.Fprintf(w, "η: max %.4g median %.4g; FIL took %.1fs\n", float64(res.EtaMax), float64(res.EtaMedian), res.FILSeconds)
				fmt.Fprintf(w, "wrote %s\n", strings.Join(res.Files, ", "))
			})
		},
	}
	f.register(cmd, 1e-2, false, "out/glm")
	cmd.Flags().StringVar(&columns, "columns", "", "also compute attribute-level FIL of these 0-based pixel columns (e.g. 350-360,406)")
	return cmd
}

type glmFILResult struct {
	glmCommon
	DFILMax           glmNum   `json:"dfil_max"`
	DFILMedian        glmNum   `json:"dfil_median"`
	DFILMean          glmNum   `json:"dfil_mean"`
	MSEBoundFILMin    glmNum   `json:"mse_bound_fil_min"`
	MSEBoundFILMedian glmNum   `json:"mse_bound_fil_median"`
	BoundAbove1       int      `json:"n_bound_above_1"`
	EtaMax            glmNum   `json:"eta_max"`
	EtaMedian         glmNum   `json:"eta_median"`
	LanczosMaxSteps   int      `json:"lanczos_max_steps"`
	LanczosFallbacks  int      `json:"lanczos_dense_fallbacks"`
	LanczosNotConv    int      `json:"lanczos_not_converged"`
	FILSeconds        float64  `json:"fil_seconds"`
	AttrColumns       int      `json:"attr_columns,omitempty"`
	AttrDFILMax       glmNum   `json:"attr_dfil_max,omitempty"`
	AttrDFILMedian    glmNum   `json:"attr_dfil_median,omitempty"`
	AttrDFILMean      glmNum   `json:"attr_dfil_mean,omitempty"`
	Files             []string `json:"files"`
}

func glmWriteFILOutputs(f glmFlags, s *glmSetup, fil *glm.FILResult) (*glmFILResult, error) {
	sd := glmSorted(fil.DFIL)
	se := glmSorted(fil.Eta)
	res := &glmFILResult{DFILMax: glmNum(sd[len(sd)-1]), DFILMedian: glmNum(accounting.QuantileSorted(sd, 0.5)), DFILMean: glmNum(stat.Mean(sd, nil)),
		MSEBoundFILMin: glmNum(1 / sd[len(sd)-1]), MSEBoundFILMedian: glmNum(1 / accounting.QuantileSorted(sd, 0.5)),
		EtaMax: glmNum(se[len(se)-1]), EtaMedian: glmNum(accounting.QuantileSorted(se, 0.5)),
		LanczosMaxSteps: fil.LanczosMaxSteps, LanczosFallbacks: fil.DenseFallbacks, LanczosNotConv: fil.NotConverged}
	rows := make([][]string, len(fil.DFIL))
	for k, i := range fil.Indices {
		if 1/fil.DFIL[k] > 1 {
			res.BoundAbove1++
		}
		rows[k] = []string{strconv.Itoa(i), strconv.Itoa(int(s.train.Y[i])), glmFmt(fil.DFIL[k]), glmFmt(fil.Eta[k]), glmFmt(1 / fil.DFIL[k])}
	}
	path := filepath.Join(f.out, "glm_fil.csv")
	if err := glmWriteCSV(path, []string{"index", "label", "dfil", "eta", "mse_bound"}, rows); err != nil {
		return nil, err
	}
	res.Files = append(res.Files, path)
	top, bottom := glmExtremes(fil.DFIL, 8)
	for _, part := range []struct {
		name string
		idx  []int
	}{{"glm_fil_top8.png", top}, {"glm_fil_bottom8.png", bottom}} {
		imgs := make([][]float32, len(part.idx))
		for k, pos := range part.idx {
			imgs[k] = glmToF32(s.train.Row(fil.Indices[pos]))
		}
		p := filepath.Join(f.out, part.name)
		if err := glmSaveGrid(p, imgs, s.h, s.w, 8); err != nil {
			return nil, err
		}
		res.Files = append(res.Files, p)
	}
	return res, nil
}

func newGLMAttackCmd() *cobra.Command {
	var f glmFlags
	var trials, targets int
	var seed uint64
	cmd := &cobra.Command{
		Use:   "attack",
		Short: "The GLM reconstruction attack (Balle et al.) vs the per-example FIL bound (Guo et al. (2022) Fig. 3–4)",
		Long: `Releases w̃ = w* + N(0, σ²I) --trials times (fresh noise each) and, for each target,
reconstructs its image from w̃ and the other n−1 examples (label known), reporting the
expected MSE over trials next to the FIL bound 1/dFIL. The closed-form attack needs the
constant-1 bias feature (it fixes the scale of the reconstructed input), so --bias
defaults to true here, unlike 'glm fil' (the paper's Sec. 7.1 setting). Defaults are
the paper's Sec. 7.2 setting: λ = 1e-2, σ = 1e-5, 10 000 trials.
Writes DIR/glm_attack.csv and DIR/glm_attack_top8.png / glm_attack_bottom8.png
(top row: training images, bottom row: first-trial reconstructions).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !f.bias {
				return errors.New("the GLM attack needs the bias feature: run with --bias=true")
			}
			if trials <= 0 {
				return fmt.Errorf("--trials must be positive, got %d", trials)
			}
			if targets < 0 {
				return fmt.Errorf("--targets must be ≥ 0, got %d", targets)
			}
			s, err := f.setup(cmd)
			if err != nil {
				return err
			}
			c, err := f.common(s, f.sigma)
			if err != nil {
				return err
			}
			n := s.train.N
			var tidx []int
			if targets > 0 && targets < n {
				perm := rand.New(rand.NewPCG(seed, 0x74617267)).Perm(n)
				tidx = perm[:targets]
				sort.Ints(tidx)
			} else {
				tidx = make([]int, n)
				for i := range tidx {
					tidx[i] = i
				}
			}
			t0 := time.Now()
			an, err := glm.NewAnalysis(s.model)
			if err != nil {
				return err
			}
			fil, err := an.PerExample(f.sigma, glm.FILOptions{Indices: tidx, SkipSpectral: true})
			if err != nil {
				return err
			}
			filSeconds := time.Since(t0).Seconds()
			top, bottom := glmExtremes(fil.DFIL, 8)
			var keep []int
			for _, pos := range append(append([]int(nil), top...), bottom...) {
				keep = append(keep, tidx[pos])
			}
			t1 := time.Now()
			pr := newProgress(int64(trials), "glm attack trials", f.quiet)
			att, err := attack.GLMAttack(s.model, s.train, attack.GLMAttackOptions{Sigma: f.sigma, Trials: trials,
				Targets: tidx, Seed: seed, Keep: keep, Progress: func(k int) { pr.Add(int64(k), "") }})
			pr.Finish()
			if err != nil {
				return err
			}
			res := &glmAttackResult{glmCommon: c, Trials: trials, Targets: len(tidx), Seed: seed,
				FILSeconds: filSeconds, AttackSeconds: time.Since(t1).Seconds(), NonFiniteTrials: att.NonFinite}
			if err := res.fill(f, s, tidx, fil, att, top, bottom); err != nil {
				return err
			}
			return emit(cmd.OutOrStdout(), f.asJSON, res, func(w io.Writer) {
				c.human(w)
				fmt.Fprintf(w, "attack: %d trials × %d targets in %.1fs (FIL %.1fs); non-finite trials: %d\n", trials, len(tidx), res.AttackSeconds, res.FILSeconds, res.NonFiniteTrials)
				fmt.Fprintf(w, "realised MSE median %.4g; FIL bound median %.4g; corr(log bound, log MSE) = %.3f\n", float64(res.MSEMedian), float64(res.BoundMedian), float64(res.LogCorr))
				fmt.Fprintf(w, "bound violations (realised < 1/dFIL): %d of %d; among the %d examples with bound < 1: %d\n", res.Violations, len(tidx), res.BoundBelow1, res.ViolationsBelow1)
				fmt.Fprintf(w, "wrote %s\n", strings.Join(res.Files, ", "))
			})
		},
	}
	f.register(cmd, 1e-5, true, "out/glm")
	cmd.Flags().IntVar(&trials, "trials", 10000, "independent releases (fresh noise each)")
	cmd.Flags().IntVar(&targets, "targets", 0, "attack this many randomly chosen training examples (0 = all)")
	addSeedFlag(cmd, &seed)
	return cmd
}

type glmAttackResult struct {
	glmCommon
	Trials           int      `json:"trials"`
	Targets          int      `json:"targets"`
	Seed             uint64   `json:"seed"`
	MSEMedian        glmNum   `json:"mse_median"`
	MSEMean          glmNum   `json:"mse_mean"`
	BoundMedian      glmNum   `json:"mse_bound_fil_median"`
	DFILMax          glmNum   `json:"dfil_max"`
	DFILMedian       glmNum   `json:"dfil_median"`
	DFILMean         glmNum   `json:"dfil_mean"`
	Violations       int      `json:"violations"`
	BoundBelow1      int      `json:"n_bound_below_1"`
	ViolationsBelow1 int      `json:"violations_bound_below_1"`
	NonFiniteTrials  int      `json:"nonfinite_trials"`
	AllNonFinite     int      `json:"targets_all_nonfinite"`
	LogCorr          glmNum   `json:"log_corr"`
	FILSeconds       float64  `json:"fil_seconds"`
	AttackSeconds    float64  `json:"attack_seconds"`
	Files            []string `json:"files"`
}

func (res *glmAttackResult) fill(f glmFlags, s *glmSetup, tidx []int, fil *glm.FILResult, att *attack.GLMAttackResult, top, bottom []int) error {
	var finiteMSE []float64
	var lb, lm []float64
	rows := make([][]string, len(tidx))
	for k, i := range tidx {
		bound := 1 / fil.DFIL[k]
		mse := att.MSE[k]
		viol := false
		if math.IsNaN(mse) {
			res.AllNonFinite++
		} else {
			finiteMSE = append(finiteMSE, mse)
			if mse < bound {
				viol = true
				res.Violations++
			}
			if mse > 0 && bound > 0 {
				lb = append(lb, math.Log(bound))
				lm = append(lm, math.Log(mse))
			}
		}
		if bound < 1 {
			res.BoundBelow1++
			if viol {
				res.ViolationsBelow1++
			}
		}
		rows[k] = []string{strconv.Itoa(i), strconv.Itoa(int(s.train.Y[i])), glmFmt(fil.DFIL[k]), glmFmt(bound), glmFmt(mse),
			glmFmt(att.MSEStdErr[k]), strconv.Itoa(att.Finite[k]), strconv.FormatBool(viol)}
	}
	sd := glmSorted(fil.DFIL)
	res.DFILMax, res.DFILMedian, res.DFILMean = glmNum(sd[len(sd)-1]), glmNum(accounting.QuantileSorted(sd, 0.5)), glmNum(stat.Mean(sd, nil))
	res.BoundMedian = glmNum(1 / accounting.QuantileSorted(sd, 0.5))
	sm := glmSorted(finiteMSE)
	res.MSEMedian, res.MSEMean = glmNum(accounting.QuantileSorted(sm, 0.5)), glmNum(math.NaN())
	if len(sm) > 0 {
		res.MSEMean = glmNum(stat.Mean(sm, nil))
	}
	res.LogCorr = glmNum(glmPearson(lb, lm))
	path := filepath.Join(f.out, "glm_attack.csv")
	if err := glmWriteCSV(path, []string{"index", "label", "dfil", "mse_bound", "mse_realised", "mse_stderr", "finite_trials", "violation"}, rows); err != nil {
		return err
	}
	res.Files = append(res.Files, path)
	for _, part := range []struct {
		name string
		pos  []int
	}{{"glm_attack_top8.png", top}, {"glm_attack_bottom8.png", bottom}} {
		imgs := make([][]float32, 0, 2*len(part.pos))
		for _, p := range part.pos {
			imgs = append(imgs, glmToF32(s.train.Row(tidx[p])))
		}
		for _, p := range part.pos {
			imgs = append(imgs, glmToF32(att.Reconstructions[tidx[p]]))
		}
		out := filepath.Join(f.out, part.name)
		if err := glmSaveGrid(out, imgs, s.h, s.w, len(part.pos)); err != nil {
			return err
		}
		res.Files = append(res.Files, out)
	}
	return nil
}

func glmPearson(x, y []float64) float64 {
	if len(x) < 2 {
		return math.NaN()
	}
	return stat.Correlation(x, y, nil)
}

func glmParseClamp(s string) (lo, hi float64, err error) {
	if s == "" {
		return 0, 0, nil
	}
	parts := strings.Split(s, ",")
	if len(parts) != 2 {
		return 0, 0, fmt.Errorf("--clamp wants lo,hi, got %q", s)
	}
	if lo, err = strconv.ParseFloat(strings.TrimSpace(parts[0]), 64); err != nil {
		return 0, 0, fmt.Errorf("--clamp lo: %w", err)
	}
	if hi, err = strconv.ParseFloat(strings.TrimSpace(parts[1]), 64); err != nil {
		return 0, 0, fmt.Errorf("--clamp hi: %w", err)
	}
	if !(lo > 0 && hi >= lo) || math.IsInf(hi, 0) {
		return 0, 0, fmt.Errorf("--clamp needs 0 < lo ≤ hi < ∞, got %q", s)
	}
	return lo, hi, nil
}

func newGLMIRFILCmd() *cobra.Command {
	var f glmFlags
	var iters int
	var clamp string
	cmd := &cobra.Command{
		Use:   "irfil",
		Short: "Iteratively reweighted FIL (Hannun et al. (2021) Algorithm 1): equalise per-example η",
		Long: `Runs IRFIL: refit with per-example weights ω, compute every η_i = ‖J_i‖₂/σ of the
weighted model, update ω_i ← n(ω_i/η_i)/Σ_j(ω_j/η_j), optionally clamp the weights to
[lo, hi], repeat. Reports the η spread (std/mean) and accuracy per iteration and writes
DIR/glm_irfil.csv (per iteration) and DIR/glm_irfil_weights.csv (final weights and η).
σ defaults to 1 as in Hannun et al. (2021) (η then equals ‖J‖₂).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			lo, hi, err := glmParseClamp(clamp)
			if err != nil {
				return err
			}
			if iters < 0 {
				return fmt.Errorf("--iters must be ≥ 0, got %d", iters)
			}
			s, err := f.setup(cmd)
			if err != nil {
				return err
			}
			c, err := f.common(s, f.sigma)
			if err != nil {
				return err
			}
			pr := newProgress(int64(iters+1), "irfil iterations", f.quiet)
			t0 := time.Now()
			res, err := glm.IRFIL(s.train, glm.IRFILOptions{Config: s.model.Config, Sigma: f.sigma, Iters: iters,
				ClampLo: lo, ClampHi: hi, Test: s.test,
				Progress: func(it glm.IRFILIteration) { pr.Add(1, fmt.Sprintf("spread %.4g", it.Spread)) }})
			pr.Finish()
			if err != nil {
				return err
			}
			out := &glmIRFILResult{glmCommon: c, Iters: iters, ClampLo: lo, ClampHi: hi, Iterations: res.Iterations,
				SpreadInitial: res.Iterations[0].Spread, SpreadFinal: res.Iterations[len(res.Iterations)-1].Spread,
				Seconds: time.Since(t0).Seconds()}
			if err := out.write(f, s, res); err != nil {
				return err
			}
			return emit(cmd.OutOrStdout(), f.asJSON, out, func(w io.Writer) {
				c.human(w)
				fmt.Fprintf(w, "iter  eta_mean    spread     train_acc  test_acc  weights[min,max]  clamped\n")
				for _, it := range res.Iterations {
					fmt.Fprintf(w, "%4d  %.4g  %.4g  %.4f  %.4f  [%.3g, %.3g]  %d\n", it.Iter, it.EtaMean, it.Spread, it.TrainAcc, it.TestAcc, it.WeightMin, it.WeightMax, it.Clamped)
				}
				fmt.Fprintf(w, "η spread (std/mean): %.4g → %.4g in %.1fs; wrote %s\n", out.SpreadInitial, out.SpreadFinal, out.Seconds, strings.Join(out.Files, ", "))
			})
		},
	}
	f.register(cmd, 1, false, "out/glm")
	cmd.Flags().IntVar(&iters, "iters", 15, "re-weighting iterations")
	cmd.Flags().StringVar(&clamp, "clamp", "", "clamp weights to lo,hi after each update (e.g. 0.01,100; empty = no clamp)")
	return cmd
}

type glmIRFILResult struct {
	glmCommon
	Iters         int                  `json:"iters"`
	ClampLo       float64              `json:"clamp_lo"`
	ClampHi       float64              `json:"clamp_hi"`
	SpreadInitial float64              `json:"spread_initial"`
	SpreadFinal   float64              `json:"spread_final"`
	Iterations    []glm.IRFILIteration `json:"iterations"`
	Seconds       float64              `json:"seconds"`
	Files         []string             `json:"files"`
}

func (o *glmIRFILResult) write(f glmFlags, s *glmSetup, res *glm.IRFILResult) error {
	rows := make([][]string, len(res.Iterations))
	for k, it := range res.Iterations {
		rows[k] = []string{strconv.Itoa(it.Iter), glmFmt(it.EtaMean), glmFmt(it.EtaStd), glmFmt(it.Spread), glmFmt(it.EtaMin), glmFmt(it.EtaMax),
			glmFmt(it.WeightMin), glmFmt(it.WeightMax), strconv.Itoa(it.Clamped), glmFmt(it.TrainAcc), glmFmt(it.TestAcc), glmFmt(it.GradNorm)}
	}
	p := filepath.Join(f.out, "glm_irfil.csv")
	if err := glmWriteCSV(p, []string{"iter", "eta_mean", "eta_std", "spread", "eta_min", "eta_max", "weight_min", "weight_max", "clamped", "train_accuracy", "test_accuracy", "grad_norm"}, rows); err != nil {
		return err
	}
	o.Files = append(o.Files, p)
	wrows := make([][]string, len(res.Weights))
	for i, w := range res.Weights {
		wrows[i] = []string{strconv.Itoa(i), strconv.Itoa(int(s.train.Y[i])), glmFmt(w), glmFmt(res.Eta[i])}
	}
	p = filepath.Join(f.out, "glm_irfil_weights.csv")
	if err := glmWriteCSV(p, []string{"index", "label", "weight", "eta"}, wrows); err != nil {
		return err
	}
	o.Files = append(o.Files, p)
	return nil
}

// glmSaveGrid writes grey-scale h×w images as a PNG grid with cols per row, each pixel
// drawn 3×3 (NaN reconstructions show mid-grey).
func glmSaveGrid(path string, imgs [][]float32, h, w, cols int) error {
	img, err := plot.ImageGrid(imgs, 1, h, w, plot.GridOptions{Cols: cols, Scale: 3, Pad: 1})
	if err != nil {
		return err
	}
	return plot.SavePNG(path, img)
}
