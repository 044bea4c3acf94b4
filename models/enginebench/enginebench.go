// Package enginebench measures the throughput of the dpfil engine (package models)
// on the two kernels of a DP-SGD step with FIL accounting: the clipped per-sample
// gradient sum of a batch and the FIL step (Jacobian-vector products on k sampled
// input coordinates per sample). Each rate is set beside its floor: the engine's
// GEMM FLOPs per sample (models.CountFLOPs) at the rate of gonum's 1024³ SGEMM
// measured in the same run, in wall time and in CPU time (the CPU-time ratio is far
// less sensitive to other processes' load).
//
// It can also time, in rounds interleaved with the engine's so that both see the
// same load, the Gorgonia oracle's per-sample gradients (package models/oracle) and a
// device backend (any models.Model, e.g. the cuda package's), reporting the
// device's transfers and synchronisations per call when it counts them.
//
// Scaling (behind `dpfil bench scaling`) measures how the engine's cost grows: a
// DP-SGD step's CPU time and peak heap against the batch size, its time against the
// conv layers' width, and the FIL step's time against k, each point beside the FLOP
// model's prediction at the engine's SGEMM rate; ScalingPlots draws them.
//
// The package sits under models because it measures models.Model implementations
// and nothing else: it needs no training loop, data set or accountant. A device
// model is opened through Request.OpenDevice and the oracle's route prepared through
// Request.OracleRoute, so that this package depends neither on the packages that
// build device backends nor on Gorgonia.
package enginebench

import (
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"time"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"

	"github.com/dpfil/dpfil/models"
)

// Request configures one engine benchmark. The zero values of FILBatch, Seconds,
// Seed, Oracle and Device mean: the whole batch, one call per measurement, seed 0,
// no oracle, no device.
type Request struct {
	// Model is the name of a built-in architecture (models.ArchNames).
	Model string
	// Batch is the number of samples per call; Coords the FIL coordinates k per
	// sample; FILBatch the samples of the batch used for the FIL step (0: all).
	Batch, Coords, FILBatch int
	// Seconds is the minimum time per measurement (at least one call each), split
	// over interleaved rounds.
	Seconds float64
	// Seed draws the parameters, inputs, labels and FIL coordinates.
	Seed uint64
	// Oracle also times a baseline's per-sample gradients, prepared by OracleRoute
	// (required then): oracle.PerSampleRoute, Gorgonia's per-sample route. The caller
	// passes it so that this package does not link Gorgonia.
	Oracle      bool
	OracleRoute Route
	// Warmup is the number of calls of each path (engine, device, oracle) made
	// before the timed rounds and left out of them: the first calls allocate, upload
	// and JIT-compile.
	Warmup int
	// Device, when not "" or "cpu", names a device backend timed next to the CPU
	// engine; OpenDevice builds it (required then).
	Device     string
	OpenDevice func(arch models.Arch, device string) (models.Model, error)
	// ConvAlgo is the CPU engine's conv algorithm of the per-sample clipped
	// gradients (models.ParseConvAlgo: direct, winograd, winograd4 or auto; "" is
	// direct). The
	// FIL step and a device backend always run direct convolutions.
	ConvAlgo string
}

// Route prepares a per-sample-gradient route of arch at params on the batch x, y for
// timing; each call of the returned function processes part of the batch and says
// how many samples.
type Route func(arch models.Arch, params, x []float32, y []int) (func() (int, error), error)

// Rate is one measured throughput with its FLOP floor.
type Rate struct {
	SamplesPerS      float64 `json:"samples_per_s"`
	Samples          int     `json:"samples"`
	Seconds          float64 `json:"seconds"`
	FLOPsPerSample   float64 `json:"flops_per_sample"`
	GFLOPs           float64 `json:"gflop_per_s"`
	FloorSamplesPerS float64 `json:"floor_samples_per_s"`
	// TimesFloor is the measured time over the floor time (1 = at the floor).
	TimesFloor float64 `json:"times_floor"`
	// CPUSeconds is the process CPU time (all threads) spent; the CPU-time floor
	// ratio compares CPU time per sample with the SGEMM's CPU time per FLOP.
	CPUSeconds       float64 `json:"cpu_seconds"`
	TimesFloorCPU    float64 `json:"times_floor_cpu"`
	CPUSecPerSample  float64 `json:"cpu_seconds_per_sample"`
	FloorCPUSecPerSm float64 `json:"floor_cpu_seconds_per_sample"`
}

