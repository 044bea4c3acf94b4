package train_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/dpfil/dpfil/train"
	"github.com/dpfil/dpfil/transcript"
)

// Train a small model while recording what an informed adversary sees, then read
// the transcript back.
func ExampleRunWithTranscript() {
	dir, err := os.MkdirTemp("", "transcript-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	cfg := train.DefaultConfig()
	cfg.Model, cfg.TrainSubset, cfg.Batch, cfg.Steps, cfg.FILCoords = "mlp", 100, 10, 3, 0
	if _, err := train.RunWithTranscript(context.Background(), cfg, train.Options{Out: dir}, true); err != nil {
		log.Fatal(err)
	}
	tr, err := transcript.Open(filepath.Join(dir, transcript.File))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: %d of %d steps recorded, complete %v, q = %g\n", tr.Header.Model, len(tr.Steps), tr.Header.Steps, tr.Complete, tr.Header.Q)
	// Output:
	// mlp: 3 of 3 steps recorded, complete true, q = 0.1
}
