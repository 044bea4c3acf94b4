package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"time"

	"github.com/spf13/cobra"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"

	"github.com/dpfil/dpfil/models"
	"github.com/dpfil/dpfil/models/oracle"
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

// benchRate is one measured throughput with its FLOP floor.
type benchRate struct {
	SamplesPerS      float64 `json:"samples_per_s"`
	Samples          int     `json:"samples"`
	Seconds          float64 `json:"seconds"`
	FLOPsPerSample   float64 `json:"flops_per_sample"`
	GFLOPs           float64 `json:"gflop_per_s"`
	FloorSamplesPerS float64 `json:"floor_samples_per_s"`
	// TimesFloor is the measured time over the floor time (1 = at the floor).
	TimesFloor float64 `json:"times_floor"`
	// CPUSeconds is the process CPU time (all threads) spent; the CPU-time floor
	// ratio compares CPU time per sample with the SGEMM's CPU time per FLOP, which
	// is far less sensitive to other processes' load than wall time.
	CPUSeconds       float64 `json:"cpu_seconds"`
	TimesFloorCPU    float64 `json:"times_floor_cpu"`
	CPUSecPerSample  float64 `json:"cpu_seconds_per_sample"`
	FloorCPUSecPerSm float64 `json:"floor_cpu_seconds_per_sample"`
}

// benchEngineResult is the JSON object of 'dpfil bench engine'.
type benchEngineResult struct {
	Model       string  `json:"model"`
	Params      int     `json:"params"`
	InputDim    int     `json:"input_dim"`
	Batch       int     `json:"batch"`
	Coords      int     `json:"coords"`
	Workers     int     `json:"workers"`
	Backend     string  `json:"backend"`
	SGEMMGFLOPs float64 `json:"sgemm_1024_gflop_per_s"`
	// SGEMMGFLOPPerCPUs is the SGEMM's GFLOP per CPU-second (all threads).
	SGEMMGFLOPPerCPUs float64    `json:"sgemm_1024_gflop_per_cpu_s"`
	Grad              benchRate  `json:"per_sample_grad"`
	FIL               benchRate  `json:"fil_step"`
	Oracle            *benchRate `json:"oracle_per_sample_grad,omitempty"`
	// GradSpeedupVsOracle is engine per-sample-gradient samples/s over the oracle's.
	GradSpeedupVsOracle float64 `json:"grad_speedup_vs_oracle,omitempty"`
	// GradSpeedupVsOracleCPU is the same in CPU time per sample (load-insensitive).
	GradSpeedupVsOracleCPU float64 `json:"grad_speedup_vs_oracle_cpu,omitempty"`
	// Device is the second backend timed in the same run (--device), if any.
	Device *benchDevice `json:"device,omitempty"`
}

// benchDevice is a device backend's throughput next to the CPU's, timed in rounds
// interleaved with the CPU's.
type benchDevice struct {
	Device string    `json:"device"` // --device value
	Name   string    `json:"name"`   // the device, e.g. "NVIDIA H100 80GB HBM3 (sm_90)"
	Grad   benchRate `json:"per_sample_grad"`
	FIL    benchRate `json:"fil_step"`
	// GradSpeedupVsCPU and FILSpeedupVsCPU are device samples/s over the CPU's.
	GradSpeedupVsCPU float64 `json:"grad_speedup_vs_cpu"`
	FILSpeedupVsCPU  float64 `json:"fil_speedup_vs_cpu"`
	// PeakGFLOPs is the device's peak FP32 rate (0: unknown); the floors are the
	// FLOPs per sample at that rate and PctOfFloor* the measured rate over it.
	PeakGFLOPs     float64 `json:"peak_gflop_per_s"`
	PctOfFloorGrad float64 `json:"pct_of_floor_grad"`
	PctOfFloorFIL  float64 `json:"pct_of_floor_fil"`
	// Resident: the parameters, inputs and sum were device memory (uploaded once),
	// as in a device-resident training step. GradCounts and FILCounts are what the
	// driver counted per call of the clipped gradient sum and of the FIL step (a
	// training step makes one of each, plus the noise and update).
	Resident   bool               `json:"resident"`
	GradCounts *benchDeviceCounts `json:"grad_counts,omitempty"`
	FILCounts  *benchDeviceCounts `json:"fil_counts,omitempty"`
}

