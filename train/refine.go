package train

import (
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
