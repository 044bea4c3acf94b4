package main

import (
	"fmt"
	"io"
	"math"

	"github.com/spf13/cobra"

	"github.com/dpfil/dpfil/data"
	"github.com/dpfil/dpfil/train"
)

// evalResult is the JSON object of 'dpfil eval'.
type evalResult struct {
	Run        string           `json:"run"`
	Model      string           `json:"model"`
	ArchHash   string           `json:"arch_hash"`
	Repeat     int              `json:"repeat"`
	ParamsFile string           `json:"params_file"`
	Dataset    string           `json:"dataset"`
	Split      string           `json:"split"`
	SHA256     string           `json:"sha256"` // content fingerprint of the evaluated part
	ClassNames []string         `json:"class_names,omitempty"`
	Eval       train.Evaluation `json:"eval"`
	// Reported is the run's own test accuracy of this repeat, when the evaluated
	// data is the run's test part; Reproduced says whether Eval matches it exactly.
	Reported   *float64 `json:"reported_test_accuracy,omitempty"`
	Reproduced *bool    `json:"reproduced,omitempty"`
}

func newEvalCmd() *cobra.Command {
	var (
		runDir, dataset, dataDir, split, device string
		repeat                                  int
		asJSON                                  bool
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
			if runDir == "" {
				return fmt.Errorf("eval: --run DIR is required")
			}
			if split != "test" && split != "train" {
				return fmt.Errorf("eval: --split %q, want test or train", split)
			}
			fr, err := train.LoadRun(runDir, repeat)
			if err != nil {
				return fmt.Errorf("eval: %w", err)
			}
			cfg := fr.Result.Config
			own := dataset == ""
			if own {
				dataset = cfg.Dataset
				if dataDir == "" {
					dataDir = cfg.DataDir
				}
			}
			sp, err := data.Load(dataset, data.Options{DataDir: dataDir, Logf: trainLogf(cmd, asJSON)})
			if err != nil {
				return fmt.Errorf("eval: load dataset %s: %w", dataset, err)
			}
			ds := sp.Test
			if split == "train" {
				ds = sp.Train
			}
			if ds == nil || ds.N == 0 {
				return fmt.Errorf("eval: dataset %s has no %s part", dataset, split)
			}
			if own && cfg.DataSHA256 != "" && sp.Fingerprint() != cfg.DataSHA256 {
				return fmt.Errorf("eval: dataset %s changed since the run (fingerprint %s, the run pinned %s)", dataset, sp.Fingerprint(), cfg.DataSHA256)
			}
			m, err := train.NewModel(fr.Arch, device)
			if err != nil {
				return fmt.Errorf("eval: %w", err)
			}
			if c, ok := m.(io.Closer); ok {
				defer c.Close()
			}
			ev, err := train.Evaluate(m, fr.Params, ds)
			if err != nil {
				return fmt.Errorf("eval: %w", err)
			}
			out := evalResult{Run: runDir, Model: fr.Arch.Name, ArchHash: fr.Arch.Hash(), Repeat: repeat, ParamsFile: fr.ParamsFile,
				Dataset: dataset, Split: split, SHA256: ds.SHA256, ClassNames: ds.ClassNames, Eval: ev}
			if own && split == "test" && repeat < len(fr.Result.Repeats) && fr.Result.Dataset.TestSHA256 == ds.SHA256 {
				rep := fr.Result.Repeats[repeat].TestAccuracy
				same := rep == ev.Accuracy
				out.Reported, out.Reproduced = &rep, &same
			}
			return emit(cmd.OutOrStdout(), asJSON, out, func(w io.Writer) { printEval(w, out) })
		},
	}
	cmd.Flags().StringVar(&runDir, "run", "", "run directory (result.json and parameters)")
	cmd.Flags().StringVar(&dataset, "dataset", "", "dataset to evaluate on (default: the run's)")
	cmd.Flags().StringVar(&dataDir, "data-dir", "", "directory holding the dataset files (default: the run's)")
	cmd.Flags().StringVar(&split, "split", "test", "part of the dataset: test or train")
	cmd.Flags().IntVar(&repeat, "repeat", 0, "which repeat's parameters")
	cmd.Flags().StringVar(&device, "device", "cpu", "cpu or cuda")
	addJSONFlag(cmd, &asJSON)
	return cmd
}

func printEval(w io.Writer, r evalResult) {
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
