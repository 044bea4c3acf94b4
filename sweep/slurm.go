package sweep

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/dpfil/dpfil/internal/atomicfile"
)

// This file submits a sweep to Slurm (sbatch) and reports the progress of a
// submitted sweep from its shard directories and the scheduler (squeue, sacct).

// Files a submitted sweep keeps in its results root.
const (
	SubmitFile   = "submit.json" // the Submission: grid, shards, job ids
	SlurmFile    = "slurm.sh"    // the job-array script given to sbatch
	SlurmLogsDir = "logs"        // Slurm output of the tasks, slurm-<job>_<task>.out
)

// Submission is the record of a sweep submitted to Slurm, kept in <Out>/submit.json
// so that 'sweep status OUT' knows the grid and the jobs, and a later submit of the
// same sweep resumes it instead of starting another one.
type Submission struct {
	Grid     string         `json:"grid"`      // grid file (absolute path)
	GridName string         `json:"grid_name"` // the grid's name
	Shards   int            `json:"shards"`
	Runs     int            `json:"runs"`
	Script   string         `json:"script"` // the job-array script
	Jobs     []SubmittedJob `json:"jobs"`   // every sbatch of this sweep, oldest first
}

// SubmittedJob is one sbatch of a sweep's job array.
type SubmittedJob struct {
	ID        string    `json:"id"` // Slurm array job id
	Submitted time.Time `json:"submitted"`
}

// SubmitRequest is 'sweep submit': the plan (Out is the results root; Grid, Bin and
// Log are filled in) and how to submit it.
type SubmitRequest struct {
	PlanOptions
	DryRun bool   // print the script, write and submit nothing
	Sbatch string // sbatch command (default "sbatch", looked up on PATH)
}

// SubmitReport is what Submit did.
type SubmitReport struct {
	JobID  string `json:"job_id,omitempty"` // empty on a dry run
	DryRun bool   `json:"dry_run"`
	Out    string `json:"out"`
	Script string `json:"script"`                // script file (on a dry run: where it would be)
	Text   string `json:"script_text,omitempty"` // the script, on a dry run
	Grid   string `json:"grid"`
	Shards int    `json:"shards"`
	Runs   int    `json:"runs"`
	Resub  int    `json:"resubmission"` // 0 for the first submit of this results root, then 1, 2, …
}

// Submit writes the Slurm job-array script of the grid into req.Out (slurm.sh, with
// logs/ for the tasks' output and submit.json recording the submission) and submits
// it with sbatch, returning the job id. Submitting again into the same results root
// (same grid file and shard count) resubmits the array: every task resumes its
// shard. With DryRun it only returns the script.
func (e *Expanded) Submit(ctx context.Context, req SubmitRequest) (*SubmitReport, error) {
	opt := req.PlanOptions
	if opt.Out == "" {
		opt.Out = "sweep-" + e.Grid.Name
	}
	out, err := filepath.Abs(opt.Out)
	if err != nil {
		return nil, fmt.Errorf("sweep submit: %w", err)
	}
	grid, err := filepath.Abs(e.File)
	if err != nil {
		return nil, fmt.Errorf("sweep submit: %w", err)
	}
	opt.Out = out
	if opt.Log == "" {
		opt.Log = filepath.Join(out, SlurmLogsDir, "slurm-%A_%a.out")
	}
	exp := *e
	exp.File = grid
	p, err := exp.Plan(PlanRequest{PlanOptions: opt})
	if err != nil {
		return nil, fmt.Errorf("sweep submit: %w", err)
	}
	rep := &SubmitReport{DryRun: req.DryRun, Out: out, Script: filepath.Join(out, SlurmFile), Grid: grid, Shards: opt.Shards, Runs: p.Runs}
	prev, err := ReadSubmission(out)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("sweep submit: %w", err)
	}
	sub := Submission{Grid: grid, GridName: e.Grid.Name, Shards: opt.Shards, Runs: p.Runs, Script: rep.Script}
	if prev != nil {
		if prev.Grid != grid || prev.Shards != opt.Shards || prev.Runs != p.Runs {
			return nil, fmt.Errorf("sweep submit: %s already holds a sweep of %s in %d shards (%d runs); this one is %s in %d shards (%d runs): use another --out, or the same grid and --shards to resume it",
				out, prev.Grid, prev.Shards, prev.Runs, grid, opt.Shards, p.Runs)
		}
		sub.Jobs = prev.Jobs
		rep.Resub = len(prev.Jobs)
	}
	if req.DryRun {
		rep.Text = p.Text
		return rep, nil
	}
	sbatch := req.Sbatch
	if sbatch == "" {
		sbatch = "sbatch"
	}
	bin, err := exec.LookPath(sbatch)
	if err != nil {
		return nil, fmt.Errorf("sweep submit: %s not found on PATH (run this on a Slurm submit host, or print the script with --dry-run): %w", sbatch, err)
	}
	if err := os.MkdirAll(filepath.Join(out, SlurmLogsDir), 0o755); err != nil {
		return nil, fmt.Errorf("sweep submit: %w", err)
	}
	if err := p.WriteFile(rep.Script); err != nil {
		return nil, fmt.Errorf("sweep submit: %w", err)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "--parsable", "--chdir", out, rep.Script)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("sweep submit: sbatch %s: %w: %s", rep.Script, err, strings.TrimSpace(stderr.String()))
	}
	// --parsable prints "jobid" or "jobid;cluster".
	id, _, _ := strings.Cut(strings.TrimSpace(stdout.String()), ";")
	if id == "" || strings.ContainsAny(id, " \n") {
		return nil, fmt.Errorf("sweep submit: sbatch printed no job id (stdout %q, stderr %q)", stdout.String(), stderr.String())
	}
	rep.JobID = id
	sub.Jobs = append(sub.Jobs, SubmittedJob{ID: id, Submitted: time.Now().UTC()})
	if err := writeSubmission(out, sub); err != nil {
		return rep, fmt.Errorf("sweep submit: job %s submitted, but: %w", id, err)
	}
	return rep, nil
}

