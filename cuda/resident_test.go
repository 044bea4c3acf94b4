package cuda_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/dpfil/dpfil/cuda"
	"github.com/dpfil/dpfil/data"
	"github.com/dpfil/dpfil/models"
	"github.com/dpfil/dpfil/train"
)

// residentSplit is the head of the embedded MNIST.
func residentSplit(t *testing.T, nTrain, nTest int) *data.Split {
	t.Helper()
	split, err := data.Load("mnist-embedded", data.Options{NoDownload: true})
	if err != nil {
		t.Fatal(err)
	}
	if split.Train, err = split.Train.Head(nTrain); err != nil {
		t.Fatal(err)
	}
	if split.Test, err = split.Test.Head(nTest); err != nil {
		t.Fatal(err)
	}
	return split
}

// openModel opens arch on a fresh driver of dev (plain device memory).
func openModel(t *testing.T, dev string, arch models.Arch) *cuda.Model {
	t.Helper()
	drv, err := cuda.SharedTestDriver(dev)
	if err != nil {
		t.Fatal(err)
	}
	m, err := cuda.Open(arch, drv)
	if err != nil {
		t.Fatal(err)
	}
	if !m.Resident() {
		t.Fatalf("%s on %s: not on plain device memory", arch.Name, dev)
	}
	return m
}

// loadResident uploads n images to m's resident data set and sets its parameters
// to 0.05·sin(i) (momentum zero), the state the resident tests step from; it
// returns the parameter count and input dimension.
func loadResident(t *testing.T, m *cuda.Model, images []float32, n int) (P, D int) {
	t.Helper()
	if err := m.ResidentLoad(images, n, nil, 0); err != nil {
		t.Fatal(err)
	}
	P, D = m.NumParams(), m.InputDim()
	w0 := make([]float64, P)
	for i := range w0 {
		w0[i] = 0.05 * math.Sin(float64(i))
	}
	if err := m.ResidentSetState(w0, make([]float64, P)); err != nil {
		t.Fatal(err)
	}
	return P, D
}

// TestResidentStepTransfers trains on the device with the data resident and checks
// what the driver counted per DP-SGD step (result.json's "device"): host → device at
// most the batch indices plus O(batch) scalars (labels) and the 16-byte state of the
// coordinate PCG — the device draws the FIL coordinates, nothing of size B·k goes up
// — device → host O(batch) scalars (losses, FIL values, the divergence count and the
// draw's count), nothing of size P either way, and the same number of
// synchronisations per step at batch 16 and 64 (3: losses, FIL values, the update's
// counts).
func TestResidentStepTransfers(t *testing.T) {
	arch, err := models.ArchByName("mnist-cnn")
	if err != nil {
		t.Fatal(err)
	}
	split := residentSplit(t, 128, 32)
	for _, dev := range devices() {
		t.Run(dev, func(t *testing.T) {
			var syncs []float64
			for _, B := range []int{16, 64} {
				m := openModel(t, dev, arch)
				cfg := train.DefaultConfig()
				const k = 4
				cfg.Model, cfg.Batch, cfg.Steps, cfg.FILCoords, cfg.Sigma, cfg.Seed = "mnist-cnn", B, 2, k, 1, 5
				cfg.Sampling = train.SamplingShuffle // fixed-size batches: every step has B indices
				res, err := train.Run(context.Background(), cfg, train.Options{Data: split, Model: m})
				m.Close()
				if err != nil {
					t.Fatal(err)
				}
				d := res.Device
				if d == nil || !d.Resident || d.StepsCounted != cfg.Steps {
					t.Fatalf("batch %d: device report %+v: want a resident run of %d steps", B, d, cfg.Steps)
				}
				P := float64(m.NumParams())
				up, down := d.MaxStep.HtoDBytes, d.MaxStep.DtoHBytes
				// indices + labels (once per graphed call: twice) + the coordinate
				// PCG's 16-byte state (no coordinates: 8·B·k bytes before) + 2 KiB of
				// per-call constants (the reductions' tensor tables, uploaded by every
				// graphed call).
				upBound := 4*float64(B)*3 + 16 + 2048
				downBound := 4*float64(B) + 8*float64(B) + 16 + 64
				if d.BatchIndexBytes != 4*float64(B) || up > upBound || up >= 4*P {
					t.Errorf("batch %d: %.0f bytes to the device per step (indices %.0f), want ≤ %.0f and ≪ 4P = %.0f", B, up, d.BatchIndexBytes, upBound, 4*P)
				}
				if down > downBound || down >= 4*P {
					t.Errorf("batch %d: %.0f bytes to the host per step, want ≤ %.0f", B, down, downBound)
				}
				if d.MaxStep.Syncs != d.PerStep.Syncs || d.MaxStep.Syncs > 3 {
					t.Errorf("batch %d: %.1f synchronisations per step on average, at most %.0f: want the same every step, ≤ 3", B, d.PerStep.Syncs, d.MaxStep.Syncs)
				}
				syncs = append(syncs, d.MaxStep.Syncs)
				t.Logf("batch %d, k = %d: per step %.0f bytes in (%.0f of indices), %.0f bytes out, %.0f syncs, %.0f launches, %.0f GEMMs; %d bytes uploaded once",
					B, k, d.PerStep.HtoDBytes, d.BatchIndexBytes, d.PerStep.DtoHBytes, d.PerStep.Syncs, d.PerStep.Launches, d.PerStep.Gemms, d.UploadBytes)
			}
			if syncs[0] != syncs[1] {
				t.Errorf("synchronisations per step grow with the batch: %v at batch 16 and 64", syncs)
			}
		})
	}
}

