package train

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dpfil/dpfil/internal/npy"
	"github.com/dpfil/dpfil/models"
)

// renamedModel is firstOrderModel under another architecture name: the same model
// after its structure changed (another fingerprint), or an engine-style plain name.
type renamedModel struct {
	firstOrderModel
	name string
}

func (m renamedModel) Arch() models.Arch {
	a := m.firstOrderModel.Arch()
	a.Name = m.name
	return a
}

// TestRegistryChecks: names, constructors and architecture names a registry refuses,
// and what Resolve does with built-in, registered and recorded names.
func TestRegistryChecks(t *testing.T) {
	mk := func() (models.Model, error) { return firstOrderModel{&softmaxModel{d: 4, k: 3}}, nil }
	for _, c := range []struct {
		reg  Registry
		want string
	}{
		{Registry{"a:b": mk}, "letters, digits"},
		{Registry{"": mk}, "letters, digits"},
		{Registry{"mnist-cnn": mk}, "built-in"},
		{Registry{"x": nil}, "no constructor"},
	} {
		if err := c.reg.Check(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Check(%v) = %v, want %q", c.reg.Names(), err, c.want)
		}
	}
	boom := errors.New("boom")
	reg := Registry{
		"soft": mk,
		"bad":  func() (models.Model, error) { return nil, boom },
		"plain": func() (models.Model, error) {
			return renamedModel{firstOrderModel{&softmaxModel{d: 4, k: 3}}, "plain"}, nil
		},
	}
	if err := reg.Check(); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.New("bad"); !errors.Is(err, boom) {
		t.Errorf("New of a failing constructor: %v", err)
	}
	if _, err := reg.New("plain"); err == nil || !strings.Contains(err.Error(), "kind:name") {
		t.Errorf("New of a plain-named model: %v", err)
	}
	if _, err := reg.New("nope"); err == nil || !strings.Contains(err.Error(), "bad, plain, soft") {
		t.Errorf("New of an unknown name: %v", err)
	}

	cfg := tinyConfig()
	cfg.Model = "soft"
	got, m, err := reg.Resolve(cfg)
	if err != nil || m == nil || got.Model != "test-graph:softmax@1" || got.Validate() != nil {
		t.Fatalf("Resolve(soft) = model %q, %v, %v", got.Model, m, err)
	}
	again, m2, err := Registry{"soft": mk}.Resolve(got) // a resumed run / a sweep job
	if err != nil || m2 == nil || again.Model != got.Model {
		t.Errorf("Resolve of the recorded name: %q, %v, %v", again.Model, m2, err)
	}
	builtin := tinyConfig()
	if b, m, err := reg.Resolve(builtin); err != nil || m != nil || b.Model != builtin.Model {
		t.Errorf("Resolve of a built-in: %q, %v, %v", b.Model, m, err)
	}
	if _, _, err := (Registry(nil)).Resolve(got); err == nil || !strings.Contains(err.Error(), "registered by the program that trained it") ||
		!strings.Contains(err.Error(), "test-graph:softmax@1") || !strings.Contains(err.Error(), "registers none") {
		t.Errorf("Resolve without the model: %v", err)
	}
}

// TestRegistryReload: a run of a registered model is read back with the program's
// registry (LoadRunModels: the model rebuilt, its flat parameters those the run
// ended with), predicts what the model's own logits say, and is refused, naming the
// model it was trained with, by a program that lacks it or has a changed version.
func TestRegistryReload(t *testing.T) {
	mk := func() (models.Model, error) { return firstOrderModel{&softmaxModel{d: 4, k: 3}}, nil }
	reg := Registry{"soft": mk}
	split := toyData(40, 10, 4, 3, 1)
	cfg := tinyConfig()
	cfg.Batch, cfg.Steps, cfg.Sigma, cfg.Model = 5, 4, 1, "soft"
	cfg, m, err := reg.Resolve(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "run")
	res, err := Run(context.Background(), cfg, Options{Model: m, Data: split, Out: dir})
	if err != nil {
		t.Fatal(err)
	}
	fr, err := LoadRunModels(dir, 0, reg)
	if err != nil {
		t.Fatal(err)
	}
	if fr.Model == nil || fr.Arch.Name != "test-graph:softmax@1" || !slices.Equal(fr.Params, res.Repeats[0].Params) {
		t.Fatalf("LoadRunModels: model %v, arch %q, params equal %v", fr.Model, fr.Arch.Name, slices.Equal(fr.Params, res.Repeats[0].Params))
	}

	// predict on the test inputs: the classes are the argmax of the model's logits.
	x := split.Test.Images
	b, err := npy.EncodeFloat32([]int{split.Test.N, 1, 1, 4}, x)
	if err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(t.TempDir(), "x.npy")
	if err := os.WriteFile(in, b, 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := Predict(PredictRequest{Run: dir, Files: []string{in}, Models: reg})
	if err != nil {
		t.Fatal(err)
	}
	z := make([]float32, split.Test.N*3)
	if err := m.Logits(res.Repeats[0].Params, x, split.Test.N, z); err != nil {
		t.Fatal(err)
	}
	if len(rep.Predictions) != split.Test.N || rep.Model != cfg.Model {
		t.Fatalf("predict: %d predictions of model %q", len(rep.Predictions), rep.Model)
	}
	for i, p := range rep.Predictions {
		want := 0
		for c := 1; c < 3; c++ {
			if z[i*3+c] > z[i*3+want] {
				want = c
			}
		}
		if p.Class != want {
			t.Errorf("input %d: class %d, the model's logits say %d", i, p.Class, want)
		}
	}
	if _, err := Predict(PredictRequest{Run: dir, Files: []string{in}, Models: reg, Device: "cuda"}); err == nil || !strings.Contains(err.Error(), "runs on the CPU") {
		t.Errorf("predict on cuda: %v", err)
	}

	changed := Registry{"soft": func() (models.Model, error) {
		return renamedModel{firstOrderModel{&softmaxModel{d: 4, k: 3}}, "test-graph:softmax@2"}, nil
	}}
	for name, r := range map[string]Registry{"none": nil, "changed": changed} {
		_, err := LoadRunModels(dir, 0, r)
		if err == nil || !strings.Contains(err.Error(), "run "+dir) || !strings.Contains(err.Error(), "model test-graph:softmax@1 was registered by the program that trained it") ||
			!strings.Contains(err.Error(), "run this command with that program") {
			t.Errorf("%s: %v", name, err)
		}
		if _, err := EvaluateRun(EvalRequest{Run: dir, Models: r}); err == nil || !strings.Contains(err.Error(), "registered by the program that trained it") {
			t.Errorf("eval, %s: %v", name, err)
		}
	}
	if _, err := LoadRunModels(dir, 0, changed); err == nil || !strings.Contains(err.Error(), "soft = test-graph:softmax@2") {
		t.Errorf("a changed model is not named: %v", err)
	}
}
