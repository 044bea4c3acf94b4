package main

import (
	"io"

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
