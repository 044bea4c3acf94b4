package sweep

import (
	"context"
	"errors"
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