// WriteText says what was submitted, or prints the script on a dry run.
func (r *SubmitReport) WriteText(w io.Writer) {
	if r.DryRun {
		io.WriteString(w, r.Text)
		return
	}
	again := ""
	if r.Resub > 0 {
		again = fmt.Sprintf(" (resubmission %d: tasks resume their shards)", r.Resub)
	}
	fmt.Fprintf(w, "submitted job %s: %d runs of %s in %d array tasks%s\n", r.JobID, r.Runs, r.Grid, r.Shards, again)
	fmt.Fprintf(w, "script: %s\nprogress: dpfil sweep status %s\nwhen done: dpfil sweep merge %s/shard-* --out %s\n", r.Script, r.Out, r.Out, r.Out)
}

// ReadSubmission reads <out>/submit.json; the error wraps fs.ErrNotExist when there
// is none.
func ReadSubmission(out string) (*Submission, error) {
	b, err := os.ReadFile(filepath.Join(out, SubmitFile))
	if err != nil {
		return nil, err
	}
	var s Submission
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(out, SubmitFile), err)
	}
	if s.Shards < 1 || s.Grid == "" {
		return nil, fmt.Errorf("%s: no grid or shard count", filepath.Join(out, SubmitFile))
	}
	return &s, nil
}

func writeSubmission(out string, s Submission) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(out, SubmitFile), append(b, '\n'))
}

// Run states in a ClusterStatus.
const (
	RunDone    = "done"    // recorded in its shard's results.jsonl
	RunRunning = "running" // its directory exists and its shard's task is running
	RunFailed  = "failed"  // its last attempt failed (failures.jsonl) and it is not done
	RunPending = "pending" // not started, or started and waiting for its task to run again
)

// RunState is the state of one run of a submitted sweep.
type RunState struct {
	Index   int    `json:"index"`
	Hash    string `json:"hash"`
	Shard   int    `json:"shard"`
	State   string `json:"state"`
	Started bool   `json:"started"`         // its run directory exists (a checkpoint may be there)
	Error   string `json:"error,omitempty"` // a failed run's error
}

// TaskState is what the scheduler says about one shard's array task.
type TaskState struct {
	Shard    int    `json:"shard"`
	JobID    string `json:"job_id"`           // the task's id, <array job>_<shard>, "" when unknown
	State    string `json:"state"`            // Slurm state (PENDING, RUNNING, COMPLETED, …), "" when unknown
	Reason   string `json:"reason,omitempty"` // squeue's reason for a pending task
	ExitCode string `json:"exit_code,omitempty"`
	Source   string `json:"source,omitempty"` // squeue or sacct
	Done     int    `json:"done"`
	Running  int    `json:"running"`
	Failed   int    `json:"failed"`
	Pending  int    `json:"pending"`
}

