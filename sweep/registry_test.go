package sweep

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpfil/dpfil/models"
	"github.com/dpfil/dpfil/train"
)

// renamed is an engine model under a kind:name architecture name, as a program
// registers its own models (train.Registry).
type renamed struct {
	models.Model
	name string
}

func (m renamed) Arch() models.Arch {
	a := m.Model.Arch()
	a.Name = m.name
	return a
}

// TestGridRegisteredModel: a grid's model: NAME resolves through the program's
// registry to the model's architecture name (so the job hash follows the model's
// structure), the registered runner trains it, and a program without it refuses the
// grid, and a job of it, naming the model.
func TestGridRegisteredModel(t *testing.T) {
	name := "test-graph:lin@1"
	reg := train.Registry{"my-lin": func() (models.Model, error) {
		a, err := models.ArchByName("linear")
		if err != nil {
			return nil, err
		}
		m, err := models.NewCPUModel(a)
		return renamed{m, name}, err
	}}
	file := filepath.Join(t.TempDir(), "g.yaml")
	grid := "name: reg\nbase: {model: my-lin, dataset: mnist-embedded, train_subset: 60, batch: 20, steps: 2, fil_coords: 2}\ngrid: {sigma: [0.5, 2]}\n"
	if err := os.WriteFile(file, []byte(grid), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Expand(file); err == nil || !strings.Contains(err.Error(), "my-lin") {
		t.Fatalf("a grid naming an unregistered model: %v", err)
	}
	e, err := ExpandModels(file, reg)
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Jobs) != 2 || e.Jobs[0].Config.Model != name || e.Jobs[0].Hash == e.Jobs[1].Hash {
		t.Fatalf("jobs: %+v", e.Jobs)
	}
	out := t.TempDir()
	rep, err := e.Run(context.Background(), RunRequest{Out: out, Workers: 1, Runner: TrainRunnerModels(nil, reg)})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Points) != 2 || !(rep.Points[0].Epsilon > 0) || !(rep.Points[0].MSEBoundFILMax > 0) {
		t.Fatalf("points: %+v", rep.Points)
	}
	res, err := train.ReadResult(filepath.Join(out, "runs", e.Jobs[0].Hash))
	if err != nil || res.Config.Model != name || !res.FIL {
		t.Fatalf("result: %v, %+v", err, res)
	}
	_, err = TrainRunner(nil)(context.Background(), e.Jobs[0], t.TempDir())
	if err == nil || !strings.Contains(err.Error(), name+" was registered by the program that trained it") {
		t.Errorf("a job of a registered model without the registry: %v", err)
	}
}
