// Command dpfilbench is the dpfil side of the PyTorch comparison in
// scripts/bench-torch: it exports a model's parameters, inputs and the engine's
// outputs as .npy files (so that torch_peer.py can check that it computes the same
// numbers), times the engine's clipped per-sample gradient sum or FIL step for a
// given number of seconds (wall and process CPU time, as JSON), and times the
// engine's own packed SGEMM on 1024³ products (one per thread) for the GEMM-rate
// comparison.
//
//	dpfilbench export -model mnist-cnn -batch 8 -coords 5 -out DIR
//	dpfilbench time -model cifar-cnn -path grad -batch 200 -seconds 10 -workers 2 [-clip-algo auto] [-conv-algo winograd]
//	dpfilbench gemm -seconds 5 -threads 2
//	dpfilbench flops -model mnist-cnn -coords 50
//
// It is a benchmark tool only; nothing in the project depends on it.
package main

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"time"

	"github.com/dpfil/dpfil/models"
	"github.com/dpfil/dpfil/models/enginebench"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "dpfilbench:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return errors.New("usage: dpfilbench export|time|gemm|flops [flags]")
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	model := fs.String("model", "mnist-cnn", "architecture")
	batch := fs.Int("batch", 8, "samples per call")
	coords := fs.Int("coords", 50, "FIL coordinates per sample (k)")
	seed := fs.Uint64("seed", 1, "seed of parameters, inputs, labels and coordinates")
	out := fs.String("out", "", "export: output directory")
	path := fs.String("path", "grad", "time: grad or fil")
	clipAlgo := fs.String("clip-algo", "per-sample", "time: the gradient path's clipping algorithm (per-sample, ghost, auto)")
	convAlgo := fs.String("conv-algo", "direct", "time: the gradient path's conv algorithm (direct, winograd, winograd4, auto; under -clip-algo ghost/auto for the layers that form per-sample gradients)")
	seconds := fs.Float64("seconds", 5, "time/gemm: minimum seconds")
	workers := fs.Int("workers", 2, "time: engine workers (GOMAXPROCS)")
	threads := fs.Int("threads", 2, "gemm: threads, one 1024³ product each")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	switch args[0] {
	case "export":
		if *out == "" {
			return errors.New("export needs -out")
		}
		return export(*model, *batch, *coords, *seed, *out)
	case "time":
		runtime.GOMAXPROCS(*workers)
		return timePath(*model, *path, *batch, *coords, *seed, *seconds, *clipAlgo, *convAlgo)
	case "gemm":
		runtime.GOMAXPROCS(*threads)
		return gemmRate(*threads, *seconds)
	case "flops":
		arch, err := models.ArchByName(*model)
		if err != nil {
			return err
		}
		fl, err := models.CountFLOPs(arch, *coords)
		if err != nil {
			return err
		}
		return json.NewEncoder(os.Stdout).Encode(map[string]float64{
			"per_sample_grad": fl.PerSampleGrad, "fil_direction": fl.FILDirection, "fil_step": fl.FILStep})
	}
	return fmt.Errorf("unknown command %q (export, time, gemm, flops)", args[0])
}

// clip is the clipping of dpfil bench engine: smooth, C = 1, exact GELU.
var clip = models.Clip{Mode: models.ClipSmooth, C: 1}

// problem is a model with its parameters, inputs, labels and FIL coordinates.
type problem struct {
	m      models.Model
	params []float32
	x      []float32
	y      []int
	coords [][]int
}

func newProblem(name string, batch, k int, seed uint64) (*problem, error) {
	arch, err := models.ArchByName(name)
	if err != nil {
		return nil, err
	}
	m, err := models.NewCPUModel(arch)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(seed, 7))
	d := m.InputDim()
	p := &problem{m: m, params: m.Init(seed), x: make([]float32, batch*d), y: make([]int, batch), coords: make([][]int, batch)}
	for i := range p.x {
		p.x[i] = rng.Float32()
	}
	for s := range p.y {
		p.y[s] = rng.IntN(arch.Classes)
		p.coords[s] = make([]int, k)
		for j := range p.coords[s] {
			p.coords[s][j] = rng.IntN(d)
		}
	}
	return p, nil
}