// ClusterStatus is 'sweep status OUT' for a submitted sweep.
type ClusterStatus struct {
	Out      string      `json:"out"`
	Grid     string      `json:"grid"`
	Shards   int         `json:"shards"`
	Jobs     []string    `json:"jobs"` // array job ids, oldest first
	Runs     int         `json:"runs"`
	Done     int         `json:"done"`
	Running  int         `json:"running"`
	Failed   int         `json:"failed"`
	Pending  int         `json:"pending"`
	Tasks    []TaskState `json:"tasks"`
	RunList  []RunState  `json:"run_states"`
	Squeue   bool        `json:"squeue"` // squeue answered
	Sacct    bool        `json:"sacct"`  // sacct answered (it needs slurmdbd)
	Notes    []string    `json:"notes"`
	BadLines []BadLine   `json:"bad_lines"`
}

// StatusOfSubmission reports the runs of the sweep submitted into out: done, failed
// and pending from the shard directories, running from the tasks' Slurm state
// (squeue; sacct for tasks that left the queue, when accounting is on).
func StatusOfSubmission(ctx context.Context, out string) (*ClusterStatus, error) {
	sub, err := ReadSubmission(out)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("sweep status: %s has no %s (not a directory 'sweep submit' wrote); for a local sweep give the grid: dpfil sweep status GRID --out DIR", out, SubmitFile)
	}
	if err != nil {
		return nil, fmt.Errorf("sweep status: %w", err)
	}
	e, err := Expand(sub.Grid)
	if err != nil {
		return nil, fmt.Errorf("sweep status: the submitted grid: %w", err)
	}
	st := &ClusterStatus{Out: out, Grid: sub.Grid, Shards: sub.Shards, Runs: len(e.Jobs), Jobs: []string{},
		Tasks: make([]TaskState, sub.Shards), RunList: []RunState{}, Notes: []string{}, BadLines: []BadLine{}}
	for _, j := range sub.Jobs {
		st.Jobs = append(st.Jobs, j.ID)
	}
	for i := range st.Tasks {
		st.Tasks[i].Shard = i
	}
	st.querySlurm(ctx)
	for i := 0; i < sub.Shards; i++ {
		dir := filepath.Join(out, fmt.Sprintf("shard-%d", i))
		recs, bad, err := ReadResults(ResultsPath(dir))
		if err != nil {
			return nil, fmt.Errorf("sweep status: %w", err)
		}
		st.BadLines = append(st.BadLines, bad...)
		fails, err := ReadFailures(dir)
		if err != nil {
			return nil, fmt.Errorf("sweep status: %w", err)
		}
		done := make(map[string]bool, len(recs))
		for _, r := range recs {
			done[r.Hash] = true
		}
		task := &st.Tasks[i]
		for _, j := range (Shard{I: i, N: sub.Shards}).Select(e.Jobs) {
			rs := RunState{Index: j.Index, Hash: j.Hash, Shard: i, State: RunPending}
			if fi, err := os.Stat(RunDir(dir, j.Hash)); err == nil && fi.IsDir() {
				rs.Started = true
			}
			switch f, failed := fails[j.Hash]; {
			case done[j.Hash]:
				rs.State = RunDone
				task.Done++
			case failed:
				rs.State, rs.Error = RunFailed, f.Error
				task.Failed++
			case rs.Started && task.State == "RUNNING":
				rs.State = RunRunning
				task.Running++
			default:
				task.Pending++
			}
			st.RunList = append(st.RunList, rs)
		}
		st.Done += task.Done
		st.Running += task.Running
		st.Failed += task.Failed
		st.Pending += task.Pending
		if task.Pending > 0 && task.Running == 0 && task.State != "PENDING" && task.State != "RUNNING" && task.State != "REQUEUED" && task.State != "COMPLETING" {
			st.Notes = append(st.Notes, fmt.Sprintf("shard %d has %d unfinished runs and no queued task: submit again (same grid, --shards and --out) to resume", i, task.Pending))
		}
	}
	sort.Slice(st.RunList, func(a, b int) bool { return st.RunList[a].Index < st.RunList[b].Index })
	return st, nil
}

