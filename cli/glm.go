package cli

import (
	"fmt"
	"strings"

	"github.com/dpfil/dpfil/attack"
	"github.com/dpfil/dpfil/data"
	"github.com/dpfil/dpfil/glm"
	"github.com/spf13/cobra"
)

// newGLMCmd is the 'glm' command group: output-perturbed GLMs (Guo et al. 2022,
// Sec. 7.1–7.2; Hannun et al. 2021).
func newGLMCmd() *cobra.Command {
	return group(&cobra.Command{
		Use:   "glm",
		Short: "Output-perturbed GLMs: per-example FIL, the GLM reconstruction attack, IRFIL",
		Long: `Output-perturbed L2-regularised logistic / least-squares regression on a binary
dataset (mnist01-embedded, mnist01, fashion01): w̃ = w* + N(0, σ²I) with
w* = argmin Σℓ(wᵀx̃_i, y_i) + (nλ/2)‖w‖², features = raw pixels in [0,1]
(optionally with a constant-1 bias feature), or for 'fil' and 'irfil' with --pca K
Hannun et al.'s (2021) unit-ball + PCA-K features. Details: docs/glm.md.`,
	}, newGLMFilCmd(), newGLMAttackCmd(), newGLMIRFILCmd(), newGLMInvertCmd())
}

// bindGLMSetup binds the flags shared by the glm subcommands to s and quiet, with
// the command's defaults of σ and --bias.
func bindGLMSetup(cmd *cobra.Command, s *glm.Setup, quiet *bool, sigma float64, bias bool) {
	fl := cmd.Flags()
	fl.StringVar(&s.Dataset, "dataset", "mnist01-embedded", "binary dataset: mnist01-embedded, mnist01 or fashion01, or your own with labels 0/1: "+strings.Join(data.UserDatasetForms(), ", ")+" (docs/data.md)")
	fl.StringVar(&s.DataDir, "data-dir", "", "directory holding the dataset's files (searched first)")
	fl.Float64Var(&s.Lambda, "lambda", 1e-2, "L2 regularisation λ (objective Σℓ + (nλ/2)‖w‖²)")
	fl.Float64Var(&s.Sigma, "sigma", sigma, "output-perturbation noise standard deviation σ")
	fl.BoolVar(&s.Bias, "bias", bias, "append a constant-1 bias feature")
	fl.StringVar(&s.Loss, "loss", "logistic", "loss: logistic (labels 0/1) or lsq (least squares, targets ±1)")
	fl.StringVar(&s.Out, "out", "out/glm", "output directory for CSV and PNG files")
	fl.IntVar(&s.TrainSubset, "train-subset", 0, "use only the first N training examples (0 = all)")
	fl.Float64Var(&s.Radius, "radius", 0, "input norm bound R for the RDP accounting, incl. the bias feature (0 = max ‖x̃‖ over the training data, see docs/glm.md; use √d or √(d+1) for the whole [0,1]^d domain)")
	addQuietFlag(cmd, quiet)
}

// bindHannunFlags binds the feature and FIL options of Hannun et al. (2021) that
// 'glm fil' and 'glm irfil' take.
func bindHannunFlags(cmd *cobra.Command, s *glm.Setup) {
	fl := cmd.Flags()
	fl.IntVar(&s.PCA, "pca", 0, "features: scale the training images into the unit ball and project onto this many principal components (Hannun et al. 2021 use 20; 0 = raw pixels); the test split goes through the same map")
	fl.BoolVar(&s.WithLabel, "with-label", false, "take the per-example FIL over (x, y), the label included, as Hannun et al.'s η (default: labels public, as Guo et al.)")
}

// glmCmd completes c, a glm subcommand of the GLM fitted from s: no arguments,
// --json, the setup flags (bindGLMSetup, with the command's defaults of σ and
// --bias) and --quiet, and a RunE that logs s's steps to stderr and calls run.
func glmCmd[R any, P report[R]](c *cobra.Command, s *glm.Setup, sigma float64, bias bool, run func(quiet bool) (P, error)) *cobra.Command {
	var quiet bool
	c.Args = cobra.NoArgs
	cmd := reportCmd(c, func(cmd *cobra.Command, _ []string) (P, error) {
		s.Logf = stderrLogf(cmd, quiet)
		return run(quiet)
	})
	bindGLMSetup(cmd, s, &quiet, sigma, bias)
	return cmd
}

