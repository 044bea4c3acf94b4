package train

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dpfil/dpfil/models"
)

// nanAfterModel is the softmax test model whose gradient sum turns NaN from call
// nan on (a run that diverges mid-way, after checkpoints were written).
type nanAfterModel struct {
	softmaxModel
	calls, nan int
}

func (m *nanAfterModel) ClippedGradSum(params, x []float32, y []int, clip models.Clip, sum []float32, losses []float64) error {
	m.calls++
	if err := m.softmaxModel.ClippedGradSum(params, x, y, clip, sum, losses); err != nil {
		return err
	}
	if m.calls >= m.nan {
		sum[0] = float32(math.NaN())
	}
	return nil
}

// dirEntries lists dir's entries (nil when it does not exist).
func dirEntries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// TestRunDirectoryLifecycle: a run that fails before writing anything leaves no
// directory it created (and keeps one the user had), a finished run leaves no .lock,
// and a diverged run removes its checkpoint and says so.
func TestRunDirectoryLifecycle(t *testing.T) {
	split := toyData(50, 5, 4, 2, 1)
	cfg := tinyConfig()
	cfg.Batch, cfg.Steps = 5, 6

	t.Run("failed start, new directory", func(t *testing.T) {
		root := t.TempDir()
		dir := filepath.Join(root, "runs", "a")
		bad := cfg
		bad.Batch = 500 // more than the 50 samples: fails after the directory is locked
		_, err := Run(context.Background(), bad, Options{Out: dir, Model: &softmaxModel{d: 4, k: 2}, Data: split})
		if err == nil || !strings.Contains(err.Error(), "exceeds") {
			t.Fatalf("batch 500 of 50 samples: %v", err)
		}
		if got := dirEntries(t, root); got != nil {
			t.Errorf("failed start left %v in %s", got, root)
		}
	})
	t.Run("failed start, existing directory", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Run(context.Background(), cfg, Options{Out: dir, Model: &softmaxModel{d: 4, k: 2}, Data: nil})
		if err == nil {
			t.Fatal("dataset toy does not exist: want an error")
		}
		if got := dirEntries(t, dir); !slices.Equal(got, []string{"notes.txt"}) {
			t.Errorf("existing directory now holds %v, want only notes.txt", got)
		}
	})
	t.Run("finished", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "run")
		if _, err := Run(context.Background(), cfg, Options{Out: dir, Model: &softmaxModel{d: 4, k: 2}, Data: split, CheckpointEvery: 1}); err != nil {
			t.Fatal(err)
		}
		got := dirEntries(t, dir)
		if slices.Contains(got, ".lock") || slices.Contains(got, CheckpointFile) || !slices.Contains(got, ResultFile) {
			t.Errorf("finished run directory holds %v: want %s, no .lock, no %s", got, ResultFile, CheckpointFile)
		}
	})
	t.Run("diverged", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "run")
		m := &nanAfterModel{softmaxModel: softmaxModel{d: 4, k: 2}, nan: 4}
		sawCheckpoint := false
		_, err := Run(context.Background(), cfg, Options{Out: dir, Model: m, Data: split, CheckpointEvery: 1,
			Progress: func(e Event) {
				if _, err := os.Stat(filepath.Join(dir, CheckpointFile)); err == nil {
					sawCheckpoint = true
				}
			}})
		if !errors.Is(err, ErrDiverged) {
			t.Fatalf("NaN gradient at step 4: err %v, want ErrDiverged", err)
		}
		if msg := err.Error(); !strings.Contains(msg, "step 4") || !strings.Contains(msg, "checkpoint was removed") || !strings.Contains(msg, "not resumable") {
			t.Errorf("error %q does not say where it diverged and that the checkpoint is gone", msg)
		}
		if !sawCheckpoint {
			t.Fatal("no checkpoint was written before the divergence: the test checks nothing")
		}
		if got := dirEntries(t, dir); got != nil {
			t.Errorf("diverged run left %v (want no directory: it held only the checkpoint)", got)
		}
		_, err = Run(context.Background(), cfg, Options{Out: dir, Resume: true, Model: &softmaxModel{d: 4, k: 2}, Data: split})
		if err != nil {
			t.Errorf("a new run in the diverged run's directory: %v", err)
		}
	})
}
