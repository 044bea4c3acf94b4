package enginebench

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"path/filepath"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/dpfil/dpfil/plot"
)

// WriteText writes the three sweeps as tables: CPU and wall seconds per call, the
// FLOP model's prediction and the ratio, and for the batch sweep the peak heap.
func (r *ScalingReport) WriteText(w io.Writer) {
	fmt.Fprintf(w, "scaling benchmark: %s, %d workers; engine SGEMM %.1f GFLOP per CPU-second; load average %.2f → %.2f\n",
		r.Arch, r.Workers, r.SGEMMGFLOPPerCPUs, r.LoadAverage[0], r.LoadAverage[1])
	if len(r.Batch) > 0 {
		fmt.Fprintln(w, "DP-SGD step (clipped per-sample gradient sum) against the batch size:")
		fmt.Fprintln(w, "  batch   CPU s/step  wall s/step  predicted CPU s  × predicted  peak heap MiB  allocated MiB")
		for _, p := range r.Batch {
			fmt.Fprintf(w, "  %5d  %11.4f  %11.4f  %15.4f  %11.2f  %13.2f  %13.2f\n", p.Batch, p.CPUSeconds, p.WallSeconds,
				p.PredictedCPUSeconds, p.TimesPredicted, float64(p.PeakHeapBytes)/(1<<20), float64(p.AllocBytes)/(1<<20))
		}
	}
	if len(r.Width) > 0 {
		fmt.Fprintf(w, "DP-SGD step against the conv channels' width (batch %d):\n", r.Width[0].Batch)
		fmt.Fprintln(w, "  width  params    CPU s/step  wall s/step  predicted CPU s  × predicted")
		for _, p := range r.Width {
			fmt.Fprintf(w, "  ×%-4d  %8d  %11.4f  %11.4f  %15.4f  %11.2f\n", p.Width, p.Params, p.CPUSeconds, p.WallSeconds,
				p.PredictedCPUSeconds, p.TimesPredicted)
		}
	}
	if len(r.FIL) > 0 {
		fmt.Fprintf(w, "FIL step against the coordinates k (%d samples per call):\n", r.FIL[0].Batch)
		fmt.Fprintln(w, "      k   CPU s/call  wall s/call  predicted CPU s  × predicted")
		for _, p := range r.FIL {
			fmt.Fprintf(w, "  %5d  %11.4f  %11.4f  %15.4f  %11.2f\n", p.Coords, p.CPUSeconds, p.WallSeconds,
				p.PredictedCPUSeconds, p.TimesPredicted)
		}
	}
}

// ScalingPlots writes the report's figures into dir with the given extension
// (png, svg or pdf) and returns their paths: scaling-batch-time, scaling-batch-memory,
// scaling-width and scaling-fil-k, each measured beside predicted (log-log; the
// memory figure shows the sampled peak heap and the bytes allocated beside the
// batch's own inputs, which grow linearly).
func ScalingPlots(r *ScalingReport, dir, ext string) ([]string, error) {
	type series struct {
		name   string
		x, y   []float64
		dashed bool
	}
	var paths []string
	fig := func(name, title, xl, yl string, ss ...series) error {
		p := gplot.New()
		p.Title.Text = title
		p.X.Label.Text, p.Y.Label.Text = xl, yl
		p.X.Scale, p.Y.Scale = gplot.LogScale{}, gplot.LogScale{}
		p.X.Tick.Marker, p.Y.Tick.Marker = plot.DecadeTicks{}, plot.DecadeTicks{}
		p.Legend.Top, p.Legend.Left = true, true
		colors := []color.Color{color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
			color.RGBA{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff}}
		for i, s := range ss {
			pts := make(plotter.XYs, 0, len(s.x))
			for j := range s.x {
				if s.x[j] > 0 && s.y[j] > 0 {
					pts = append(pts, plotter.XY{X: s.x[j], Y: s.y[j]})
				}
			}
			if len(pts) == 0 {
				return fmt.Errorf("figure %s: series %q has no positive point", name, s.name)
			}
			l, sc, err := plotter.NewLinePoints(pts)
			if err != nil {
				return fmt.Errorf("figure %s: %w", name, err)
			}
			c := colors[i%len(colors)]
			l.Color, sc.Color = c, c
			if s.dashed {
				l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
				sc.Shape = nil
				p.Add(l)
				p.Legend.Add(s.name, l)
			} else {
				p.Add(l, sc)
				p.Legend.Add(s.name, l, sc)
			}
		}
		path := filepath.Join(dir, name+"."+ext)
		if err := plot.Save(p, path, 640, 440); err != nil {
			return err
		}
		paths = append(paths, path)
		return nil
	}
	cols := func(ps []ScalingPoint, x func(ScalingPoint) float64) (xs, meas, pred []float64) {
		for _, p := range ps {
			xs, meas, pred = append(xs, x(p)), append(meas, p.CPUSeconds), append(pred, p.PredictedCPUSeconds)
		}
		return
	}
	if len(r.Batch) == 0 && len(r.Width) == 0 && len(r.FIL) == 0 {
		return nil, errors.New("scaling plots: the report has no points")
	}
	if len(r.Batch) > 0 {
		x, m, p := cols(r.Batch, func(p ScalingPoint) float64 { return float64(p.Batch) })
		if err := fig("scaling-batch-time", r.Arch+": DP-SGD step time against the batch size", "batch size",
			"CPU seconds per step", series{"measured", x, m, false}, series{"FLOP model at the SGEMM rate", x, p, true}); err != nil {
			return paths, err
		}
		var peak, alloc, in []float64
		for _, p := range r.Batch {
			peak, alloc = append(peak, float64(p.PeakHeapBytes)/(1<<20)), append(alloc, float64(p.AllocBytes)/(1<<20))
			in = append(in, float64(4*p.Batch*r.InputDim)/(1<<20))
		}
		if err := fig("scaling-batch-memory", r.Arch+": heap of a step against the batch size", "batch size",
			"MiB (first step on a fresh model)", series{"peak heap of the step (sampled)", x, peak, false},
			series{"allocated by the step", x, alloc, true}, series{"the batch's inputs (float32, for scale)", x, in, true}); err != nil {
			return paths, err
		}
	}
	if len(r.Width) > 0 {
		x, m, p := cols(r.Width, func(p ScalingPoint) float64 { return float64(p.Width) })
		if err := fig("scaling-width", fmt.Sprintf("%s: step time against the conv width (batch %d)", r.Arch, r.Width[0].Batch),
			"conv channels × factor", "CPU seconds per step", series{"measured", x, m, false}, series{"FLOP model at the SGEMM rate", x, p, true}); err != nil {
			return paths, err
		}
	}
	if len(r.FIL) > 0 {
		x, m, p := cols(r.FIL, func(p ScalingPoint) float64 { return float64(p.Coords) })
		if err := fig("scaling-fil-k", fmt.Sprintf("%s: FIL step time against k (%d samples)", r.Arch, r.FIL[0].Batch),
			"FIL coordinates per sample k", "CPU seconds per call", series{"measured", x, m, false}, series{"FLOP model at the SGEMM rate", x, p, true}); err != nil {
			return paths, err
		}
	}
	return paths, nil
}