// querySlurm fills the tasks' states from squeue (queued tasks of the newest job
// that holds them) and sacct (finished ones), noting what did not answer.
func (st *ClusterStatus) querySlurm(ctx context.Context) {
	if len(st.Jobs) == 0 {
		return
	}
	ids := strings.Join(st.Jobs, ",")
	rank := map[string]int{}
	for i, id := range st.Jobs {
		rank[id] = i
	}
	set := func(id, state, reason, exit, src string) {
		job, task, ok := strings.Cut(id, "_")
		if !ok {
			return
		}
		var shard int
		if _, err := fmt.Sscan(task, &shard); err != nil || shard < 0 || shard >= len(st.Tasks) {
			return // "123_[0-1]" is expanded by --array; other forms are not tasks
		}
		t := &st.Tasks[shard]
		if t.JobID != "" {
			oldJob, _, _ := strings.Cut(t.JobID, "_")
			if rank[oldJob] > rank[job] || t.Source == "squeue" && src == "sacct" {
				return
			}
		}
		t.JobID, t.State, t.Reason, t.ExitCode, t.Source = id, state, reason, exit, src
	}
	if b, err := slurmCmd(ctx, "sacct", "-n", "-P", "-X", "-j", ids, "-o", "JobID,State,ExitCode"); err != nil {
		st.Notes = append(st.Notes, "sacct: "+err.Error())
	} else {
		st.Sacct = true
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if f := strings.Split(line, "|"); len(f) == 3 {
				state, _, _ := strings.Cut(f[1], " ") // "CANCELLED by 0"
				set(f[0], state, "", f[2], "sacct")
			}
		}
	}
	b, err := slurmCmd(ctx, "squeue", "-h", "--array", "-j", ids, "-o", "%i|%T|%r")
	if err != nil && strings.Contains(err.Error(), "Invalid job id") {
		b, err = nil, nil // every job has left the queue (and slurmctld's memory)
	}
	if err != nil {
		st.Notes = append(st.Notes, "squeue: "+err.Error())
		return
	}
	st.Squeue = true
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if f := strings.Split(line, "|"); len(f) == 3 {
			reason := f[2]
			if reason == "None" {
				reason = ""
			}
			set(f[0], f[1], reason, "", "squeue")
		}
	}
}

// slurmCmd runs a Slurm client command and returns its stdout; the error carries its
// stderr.
func slurmCmd(ctx context.Context, name string, args ...string) ([]byte, error) {
	bin, err := exec.LookPath(name)
	if err != nil {
		return nil, fmt.Errorf("not found on PATH")
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// WriteText writes the counts, one line per task and the runs not done.
func (st *ClusterStatus) WriteText(w io.Writer) {
	fmt.Fprintf(w, "sweep %s (%s, jobs %s): %d runs: %d done, %d running, %d failed, %d pending\n",
		st.Out, filepath.Base(st.Grid), strings.Join(st.Jobs, ", "), st.Runs, st.Done, st.Running, st.Failed, st.Pending)
	for _, t := range st.Tasks {
		state := t.State
		if state == "" {
			state = "not queued"
		}
		if t.Reason != "" {
			state += " (" + t.Reason + ")"
		}
		if t.ExitCode != "" && t.ExitCode != "0:0" {
			state += " exit " + t.ExitCode
		}
		id := t.JobID
		if id == "" {
			id = "-"
		}
		fmt.Fprintf(w, "  shard %d  task %-10s %-28s %d done, %d running, %d failed, %d pending\n", t.Shard, id, state, t.Done, t.Running, t.Failed, t.Pending)
	}
	for _, r := range st.RunList {
		switch r.State {
		case RunDone:
			continue
		case RunFailed:
			fmt.Fprintf(w, "  run %d (%s, shard %d): failed: %s\n", r.Index, r.Hash, r.Shard, r.Error)
		default:
			started := ""
			if r.Started && r.State == RunPending {
				started = " (started: resumes from its checkpoint)"
			}
			fmt.Fprintf(w, "  run %d (%s, shard %d): %s%s\n", r.Index, r.Hash, r.Shard, r.State, started)
		}
	}
	for _, n := range st.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
	writeBad(w, "  unusable line ", st.BadLines)
}
