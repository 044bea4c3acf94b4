package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/dpfil/dpfil/models"
	"github.com/dpfil/dpfil/models/enginebench"
	"github.com/dpfil/dpfil/models/oracle"
	"github.com/dpfil/dpfil/train"
	"github.com/spf13/cobra"
)

// describeModel is train --describe: the architecture as text or JSON.
func describeModel(cmd *cobra.Command, cfg train.Config, archFile string, asJSON bool, logf func(string, ...any)) error {
	arch, err := train.ResolveArch(cfg, archFile, logf)
	if err != nil {
		return err
	}
	info, err := arch.Info()
	if err != nil {
		return err
	}
	if asJSON {
		return emit(cmd.OutOrStdout(), true, info, nil)
	}
	if err := arch.Describe(cmd.OutOrStdout()); err != nil {
		return err
	}
	fmt.Fprintln(cmd.OutOrStdout(), models.InitDoc)
	return nil
}

func newArchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "arch",
		Short: "Architectures: the layer kinds and how a file describes a network",
		Long: `An architecture file (YAML, or JSON) lists layers for train --arch FILE:

  name: conv3-relu
  input: [1, 28, 28]      # optional: C, H, W (default: the dataset's)
  classes: 10             # optional (default: the dataset's)
  layers:
    - {kind: conv, out: 16, kernel: 3, stride: 1, padding: same}
    - relu
    - {kind: avgpool, kernel: 2, stride: 2}
    - flatten
    - {kind: dense}       # the last dense layer's out defaults to the classes

A layer is a kind name or a mapping with kind and the fields that kind uses
('dpfil arch layers'); kernel sets kh and kw, padding is same, valid or a number
(or give pad_t, pad_b, pad_l, pad_r). Stride defaults to 1. Unknown keys, fields a
kind does not use, and layers that do not fit their input are refused.
'dpfil train --arch FILE --describe' prints the resolved network.`,
	}
	var asJSON bool
	layers := &cobra.Command{
		Use:   "layers",
		Short: "List the layer kinds with their fields",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out, err := models.LayerKindInfos()
			if err != nil {
				return err
			}
			return emit(cmd.OutOrStdout(), asJSON, map[string]any{"layers": out}, func(w io.Writer) {
				for _, l := range out {
					f := "no fields"
					if len(l.Fields) > 0 {
						f = "fields: " + strings.Join(l.Fields, ", ")
					}
					fmt.Fprintf(w, "%-10s %s (%s)\n", l.Kind, l.Doc, f)
				}
			})
		},
	}
	addJSONFlag(layers, &asJSON)
	cmd.AddCommand(layers)
	return cmd
}

// newBenchCmd is the 'bench' command group.
func newBenchCmd() *cobra.Command {
	return group(&cobra.Command{
		Use:   "bench",
		Short: "Benchmarks of the engine",
	}, newBenchEngineCmd(), newBenchScalingCmd())
}

