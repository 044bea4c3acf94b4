package enginebench_test

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dpfil/dpfil/models"
	"github.com/dpfil/dpfil/models/enginebench"
	"github.com/dpfil/dpfil/models/oracle"
)

func TestRun(t *testing.T) {
	tests := []struct {
		model  string
		oracle bool
	}{
		{"linear", true},
		{"mnist-cnn", false},
	}
	for _, tc := range tests {
		t.Run(tc.model, func(t *testing.T) {
			r, err := enginebench.Run(enginebench.Request{Model: tc.model, Batch: 4, Coords: 3, Oracle: tc.oracle, OracleRoute: oracle.PerSampleRoute})
			if err != nil {
				t.Fatal(err)
			}
			arch, err := models.ArchByName(tc.model)
			if err != nil {
				t.Fatal(err)
			}
			fl, err := models.CountFLOPs(arch, 3)
			if err != nil {
				t.Fatal(err)
			}
			if r.Model != tc.model || r.Batch != 4 || r.Coords != 3 || r.Params != arch.NumParams() || r.InputDim != arch.InputDim() || r.Backend != "cpu" {
				t.Errorf("header %+v", r)
			}
			if r.Grad.FLOPsPerSample != fl.PerSampleGrad || r.FIL.FLOPsPerSample != fl.FILStep {
				t.Errorf("FLOPs per sample %v, %v; want %v, %v", r.Grad.FLOPsPerSample, r.FIL.FLOPsPerSample, fl.PerSampleGrad, fl.FILStep)
			}
			for _, b := range []enginebench.Rate{r.Grad, r.FIL} {
				checkRate(t, b, r.SGEMMGFLOPs, r.SGEMMGFLOPPerCPUs)
			}
			if (r.Oracle != nil) != tc.oracle {
				t.Errorf("oracle result present = %v with Oracle %v", r.Oracle != nil, tc.oracle)
			}
			if o := r.Oracle; o != nil {
				if want := r.Grad.SamplesPerS / o.SamplesPerS; r.GradSpeedupVsOracle != want {
					t.Errorf("speed-up %v, want %v", r.GradSpeedupVsOracle, want)
				}
				if want := o.CPUSecPerSample / r.Grad.CPUSecPerSample; r.GradSpeedupVsOracleCPU != want {
					t.Errorf("CPU-time speed-up %v, want %v", r.GradSpeedupVsOracleCPU, want)
				}
			}
		})
	}
}

// checkRate recomputes a rate's derived fields from its samples, seconds and the
// SGEMM rates.
func checkRate(t *testing.T, b enginebench.Rate, gflops, gflopPerCPUs float64) {
	t.Helper()
	if b.Samples < 4 || !(b.Seconds > 0) || !(b.CPUSeconds > 0) || !(gflops > 0) || !(gflopPerCPUs > 0) {
		t.Fatalf("rate %+v, SGEMM %v GFLOP/s, %v GFLOP/CPU-s", b, gflops, gflopPerCPUs)
	}
	sps := float64(b.Samples) / b.Seconds
	floor := gflops * 1e9 / b.FLOPsPerSample
	cpuPer, cpuFloor := b.CPUSeconds/float64(b.Samples), b.FLOPsPerSample/(gflopPerCPUs*1e9)
	for _, c := range [][2]float64{
		{b.SamplesPerS, sps}, {b.GFLOPs, sps * b.FLOPsPerSample / 1e9}, {b.FloorSamplesPerS, floor},
		{b.TimesFloor, floor / sps}, {b.CPUSecPerSample, cpuPer}, {b.FloorCPUSecPerSm, cpuFloor}, {b.TimesFloorCPU, cpuPer / cpuFloor},
	} {
		if math.Abs(c[0]-c[1]) > 1e-12*math.Abs(c[1]) {
			t.Errorf("rate %+v: %v, want %v", b, c[0], c[1])
		}
	}
}

