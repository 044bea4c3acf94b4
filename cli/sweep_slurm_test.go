package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dpfil/dpfil/sweep"
)

// preemptGrid is 4 real training runs (linear model, embedded MNIST) of a few
// seconds each: long enough to be preempted in the middle of their DP-SGD steps even
// when a loaded machine delays the signal by a second or two, short enough for CI.
// The RDP accountant keeps the accounting after the last step (which a SIGTERM does
// not interrupt: the run then finishes) short.
const preemptGrid = `name: preempt
base: {model: linear, dataset: mnist-embedded, train_subset: 200, batch: 20, steps: 1500, fil_coords: 4, repeats: 1, accountant: rdp}
grid: {sigma: [0.5, 2], lr: [0.05, 0.2]}
`

func writePreemptGrid(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "grid.yaml")
	if err := os.WriteFile(p, []byte(preemptGrid), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// timingFields are the only fields of a train result that differ between identical
// runs (train.Result: wall time, step time, throughput).
var timingFields = []string{"wall_seconds", "step_seconds", "samples_per_sec"}

// comparableResults maps hash → (index, config, result without its timing fields) of
// a results file: what an interrupted-and-resumed sweep must reproduce exactly.
func comparableResults(t *testing.T, path string) map[string]string {
	t.Helper()
	recs, bad, err := sweep.ReadResults(path)
	if err != nil || len(bad) != 0 {
		t.Fatalf("read %s: %v %v", path, bad, err)
	}
	m := map[string]string{}
	for _, r := range recs {
		var res map[string]any
		if err := json.Unmarshal(r.Result, &res); err != nil {
			t.Fatalf("%s: run %s: %v", path, r.Hash, err)
		}
		for _, f := range timingFields {
			if _, ok := res[f]; !ok {
				t.Fatalf("%s: run %s has no %s", path, r.Hash, f)
			}
			delete(res, f)
		}
		b, _ := json.Marshal(res)
		if _, dup := m[r.Hash]; dup {
			t.Fatalf("%s: hash %s twice", path, r.Hash)
		}
		m[r.Hash] = fmt.Sprintf("%d %s %s", r.Index, r.Config, b)
	}
	return m
}

// sameRunFiles checks that every file the runs of sweep directory ref wrote (dFIL,
// parameters) is byte-identical in got, and result.json equal but for its timings.
func sameRunFiles(t *testing.T, ref, got string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(ref, "runs", "*", "*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no run files in %s: %v", ref, err)
	}
	n := 0
	for _, f := range files {
		rel, _ := filepath.Rel(ref, f)
		base := filepath.Base(f)
		if strings.HasPrefix(base, ".") || base == "result.json" {
			continue
		}
		a, err1 := os.ReadFile(f)
		b, err2 := os.ReadFile(filepath.Join(got, rel))
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: %v %v", rel, err1, err2)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs from the uninterrupted sweep's", rel)
		}
		n++
	}
	if n == 0 {
		t.Fatalf("no data files compared in %s", ref)
	}
}

// waitFor polls cond every 100 ms until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// midRun reports the hash of a run of sweep directory dir that has a checkpoint but
// no record yet: a run in the middle of training.
func midRun(dir string) (string, bool) {
	recs, _, _ := sweep.ReadResults(sweep.ResultsPath(dir))
	done := map[string]bool{}
	for _, r := range recs {
		done[r.Hash] = true
	}
	cks, _ := filepath.Glob(filepath.Join(dir, "runs", "*", "checkpoint.bin"))
	for _, c := range cks {
		if h := filepath.Base(filepath.Dir(c)); !done[h] {
			return h, true
		}
	}
	return "", false
}

