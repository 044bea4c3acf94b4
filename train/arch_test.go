package train

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/dpfil/dpfil/internal/npy"
	"github.com/dpfil/dpfil/models"
)

// writeSquaresNPZ writes a synthetic 3-class dataset of 1×8×8 uint8 images (a bright
// 3×3 square whose position is the class, on noise) with a test part.
func writeSquaresNPZ(t *testing.T, path string, nTrain, nTest int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(3, 4))
	gen := func(n int) ([]byte, []int) {
		x := make([]byte, n*64)
		y := make([]int, n)
		for i := 0; i < n; i++ {
			c := i % 3
			y[i] = c
			for p := 0; p < 64; p++ {
				x[i*64+p] = byte(rng.IntN(60))
			}
			r0, c0 := 1+2*c, 4-c
			for r := r0; r < r0+3; r++ {
				for q := c0; q < c0+3; q++ {
					x[i*64+r*8+q] = byte(180 + rng.IntN(70))
				}
			}
		}
		return x, y
	}
	x, y := gen(nTrain)
	xt, yt := gen(nTest)
	enc := func(b []byte, err error) []byte {
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var buf bytes.Buffer
	if err := npy.WriteNPZ(&buf, []npy.Entry{
		{Name: "x", NPY: enc(npy.EncodeUint8([]int{nTrain, 1, 8, 8}, x))}, {Name: "y", NPY: enc(npy.EncodeInt64([]int{nTrain}, y))},
		{Name: "x_test", NPY: enc(npy.EncodeUint8([]int{nTest, 1, 8, 8}, xt))}, {Name: "y_test", NPY: enc(npy.EncodeInt64([]int{nTest}, yt))},
	}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

const conv3Spec = `
name: conv3-relu
layers:
  - {kind: conv, out: 6, kernel: 3, padding: same}
  - relu
  - {kind: conv, out: 6, kernel: 3, stride: 2, padding: same}
  - relu
  - {kind: conv, out: 4, kernel: 2}
  - relu
  - flatten
  - {kind: dense}
`

// TestCustomArchRun: a custom architecture trains through train.Run on user data;
// the result names it, records its resolved layers and hash, the data's fingerprint
// and dpfil's build version; the named parameters load back; the config hash covers
// the architecture and the data pin.
func TestCustomArchRun(t *testing.T) {
	dir := t.TempDir()
	npz := filepath.Join(dir, "squares.npz")
	writeSquaresNPZ(t, npz, 240, 60)
	spec, err := models.ParseArchSpec(strings.NewReader(conv3Spec))
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig().WithArch(spec)
	cfg.Dataset = "npz:" + npz
	cfg.Steps, cfg.Batch, cfg.LR, cfg.Sigma, cfg.FILCoords = 30, 40, 0.5, 0.5, 4
	out := filepath.Join(dir, "run")
	res, err := Run(context.Background(), cfg, Options{Out: out})
	if err != nil {
		t.Fatal(err)
	}
	if res.Config.Model != "conv3-relu" || res.Arch == nil || res.Arch.Name != "conv3-relu" || res.ArchHash != res.Arch.Hash() {
		t.Fatalf("result names %q, arch %+v, hash %q", res.Config.Model, res.Arch, res.ArchHash)
	}
	if res.Arch.Input != (models.Shape{C: 1, H: 8, W: 8}) || res.Arch.Classes != 3 || res.Arch.Layers[7].Out != 3 {
		t.Errorf("arch from the data: %+v", res.Arch)
	}
	if res.Dataset.Fingerprint == "" || res.Dataset.TestSHA256 == "" || !reflect.DeepEqual(res.Dataset.InputShape, []int{1, 8, 8}) {
		t.Errorf("dataset %+v", res.Dataset)
	}
	if res.Version.Module != ModulePath || !res.Version.Main {
		t.Errorf("version %+v", res.Version)
	}
	if res.TestAccuracy < 0.6 {
		t.Errorf("test accuracy %v: the squares are easy", res.TestAccuracy)
	}
	if !(res.DFILMax > 0) {
		t.Errorf("dFIL max %v", res.DFILMax)
	}
	// result.json reads back with the spec, and the named parameters equal params.npy.
	back, err := ReadResult(out)
	if err != nil {
		t.Fatal(err)
	}
	if back.Config.Hash() != cfg.Hash() || back.Config.Arch == nil || back.ArchHash != res.ArchHash {
		t.Errorf("read back: hash %s vs %s", back.Config.Hash(), cfg.Hash())
	}
	flat, err := LoadParams(filepath.Join(out, ParamsFile))
	if err != nil {
		t.Fatal(err)
	}
	named, err := LoadParamsNPZ(filepath.Join(out, back.ParamsNPZPath), *back.Arch)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(flat, named) {
		t.Error("params.npz and params.npy differ")
	}
	// The hash covers the architecture and the data pin; pins and names are checked.
	other := *spec
	other.Layers = append([]models.LayerDef(nil), spec.Layers...)
	other.Layers[0].Out = 7
	if cfg.WithArch(&other).Hash() == cfg.Hash() {
		t.Error("hash ignores the architecture")
	}
	pinned := cfg
	pinned.DataSHA256 = res.Dataset.Fingerprint
	if pinned.Hash() == cfg.Hash() {
		t.Error("hash ignores the data pin")
	}
	pinned.DataSHA256 = strings.Repeat("0", 64)
	if _, err := Run(context.Background(), pinned, Options{}); err == nil || !strings.Contains(err.Error(), "the data changed") {
		t.Errorf("wrong pin: %v", err)
	}
	bad := cfg
	bad.Model = "mnist-cnn"
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "arch is") {
		t.Errorf("model/arch mismatch: %v", err)
	}
	// A config file with the spec in it (JSON) decodes to the same config.
	b, _ := json.Marshal(cfg)
	var dec Config
	if err := json.Unmarshal(b, &dec); err != nil || dec.Hash() != cfg.Hash() {
		t.Errorf("JSON round trip: %v", err)
	}
}

// TestParamsNPZRefusals: a tensor missing, of the wrong shape, or foreign is refused.
func TestParamsNPZRefusals(t *testing.T) {
	dir := t.TempDir()
	a, _ := models.ArchByName("mlp")
	mlp := make([]float32, a.NumParams())
	p := filepath.Join(dir, "p.npz")
	if err := SaveParamsNPZ(p, a, mlp); err != nil {
		t.Fatal(err)
	}
	lin, _ := models.ArchByName("linear")
	if _, err := LoadParamsNPZ(p, lin); err == nil || !strings.Contains(err.Error(), "not a parameter") {
		t.Errorf("foreign tensors: %v", err)
	}
	wide := a
	wide.Layers = append([]models.LayerSpec(nil), a.Layers...)
	wide.Layers[1] = models.Dense(11)
	wide.Layers[3] = models.Dense(10)
	if _, err := LoadParamsNPZ(p, wide); err == nil || !strings.Contains(err.Error(), "shape") {
		t.Errorf("wrong shape: %v", err)
	}
	if err := SaveParamsNPZ(p, a, mlp[:5]); err == nil {
		t.Error("short vector saved")
	}
}
