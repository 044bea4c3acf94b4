package sweep

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestRunAllOnce(t *testing.T) {
	for _, workers := range []int{1, 3} {
		jobs := testJobs(t, 7)
		out := t.TempDir()
		f := &fakeRunner{steps: 2, delay: time.Millisecond}
		sum, err := Run(context.Background(), jobs, Options{Out: out, Workers: workers, Runner: f.run, Grid: "fake"})
		if err != nil {
			t.Fatal(err)
		}
		if sum.Ran != 7 || sum.Pending != 0 || sum.AlreadyDone != 0 || f.calls.Load() != 7 {
			t.Fatalf("workers=%d: summary %+v, calls %d", workers, sum, f.calls.Load())
		}
		exactlyOnce(t, out, jobs)
		if _, err := os.Stat(out + "/.lock"); !os.IsNotExist(err) {
			t.Errorf("workers=%d: the finished sweep left its .lock", workers)
		}
		// A second call finds everything done and runs nothing.
		sum, err = Run(context.Background(), jobs, Options{Out: out, Workers: workers, Runner: f.run})
		if err != nil || sum.Ran != 0 || sum.AlreadyDone != 7 || f.calls.Load() != 7 {
			t.Fatalf("rerun: %+v, %v, calls %d", sum, err, f.calls.Load())
		}
	}
}

// Kill a sweep mid-run (context cancel while runs are half done), rerun it: every
// configuration ends up recorded exactly once, and interrupted runs resume from
// their checkpoints instead of starting over.
func TestRunResumeAfterCancel(t *testing.T) {
	jobs := testJobs(t, 9)
	out := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Kill the sweep while job 5 is half done (after its 10th of 20 steps), once at
	// least four runs are recorded; the other workers are mid-run too.
	var recorded atomic.Int64
	f := &fakeRunner{steps: 20, delay: 2 * time.Millisecond, onStep: func(j Job, step int) {
		if j.Index == 5 && step == 10 {
			for recorded.Load() < 4 {
				time.Sleep(time.Millisecond)
			}
			cancel()
		}
	}}
	sum, err := Run(ctx, jobs, Options{Out: out, Workers: 3, Runner: f.run, OnDone: func(Record) { recorded.Add(1) }})
	if !errors.Is(err, context.Canceled) || !sum.Interrupted {
		t.Fatalf("interrupted sweep: err %v, summary %+v", err, sum)
	}
	if sum.Ran < 4 || sum.Ran >= 9 || sum.Pending != 9-sum.Ran {
		t.Fatalf("after cancel: %+v", sum)
	}
	counts, _ := hashCounts(t, out)
	if len(counts) != sum.Ran {
		t.Fatalf("results.jsonl has %d configs, summary says %d ran", len(counts), sum.Ran)
	}
	first := sum.Ran

	// Simulate a process killed while writing: a torn last line.
	fh, err := os.OpenFile(ResultsPath(out), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fh.WriteString(`{"hash":"` + jobs[8].Hash + `","index":8,"con`); err != nil {
		t.Fatal(err)
	}
	fh.Close()

	sum, err = Run(context.Background(), jobs, Options{Out: out, Workers: 2, Runner: f.run})
	if err != nil {
		t.Fatal(err)
	}
	if sum.AlreadyDone != first || sum.Ran != 9-first || len(sum.BadLines) != 1 || !strings.Contains(sum.BadLines[0].Reason, "torn") {
		t.Fatalf("resumed sweep: %+v", sum)
	}
	if f.resumed.Load() == 0 {
		t.Fatal("no interrupted run resumed from its checkpoint")
	}
	exactlyOnce(t, out, jobs)
	// The torn fragment stays a separate skipped line; nothing else is damaged.
	_, bad := hashCounts(t, out)
	if len(bad) != 1 {
		t.Fatalf("bad lines after resume: %v", bad)
	}
}

func TestRunShardsCoverGrid(t *testing.T) {
	jobs := testJobs(t, 10)
	out := t.TempDir()
	f := &fakeRunner{steps: 1}
	for i := 0; i < 3; i++ {
		sum, err := Run(context.Background(), jobs, Options{Out: out, Shard: Shard{I: i, N: 3}, Runner: f.run})
		if err != nil {
			t.Fatal(err)
		}
		if want := []int{4, 3, 3}[i]; sum.Jobs != want || sum.Ran != want {
			t.Fatalf("shard %d: %+v", i, sum)
		}
	}
	exactlyOnce(t, out, jobs)
	st, err := StatusOf(jobs, Shard{I: 0, N: 1}, out)
	if err != nil || st.Done != 10 || st.Pending != 0 || st.Foreign != 0 {
		t.Fatalf("status %+v, %v", st, err)
	}
}

func TestRunFailuresAndPanics(t *testing.T) {
	jobs := testJobs(t, 5)
	out := t.TempDir()
	f := &fakeRunner{steps: 1, failHash: jobs[1].Hash, panicHas: jobs[3].Hash}
	sum, err := Run(context.Background(), jobs, Options{Out: out, Workers: 2, Runner: f.run})
	if err == nil || !strings.Contains(err.Error(), "2 of 5 runs failed") {
		t.Fatalf("err = %v", err)
	}
	if sum.Ran != 3 || len(sum.Failed) != 2 || sum.Pending != 2 {
		t.Fatalf("summary %+v", sum)
	}
	st, err := StatusOf(jobs, Shard{I: 0, N: 1}, out)
	if err != nil || st.Done != 3 || st.Pending != 2 {
		t.Fatalf("status %+v, %v", st, err)
	}
}

func TestRunBadOptions(t *testing.T) {
	jobs := testJobs(t, 2)
	f := &fakeRunner{steps: 1}
	for name, opt := range map[string]Options{
		"no out":    {Runner: f.run},
		"no runner": {Out: t.TempDir()},
		"bad shard": {Out: t.TempDir(), Runner: f.run, Shard: Shard{I: 2, N: 2}},
	} {
		if _, err := Run(context.Background(), jobs, opt); err == nil {
			t.Fatalf("%s: want error", name)
		}
	}
}

func TestRunRefusesBusyDirectory(t *testing.T) {
	jobs := testJobs(t, 2)
	out := t.TempDir()
	unlock, err := LockDir(out)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeRunner{steps: 1}
	if _, err := Run(context.Background(), jobs, Options{Out: out, Runner: f.run}); err == nil || !strings.Contains(err.Error(), "another sweep process") {
		t.Fatalf("second sweep in a locked directory: err %v", err)
	}
	unlock()
	if _, err := Run(context.Background(), jobs, Options{Out: out, Runner: f.run}); err != nil {
		t.Fatalf("after unlock: %v", err)
	}
	if f.calls.Load() != 2 {
		t.Fatalf("%d runner calls, want 2", f.calls.Load())
	}
}
