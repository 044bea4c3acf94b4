package train

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dpfil/dpfil/internal/npy"
	"github.com/dpfil/dpfil/models"
)

var errNoSecond = errors.New("no second-order passes here")

// firstOrderModel is the test softmax model as a caller-supplied, first-order-only
// model: a kind:name architecture without layers, its own named tensors, and
// FILSqNorms refused with errNoSecond.
type firstOrderModel struct{ *softmaxModel }

func (m firstOrderModel) Arch() models.Arch {
	return models.Arch{Name: "test-graph:softmax@1", Input: models.Shape{C: 1, H: 1, W: m.d}, Classes: m.k}
}
func (m firstOrderModel) SecondOrderErr() error { return errNoSecond }
func (m firstOrderModel) FILSqNorms([]float32, []float32, []int, models.Clip, [][]int, []float64) error {
	return errNoSecond
}
func (m firstOrderModel) ParamTensors() []models.ParamShape {
	return []models.ParamShape{{Name: "W", Dims: []int{m.k, m.d}, Size: m.k * m.d},
		{Name: "b", Dims: []int{m.k}, Offset: m.k * m.d, Size: m.k}}
}

// TestCallerModel: a caller-supplied kind:name model must be named by the config
// (WithModel), runs on the CPU, refuses FIL before training with its own reason and
// leaves no result files, and with FIL off trains and records its name, its
// architecture, no dFIL numbers (left out of result.json, not 0), and its own named
// tensors in params.npz.
func TestCallerModel(t *testing.T) {
	m := firstOrderModel{&softmaxModel{d: 4, k: 3}}
	split := toyData(40, 10, 4, 3, 1)
	base := tinyConfig()
	base.Batch, base.Steps, base.Sigma = 5, 4, 1
	ok := base.WithModel(m)
	if ok.Model != m.Arch().Name || ok.Validate() != nil {
		t.Fatalf("WithModel: model %q, %v", ok.Model, ok.Validate())
	}
	for _, c := range []struct {
		name  string
		edit  func(*Config)
		model models.Model
		want  string
	}{
		{"no model given", func(*Config) {}, nil, "supplied by the caller"},
		{"config names another model", func(c *Config) { c.Model = "linear" }, m, "Config.WithModel"},
		{"config names another graph", func(c *Config) { c.Model = "test-graph:other@2" }, m, "Config.WithModel"},
		{"engine model under a caller name", func(c *Config) {}, &softmaxModel{d: 4, k: 3}, "Config.WithModel"},
		{"cuda", func(c *Config) { c.Device = "cuda" }, m, "runs on the CPU"},
		{"FIL", func(c *Config) { c.FILCoords = 2 }, m, "fil_coords = 2"},
		{"exact FIL", func(c *Config) { c.FILExact = true }, m, "fil_exact = true"},
		{"eta", func(c *Config) { c.FILEta = 3 }, m, "fil_eta"},
		{"label FIL", func(c *Config) { c.FILLabel = true }, m, "fil_label"},
		{"pruning", func(c *Config) { c.Tuning.PretrainPublic, c.Tuning.PruneFraction = 0.5, 0.5 }, m, "does not expose the engine network"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := ok
			c.edit(&cfg)
			dir := filepath.Join(t.TempDir(), "run")
			_, err := Run(context.Background(), cfg, Options{Model: c.model, Data: split, Out: dir})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
			if strings.Contains(c.want, "fil") != errors.Is(err, errNoSecond) {
				t.Errorf("errors.Is(err, the model's reason) = %v for %v", errors.Is(err, errNoSecond), err)
			}
			for _, f := range []string{ResultFile, DFILFile, ParamsFile, ParamsNPZFile, CheckpointFile} {
				if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
					t.Errorf("%s written by a refused run", f)
				}
			}
		})
	}

	dir := filepath.Join(t.TempDir(), "run")
	res, err := Run(context.Background(), ok, Options{Model: m, Data: split, Out: dir})
	if err != nil {
		t.Fatal(err)
	}
	if res.Config.Model != m.Arch().Name || res.Arch == nil || res.Arch.Name != m.Arch().Name || res.ArchHash != m.Arch().Hash() {
		t.Errorf("result names model %q, arch %+v (%s)", res.Config.Model, res.Arch, res.ArchHash)
	}
	if res.FIL || res.DFIL != nil || res.DFILPath != "" || res.FILCoordsUsed != 0 || res.Privacy == nil {
		t.Errorf("FIL off: fil %v, dfil %v, path %q, k %d; privacy %v", res.FIL, res.DFIL, res.DFILPath, res.FILCoordsUsed, res.Privacy)
	}
	if _, err := os.Stat(filepath.Join(dir, DFILFile)); err == nil {
		t.Error("dfil.npy written with FIL off")
	}
	raw, err := os.ReadFile(filepath.Join(dir, ResultFile))
	if err != nil {
		t.Fatal(err)
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"dfil_max", "dfil_median", "dfil_mean", "dfil_path", "dfil_quantiles"} {
		if v, ok := keys[k]; ok {
			t.Errorf("result.json of a run without FIL has %s = %s", k, v)
		}
	}
	if string(keys["fil"]) != "false" || string(keys["mse_bound_fil_max"]) != "null" {
		t.Errorf("result.json: fil %s, mse_bound_fil_max %s", keys["fil"], keys["mse_bound_fil_max"])
	}
	if back, err := ReadResult(dir); err != nil || back.DFILMax != 0 || back.FIL {
		t.Errorf("read back: %v, dfil_max %v", err, back)
	}
	f, err := os.Open(filepath.Join(dir, ParamsNPZFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	arrs, err := npy.ReadNPZ(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	var flat []float32
	for i, a := range arrs {
		if want := m.ParamTensors()[i]; a.Name != want.Name || !slices.Equal(a.Shape, want.Dims) {
			t.Errorf("params.npz tensor %d: %s %v, want %s %v", i, a.Name, a.Shape, want.Name, want.Dims)
		}
		for _, v := range a.Data {
			flat = append(flat, float32(v))
		}
	}
	if !slices.Equal(flat, res.Repeats[0].Params) {
		t.Error("params.npz does not hold the final parameters")
	}
	if _, err := LoadRun(dir, 0); err == nil || !strings.Contains(err.Error(), "supplied by the caller") {
		t.Errorf("LoadRun of a caller-model run: %v", err)
	}
}
