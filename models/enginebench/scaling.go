package enginebench

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dpfil/dpfil/models"
)

// ScalingRequest configures Scaling: how the engine's cost grows with the batch
// size, the width of the network and the FIL coordinates k, each point beside the
// FLOP model's prediction. Zero values take the defaults of DefaultScaling.
type ScalingRequest struct {
	// Arch is the base architecture (e.g. models.ArchByName("mnist-cnn") or a
	// resolved --arch file).
	Arch models.Arch
	// Batches are the batch sizes of the DP-SGD step sweep (clipped per-sample
	// gradient sum of a batch, a fresh model per size so that its workspace's
	// allocation is measured).
	Batches []int
	// Widths are the factors applied to every conv layer's output channels for the
	// width sweep, timed at WidthBatch samples per step.
	Widths     []int
	WidthBatch int
	// Coords are the FIL coordinates per sample of the FIL sweep, timed on
	// FILBatch samples per call; a k above the input dimension is an error.
	Coords   []int
	FILBatch int
	// Seconds is the minimum timed seconds per point (at least one call).
	Seconds float64
	// Seed draws the parameters, inputs, labels and coordinates.
	Seed uint64
}

// DefaultScaling is the request of `dpfil bench scaling` without flags, with arch
// as the base.
func DefaultScaling(arch models.Arch) ScalingRequest {
	return ScalingRequest{Arch: arch, Batches: []int{16, 64, 256, 1024, 4096}, Widths: []int{1, 2, 4},
		WidthBatch: 256, Coords: []int{1, 10, 50, 200, 784}, FILBatch: 8, Seconds: 1, Seed: 1}
}

// ScalingPoint is one measured point: the CPU and wall seconds of one call
// (a DP-SGD step's gradient work, or one FIL step of FILBatch samples), the FLOPs
// the FLOP model counts for it, and their time at the engine's SGEMM rate.
type ScalingPoint struct {
	Arch   string `json:"arch"`
	Params int    `json:"params"`
	Batch  int    `json:"batch"`
	Width  int    `json:"width,omitempty"`
	Coords int    `json:"coords,omitempty"`
	Calls  int    `json:"calls"`
	// CPUSeconds and WallSeconds are per call (process CPU time, all threads).
	CPUSeconds  float64 `json:"cpu_s"`
	WallSeconds float64 `json:"wall_s"`
	// FLOPs is models.CountFLOPs' count for the call; PredictedCPUSeconds is FLOPs
	// at the engine's SGEMM rate per CPU-second; TimesPredicted is CPUSeconds over it.
	FLOPs               float64 `json:"flops"`
	PredictedCPUSeconds float64 `json:"predicted_cpu_s"`
	TimesPredicted      float64 `json:"times_predicted"`
	// PeakHeapBytes is the largest Go heap (objects, sampled every 0.5 ms, and at
	// the end) during the first call on a fresh model, above the heap before it
	// (parameters and inputs excluded): the workspaces plus the call's transients.
	// AllocBytes is what that call allocated in all. Batch sweep only.
	PeakHeapBytes uint64 `json:"peak_heap_bytes,omitempty"`
	AllocBytes    uint64 `json:"alloc_bytes,omitempty"`
}

// ScalingReport is the result of Scaling.
type ScalingReport struct {
	Arch     string `json:"arch"`
	InputDim int    `json:"input_dim"`
	Workers  int    `json:"workers"`
	// SGEMMGFLOPPerCPUs is the engine's packed SGEMM (1024³, one product per
	// worker) in GFLOP per CPU-second, the mean of a measurement before and after
	// the sweeps; the predictions use it.
	SGEMMGFLOPPerCPUs float64 `json:"sgemm_gflop_per_cpu_s"`
	// LoadAverage is the 1-minute load average before and after (0: unknown).
	LoadAverage [2]float64     `json:"load_average"`
	Batch       []ScalingPoint `json:"batch"`
	Width       []ScalingPoint `json:"width"`
	FIL         []ScalingPoint `json:"fil"`
	// Plots are the figures ScalingPlots wrote, if any.
	Plots []string `json:"plots,omitempty"`
}