func newGLMFilCmd() *cobra.Command {
	var e glm.FILExperiment
	cmd := glmCmd(&cobra.Command{
		Use:   "fil",
		Short: "Per-example dFIL and η of an output-perturbed GLM, and the RDP bound (Guo et al. (2022) Fig. 2)",
		Long: `Fits the GLM exactly, then computes for every training example the Jacobian of the
minimiser w.r.t. its pixels (labels public), dFIL = ‖J‖_F²/(σ²d), η = ‖J‖₂/σ and the
unbiased-attacker MSE bound 1/dFIL; and the order-2 RDP ε₂ = Δ²/σ² with its bound
1/(4(e^ε₂ − 1)). Defaults: the paper's Sec. 7.1 setting (λ = σ = 1e-2, raw pixels,
no bias). Writes DIR/glm_fil.csv and DIR/glm_fil_top8.png / glm_fil_bottom8.png (the
8 highest- and lowest-dFIL training images). --columns S adds the attribute-level FIL
of those pixels (Hannun et al. (2021) Sec. 3.1: the FIM block of those inputs),
dFIL_S = ‖J[:,S]‖_F²/(σ²|S|) and η_S = ‖J[:,S]‖₂/σ, in DIR/glm_fil_attr.csv.
Hannun et al. (2021) Sec. 6: --pca 20 --with-label --sigma 1 gives their η over (x, y)
on unit-ball + PCA-20 features; the report has η mean ± std overall and per label
(Table 1, Fig. 2: DIR/glm_eta_hist.png), the 8 largest/smallest-η images
(glm_eta_top8.png / glm_eta_bottom8.png, Fig. 3) and η against the per-example loss
and gradient norm (the loss and grad_norm columns of glm_fil.csv, Fig. 4).`,
	}, &e.Setup, 1e-2, false, func(quiet bool) (*glm.FILReport, error) {
		pr := &lazyProgress{label: "glm fil", quiet: quiet}
		defer pr.finish()
		e.Progress = pr.add
		return glm.RunFIL(e)
	})
	bindHannunFlags(cmd, &e.Setup)
	cmd.Flags().StringVar(&e.WriteFeatures, "write-features", "", "also write the model's training features (z1…zK with --pca, else p0…) and its target (label 0/1 for logistic, target ±1 for lsq) to this CSV, the table 'glm invert --csv FILE' reads")
	cmd.Flags().StringVar(&e.Columns, "columns", "", "also compute attribute-level FIL of these 0-based feature columns (pixels, or PCA components with --pca; e.g. 350-360,406)")
	return cmd
}

func newGLMAttackCmd() *cobra.Command {
	var e attack.GLMExperiment
	cmd := glmCmd(&cobra.Command{
		Use:   "attack",
		Short: "The GLM reconstruction attack (Balle et al.) vs the per-example FIL bound (Guo et al. (2022) Fig. 3–4)",
		Long: `Releases w̃ = w* + N(0, σ²I) --trials times (fresh noise each) and, for each target,
reconstructs its image from w̃ and the other n−1 examples (label known), reporting the
expected MSE over trials next to the FIL bound 1/dFIL. The closed-form attack needs the
constant-1 bias feature (it fixes the scale of the reconstructed input), so --bias
defaults to true here. Defaults: the paper's Sec. 7.2 setting (λ = 1e-2, σ = 1e-5,
10 000 trials). Writes DIR/glm_attack.csv and DIR/glm_attack_top8.png /
glm_attack_bottom8.png (training images over first-trial reconstructions).`,
	}, &e.Setup, 1e-5, true, func(quiet bool) (*attack.GLMReport, error) {
		pr := newProgress(int64(e.Trials), "glm attack trials", quiet)
		defer pr.Finish()
		e.Progress = func(k int) { pr.Add(int64(k), "") }
		return attack.RunGLMExperiment(e)
	})
	cmd.Flags().IntVar(&e.Trials, "trials", 10000, "independent releases (fresh noise each)")
	cmd.Flags().IntVar(&e.Targets, "targets", 0, "attack this many randomly chosen training examples (0 = all)")
	addSeedFlag(cmd, &e.Seed)
	return cmd
}