// benchDeviceCounts are a device's transfers and synchronisations per call.
type benchDeviceCounts struct {
	HtoDBytes float64 `json:"htod_bytes"`
	DtoHBytes float64 `json:"dtoh_bytes"`
	Syncs     float64 `json:"syncs"`
	Launches  float64 `json:"launches"`
	Gemms     float64 `json:"gemms"`
}

// deviceBuffers is a device model that can hold inputs in device memory and counts
// its driver's work (cuda.Model).
type deviceBuffers interface {
	Resident() bool
	DeviceCopy(x []float32) []float32
	DeviceCounts() models.DeviceCounts
}

// countedLoop is timeLoop with the device's counts per call added to *c.
func countedLoop(dm models.Model, seconds float64, r *benchRate, c **benchDeviceCounts, fn func() (int, error)) error {
	db, ok := dm.(deviceBuffers)
	if !ok {
		return timeLoop(seconds, r, fn)
	}
	calls := 0
	before := db.DeviceCounts()
	err := timeLoop(seconds, r, func() (int, error) { calls++; return fn() })
	if err != nil || calls == 0 {
		return err
	}
	d, n := db.DeviceCounts().Sub(before), float64(calls)
	one := benchDeviceCounts{float64(d.HtoDBytes) / n, float64(d.DtoHBytes) / n, float64(d.Syncs) / n, float64(d.Launches) / n, float64(d.Gemms) / n}
	*c = &one // the last round's: warm (the first call allocates and uploads the labels)
	return nil
}

// benchEngineOptions configures one engine benchmark.
type benchEngineOptions struct {
	model    string
	batch    int
	coords   int
	seconds  float64
	seed     uint64
	oracle   bool
	filBatch int
	device   string // "cpu", or a device timed next to the CPU (e.g. "cuda")
	// openDevice builds the device model (nil: train.NewModel).
	openDevice func(arch models.Arch, device string) (models.Model, error)
	// compare, when set, prepares a competing per-sample-gradient route; the
	// returned function processes some samples of the batch and says how many. It is
	// timed in rounds interleaved with the engine's, so both see the same load.
	compare func(arch models.Arch, params []float32, x []float32, y []int) (func() (int, error), error)
}

