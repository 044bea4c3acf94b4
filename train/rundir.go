package train

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// explainNoResult turns the error of reading dir's result.json, err, into one that
// says what dir is when there is no such file: no such directory, a file, an
// unfinished run (its checkpoint: how far it got and how to resume it), a sweep
// directory, or a directory without a run. Other errors are returned as they are.
func explainNoResult(dir string, err error) error {
	if _, statErr := os.Stat(filepath.Join(dir, ResultFile)); statErr == nil {
		return err // there, but unreadable or invalid: err says why
	}
	fi, statErr := os.Stat(dir)
	switch {
	case errors.Is(statErr, fs.ErrNotExist):
		return fmt.Errorf("run directory %s does not exist", dir)
	case statErr != nil:
		return fmt.Errorf("run directory: %w", statErr)
	case !fi.IsDir():
		return fmt.Errorf("%s is a file, not a run directory (want the directory 'dpfil train --out' wrote)", dir)
	}
	if _, err := os.Stat(filepath.Join(dir, CheckpointFile)); err == nil {
		where := ""
		if ck, err := loadCheckpoint(dir); err == nil && ck != nil {
			where = checkpointProgress(ck) + "; "
		}
		return fmt.Errorf("run %s is unfinished (%s%s, no %s): resume it with 'dpfil train --resume %s'", dir, where, CheckpointFile, ResultFile, dir)
	}
	if _, err := os.Stat(filepath.Join(dir, "results.jsonl")); err == nil {
		return fmt.Errorf("%s is a sweep directory, not a run: name one of its runs, %s", dir, filepath.Join(dir, "runs", "<hash>"))
	}
	return fmt.Errorf("%s holds no run (no %s or %s)", dir, ResultFile, CheckpointFile)
}

// checkpointProgress says how far the checkpointed run got.
func checkpointProgress(ck *checkpoint) string {
	reps := max(1, ck.Config.Repeats)
	if ck.Cur == nil {
		return fmt.Sprintf("%d of %d repeats done", ck.Repeat, reps)
	}
	if ck.Config.Steps > 0 {
		return fmt.Sprintf("repeat %d of %d at step %d of %d", ck.Cur.Repeat+1, reps, ck.Cur.Step, ck.Config.Steps)
	}
	return fmt.Sprintf("repeat %d of %d at step %d", ck.Cur.Repeat+1, reps, ck.Cur.Step)
}
