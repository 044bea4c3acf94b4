package enginebench

import (
	"fmt"
	"io"
)

// WriteText writes the human summary of the report: the SGEMM rate, each measured
// rate beside its floor, and the device's rates and counts.
func (r *Report) WriteText(w io.Writer) {
	fmt.Fprintf(w, "engine benchmark: %s (%d params, d = %d), batch %d, k = %d, %d workers, backend %s, conv algorithm %s (per-sample gradients)\n",
		r.Model, r.Params, r.InputDim, r.Batch, r.Coords, r.Workers, r.Backend, r.ConvAlgo)
	fmt.Fprintf(w, "gonum SGEMM 1024³: %.2f GFLOP/s, %.2f GFLOP per CPU-second (mean of before and after)\n", r.SGEMMGFLOPs, r.SGEMMGFLOPPerCPUs)
	line := func(name string, b Rate) {
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
	if d := r.Device; d != nil {
		d.writeText(w, r.Coords)
	}
}

// writeText writes the device part of the summary.
func (d *DeviceReport) writeText(w io.Writer, coords int) {
	fmt.Fprintf(w, "%s (%s), peak FP32 %.0f GFLOP/s:\n", d.Device, d.Name, d.PeakGFLOPs)
	fmt.Fprintf(w, "  per-sample gradients %9.1f samples/s = %.2f× CPU, %.2f%% of the FP32 floor\n", d.Grad.SamplesPerS, d.GradSpeedupVsCPU, d.PctOfFloorGrad)
	fmt.Fprintf(w, "  FIL step (k = %d)    %9.1f samples/s = %.2f× CPU, %.2f%% of the FP32 floor\n", coords, d.FIL.SamplesPerS, d.FILSpeedupVsCPU, d.PctOfFloorFIL)
	calls := []struct {
		what string
		c    *DeviceCounts
		t    *DeviceTiming
	}{{"gradient sum", d.GradCounts, d.GradTiming}, {"FIL step", d.FILCounts, d.FILTiming}}
	for _, k := range calls { // the counts of both calls, then their timings
		if c := k.c; c != nil {
			fmt.Fprintf(w, "  per %-13s %.0f bytes to the device, %.0f to the host, %.0f syncs, %.0f launches, %.0f GEMMs (inputs resident: %v)\n",
				k.what, c.HtoDBytes, c.DtoHBytes, c.Syncs, c.Launches, c.Gemms, d.Resident)
		}
	}
	for _, k := range calls {
		if t := k.t; t != nil {
			fmt.Fprintf(w, "  per %-13s %.3f ms wall = %.3f ms host issue + %.3f ms host wait; %.3f ms device time (events; %d warm calls)\n",
				k.what, 1e3*t.WallS, 1e3*t.HostIssS, 1e3*t.HostWait, 1e3*t.DeviceS, t.Calls)
		}
	}
}