// export writes params.npy, x.npy, y.npy, coords.npy and the engine's outputs:
// clipped.npy (per-sample clipped gradients), sum.npy (their sum), losses.npy and
// fil.npy (FILSqNorms).
func export(name string, batch, k int, seed uint64, dir string) error {
	p, err := newProblem(name, batch, k, seed)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	P, d := p.m.NumParams(), p.m.InputDim()
	net := p.m.(interface {
		Network() *models.Network[float32]
	}).Network()
	clipped, _, err := net.ClippedGrads(p.params, p.x, p.y, batch, clip)
	if err != nil {
		return fmt.Errorf("export: clipped gradients: %w", err)
	}
	sum := make([]float32, P)
	losses := make([]float64, batch)
	if err := p.m.ClippedGradSum(p.params, p.x, p.y, clip, sum, losses); err != nil {
		return fmt.Errorf("export: clipped sum: %w", err)
	}
	fil := make([]float64, batch)
	if err := p.m.FILSqNorms(p.params, p.x, p.y, clip, p.coords, fil); err != nil {
		return fmt.Errorf("export: FIL: %w", err)
	}
	y := make([]int64, batch)
	cs := make([]int64, 0, batch*k)
	for s := range p.y {
		y[s] = int64(p.y[s])
		for _, c := range p.coords[s] {
			cs = append(cs, int64(c))
		}
	}
	files := []struct {
		name  string
		shape []int
		data  any
	}{
		{"params.npy", []int{P}, p.params},
		{"x.npy", []int{batch, d}, p.x},
		{"y.npy", []int{batch}, y},
		{"coords.npy", []int{batch, k}, cs},
		{"clipped.npy", []int{batch, P}, clipped},
		{"sum.npy", []int{P}, sum},
		{"losses.npy", []int{batch}, losses},
		{"fil.npy", []int{batch}, fil},
	}
	for _, f := range files {
		if err := writeNPY(filepath.Join(dir, f.name), f.shape, f.data); err != nil {
			return fmt.Errorf("export: %w", err)
		}
	}
	return nil
}

// writeNPY writes a little-endian .npy file (format 1.0) of float32, float64 or
// int64 values.
func writeNPY(path string, shape []int, data any) error {
	var descr string
	switch data.(type) {
	case []float32:
		descr = "<f4"
	case []float64:
		descr = "<f8"
	case []int64:
		descr = "<i8"
	default:
		return fmt.Errorf("%s: unsupported type %T", path, data)
	}
	sh := ""
	for _, v := range shape {
		sh += fmt.Sprintf("%d, ", v)
	}
	if len(shape) > 1 {
		sh = sh[:len(sh)-2]
	}
	header := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", descr, sh)
	// magic (6) + version (2) + length (2) + header + '\n', padded to 64 bytes.
	total := 10 + len(header) + 1
	pad := (64 - total%64) % 64
	header += spaces(pad) + "\n"
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	buf := append([]byte("\x93NUMPY\x01\x00"), byte(len(header)), byte(len(header)>>8))
	buf = append(buf, header...)
	if _, err := f.Write(buf); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := binary.Write(f, binary.LittleEndian, data); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}

func spaces(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = ' '
	}
	return string(b)
}

// cpuSeconds is the process's user+system CPU time.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return math.NaN()
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// result is one timing, printed as JSON.
type result struct {
	Model    string  `json:"model"`
	Path     string  `json:"path"`
	Batch    int     `json:"batch"`
	Coords   int     `json:"coords,omitempty"`
	Workers  int     `json:"workers"`
	ClipAlgo string  `json:"clip_algo,omitempty"`
	ConvAlgo string  `json:"conv_algo,omitempty"`
	Calls    int     `json:"calls"`
	Samples  int     `json:"samples"`
	Wall     float64 `json:"wall_s"`
	CPU      float64 `json:"cpu_s"`
	GFLOPs   float64 `json:"gflop_per_s,omitempty"`
	GFLOPCPU float64 `json:"gflop_per_cpu_s,omitempty"`
}