func (r ScalingRequest) validate() error {
	if len(r.Arch.Layers) == 0 {
		return errors.New("scaling benchmark: no architecture")
	}
	d := r.Arch.InputDim()
	for _, b := range r.Batches {
		if b < 1 {
			return fmt.Errorf("scaling benchmark: batch %d < 1", b)
		}
	}
	for _, w := range r.Widths {
		if w < 1 {
			return fmt.Errorf("scaling benchmark: width factor %d < 1", w)
		}
	}
	for _, k := range r.Coords {
		if k < 1 || k > d {
			return fmt.Errorf("scaling benchmark: FIL coordinates %d outside 1..%d (the input dimension)", k, d)
		}
	}
	if len(r.Widths) > 0 && r.WidthBatch < 1 {
		return fmt.Errorf("scaling benchmark: width batch %d < 1", r.WidthBatch)
	}
	if len(r.Coords) > 0 && r.FILBatch < 1 {
		return fmt.Errorf("scaling benchmark: FIL batch %d < 1", r.FILBatch)
	}
	if r.Seconds < 0 {
		return fmt.Errorf("scaling benchmark: seconds %g < 0", r.Seconds)
	}
	return nil
}

// Widen returns arch with every conv layer's output channels multiplied by f
// (f = 1: arch itself), named NAME-xF.
func Widen(arch models.Arch, f int) (models.Arch, error) {
	if f == 1 {
		return arch, nil
	}
	if f < 1 {
		return models.Arch{}, fmt.Errorf("widen %s: factor %d < 1", arch.Name, f)
	}
	s := models.SpecOf(arch)
	s.Name = fmt.Sprintf("%s-x%d", arch.Name, f)
	for i := range s.Layers {
		if s.Layers[i].Kind == models.KindConv {
			s.Layers[i].Out *= f
		}
	}
	a, err := s.Resolve(arch.Input, arch.Classes)
	if err != nil {
		return models.Arch{}, fmt.Errorf("widen %s by %d: %w", arch.Name, f, err)
	}
	return a, nil
}

// Scaling runs the three sweeps of req and returns their points. It returns an
// error for an invalid request or a failing kernel.
func Scaling(req ScalingRequest) (*ScalingReport, error) {
	if err := req.validate(); err != nil {
		return nil, err
	}
	workers := runtime.GOMAXPROCS(0)
	rep := &ScalingReport{Arch: req.Arch.Name, InputDim: req.Arch.InputDim(), Workers: workers}
	rep.LoadAverage[0] = loadAverage()
	g0 := engineSGEMMRate(max(0.5, req.Seconds/2), workers)
	rng := rand.New(rand.NewPCG(req.Seed, 0x5ca1e))
	for _, b := range req.Batches {
		p, err := gradPoint(req.Arch, b, req.Seconds, req.Seed, rng, true)
		if err != nil {
			return nil, err
		}
		rep.Batch = append(rep.Batch, p)
	}
	for _, f := range req.Widths {
		a, err := Widen(req.Arch, f)
		if err != nil {
			return nil, fmt.Errorf("scaling benchmark: %w", err)
		}
		p, err := gradPoint(a, req.WidthBatch, req.Seconds, req.Seed, rng, false)
		if err != nil {
			return nil, err
		}
		p.Width = f
		rep.Width = append(rep.Width, p)
	}
	for _, k := range req.Coords {
		p, err := filPoint(req.Arch, req.FILBatch, k, req.Seconds, req.Seed, rng)
		if err != nil {
			return nil, err
		}
		rep.FIL = append(rep.FIL, p)
	}
	g1 := engineSGEMMRate(max(0.5, req.Seconds/2), workers)
	rep.SGEMMGFLOPPerCPUs = (g0 + g1) / 2
	rep.LoadAverage[1] = loadAverage()
	for _, ps := range [][]ScalingPoint{rep.Batch, rep.Width, rep.FIL} {
		for i := range ps {
			ps[i].PredictedCPUSeconds = ps[i].FLOPs / (rep.SGEMMGFLOPPerCPUs * 1e9)
			ps[i].TimesPredicted = ps[i].CPUSeconds / ps[i].PredictedCPUSeconds
		}
	}
	return rep, nil
}

