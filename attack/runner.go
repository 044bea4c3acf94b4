package attack

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"

	"github.com/dpfil/dpfil/internal/atomicfile"
	"github.com/dpfil/dpfil/internal/dirlock"
)

// RunOptions controls a batch of trials.
type RunOptions struct {
	Trials  int // trials First … First+Trials−1
	First   int // index of the first trial (≥ 0; 0 for a game's own trials)
	Workers int // parallel trials; ≤ 0 means GOMAXPROCS
	// Out, when set, makes the run resumable: Out/game.json records the game and Meta
	// (a rerun with a different game is refused) and every finished trial is appended
	// to Out/trials.jsonl as one JSON line; trials already there are not rerun.
	Out  string
	Meta map[string]any
	// Progress, when set, is called after each finished trial (from one goroutine at a
	// time) with the number done so far, including resumed ones.
	Progress func(done int, r *TrialResult)
	// Record, when set, is called once per trial to get that trial's step observer
	// (for transcripts) and its closer.
	Record func(trial int) (observe func(t int, released []float64, knownMember []bool, obs Observation) error, done func() error, err error)
}

// TrialsFile and GameFile are the names of the files a resumable run keeps in Out.
const (
	TrialsFile = "trials.jsonl"
	GameFile   = "game.json"
)

// Run plays trials opt.First … opt.First+opt.Trials−1 in parallel and returns their results ordered by
// trial. Each trial's result depends only on the game and its index, so the results
// do not depend on the number of workers nor on interruptions.
func (g *Game) Run(ctx context.Context, opt RunOptions) ([]TrialResult, error) {
	if opt.Trials < 1 {
		return nil, fmt.Errorf("attack game: trials %d < 1", opt.Trials)
	}
	if opt.First < 0 {
		return nil, fmt.Errorf("attack game: first trial %d < 0", opt.First)
	}
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	done := map[int]TrialResult{}
	var out *os.File
	if opt.Out != "" {
		unlock, err := dirlock.LockAs(opt.Out, "attack game",
			"attack game: output directory "+opt.Out+" is in use by another dpfil process (one game per directory)")
		if err != nil {
			return nil, err
		}
		defer unlock()
		done, err = g.prepareOut(opt.Out, opt.Meta)
		if err != nil {
			return nil, err
		}
		out, err = os.OpenFile(filepath.Join(opt.Out, TrialsFile), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("attack game: open trials log: %w", err)
		}
		defer out.Close()
	}
	var todo []int
	ndone := 0
	for i := opt.First; i < opt.First+opt.Trials; i++ {
		if _, ok := done[i]; ok {
			ndone++
		} else {
			todo = append(todo, i)
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan int)
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
		cancel()
	}
	for w := 0; w < min(workers, max(1, len(todo))); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := g.newState()
			for i := range jobs {
				var observe func(int, []float64, []bool, Observation) error
				var closeRec func() error
				if opt.Record != nil {
					var err error
					observe, closeRec, err = opt.Record(i)
					if err != nil {
						fail(fmt.Errorf("trial %d: start recording: %w", i, err))
						return
					}
				}
				r, err := g.trial(ctx, st, i, observe)
				if closeRec != nil {
					if cerr := closeRec(); err == nil && cerr != nil {
						err = fmt.Errorf("trial %d: finish recording: %w", i, cerr)
					}
				}
				if err != nil {
					fail(err)
					return
				}
				line, err := json.Marshal(r)
				if err != nil {
					fail(fmt.Errorf("trial %d: encode result: %w", i, err))
					return
				}
				mu.Lock()
				if out != nil {
					if _, err := out.Write(append(line, '\n')); err != nil && firstErr == nil {
						firstErr = fmt.Errorf("attack game: append trial %d: %w", i, err)
					}
				}
				done[i] = *r
				ndone++
				if opt.Progress != nil {
					opt.Progress(ndone, r)
				}
				mu.Unlock()
			}
		}()
	}