func newGLMIRFILCmd() *cobra.Command {
	var e glm.IRFILExperiment
	cmd := glmCmd(&cobra.Command{
		Use:   "irfil",
		Short: "Iteratively reweighted FIL (Hannun et al. (2021) Algorithm 1): equalise per-example η",
		Long: `Runs IRFIL: refit with per-example weights ω, compute every η_i = ‖J_i‖₂/σ of the
weighted model, update ω_i ← n(ω_i/η_i)/Σ_j(ω_j/η_j), optionally clamp the weights to
[lo, hi], repeat. Reports the η spread (std/mean) and accuracy per iteration and writes
DIR/glm_irfil.csv (per iteration) and DIR/glm_irfil_weights.csv (final weights and η).
σ defaults to 1 as in Hannun et al. (2021) (η then equals ‖J‖₂); their Table 1 and
Fig. 5 setting adds --pca 20 --with-label.`,
	}, &e.Setup, 1, false, func(quiet bool) (*glm.IRFILReport, error) {
		pr := newProgress(int64(e.Iters+1), "irfil iterations", quiet)
		defer pr.Finish()
		e.Progress = func(it glm.IRFILIteration) { pr.Add(1, fmt.Sprintf("spread %.4g", it.Spread)) }
		return glm.RunIRFIL(e)
	})
	bindHannunFlags(cmd, &e.Setup)
	cmd.Flags().IntVar(&e.Iters, "iters", 15, "re-weighting iterations")
	cmd.Flags().Float64SliceVar(&e.Clamp, "clamp", nil, "clamp weights to lo,hi after each update (e.g. 0.01,100; empty = no clamp)")
	return cmd
}

func newGLMInvertCmd() *cobra.Command {
	var e attack.InvertExperiment
	var quiet bool
	cmd := reportCmd(&cobra.Command{
		Use:   "invert",
		Short: "Attribute inversion (white-box and black-box) of an output-perturbed GLM, with its FIL prediction",
		Long: `Attribute inversion (Hannun et al. 2021, "Measuring Data Leakage in Machine-Learning
Models with Fisher Information", Sec. 6.4; Fredrikson et al. 2014). A GLM is fitted on a
table (--csv FILE, a generated --synthetic iwpc|adult table, or a binary image dataset
with pixel columns) and released as w̃ = w* + N(0, σ²I). For each attacked row the
adversaries recover the attribute x[S] (--columns, or --block for an image patch):
  white-box  x̂ = argmin_v ‖w̃ − f(D with x_i[S] = v)‖ (refits; knows all other data)
  black-box  x̂ = argmax_v p(v)·π(w̃ᵀz̃(x_i with v), y_i) (predictions + prior; Fredrikson)
  baseline   the prior's mode (discrete) or mean (continuous)
The attribute's FIL predicts the white-box error: per-coordinate MSE ≈ CRB =
Tr(I_S⁻¹)/|S| ≥ 1/dFIL ≥ 1/η². Preprocessing (--unit-ball, --pca; Hannun et al. 2021,
Sec. 6.1), --irfil and measurements: docs/glm.md.`,
		Args: cobra.NoArgs,
	}, func(cmd *cobra.Command, _ []string) (*attack.InvertReport, error) {
		e.Logf = stderrLogf(cmd, quiet)
		pr := &lazyProgress{label: "glm invert", quiet: quiet}
		defer pr.finish()
		e.Progress = pr.add
		return attack.RunInvert(cmd.Context(), e)
	})
	bindInvertFlags(cmd, &e)
	addQuietFlag(cmd, &quiet)
	return cmd
}