// setAlgo parses the -flag value and, unless it is the default def, sets it on m
// through the setter interface S: only on the grad path (fil says why not on the
// FIL step) and only where m implements S (what names the algorithm). It returns
// the parsed algorithm.
func setAlgo[A comparable, S any](flag, value string, parse func(string) (A, error), def A, path string,
	m models.Model, set func(S, A) error, fil, what string) (A, error) {
	algo, err := parse(value)
	if err != nil || algo == def {
		return algo, err
	}
	if path != "grad" {
		return algo, fmt.Errorf("-%s %s: %s", flag, value, fil)
	}
	s, ok := any(m).(S)
	if !ok {
		return algo, fmt.Errorf("-%s %s: the model cannot switch its %s", flag, value, what)
	}
	return algo, set(s, algo)
}

// timePath runs the clipped gradient sum (grad) or the FIL step (fil) of batch
// samples once to warm up, then for at least seconds, and prints the timing.
func timePath(name, path string, batch, k int, seed uint64, seconds float64, clipAlgo, convAlgo string) error {
	p, err := newProblem(name, batch, k, seed)
	if err != nil {
		return err
	}
	algo, err := setAlgo("clip-algo", clipAlgo, models.ParseClipAlgo, models.ClipPerSample, path, p.m,
		models.ClipAlgoSetter.SetClipAlgo, "the FIL step runs per sample only", "clipping algorithm")
	if err != nil {
		return err
	}
	conv, err := setAlgo("conv-algo", convAlgo, models.ParseConvAlgo, models.ConvDirect, path, p.m,
		models.ConvAlgoSetter.SetConvAlgo, "the FIL step runs direct convolutions only", "conv algorithm")
	if err != nil {
		return err
	}
	var call func() error
	switch path {
	case "grad":
		sum := make([]float32, p.m.NumParams())
		losses := make([]float64, batch)
		call = func() error { return p.m.ClippedGradSum(p.params, p.x, p.y, clip, sum, losses) }
	case "fil":
		out := make([]float64, batch)
		call = func() error { return p.m.FILSqNorms(p.params, p.x, p.y, clip, p.coords, out) }
	default:
		return fmt.Errorf("unknown path %q (grad, fil)", path)
	}
	if err := call(); err != nil {
		return err
	}
	res := result{Model: name, Path: path, Batch: batch, Workers: runtime.GOMAXPROCS(0), ClipAlgo: algo.String(), ConvAlgo: conv.String()}
	if path == "fil" {
		res.Coords = k
	}
	t0, c0 := time.Now(), cpuSeconds()
	for res.Calls == 0 || time.Since(t0).Seconds() < seconds {
		if err := call(); err != nil {
			return err
		}
		res.Calls++
	}
	res.Wall, res.CPU = time.Since(t0).Seconds(), cpuSeconds()-c0
	res.Samples = res.Calls * batch
	fl, err := models.CountFLOPs(p.m.Arch(), k)
	if err == nil {
		f := fl.PerSampleGrad
		if path == "fil" {
			f = fl.FILStep
		}
		res.GFLOPs = f * float64(res.Samples) / res.Wall / 1e9
		res.GFLOPCPU = f * float64(res.Samples) / res.CPU / 1e9
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}

// gemmRate runs the engine's float32 GEMM (models.NewCPUBackend, the packed AVX-512
// kernel on this CPU) on a 1024³ product per thread for at least seconds.
func gemmRate(threads int, seconds float64) error {
	r := enginebench.SGEMM(seconds, threads)
	return json.NewEncoder(os.Stdout).Encode(map[string]any{
		"path": "sgemm1024", "threads": threads, "products": r.Products, "wall_s": r.WallSeconds, "cpu_s": r.CPUSeconds,
		"gflop_per_s": r.GFLOPPerSecond(), "gflop_per_cpu_s": r.GFLOPPerCPUSecond(),
	})
}
