package cli

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dpfil/dpfil/train"
	"github.com/dpfil/dpfil/transcript"
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
		tr, err := transcript.Open(filepath.Join(dir, transcript.FileName(r)))
		if err != nil {
			t.Fatal(err)
		}
		h := tr.Header
		if !tr.Complete || len(tr.Steps) != steps || h.Steps != steps || h.Repeat != r || h.Model != "mlp" ||
			h.Update != transcript.UpdateMomentum || h.Momentum != 0.7 || h.WeightDecay != 0.01 || h.LR != 0.3 ||
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
	root.SetArgs([]string{"attack", "replay", filepath.Join(dir, transcript.File)})
	if err := root.Execute(); err == nil || !strings.Contains(err.Error(), "no prior") {
		t.Fatalf("attack replay of a training transcript: %v", err)
	}
}
