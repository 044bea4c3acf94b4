package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/dpfil/dpfil/models"
	"github.com/dpfil/dpfil/models/enginebench"
	"github.com/dpfil/dpfil/train"
)

// newBenchCmd is the 'bench' command group.
func newBenchCmd() *cobra.Command {
	return group(&cobra.Command{
		Use:   "bench",
		Short: "Benchmarks of the engine",
	}, newBenchEngineCmd())
}

func newBenchEngineCmd() *cobra.Command {
	req := enginebench.Request{OpenDevice: train.NewModel}
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
	f.StringVar(&req.Device, "device", "cpu", "cpu, or cuda to also time the GPU backend in the same run (needs bin/dpfil-cuda)")
	addSeedFlag(cmd, &req.Seed)
	return cmd
}
