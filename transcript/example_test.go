package transcript_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/dpfil/dpfil/transcript"
)

// Writing a transcript and reading it back; the reader verifies every record.
func ExampleCreate() {
	dir, _ := os.MkdirTemp("", "transcript")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "run.dpft")
	h := transcript.Header{Model: "mlp", NumParams: 3, Known: []int{4, 7}, Steps: 2, Q: 1,
		Sigma: 1, Clip: 0.1, LR: 1, BatchDenominator: 3}
	w, err := transcript.Create(path, h, []float32{0.5, -1, 2})
	if err != nil {
		panic(err)
	}
	_ = w.WriteStep(0, []float64{0.1, 0.2, 0.3}, nil)
	_ = w.WriteStep(1, []float64{-0.1, 0, 0.25}, nil)
	if err := w.Close(); err != nil {
		panic(err)
	}
	tr, err := transcript.Open(path)
	if err != nil {
		panic(err)
	}
	fmt.Println(tr.Complete, len(tr.Steps), tr.Steps[1].Released)
	// Output: true 2 [-0.1 0 0.25]
}
