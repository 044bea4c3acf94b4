package sweep

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"time"
)

// Runner performs one run of a sweep in its own directory dir and returns the run's
// result as a JSON object (a marshalled train.Result). When ctx is cancelled it must
// stop at a resumable point and return an error; a later call with the same job and
// directory continues the run. TrainRunner is the real one; tests use fast fakes.
type Runner func(ctx context.Context, job Job, dir string) (json.RawMessage, error)

// Options configures Run.
type Options struct {
	Out     string // sweep directory: results.jsonl and runs/<hash>/
	Shard   Shard  // which slice of the grid to run; the zero value means 0/1
	Workers int    // runs in parallel (default 1)
	Grid    string // grid name written into each record
	Runner  Runner
	Logf    func(format string, args ...any) // optional
	// OnDone, if set, is called (serially) after each run is recorded.
	OnDone func(Record)
}

// Failure is a run that ended with an error other than cancellation.
type Failure struct {
	Index int    `json:"index"`
	Hash  string `json:"hash"`
	Error string `json:"error"`
}

// Summary reports what Run did.
type Summary struct {
	Shard       string    `json:"shard"`
	Jobs        int       `json:"jobs"`         // jobs in the shard
	AlreadyDone int       `json:"already_done"` // found in results.jsonl at start
	Ran         int       `json:"ran"`          // finished and recorded by this call
	Failed      []Failure `json:"failed"`
	Pending     int       `json:"pending"` // jobs of the shard still not recorded
	BadLines    []BadLine `json:"bad_lines"`
	Interrupted bool      `json:"interrupted"`
	Seconds     float64   `json:"seconds"`
}

// ResultsPath is the results log of a sweep directory.
func ResultsPath(out string) string { return filepath.Join(out, ResultsFile) }

// RunDir is the working directory of one run of a sweep.
func RunDir(out, hash string) string { return filepath.Join(out, "runs", hash) }

// Run executes every job of opt.Shard that results.jsonl in opt.Out does not already
// hold, opt.Workers at a time, appending one record per finished run. It is safe to
// kill at any moment and call again: finished runs are never repeated (their records
// are synced before the next run is reported done) and unfinished ones restart in
// their own directory, from their checkpoint if the runner keeps one. Cancelling ctx
// stops dispatching, lets the runners stop, and returns ctx's error. Runs that fail
// are reported and the others continue; Run then returns an error naming them.
func Run(ctx context.Context, jobs []Job, opt Options) (Summary, error) {
	start := time.Now()
	if opt.Shard.N == 0 {
		opt.Shard = Shard{I: 0, N: 1}
	}
	sum := Summary{Shard: opt.Shard.String(), Failed: []Failure{}, BadLines: []BadLine{}}
	if err := opt.Shard.Validate(); err != nil {
		return sum, err
	}
	if opt.Out == "" {
		return sum, errors.New("sweep: no output directory")
	}
	if opt.Runner == nil {
		return sum, errors.New("sweep: no runner")
	}
	workers := opt.Workers
	if workers < 1 {
		workers = 1
	}
	logf := opt.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	mine := opt.Shard.Select(jobs)
	sum.Jobs = len(mine)

	unlock, err := LockDir(opt.Out)
	if err != nil {
		return sum, fmt.Errorf("sweep: %w", err)
	}
	defer unlock()
	recs, bad, err := ReadResults(ResultsPath(opt.Out))
	if err != nil {
		return sum, fmt.Errorf("sweep: %w", err)
	}
	sum.BadLines = append(sum.BadLines, bad...)
	for _, b := range bad {
		logf("sweep: skipping unusable results line %s", b)
	}
	done := make(map[string]bool, len(recs))
	for _, r := range recs {
		done[r.Hash] = true
	}
	var todo []Job
	for _, j := range mine {
		if done[j.Hash] {
			sum.AlreadyDone++
		} else {
			todo = append(todo, j)
		}
	}
	sum.Pending = len(todo)
	if len(todo) == 0 {
		sum.Seconds = time.Since(start).Seconds()
		return sum, nil
	}
	log, err := OpenLog(ResultsPath(opt.Out))
	if err != nil {
		return sum, fmt.Errorf("sweep: %w", err)
	}
	defer log.Close()

	parent := ctx
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	feed := make(chan Job)
	go func() {
		defer close(feed)
		for _, j := range todo {
			select {
			case feed <- j:
			case <-ctx.Done():
				return
			}
		}
	}()
	var (
		mu       sync.Mutex
		wg       sync.WaitGroup
		fatalErr error
	)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range feed {
				if ctx.Err() != nil {
					return
				}
				dir := RunDir(opt.Out, j.Hash)
				logf("sweep: run %d (%s) started", j.Index, j.Hash)
				t0 := time.Now()
				res, rerr := safeRun(ctx, opt.Runner, j, dir)
				if rerr != nil {
					if ctx.Err() != nil {
						logf("sweep: run %d (%s) interrupted; it resumes from %s", j.Index, j.Hash, dir)
						return
					}
					logf("sweep: run %d (%s) failed: %v", j.Index, j.Hash, rerr)
					f := Failure{Index: j.Index, Hash: j.Hash, Error: rerr.Error()}
					mu.Lock()
					sum.Failed = append(sum.Failed, f)
					if err := appendFailure(opt.Out, f); err != nil {
						logf("sweep: %v", err)
					}
					mu.Unlock()
					continue
				}
				cfgJSON, err := json.Marshal(j.Config)
				if err == nil {
					rec := Record{Hash: j.Hash, Index: j.Index, Grid: opt.Grid, Finished: time.Now().UTC(), Config: cfgJSON, Result: res}
					if err = log.Append(rec); err == nil {
						mu.Lock()
						sum.Ran++
						sum.Pending--
						if opt.OnDone != nil {
							opt.OnDone(rec)
						}
						mu.Unlock()
						logf("sweep: run %d (%s) recorded after %.1fs", j.Index, j.Hash, time.Since(t0).Seconds())
						continue
					}
				}
				// Not being able to record results is fatal for the whole sweep.
				mu.Lock()
				if fatalErr == nil {
					fatalErr = fmt.Errorf("sweep: run %d (%s): %w", j.Index, j.Hash, err)
				}
				mu.Unlock()
				cancel()
				return
			}
		}()
	}
	wg.Wait()
	sum.Seconds = time.Since(start).Seconds()
	if fatalErr != nil {
		return sum, fatalErr
	}
	if err := parent.Err(); err != nil {
		sum.Interrupted = true
		return sum, fmt.Errorf("sweep interrupted with %d of %d runs pending (rerun the same command to resume): %w", sum.Pending, sum.Jobs, err)
	}
	if len(sum.Failed) > 0 {
		return sum, fmt.Errorf("sweep: %d of %d runs failed (first: run %d: %s)", len(sum.Failed), len(todo), sum.Failed[0].Index, sum.Failed[0].Error)
	}
	return sum, nil
}

