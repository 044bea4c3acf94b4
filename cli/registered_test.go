package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpfil/dpfil/models"
	"github.com/dpfil/dpfil/train"
)

// renamedLinear is the engine's linear model under a kind:name architecture name,
// as a program registers a model of its own.
type renamedLinear struct{ models.Model }

func (m renamedLinear) Arch() models.Arch {
	a := m.Model.Arch()
	a.Name = "test-graph:lin@1"
	return a
}

// execWith runs a command tree with opts in-process, as execCLI does.
func execWith(t *testing.T, opts Options, args ...string) (string, error) {
	t.Helper()
	root, err := NewRoot(opts)
	if err != nil {
		return "", err
	}
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetArgs(args)
	err = root.Execute()
	return out.String(), err
}

// TestRegisteredModelCommands: a program's registered model is a --model for train
// (recorded under its architecture name, default run directory under the registered
// name, --describe), for sweep grids (model: NAME) and for --resume; the dpfil
// command line without it refuses grids and resumes naming it, and NewRoot refuses
// registry names that clash with built-ins.
func TestRegisteredModelCommands(t *testing.T) {
	lin := func() (models.Model, error) {
		a, err := models.ArchByName("linear")
		if err != nil {
			return nil, err
		}
		m, err := models.NewCPUModel(a)
		return renamedLinear{m}, err
	}
	opts := Options{Models: train.Registry{"my-lin": lin}}
	if _, err := NewRoot(Options{Models: train.Registry{"mnist-cnn": lin}}); err == nil || !strings.Contains(err.Error(), "built-in") {
		t.Errorf("a registry name of a built-in: %v", err)
	}
	dir := t.TempDir()
	wd, _ := os.Getwd()
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	defer os.Chdir(wd)

	out, err := execWith(t, opts, "train", "--model", "my-lin", "--describe")
	if err != nil || !strings.Contains(out, "my-lin (registered by this program): test-graph:lin@1") {
		t.Fatalf("describe: %v\n%s", err, out)
	}
	out, err = execWith(t, opts, "train", "--model", "my-lin", "--steps", "2", "--batch", "20", "--train-subset", "60", "--fil-coords", "2", "--json", "--quiet")
	if err != nil {
		t.Fatal(err)
	}
	var res train.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	run := filepath.Join("runs", "my-lin-"+res.Config.Hash())
	if res.Config.Model != "test-graph:lin@1" || !res.FIL {
		t.Fatalf("train: model %q, fil %v", res.Config.Model, res.FIL)
	}
	if _, err := os.Stat(filepath.Join(run, train.ResultFile)); err != nil {
		t.Fatalf("default run directory: %v", err)
	}
	if _, _, err := execCLI(t, "train", "--resume", run); err == nil || !strings.Contains(err.Error(), "test-graph:lin@1 was registered by the program that trained it") {
		t.Errorf("dpfil train --resume of a registered model's run: %v", err)
	}

	grid := "name: reg\nbase: {model: my-lin, train_subset: 60, batch: 20, steps: 2}\ngrid: {sigma: [0.5, 2]}\n"
	if err := os.WriteFile("grid.yaml", []byte(grid), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = execWith(t, opts, "sweep", "list", "grid.yaml", "--json")
	if err != nil || strings.Count(out, "test-graph:lin@1") < 2 {
		t.Errorf("sweep list with the model: %v\n%s", err, out)
	}
	if _, _, err := execCLI(t, "sweep", "list", "grid.yaml"); err == nil || !strings.Contains(err.Error(), "my-lin") {
		t.Errorf("dpfil sweep list of a grid naming a registered model: %v", err)
	}
}