// problem is a fresh CPU model of arch with parameters and a batch of inputs.
type problem struct {
	m      models.Model
	params []float32
	x      []float32
	y      []int
}

func newProblem(arch models.Arch, batch int, seed uint64, rng *rand.Rand) (*problem, error) {
	m, err := models.NewCPUModel(arch)
	if err != nil {
		return nil, fmt.Errorf("scaling benchmark: %w", err)
	}
	p := &problem{m: m, params: m.Init(seed), x: make([]float32, batch*m.InputDim()), y: make([]int, batch)}
	for i := range p.x {
		p.x[i] = rng.Float32()
	}
	for i := range p.y {
		p.y[i] = rng.IntN(arch.Classes)
	}
	return p, nil
}

// gradPoint times the clipped per-sample gradient sum of a batch (smooth clipping,
// C = 1) on a fresh model; with mem, the first call's heap is measured too.
func gradPoint(arch models.Arch, batch int, seconds float64, seed uint64, rng *rand.Rand, mem bool) (ScalingPoint, error) {
	pr, err := newProblem(arch, batch, seed, rng)
	if err != nil {
		return ScalingPoint{}, err
	}
	fl, err := models.CountFLOPs(arch, 0)
	if err != nil {
		return ScalingPoint{}, fmt.Errorf("scaling benchmark: %w", err)
	}
	clip := models.Clip{Mode: models.ClipSmooth, C: 1}
	sum := make([]float32, pr.m.NumParams())
	losses := make([]float64, batch)
	call := func() error { return pr.m.ClippedGradSum(pr.params, pr.x, pr.y, clip, sum, losses) }
	pt := ScalingPoint{Arch: arch.Name, Params: pr.m.NumParams(), Batch: batch, FLOPs: fl.PerSampleGrad * float64(batch)}
	if mem {
		var err error
		if pt.PeakHeapBytes, pt.AllocBytes, err = HeapDuring(call); err != nil {
			return pt, fmt.Errorf("scaling benchmark: %s batch %d: %w", arch.Name, batch, err)
		}
	} else if err := call(); err != nil { // warm-up: the workspaces
		return pt, fmt.Errorf("scaling benchmark: %s batch %d: %w", arch.Name, batch, err)
	}
	if err := timeCalls(seconds, &pt, call); err != nil {
		return pt, fmt.Errorf("scaling benchmark: %s batch %d: %w", arch.Name, batch, err)
	}
	return pt, nil
}

// filPoint times the FIL step with k distinct coordinates per sample (fresh ones
// per call) on batch samples.
func filPoint(arch models.Arch, batch, k int, seconds float64, seed uint64, rng *rand.Rand) (ScalingPoint, error) {
	pr, err := newProblem(arch, batch, seed, rng)
	if err != nil {
		return ScalingPoint{}, err
	}
	fl, err := models.CountFLOPs(arch, k)
	if err != nil {
		return ScalingPoint{}, fmt.Errorf("scaling benchmark: %w", err)
	}
	d := pr.m.InputDim()
	coords := make([][]int, batch)
	out := make([]float64, batch)
	clip := models.Clip{Mode: models.ClipSmooth, C: 1}
	call := func() error {
		for s := range coords {
			coords[s] = rng.Perm(d)[:k]
		}
		return pr.m.FILSqNorms(pr.params, pr.x, pr.y, clip, coords, out)
	}
	pt := ScalingPoint{Arch: arch.Name, Params: pr.m.NumParams(), Batch: batch, Coords: k, FLOPs: fl.FILStep * float64(batch)}
	if err := call(); err != nil {
		return pt, fmt.Errorf("scaling benchmark: FIL k = %d: %w", k, err)
	}
	if err := timeCalls(seconds, &pt, call); err != nil {
		return pt, fmt.Errorf("scaling benchmark: FIL k = %d: %w", k, err)
	}
	return pt, nil
}

