package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"

	"github.com/dpfil/dpfil/internal/dirlock"
	"github.com/dpfil/dpfil/sweep"
	"github.com/spf13/cobra"
)

// sweepDeps are what 'dpfil sweep' needs from outside; tests swap the runner for a
// fast fake.
type sweepDeps struct {
	runner func(logf func(string, ...any)) sweep.Runner
}

// newSweepCmd is the 'sweep' command group, training with train.Run.
func newSweepCmd() *cobra.Command {
	return newSweepCmdWith(sweepDeps{runner: sweep.TrainRunner})
}

func newSweepCmdWith(deps sweepDeps) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sweep",
		Short: "Hyperparameter sweeps on one machine or a cluster",
		Long: `Hyperparameter sweeps over train configurations (Guo et al. (2022) Fig. 5, Appendix C).

A grid file (YAML, or JSON) lists fixed settings under 'base' and swept settings
under 'grid', with train flag names as keys ('-' or '_'):

  name: mnist-small
  repeats: 1                 # independent runs per point, seeds seed, seed+1, ...
  base: {model: mnist-cnn, batch: 100, steps: 60, train_subset: 1000}
  grid: {sigma: [0.5, 2], lr: [0.03, 0.1], clip: [1, 4]}

The grid expands in a fixed order (sorted keys, last key fastest); each run is
identified by its config hash. 'sweep run' appends one line per finished run to
DIR/results.jsonl and resumes after a crash or kill without repeating finished runs;
'--shard i/n' runs the runs whose index is i mod n, so a cluster can fan out with
'sweep plan' and gather with 'sweep merge'.`,
	}
	cmd.AddCommand(newSweepRunCmd(deps), newSweepStatusCmd(), newSweepListCmd(), newSweepPlanCmd(), newSweepMergeCmd())
	return cmd
}

func loadJobs(path string) (*sweep.Grid, []sweep.Job, error) {
	g, err := sweep.LoadGrid(path)
	if err != nil {
		return nil, nil, err
	}
	jobs, err := g.Jobs()
	if err != nil {
		return nil, nil, err
	}
	return g, jobs, nil
}

