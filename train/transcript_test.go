package train_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpfil/dpfil/train"
	"github.com/dpfil/dpfil/transcript"
)

var errCrash = errors.New("simulated crash")

// TestRecorderResume interrupts a recording run after it wrote steps past its
// last checkpoint (and a torn record), resumes it, and checks that the transcripts
// equal an uninterrupted run's byte for byte.
func TestTranscriptRecorderResume(t *testing.T) {
	cfg := train.DefaultConfig()
	cfg.Model, cfg.TrainSubset, cfg.Batch, cfg.Steps, cfg.FILCoords = "mlp", 120, 10, 9, 0
	cfg.Repeats, cfg.Seed, cfg.LR, cfg.Sigma = 2, 3, 0.2, 1.1
	record := func(dir string, resume bool, crashAt [2]int) error {
		rec := train.NewTranscriptRecorder(dir, cfg)
		_, err := train.Run(context.Background(), cfg, train.Options{
			Out: dir, Resume: resume, CheckpointEvery: 3,
			OnStep: func(s train.StepRecord) error {
				if err := rec.OnStep(s); err != nil {
					return err
				}
				if s.Repeat == crashAt[0] && s.Step == crashAt[1] {
					return errCrash // the writer is left open: no index, like a crash
				}
				return nil
			},
		})
		if err == nil {
			return rec.Close()
		}
		return err
	}
	want := t.TempDir()
	if err := record(want, false, [2]int{-1, -1}); err != nil {
		t.Fatal(err)
	}
	for _, crash := range [][2]int{{0, 7}, {1, 4}, {1, 8}} {
		t.Run(fmt.Sprintf("crash-r%d-step%d", crash[0], crash[1]), func(t *testing.T) {
			dir := t.TempDir()
			if err := record(dir, false, crash); !errors.Is(err, errCrash) {
				t.Fatalf("first segment: %v", err)
			}
			// a record torn by the crash
			f, err := os.OpenFile(filepath.Join(dir, transcript.FileName(crash[0])), os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.Write([]byte{200, 1, 0, 0, 3, 9, 9}); err != nil {
				t.Fatal(err)
			}
			f.Close()
			if err := record(dir, true, [2]int{-1, -1}); err != nil {
				t.Fatal(err)
			}
			for r := 0; r < cfg.Repeats; r++ {
				a, err := os.ReadFile(filepath.Join(want, transcript.FileName(r)))
				if err != nil {
					t.Fatal(err)
				}
				b, err := os.ReadFile(filepath.Join(dir, transcript.FileName(r)))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(a, b) {
					t.Fatalf("repeat %d: resumed transcript (%d bytes) differs from the uninterrupted one (%d bytes)", r, len(b), len(a))
				}
			}
		})
	}
}

// TestRecorderResumeMismatch: a transcript of another run is not continued.
func TestTranscriptRecorderResumeMismatch(t *testing.T) {
	dir := t.TempDir()
	cfg := train.DefaultConfig()
	cfg.Model, cfg.TrainSubset, cfg.Batch, cfg.Steps, cfg.FILCoords = "mlp", 60, 10, 4, 0
	rec := train.NewTranscriptRecorder(dir, cfg)
	if _, err := train.Run(context.Background(), cfg, train.Options{OnStep: rec.OnStep}); err != nil {
		t.Fatal(err)
	}
	other := cfg
	other.Seed++
	rec2 := train.NewTranscriptRecorder(dir, other)
	_, err := train.Run(context.Background(), other, train.Options{OnStep: func(s train.StepRecord) error {
		s.Step = 2 // pretend to resume at step 2
		return rec2.OnStep(s)
	}})
	if err == nil || !strings.Contains(err.Error(), "different run") {
		t.Fatalf("continuing another run's transcript: %v", err)
	}
}

// Run records when asked, and keeps recording when it resumes a directory that
// holds a transcript; the file equals the one a Recorder writes by hand.
func TestRunWithTranscript(t *testing.T) {
	cfg := train.DefaultConfig()
	cfg.Model, cfg.TrainSubset, cfg.Batch, cfg.Steps, cfg.FILCoords, cfg.Seed = "mlp", 60, 10, 5, 0, 4
	byHand := t.TempDir()
	rec := train.NewTranscriptRecorder(byHand, cfg)
	if _, err := train.Run(context.Background(), cfg, train.Options{OnStep: rec.OnStep}); err != nil {
		t.Fatal(err)
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(byHand, transcript.File))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "run")
	if ok, err := transcript.Exists(dir); ok || err != nil {
		t.Fatalf("Exists before the run: %v, %v", ok, err)
	}
	if _, err := train.RunWithTranscript(context.Background(), cfg, train.Options{Out: dir}, true); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, transcript.File))
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("Run's transcript (%d bytes, %v) differs from the recorder's (%d bytes)", len(got), err, len(want))
	}
	if ok, err := transcript.Exists(dir); !ok || err != nil {
		t.Fatalf("Exists after the run: %v, %v", ok, err)
	}
	if _, err := train.RunWithTranscript(context.Background(), cfg, train.Options{}, true); err == nil {
		t.Error("recording without a run directory: no error")
	}
	if _, err := train.RunWithTranscript(context.Background(), cfg, train.Options{Out: dir, OnStep: rec.OnStep}, true); err == nil {
		t.Error("recording with OnStep already set: no error")
	}
}