// bindInvertFlags binds the flags of 'glm invert' to e, with their defaults.
func bindInvertFlags(cmd *cobra.Command, e *attack.InvertExperiment) {
	fl := cmd.Flags()
	fl.StringVar(&e.Dataset, "dataset", "mnist01-embedded", "binary image dataset (pixel columns p0…p783) when neither --csv nor --synthetic is given: mnist01-embedded, mnist01, fashion01, or your own with labels 0/1: "+strings.Join(data.UserDatasetForms(), ", "))
	fl.StringVar(&e.DataDir, "data-dir", "", "directory holding the dataset's files (searched first)")
	fl.StringVar(&e.CSVPath, "csv", "", "read the table from this CSV file (header row; numbers only; nominal features one-hot encoded)")
	fl.StringVar(&e.Target, "target", "", "target column of --csv (default: the last column)")
	fl.StringVar(&e.Synthetic, "synthetic", "", "generate a table instead: iwpc (real target, 3-level one-hot attribute vkorc1_a,vkorc1_b) or adult (binary target, binary attribute married)")
	fl.IntVar(&e.Rows, "rows", 0, "rows of the --synthetic table (0 = 1000); with --dataset/--csv use only the first N rows (0 = all)")
	fl.StringVar(&e.WriteCSV, "write-csv", "", "also write the table (as loaded, before preprocessing) to this CSV file")
	fl.StringVar(&e.Loss, "loss", "auto", "logistic (targets 0/1), lsq (least squares on the targets as given) or auto (logistic when every target is 0/1)")
	fl.Float64Var(&e.Lambda, "lambda", 1e-2, "L2 regularisation λ (objective Σℓ + (nλ/2)‖w‖²)")
	fl.Float64Var(&e.Sigma, "sigma", 1e-2, "output-perturbation noise standard deviation σ")
	fl.BoolVar(&e.Bias, "bias", true, "append a constant-1 bias feature")
	fl.BoolVar(&e.UnitBall, "unit-ball", true, "scale the features so that max ‖x_i‖ = 1 (Hannun et al. 2021, Sec. 6.1)")
	fl.IntVar(&e.PCA, "pca", 0, "project the (scaled) features onto this many principal components (Hannun et al. use 20 for images; 0 = off)")
	fl.StringVar(&e.Columns, "columns", "", "attacked attribute: column names or 0-based indices/ranges, comma-separated (default: vkorc1_a,vkorc1_b / married for the synthetic tables)")
	fl.IntSliceVar(&e.Block, "block", nil, "attacked attribute for images: a pixel block ROW,COL,H,W (0-based)")
	fl.StringVar(&e.AttrType, "attr-type", "auto", "discrete (candidates = the observed values), continuous (Gaussian prior, Gauss–Newton) or auto (discrete when ≤ 10 distinct values)")
	fl.IntVar(&e.Targets, "targets", 50, "attack this many rows chosen at random from --seed (0 = all)")
	fl.IntVar(&e.Trials, "trials", 100, "independent releases (fresh noise each) per target")
	fl.BoolVar(&e.SharedReleases, "shared-releases", false, "attack every target in the same --trials releases (as one deployment exposes all rows) instead of independent releases per target")
	fl.IntVar(&e.IRFIL, "irfil", 0, "reweight the examples by this many iterations of attribute-level IRFIL before releasing (0 = off)")
	fl.Float64SliceVar(&e.Box, "box", nil, "clip the white-box iterates to LO,HI (e.g. 0,1 for pixels; default: unconstrained, as the FIL prediction assumes)")
	fl.BoolVar(&e.NoiseFree, "noise-free", false, "attack the exact minimiser (σ = 0): the white-box attack must then be exact")
	fl.StringVar(&e.Out, "out", "", "write per-target CSV (glm_invert.csv) here")
	fl.StringVar(&e.Scatter, "scatter", "", "draw realised white-box MSE vs its FIL prediction (CRB) to this PNG/SVG/PDF file")
	addSeedFlag(cmd, &e.Seed)
	cmd.MarkFlagsMutuallyExclusive("csv", "synthetic")
	cmd.MarkFlagsMutuallyExclusive("columns", "block")
	cmd.MarkFlagsMutuallyExclusive("noise-free", "irfil")
	cmd.MarkFlagsMutuallyExclusive("noise-free", "scatter")
}
