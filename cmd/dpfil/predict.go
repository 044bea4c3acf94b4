package main

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dpfil/dpfil/data"
	"github.com/dpfil/dpfil/train"
)

// prediction is one input's prediction.
type prediction struct {
	File  string    `json:"file"`
	Index int       `json:"index"` // position in an .npy batch (0 for an image)
	Class int       `json:"class"`
	Name  string    `json:"name,omitempty"` // class name when the run's data had them
	Prob  float64   `json:"prob"`
	Probs []float64 `json:"probs"` // softmax over the classes
}

// predictResult is the JSON object of 'dpfil predict'.
type predictResult struct {
	Run         string       `json:"run"`
	Model       string       `json:"model"`
	Repeat      int          `json:"repeat"`
	Predictions []prediction `json:"predictions"`
}

func newPredictCmd() *cobra.Command {
	var (
		runDir, device string
		repeat, top    int
		asJSON         bool
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
			if runDir == "" {
				return fmt.Errorf("predict: --run DIR is required")
			}
			fr, err := train.LoadRun(runDir, repeat)
			if err != nil {
				return fmt.Errorf("predict: %w", err)
			}
			in := fr.Arch.Input
			var x []float32
			type origin struct {
				file  string
				index int
			}
			var from []origin
			for _, f := range files {
				if strings.EqualFold(filepath.Ext(f), ".npy") {
					n, v, err := data.ReadNPYBatch(f, in.C, in.H, in.W)
					if err != nil {
						return fmt.Errorf("predict: %w", err)
					}
					x = append(x, v...)
					for i := 0; i < n; i++ {
						from = append(from, origin{f, i})
					}
					continue
				}
				v, err := data.ReadImage(f, in.C, in.H, in.W)
				if err != nil {
					return fmt.Errorf("predict: %w", err)
				}
				x = append(x, v...)
				from = append(from, origin{f, 0})
			}
			m, err := train.NewModel(fr.Arch, device)
			if err != nil {
				return fmt.Errorf("predict: %w", err)
			}
			if c, ok := m.(io.Closer); ok {
				defer c.Close()
			}
			K := fr.Arch.Classes
			logits := make([]float32, len(from)*K)
			if err := m.Logits(fr.Params, x, len(from), logits); err != nil {
				return fmt.Errorf("predict: %w", err)
			}
			names := fr.Result.Dataset.ClassNames
			res := predictResult{Run: runDir, Model: fr.Arch.Name, Repeat: repeat}
			for i, o := range from {
				p := softmax(logits[i*K : (i+1)*K])
				best := 0
				for c := range p {
					if p[c] > p[best] {
						best = c
					}
				}
				pr := prediction{File: o.file, Index: o.index, Class: best, Prob: p[best], Probs: p}
				if best < len(names) {
					pr.Name = names[best]
				}
				res.Predictions = append(res.Predictions, pr)
			}
			return emit(cmd.OutOrStdout(), asJSON, res, func(w io.Writer) { printPredictions(w, res, names, top) })
		},
	}
	cmd.Flags().StringVar(&runDir, "run", "", "run directory (result.json and parameters)")
	cmd.Flags().IntVar(&repeat, "repeat", 0, "which repeat's parameters")
	cmd.Flags().IntVar(&top, "top", 3, "classes shown per input in the human summary")
	cmd.Flags().StringVar(&device, "device", "cpu", "cpu or cuda")
	addJSONFlag(cmd, &asJSON)
	return cmd
}

// softmax returns the probabilities of a logit row (float64, max subtracted).
func softmax(z []float32) []float64 {
	mx := math.Inf(-1)
	for _, v := range z {
		mx = math.Max(mx, float64(v))
	}
	p := make([]float64, len(z))
	var s float64
	for i, v := range z {
		p[i] = math.Exp(float64(v) - mx)
		s += p[i]
	}
	for i := range p {
		p[i] /= s
	}
	return p
}

func printPredictions(w io.Writer, r predictResult, names []string, top int) {
	label := func(c int) string {
		if c < len(names) {
			return fmt.Sprintf("%d (%s)", c, names[c])
		}
		return fmt.Sprint(c)
	}
	for _, p := range r.Predictions {
		where := p.File
		if strings.EqualFold(filepath.Ext(p.File), ".npy") {
			where = fmt.Sprintf("%s[%d]", p.File, p.Index)
		}
		order := make([]int, len(p.Probs))
		for i := range order {
			order[i] = i
		}
		sort.SliceStable(order, func(a, b int) bool { return p.Probs[order[a]] > p.Probs[order[b]] })
		var parts []string
		for _, c := range order[:min(max(top, 1), len(order))] {
			parts = append(parts, fmt.Sprintf("%s %.3f", label(c), p.Probs[c]))
		}
		fmt.Fprintf(w, "%s: %s   [%s]\n", where, label(p.Class), strings.Join(parts, ", "))
	}
}
