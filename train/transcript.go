package train

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/dpfil/dpfil/transcript"
)

// TranscriptRecorder writes the transcript of a training run into a directory, one file per
// repeat, through Options.OnStep. A file is closed (index and trailer) after
// its repeat's last step; a resumed run continues the file of its repeat from the
// checkpoint's step, dropping the records written after the checkpoint, so that
// the result equals an uninterrupted run's.
type TranscriptRecorder struct {
	dir    string
	cfg    Config
	w      *transcript.Writer
	repeat int
}

// NewTranscriptRecorder returns a recorder of the run of cfg into dir.
func NewTranscriptRecorder(dir string, cfg Config) *TranscriptRecorder {
	return &TranscriptRecorder{dir: dir, cfg: cfg}
}

// header is the transcript header of rec's repeat.
func (tr *TranscriptRecorder) header(rec StepRecord) transcript.Header {
	c := tr.cfg
	h := transcript.Header{
		Model: c.Model, Dataset: rec.Dataset, DatasetSHA256: rec.DatasetSHA256, NumParams: len(rec.Params),
		Steps: rec.Steps, Q: rec.Q, Sigma: c.Sigma, Clip: c.Clip, ClipMode: c.ClipMode, LR: c.LR,
		BatchDenominator: rec.Denominator, Seed: c.Seed,
		Update: transcript.UpdateMomentum, Momentum: c.Momentum, WeightDecay: c.WeightDecay, Sampling: c.Sampling,
		NTrain: rec.N, Repeat: rec.Repeat, ConfigHash: c.Hash(),
	}
	if c.IsAdam() {
		h.Update, h.Momentum = transcript.UpdateAdam, 0
		h.AdamBeta1, h.AdamBeta2, h.AdamEps = c.AdamBeta1, c.AdamBeta2, c.AdamEps
	}
	return h
}

// OnStep is the Options.OnStep hook.
func (tr *TranscriptRecorder) OnStep(rec StepRecord) error {
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
func (tr *TranscriptRecorder) open(rec StepRecord) error {
	path := filepath.Join(tr.dir, transcript.FileName(rec.Repeat))
	h := tr.header(rec)
	var err error
	if rec.Step == 0 {
		theta0 := make([]float32, len(rec.Params))
		for i, v := range rec.Params {
			theta0[i] = float32(v) // exact: θ₀ comes from the float32 initialisation
		}
		tr.w, err = transcript.Create(path, h, theta0)
	} else {
		tr.w, err = transcript.Resume(path, h, rec.Step)
	}
	if err != nil {
		return fmt.Errorf("record transcript: %w", err)
	}
	tr.repeat = rec.Repeat
	return nil
}

// Close finishes the open file (if any) with its index and trailer. An interrupted
// run's file is closed too; resuming reopens it and continues from the checkpoint.
func (tr *TranscriptRecorder) Close() error {
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

// RunWithTranscript is Run recording the transcript into opt.Out when record is set, or
// when opt.Resume continues a run directory that already holds one. With
// cfg.FILRefineTop > 0 it always records, and after training adds the two-stage FIL
// estimate (RefineFIL) to the result (also when resuming a finished run that lacks it).
func RunWithTranscript(ctx context.Context, cfg Config, opt Options, record bool) (*Result, error) {
	if cfg.FILRefineTop > 0 {
		if opt.Out == "" {
			return nil, errors.New("fil_refine_top: refining needs a run directory for the transcripts")
		}
		res, err := runWithTranscript(ctx, cfg, opt, true)
		if err != nil || res.FILTwoStage != nil {
			return res, err
		}
		if err := refineInto(cfg, opt, res); err != nil {
			return nil, fmt.Errorf("run %s finished, but %w (resume it to retry)", opt.Out, err)
		}
		return res, nil
	}
	return runWithTranscript(ctx, cfg, opt, record)
}

func runWithTranscript(ctx context.Context, cfg Config, opt Options, record bool) (*Result, error) {
	if opt.Resume && opt.Out != "" && !record {
		var err error
		if record, err = transcript.Exists(opt.Out); err != nil {
			return nil, err
		}
	}
	if !record {
		return Run(ctx, cfg, opt)
	}
	if opt.Out == "" {
		return nil, errors.New("recording a transcript needs a run directory")
	}
	rec := NewTranscriptRecorder(opt.Out, cfg)
	if opt.OnStep != nil {
		return nil, errors.New("recording a transcript: Options.OnStep is already set")
	}
	opt.OnStep = rec.OnStep
	_, statErr := os.Stat(opt.Out)
	existed := statErr == nil
	res, err := Run(ctx, cfg, opt)
	if cerr := rec.Close(); cerr != nil && err == nil {
		err = cerr
	}
	if errors.Is(err, ErrDiverged) {
		return nil, discardDivergedTranscripts(opt.Out, cfg.Repeats, existed, err)
	}
	return res, err
}

// discardDivergedTranscripts removes the transcripts of a diverged run from dir (they record a
// run that has no result and cannot be resumed), and dir itself when the run created
// it and it is empty now. The returned error wraps err.
func discardDivergedTranscripts(dir string, repeats int, existed bool, err error) error {
	for r := range max(repeats, 1) {
		path := filepath.Join(dir, transcript.FileName(r))
		if rerr := os.Remove(path); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			return fmt.Errorf("%w (and removing its transcript failed: %v)", err, rerr)
		}
	}
	if !existed {
		_ = os.Remove(dir) // only when empty
	}
	return fmt.Errorf("%w; its transcripts were removed too", err)
}
