package train

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/dpfil/dpfil/transcript"
)

// recordedTrajectory is a recorded training transcript as a Trajectory: θ_t replayed
// from θ₀ and the released gradients (bit-identical to the trainer's float64 master
// parameters) with each step's recorded batch.
type recordedTrajectory struct {
	T *transcript.Transcript
}

// Replay implements Trajectory.
func (tj recordedTrajectory) Replay(each func(t int, theta []float64, batch []int) error) error {
	i := 0
	_, err := tj.T.Replay(func(t int, theta []float64) error {
		s := tj.T.Steps[i]
		i++
		if s.Batch == nil {
			return fmt.Errorf("step %d records no batch indices (not a training transcript)", t)
		}
		return each(t, theta, s.Batch)
	})
	return err
}

// OpenTrajectories opens the complete transcripts of every repeat of the run in
// dir and checks that they record that run (config hash, training-set size).
func OpenTrajectories(dir string) ([]Trajectory, error) {
	res, err := ReadResult(dir)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", dir, err)
	}
	reps := max(1, len(res.Repeats))
	out := make([]Trajectory, reps)
	for r := range reps {
		path := filepath.Join(dir, transcript.FileName(r))
		t, err := transcript.Open(path)
		if err != nil {
			return nil, fmt.Errorf("run %s repeat %d: %w (train with --record-transcript to refine its FIL)", dir, r, err)
		}
		if !t.Complete {
			return nil, fmt.Errorf("transcript %s is incomplete (the run was interrupted while recording)", path)
		}
		if h := t.Header.ConfigHash; h != "" && h != res.Config.Hash() {
			return nil, fmt.Errorf("transcript %s records config %s, the run is %s", path, h, res.Config.Hash())
		}
		if t.Header.Repeat != r {
			return nil, fmt.Errorf("transcript %s records repeat %d, want %d", path, t.Header.Repeat, r)
		}
		out[r] = recordedTrajectory{T: t}
	}
	return out, nil
}

// RefineRun is RefineFIL on the run directory req.Run with its recorded
// transcripts (req.Trajectories is filled in).
func RefineRun(req RefineRequest) (*RefineReport, error) {
	tjs, err := OpenTrajectories(req.Run)
	if err != nil {
		return nil, fmt.Errorf("fil refine: %w", err)
	}
	req.Trajectories = tjs
	return RefineFIL(req)
}

// FILRefineFile is the two-stage report (RefineReport, JSON) that a run trained
// with config.fil_refine_top writes into its directory.
const FILRefineFile = "fil_refine.json"

// TwoStageFIL is result.json's fil_two_stage: the headline of the run's two-stage
// worst-sample FIL estimate (RefineFIL; the full report is FILRefineFile).
type TwoStageFIL struct {
	Estimator string `json:"estimator"`
	Top       int    `json:"top"` // m samples refined exactly
	RefinedMax
	// ScreenMaxExact is the exact dFIL of the screen's own argmax.
	ScreenMaxExact float64 `json:"screen_max_exact"`
	// RefinedAtLeastOne counts the refined samples with exact dFIL ≥ 1 (an MSE
	// bound below 1: reconstruction not ruled out for them).
	RefinedAtLeastOne int    `json:"refined_dfil_ge_1"`
	Report            string `json:"report"`
}

// RefinedMax is the two-stage estimate of the worst sample's dFIL, shared by the
// refine report and result.json's summary of it.
type RefinedMax struct {
	// Max is the largest exact dFIL (mean over repeats) among the screen's top m:
	// exact for the sample ArgMax names, a lower bound on the run's true maximum.
	Max    float64 `json:"max"`
	ArgMax int     `json:"argmax"`
	// MSEBoundMax is 1/Max (Theorem 2, worst sample, unbiased attacker): the
	// worst-sample MSE bound, at most this.
	MSEBoundMax float64 `json:"mse_bound_max"`
	// CI is the percentile bootstrap interval of Max over the repeats, CIMSE the
	// matching interval of 1/Max (both omitted with one repeat).
	CI    *Interval `json:"ci,omitempty"`
	CIMSE *Interval `json:"ci_mse_bound,omitempty"`
}

// twoStageOf is the headline of rep.
func twoStageOf(rep *RefineReport) *TwoStageFIL {
	ts := &TwoStageFIL{Estimator: rep.Estimator, Top: rep.Top, RefinedMax: rep.RefinedMax, ScreenMaxExact: rep.ScreenMaxExact, Report: FILRefineFile}
	for _, r := range rep.Refined {
		if r.Exact >= 1 {
			ts.RefinedAtLeastOne++
		}
	}
	return ts
}

// refineInto runs the two-stage estimate of the finished run in opt.Out (config
// fil_refine_top) and saves it into the run (SaveRefine).
func refineInto(cfg Config, opt Options, res *Result) error {
	logf := opt.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	logf("fil refine: the screen's top %d, exactly, from the recorded transcripts", cfg.FILRefineTop)
	rep, err := RefineRun(RefineRequest{Run: opt.Out, Top: cfg.FILRefineTop, Seed: cfg.Seed, Data: opt.Data, Logf: logf})
	if err != nil {
		return err
	}
	return saveRefine(opt.Out, rep, res)
}

// SaveRefine records rep, the two-stage estimate of the run in dir, in that run:
// the report as FILRefineFile and its headline as result.json's fil_two_stage
// (replacing an earlier one), so that plots and sweep reports of the run show it.
func SaveRefine(dir string, rep *RefineReport) error {
	res, err := ReadResult(dir)
	if err != nil {
		return fmt.Errorf("fil refine: save: %w", err)
	}
	return saveRefine(dir, rep, res)
}

func saveRefine(dir string, rep *RefineReport, res *Result) error {
	if !(rep.Max > 0) {
		return fmt.Errorf("fil refine: the largest exact dFIL of the top %d is %v: no finite worst-sample bound", rep.Top, rep.Max)
	}
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return fmt.Errorf("fil refine: encode report: %w", err)
	}
	if err := writeFileAtomic(filepath.Join(dir, FILRefineFile), append(b, '\n')); err != nil {
		return fmt.Errorf("fil refine: %w", err)
	}
	res.FILTwoStage = twoStageOf(rep)
	if err := WriteResult(dir, res); err != nil {
		return fmt.Errorf("fil refine: %w", err)
	}
	return nil
}
