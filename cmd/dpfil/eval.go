package main

import (
	"fmt"
	"io"
	"math"

	"github.com/spf13/cobra"

	"github.com/dpfil/dpfil/train"
)

func newEvalCmd() *cobra.Command {
	var (
		req    train.EvalRequest
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "eval --run DIR",
		Short: "Evaluate a trained model: accuracy, per-class accuracy, loss",
		Long: `Evaluate the final parameters of a finished run (DIR/result.json and its parameter
files) on its own test data, or on --dataset: accuracy, mean cross-entropy and
per-class accuracy, computed exactly as training reported them. On the run's own
test part it also says whether the run's reported test accuracy is reproduced.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			req.Logf = trainLogf(cmd, asJSON)
			res, err := train.EvaluateRun(req)
			if err != nil {
				return err
			}
			return emit(cmd.OutOrStdout(), asJSON, res, func(w io.Writer) { printEval(w, res) })
		},
	}
	f := cmd.Flags()
	f.StringVar(&req.Run, "run", "", "run directory (result.json and parameters) (required)")
	f.StringVar(&req.Dataset, "dataset", "", "dataset to evaluate on (default: the run's)")
	f.StringVar(&req.DataDir, "data-dir", "", "directory holding the dataset files (default: the run's)")
	f.StringVar(&req.Split, "split", "test", "part of the dataset: test or train")
	f.IntVar(&req.Repeat, "repeat", 0, "which repeat's parameters")
	f.StringVar(&req.Device, "device", "cpu", "cpu or cuda")
	_ = cmd.MarkFlagRequired("run")
	addJSONFlag(cmd, &asJSON)
	return cmd
}

// printEval is the human summary of 'eval'.
func printEval(w io.Writer, r *train.EvalReport) {
	fmt.Fprintf(w, "%s (arch %s, repeat %d, %s) on %s %s (%d samples)\n", r.Model, r.ArchHash, r.Repeat, r.ParamsFile, r.Dataset, r.Split, r.Eval.N)
	fmt.Fprintf(w, "accuracy  %.4f\nloss      %.4f\n", r.Eval.Accuracy, r.Eval.Loss)
	fmt.Fprintf(w, "per class")
	for c, a := range r.Eval.PerClass {
		name := fmt.Sprint(c)
		if c < len(r.ClassNames) {
			name = r.ClassNames[c]
		}
		if math.IsNaN(a) {
			fmt.Fprintf(w, "  %s: –", name)
		} else {
			fmt.Fprintf(w, "  %s: %.3f", name, a)
		}
	}
	fmt.Fprintln(w)
	if r.Reported != nil {
		verdict := "reproduced exactly"
		if !*r.Reproduced {
			verdict = "NOT reproduced"
		}
		fmt.Fprintf(w, "the run reported test accuracy %.4f: %s\n", *r.Reported, verdict)
	}
}
