package main

import (
	"github.com/spf13/cobra"

	"github.com/dpfil/dpfil/train"
)

func newEvalCmd() *cobra.Command {
	var req train.EvalRequest
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
	f.StringVar(&req.Dataset, "dataset", "", "dataset to evaluate on (default: the run's)")
	f.StringVar(&req.DataDir, "data-dir", "", "directory holding the dataset files (default: the run's)")
	f.StringVar(&req.Split, "split", "test", "part of the dataset: test or train")
	f.IntVar(&req.Repeat, "repeat", 0, "which repeat's parameters")
	f.StringVar(&req.Device, "device", "cpu", "cpu or cuda")
	markRequired(cmd, "run")
	return cmd
}