func newBenchEngineCmd() *cobra.Command {
	var o benchEngineOptions
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "engine",
		Short: "Per-sample-gradient and FIL-step throughput of the CPU engine vs its FLOP floor",
		Long: `Measures, in one run: gonum's 1024³ SGEMM rate (before and after, averaged), the
per-sample clipped-gradient sum of a batch (a DP-SGD step's gradient work), the FIL
step with --coords coordinates per sample, and Gorgonia's per-sample route (--oracle).
Floors are the engine's GEMM FLOPs per sample (models.CountFLOPs) at the measured
SGEMM rate; times_floor is measured time over floor time.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.oracle {
				o.compare = oracleRoute
			}
			res, err := runBenchEngine(o)
			if err != nil {
				return err
			}
			return emit(cmd.OutOrStdout(), asJSON, res, func(w io.Writer) { printBenchEngine(w, res) })
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.model, "model", "mnist-cnn", fmt.Sprintf("architecture %v", models.ArchNames()))
	f.IntVar(&o.batch, "batch", 600, "batch size")
	f.IntVar(&o.coords, "coords", 50, "FIL coordinates per sample (k)")
	f.IntVar(&o.filBatch, "fil-batch", 0, "samples of the batch used to time the FIL step (0 = all)")
	f.Float64Var(&o.seconds, "seconds", 5, "minimum seconds per measurement (at least one call each)")
	f.BoolVar(&o.oracle, "oracle", true, "also time the Gorgonia oracle's per-sample gradients")
	f.StringVar(&o.device, "device", "cpu", "cpu, or cuda to also time the GPU backend in the same run (needs bin/dpfil-cuda)")
	addSeedFlag(cmd, &o.seed)
	addJSONFlag(cmd, &asJSON)
	return cmd
}

// sgemmRate measures gonum's 1024³ SGEMM for at least minSec seconds, in GFLOP/s of
// wall time and GFLOP per CPU-second.
func sgemmRate(minSec float64) (wall, cpu float64) {
	const n = 1024
	a, b, c := make([]float32, n*n), make([]float32, n*n), make([]float32, n*n)
	for i := range a {
		a[i], b[i] = float32(i%7)-3, float32(i%5)-2
	}
	impl := blas32.Implementation()
	reps := 0
	t0, c0 := time.Now(), processCPUTime()
	for reps == 0 || time.Since(t0).Seconds() < minSec {
		impl.Sgemm(blas.NoTrans, blas.NoTrans, n, n, n, 1, a, n, b, n, 0, c, n)
		reps++
	}
	gf := 2 * n * n * n * float64(reps) / 1e9
	wall = gf / time.Since(t0).Seconds()
	if dc := (processCPUTime() - c0).Seconds(); dc > 0 {
		cpu = gf / dc
	}
	return wall, cpu
}

// timeLoop calls fn (which returns the samples it processed) until minSec have
// passed, at least once, and adds the samples processed, the wall seconds and the
// CPU seconds taken to r.
func timeLoop(minSec float64, r *benchRate, fn func() (int, error)) error {
	done := 0
	t0, c0 := time.Now(), processCPUTime()
	for done == 0 || time.Since(t0).Seconds() < minSec {
		n, err := fn()
		if err != nil {
			return err
		}
		done += n
	}
	r.Samples += done
	r.Seconds += time.Since(t0).Seconds()
	r.CPUSeconds += (processCPUTime() - c0).Seconds()
	return nil
}

func runBenchEngine(o benchEngineOptions) (*benchEngineResult, error) {
	if o.batch <= 0 {
		return nil, fmt.Errorf("bench engine: --batch must be positive, got %d", o.batch)
	}
	if o.coords <= 0 {
		return nil, fmt.Errorf("bench engine: --coords must be positive, got %d", o.coords)
	}
	if !(o.seconds >= 0) {
		return nil, fmt.Errorf("bench engine: --seconds must be non-negative, got %v", o.seconds)
	}
	if o.filBatch < 0 || o.filBatch > o.batch {
		return nil, fmt.Errorf("bench engine: --fil-batch must be in [0, batch], got %d", o.filBatch)
	}
	arch, err := models.ArchByName(o.model)
	if err != nil {
		return nil, fmt.Errorf("bench engine: %w", err)
	}
	m, err := models.NewCPUModel(arch)
	if err != nil {
		return nil, fmt.Errorf("bench engine: %w", err)
	}
	var dm models.Model // the device model, timed next to the CPU's
	if o.device != "" && o.device != "cpu" {
		open := o.openDevice
		if open == nil {
			open = train.NewModel
		}
		if dm, err = open(arch, o.device); err != nil {
			return nil, fmt.Errorf("bench engine: %w", err)
		}
		if c, ok := dm.(io.Closer); ok {
			defer c.Close()
		}
	}
	fl, err := models.CountFLOPs(arch, o.coords)
	if err != nil {
		return nil, fmt.Errorf("bench engine: %w", err)
	}
	rng := rand.New(rand.NewPCG(o.seed, 0xbe7c4))
	params := m.Init(o.seed)
	d := m.InputDim()
	x := make([]float32, o.batch*d)
	for i := range x {
		x[i] = rng.Float32()
	}
	y := make([]int, o.batch)
	for i := range y {
		y[i] = rng.IntN(arch.Classes)
	}
	res := &benchEngineResult{Model: arch.Name, Params: m.NumParams(), InputDim: d, Batch: o.batch,
		Coords: o.coords, Workers: runtime.GOMAXPROCS(0), Backend: "cpu"}
	gemmSec := max(0.5, o.seconds/5)
	rate0, cpu0 := sgemmRate(gemmSec)

	clip := models.Clip{Mode: models.ClipSmooth, C: 1}
	sum := make([]float32, m.NumParams())
	losses := make([]float64, o.batch)
	engine := func() (int, error) {
		return o.batch, m.ClippedGradSum(params, x, y, clip, sum, losses)
	}
	var other func() (int, error)
	if o.compare != nil {
		if other, err = o.compare(arch, params, x, y); err != nil {
			return nil, fmt.Errorf("bench engine: oracle: %w", err)
		}
		res.Oracle = &benchRate{FLOPsPerSample: fl.PerSampleGrad}
	}
	res.Grad = benchRate{FLOPsPerSample: fl.PerSampleGrad}
	var dev *benchDevice
	var devSum, devParams, devX []float32
	if dm != nil {
		dev = &benchDevice{Device: o.device, Name: o.device,
			Grad: benchRate{FLOPsPerSample: fl.PerSampleGrad}, FIL: benchRate{FLOPsPerSample: fl.FILStep}}
		if d, ok := dm.(interface{ Device() string }); ok {
			dev.Name = d.Device()
		}
		if p, ok := dm.(interface{ PeakGFLOPs() float64 }); ok {
			dev.PeakGFLOPs = p.PeakGFLOPs()
		}
		devSum = make([]float32, m.NumParams())
		devParams, devX = params, x
		if db, ok := dm.(deviceBuffers); ok && db.Resident() {
			// As in a device-resident training step: nothing of size P or B·d moves.
			devParams, devX, devSum = db.DeviceCopy(params), db.DeviceCopy(x), db.DeviceCopy(devSum)
			dev.Resident = true
		}
		res.Device = dev
	}
	const rounds = 3
	for r := 0; r < rounds; r++ {
		if err := timeLoop(o.seconds/rounds, &res.Grad, engine); err != nil {
			return nil, fmt.Errorf("bench engine: per-sample gradients: %w", err)
		}
		if dev != nil {
			err := countedLoop(dm, o.seconds/rounds, &dev.Grad, &dev.GradCounts, func() (int, error) {
				return o.batch, dm.ClippedGradSum(devParams, devX, y, clip, devSum, losses)
			})
			if err != nil {
				return nil, fmt.Errorf("bench engine: %s per-sample gradients: %w", o.device, err)
			}
		}
		if other != nil {
			if err := timeLoop(o.seconds/rounds, res.Oracle, other); err != nil {
				return nil, fmt.Errorf("bench engine: oracle: %w", err)
			}
		}
	}

	fb := o.batch
	if o.filBatch > 0 {
		fb = o.filBatch
	}
	coords := make([][]int, fb)
	for s := range coords {
		coords[s] = make([]int, o.coords)
	}
	out := make([]float64, fb)
	res.FIL = benchRate{FLOPsPerSample: fl.FILStep}
	filStep := func(m models.Model, params, x []float32) func() (int, error) {
		return func() (int, error) {
			for _, c := range coords { // fresh coordinates per call, as in training
				for j := range c {
					c[j] = rng.IntN(d)
				}
			}
			return fb, m.FILSqNorms(params, x[:fb*d], y[:fb], clip, coords, out)
		}
	}
	for r := 0; r < rounds; r++ {
		if err := timeLoop(o.seconds/rounds, &res.FIL, filStep(m, params, x)); err != nil {
			return nil, fmt.Errorf("bench engine: FIL step: %w", err)
		}
		if dev != nil {
			if err := countedLoop(dm, o.seconds/rounds, &dev.FIL, &dev.FILCounts, filStep(dm, devParams, devX)); err != nil {
				return nil, fmt.Errorf("bench engine: %s FIL step: %w", o.device, err)
			}
		}
	}

	rate1, cpu1 := sgemmRate(gemmSec)
	res.SGEMMGFLOPs = (rate0 + rate1) / 2
	res.SGEMMGFLOPPerCPUs = (cpu0 + cpu1) / 2
	for _, r := range []*benchRate{&res.Grad, &res.FIL, res.Oracle} {
		if r == nil {
			continue
		}
		r.SamplesPerS = float64(r.Samples) / r.Seconds
		r.GFLOPs = r.SamplesPerS * r.FLOPsPerSample / 1e9
		r.FloorSamplesPerS = res.SGEMMGFLOPs * 1e9 / r.FLOPsPerSample
		r.TimesFloor = r.FloorSamplesPerS / r.SamplesPerS
		if r.CPUSeconds > 0 && res.SGEMMGFLOPPerCPUs > 0 {
			r.CPUSecPerSample = r.CPUSeconds / float64(r.Samples)
			r.FloorCPUSecPerSm = r.FLOPsPerSample / (res.SGEMMGFLOPPerCPUs * 1e9)
			r.TimesFloorCPU = r.CPUSecPerSample / r.FloorCPUSecPerSm
		}
	}
	if dev != nil {
		for _, r := range []*benchRate{&dev.Grad, &dev.FIL} {
			r.SamplesPerS = float64(r.Samples) / r.Seconds
			r.GFLOPs = r.SamplesPerS * r.FLOPsPerSample / 1e9
			if dev.PeakGFLOPs > 0 {
				r.FloorSamplesPerS = dev.PeakGFLOPs * 1e9 / r.FLOPsPerSample
				r.TimesFloor = r.FloorSamplesPerS / r.SamplesPerS
			}
		}
		dev.GradSpeedupVsCPU = dev.Grad.SamplesPerS / res.Grad.SamplesPerS
		dev.FILSpeedupVsCPU = dev.FIL.SamplesPerS / res.FIL.SamplesPerS
		if dev.PeakGFLOPs > 0 {
			dev.PctOfFloorGrad = 100 * dev.Grad.GFLOPs / dev.PeakGFLOPs
			dev.PctOfFloorFIL = 100 * dev.FIL.GFLOPs / dev.PeakGFLOPs
		}
	}
	if res.Oracle != nil {
		res.GradSpeedupVsOracle = res.Grad.SamplesPerS / res.Oracle.SamplesPerS
		if res.Grad.CPUSecPerSample > 0 {
			res.GradSpeedupVsOracleCPU = res.Oracle.CPUSecPerSample / res.Grad.CPUSecPerSample
		}
	}
	return res, nil
}

// oracleRoute prepares the Gorgonia oracle's per-sample gradients (its fastest
// honest route: compiled batch-1 graphs, one per worker, float64); each call of the
// returned function processes a slice of the batch.
func oracleRoute(arch models.Arch, params, x []float32, y []int) (func() (int, error), error) {
	ps, err := oracle.NewPerSample(arch)
	if err != nil {
		return nil, err
	}
	p64 := make([]float64, len(params))
	for i, v := range params {
		p64[i] = float64(v)
	}
	d := arch.InputDim()
	chunk := min(len(y), 4*ps.Workers())
	x64 := make([]float64, chunk*d)
	for i := range x64 {
		x64[i] = float64(x[i])
	}
	return func() (int, error) {
		_, _, err := ps.Run(p64, x64, y[:chunk], chunk)
		return chunk, err
	}, nil
}

func printBenchEngine(w io.Writer, r *benchEngineResult) {
	fmt.Fprintf(w, "engine benchmark: %s (%d params, d = %d), batch %d, k = %d, %d workers, backend %s\n",
		r.Model, r.Params, r.InputDim, r.Batch, r.Coords, r.Workers, r.Backend)
	fmt.Fprintf(w, "gonum SGEMM 1024³: %.2f GFLOP/s, %.2f GFLOP per CPU-second (mean of before and after)\n", r.SGEMMGFLOPs, r.SGEMMGFLOPPerCPUs)
	line := func(name string, b benchRate) {
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
		fmt.Fprintf(w, "%s (%s), peak FP32 %.0f GFLOP/s:\n", d.Device, d.Name, d.PeakGFLOPs)
		fmt.Fprintf(w, "  per-sample gradients %9.1f samples/s = %.2f× CPU, %.2f%% of the FP32 floor\n", d.Grad.SamplesPerS, d.GradSpeedupVsCPU, d.PctOfFloorGrad)
		fmt.Fprintf(w, "  FIL step (k = %d)    %9.1f samples/s = %.2f× CPU, %.2f%% of the FP32 floor\n", r.Coords, d.FIL.SamplesPerS, d.FILSpeedupVsCPU, d.PctOfFloorFIL)
		for _, c := range []struct {
			what string
			c    *benchDeviceCounts
		}{{"gradient sum", d.GradCounts}, {"FIL step", d.FILCounts}} {
			if c.c != nil {
				fmt.Fprintf(w, "  per %-13s %.0f bytes to the device, %.0f to the host, %.0f syncs, %.0f launches, %.0f GEMMs (inputs resident: %v)\n",
					c.what, c.c.HtoDBytes, c.c.DtoHBytes, c.c.Syncs, c.c.Launches, c.c.Gemms, d.Resident)
			}
		}
	}
}