// The JSON field names are what benchmark drivers read; they must not change.
func TestReportJSONFields(t *testing.T) {
	b, err := json.Marshal(enginebench.Report{Oracle: &enginebench.Rate{}, GradSpeedupVsOracle: 1, GradSpeedupVsOracleCPU: 1,
		Device: &enginebench.DeviceReport{GradCounts: &enginebench.DeviceCounts{}, FILCounts: &enginebench.DeviceCounts{},
			GradTiming: &enginebench.DeviceTiming{}, FILTiming: &enginebench.DeviceTiming{}}})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	want := []string{"backend", "batch", "conv_algo", "coords", "device", "fil_step", "grad_speedup_vs_oracle", "grad_speedup_vs_oracle_cpu",
		"input_dim", "model", "oracle_per_sample_grad", "params", "per_sample_grad", "sgemm_1024_gflop_per_cpu_s", "sgemm_1024_gflop_per_s", "workers"}
	if got := keys(m); !slices.Equal(got, want) {
		t.Errorf("report fields %v, want %v", got, want)
	}
	wantRate := []string{"cpu_seconds", "cpu_seconds_per_sample", "floor_cpu_seconds_per_sample", "floor_samples_per_s", "flops_per_sample",
		"gflop_per_s", "samples", "samples_per_s", "seconds", "times_floor", "times_floor_cpu"}
	if got := keys(m["fil_step"].(map[string]any)); !slices.Equal(got, wantRate) {
		t.Errorf("rate fields %v, want %v", got, wantRate)
	}
	wantDev := []string{"device", "fil_counts", "fil_speedup_vs_cpu", "fil_step", "fil_timing", "grad_counts", "grad_speedup_vs_cpu",
		"grad_timing", "name", "pct_of_floor_fil", "pct_of_floor_grad", "peak_gflop_per_s", "per_sample_grad", "resident"}
	if got := keys(m["device"].(map[string]any)); !slices.Equal(got, wantDev) {
		t.Errorf("device fields %v, want %v", got, wantDev)
	}
	wantTiming := []string{"calls", "device_s", "host_issue_s", "host_wait_s", "wall_s"}
	if got := keys(m["device"].(map[string]any)["fil_timing"].(map[string]any)); !slices.Equal(got, wantTiming) {
		t.Errorf("timing fields %v, want %v", got, wantTiming)
	}
}

func keys(m map[string]any) []string {
	var k []string
	for s := range m {
		k = append(k, s)
	}
	slices.Sort(k)
	return k
}

