package sweep

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A real sweep through train.Run: tiny linear models on 200 embedded MNIST samples.
// Interrupting it after the first recorded run and resuming gives every configuration
// exactly once, with the same metrics as an uninterrupted sweep (the trainer resumes
// bit-identically from its checkpoint).
func TestTrainRunnerResume(t *testing.T) {
	g, err := ParseGrid([]byte(`
name: tiny
base: {model: linear, dataset: mnist-embedded, train_subset: 200, batch: 20, steps: 30, fil_coords: 4, repeats: 1}
grid: {sigma: [0.5, 2], lr: [0.05, 0.2]}
`))
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := g.Jobs()
	if err != nil {
		t.Fatal(err)
	}
	runner := TrainRunner(nil)

	ref := t.TempDir()
	if _, err := Run(context.Background(), jobs, Options{Out: ref, Runner: runner}); err != nil {
		t.Fatal(err)
	}

	out := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sum, err := Run(ctx, jobs, Options{Out: out, Runner: runner, Workers: 2, OnDone: func(Record) { cancel() }})
	if !errors.Is(err, context.Canceled) || sum.Ran < 1 || sum.Ran == len(jobs) {
		t.Fatalf("interrupted sweep: %+v, %v", sum, err)
	}
	sum, err = Run(context.Background(), jobs, Options{Out: out, Runner: runner, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if sum.AlreadyDone+sum.Ran != len(jobs) {
		t.Fatalf("resumed sweep: %+v", sum)
	}
	exactlyOnce(t, out, jobs)

	got, _, _ := ReadResults(ResultsPath(out))
	want, _, _ := ReadResults(ResultsPath(ref))
	_, rep, err := Merge([]Source{{Name: "ref", Records: want}, {Name: "resumed", Records: got}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Conflicts) != 0 || rep.Duplicates != len(jobs) {
		t.Fatalf("resumed sweep differs from an uninterrupted one: %+v", rep)
	}
	for _, r := range got {
		m, err := r.Metrics()
		if err != nil {
			t.Fatal(err)
		}
		if !(m.TestAccuracy > 0.1 && m.MSEBoundRDP > 0 && m.DFILMax > 0 && m.MSEBoundFILMax > 0) {
			t.Fatalf("implausible metrics %+v", m)
		}
	}
}

// TestTrainRunnerLifecycle: a sweep whose runs finish or diverge leaves a result and
// no .lock in each finished run's directory, no directory for a diverged run (its
// checkpoint is removed: resuming it would diverge again), and no .lock at the top.
func TestTrainRunnerLifecycle(t *testing.T) {
	g, err := ParseGrid([]byte(`
name: tiny
base: {model: linear, dataset: mnist-embedded, train_subset: 100, batch: 20, steps: 6, fil_coords: 0, repeats: 1}
grid: {lr: [0.1, 1e300]}
`))
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := g.Jobs()
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	sum, err := Run(context.Background(), jobs, Options{Out: out, Runner: TrainRunner(nil)})
	if err == nil || sum.Ran != 1 || len(sum.Failed) != 1 {
		t.Fatalf("one run diverges: summary %+v, err %v", sum, err)
	}
	if f := sum.Failed[0].Error; !strings.Contains(f, "diverged") || !strings.Contains(f, "checkpoint was removed") {
		t.Errorf("failure %q does not say the run diverged and its checkpoint is gone", f)
	}
	if _, err := os.Stat(filepath.Join(out, ".lock")); !os.IsNotExist(err) {
		t.Error("the sweep left its .lock")
	}
	for _, j := range jobs {
		es, err := os.ReadDir(RunDir(out, j.Hash))
		var names []string
		for _, e := range es {
			names = append(names, e.Name())
		}
		diverged := j.Hash == sum.Failed[0].Hash
		switch {
		case diverged && !os.IsNotExist(err):
			t.Errorf("diverged run's directory holds %v", names)
		case !diverged && (err != nil || !slices.Contains(names, "result.json") || slices.Contains(names, ".lock") || slices.Contains(names, "checkpoint.bin")):
			t.Errorf("finished run's directory holds %v (%v)", names, err)
		}
	}
}