feed:
	for _, i := range todo {
		select {
		case jobs <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res := make([]TrialResult, 0, opt.Trials)
	for i := opt.First; i < opt.First+opt.Trials; i++ {
		res = append(res, done[i])
	}
	return res, nil
}

type gameFile struct {
	Config GameConfig     `json:"config"`
	Meta   map[string]any `json:"meta,omitempty"`
}

// prepareOut creates dir and its game.json, or checks that an existing one matches,
// and loads the finished trials (a torn last line from a crash is dropped).
func (g *Game) prepareOut(dir string, meta map[string]any) (map[int]TrialResult, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("attack game: create output directory: %w", err)
	}
	want, err := json.MarshalIndent(gameFile{Config: g.cfg, Meta: meta}, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("attack game: encode game: %w", err)
	}
	want = append(want, '\n')
	path := filepath.Join(dir, GameFile)
	have, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := atomicfile.WriteFile(path, want); err != nil {
			return nil, fmt.Errorf("attack game: %w", err)
		}
	case err != nil:
		return nil, fmt.Errorf("attack game: read %s: %w", path, err)
	default:
		var a, b any
		if json.Unmarshal(have, &a) != nil || json.Unmarshal(want, &b) != nil || !jsonEqual(a, b) {
			return nil, fmt.Errorf("attack game: %s holds a different game; use another --out or remove it", path)
		}
	}
	return LoadTrials(filepath.Join(dir, TrialsFile))
}

func jsonEqual(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

// LoadTrials reads a trials.jsonl file (missing = empty). A torn final line (a crash
// mid-write) is ignored and cut off the file; a malformed line elsewhere is an error.
func LoadTrials(path string) (map[int]TrialResult, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return map[int]TrialResult{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read trials: %w", err)
	}
	done := map[int]TrialResult{}
	good := 0 // bytes of complete, valid lines
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		end := good + len(b) + 1
		var r TrialResult
		if err := json.Unmarshal(b, &r); err != nil || r.Success == nil || len(r.Prior) == 0 {
			if end >= len(data) { // last line: torn write
				break
			}
			return nil, fmt.Errorf("read trials: %s line %d is not a trial result", path, line)
		}
		if end > len(data) { // complete JSON but no newline: keep it, fix the file
			data = append(data, '\n')
			if err := os.WriteFile(path, data, 0o644); err != nil {
				return nil, fmt.Errorf("read trials: repair %s: %w", path, err)
			}
		}
		done[r.Trial] = r
		good = end
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read trials: %w", err)
	}
	if good < len(data) {
		if err := os.Truncate(path, int64(good)); err != nil {
			return nil, fmt.Errorf("read trials: drop torn line of %s: %w", path, err)
		}
	}
	return done, nil
}

// AttackStats is the success of one attack over the trials.
type AttackStats struct {
	Successes int        `json:"successes"`
	Trials    int        `json:"trials"`
	Rate      float64    `json:"success_rate"`
	CI        [2]float64 `json:"success_ci"` // 95 % Clopper–Pearson
}

// Summarize counts each attack's successes with a 95 % Clopper–Pearson interval.
func Summarize(res []TrialResult) (map[string]AttackStats, error) {
	out := map[string]AttackStats{}
	names := map[string]bool{}
	for _, r := range res {
		for a := range r.Success {
			names[a] = true
		}
	}
	keys := make([]string, 0, len(names))
	for a := range names {
		keys = append(keys, a)
	}
	sort.Strings(keys)
	for _, a := range keys {
		s := AttackStats{}
		for _, r := range res {
			ok, present := r.Success[a]
			if !present {
				continue
			}
			s.Trials++
			if ok {
				s.Successes++
			}
		}
		lo, hi, err := ClopperPearson(s.Successes, s.Trials, 0.95)
		if err != nil {
			return nil, fmt.Errorf("attack %s: %w", a, err)
		}
		s.Rate = float64(s.Successes) / float64(s.Trials)
		s.CI = [2]float64{lo, hi}
		out[a] = s
	}
	return out, nil
}