// Report is the result of Run.
type Report struct {
	Model    string `json:"model"`
	Params   int    `json:"params"`
	InputDim int    `json:"input_dim"`
	Batch    int    `json:"batch"`
	Coords   int    `json:"coords"`
	Workers  int    `json:"workers"`
	Backend  string `json:"backend"`
	// ConvAlgo is the CPU engine's conv algorithm of the per-sample gradients.
	ConvAlgo    string  `json:"conv_algo"`
	SGEMMGFLOPs float64 `json:"sgemm_1024_gflop_per_s"`
	// SGEMMGFLOPPerCPUs is the SGEMM's GFLOP per CPU-second (all threads).
	SGEMMGFLOPPerCPUs float64 `json:"sgemm_1024_gflop_per_cpu_s"`
	Grad              Rate    `json:"per_sample_grad"`
	FIL               Rate    `json:"fil_step"`
	Oracle            *Rate   `json:"oracle_per_sample_grad,omitempty"`
	// GradSpeedupVsOracle is engine per-sample-gradient samples/s over the oracle's.
	GradSpeedupVsOracle float64 `json:"grad_speedup_vs_oracle,omitempty"`
	// GradSpeedupVsOracleCPU is the same in CPU time per sample (load-insensitive).
	GradSpeedupVsOracleCPU float64 `json:"grad_speedup_vs_oracle_cpu,omitempty"`
	// Device is the second backend timed in the same run, if any.
	Device *DeviceReport `json:"device,omitempty"`
}

// DeviceReport is a device backend's throughput next to the CPU's, timed in rounds
// interleaved with the CPU's.
type DeviceReport struct {
	Device string `json:"device"` // Request.Device
	Name   string `json:"name"`   // the device, e.g. "NVIDIA H100 80GB HBM3 (sm_90)"
	Grad   Rate   `json:"per_sample_grad"`
	FIL    Rate   `json:"fil_step"`
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
	Resident   bool          `json:"resident"`
	GradCounts *DeviceCounts `json:"grad_counts,omitempty"`
	FILCounts  *DeviceCounts `json:"fil_counts,omitempty"`
	// GradTiming and FILTiming split the timed calls' time, when the device model can
	// time its work with device events (cuda.Model): the host's time to issue the
	// work, the host's waits for the device, and the device's own time.
	GradTiming *DeviceTiming `json:"grad_timing,omitempty"`
	FILTiming  *DeviceTiming `json:"fil_timing,omitempty"`
}

// DeviceTiming is the mean per timed call (warm-up calls excluded) of the wall time,
// its two host parts (issue = wall − wait; wait = copies of results to the host and
// synchronisations) and the device time between events recorded before and after
// the call's work, in seconds.
type DeviceTiming struct {
	Calls    int     `json:"calls"`
	WallS    float64 `json:"wall_s"`
	HostIssS float64 `json:"host_issue_s"`
	HostWait float64 `json:"host_wait_s"`
	DeviceS  float64 `json:"device_s"`
}

// deviceTimer is a device model that times a call's work with device events
// (cuda.Model.TimeDeviceSeconds).
type deviceTimer interface {
	TimeDeviceSeconds(fn func() error) (wall, wait, device float64, err error)
}