func TestTranscriptFileName(t *testing.T) {
	for r, want := range []string{"transcript.bin", "transcript_r1.bin", "transcript_r2.bin"} {
		if got := transcript.FileName(r); got != want {
			t.Errorf("FileName(%d) = %q, want %q", r, got, want)
		}
	}
}

// TestRunDiverged: a recording run that diverges leaves neither its checkpoint nor
// its transcripts (nor the directory it created), and its error says so.
func TestRunWithTranscriptDiverged(t *testing.T) {
	cfg := train.DefaultConfig()
	cfg.Model, cfg.TrainSubset, cfg.Batch, cfg.Steps, cfg.FILCoords, cfg.Seed = "mlp", 60, 10, 8, 0, 4
	cfg.LR = 1e36
	dir := filepath.Join(t.TempDir(), "run")
	steps := 0
	_, err := train.RunWithTranscript(context.Background(), cfg, train.Options{Out: dir, CheckpointEvery: 1,
		Progress: func(e train.Event) { steps = e.Step }}, true)
	if !errors.Is(err, train.ErrDiverged) {
		t.Fatalf("lr 1e36: err %v, want train.ErrDiverged", err)
	}
	if steps < 1 {
		t.Fatalf("diverged before the first step was recorded (%v): the test checks nothing", err)
	}
	if !strings.Contains(err.Error(), "checkpoint was removed") || !strings.Contains(err.Error(), "transcripts were removed") {
		t.Errorf("error %q does not say what was removed", err)
	}
	if _, serr := os.Stat(dir); !errors.Is(serr, os.ErrNotExist) {
		es, _ := os.ReadDir(dir)
		t.Errorf("diverged run left its directory (%d entries)", len(es))
	}
}

// TestAdamTranscriptReplay: the transcript of an adam run says so, and its replay
// gives the trainer's θ_t bit for bit at every step and its final parameters.
func TestAdamTranscriptReplay(t *testing.T) {
	cfg := train.DefaultConfig()
	cfg.Model, cfg.TrainSubset, cfg.Batch, cfg.Steps, cfg.FILCoords, cfg.Seed = "mlp", 60, 10, 7, 0, 5
	cfg.UseAdam()
	cfg.LR, cfg.WeightDecay, cfg.AdamBeta1, cfg.AdamBeta2 = 0.01, 0.05, 0.8, 0.99
	dir := t.TempDir()
	rec := train.NewTranscriptRecorder(dir, cfg)
	var seen [][]float64
	res, err := train.Run(context.Background(), cfg, train.Options{OnStep: func(s train.StepRecord) error {
		seen = append(seen, append([]float64(nil), s.Params...))
		return rec.OnStep(s)
	}})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := transcript.Open(filepath.Join(dir, transcript.File))
	if err != nil {
		t.Fatal(err)
	}
	h := tr.Header
	if h.Update != transcript.UpdateAdam || h.Momentum != 0 || h.AdamBeta1 != 0.8 || h.AdamBeta2 != 0.99 || h.AdamEps != 1e-8 || h.WeightDecay != 0.05 {
		t.Fatalf("header %+v", h)
	}
	final, err := tr.Replay(func(step int, theta []float64) error {
		for i, v := range theta {
			if math.Float64bits(v) != math.Float64bits(seen[step][i]) {
				return fmt.Errorf("θ_%d[%d] replayed %v, trained %v", step, i, v, seen[step][i])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range res.Repeats[0].Params {
		if float32(final[i]) != v {
			t.Fatalf("final parameter %d: replayed %v, trained %v", i, float32(final[i]), v)
		}
	}
	if len(seen) != cfg.Steps || bytes.Equal([]byte(fmt.Sprint(seen[0])), []byte(fmt.Sprint(seen[cfg.Steps-1]))) {
		t.Fatalf("%d steps seen; parameters did not move", len(seen))
	}
}