// FailuresFile is the log of failed runs in a sweep directory: one JSON Failure per
// line, appended when a run fails ('sweep status OUT' reads it). A run that later
// finishes counts as done whatever this file says.
const FailuresFile = "failures.jsonl"

// appendFailure appends f to out's failures log.
func appendFailure(out string, f Failure) error {
	b, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("record failure of run %d: %w", f.Index, err)
	}
	fh, err := os.OpenFile(filepath.Join(out, FailuresFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("record failure of run %d: %w", f.Index, err)
	}
	_, werr := fh.Write(append(b, '\n'))
	if cerr := fh.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("record failure of run %d: %w", f.Index, werr)
	}
	return nil
}

// ReadFailures reads dir's failures log (none: an empty map), the last failure of
// each run by hash; lines that do not decode are skipped.
func ReadFailures(dir string) (map[string]Failure, error) {
	b, err := os.ReadFile(filepath.Join(dir, FailuresFile))
	if errors.Is(err, os.ErrNotExist) {
		return map[string]Failure{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read failures: %w", err)
	}
	m := map[string]Failure{}
	for _, line := range bytes.Split(b, []byte{'\n'}) {
		var f Failure
		if json.Unmarshal(line, &f) == nil && f.Hash != "" {
			m[f.Hash] = f
		}
	}
	return m, nil
}

// safeRun calls the runner, turning a panic into an error so that one bad
// configuration cannot take the whole sweep down, and checks the result is a JSON
// object.
func safeRun(ctx context.Context, r Runner, j Job, dir string) (res json.RawMessage, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v\n%s", p, debug.Stack())
		}
	}()
	res, err = r(ctx, j, dir)
	if err != nil {
		return nil, err
	}
	if !isJSONObject(res) {
		return nil, fmt.Errorf("runner returned a result that is not a JSON object")
	}
	return res, nil
}

// Status counts the jobs of a shard that a sweep directory has finished.
type Status struct {
	Shard    string    `json:"shard"`
	Jobs     int       `json:"jobs"`
	Done     int       `json:"done"`
	Pending  int       `json:"pending"`
	Foreign  int       `json:"foreign"` // records whose hash is not a job of the grid
	BadLines []BadLine `json:"bad_lines"`
	Started  int       `json:"started"` // pending jobs whose run directory exists
}

// StatusOf reports progress of the shard's jobs in the sweep directory out.
func StatusOf(jobs []Job, shard Shard, out string) (Status, error) {
	if shard.N == 0 {
		shard = Shard{I: 0, N: 1}
	}
	st := Status{Shard: shard.String(), BadLines: []BadLine{}}
	if err := shard.Validate(); err != nil {
		return st, err
	}
	recs, bad, err := ReadResults(ResultsPath(out))
	if err != nil {
		return st, fmt.Errorf("sweep status: %w", err)
	}
	st.BadLines = append(st.BadLines, bad...)
	inGrid := make(map[string]bool, len(jobs))
	for _, j := range jobs {
		inGrid[j.Hash] = true
	}
	done := make(map[string]bool, len(recs))
	for _, r := range recs {
		if !done[r.Hash] && !inGrid[r.Hash] {
			st.Foreign++
		}
		done[r.Hash] = true
	}
	for _, j := range shard.Select(jobs) {
		st.Jobs++
		if done[j.Hash] {
			st.Done++
			continue
		}
		st.Pending++
		if fi, err := os.Stat(RunDir(out, j.Hash)); err == nil && fi.IsDir() {
			st.Started++
		}
	}
	return st, nil
}
