package transcript

import (
	"fmt"
	"path/filepath"

	"github.com/dpfil/dpfil/attack"
	"github.com/dpfil/dpfil/train"
)

// Trajectory is a recorded training transcript as a train.Trajectory: θ_t replayed
// from θ₀ and the released gradients (bit-identical to the trainer's float64 master
// parameters) with each step's recorded batch.
type Trajectory struct {
	T *attack.Transcript
}

// Replay implements train.Trajectory.
func (tj Trajectory) Replay(each func(t int, theta []float64, batch []int) error) error {
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
func OpenTrajectories(dir string) ([]train.Trajectory, error) {
	res, err := train.ReadResult(dir)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", dir, err)
	}
	reps := max(1, len(res.Repeats))
	out := make([]train.Trajectory, reps)
	for r := range reps {
		path := filepath.Join(dir, FileName(r))
		t, err := attack.OpenTranscript(path)
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
		out[r] = Trajectory{T: t}
	}
	return out, nil
}

// RefineRun is train.RefineFIL on the run directory req.Run with its recorded
// transcripts (req.Trajectories is filled in).
func RefineRun(req train.RefineRequest) (*train.RefineReport, error) {
	tjs, err := OpenTrajectories(req.Run)
	if err != nil {
		return nil, fmt.Errorf("fil refine: %w", err)
	}
	req.Trajectories = tjs
	return train.RefineFIL(req)
}
