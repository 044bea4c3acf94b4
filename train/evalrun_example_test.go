package train_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/dpfil/dpfil/train"
)

// Train a small run, then evaluate its final parameters on its own test data: the
// run's reported test accuracy is reproduced exactly.
func ExampleEvaluateRun() {
	tmp, err := os.MkdirTemp("", "evalrun-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	dir := filepath.Join(tmp, "run")
	cfg := train.DefaultConfig()
	cfg.Model, cfg.TrainSubset, cfg.Batch, cfg.Steps, cfg.FILCoords = "linear", 200, 50, 4, 0
	if _, err := train.Run(context.Background(), cfg, train.Options{Out: dir}); err != nil {
		log.Fatal(err)
	}
	ev, err := train.EvaluateRun(train.EvalRequest{Run: dir})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s on %s %s: reproduced %v\n", ev.Model, ev.Dataset, ev.Split, *ev.Reproduced)
	// Output:
	// linear on mnist-embedded test: reproduced true
}
