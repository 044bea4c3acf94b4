package cli

import (
	"io"

	"github.com/dpfil/dpfil/data"
	"github.com/dpfil/dpfil/train"
	"github.com/spf13/cobra"
)

func newEvalCmd(opts Options) *cobra.Command {
	req := train.EvalRequest{Models: opts.Models}
	cmd := reportCmd(&cobra.Command{
		Use:   "eval --run DIR",
		Short: "Evaluate a trained model: accuracy, per-class accuracy, loss",
		Long: `Evaluate the final parameters of a finished run (DIR/result.json and its parameter
files) on its own test data, or on --dataset: accuracy, mean cross-entropy and
per-class accuracy, computed exactly as training reported them. On the run's own
test part it also says whether the run's reported test accuracy is reproduced.`,
		Args: cobra.NoArgs,
	}, func(cmd *cobra.Command, _ []string) (*train.EvalReport, error) {
		asJSON, _ := cmd.Flags().GetBool("json")
		req.Logf = stderrLogf(cmd, asJSON)
		return train.EvaluateRun(req)
	})
	f := cmd.Flags()
	f.StringVar(&req.Run, "run", "", "run directory (result.json and parameters)")
	f.StringVar(&req.Dataset, "dataset", "", "dataset to evaluate on (default: the run's); "+data.FlagHelp())
	f.StringVar(&req.DataDir, "data-dir", "", "directory holding the dataset files (default: the run's)")
	f.StringVar(&req.Split, "split", "test", "part of the dataset: test or train")
	f.IntVar(&req.Repeat, "repeat", 0, "which repeat's parameters")
	f.StringVar(&req.Device, "device", "cpu", "cpu or cuda")
	markRequired(cmd, "run")
	return cmd
}

func newPredictCmd(opts Options) *cobra.Command {
	var (
		req    = train.PredictRequest{Models: opts.Models}
		top    int
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "predict --run DIR FILE...",
		Short: "Classify images (PNG, JPEG, GIF) or an .npy batch with a trained model",
		Long: `Classify inputs with the final parameters of a finished run. A FILE is an image
of exactly the model's size (gray for one channel, RGB for three), or an .npy array
of shape (N, C, H, W) (or (C, H, W), (N, H, W), (H, W) when the shape allows),
uint8 or floats in [0,1].`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error {
			req.Files = files
			res, err := train.Predict(req)
			if err != nil {
				return err
			}
			return emit(cmd.OutOrStdout(), asJSON, res, func(w io.Writer) { res.WriteTop(w, top) })
		},
	}
	f := cmd.Flags()
	f.StringVar(&req.Run, "run", "", "run directory (result.json and parameters)")
	f.IntVar(&req.Repeat, "repeat", 0, "which repeat's parameters")
	f.IntVar(&top, "top", 3, "classes shown per input in the human summary")
	f.StringVar(&req.Device, "device", "cpu", "cpu or cuda")
	markRequired(cmd, "run")
	addJSONFlag(cmd, &asJSON)
	return cmd
}
