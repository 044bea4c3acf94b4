package sweep

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// fakeRunner is a fast stand-in for train.Run: it "trains" for steps steps of delay
// each, checkpointing the step count in dir, stops on ctx cancel, resumes from the
// checkpoint, and returns metrics that are a deterministic function of the config.
type fakeRunner struct {
	steps    int
	delay    time.Duration
	calls    atomic.Int64
	resumed  atomic.Int64 // runs that started from a checkpoint
	failHash string       // this job fails
	panicHas string       // this job panics
	// onStep, if set, is called after each checkpointed step (tests cancel from it).
	onStep func(j Job, step int)
}

func fakeMetrics(j Job) map[string]any {
	c := j.Config
	acc := 1 - 1/(1+c.LR*float64(c.Steps)*c.Clip/(1+c.Sigma))
	rdp := 1 / (4 * (math.Exp(float64(c.Steps)/(c.Sigma*c.Sigma*1000)) - 1))
	return map[string]any{
		"test_accuracy":        acc,
		"mse_bound_rdp":        rdp,
		"mse_bound_fil_max":    rdp * 30,
		"mse_bound_fil_median": rdp * 300,
		"dfil_max":             1 / (rdp * 30),
		"dfil_median":          1 / (rdp * 300),
		"seed":                 c.Seed,
	}
}

func (f *fakeRunner) run(ctx context.Context, j Job, dir string) (json.RawMessage, error) {
	f.calls.Add(1)
	if j.Hash == f.panicHas {
		panic("fake panic")
	}
	if j.Hash == f.failHash {
		return nil, errors.New("fake failure")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	ck := filepath.Join(dir, "checkpoint")
	start := 0
	if b, err := os.ReadFile(ck); err == nil {
		start, _ = strconv.Atoi(string(b))
		if start > 0 {
			f.resumed.Add(1)
		}
	}
	for s := start; s < f.steps; s++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(f.delay):
		}
		if err := os.WriteFile(ck, []byte(strconv.Itoa(s+1)), 0o644); err != nil {
			return nil, err
		}
		if f.onStep != nil {
			f.onStep(j, s+1)
		}
	}
	m := fakeMetrics(j)
	m["resumed_from"] = start
	return json.Marshal(m)
}

func testJobs(t testing.TB, n int) []Job {
	t.Helper()
	vals := make([]any, n)
	for i := range vals {
		vals[i] = 0.1 * float64(i+1)
	}
	g := &Grid{Name: "fake", Base: map[string]any{"model": "linear", "batch": 10, "steps": 100}, Grid: map[string][]any{"sigma": vals}}
	if err := g.normalize(); err != nil {
		t.Fatal(err)
	}
	jobs, err := g.Jobs()
	if err != nil {
		t.Fatal(err)
	}
	return jobs
}

func hashCounts(t *testing.T, out string) (map[string]int, []BadLine) {
	t.Helper()
	recs, bad, err := ReadResults(ResultsPath(out))
	if err != nil {
		t.Fatal(err)
	}
	c := map[string]int{}
	for _, r := range recs {
		c[r.Hash]++
	}
	return c, bad
}

func exactlyOnce(t *testing.T, out string, jobs []Job) {
	t.Helper()
	counts, _ := hashCounts(t, out)
	if len(counts) != len(jobs) {
		t.Fatalf("%d distinct configs recorded, want %d", len(counts), len(jobs))
	}
	for _, j := range jobs {
		if counts[j.Hash] != 1 {
			t.Fatalf("job %d (%s) recorded %d times, want exactly once", j.Index, j.Hash, counts[j.Hash])
		}
	}
}
