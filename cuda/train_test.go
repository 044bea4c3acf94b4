package cuda_test

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/dpfil/dpfil/cuda"
	"github.com/dpfil/dpfil/data"
	"github.com/dpfil/dpfil/models"
	"github.com/dpfil/dpfil/train"
	"github.com/dpfil/dpfil/train/fil"
)

// devices are the cuda devices this test binary runs on: the emulator always, the
// GPU in a cuda build.
func devices() []string {
	if cuda.HasGPU() {
		return []string{"cuda-emu", "cuda"}
	}
	return []string{"cuda-emu"}
}

// TestDPSGDMatchesCPU runs 20 DP-SGD steps of mnist-cnn with FIL accounting on the
// CPU backend and on the cuda backend with the same seed (so the same batches and
// noise, and the same FIL coordinates: the device draws the CPU's from the same PCG
// state and the host skips what it consumed) and compares the final parameters,
// every sample's dFIL and the accuracy; with fil_rate 1 and 0.5 (the host's
// selection draws interleave with the device's coordinate draws on one PCG).
func TestDPSGDMatchesCPU(t *testing.T) {
	for _, rate := range []float64{1, 0.5} {
		t.Run(fmt.Sprintf("fil_rate=%v", rate), func(t *testing.T) { dpsgdMatchesCPU(t, rate) })
	}
}

func dpsgdMatchesCPU(t *testing.T, rate float64) {
	split, err := data.Load("mnist-embedded", data.Options{NoDownload: true})
	if err != nil {
		t.Fatal(err)
	}
	if split.Train, err = split.Train.Head(256); err != nil {
		t.Fatal(err)
	}
	if split.Test, err = split.Test.Head(200); err != nil {
		t.Fatal(err)
	}
	cfg := train.DefaultConfig()
	cfg.Model, cfg.Batch, cfg.Steps, cfg.FILCoords, cfg.Sigma, cfg.Seed = "mnist-cnn", 32, 20, 4, 1, 3
	cfg.FILRate = rate
	run := func(m models.Model) (params []float32, dfil []float64, acc float64) {
		t.Helper()
		dir := t.TempDir()
		res, err := train.Run(context.Background(), cfg, train.Options{Out: dir, Data: split, Model: m})
		if err != nil {
			t.Fatal(err)
		}
		if params, err = train.LoadParams(filepath.Join(dir, train.ParamsFile)); err != nil {
			t.Fatal(err)
		}
		if dfil, err = fil.Load(filepath.Join(dir, train.DFILFile)); err != nil {
			t.Fatal(err)
		}
		return params, dfil, res.TestAccuracy
	}
	arch, err := models.ArchByName(cfg.Model)
	if err != nil {
		t.Fatal(err)
	}
	cpu, err := models.NewCPUModel(arch)
	if err != nil {
		t.Fatal(err)
	}
	wantP, wantF, wantAcc := run(cpu)
	for _, dev := range devices() {
		t.Run(dev, func(t *testing.T) {
			drv, err := cuda.SharedTestDriver(dev)
			if err != nil {
				t.Fatal(err)
			}
			m, err := cuda.Open(arch, drv)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			gotP, gotF, gotAcc := run(m)
			var num, den float64
			for i, w := range wantP {
				d := float64(gotP[i] - w)
				num += d * d
				den += float64(w) * float64(w)
			}
			if e := math.Sqrt(num / den); e > 1e-4 || math.IsNaN(e) {
				t.Errorf("final parameters: relative error %.3g > 1e-4", e)
			}
			sampled := 0
			for i, w := range wantF {
				if w == 0 && gotF[i] == 0 {
					continue
				}
				sampled++
				if e := math.Abs(gotF[i]-w) / w; e > 1e-4 || math.IsNaN(e) {
					t.Errorf("dFIL of sample %d: %v, CPU %v (relative error %.3g)", i, gotF[i], w, e)
				}
			}
			if float64(sampled) < 100*rate {
				t.Errorf("only %d samples have dFIL", sampled)
			}
			if math.Abs(gotAcc-wantAcc) > 0.011 {
				t.Errorf("test accuracy %v, CPU %v", gotAcc, wantAcc)
			}
			t.Logf("%s: %d samples' dFIL compared, accuracy %.3f (CPU %.3f)", m.Backend().Device(), sampled, gotAcc, wantAcc)
		})
	}
}