// DeviceCounts are a device's transfers and synchronisations per call.
type DeviceCounts struct {
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

// rounds is the number of interleaved rounds per measurement.
const rounds = 3

func (r Request) validate() error {
	if _, err := models.ParseConvAlgo(r.ConvAlgo); err != nil {
		return fmt.Errorf("engine benchmark: %w", err)
	}
	switch {
	case r.Batch <= 0:
		return fmt.Errorf("engine benchmark: batch must be positive, got %d", r.Batch)
	case r.Coords <= 0:
		return fmt.Errorf("engine benchmark: coords must be positive, got %d", r.Coords)
	case !(r.Seconds >= 0):
		return fmt.Errorf("engine benchmark: seconds must be non-negative, got %v", r.Seconds)
	case r.Warmup < 0:
		return fmt.Errorf("engine benchmark: warm-up calls must be non-negative, got %d", r.Warmup)
	case r.FILBatch < 0 || r.FILBatch > r.Batch:
		return fmt.Errorf("engine benchmark: FIL batch must be in [0, batch], got %d", r.FILBatch)
	case r.hasDevice() && r.OpenDevice == nil:
		return fmt.Errorf("engine benchmark: device %q without a way to open it (Request.OpenDevice)", r.Device)
	case r.hasDevice() && r.ConvAlgo != "" && r.ConvAlgo != models.ConvAlgoDirect:
		return fmt.Errorf("engine benchmark: conv algorithm %s runs on the CPU engine only, and device %s times its direct convolutions next to it: use --conv-algo %s with a device", r.ConvAlgo, r.Device, models.ConvAlgoDirect)
	case r.Oracle && r.OracleRoute == nil:
		return fmt.Errorf("engine benchmark: oracle timing without a route to time (Request.OracleRoute, e.g. oracle.PerSampleRoute)")
	}
	return nil
}

func (r Request) hasDevice() bool { return r.Device != "" && r.Device != "cpu" }

// bench is one run's state: the models, the data and the report being filled.
type bench struct {
	req    Request
	arch   models.Arch
	m, dm  models.Model // the CPU engine and the device model (nil: none)
	rng    *rand.Rand
	params []float32
	x      []float32
	y      []int
	clip   models.Clip
	losses []float64
	rep    *Report
	// devParams, devX and devSum are the device's operands (device memory when the
	// device model is resident).
	devParams, devX, devSum []float32
}

// Run measures the engine as req says. It returns an error for an invalid request,
// an unknown model, or a failing kernel.
func Run(req Request) (*Report, error) {
	if err := req.validate(); err != nil {
		return nil, err
	}
	b, closeDev, err := newBench(req)
	if err != nil {
		return nil, fmt.Errorf("engine benchmark: %w", err)
	}
	defer closeDev()
	fl, err := models.CountFLOPs(b.arch, req.Coords)
	if err != nil {
		return nil, fmt.Errorf("engine benchmark: %w", err)
	}
	b.openDevice(fl)
	gemmSec := max(0.5, req.Seconds/5)
	rate0, cpu0 := sgemmRate(gemmSec)
	if err := b.timeGrad(fl); err != nil {
		return nil, err
	}
	if err := b.timeFIL(fl); err != nil {
		return nil, err
	}
	rate1, cpu1 := sgemmRate(gemmSec)
	b.rep.SGEMMGFLOPs = (rate0 + rate1) / 2
	b.rep.SGEMMGFLOPPerCPUs = (cpu0 + cpu1) / 2
	b.rep.finish()
	return b.rep, nil
}

// newBench builds the CPU engine, the device model (if any) and the data.
func newBench(req Request) (*bench, func(), error) {
	none := func() {}
	arch, err := models.ArchByName(req.Model)
	if err != nil {
		return nil, none, err
	}
	m, err := models.NewCPUModel(arch)
	if err != nil {
		return nil, none, err
	}
	algo, err := models.ParseConvAlgo(req.ConvAlgo)
	if err != nil {
		return nil, none, err
	}
	if err := m.(models.ConvAlgoSetter).SetConvAlgo(algo); err != nil {
		return nil, none, err
	}
	b := &bench{req: req, arch: arch, m: m, rng: rand.New(rand.NewPCG(req.Seed, 0xbe7c4)),
		params: m.Init(req.Seed), clip: models.Clip{Mode: models.ClipSmooth, C: 1}, losses: make([]float64, req.Batch)}
	d := m.InputDim()
	b.x = make([]float32, req.Batch*d)
	for i := range b.x {
		b.x[i] = b.rng.Float32()
	}
	b.y = make([]int, req.Batch)
	for i := range b.y {
		b.y[i] = b.rng.IntN(arch.Classes)
	}
	b.rep = &Report{Model: arch.Name, Params: m.NumParams(), InputDim: d, Batch: req.Batch,
		Coords: req.Coords, Workers: runtime.GOMAXPROCS(0), Backend: "cpu", ConvAlgo: algo.String()}
	if !req.hasDevice() {
		return b, none, nil
	}
	if b.dm, err = req.OpenDevice(arch, req.Device); err != nil {
		return nil, none, err
	}
	if c, ok := b.dm.(io.Closer); ok {
		return b, func() { c.Close() }, nil
	}
	return b, none, nil
}

// openDevice prepares the device's report and operands.
func (b *bench) openDevice(fl models.FLOPCount) {
	if b.dm == nil {
		return
	}
	dev := &DeviceReport{Device: b.req.Device, Name: b.req.Device,
		Grad: Rate{FLOPsPerSample: fl.PerSampleGrad}, FIL: Rate{FLOPsPerSample: fl.FILStep}}
	if d, ok := b.dm.(interface{ Device() string }); ok {
		dev.Name = d.Device()
	}
	if p, ok := b.dm.(interface{ PeakGFLOPs() float64 }); ok {
		dev.PeakGFLOPs = p.PeakGFLOPs()
	}
	b.devSum = make([]float32, b.m.NumParams())
	b.devParams, b.devX = b.params, b.x
	if db, ok := b.dm.(deviceBuffers); ok && db.Resident() {
		// As in a device-resident training step: nothing of size P or B·d moves.
		b.devParams, b.devX, b.devSum = db.DeviceCopy(b.params), db.DeviceCopy(b.x), db.DeviceCopy(b.devSum)
		dev.Resident = true
	}
	b.rep.Device = dev
}

// timeGrad times the clipped per-sample gradient sum of the engine, the device and
// the oracle in interleaved rounds.
func (b *bench) timeGrad(fl models.FLOPCount) error {
	r := b.req
	sum := make([]float32, b.m.NumParams())
	engine := func() (int, error) {
		return r.Batch, b.m.ClippedGradSum(b.params, b.x, b.y, b.clip, sum, b.losses)
	}
	var oracle func() (int, error)
	if r.Oracle {
		var err error
		if oracle, err = r.OracleRoute(b.arch, b.params, b.x, b.y); err != nil {
			return fmt.Errorf("engine benchmark: oracle: %w", err)
		}
		b.rep.Oracle = &Rate{FLOPsPerSample: fl.PerSampleGrad}
	}
	b.rep.Grad = Rate{FLOPsPerSample: fl.PerSampleGrad}
	var device func() (int, error)
	if b.dm != nil {
		device = func() (int, error) {
			return r.Batch, b.dm.ClippedGradSum(b.devParams, b.devX, b.y, b.clip, b.devSum, b.losses)
		}
	}
	if err := b.warmUp("per-sample gradients", engine, device, oracle); err != nil {
		return err
	}
	for i := 0; i < rounds; i++ {
		if err := timeLoop(r.Seconds/rounds, &b.rep.Grad, engine); err != nil {
			return fmt.Errorf("engine benchmark: per-sample gradients: %w", err)
		}
		if dev := b.rep.Device; dev != nil {
			if err := countedLoop(b.dm, r.Seconds/rounds, &dev.Grad, &dev.GradCounts, &dev.GradTiming, device); err != nil {
				return fmt.Errorf("engine benchmark: %s per-sample gradients: %w", r.Device, err)
			}
		}
		if oracle != nil {
			if err := timeLoop(r.Seconds/rounds, b.rep.Oracle, oracle); err != nil {
				return fmt.Errorf("engine benchmark: oracle: %w", err)
			}
		}
	}
	return nil
}

// timeFIL times the FIL step of the engine and the device in interleaved rounds,
// with fresh coordinates per call as in training.
func (b *bench) timeFIL(fl models.FLOPCount) error {
	r := b.req
	fb := r.Batch
	if r.FILBatch > 0 {
		fb = r.FILBatch
	}
	d := b.m.InputDim()
	coords := make([][]int, fb)
	for s := range coords {
		coords[s] = make([]int, r.Coords)
	}
	out := make([]float64, fb)
	b.rep.FIL = Rate{FLOPsPerSample: fl.FILStep}
	step := func(m models.Model, params, x []float32) func() (int, error) {
		return func() (int, error) {
			for _, c := range coords {
				for j := range c {
					c[j] = b.rng.IntN(d)
				}
			}
			return fb, m.FILSqNorms(params, x[:fb*d], b.y[:fb], b.clip, coords, out)
		}
	}
	var devStep func() (int, error)
	if b.dm != nil {
		devStep = step(b.dm, b.devParams, b.devX)
	}
	if err := b.warmUp("FIL step", step(b.m, b.params, b.x), devStep, nil); err != nil {
		return err
	}
	for i := 0; i < rounds; i++ {
		if err := timeLoop(r.Seconds/rounds, &b.rep.FIL, step(b.m, b.params, b.x)); err != nil {
			return fmt.Errorf("engine benchmark: FIL step: %w", err)
		}
		if dev := b.rep.Device; dev != nil {
			if err := countedLoop(b.dm, r.Seconds/rounds, &dev.FIL, &dev.FILCounts, &dev.FILTiming, devStep); err != nil {
				return fmt.Errorf("engine benchmark: %s FIL step: %w", r.Device, err)
			}
		}
	}
	return nil
}

// finish derives the rates, floors and speed-ups from the measured samples and
// seconds.
func (res *Report) finish() {
	for _, r := range []*Rate{&res.Grad, &res.FIL, res.Oracle} {
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
	if dev := res.Device; dev != nil {
		dev.finish(res)
	}
	if res.Oracle != nil {
		res.GradSpeedupVsOracle = res.Grad.SamplesPerS / res.Oracle.SamplesPerS
		if res.Grad.CPUSecPerSample > 0 {
			res.GradSpeedupVsOracleCPU = res.Oracle.CPUSecPerSample / res.Grad.CPUSecPerSample
		}
	}
}

// finish derives the device's rates, its floors at the peak rate and its speed-ups
// over the CPU engine of res.
func (dev *DeviceReport) finish(res *Report) {
	for _, r := range []*Rate{&dev.Grad, &dev.FIL} {
		r.SamplesPerS = float64(r.Samples) / r.Seconds
		r.GFLOPs = r.SamplesPerS * r.FLOPsPerSample / 1e9
		if dev.PeakGFLOPs > 0 {
			r.FloorSamplesPerS = dev.PeakGFLOPs * 1e9 / r.FLOPsPerSample
			r.TimesFloor = r.FloorSamplesPerS / r.SamplesPerS
		}
	}
	for _, t := range []*DeviceTiming{dev.GradTiming, dev.FILTiming} {
		if t != nil && t.Calls > 0 {
			n := float64(t.Calls)
			t.WallS, t.HostIssS, t.HostWait, t.DeviceS = t.WallS/n, t.HostIssS/n, t.HostWait/n, t.DeviceS/n
		}
	}
	dev.GradSpeedupVsCPU = dev.Grad.SamplesPerS / res.Grad.SamplesPerS
	dev.FILSpeedupVsCPU = dev.FIL.SamplesPerS / res.FIL.SamplesPerS
	if dev.PeakGFLOPs > 0 {
		dev.PctOfFloorGrad = 100 * dev.Grad.GFLOPs / dev.PeakGFLOPs
		dev.PctOfFloorFIL = 100 * dev.FIL.GFLOPs / dev.PeakGFLOPs
	}
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
func timeLoop(minSec float64, r *Rate, fn func() (int, error)) error {
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

// warmUp makes Request.Warmup calls of each of the path's functions that is not nil
// (the engine's, the device's, the oracle's), untimed.
func (b *bench) warmUp(path string, fns ...func() (int, error)) error {
	for i := 0; i < b.req.Warmup; i++ {
		for _, fn := range fns {
			if fn == nil {
				continue
			}
			if _, err := fn(); err != nil {
				return fmt.Errorf("engine benchmark: %s (warm-up): %w", path, err)
			}
		}
	}
	return nil
}

// countedLoop is timeLoop with the device's counts per call stored in *c (the last
// round's: warm, as the first call allocates and uploads the labels) and, when the
// device model times its work (deviceTimer), every timed call's split added to *tm.
func countedLoop(dm models.Model, seconds float64, r *Rate, c **DeviceCounts, tm **DeviceTiming, fn func() (int, error)) error {
	if dt, ok := dm.(deviceTimer); ok {
		inner := fn
		fn = func() (int, error) {
			n := 0
			wall, wait, dev, err := dt.TimeDeviceSeconds(func() error {
				var err error
				n, err = inner()
				return err
			})
			if err != nil {
				return n, err
			}
			if *tm == nil {
				*tm = &DeviceTiming{}
			}
			t := *tm
			t.Calls++
			t.WallS += wall
			t.HostWait += wait
			t.HostIssS += wall - wait
			t.DeviceS += dev
			return n, nil
		}
	}
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
	*c = &DeviceCounts{float64(d.HtoDBytes) / n, float64(d.DtoHBytes) / n, float64(d.Syncs) / n, float64(d.Launches) / n, float64(d.Gemms) / n}
	return nil
}