// timeCalls calls fn until seconds have passed, at least once, and sets p's calls
// and per-call wall and CPU seconds.
func timeCalls(seconds float64, p *ScalingPoint, fn func() error) error {
	t0, c0 := time.Now(), processCPUTime()
	for p.Calls == 0 || time.Since(t0).Seconds() < seconds {
		if err := fn(); err != nil {
			return err
		}
		p.Calls++
	}
	p.WallSeconds = time.Since(t0).Seconds() / float64(p.Calls)
	p.CPUSeconds = (processCPUTime() - c0).Seconds() / float64(p.Calls)
	return nil
}

// heapObjects is the runtime metric of the bytes in heap objects (live and not yet
// swept).
const heapObjects = "/memory/classes/heap/objects:bytes"

// HeapDuring runs fn once after a garbage collection and returns the largest heap
// (objects, sampled every 0.5 ms and at the end) above the heap before fn, and the
// bytes fn allocated. The peak is a sample, so a shorter spike may be missed; the
// allocated bytes bound it from above.
func HeapDuring(fn func() error) (peak, alloc uint64, err error) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	total0 := ms.TotalAlloc
	s := []metrics.Sample{{Name: heapObjects}}
	metrics.Read(s)
	base := s[0].Value.Uint64()
	var (
		mu   sync.Mutex
		top  = base
		done = make(chan struct{})
		wg   sync.WaitGroup
	)
	sample := func(s []metrics.Sample) {
		metrics.Read(s)
		mu.Lock()
		top = max(top, s[0].Value.Uint64())
		mu.Unlock()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		s := []metrics.Sample{{Name: heapObjects}}
		t := time.NewTicker(500 * time.Microsecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				sample(s)
			}
		}
	}()
	err = fn()
	close(done)
	wg.Wait()
	sample(s)
	runtime.ReadMemStats(&ms)
	return top - base, ms.TotalAlloc - total0, err
}

// SGEMMRun is a timing of the engine's packed SGEMM on 1024³ products.
type SGEMMRun struct {
	Workers     int     `json:"threads"`
	Products    int     `json:"products"`
	WallSeconds float64 `json:"wall_s"`
	CPUSeconds  float64 `json:"cpu_s"` // wall × workers where the process CPU time is unknown
}

// GFLOPPerSecond and GFLOPPerCPUSecond are the run's rates.
func (r SGEMMRun) GFLOPPerSecond() float64    { return r.gflop() / r.WallSeconds }
func (r SGEMMRun) GFLOPPerCPUSecond() float64 { return r.gflop() / r.CPUSeconds }
func (r SGEMMRun) gflop() float64             { return 2 * 1024 * 1024 * 1024 * float64(r.Products) / 1e9 }

// SGEMM times the engine's packed SGEMM, one 1024³ product per worker at a time on
// its own operands, for at least seconds (and one product per worker).
func SGEMM(seconds float64, workers int) SGEMMRun {
	const n = 1024
	be := models.NewCPUBackend[float32]()
	reps := make([]int, workers)
	var wg sync.WaitGroup
	t0, c0 := time.Now(), processCPUTime()
	for w := range workers {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			a, b, c := make([]float32, n*n), make([]float32, n*n), make([]float32, n*n)
			for i := range a {
				a[i], b[i] = float32(i%7)-3, float32(i%5)-2
			}
			for reps[w] == 0 || time.Since(t0).Seconds() < seconds {
				be.Gemm(false, false, n, n, n, 1, a, n, b, n, 0, c, n)
				reps[w]++
			}
		}(w)
	}
	wg.Wait()
	r := SGEMMRun{Workers: workers, WallSeconds: time.Since(t0).Seconds(), CPUSeconds: (processCPUTime() - c0).Seconds()}
	for _, k := range reps {
		r.Products += k
	}
	if r.CPUSeconds <= 0 {
		r.CPUSeconds = r.WallSeconds * float64(workers)
	}
	return r
}

// engineSGEMMRate is the engine's packed SGEMM in GFLOP per CPU-second, measured
// for at least seconds.
func engineSGEMMRate(seconds float64, workers int) float64 {
	return SGEMM(seconds, workers).GFLOPPerCPUSecond()
}

// loadAverage is the 1-minute load average of /proc/loadavg, or 0 where there is
// none.
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return 0
	}
	return v
}