// SIGTERM in the middle of a run, without any scheduler: the shard's process (and the
// generated Slurm script, whose shell must forward the signal) checkpoints, exits
// with status 75, and the rerun resumes; results and run files equal those of an
// uninterrupted sweep byte for byte (result.json but for its timing fields).
func TestSweepSIGTERMCheckpointsAndResumes(t *testing.T) {
	grid := writePreemptGrid(t)
	tmp := t.TempDir()
	ref := filepath.Join(tmp, "ref")
	if _, err := runCLI(t, newRootCmd(), "sweep", "run", grid, "--out", ref, "-q", "--shard", "0/2"); err != nil {
		t.Fatal(err)
	}
	want := comparableResults(t, sweep.ResultsPath(ref))
	if len(want) != 2 {
		t.Fatalf("reference shard recorded %d runs, want 2", len(want))
	}
	script := filepath.Join(tmp, "job.sh")
	if _, err := runCLI(t, newRootCmd(), "sweep", "plan", grid, "--shards", "2", "--slurm", "--bin", selfExe(t), "--out", filepath.Join(tmp, "slurm"), "-o", script); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		cmd  func() *exec.Cmd
		out  string
	}{
		{"dpfil", func() *exec.Cmd {
			return exec.Command(selfExe(t), "sweep", "run", grid, "--out", filepath.Join(tmp, "direct"), "--shard", "0/2")
		}, filepath.Join(tmp, "direct")},
		{"slurm-script", func() *exec.Cmd {
			c := exec.Command("bash", script)
			c.Env = append(c.Env, "SLURM_ARRAY_TASK_ID=0")
			return c
		}, filepath.Join(tmp, "slurm", "shard-0")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log bytes.Buffer
			c := tc.cmd()
			c.Env = append(append(os.Environ(), c.Env...), realChildEnv+"=1")
			c.Stdout, c.Stderr = &log, &log
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			var hash string
			waitFor(t, 60*time.Second, "a run with a checkpoint", func() (ok bool) { hash, ok = midRun(tc.out); return })
			if err := c.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			err := c.Wait()
			if code := c.ProcessState.ExitCode(); code != sweep.ExitInterrupted {
				t.Fatalf("after SIGTERM: exit status %d (%v), want %d; output:\n%s", code, err, sweep.ExitInterrupted, log.String())
			}
			if !strings.Contains(log.String(), "interrupted; it resumes from") {
				t.Fatalf("no interruption in the log:\n%s", log.String())
			}
			if _, err := os.Stat(filepath.Join(sweep.RunDir(tc.out, hash), "checkpoint.bin")); err != nil {
				t.Fatalf("the interrupted run left no checkpoint: %v", err)
			}
			if got := comparableResults(t, sweep.ResultsPath(tc.out)); len(got) >= 2 {
				t.Fatalf("SIGTERM came after the shard finished (%d runs recorded)", len(got))
			}
			log.Reset()
			c = tc.cmd()
			c.Env = append(append(os.Environ(), c.Env...), realChildEnv+"=1")
			c.Stdout, c.Stderr = &log, &log
			if err := c.Run(); err != nil {
				t.Fatalf("resumed shard: %v\n%s", err, log.String())
			}
			if got := comparableResults(t, sweep.ResultsPath(tc.out)); !reflect.DeepEqual(got, want) {
				t.Fatalf("resumed shard differs from the uninterrupted one:\n%v\nwant\n%v", got, want)
			}
			sameRunFiles(t, ref, tc.out)
		})
	}
}

// slurmEnv is the variable that turns TestSlurmSweepPreemptAndMerge on; .ci/run sets
// it after scripts/slurm-local.sh has started a one-node cluster.
const slurmEnv = "DPFIL_SLURM"

