package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dpfil/dpfil/attack"
	"github.com/dpfil/dpfil/train"
)

// TestTrainRecordTranscript records a short two-repeat mlp run, reads the
// transcripts back and replays momentum SGD from θ₀ and the released gradients: the
// result must equal params.npy / params_r1.npy bit for bit.
func TestTrainRecordTranscript(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	const steps, batch, n = 12, 20, 200
	_, err := runTrainCLI(t, "train", "--model", "mlp", "--steps", fmt.Sprint(steps), "--batch", fmt.Sprint(batch),
		"--train-subset", fmt.Sprint(n), "--fil-coords", "0", "--sigma", "0.8", "--clip", "0.5", "--clip-mode", "hard",
		"--lr", "0.3", "--momentum", "0.7", "--weight-decay", "0.01", "--repeats", "2", "--seed", "5",
		"--sampling", "shuffle", "--record-transcript", "--quiet", "--out", dir)
	if err != nil {
		t.Fatal(err)
	}
	for r := 0; r < 2; r++ {
		tr, err := attack.OpenTranscript(filepath.Join(dir, transcriptFileName(r)))
		if err != nil {
			t.Fatal(err)
		}
		h := tr.Header
		if !tr.Complete || len(tr.Steps) != steps || h.Steps != steps || h.Repeat != r || h.Model != "mlp" ||
			h.Update != attack.UpdateMomentum || h.Momentum != 0.7 || h.WeightDecay != 0.01 || h.LR != 0.3 ||
			h.BatchDenominator != batch || h.Q != float64(batch)/n || h.NTrain != n || h.Sigma != 0.8 || h.ClipMode != "hard" {
			t.Fatalf("repeat %d: complete %v, %d steps, header %+v", r, tr.Complete, len(tr.Steps), h)
		}
		// Shuffle sampling: the first n/batch steps cover every index exactly once.
		var seen []int
		for _, s := range tr.Steps[:n/batch] {
			if len(s.Batch) != batch {
				t.Fatalf("repeat %d step %d: batch of %d", r, s.T, len(s.Batch))
			}
			seen = append(seen, s.Batch...)
		}
		slices.Sort(seen)
		for i, v := range seen {
			if v != i {
				t.Fatalf("repeat %d: first epoch's batches are not a permutation of 0..%d", r, n-1)
			}
		}
		final, err := tr.Replay(nil)
		if err != nil {
			t.Fatal(err)
		}
		params, err := train.LoadParams(filepath.Join(dir, map[int]string{0: "params.npy", 1: "params_r1.npy"}[r]))
		if err != nil {
			t.Fatal(err)
		}
		moved := false
		for i, v := range final {
			if float32(v) != params[i] {
				t.Fatalf("repeat %d param %d: replay %v, params.npy %v", r, i, float32(v), params[i])
			}
			moved = moved || float32(v) != tr.Theta0[i]
		}
		if !moved {
			t.Fatalf("repeat %d: parameters never moved", r)
		}
	}
	// The attack replay command reads the file but needs a prior, which a training
	// run does not define.
	root := newRootCmd()
	root.SetOut(&bytes.Buffer{})
	root.SetErr(&bytes.Buffer{})
	root.SetArgs([]string{"attack", "replay", filepath.Join(dir, TranscriptFile)})
	if err := root.Execute(); err == nil || !strings.Contains(err.Error(), "no prior") {
		t.Fatalf("attack replay of a training transcript: %v", err)
	}
}

var errCrash = errors.New("simulated crash")

// TestTrainTranscriptResume interrupts a recording run after it wrote steps past its
// last checkpoint (and a torn record), resumes it, and checks that the transcripts
// equal an uninterrupted run's byte for byte.
func TestTrainTranscriptResume(t *testing.T) {
	cfg := train.DefaultConfig()
	cfg.Model, cfg.TrainSubset, cfg.Batch, cfg.Steps, cfg.FILCoords = "mlp", 120, 10, 9, 0
	cfg.Repeats, cfg.Seed, cfg.LR, cfg.Sigma = 2, 3, 0.2, 1.1
	record := func(dir string, resume bool, crashAt [2]int) error {
		rec := newTranscriptRecorder(dir, cfg)
		_, err := train.Run(context.Background(), cfg, train.Options{
			Out: dir, Resume: resume, CheckpointEvery: 3,
			OnStep: func(s train.StepRecord) error {
				if err := rec.onStep(s); err != nil {
					return err
				}
				if s.Repeat == crashAt[0] && s.Step == crashAt[1] {
					return errCrash // the writer is left open: no index, like a crash
				}
				return nil
			},
		})
		if err == nil {
			return rec.close()
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
			f, err := os.OpenFile(filepath.Join(dir, transcriptFileName(crash[0])), os.O_WRONLY|os.O_APPEND, 0)
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
				a, err := os.ReadFile(filepath.Join(want, transcriptFileName(r)))
				if err != nil {
					t.Fatal(err)
				}
				b, err := os.ReadFile(filepath.Join(dir, transcriptFileName(r)))
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

// TestTrainTranscriptResumeMismatch: a transcript of another run is not continued.
func TestTrainTranscriptResumeMismatch(t *testing.T) {
	dir := t.TempDir()
	cfg := train.DefaultConfig()
	cfg.Model, cfg.TrainSubset, cfg.Batch, cfg.Steps, cfg.FILCoords = "mlp", 60, 10, 4, 0
	rec := newTranscriptRecorder(dir, cfg)
	if _, err := train.Run(context.Background(), cfg, train.Options{OnStep: rec.onStep}); err != nil {
		t.Fatal(err)
	}
	other := cfg
	other.Seed++
	rec2 := newTranscriptRecorder(dir, other)
	_, err := train.Run(context.Background(), other, train.Options{OnStep: func(s train.StepRecord) error {
		s.Step = 2 // pretend to resume at step 2
		return rec2.onStep(s)
	}})
	if err == nil || !strings.Contains(err.Error(), "different run") {
		t.Fatalf("continuing another run's transcript: %v", err)
	}
}
