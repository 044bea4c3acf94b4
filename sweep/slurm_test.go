package sweep

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// fakeSlurm puts stand-ins for sbatch, squeue and sacct on PATH (and nothing else of
// Slurm): sbatch records its arguments in dir/sbatch.args and prints "4242;cluster";
// squeue and sacct print the contents of dir/squeue.out and dir/sacct.out, or fail
// with dir/*.err as their message when that file exists.
func fakeSlurm(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write("sbatch", `echo "$@" > "`+dir+`/sbatch.args"; echo "4242;cluster"`+"\n")
	for _, c := range []string{"squeue", "sacct"} {
		write(c, `if [ -f "`+dir+`/`+c+`.err" ]; then cat "`+dir+`/`+c+`.err" >&2; exit 1; fi; echo "$@" > "`+dir+`/`+c+`.args"; cat "`+dir+`/`+c+`.out" 2>/dev/null; exit 0`+"\n")
	}
	t.Setenv("PATH", dir+":/usr/bin:/bin")
	return dir
}

func writeTestGrid(t *testing.T, body string) *Expanded {
	t.Helper()
	p := filepath.Join(t.TempDir(), "grid.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := Expand(p)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

const fourRuns = "name: four\nbase: {model: linear, steps: 10}\ngrid: {sigma: [0.5, 1, 2, 4]}\n"

func TestSlurmScriptPreemption(t *testing.T) {
	s, err := SlurmScript(PlanOptions{Grid: "g.yaml", Shards: 2, Out: "o", Gres: "gpu:a100:1", Grace: 300, Log: "/l/%A_%a.out"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"#SBATCH --requeue\n", "#SBATCH --signal=B:TERM@300\n", "#SBATCH --gres=gpu:a100:1\n",
		"#SBATCH --output=/l/%A_%a.out\n", "#SBATCH --open-mode=append\n", "trap 'term=1; [ -n \"$pid\" ] && kill -TERM \"$pid\"", "scontrol requeue \"$SLURM_JOB_ID\"",
		`[ "$rc" = 75 ] || [ "$term:$rc" = 1:143 ]`, `exit "$rc"`} {
		if !strings.Contains(s, want) {
			t.Errorf("script lacks %q:\n%s", want, s)
		}
	}
	if s, _ := SlurmScript(PlanOptions{Grid: "g.yaml", Shards: 2, Out: "o"}); !strings.Contains(s, "--signal=B:TERM@120\n") {
		t.Errorf("default grace:\n%s", s)
	}
	for _, bad := range []PlanOptions{
		{Grid: "g", Shards: 2, Out: "o", Grace: -1},
		{Grid: "g", Shards: 2, Out: "o", GPUs: 1, Gres: "gpu:1"},
		{Grid: "g", Shards: 2, Out: "o", GPUs: -1},
		{Grid: "g", Shards: 2, Out: "o", Gres: "gpu:1\n#SBATCH --x"},
	} {
		if _, err := SlurmScript(bad); err == nil {
			t.Errorf("SlurmScript(%+v) accepted", bad)
		}
	}
	if _, err := K8sManifest(PlanOptions{GridYAML: []byte("x"), Shards: 1, Out: "/r", Image: "i", Gres: "gpu:1"}); err == nil {
		t.Error("K8sManifest accepted --gres")
	}
}

func TestSubmit(t *testing.T) {
	fake := fakeSlurm(t)
	e := writeTestGrid(t, fourRuns)
	out := filepath.Join(t.TempDir(), "res")
	req := SubmitRequest{PlanOptions: PlanOptions{Shards: 2, Out: out, Bin: "/opt/dpfil", Partition: "gpu", Time: "1:00:00", Gres: "gpu:1"}}

	dry := req
	dry.DryRun = true
	rep, err := e.Submit(context.Background(), dry)
	if err != nil {
		t.Fatal(err)
	}
	if rep.JobID != "" || !strings.Contains(rep.Text, "#SBATCH --partition=gpu\n") || !strings.Contains(rep.Text, "--output="+out+"/logs/slurm-%A_%a.out") {
		t.Fatalf("dry run: %+v", rep)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("dry run wrote %s: %v", out, err)
	}
	var buf bytes.Buffer
	rep.WriteText(&buf)
	if buf.String() != rep.Text {
		t.Fatal("dry run text is not the script")
	}

	rep, err = e.Submit(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if rep.JobID != "4242" || rep.Resub != 0 || rep.Runs != 4 {
		t.Fatalf("submit: %+v", rep)
	}
	args, _ := os.ReadFile(filepath.Join(fake, "sbatch.args"))
	if got, want := strings.TrimSpace(string(args)), "--parsable --chdir "+out+" "+filepath.Join(out, SlurmFile); got != want {
		t.Fatalf("sbatch args %q, want %q", got, want)
	}
	script, err := os.ReadFile(filepath.Join(out, SlurmFile))
	if err != nil || !strings.Contains(string(script), "/opt/dpfil sweep run "+e.File) {
		t.Fatalf("script: %v\n%s", err, script)
	}
	if fi, err := os.Stat(filepath.Join(out, SlurmLogsDir)); err != nil || !fi.IsDir() {
		t.Fatalf("no logs directory: %v", err)
	}
	sub, err := ReadSubmission(out)
	if err != nil || sub.Shards != 2 || sub.Runs != 4 || len(sub.Jobs) != 1 || sub.Jobs[0].ID != "4242" || sub.Grid != e.File {
		t.Fatalf("submission %+v %v", sub, err)
	}
	buf.Reset()
	rep.WriteText(&buf)
	if !strings.Contains(buf.String(), "submitted job 4242") || !strings.Contains(buf.String(), "sweep status "+out) {
		t.Fatalf("text: %s", buf.String())
	}

	// Submitting again resumes the same sweep: a second job id is recorded.
	if rep, err = e.Submit(context.Background(), req); err != nil || rep.Resub != 1 {
		t.Fatalf("resubmit: %+v %v", rep, err)
	}
	if sub, _ = ReadSubmission(out); len(sub.Jobs) != 2 {
		t.Fatalf("jobs after resubmit: %+v", sub.Jobs)
	}
	// Another shard count into the same results root would mix two layouts.
	other := req
	other.Shards = 3
	if _, err := e.Submit(context.Background(), other); err == nil || !strings.Contains(err.Error(), "already holds a sweep") {
		t.Fatalf("resubmit with other shards: %v", err)
	}

	// No sbatch: a clear error, nothing submitted.
	t.Setenv("PATH", t.TempDir())
	_, err = e.Submit(context.Background(), SubmitRequest{PlanOptions: PlanOptions{Shards: 2, Out: filepath.Join(t.TempDir(), "x")}})
	if err == nil || !strings.Contains(err.Error(), "sbatch not found on PATH") || !strings.Contains(err.Error(), "--dry-run") {
		t.Fatalf("without sbatch: %v", err)
	}
}

func TestStatusOfSubmission(t *testing.T) {
	fake := fakeSlurm(t)
	e := writeTestGrid(t, fourRuns)
	out := t.TempDir()
	if _, err := e.Submit(context.Background(), SubmitRequest{PlanOptions: PlanOptions{Shards: 2, Out: out}}); err != nil {
		t.Fatal(err)
	}
	// Shard 0 (runs 0, 2): run 0 done, run 2 started (a checkpoint). Shard 1 (runs 1,
	// 3): run 1 failed, run 3 not started.
	sh0, sh1 := filepath.Join(out, "shard-0"), filepath.Join(out, "shard-1")
	cfg, _ := json.Marshal(e.Jobs[0].Config)
	log, err := OpenLog(ResultsPath(sh0))
	if err != nil {
		t.Fatal(err)
	}
	if err := log.Append(Record{Hash: e.Jobs[0].Hash, Index: 0, Config: cfg, Result: json.RawMessage(`{"test_accuracy":0.5}`)}); err != nil {
		t.Fatal(err)
	}
	log.Close()
	if err := os.MkdirAll(RunDir(sh0, e.Jobs[2].Hash), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(sh1, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := appendFailure(sh1, Failure{Index: 1, Hash: e.Jobs[1].Hash, Error: "boom"}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(fake, "squeue.out"), []byte("4242_0|RUNNING|None\n"), 0o644)
	os.WriteFile(filepath.Join(fake, "sacct.err"), []byte("Slurm accounting storage is disabled\n"), 0o644)

	st, err := StatusOfSubmission(context.Background(), out)
	if err != nil {
		t.Fatal(err)
	}
	if st.Done != 1 || st.Running != 1 || st.Failed != 1 || st.Pending != 1 || !st.Squeue || st.Sacct {
		t.Fatalf("status %+v", st)
	}
	if st.Tasks[0].State != "RUNNING" || st.Tasks[0].JobID != "4242_0" || st.Tasks[1].State != "" {
		t.Fatalf("tasks %+v", st.Tasks)
	}
	want := []string{RunDone, RunFailed, RunRunning, RunPending}
	for i, r := range st.RunList {
		if r.Index != i || r.State != want[i] {
			t.Fatalf("run %d: %+v, want state %s", i, r, want[i])
		}
	}
	if st.RunList[1].Error != "boom" {
		t.Fatalf("failed run's error %q", st.RunList[1].Error)
	}
	args, _ := os.ReadFile(filepath.Join(fake, "squeue.args"))
	if !strings.Contains(string(args), "-j 4242") || !strings.Contains(string(args), "--array") {
		t.Fatalf("squeue args %q", args)
	}
	var buf bytes.Buffer
	st.WriteText(&buf)
	for _, w := range []string{"4 runs: 1 done, 1 running, 1 failed, 1 pending", "shard 0  task 4242_0", "failed: boom", "note: sacct:", "shard 1 has 1 unfinished runs and no queued task"} {
		if !strings.Contains(buf.String(), w) {
			t.Errorf("status text lacks %q:\n%s", w, buf.String())
		}
	}

	// A task requeued (pending) after preemption: its started run is pending and
	// resumes; sacct (accounting on) fills in a finished task; squeue wins for the
	// task it still holds.
	os.Remove(filepath.Join(fake, "sacct.err"))
	os.WriteFile(filepath.Join(fake, "squeue.out"), []byte("4242_0|PENDING|BeginTime\n"), 0o644)
	os.WriteFile(filepath.Join(fake, "sacct.out"), []byte("4242_0|REQUEUED|0:0\n4242_1|COMPLETED|0:0\n"), 0o644)
	if st, err = StatusOfSubmission(context.Background(), out); err != nil {
		t.Fatal(err)
	}
	if !st.Sacct || st.Tasks[0].State != "PENDING" || st.Tasks[0].Reason != "BeginTime" || st.Tasks[1].State != "COMPLETED" || st.Tasks[1].Source != "sacct" {
		t.Fatalf("tasks %+v", st.Tasks)
	}
	if st.RunList[2].State != RunPending || !st.RunList[2].Started {
		t.Fatalf("run 2 of a requeued task: %+v", st.RunList[2])
	}
	buf.Reset()
	st.WriteText(&buf)
	if !strings.Contains(buf.String(), "resumes from its checkpoint") {
		t.Fatalf("text:\n%s", buf.String())
	}

	// Every job gone from slurmctld: squeue's "Invalid job id" is no queued task.
	os.Remove(filepath.Join(fake, "sacct.out"))
	os.WriteFile(filepath.Join(fake, "squeue.err"), []byte("slurm_load_jobs error: Invalid job id specified\n"), 0o644)
	if st, err = StatusOfSubmission(context.Background(), out); err != nil || !st.Squeue || st.Tasks[0].State != "" {
		t.Fatalf("after the job left the queue: %+v %v", st, err)
	}

	// A directory that no submit wrote.
	if _, err := StatusOfSubmission(context.Background(), t.TempDir()); err == nil || !strings.Contains(err.Error(), "sweep status GRID --out DIR") {
		t.Fatalf("no submit.json: %v", err)
	}
}

// A failing run is logged in failures.jsonl; a later success of the same run wins.
func TestRunRecordsFailures(t *testing.T) {
	e := writeTestGrid(t, fourRuns)
	out := t.TempDir()
	fail := true
	runner := func(ctx context.Context, j Job, dir string) (json.RawMessage, error) {
		if j.Index == 1 && fail {
			return nil, errors.New("diverged")
		}
		return json.RawMessage(`{"test_accuracy":0.9}`), nil
	}
	if _, err := Run(context.Background(), e.Jobs, Options{Out: out, Runner: runner}); err == nil {
		t.Fatal("no error for a failed run")
	}
	f, err := ReadFailures(out)
	if err != nil || len(f) != 1 || f[e.Jobs[1].Hash].Error != "diverged" || f[e.Jobs[1].Hash].Index != 1 {
		t.Fatalf("failures %+v %v", f, err)
	}
	if f, err := ReadFailures(t.TempDir()); err != nil || len(f) != 0 {
		t.Fatalf("no failures file: %+v %v", f, err)
	}
}

// The Slurm script's requeue decision, with stand-ins for dpfil, squeue and
// scontrol: it requeues its own task only after an interrupted dpfil (exit 75, or
// killed by the TERM it forwarded before dpfil handled signals) and only while the
// job is RUNNING, and it exits with dpfil's status.
func TestSlurmScriptRequeueDecision(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write("dpfil", `exit "$FAKE_RC"`)
	write("squeue", `echo "$FAKE_STATE"`)
	write("scontrol", `echo "$@" > "`+dir+`/scontrol.args"`)
	s, err := SlurmScript(PlanOptions{Grid: "g.yaml", Shards: 2, Out: dir, Bin: filepath.Join(dir, "dpfil")})
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "job.sh")
	if err := os.WriteFile(script, []byte(s), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		rc      int
		state   string
		requeue bool
	}{
		{75, "RUNNING", true},
		{75, "CANCELLED", false}, // scancel: stays cancelled
		{75, "COMPLETING", false},
		{0, "RUNNING", false},
		{1, "RUNNING", false}, // failed runs: no requeue loop
		{143, "RUNNING", false},
	} {
		os.Remove(filepath.Join(dir, "scontrol.args"))
		cmd := exec.Command("bash", script)
		cmd.Env = []string{"PATH=" + dir + ":/usr/bin:/bin", "SLURM_ARRAY_TASK_ID=1", "SLURM_JOB_ID=77",
			"FAKE_RC=" + strconv.Itoa(tc.rc), "FAKE_STATE=" + tc.state}
		out, _ := cmd.CombinedOutput()
		if got := cmd.ProcessState.ExitCode(); got != tc.rc {
			t.Errorf("dpfil exit %d: script exit %d\n%s", tc.rc, got, out)
		}
		args, err := os.ReadFile(filepath.Join(dir, "scontrol.args"))
		if requeued := err == nil; requeued != tc.requeue {
			t.Errorf("dpfil exit %d, job %s: requeued %v, want %v\n%s", tc.rc, tc.state, requeued, tc.requeue, out)
		} else if requeued && strings.TrimSpace(string(args)) != "requeue 77" {
			t.Errorf("scontrol %q", args)
		}
	}
}