// slurm runs a Slurm client command and fails the test when it fails.
func slurm(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// A real Slurm cluster runs a 4-run grid as an array of 2 tasks; task 0 gets SIGTERM
// in the middle of a run (scancel --batch --signal=TERM, as Slurm's
// --signal=B:TERM@grace does before a time limit), checkpoints, requeues itself and
// resumes. The merged results equal a local 'sweep run' of the grid (metrics and
// everything but timings; run files byte for byte), sweep status reports all runs
// done, and the Pareto figure is drawn from the merged results.
func TestSlurmSweepPreemptAndMerge(t *testing.T) {
	if os.Getenv(slurmEnv) == "" {
		t.Skipf("needs a running Slurm cluster: start one with scripts/slurm-local.sh (as root or with sudo) and run with %s=1 (.ci/run does both)", slurmEnv)
	}
	for _, c := range []string{"sbatch", "squeue", "scancel", "scontrol", "sinfo"} {
		if _, err := exec.LookPath(c); err != nil {
			t.Fatalf("%s=1 but %s is not on PATH: %v", slurmEnv, c, err)
		}
	}
	if st := strings.TrimSpace(slurm(t, "sinfo", "-h", "-o", "%T")); !strings.Contains(st, "idle") && !strings.Contains(st, "mix") {
		t.Fatalf("%s=1 but no Slurm node is idle (sinfo: %q): run scripts/slurm-local.sh", slurmEnv, st)
	}
	start := time.Now()
	grid := writePreemptGrid(t)
	tmp := t.TempDir()
	local := filepath.Join(tmp, "local")
	if _, err := runCLI(t, newRootCmd(), "sweep", "run", grid, "--out", local, "-q"); err != nil {
		t.Fatal(err)
	}
	want := comparableResults(t, sweep.ResultsPath(local))
	if len(want) != 4 {
		t.Fatalf("local sweep recorded %d runs, want 4", len(want))
	}

	// The tasks run this test binary as dpfil; sbatch passes the environment on.
	t.Setenv(realChildEnv, "1")
	out := filepath.Join(tmp, "cluster")
	s, err := runCLI(t, newRootCmd(), "sweep", "submit", grid, "--slurm", "--shards", "2", "--out", out, "--bin", selfExe(t), "--json")
	if err != nil {
		t.Fatal(err)
	}
	var sub sweep.SubmitReport
	if err := json.Unmarshal([]byte(s), &sub); err != nil || sub.JobID == "" {
		t.Fatalf("submit: %v\n%s", err, s)
	}
	task0 := sub.JobID + "_0"
	t.Cleanup(func() { _ = exec.Command("scancel", sub.JobID).Run() })
	logs := func() string {
		var b strings.Builder
		files, _ := filepath.Glob(filepath.Join(out, sweep.SlurmLogsDir, "*"))
		for _, f := range files {
			c, _ := os.ReadFile(f)
			fmt.Fprintf(&b, "--- %s\n%s", f, c)
		}
		return b.String()
	}
	shard0 := filepath.Join(out, "shard-0")
	var hash string
	waitFor(t, 90*time.Second, "task 0 in the middle of a run", func() (ok bool) { hash, ok = midRun(shard0); return })
	slurm(t, "scancel", "--batch", "--signal=TERM", task0)
	t.Logf("SIGTERM to task %s in the middle of run %s after %.1f s", task0, hash, time.Since(start).Seconds())

	// The task checkpoints, exits 75 and requeues itself: pending with one restart.
	// A requeued job waits about two minutes before it may start again (Slurm's
	// requeue hold); the test releases it after 10 s. Not at once: slurmd refuses to
	// launch a job whose previous instance it has just killed ("Job credential
	// revoked", "already killed, do not launch batch job"), and the task then fails
	// with exit 1 (seen once in CI when it was released within 150 ms).
	waitFor(t, 60*time.Second, "task 0 requeued", func() bool {
		o, err := exec.Command("scontrol", "show", "job", task0).Output()
		return err == nil && strings.Contains(string(o), "JobState=PENDING") && strings.Contains(string(o), "Restarts=1")
	})
	if _, err := os.Stat(filepath.Join(sweep.RunDir(shard0, hash), "checkpoint.bin")); err != nil {
		t.Fatalf("the preempted run left no checkpoint: %v\n%s", err, logs())
	}
	if l := logs(); !strings.Contains(l, "interrupted; it resumes from") || !strings.Contains(l, "requeueing task") {
		t.Fatalf("task 0 did not checkpoint and requeue:\n%s", l)
	}
	st, err := runCLI(t, newRootCmd(), "sweep", "status", out, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var cs sweep.ClusterStatus
	if err := json.Unmarshal([]byte(st), &cs); err != nil {
		t.Fatal(err)
	}
	if cs.Tasks[0].State != "PENDING" || cs.Done+cs.Running+cs.Pending+cs.Failed != 4 || cs.Failed != 0 {
		t.Fatalf("status while task 0 waits: %+v", cs)
	}
	finish := 120 * time.Second
	if o, err := exec.Command("scontrol", "update", "JobId="+task0, "StartTime=now+10").CombinedOutput(); err != nil {
		t.Logf("scontrol update StartTime=now+10 (not allowed to this user?): %v %s; waiting for the requeue hold", err, o)
		finish += 150 * time.Second
	}

	waitFor(t, finish, "the array job to finish", func() bool {
		o, err := exec.Command("squeue", "-h", "-j", sub.JobID).Output()
		return err == nil && strings.TrimSpace(string(o)) == ""
	})
	st, err = runCLI(t, newRootCmd(), "sweep", "status", out, "--json")
	if err != nil {
		t.Fatal(err)
	}
	cs = sweep.ClusterStatus{}
	if err := json.Unmarshal([]byte(st), &cs); err != nil || cs.Done != 4 {
		job, _ := exec.Command("scontrol", "show", "job", task0).CombinedOutput()
		t.Fatalf("status after the job: %v %+v\n%s\nscontrol show job %s:\n%s", err, cs, logs(), task0, job)
	}
	shards, _ := filepath.Glob(filepath.Join(out, "shard-*"))
	sort.Strings(shards)
	if _, err := runCLI(t, newRootCmd(), append(append([]string{"sweep", "merge"}, shards...), "--out", out)...); err != nil {
		t.Fatal(err)
	}
	if got := comparableResults(t, sweep.ResultsPath(out)); !reflect.DeepEqual(got, want) {
		t.Fatalf("merged Slurm results differ from the local sweep:\n%v\nwant\n%v\n%s", got, want, logs())
	}
	for _, sh := range shards {
		sameRunFiles(t, sh, local)
	}
	fig := filepath.Join(tmp, "pareto.png")
	if _, err := runCLI(t, newRootCmd(), "plot", "pareto", out, "-o", fig); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(fig); err != nil || fi.Size() < 1000 {
		t.Fatalf("Pareto figure: %v", err)
	}
	t.Logf("Slurm sweep with preemption, merge and plot took %.1f s", time.Since(start).Seconds())
}

// 'sweep submit' and 'sweep status OUT' through the command line, with a stand-in
// sbatch and squeue on PATH: the job id (human and JSON), --dry-run's script, the
// status of the submitted sweep, and the errors for a missing --slurm or sbatch.
func TestSweepSubmitAndStatusCLI(t *testing.T) {
	grid := writeGrid(t)
	bin := t.TempDir()
	for name, body := range map[string]string{
		"sbatch": "echo 777",
		"squeue": `echo "777_0|RUNNING|None"; echo "777_2|PENDING|Resources"`,
		"sacct":  "echo 'Slurm accounting storage is disabled' >&2; exit 1",
	} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	out := filepath.Join(t.TempDir(), "res")

	s, err := runCLI(t, newRootCmd(), "sweep", "submit", grid, "--slurm", "--shards", "3", "--out", out, "--time", "2:00:00", "--gres", "gpu:1", "--partition", "gpu", "--dry-run")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"#!/bin/bash\n", "#SBATCH --array=0-2\n", "#SBATCH --gres=gpu:1\n", "#SBATCH --time=2:00:00\n", "#SBATCH --signal=B:TERM@120\n", "#SBATCH --requeue\n", selfExe(t) + " sweep run "} {
		if !strings.Contains(s, w) {
			t.Errorf("dry run lacks %q:\n%s", w, s)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Fatal("--dry-run wrote the results root")
	}
	s, err = runCLI(t, newRootCmd(), "sweep", "submit", grid, "--slurm", "--shards", "3", "--out", out)
	if err != nil || !strings.Contains(s, "submitted job 777: 12 runs") {
		t.Fatalf("submit: %v\n%s", err, s)
	}
	s, err = runCLI(t, newRootCmd(), "sweep", "submit", grid, "--slurm", "--shards", "3", "--out", out, "--json")
	var rep sweep.SubmitReport
	if err != nil || json.Unmarshal([]byte(s), &rep) != nil || rep.JobID != "777" || rep.Resub != 1 {
		t.Fatalf("submit --json: %v %+v\n%s", err, rep, s)
	}

	s, err = runCLI(t, newRootCmd(), "sweep", "status", out)
	if err != nil || !strings.Contains(s, "12 runs: 0 done, 0 running, 0 failed, 12 pending") || !strings.Contains(s, "PENDING (Resources)") {
		t.Fatalf("status: %v\n%s", err, s)
	}
	s, err = runCLI(t, newRootCmd(), "sweep", "status", out, "--json")
	var st sweep.ClusterStatus
	if err != nil || json.Unmarshal([]byte(s), &st) != nil || st.Runs != 12 || st.Tasks[0].State != "RUNNING" || len(st.Jobs) != 2 {
		t.Fatalf("status --json: %v %+v\n%s", err, st, s)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"sweep", "submit", grid, "--shards", "2"}, "--slurm is required"},
		{[]string{"sweep", "submit", grid, "--slurm", "--shards", "2", "--gpus", "1", "--gres", "gpu:1", "--dry-run"}, "not both"},
		{[]string{"sweep", "status", t.TempDir()}, "sweep status GRID --out DIR"},
		{[]string{"sweep", "status", out, "--shard", "0/2"}, "--shard needs a grid"},
	} {
		if _, err := runCLI(t, newRootCmd(), tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("dpfil %s: %v, want an error containing %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
	t.Setenv("PATH", t.TempDir())
	if _, err := runCLI(t, newRootCmd(), "sweep", "submit", grid, "--slurm", "--shards", "2", "--out", t.TempDir()); err == nil || !strings.Contains(err.Error(), "sbatch not found on PATH") {
		t.Errorf("without sbatch: %v", err)
	}
}
