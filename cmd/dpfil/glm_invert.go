package main

import (
	"github.com/dpfil/dpfil/glm"
	"github.com/spf13/cobra"
)

func newGLMInvertCmd() *cobra.Command {
	var e glm.InvertExperiment
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
The FIL of the attribute predicts the white-box error: per-coordinate MSE ≈ CRB =
Tr(I_S⁻¹)/|S| ≥ 1/dFIL ≥ 1/η². Features may be scaled into the unit ball and projected
onto --pca principal components first (Hannun et al. 2021, Sec. 6.1); --irfil reweights
the examples by attribute-level IRFIL before releasing.`,
		Args: cobra.NoArgs,
	}, func(cmd *cobra.Command, _ []string) (*glm.InvertReport, error) {
		e.Logf = stderrLogf(cmd, quiet)
		pr := &lazyProgress{label: "glm invert", quiet: quiet}
		defer pr.finish()
		e.Progress = pr.add
		return glm.RunInvert(cmd.Context(), e)
	})
	bindInvertFlags(cmd, &e)
	addQuietFlag(cmd, &quiet)
	return cmd
}

// bindInvertFlags binds the flags of 'glm invert' to e, with their defaults.
func bindInvertFlags(cmd *cobra.Command, e *glm.InvertExperiment) {
	fl := cmd.Flags()
	fl.StringVar(&e.Dataset, "dataset", "mnist01-embedded", "binary image dataset (pixel columns p0…p783) when neither --csv nor --synthetic is given")
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
