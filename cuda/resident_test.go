package cuda_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
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

// TestResidentStepTransfers trains on the device with the data resident and checks
// what the driver counted per DP-SGD step (result.json's "device"): host → device at
// most the batch indices plus O(batch) scalars (labels, the FIL coordinates and their
// one-hot values: k per member), device → host O(batch) scalars (losses, FIL values,
// the divergence count), nothing of size P either way, and the same number of
// synchronisations per step at batch 16 and 64 (3: losses, FIL values, the update's
// count).
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
				// indices + labels + k coordinates and one-hot values per FIL member,
				// + 1 KiB of per-call constants (the reductions' tensor tables).
				upBound := 4*float64(B)*2 + 8*float64(B*k) + 1024
				downBound := 4*float64(B) + 8*float64(B) + 8 + 64
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