func newSweepRunCmd(deps sweepDeps) *cobra.Command {
	var (
		out, shard    string
		workers       int
		asJSON, quiet bool
		verbose       bool
	)
	cmd := &cobra.Command{
		Use:   "run GRID --out DIR",
		Short: "Run every configuration of a grid (or of one shard) not yet finished in DIR",
		Long: `Run every configuration of GRID (of shard i/n with --shard) that DIR/results.jsonl
does not already hold. Each run works in DIR/runs/<hash>/ and resumes from its
checkpoint there; each finished run is appended to DIR/results.jsonl as one line
(written in one append and synced). Ctrl-C or SIGTERM stops cleanly at a checkpoint;
rerun the same command to continue.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return errors.New("sweep run: --out DIR is required")
			}
			sh, err := sweep.ParseShard(shard)
			if err != nil {
				return err
			}
			if workers < 1 {
				return fmt.Errorf("sweep run: --workers = %d must be at least 1", workers)
			}
			g, jobs, err := loadJobs(args[0])
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
			defer stop()
			st, err := sweep.StatusOf(jobs, sh, out)
			if err != nil {
				return err
			}
			bar := newProgress(int64(st.Pending), "sweep "+sh.String(), quiet || st.Pending == 0)
			defer bar.Finish()
			logf := func(format string, a ...any) {
				if !quiet {
					bar.Logf(format, a...) // above the bar, never on its line
				}
			}
			var trainLog func(string, ...any)
			if verbose {
				trainLog = logf
			}
			var mu sync.Mutex
			var points []sweepPoint
			sum, runErr := sweep.Run(ctx, jobs, sweep.Options{
				Out: out, Shard: sh, Workers: workers, Grid: g.Name,
				Runner: deps.runner(trainLog), Logf: logf,
				OnDone: func(r sweep.Record) {
					bar.Add(1, r.Hash)
					mu.Lock()
					points = append(points, pointOf(r))
					mu.Unlock()
				},
			})
			if errors.Is(runErr, dirlock.ErrLocked) {
				return runErr // nothing ran: no summary that could read as "nothing pending"
			}
			sort.Slice(points, func(i, j int) bool { return points[i].Index < points[j].Index })
			res := sweepRunResult{Summary: sum, Points: points}
			if err := emit(cmd.OutOrStdout(), asJSON, res, func(w io.Writer) {
				fmt.Fprintf(w, "sweep %s shard %s: %d runs, %d already done, %d ran, %d failed, %d pending (%.1f s)\n",
					g.Name, sum.Shard, sum.Jobs, sum.AlreadyDone, sum.Ran, len(sum.Failed), sum.Pending, sum.Seconds)
				printSweepPoints(w, points)
				for _, f := range sum.Failed {
					fmt.Fprintf(w, "  failed: run %d (%s): %s\n", f.Index, f.Hash, f.Error)
				}
				for _, b := range sum.BadLines {
					fmt.Fprintf(w, "  skipped unusable line %s\n", b)
				}
				fmt.Fprintf(w, "results: %s\n", sweep.ResultsPath(out))
			}); err != nil {
				return err
			}
			return runErr
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "sweep directory (results.jsonl and runs/)")
	cmd.Flags().StringVar(&shard, "shard", "0/1", "run only shard i of n: the runs whose index is i mod n")
	cmd.Flags().IntVar(&workers, "workers", 1, "runs in parallel")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "no progress or log lines on stderr")
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "also show the trainer's log lines")
	addJSONFlag(cmd, &asJSON)
	return cmd
}

func newSweepStatusCmd() *cobra.Command {
	var (
		out, shard string
		asJSON     bool
	)
	cmd := &cobra.Command{
		Use:   "status GRID --out DIR",
		Short: "Count finished and pending runs of a grid in a sweep directory",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return errors.New("sweep status: --out DIR is required")
			}
			sh, err := sweep.ParseShard(shard)
			if err != nil {
				return err
			}
			g, jobs, err := loadJobs(args[0])
			if err != nil {
				return err
			}
			st, err := sweep.StatusOf(jobs, sh, out)
			if err != nil {
				return err
			}
			return emit(cmd.OutOrStdout(), asJSON, st, func(w io.Writer) {
				fmt.Fprintf(w, "sweep %s shard %s: %d runs, %d done, %d pending (%d of them started)\n", g.Name, st.Shard, st.Jobs, st.Done, st.Pending, st.Started)
				if st.Foreign > 0 {
					fmt.Fprintf(w, "  %d recorded runs are not in this grid\n", st.Foreign)
				}
				for _, b := range st.BadLines {
					fmt.Fprintf(w, "  unusable line %s\n", b)
				}
			})
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "sweep directory")
	cmd.Flags().StringVar(&shard, "shard", "0/1", "count only shard i of n")
	addJSONFlag(cmd, &asJSON)
	return cmd
}

func newSweepListCmd() *cobra.Command {
	var (
		shard  string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "list GRID",
		Short: "Expand a grid and list its runs (index, hash, swept settings)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sh, err := sweep.ParseShard(shard)
			if err != nil {
				return err
			}
			g, jobs, err := loadJobs(args[0])
			if err != nil {
				return err
			}
			mine := sh.Select(jobs)
			if mine == nil {
				mine = []sweep.Job{}
			}
			type listing struct {
				Grid  string      `json:"grid"`
				Shard string      `json:"shard"`
				Total int         `json:"total"`
				Keys  []string    `json:"keys"`
				Jobs  []sweep.Job `json:"jobs"`
			}
			l := listing{Grid: g.Name, Shard: sh.String(), Total: len(jobs), Keys: g.Keys(), Jobs: mine}
			pts := g.Points()
			return emit(cmd.OutOrStdout(), asJSON, l, func(w io.Writer) {
				fmt.Fprintf(w, "grid %s: %d runs (%d grid points × %d repeats); shard %s has %d\n", g.Name, len(jobs), len(pts), g.Repeats, sh, len(mine))
				for _, j := range mine {
					var parts []string
					for _, k := range g.Keys() {
						parts = append(parts, fmt.Sprintf("%s=%v", k, pts[j.Index/g.Repeats][k]))
					}
					if g.Repeats > 1 {
						parts = append(parts, fmt.Sprintf("seed=%d", j.Config.Seed))
					}
					fmt.Fprintf(w, "%5d  %s  %s\n", j.Index, j.Hash, strings.Join(parts, " "))
				}
			})
		},
	}
	cmd.Flags().StringVar(&shard, "shard", "0/1", "list only shard i of n")
	addJSONFlag(cmd, &asJSON)
	return cmd
}

var nonName = regexp.MustCompile(`[^a-z0-9-]+`)

func newSweepPlanCmd() *cobra.Command {
	var (
		opt        sweep.PlanOptions
		slurm, k8s bool
		outFile    string
	)
	cmd := &cobra.Command{
		Use:   "plan GRID --shards N (--slurm | --k8s)",
		Short: "Write a Slurm job-array script or a Kubernetes Indexed Job that runs the grid in N shards",
		Long: `Write a cluster plan for GRID in N shards: with --slurm a job-array script (one array
task per shard, 'dpfil sweep run GRID --shard $SLURM_ARRAY_TASK_ID/N'), with --k8s a
Kubernetes manifest (a ConfigMap with the grid file and an Indexed Job whose pod i
runs shard $JOB_COMPLETION_INDEX/N). Shard i writes <results>/shard-i; a retried
task resumes. Gather the shards with 'dpfil sweep merge <results>/shard-* --out <results>'.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if slurm == k8s {
				return errors.New("sweep plan: give exactly one of --slurm and --k8s")
			}
			g, jobs, err := loadJobs(args[0])
			if err != nil {
				return err
			}
			if opt.Shards > len(jobs) {
				return fmt.Errorf("sweep plan: %d shards for %d runs would leave shards empty", opt.Shards, len(jobs))
			}
			if opt.Name == "" {
				opt.Name = strings.Trim(nonName.ReplaceAllString(strings.ToLower("dpfil-"+g.Name), "-"), "-")
				if len(opt.Name) > 52 {
					opt.Name = strings.TrimRight(opt.Name[:52], "-")
				}
			}
			if opt.Out == "" {
				if k8s {
					opt.Out = "/results"
				} else {
					opt.Out = "sweep-" + g.Name
				}
			}
			var text string
			if slurm {
				opt.Grid = args[0]
				text, err = sweep.SlurmScript(opt)
			} else {
				if opt.GridYAML, err = os.ReadFile(args[0]); err != nil {
					return fmt.Errorf("sweep plan: %w", err)
				}
				text, err = sweep.K8sManifest(opt)
			}
			if err != nil {
				return err
			}
			if outFile == "" || outFile == "-" {
				_, err := io.WriteString(cmd.OutOrStdout(), text)
				return err
			}
			if err := os.MkdirAll(filepath.Dir(outFile), 0o755); err != nil {
				return fmt.Errorf("sweep plan: %w", err)
			}
			mode := os.FileMode(0o644)
			if slurm {
				mode = 0o755
			}
			if err := os.WriteFile(outFile, []byte(text), mode); err != nil {
				return fmt.Errorf("sweep plan: %w", err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s: %d runs in %d shards of %s\n", outFile, len(jobs), opt.Shards, g.Name)
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&opt.Shards, "shards", 0, "number of shards (array tasks / completions)")
	f.BoolVar(&slurm, "slurm", false, "write a Slurm job-array script")
	f.BoolVar(&k8s, "k8s", false, "write a Kubernetes Indexed Job manifest")
	f.StringVarP(&outFile, "output", "o", "", "write the plan to this file (default stdout)")
	f.StringVar(&opt.Out, "out", "", "results root as the jobs see it (default sweep-<grid name>; /results on Kubernetes)")
	f.StringVar(&opt.Name, "name", "", "job name (default dpfil-<grid name>)")
	f.IntVar(&opt.Workers, "workers", 1, "runs in parallel inside each task")
	f.StringVar(&opt.Bin, "bin", "dpfil", "dpfil executable as the jobs see it")
	f.IntVar(&opt.CPUs, "cpus", 0, "CPUs per task (default --workers)")
	f.StringVar(&opt.Time, "time", "", "Slurm --time limit, e.g. 24:00:00")
	f.StringVar(&opt.Partition, "partition", "", "Slurm partition")
	f.IntVar(&opt.GPUs, "gpus", 0, "GPUs per task")
	f.StringVar(&opt.Mem, "mem", "", "memory per task, e.g. 8G (Slurm) or 8Gi (Kubernetes)")
	f.StringVar(&opt.Image, "image", "", "container image with dpfil (Kubernetes)")
	f.IntVar(&opt.Parallelism, "parallelism", 0, "pods at once (Kubernetes; default all shards)")
	f.StringVar(&opt.PVC, "pvc", "dpfil-results", "PersistentVolumeClaim for the results (Kubernetes)")
	f.StringVar(&opt.Namespace, "namespace", "", "Kubernetes namespace")
	f.StringVar(&opt.GridDir, "grid-dir", "/etc/dpfil", "where the pods mount the grid ConfigMap (Kubernetes)")
	return cmd
}

func newSweepMergeCmd() *cobra.Command {
	var (
		out       string
		keepFirst bool
		asJSON    bool
	)
	cmd := &cobra.Command{
		Use:   "merge DIR|FILE... --out DIR",
		Short: "Merge results.jsonl files of sweep shards, deduplicating by config hash",
		Long: `Merge the results.jsonl of several sweep directories (or results files) into
DIR/results.jsonl. Records are deduplicated by config hash; an existing
DIR/results.jsonl is merged in first, so merging is incremental. Two records of the
same hash with different metrics are a conflict: it is reported and, unless
--keep-first is given, nothing is written.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return errors.New("sweep merge: --out DIR is required")
			}
			// A sweep appending to DIR/results.jsonl while merge replaces it would lose
			// records: hold the directory's lock (sweep run takes it too).
			unlock, err := sweep.LockDir(out)
			if err != nil {
				return fmt.Errorf("sweep merge: %w", err)
			}
			defer unlock()
			dst := sweep.ResultsPath(out)
			inputs := append([]string{}, args...)
			seen := map[string]bool{}
			var srcs []sweep.Source
			var bad []sweep.BadLine
			add := func(p string, mustExist bool) error {
				file := p
				if fi, err := os.Stat(p); err == nil && fi.IsDir() {
					file = sweep.ResultsPath(p)
				} else if err != nil && mustExist {
					return fmt.Errorf("sweep merge: %w", err)
				}
				abs, _ := filepath.Abs(file)
				if seen[abs] {
					return nil
				}
				seen[abs] = true
				if _, err := os.Stat(file); err != nil {
					if mustExist {
						return fmt.Errorf("sweep merge: %w", err)
					}
					return nil
				}
				recs, b, err := sweep.ReadResults(file)
				if err != nil {
					return err
				}
				bad = append(bad, b...)
				srcs = append(srcs, sweep.Source{Name: file, Records: recs})
				return nil
			}
			if err := add(dst, false); err != nil {
				return err
			}
			for _, p := range inputs {
				if err := add(p, true); err != nil {
					return err
				}
			}
			recs, rep, err := sweep.Merge(srcs)
			if err != nil {
				return err
			}
			rep.BadLines = append(rep.BadLines, bad...)
			type report struct {
				sweep.MergeReport
				Out     string `json:"out"`
				Written bool   `json:"written"`
			}
			r := report{MergeReport: rep, Out: dst}
			var mergeErr error
			if len(rep.Conflicts) > 0 && !keepFirst {
				mergeErr = fmt.Errorf("sweep merge: %d configs have conflicting results (first: %s, %s vs %s, differing in %s); nothing written (--keep-first keeps the first)",
					len(rep.Conflicts), rep.Conflicts[0].Hash, rep.Conflicts[0].Kept, rep.Conflicts[0].Other, strings.Join(rep.Conflicts[0].Fields, ", "))
			} else {
				if err := sweep.WriteResults(dst, recs); err != nil {
					return err
				}
				r.Written = true
			}
			if err := emit(cmd.OutOrStdout(), asJSON, r, func(w io.Writer) {
				fmt.Fprintf(w, "merged %d files: %d records read, %d unique, %d duplicates, %d conflicts, %d unusable lines\n",
					len(srcs), rep.Read, rep.Unique, rep.Duplicates, len(rep.Conflicts), len(rep.BadLines))
				for _, c := range rep.Conflicts {
					fmt.Fprintf(w, "  conflict %s: %s vs %s differ in %s\n", c.Hash, c.Kept, c.Other, strings.Join(c.Fields, ", "))
				}
				for _, b := range rep.BadLines {
					fmt.Fprintf(w, "  skipped unusable line %s\n", b)
				}
				if r.Written {
					fmt.Fprintf(w, "wrote %s\n", dst)
				}
			}); err != nil {
				return err
			}
			return mergeErr
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "directory to write results.jsonl into")
	cmd.Flags().BoolVar(&keepFirst, "keep-first", false, "on conflicts keep the first record and write anyway")
	addJSONFlag(cmd, &asJSON)
	return cmd
}

// sweepRunResult is the JSON of 'sweep run': the counts and the points it ran.
type sweepRunResult struct {
	sweep.Summary
	Points []sweepPoint `json:"points"`
}

// sweepPoint is one finished run's headline numbers (null: +∞ or not computed).
type sweepPoint struct {
	Index             int      `json:"index"`
	Hash              string   `json:"hash"`
	TestAccuracy      *float64 `json:"test_accuracy"`
	Epsilon           *float64 `json:"epsilon"`
	MSEBoundRDP       *float64 `json:"mse_bound_rdp"`
	MSEBoundFILMax    *float64 `json:"mse_bound_fil_max"`
	MSEBoundFILMedian *float64 `json:"mse_bound_fil_median"`
}

func pointOf(r sweep.Record) sweepPoint {
	p := sweepPoint{Index: r.Index, Hash: r.Hash}
	m, err := r.Metrics()
	if err != nil {
		return p
	}
	fin := func(x float64) *float64 {
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return nil
		}
		return &x
	}
	p.TestAccuracy, p.Epsilon, p.MSEBoundRDP = fin(m.TestAccuracy), fin(m.Epsilon), fin(m.MSEBoundRDP)
	p.MSEBoundFILMax, p.MSEBoundFILMedian = fin(m.MSEBoundFILMax), fin(m.MSEBoundFILMedian)
	return p
}

// printSweepPoints is the table of the points a sweep ran.
func printSweepPoints(w io.Writer, points []sweepPoint) {
	if len(points) == 0 {
		return
	}
	f := func(p *float64) string {
		if p == nil {
			return "∞"
		}
		return fmt.Sprintf("%.3g", *p)
	}
	fmt.Fprintf(w, "  %5s  %-16s  %8s  %8s  %12s  %12s  %12s\n", "run", "hash", "test acc", "ε", "MSE≥ RDP", "MSE≥ FIL max", "MSE≥ FIL med")
	for _, p := range points {
		fmt.Fprintf(w, "  %5d  %-16s  %8s  %8s  %12s  %12s  %12s\n", p.Index, p.Hash, f(p.TestAccuracy), f(p.Epsilon), f(p.MSEBoundRDP), f(p.MSEBoundFILMax), f(p.MSEBoundFILMedian))
	}
	fmt.Fprintln(w, "  (MSE≥: lower bounds on a reconstruction attack's per-pixel MSE; ∞: no leakage measured, e.g. FIL off)")
}
