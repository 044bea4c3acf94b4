package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/dpfil/dpfil/models"
	"github.com/dpfil/dpfil/models/enginebench"
	"github.com/dpfil/dpfil/train"
)

// newBenchCmd is the 'bench' command group.
func newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Benchmarks of the engine",
	}
	cmd.AddCommand(newBenchEngineCmd())
	return cmd
}

func newBenchEngineCmd() *cobra.Command {
	req := enginebench.Request{OpenDevice: train.NewModel}
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "engine",
		Short: "Per-sample-gradient and FIL-step throughput of the CPU engine vs its FLOP floor",
		Long: `Measures, in one run: gonum's 1024³ SGEMM rate (before and after, averaged), the
per-sample clipped-gradient sum of a batch (a DP-SGD step's gradient work), the FIL
step with --coords coordinates per sample, and Gorgonia's per-sample route (--oracle).
Floors are the engine's GEMM FLOPs per sample (models.CountFLOPs) at the measured
SGEMM rate; times_floor is measured time over floor time.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			res, err := enginebench.Run(req)
			if err != nil {
				return fmt.Errorf("bench engine: %w", err)
			}
			return emit(cmd.OutOrStdout(), asJSON, res, func(w io.Writer) { printBenchEngine(w, res) })
		},
	}
	f := cmd.Flags()
	f.StringVar(&req.Model, "model", "mnist-cnn", fmt.Sprintf("architecture %v", models.ArchNames()))
	f.IntVar(&req.Batch, "batch", 600, "batch size")
	f.IntVar(&req.Coords, "coords", 50, "FIL coordinates per sample (k)")
	f.IntVar(&req.FILBatch, "fil-batch", 0, "samples of the batch used to time the FIL step (0 = all)")
	f.Float64Var(&req.Seconds, "seconds", 5, "minimum seconds per measurement (at least one call each)")
	f.BoolVar(&req.Oracle, "oracle", true, "also time the Gorgonia oracle's per-sample gradients")
	f.StringVar(&req.Device, "device", "cpu", "cpu, or cuda to also time the GPU backend in the same run (needs bin/dpfil-cuda)")
	addSeedFlag(cmd, &req.Seed)
	addJSONFlag(cmd, &asJSON)
	return cmd
}

// printBenchEngine is the human summary of 'bench engine'.
func printBenchEngine(w io.Writer, r *enginebench.Report) {
	fmt.Fprintf(w, "engine benchmark: %s (%d params, d = %d), batch %d, k = %d, %d workers, backend %s\n",
		r.Model, r.Params, r.InputDim, r.Batch, r.Coords, r.Workers, r.Backend)
	fmt.Fprintf(w, "gonum SGEMM 1024³: %.2f GFLOP/s, %.2f GFLOP per CPU-second (mean of before and after)\n", r.SGEMMGFLOPs, r.SGEMMGFLOPPerCPUs)
	line := func(name string, b enginebench.Rate) {
		fmt.Fprintf(w, "%-26s %9.1f samples/s  %7.2f MFLOP/sample  %6.2f GFLOP/s  floor %9.1f samples/s  %.2f× floor (CPU time: %.2f× floor)\n",
			name, b.SamplesPerS, b.FLOPsPerSample/1e6, b.GFLOPs, b.FloorSamplesPerS, b.TimesFloor, b.TimesFloorCPU)
	}
	line("per-sample gradients", r.Grad)
	line(fmt.Sprintf("FIL step (k = %d)", r.Coords), r.FIL)
	if r.Oracle != nil {
		line("Gorgonia per-sample route", *r.Oracle)
		fmt.Fprintf(w, "engine per-sample gradients are %.1f× the Gorgonia route (%.1f× in CPU time per sample)\n",
			r.GradSpeedupVsOracle, r.GradSpeedupVsOracleCPU)
	}
	if r.Device != nil {
		printBenchDevice(w, r.Device, r.Coords)
	}
}

// printBenchDevice is the device part of the human summary of 'bench engine'.
func printBenchDevice(w io.Writer, d *enginebench.DeviceReport, coords int) {
	fmt.Fprintf(w, "%s (%s), peak FP32 %.0f GFLOP/s:\n", d.Device, d.Name, d.PeakGFLOPs)
	fmt.Fprintf(w, "  per-sample gradients %9.1f samples/s = %.2f× CPU, %.2f%% of the FP32 floor\n", d.Grad.SamplesPerS, d.GradSpeedupVsCPU, d.PctOfFloorGrad)
	fmt.Fprintf(w, "  FIL step (k = %d)    %9.1f samples/s = %.2f× CPU, %.2f%% of the FP32 floor\n", coords, d.FIL.SamplesPerS, d.FILSpeedupVsCPU, d.PctOfFloorFIL)
	for _, c := range []struct {
		what string
		c    *enginebench.DeviceCounts
	}{{"gradient sum", d.GradCounts}, {"FIL step", d.FILCounts}} {
		if c.c != nil {
			fmt.Fprintf(w, "  per %-13s %.0f bytes to the device, %.0f to the host, %.0f syncs, %.0f launches, %.0f GEMMs (inputs resident: %v)\n",
				c.what, c.c.HtoDBytes, c.c.DtoHBytes, c.c.Syncs, c.c.Launches, c.c.Gemms, d.Resident)
		}
	}
}