// comparable is result.json without what differs between an interrupted and an
// uninterrupted run (timings, the commit, the device counts of the last segment).
func comparable(t *testing.T, dir string) []byte {
	t.Helper()
	r, err := train.ReadResult(dir)
	if err != nil {
		t.Fatal(err)
	}
	r.WallSeconds, r.StepSeconds, r.SamplesPerSec, r.GitCommit, r.Device = 0, 0, 0, "", nil
	b, err := json.MarshalIndent(r, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestResidentResumeBitIdentical kills a device-resident run after a checkpoint,
// resumes it on a fresh device and compares result.json (minus timings), dfil.npy and
// the parameters with an uninterrupted device run, bit for bit: the checkpoint holds
// the device's float64 parameters and momentum, and the noise is a function of the
// step.
func TestResidentResumeBitIdentical(t *testing.T) {
	arch, err := models.ArchByName("mnist-cnn")
	if err != nil {
		t.Fatal(err)
	}
	split := residentSplit(t, 96, 32)
	cfg := train.DefaultConfig()
	cfg.Model, cfg.Batch, cfg.Steps, cfg.FILCoords, cfg.Sigma, cfg.Seed, cfg.EvalEvery = "mnist-cnn", 16, 6, 2, 1, 9, 3
	for _, dev := range devices() {
		t.Run(dev, func(t *testing.T) {
			full := t.TempDir()
			m := openModel(t, dev, arch)
			_, err := train.Run(context.Background(), cfg, train.Options{Out: full, Data: split, Model: m})
			m.Close()
			if err != nil {
				t.Fatal(err)
			}
			killed := t.TempDir()
			ctx, cancel := context.WithCancel(context.Background())
			m = openModel(t, dev, arch)
			_, err = train.Run(ctx, cfg, train.Options{Out: killed, Data: split, Model: m, CheckpointEvery: 2,
				Progress: func(e train.Event) {
					if e.Step == 4 {
						cancel()
					}
				}})
			m.Close()
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("killed run returned %v, want context.Canceled", err)
			}
			m = openModel(t, dev, arch)
			_, err = train.Run(context.Background(), cfg, train.Options{Out: killed, Data: split, Model: m, Resume: true})
			m.Close()
			if err != nil {
				t.Fatal(err)
			}
			if a, b := comparable(t, full), comparable(t, killed); !bytes.Equal(a, b) {
				t.Fatalf("resumed result differs:\n%s\nvs\n%s", a, b)
			}
			for _, f := range []string{train.DFILFile, train.ParamsFile} {
				x, _ := os.ReadFile(filepath.Join(full, f))
				y, _ := os.ReadFile(filepath.Join(killed, f))
				if len(x) == 0 || !bytes.Equal(x, y) {
					t.Fatalf("%s differs after resume (%d vs %d bytes)", f, len(x), len(y))
				}
			}
		})
	}
}

// TestResidentGraphReplay runs device-resident steps (gradient sum, FIL, update) of
// one shape with the CUDA graphs on and off: from the third step on, the gradient
// and FIL calls replay their graphs, and every step must then cost at most 10 host
// driver calls and give bit for bit the losses, FIL values, divergence counts and
// parameters of the run without graphs.
func TestResidentGraphReplay(t *testing.T) {
	arch, err := models.ArchByName("mnist-cnn")
	if err != nil {
		t.Fatal(err)
	}
	split := residentSplit(t, 128, 0)
	const B, k, steps = 24, 4, 6
	type result struct {
		losses, fil []float64
		bad         []int
		w           []float64
		hostCalls   []int64
	}
	run := func(dev string, graphs bool) result {
		m := openModel(t, dev, arch)
		defer m.Close()
		if err := m.SetGraphs(graphs); err != nil {
			t.Fatal(err)
		}
		tr := split.Train
		P, D := loadResident(t, m, tr.Images, tr.N)
		clip := models.Clip{Mode: models.ClipSmooth, C: 1}
		var res result
		for step := 0; step < steps; step++ {
			idx, y, coords := make([]int, B), make([]int, B), make([][]int, B)
			for s := range idx {
				idx[s] = (step*37 + s*5) % tr.N
				y[s] = tr.Labels[idx[s]]
				coords[s] = make([]int, k)
				for j := range coords[s] {
					coords[s][j] = (step*101 + s*13 + j*7) % D
				}
			}
			losses, fil := make([]float64, B), make([]float64, B)
			before := m.DeviceCounts()
			if err := m.ResidentGradSum(idx, y, clip, losses); err != nil {
				t.Fatal(err)
			}
			if err := m.ResidentFIL(idx, y, clip, coords, fil); err != nil {
				t.Fatal(err)
			}
			bad, err := m.ResidentUpdate(3, step, 0.5, B, 0.1, 0.9, 1e-4)
			if err != nil {
				t.Fatal(err)
			}
			c := m.DeviceCounts().Sub(before)
			res.losses = append(res.losses, losses...)
			res.fil = append(res.fil, fil...)
			res.bad = append(res.bad, bad)
			res.hostCalls = append(res.hostCalls, c.HostCalls)
			t.Logf("%s, graphs %v, step %d: %d host driver calls (%d graph launches, %d captures), %d launches + %d GEMMs queued, %d syncs",
				dev, graphs, step, c.HostCalls, c.GraphLaunches, c.Captures, c.Launches, c.Gemms, c.Syncs)
		}
		res.w = make([]float64, P)
		if err := m.ResidentState(res.w, nil); err != nil {
			t.Fatal(err)
		}
		return res
	}
	for _, dev := range devices() {
		t.Run(dev, func(t *testing.T) {
			on, off := run(dev, true), run(dev, false)
			for step, hc := range on.hostCalls {
				if step >= 2 && hc > 10 {
					t.Errorf("step %d: %d host driver calls with the graphs replayed, want ≤ 10", step, hc)
				}
			}
			if on.hostCalls[steps-1] >= off.hostCalls[steps-1] {
				t.Errorf("graphs do not reduce the host calls: %d vs %d", on.hostCalls[steps-1], off.hostCalls[steps-1])
			}
			same := func(name string, a, b []float64) {
				for i := range a {
					if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
						t.Fatalf("%s[%d]: %v with graphs, %v without", name, i, a[i], b[i])
					}
				}
			}
			same("losses", on.losses, off.losses)
			same("FIL", on.fil, off.fil)
			same("parameters", on.w, off.w)
			for i := range on.bad {
				if on.bad[i] != off.bad[i] {
					t.Fatalf("step %d: %d non-finite parameters with graphs, %d without", i, on.bad[i], off.bad[i])
				}
			}
		})
	}
}
