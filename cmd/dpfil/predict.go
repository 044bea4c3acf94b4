package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dpfil/dpfil/train"
)

func newPredictCmd() *cobra.Command {
	var (
		req    train.PredictRequest
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
			return emit(cmd.OutOrStdout(), asJSON, res, func(w io.Writer) { printPredictions(w, res, top) })
		},
	}
	f := cmd.Flags()
	f.StringVar(&req.Run, "run", "", "run directory (result.json and parameters) (required)")
	f.IntVar(&req.Repeat, "repeat", 0, "which repeat's parameters")
	f.IntVar(&top, "top", 3, "classes shown per input in the human summary")
	f.StringVar(&req.Device, "device", "cpu", "cpu or cuda")
	_ = cmd.MarkFlagRequired("run")
	addJSONFlag(cmd, &asJSON)
	return cmd
}

// printPredictions is the human summary of 'predict': each input's class and its
// top most probable classes.
func printPredictions(w io.Writer, r *train.PredictReport, top int) {
	label := func(c int) string {
		if c < len(r.ClassNames) {
			return fmt.Sprintf("%d (%s)", c, r.ClassNames[c])
		}
		return fmt.Sprint(c)
	}
	for _, p := range r.Predictions {
		var parts []string
		for _, c := range p.Top(top) {
			parts = append(parts, fmt.Sprintf("%s %.3f", label(c), p.Probs[c]))
		}
		fmt.Fprintf(w, "%s: %s   [%s]\n", p.Where(), label(p.Class), strings.Join(parts, ", "))
	}
}
