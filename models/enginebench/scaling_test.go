package enginebench_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpfil/dpfil/models"
	"github.com/dpfil/dpfil/models/enginebench"
)

// TestScaling runs a small sweep of each kind on mnist-cnn and checks the points
// against the FLOP model: FLOPs per call are CountFLOPs' per-sample count times the
// batch, the prediction is FLOPs at the reported SGEMM rate, the widened
// architectures have the parameter counts of their channel factors, and the figures
// are written.
func TestScaling(t *testing.T) {
	arch, err := models.ArchByName("mnist-cnn")
	if err != nil {
		t.Fatal(err)
	}
	req := enginebench.ScalingRequest{Arch: arch, Batches: []int{2, 8}, Widths: []int{1, 2}, WidthBatch: 2,
		Coords: []int{1, 3}, FILBatch: 2, Seed: 1}
	r, err := enginebench.Scaling(req)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Batch) != 2 || len(r.Width) != 2 || len(r.FIL) != 2 || r.SGEMMGFLOPPerCPUs <= 0 {
		t.Fatalf("report %+v", r)
	}
	check := func(what string, p enginebench.ScalingPoint, a models.Arch, k int) {
		t.Helper()
		fl, err := models.CountFLOPs(a, k)
		if err != nil {
			t.Fatal(err)
		}
		per := fl.PerSampleGrad
		if k > 0 {
			per = fl.FILStep
		}
		if p.Params != a.NumParams() || p.FLOPs != per*float64(p.Batch) || p.Calls < 1 || p.CPUSeconds < 0 || p.WallSeconds <= 0 {
			t.Errorf("%s: %+v (want params %d, FLOPs %g)", what, p, a.NumParams(), per*float64(p.Batch))
		}
		if want := p.FLOPs / (r.SGEMMGFLOPPerCPUs * 1e9); p.PredictedCPUSeconds != want {
			t.Errorf("%s: predicted %g s, want %g", what, p.PredictedCPUSeconds, want)
		}
	}
	for i, p := range r.Batch {
		check("batch", p, arch, 0)
		if p.Batch != req.Batches[i] || p.AllocBytes == 0 {
			t.Errorf("batch point %d: %+v", i, p)
		}
	}
	for i, p := range r.Width {
		a, err := enginebench.Widen(arch, req.Widths[i])
		if err != nil {
			t.Fatal(err)
		}
		check("width", p, a, 0)
	}
	for i, p := range r.FIL {
		if p.Coords != req.Coords[i] {
			t.Errorf("FIL point %d: %+v", i, p)
		}
		check("FIL", p, arch, p.Coords)
	}
	var buf bytes.Buffer
	r.WriteText(&buf)
	for _, s := range []string{"against the batch size", "×2", "FIL step against the coordinates k"} {
		if !strings.Contains(buf.String(), s) {
			t.Errorf("text lacks %q:\n%s", s, buf.String())
		}
	}
	dir := t.TempDir()
	paths, err := enginebench.ScalingPlots(r, dir, "svg")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"scaling-batch-time", "scaling-batch-memory", "scaling-width", "scaling-fil-k"}
	if len(paths) != len(want) {
		t.Fatalf("plots %v", paths)
	}
	for i, p := range paths {
		if p != filepath.Join(dir, want[i]+".svg") {
			t.Errorf("plot %d: %s", i, p)
		}
		if b, err := os.ReadFile(p); err != nil || !bytes.Contains(b, []byte("<svg")) {
			t.Errorf("plot %s: %v", p, err)
		}
	}
}

// TestWiden checks the widened conv layers against hand counts: mnist-cnn's convs
// are 1→16 (8×8) and 16→32 (4×4), then a dense layer from 32·4·4 to 32.
func TestWiden(t *testing.T) {
	arch, err := models.ArchByName("mnist-cnn")
	if err != nil {
		t.Fatal(err)
	}
	count := func(f int) int {
		c1, c2 := 16*f, 32*f
		return c1*1*8*8 + c1 + c2*c1*4*4 + c2 + 32*(c2*4*4) + 32 + 10*32 + 10
	}
	for _, f := range []int{1, 2, 4} {
		a, err := enginebench.Widen(arch, f)
		if err != nil {
			t.Fatal(err)
		}
		if a.NumParams() != count(f) {
			t.Errorf("×%d: %d params, want %d", f, a.NumParams(), count(f))
		}
	}
	if arch.NumParams() != count(1) {
		t.Fatalf("mnist-cnn has %d params, the hand count %d: the test's layout is stale", arch.NumParams(), count(1))
	}
}

// TestScalingErrors checks that invalid requests are errors, not panics.
func TestScalingErrors(t *testing.T) {
	arch, err := models.ArchByName("mnist-cnn")
	if err != nil {
		t.Fatal(err)
	}
	for name, req := range map[string]enginebench.ScalingRequest{
		"no arch":      {},
		"batch 0":      {Arch: arch, Batches: []int{0}},
		"width 0":      {Arch: arch, Widths: []int{0}, WidthBatch: 1},
		"k over d":     {Arch: arch, Coords: []int{785}, FILBatch: 1},
		"k 0":          {Arch: arch, Coords: []int{0}, FILBatch: 1},
		"fil batch 0":  {Arch: arch, Coords: []int{1}},
		"width batch0": {Arch: arch, Widths: []int{1}},
		"seconds < 0":  {Arch: arch, Seconds: -1},
	} {
		if _, err := enginebench.Scaling(req); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := enginebench.ScalingPlots(&enginebench.ScalingReport{}, t.TempDir(), "png"); err == nil {
		t.Error("plots of an empty report: no error")
	}
}