func TestRunErrors(t *testing.T) {
	ok := enginebench.Request{Model: "mlp", Batch: 2, Coords: 2}
	tests := []struct {
		name string
		edit func(*enginebench.Request)
		want string
	}{
		{"unknown model", func(r *enginebench.Request) { r.Model = "nope" }, "nope"},
		{"batch 0", func(r *enginebench.Request) { r.Batch = 0 }, "batch"},
		{"coords < 0", func(r *enginebench.Request) { r.Coords = -1 }, "coords"},
		{"seconds < 0", func(r *enginebench.Request) { r.Seconds = -1 }, "seconds"},
		{"seconds NaN", func(r *enginebench.Request) { r.Seconds = math.NaN() }, "seconds"},
		{"FIL batch > batch", func(r *enginebench.Request) { r.FILBatch = 3 }, "FIL batch"},
		{"warm-up < 0", func(r *enginebench.Request) { r.Warmup = -1 }, "warm-up"},
		{"device without opener", func(r *enginebench.Request) { r.Device = "cuda" }, "OpenDevice"},
		{"oracle without route", func(r *enginebench.Request) { r.Oracle = true }, "OracleRoute"},
		{"unknown conv algorithm", func(r *enginebench.Request) { r.ConvAlgo = "fft" }, "conv algorithm \"fft\""},
		{"winograd with a device", func(r *enginebench.Request) {
			r.ConvAlgo, r.Device = "winograd", "cuda"
			r.OpenDevice = func(models.Arch, string) (models.Model, error) { return nil, nil }
		}, "CPU engine only"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := ok
			tc.edit(&r)
			if _, err := enginebench.Run(r); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

// namedModel is a CPU model posing as a device, to test the device report without
// a GPU.
type namedModel struct {
	models.Model
	closed *bool
}

func (m namedModel) Device() string      { return "test device" }
func (m namedModel) PeakGFLOPs() float64 { return 1000 }
func (m namedModel) Close() error        { *m.closed = true; return nil }

func TestRunDevice(t *testing.T) {
	closed := false
	req := enginebench.Request{Model: "mlp", Batch: 6, Coords: 2, Device: "fake",
		OpenDevice: func(arch models.Arch, device string) (models.Model, error) {
			if device != "fake" {
				t.Errorf("device %q", device)
			}
			m, err := models.NewCPUModel(arch)
			return namedModel{m, &closed}, err
		}}
	r, err := enginebench.Run(req)
	if err != nil {
		t.Fatal(err)
	}
	d := r.Device
	if d == nil || d.Device != "fake" || d.Name != "test device" || d.PeakGFLOPs != 1000 || !closed || d.Resident || d.GradCounts != nil {
		t.Fatalf("device result %+v, closed %v", d, closed)
	}
	for _, b := range []enginebench.Rate{d.Grad, d.FIL} {
		if b.Samples < 6 || !(b.SamplesPerS > 0) || b.FloorSamplesPerS != 1000*1e9/b.FLOPsPerSample {
			t.Errorf("device rate %+v", b)
		}
	}
	if want := d.FIL.SamplesPerS / r.FIL.SamplesPerS; d.FILSpeedupVsCPU != want {
		t.Errorf("FIL speed-up %v, want %v", d.FILSpeedupVsCPU, want)
	}
	if want := 100 * d.FIL.GFLOPs / 1000; math.Abs(d.PctOfFloorFIL-want) > 1e-12 {
		t.Errorf("FIL %% of floor %v, want %v", d.PctOfFloorFIL, want)
	}
	var buf strings.Builder
	r.WriteText(&buf)
	if !strings.Contains(buf.String(), "test device") || !strings.Contains(buf.String(), "× CPU") {
		t.Errorf("human summary lacks the device lines:\n%s", buf.String())
	}
}

// timedModel is a CPU model posing as a device that times its calls with events:
// each call's "device time" is a fixed fraction of its wall time, and it counts its
// calls, to check that warm-up calls are made and left out of the timing.
type timedModel struct {
	models.Model
	grads, fils *int
}

func (m timedModel) ClippedGradSum(params, x []float32, y []int, clip models.Clip, sum []float32, losses []float64) error {
	*m.grads++
	return m.Model.ClippedGradSum(params, x, y, clip, sum, losses)
}

func (m timedModel) FILSqNorms(params, x []float32, y []int, clip models.Clip, coords [][]int, out []float64) error {
	*m.fils++
	return m.Model.FILSqNorms(params, x, y, clip, coords, out)
}

func (m timedModel) TimeDeviceSeconds(fn func() error) (wall, wait, device float64, err error) {
	t0 := time.Now()
	err = fn()
	wall = time.Since(t0).Seconds()
	return wall, wall / 4, wall / 2, err
}

// TestRunDeviceTiming: a device model that times its work gets the split reported
// per timed call (issue = wall − wait, the device's time as it says), and the
// Warmup calls of each path are made first and left out of the timing.
func TestRunDeviceTiming(t *testing.T) {
	grads, fils := 0, 0
	req := enginebench.Request{Model: "mlp", Batch: 4, Coords: 2, Device: "fake", Warmup: 3,
		OpenDevice: func(arch models.Arch, device string) (models.Model, error) {
			m, err := models.NewCPUModel(arch)
			return timedModel{m, &grads, &fils}, err
		}}
	r, err := enginebench.Run(req)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		tm    *enginebench.DeviceTiming
		calls int
	}{{"gradient", r.Device.GradTiming, grads}, {"FIL", r.Device.FILTiming, fils}} {
		tm := c.tm
		if tm == nil {
			t.Fatalf("%s: no timing", c.name)
		}
		if tm.Calls != c.calls-3 || tm.Calls < 3 {
			t.Errorf("%s: %d timed calls of %d made, want all but the 3 warm-up calls", c.name, tm.Calls, c.calls)
		}
		if !(tm.WallS > 0) || math.Abs(tm.HostWait-tm.WallS/4) > 1e-12 || math.Abs(tm.HostIssS-0.75*tm.WallS) > 1e-12 ||
			math.Abs(tm.DeviceS-tm.WallS/2) > 1e-12 {
			t.Errorf("%s: timing %+v", c.name, *tm)
		}
	}
	var buf strings.Builder
	r.WriteText(&buf)
	if !strings.Contains(buf.String(), "host issue") || !strings.Contains(buf.String(), "device time (events") {
		t.Errorf("human summary lacks the timing lines:\n%s", buf.String())
	}
}

// TestRunConvAlgo runs the engine benchmark on cifar-cnn with Winograd conv layers
// (a tiny batch) and checks that the report names the algorithm.
func TestRunConvAlgo(t *testing.T) {
	r, err := enginebench.Run(enginebench.Request{Model: "cifar-cnn", Batch: 2, Coords: 1, FILBatch: 1, ConvAlgo: "winograd"})
	if err != nil {
		t.Fatal(err)
	}
	if r.ConvAlgo != "winograd" || r.Grad.Samples < 2 {
		t.Errorf("conv algorithm %q, %d samples timed", r.ConvAlgo, r.Grad.Samples)
	}
	var buf strings.Builder
	r.WriteText(&buf)
	if !strings.Contains(buf.String(), "conv algorithm winograd") {
		t.Errorf("summary does not name the conv algorithm:\n%s", buf.String())
	}
}
