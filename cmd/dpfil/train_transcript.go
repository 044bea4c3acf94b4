package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/dpfil/dpfil/attack"
	"github.com/dpfil/dpfil/train"
)

// TranscriptFile is the transcript of repeat 0 in a run directory; repeat r > 0 is
// transcript_r<r>.bin.
const TranscriptFile = "transcript.bin"

func transcriptFileName(r int) string {
	if r == 0 {
		return TranscriptFile
	}
	return fmt.Sprintf("transcript_r%d.bin", r)
}

// transcriptRecorder writes the informed adversary's transcript of a training run
// (θ₀, every released noisy gradient sum as applied, the batch indices, the
// hyperparameters) into dir, one file per repeat, through train.Options.OnStep. A
// file is closed (index and trailer) after its repeat's last step; a resumed run
// continues the file of its repeat from the checkpoint's step, dropping the records
// written after the checkpoint, so that the result equals an uninterrupted run's.
type transcriptRecorder struct {
	dir    string
	cfg    train.Config
	w      *attack.TranscriptWriter
	repeat int
}

func newTranscriptRecorder(dir string, cfg train.Config) *transcriptRecorder {
	return &transcriptRecorder{dir: dir, cfg: cfg}
}

// header is the transcript header of rec's repeat.
func (tr *transcriptRecorder) header(rec train.StepRecord) attack.TranscriptHeader {
	c := tr.cfg
	return attack.TranscriptHeader{
		Model: c.Model, Dataset: rec.Dataset, DatasetSHA256: rec.DatasetSHA256, NumParams: len(rec.Params),
		Steps: rec.Steps, Q: rec.Q, Sigma: c.Sigma, Clip: c.Clip, ClipMode: c.ClipMode, LR: c.LR,
		BatchDenominator: rec.Denominator, Seed: c.Seed,
		Update: attack.UpdateMomentum, Momentum: c.Momentum, WeightDecay: c.WeightDecay, Sampling: c.Sampling,
		NTrain: rec.N, Repeat: rec.Repeat, ConfigHash: c.Hash(),
	}
}

// onStep is the train.Options.OnStep hook.
func (tr *transcriptRecorder) onStep(rec train.StepRecord) error {
	if tr.w != nil && tr.repeat != rec.Repeat {
		if err := tr.close(); err != nil {
			return err
		}
	}
	if tr.w == nil {
		path := filepath.Join(tr.dir, transcriptFileName(rec.Repeat))
		h := tr.header(rec)
		var err error
		if rec.Step == 0 {
			theta0 := make([]float32, len(rec.Params))
			for i, v := range rec.Params {
				theta0[i] = float32(v) // exact: θ₀ comes from the float32 initialisation
			}
			tr.w, err = attack.CreateTranscript(path, h, theta0)
		} else {
			tr.w, err = attack.ResumeTranscript(path, h, rec.Step)
		}
		if err != nil {
			return fmt.Errorf("record transcript: %w", err)
		}
		tr.repeat = rec.Repeat
	}
	if err := tr.w.WriteTrainStep(rec.Step, rec.Released, rec.Batch); err != nil {
		return fmt.Errorf("record transcript: %w", err)
	}
	if rec.Step == rec.Steps-1 {
		return tr.close()
	}
	return nil
}

// close finishes the open file (if any) with its index and trailer. An interrupted
// run's file is closed too; resuming reopens it and continues from the checkpoint.
func (tr *transcriptRecorder) close() error {
	if tr.w == nil {
		return nil
	}
	err := tr.w.Close()
	tr.w = nil
	if err != nil {
		return fmt.Errorf("record transcript: %w", err)
	}
	return nil
}

// hasTranscript reports whether dir already holds a transcript (a resumed run then
// keeps recording).
func hasTranscript(dir string) (bool, error) {
	_, err := os.Stat(filepath.Join(dir, TranscriptFile))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("run directory: %w", err)
	}
	return true, nil
}
