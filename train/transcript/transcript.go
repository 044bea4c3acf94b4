// Package transcript records what an informed adversary sees of a DP-SGD training
// run (package train) into the transcript files that package attack reads and
// replays: θ₀, every released noisy gradient sum exactly as applied, the training
// indices of every batch and the hyperparameters (file format: docs/attacks.md).
//
// The recorder lives beside package train rather than in it because attack imports
// train (for the models and the update rule) and owns the file format, so train
// cannot import attack.
package transcript

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/dpfil/dpfil/attack"
	"github.com/dpfil/dpfil/train"
)

// File is the transcript of repeat 0 in a run directory; repeat r > 0 is FileName(r).
const File = "transcript.bin"

// FileName is the transcript file of repeat r: File for r = 0, transcript_r<r>.bin
// otherwise.
func FileName(r int) string {
	if r == 0 {
		return File
	}
	return fmt.Sprintf("transcript_r%d.bin", r)
}

// Exists reports whether dir already holds a transcript (a resumed run then keeps
// recording).
func Exists(dir string) (bool, error) {
	_, err := os.Stat(filepath.Join(dir, File))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("run directory: %w", err)
	}
	return true, nil
}

// Recorder writes the transcript of a training run into a directory, one file per
// repeat, through train.Options.OnStep. A file is closed (index and trailer) after
// its repeat's last step; a resumed run continues the file of its repeat from the
// checkpoint's step, dropping the records written after the checkpoint, so that
// the result equals an uninterrupted run's.
type Recorder struct {
	dir    string
	cfg    train.Config
	w      *attack.TranscriptWriter
	repeat int
}

// NewRecorder returns a recorder of the run of cfg into dir.
func NewRecorder(dir string, cfg train.Config) *Recorder {
	return &Recorder{dir: dir, cfg: cfg}
}

// header is the transcript header of rec's repeat.
func (tr *Recorder) header(rec train.StepRecord) attack.TranscriptHeader {
	c := tr.cfg
	return attack.TranscriptHeader{
		Model: c.Model, Dataset: rec.Dataset, DatasetSHA256: rec.DatasetSHA256, NumParams: len(rec.Params),
		Steps: rec.Steps, Q: rec.Q, Sigma: c.Sigma, Clip: c.Clip, ClipMode: c.ClipMode, LR: c.LR,
		BatchDenominator: rec.Denominator, Seed: c.Seed,
		Update: attack.UpdateMomentum, Momentum: c.Momentum, WeightDecay: c.WeightDecay, Sampling: c.Sampling,
		NTrain: rec.N, Repeat: rec.Repeat, ConfigHash: c.Hash(),
	}
}

// OnStep is the train.Options.OnStep hook.
func (tr *Recorder) OnStep(rec train.StepRecord) error {
	if tr.w != nil && tr.repeat != rec.Repeat {
		if err := tr.Close(); err != nil {
			return err
		}
	}
	if tr.w == nil {
		if err := tr.open(rec); err != nil {
			return err
		}
	}
	if err := tr.w.WriteTrainStep(rec.Step, rec.Released, rec.Batch); err != nil {
		return fmt.Errorf("record transcript: %w", err)
	}
	if rec.Step == rec.Steps-1 {
		return tr.Close()
	}
	return nil
}

// open creates the file of rec's repeat at its first step, or reopens it to
// continue from rec.Step.
func (tr *Recorder) open(rec train.StepRecord) error {
	path := filepath.Join(tr.dir, FileName(rec.Repeat))
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
	return nil
}

// Close finishes the open file (if any) with its index and trailer. An interrupted
// run's file is closed too; resuming reopens it and continues from the checkpoint.
func (tr *Recorder) Close() error {
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

// Run is train.Run recording the transcript into opt.Out when record is set, or
// when opt.Resume continues a run directory that already holds one.
func Run(ctx context.Context, cfg train.Config, opt train.Options, record bool) (*train.Result, error) {
	if opt.Resume && opt.Out != "" && !record {
		var err error
		if record, err = Exists(opt.Out); err != nil {
			return nil, err
		}
	}
	if !record {
		return train.Run(ctx, cfg, opt)
	}
	if opt.Out == "" {
		return nil, errors.New("recording a transcript needs a run directory")
	}
	rec := NewRecorder(opt.Out, cfg)
	if opt.OnStep != nil {
		return nil, errors.New("recording a transcript: Options.OnStep is already set")
	}
	opt.OnStep = rec.OnStep
	_, statErr := os.Stat(opt.Out)
	existed := statErr == nil
	res, err := train.Run(ctx, cfg, opt)
	if cerr := rec.Close(); cerr != nil && err == nil {
		err = cerr
	}
	if errors.Is(err, train.ErrDiverged) {
		return nil, discardDiverged(opt.Out, cfg.Repeats, existed, err)
	}
	return res, err
}

// discardDiverged removes the transcripts of a diverged run from dir (they record a
// run that has no result and cannot be resumed), and dir itself when the run created
// it and it is empty now. The returned error wraps err.
func discardDiverged(dir string, repeats int, existed bool, err error) error {
	for r := range max(repeats, 1) {
		path := filepath.Join(dir, FileName(r))
		if rerr := os.Remove(path); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			return fmt.Errorf("%w (and removing its transcript failed: %v)", err, rerr)
		}
	}
	if !existed {
		_ = os.Remove(dir) // only when empty
	}
	return fmt.Errorf("%w; its transcripts were removed too", err)
}
