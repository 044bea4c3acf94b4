package cuda_test

import (
	"context"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/dpfil/dpfil/cuda"
	"github.com/dpfil/dpfil/data"
	"github.com/dpfil/dpfil/models"
	"github.com/dpfil/dpfil/train"
	"github.com/dpfil/dpfil/train/fil"
)

// smallBudget is a chunk budget (float32 values) under which mnist-cnn's FIL call of
// 12 samples × 3 directions runs as more than one pass.
const smallBudget = 1 << 18

// TestResidentFILDrawnFallsBack: when the engine would run the FIL call in more
// than one pass (a small chunk budget), ResidentFILDrawn draws nothing and says so —
// no work queued, no count to read back — and a training run then draws the
// coordinates on the host: its dFIL and parameters match the CPU's as closely as
// with device draws (TestDPSGDMatchesCPU). On the emulator.
func TestResidentFILDrawnFallsBack(t *testing.T) {
	split, err := data.Load("mnist-embedded", data.Options{NoDownload: true})
	if err != nil {
		t.Fatal(err)
	}
	if split.Train, err = split.Train.Head(64); err != nil {
		t.Fatal(err)
	}
	if split.Test, err = split.Test.Head(32); err != nil {
		t.Fatal(err)
	}
	arch, err := models.ArchByName("mnist-cnn")
	if err != nil {
		t.Fatal(err)
	}
	open := func() *cuda.Model {
		m, err := cuda.Open(arch, cuda.NewEmulator())
		if err != nil {
			t.Fatal(err)
		}
		cuda.SetChunkBudgetForTest(m, smallBudget)
		return m
	}
	const B, k = 12, 3
	m := open()
	if cuda.FILOnePassForTest(m, B, k) {
		t.Fatalf("budget %d: the FIL call of %d × %d is one pass; the test needs more", smallBudget, B, k)
	}
	tr := split.Train
	if err := m.ResidentLoad(tr.Images, tr.N, nil, 0); err != nil {
		t.Fatal(err)
	}
	P := m.NumParams()
	if err := m.ResidentSetState(make([]float64, P), make([]float64, P)); err != nil {
		t.Fatal(err)
	}
	idx, y := make([]int, B), make([]int, B)
	for s := range idx {
		idx[s], y[s] = s, tr.Labels[s]
	}
	st, err := rand.NewPCG(1, 2).MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	before := m.DeviceCounts()
	drawn, err := m.ResidentFILDrawn(idx, y, models.Clip{Mode: models.ClipSmooth, C: 1}, k, m.InputDim(), st, make([]float64, B))
	if err != nil {
		t.Fatal(err)
	}
	if c := m.DeviceCounts().Sub(before); drawn || c.Launches+c.Gemms+c.HtoDBytes != 0 {
		t.Fatalf("multi-pass call: drawn %v, %d launches, %d GEMMs, %d bytes up; want nothing", drawn, c.Launches, c.Gemms, c.HtoDBytes)
	}
	if _, err := m.ResidentUpdate(1, 0, 0, B, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := m.ResidentCoordsUsed(); err == nil {
		t.Fatal("a draw count after a call that drew nothing")
	}
	m.Close()

	cfg := train.DefaultConfig()
	cfg.Model, cfg.Batch, cfg.Steps, cfg.FILCoords, cfg.Sigma, cfg.Seed = "mnist-cnn", B, 4, k, 1, 3
	cfg.Sampling = train.SamplingShuffle
	run := func(mod models.Model) ([]float32, []float64) {
		dir := t.TempDir()
		if _, err := train.Run(context.Background(), cfg, train.Options{Out: dir, Data: split, Model: mod}); err != nil {
			t.Fatal(err)
		}
		p, err := train.LoadParams(filepath.Join(dir, train.ParamsFile))
		if err != nil {
			t.Fatal(err)
		}
		f, err := fil.Load(filepath.Join(dir, train.DFILFile))
		if err != nil {
			t.Fatal(err)
		}
		return p, f
	}
	cpu, err := models.NewCPUModel(arch)
	if err != nil {
		t.Fatal(err)
	}
	wantP, wantF := run(cpu)
	m = open()
	defer m.Close()
	gotP, gotF := run(m)
	compared := 0
	for i, w := range wantF {
		if w == 0 && gotF[i] == 0 {
			continue
		}
		compared++
		if e := math.Abs(gotF[i]-w) / w; !(e <= 1e-4) {
			t.Fatalf("dFIL of sample %d: %v on the device (host-drawn coordinates), %v on the CPU", i, gotF[i], w)
		}
	}
	var num, den float64
	for i, w := range wantP {
		d := float64(gotP[i] - w)
		num, den = num+d*d, den+float64(w)*float64(w)
	}
	if e := math.Sqrt(num / den); !(e <= 1e-4) || compared < B {
		t.Fatalf("parameters within %.3g of the CPU's, %d samples' dFIL compared", e, compared)
	}
}
