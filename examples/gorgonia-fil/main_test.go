package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpfil/dpfil/train"
)

// TestRun: a short run trains the Gorgonia network with FIL, reports a finite ε and
// positive dFIL, names the graph, and writes the run directory; bad flags are errors.
func TestRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	s, err := run([]string{"--steps", "3", "--train-subset", "100", "--fil-coords", "2", "--channels", "2", "--out", dir})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.Model, "gorgonia-graph:residual-sigmoid@") || !(s.Epsilon > 0) || !(s.DFILMax > 0) || s.DFILMedian > s.DFILMax {
		t.Errorf("summary %+v", s)
	}
	if _, err := os.Stat(filepath.Join(dir, train.ResultFile)); err != nil {
		t.Errorf("no result file: %v", err)
	}
	if _, err := run([]string{"--steps", "x"}); err == nil {
		t.Error("a bad flag is not an error")
	}
}
