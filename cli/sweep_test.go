package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
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
	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"
)

// sweepChildEnv makes the test binary act as the dpfil executable with the sweep
// runner replaced by fakeSweepRunner, so that generated cluster plans can be executed
// for real (bash, sh, separate processes) in seconds. It exists only in the test
// binary; the dpfil binary has no such switch.
const sweepChildEnv = "DPFIL_TEST_AS_DPFIL_WITH_FAKE_SWEEP"

// realChildEnv makes the test binary act as the real dpfil executable (the whole
// command tree, real training), for tests that need a separate process: signals,
// Slurm jobs.
const realChildEnv = "DPFIL_TEST_AS_DPFIL"

func TestMain(m *testing.M) {
	fake, real := os.Getenv(sweepChildEnv) == "1", os.Getenv(realChildEnv) == "1"
	if fake || real {
		root := newRootCmd()
		if fake {
			root = rootWithFakeSweep()
		}
		root.SetArgs(os.Args[1:])
		if err := root.Execute(); err != nil {
			fmt.Fprintf(os.Stderr, "dpfil: error: %v\n", err)
			os.Exit(exitStatus(err))
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// rootWithFakeSweep is the full command tree with the fake sweep runner.
func rootWithFakeSweep() *cobra.Command {
	root := newRootCmd()
	for _, c := range root.Commands() {
		if c.Name() == "sweep" {
			root.RemoveCommand(c)
		}
	}
	root.AddCommand(newSweepCmdWith(sweepDeps{runner: func(func(string, ...any)) sweep.Runner { return fakeSweepRunner }}))
	return root
}

// fakeSweepRunner "trains" for 60 ms (stopping on cancel) and returns metrics that
// are a deterministic function of the config.
func fakeSweepRunner(ctx context.Context, j sweep.Job, dir string) (json.RawMessage, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(60 * time.Millisecond):
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	c := j.Config
	acc := 1 - 1/(1+c.LR*float64(c.Steps)*c.Clip/(1+c.Sigma))
	rdp := 1 / (4 * (math.Exp(float64(c.Steps)/(c.Sigma*c.Sigma*100)) - 1))
	return json.Marshal(map[string]any{
		"config": c, "test_accuracy": acc, "mse_bound_rdp": rdp,
		"mse_bound_fil_max": rdp * 40, "mse_bound_fil_median": rdp * 900,
	})
}

// runCLI runs the command tree in-process and returns stdout.
func runCLI(t *testing.T, root *cobra.Command, args ...string) (string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(&errb)
	err := root.Execute()
	if err != nil {
		t.Logf("dpfil %s: %v\nstderr: %s", strings.Join(args, " "), err, errb.String())
	}
	return out.String(), err
}

const testGrid = `name: cli-test
base: {model: mnist-cnn, batch: 50, steps: 100}
grid:
  sigma: [0.5, 1, 2]
  lr: [0.01, 0.1]
  clip: [1, 4]
`

func writeGrid(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "grid.yaml")
	if err := os.WriteFile(p, []byte(testGrid), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// resultsByHash maps hash → config+result JSON (the finish time differs between runs).
func resultsByHash(t *testing.T, path string) map[string]string {
	t.Helper()
	recs, bad, err := sweep.ReadResults(path)
	if err != nil || len(bad) != 0 {
		t.Fatalf("read %s: %v %v", path, bad, err)
	}
	m := map[string]string{}
	for _, r := range recs {
		if _, dup := m[r.Hash]; dup {
			t.Fatalf("%s: hash %s twice", path, r.Hash)
		}
		m[r.Hash] = fmt.Sprintf("%d %s %s", r.Index, r.Config, r.Result)
	}
	return m
}

func TestSweepRunStatusList(t *testing.T) {
	grid := writeGrid(t)
	out := t.TempDir()
	s, err := runCLI(t, rootWithFakeSweep(), "sweep", "run", grid, "--out", out, "--workers", "3", "--json", "-q")
	if err != nil {
		t.Fatal(err)
	}
	var sum sweep.RunReport
	if err := json.Unmarshal([]byte(s), &sum); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, s)
	}
	if sum.Jobs != 12 || sum.Ran != 12 || sum.Pending != 0 || len(sum.Points) != 12 || sum.Points[3].Index != 3 || math.IsNaN(float64(sum.Points[3].TestAccuracy)) {
		t.Fatalf("summary %+v", sum)
	}
	// A second sweep process on the same directory is refused with an error and no
	// summary that could read as "nothing pending".
	grid2 := filepath.Join(t.TempDir(), "g.yaml")
	if err := os.WriteFile(grid2, []byte(strings.Replace(testGrid, "name: ", "name: other-", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	busy := t.TempDir()
	unlock, err := sweep.LockDir(busy)
	if err != nil {
		t.Fatal(err)
	}
	s, err = runCLI(t, rootWithFakeSweep(), "sweep", "run", grid, "--out", busy, "--json", "-q")
	unlock()
	if err == nil || !strings.Contains(err.Error(), "another sweep process") || strings.TrimSpace(s) != "" {
		t.Fatalf("sweep run on a locked directory: err %v, stdout %q", err, s)
	}
	// Human output ends with a table of the points run.
	s, err = runCLI(t, rootWithFakeSweep(), "sweep", "run", grid2, "--out", t.TempDir(), "-q")
	if err != nil || !strings.Contains(s, "test acc") || strings.Count(s, "\n") < 14 {
		t.Fatalf("human sweep run output: %v\n%s", err, s)
	}
	s, err = runCLI(t, newRootCmd(), "sweep", "status", grid, "--out", out, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var st sweep.Status
	if err := json.Unmarshal([]byte(s), &st); err != nil || st.Done != 12 || st.Pending != 0 {
		t.Fatalf("status %s, %v", s, err)
	}
	// a mistyped --out is an error, not a sweep with nothing done
	if _, err := runCLI(t, newRootCmd(), "sweep", "status", grid, "--out", filepath.Join(out, "typo")); err == nil || !strings.Contains(err.Error(), "check --out") {
		t.Fatalf("status of a missing directory: %v, want an error", err)
	}
	s, err = runCLI(t, newRootCmd(), "sweep", "list", grid, "--shard", "1/5", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var l struct {
		Total int
		Jobs  []sweep.Job
	}
	if err := json.Unmarshal([]byte(s), &l); err != nil || l.Total != 12 || len(l.Jobs) != 3 || l.Jobs[1].Index != 6 {
		t.Fatalf("list %s, %v", s, err)
	}
	if s, err = runCLI(t, newRootCmd(), "sweep", "list", grid); err != nil || !strings.Contains(s, "clip=4 lr=0.1 sigma=2") {
		t.Fatalf("human list: %v\n%s", err, s)
	}
	for _, args := range [][]string{
		{"sweep", "run", grid},
		{"sweep", "run", grid, "--out", out, "--shard", "3/3"},
		{"sweep", "run", grid, "--out", out, "--workers", "0"},
		{"sweep", "run", filepath.Join(out, "missing.yaml"), "--out", out},
		{"sweep", "plan", grid, "--shards", "2"},
		{"sweep", "plan", grid, "--shards", "2", "--slurm", "--k8s"},
		{"sweep", "plan", grid, "--shards", "13", "--slurm"},
		{"sweep", "plan", grid, "--shards", "2", "--k8s"}, // no --image
		{"sweep", "merge", out},
	} {
		if _, err := runCLI(t, rootWithFakeSweep(), args...); err == nil {
			t.Errorf("dpfil %v: want an error", args)
		}
	}
}

func selfExe(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// runParallel starts one process per shard and waits for all.
func runParallel(t *testing.T, cmds []*exec.Cmd) {
	t.Helper()
	outs := make([]*bytes.Buffer, len(cmds))
	for i, c := range cmds {
		outs[i] = &bytes.Buffer{}
		c.Stdout, c.Stderr = outs[i], outs[i]
		c.Env = append(os.Environ(), append(c.Env, sweepChildEnv+"=1")...)
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("shard process %d: %v\n%s", i, err, outs[i])
		}
	}
}

// The cluster plans, executed for real: the Slurm script by bash with
// SLURM_ARRAY_TASK_ID set, the Kubernetes container command by sh with
// JOB_COMPLETION_INDEX set, all shards as parallel processes; merging the shard
// directories gives exactly the results of a single-process sweep.
func TestSweepPlansRunLocallyAndMerge(t *testing.T) {
	grid := writeGrid(t)
	tmp := t.TempDir()
	single := filepath.Join(tmp, "single")
	if _, err := runCLI(t, rootWithFakeSweep(), "sweep", "run", grid, "--out", single, "-q"); err != nil {
		t.Fatal(err)
	}
	want := resultsByHash(t, sweep.ResultsPath(single))
	if len(want) != 12 {
		t.Fatalf("single-process sweep recorded %d runs", len(want))
	}
	const shards = 3

	t.Run("slurm", func(t *testing.T) {
		out := filepath.Join(tmp, "slurm")
		script := filepath.Join(tmp, "job.sh")
		if _, err := runCLI(t, newRootCmd(), "sweep", "plan", grid, "--shards", fmt.Sprint(shards), "--slurm", "--bin", selfExe(t), "--out", out, "--workers", "2", "-o", script); err != nil {
			t.Fatal(err)
		}
		if b, err := exec.Command("bash", "-n", script).CombinedOutput(); err != nil {
			t.Fatalf("bash -n: %v\n%s", err, b)
		}
		var cmds []*exec.Cmd
		for i := 0; i < shards; i++ {
			c := exec.Command("bash", script)
			c.Env = []string{fmt.Sprintf("SLURM_ARRAY_TASK_ID=%d", i)}
			cmds = append(cmds, c)
		}
		runParallel(t, cmds)
		dirs, _ := filepath.Glob(filepath.Join(out, "shard-*"))
		if len(dirs) != shards {
			t.Fatalf("shard directories %v", dirs)
		}
		if _, err := runCLI(t, newRootCmd(), append(append([]string{"sweep", "merge"}, dirs...), "--out", out)...); err != nil {
			t.Fatal(err)
		}
		if got := resultsByHash(t, sweep.ResultsPath(out)); !reflect.DeepEqual(got, want) {
			t.Fatalf("merged Slurm shards differ from the single-process sweep:\n%v\nwant\n%v", got, want)
		}
	})

	t.Run("k8s", func(t *testing.T) {
		out := filepath.Join(tmp, "k8s")
		gridDir := filepath.Join(tmp, "configmap")
		manifest, err := runCLI(t, newRootCmd(), "sweep", "plan", grid, "--shards", fmt.Sprint(shards), "--k8s", "--image", "example/dpfil:test",
			"--bin", selfExe(t), "--out", out, "--grid-dir", gridDir, "--parallelism", "2")
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(strings.NewReader(manifest))
		var cm struct {
			Kind string
			Data map[string]string
		}
		var job struct {
			Kind string
			Spec struct {
				CompletionMode string `yaml:"completionMode"`
				Completions    int
				Parallelism    int
				Template       struct {
					Spec struct {
						Containers []struct {
							Command []string
						}
					}
				}
			}
		}
		if err := dec.Decode(&cm); err != nil {
			t.Fatal(err)
		}
		if err := dec.Decode(&job); err != nil {
			t.Fatal(err)
		}
		if cm.Kind != "ConfigMap" || job.Kind != "Job" || job.Spec.CompletionMode != "Indexed" || job.Spec.Completions != shards || job.Spec.Parallelism != 2 {
			t.Fatalf("manifest:\n%s", manifest)
		}
		// Mount the ConfigMap as Kubernetes would, then run each index's command.
		if err := os.MkdirAll(gridDir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(gridDir, sweep.GridFileName), []byte(cm.Data[sweep.GridFileName]), 0o644); err != nil {
			t.Fatal(err)
		}
		command := job.Spec.Template.Spec.Containers[0].Command
		var cmds []*exec.Cmd
		for i := 0; i < shards; i++ {
			c := exec.Command(command[0], command[1:]...)
			c.Env = []string{fmt.Sprintf("JOB_COMPLETION_INDEX=%d", i)}
			cmds = append(cmds, c)
		}
		runParallel(t, cmds)
		dirs, _ := filepath.Glob(filepath.Join(out, "shard-*"))
		s, err := runCLI(t, newRootCmd(), append(append([]string{"sweep", "merge", "--json"}, dirs...), "--out", out)...)
		if err != nil {
			t.Fatal(err)
		}
		var rep struct {
			Unique, Duplicates int
			Conflicts          []sweep.Conflict
		}
		if err := json.Unmarshal([]byte(s), &rep); err != nil || rep.Unique != 12 || len(rep.Conflicts) != 0 {
			t.Fatalf("merge report %s, %v", s, err)
		}
		if got := resultsByHash(t, sweep.ResultsPath(out)); !reflect.DeepEqual(got, want) {
			t.Fatalf("merged k8s shards differ from the single-process sweep")
		}
	})
}

// A sweep process killed with SIGTERM mid-run stops cleanly; rerunning it records
// every configuration exactly once.
func TestSweepSIGTERMResume(t *testing.T) {
	grid := writeGrid(t)
	out := t.TempDir()
	results := sweep.ResultsPath(out)
	c := exec.Command(selfExe(t), "sweep", "run", grid, "--out", out)
	var stderr bytes.Buffer
	c.Stderr = &stderr
	c.Env = append(os.Environ(), sweepChildEnv+"=1")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if b, _ := os.ReadFile(results); bytes.Count(b, []byte("\n")) >= 2 {
			break
		}
		if time.Now().After(deadline) {
			c.Process.Kill()
			t.Fatal("no results after 20 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := c.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := c.Wait()
	if err == nil || !strings.Contains(stderr.String(), "interrupted") {
		t.Fatalf("terminated sweep: err %v, stderr:\n%s", err, stderr.String())
	}
	first := resultsByHash(t, results)
	if len(first) >= 12 {
		t.Fatalf("SIGTERM came too late to test anything: %d runs done", len(first))
	}
	s, err := runCLI(t, rootWithFakeSweep(), "sweep", "run", grid, "--out", out, "--json", "-q")
	if err != nil {
		t.Fatal(err)
	}
	var sum sweep.Summary
	json.Unmarshal([]byte(s), &sum)
	if sum.AlreadyDone != len(first) || sum.Ran != 12-len(first) {
		t.Fatalf("resume: %+v after %d done", sum, len(first))
	}
	all := resultsByHash(t, results) // fails on any hash recorded twice
	if len(all) != 12 {
		t.Fatalf("%d runs recorded, want 12", len(all))
	}
	hashes := make([]string, 0, len(all))
	for h := range all {
		hashes = append(hashes, h)
	}
	sort.Strings(hashes)
	for h, v := range first {
		if all[h] != v {
			t.Fatalf("run %s changed on resume", h)
		}
	}
}

func TestSweepMergeConflict(t *testing.T) {
	tmp := t.TempDir()
	mk := func(dir string, acc float64) {
		res, _ := json.Marshal(map[string]any{"test_accuracy": acc})
		if err := sweep.WriteResults(sweep.ResultsPath(filepath.Join(tmp, dir)), []sweep.Record{{Hash: "abc", Config: json.RawMessage(`{}`), Result: res}}); err != nil {
			t.Fatal(err)
		}
	}
	mk("a", 0.5)
	mk("b", 0.6)
	out := filepath.Join(tmp, "m")
	// Merging into a directory a sweep is working in is refused.
	unlock, err := sweep.LockDir(out)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runCLI(t, newRootCmd(), "sweep", "merge", filepath.Join(tmp, "a"), "--out", out); err == nil || !strings.Contains(err.Error(), "another sweep process") {
		t.Fatalf("merge into a busy directory: %v", err)
	}
	unlock()
	if _, err := runCLI(t, newRootCmd(), "sweep", "merge", filepath.Join(tmp, "a"), filepath.Join(tmp, "b"), "--out", out); err == nil || fileExists(sweep.ResultsPath(out)) {
		t.Fatalf("conflicting merge: err %v, output written %v", err, fileExists(sweep.ResultsPath(out)))
	}
	s, err := runCLI(t, newRootCmd(), "sweep", "merge", filepath.Join(tmp, "a"), filepath.Join(tmp, "b"), "--out", out, "--keep-first")
	if err != nil || !strings.Contains(s, "1 conflicts") {
		t.Fatalf("--keep-first: %v\n%s", err, s)
	}
	recs, _, _ := sweep.ReadResults(sweep.ResultsPath(out))
	if m, _ := recs[0].Metrics(); len(recs) != 1 || m.TestAccuracy != 0.5 {
		t.Fatalf("kept %v", recs)
	}
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// The same bad input gives the same error in every run (flag checks are cobra's
// required flags and flag groups, validated in a fixed order).
func TestSweepPlotBadInputErrorsAreStable(t *testing.T) {
	grid := writeGrid(t)
	for _, args := range [][]string{
		{"sweep", "plan", grid, "--slurm", "--k8s"},
		{"sweep", "plan", grid, "--shards", "2", "--slurm", "--k8s"},
		{"sweep", "plan", grid, "--shards", "2"},
		{"sweep", "run", grid, "--shard", "5/2"},
		{"sweep", "merge", "x"},
		{"plot", "images", "--indices", "1", "--dfil", "d.npy", "--top", "-1"},
		{"plot", "scatter", "-o", "s.png"},
		{"plot", "hist", "-o", "h.png", "--what", "eta"},
	} {
		var first string
		for i := 0; i < 20; i++ {
			_, err := runCLI(t, newRootCmd(), args...)
			if err == nil {
				t.Fatalf("%v: no error", args)
			}
			if i == 0 {
				first = err.Error()
			} else if err.Error() != first {
				t.Fatalf("%v: run %d says %q, run 0 said %q", args, i, err, first)
			}
		}
	}
}