func newBenchScalingCmd() *cobra.Command {
	var (
		model, archFile, plotDir, plotExt string
		req                               enginebench.ScalingRequest
	)
	def := enginebench.DefaultScaling(models.Arch{})
	cmd := reportCmd(&cobra.Command{
		Use:   "scaling",
		Short: "How the CPU engine's cost grows with the batch size, the conv width and the FIL coordinates k",
		Long: `Measures, in one run: CPU and wall time and the peak heap of a DP-SGD step's gradient
work (clipped per-sample gradient sum, a fresh model per batch size) against the batch
size; its time against the conv layers' width (output channels × each --widths
factor); and the FIL step's time against k. Each point stands beside the FLOP model's
prediction (models.CountFLOPs at the engine's SGEMM rate per CPU-second, measured in
the same run). --plot-dir writes the figures.`,
		Args: cobra.NoArgs,
	}, func(*cobra.Command, []string) (*enginebench.ScalingReport, error) {
		var err error
		if archFile != "" {
			spec, lerr := models.LoadArchSpec(archFile)
			if lerr != nil {
				return nil, lerr
			}
			req.Arch, err = spec.Resolve(models.Shape{}, 0)
		} else {
			req.Arch, err = models.ArchByName(model)
		}
		if err != nil {
			return nil, err
		}
		rep, err := enginebench.Scaling(req)
		if err != nil || plotDir == "" {
			return rep, err
		}
		rep.Plots, err = enginebench.ScalingPlots(rep, plotDir, plotExt)
		return rep, err
	})
	f := cmd.Flags()
	f.StringVar(&model, "model", "mnist-cnn", fmt.Sprintf("architecture %v", models.ArchNames()))
	f.StringVar(&archFile, "arch", "", "the base architecture from this YAML/JSON file (with input and classes) instead of --model")
	cmd.MarkFlagsMutuallyExclusive("model", "arch")
	f.IntSliceVar(&req.Batches, "batches", def.Batches, "batch sizes of the step sweep (empty: none)")
	f.IntSliceVar(&req.Widths, "widths", def.Widths, "conv channel factors of the width sweep (empty: none)")
	f.IntVar(&req.WidthBatch, "width-batch", def.WidthBatch, "batch size of the width sweep")
	f.IntSliceVar(&req.Coords, "coords", def.Coords, "FIL coordinates k per sample of the FIL sweep (empty: none)")
	f.IntVar(&req.FILBatch, "fil-batch", def.FILBatch, "samples per FIL call")
	f.Float64Var(&req.Seconds, "seconds", def.Seconds, "minimum timed seconds per point (at least one call)")
	f.StringVar(&plotDir, "plot-dir", "", "write the figures into this directory")
	f.StringVar(&plotExt, "plot-format", "png", "figure format: png, svg or pdf")
	addSeedFlag(cmd, &req.Seed)
	return cmd
}

func newBenchEngineCmd() *cobra.Command {
	req := enginebench.Request{OpenDevice: train.NewModel, OracleRoute: oracle.PerSampleRoute}
	cmd := reportCmd(&cobra.Command{
		Use:   "engine",
		Short: "Per-sample-gradient and FIL-step throughput of the CPU engine vs its FLOP floor",
		Long: `Measures, in one run: gonum's 1024³ SGEMM rate (before and after, averaged), the
per-sample clipped-gradient sum of a batch (a DP-SGD step's gradient work), the FIL
step with --coords coordinates per sample, and Gorgonia's per-sample route (--oracle).
Floors are the engine's GEMM FLOPs per sample (models.CountFLOPs) at the measured
SGEMM rate; times_floor is measured time over floor time.`,
		Args: cobra.NoArgs,
	}, func(*cobra.Command, []string) (*enginebench.Report, error) { return enginebench.Run(req) })
	f := cmd.Flags()
	f.StringVar(&req.Model, "model", "mnist-cnn", fmt.Sprintf("architecture %v", models.ArchNames()))
	f.IntVar(&req.Batch, "batch", 600, "batch size")
	f.IntVar(&req.Coords, "coords", 50, "FIL coordinates per sample (k)")
	f.IntVar(&req.FILBatch, "fil-batch", 0, "samples of the batch used to time the FIL step (0 = all)")
	f.Float64Var(&req.Seconds, "seconds", 5, "minimum seconds per measurement (at least one call each)")
	f.BoolVar(&req.Oracle, "oracle", true, "also time the Gorgonia oracle's per-sample gradients")
	f.IntVar(&req.Warmup, "warmup", 2, "untimed calls of each path before the timed rounds (first calls allocate, upload, JIT-compile)")
	f.StringVar(&req.Device, "device", "cpu", "cpu, or cuda to also time the GPU backend in the same run (needs bin/dpfil-cuda)")
	f.StringVar(&req.ConvAlgo, "conv-algo", models.ConvAlgoDirect, "conv algorithm of the CPU engine's per-sample clipped gradients: direct (im2col), winograd (3×3 stride-1 layers as Winograd F(2×2,3×3)), winograd4 (as F(4×4,3×3)) or auto (per layer by the cost model)")
	addSeedFlag(cmd, &req.Seed)
	return cmd
}
