package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/dpfil/dpfil/sweep"
	"github.com/dpfil/dpfil/train"
	"github.com/spf13/cobra"
)

// sweepDeps are what 'dpfil sweep' needs from outside; tests swap the runner for a
// fast fake.
type sweepDeps struct {
	runner func(logf func(string, ...any)) sweep.Runner
	// models are the program's registered models (a grid's model: NAME).
	models train.Registry
}

// newSweepCmd is the 'sweep' command group, training with train.Run.
func newSweepCmd(opts Options) *cobra.Command {
	return newSweepCmdWith(sweepDeps{models: opts.Models, runner: func(logf func(string, ...any)) sweep.Runner {
		return sweep.TrainRunnerModels(logf, opts.Models)
	}})
}

func newSweepCmdWith(deps sweepDeps) *cobra.Command {
	return group(&cobra.Command{
		Use:   "sweep",
		Short: "Hyperparameter sweeps on one machine or a cluster",
		Long: `Hyperparameter sweeps over train configurations, as behind the accuracy-vs-MSE
Pareto plots of Guo, Karrer, Chaudhuri and van der Maaten (2022), "Bounding training
data reconstruction in private (deep) learning", Fig. 5 and Appendix C.

A grid file (YAML, or JSON) lists fixed settings under 'base' and swept settings
under 'grid', with train flag names as keys ('-' or '_'):

  name: mnist-small
  repeats: 1                 # independent runs per point, seeds seed, seed+1, ...
  base: {model: mnist-cnn, batch: 100, steps: 60, train_subset: 1000}
  grid: {sigma: [0.5, 2], lr: [0.03, 0.1], clip: [1, 4]}

A custom architecture is 'arch: FILE' (the YAML or JSON file train --arch takes,
relative to the grid file; 'dpfil arch --help'), in base or swept like any key:

  grid: {arch: [nets/small.yaml, nets/wide.yaml], sigma: [0.5, 2]}

The grid expands in a fixed order (sorted keys, last key fastest); each run is
identified by its config hash, so 'sweep run' resumes without repeating finished runs.`,
	}, newSweepRunCmd(deps), newSweepStatusCmd(deps), newSweepListCmd(deps), newSweepPlanCmd(deps), newSweepSubmitCmd(deps), newSweepMergeCmd())
}

// withGrid expands the grid file path and calls f on it.
func withGrid[R any](path string, reg train.Registry, f func(*sweep.Expanded) (*R, error)) (*R, error) {
	e, err := sweep.ExpandModels(path, reg)
	if err != nil {
		return nil, err
	}
	return f(e)
}

// addShardFlag binds --shard to sh, 0/1 by default.
func addShardFlag(cmd *cobra.Command, sh *sweep.Shard, usage string) {
	*sh = sweep.Shard{I: 0, N: 1}
	cmd.Flags().Var(sh, "shard", usage)
}

func newSweepRunCmd(deps sweepDeps) *cobra.Command {
	var (
		req            sweep.RunRequest
		quiet, verbose bool
	)
	cmd := reportCmd(&cobra.Command{
		Use:   "run GRID --out DIR",
		Short: "Run every configuration of a grid (or of one shard) not yet finished in DIR",
		Long: `Run every configuration of GRID (of shard i/n with --shard) that DIR/results.jsonl
does not already hold. Each run works in DIR/runs/<hash>/ and resumes from its
checkpoint there; each finished run is appended to DIR/results.jsonl as one line
(written in one append and synced). Ctrl-C or SIGTERM stops cleanly at a checkpoint;
rerun the same command to continue. An interrupted run exits with status 75
(EX_TEMPFAIL), failed runs with 1.`,
		Args: cobra.ExactArgs(1),
	}, func(cmd *cobra.Command, args []string) (*sweep.RunReport, error) {
		e, err := sweep.ExpandModels(args[0], deps.models)
		if err != nil {
			return nil, err
		}
		st, err := e.Status(req.Out, req.Shard)
		if err != nil {
			return nil, err
		}
		bar := newProgress(int64(st.Pending), "sweep "+req.Shard.String(), quiet || st.Pending == 0)
		defer bar.Finish()
		req.Logf = func(format string, a ...any) {
			if !quiet {
				bar.Logf(format, a...) // above the bar, never on its line
			}
		}
		var trainLog func(string, ...any)
		if verbose {
			trainLog = req.Logf
		}
		req.Runner = deps.runner(trainLog)
		req.OnDone = func(r sweep.Record) { bar.Add(1, r.Hash) }
		ctx, stop := interruptContext(cmd)
		defer stop()
		rep, err := e.Run(ctx, req)
		if err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled) {
			// Stopped by SIGTERM/SIGINT at a checkpoint: a status the Slurm script
			// requeues on, distinct from failed runs (1).
			err = exitError{code: sweep.ExitInterrupted, err: err}
		}
		return rep, err
	})
	f := cmd.Flags()
	f.StringVar(&req.Out, "out", "", "sweep directory (results.jsonl and runs/)")
	addShardFlag(cmd, &req.Shard, "run only shard i of n: the runs whose index is i mod n")
	f.IntVar(&req.Workers, "workers", 1, "runs in parallel")
	f.BoolVarP(&quiet, "quiet", "q", false, "no progress or log lines on stderr")
	f.BoolVarP(&verbose, "verbose", "v", false, "also show the trainer's log lines")
	markRequired(cmd, "out")
	return cmd
}

func newSweepStatusCmd(deps sweepDeps) *cobra.Command {
	var (
		out    string
		shard  sweep.Shard
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "status GRID --out DIR | status OUT",
		Short: "Count finished and pending runs: of a grid in a sweep directory, or of a submitted sweep",
		Long: `With a grid and --out: count the finished and pending runs of GRID (of shard i/n with
--shard) in the sweep directory DIR.

With only OUT, the results root of 'dpfil sweep submit': read its submit.json, the
shard directories OUT/shard-i and the scheduler (squeue; sacct when Slurm keeps
accounting) and show each array task's Slurm state and each run as done, running,
failed (its last attempt failed) or pending (waiting for its task; "started" when it
resumes from a checkpoint).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				if cmd.Flags().Changed("shard") {
					return fmt.Errorf("sweep status OUT: --shard needs a grid: dpfil sweep status GRID --out DIR --shard i/n")
				}
				r, err := sweep.StatusOfSubmission(cmd.Context(), args[0])
				return emitReport(cmd, asJSON, r, err)
			}
			// A sweep directory that does not exist is a mistyped --out, not a sweep
			// with nothing done (a missing results file reads as empty).
			if fi, err := os.Stat(out); err != nil {
				return fmt.Errorf("sweep status: %w (no sweep has run there: check --out)", err)
			} else if !fi.IsDir() {
				return fmt.Errorf("sweep status: %s is not a directory", out)
			}
			r, err := withGrid(args[0], deps.models, func(e *sweep.Expanded) (*sweep.StatusReport, error) { return e.Status(out, shard) })
			return emitReport(cmd, asJSON, r, err)
		},
	}
	addJSONFlag(cmd, &asJSON)
	cmd.Flags().StringVar(&out, "out", "", "sweep directory (with a grid)")
	addShardFlag(cmd, &shard, "count only shard i of n (with a grid)")
	return cmd
}

func newSweepSubmitCmd(deps sweepDeps) *cobra.Command {
	var (
		req   sweep.SubmitRequest
		slurm bool
	)
	cmd := reportCmd(&cobra.Command{
		Use:   "submit GRID --slurm --shards N [--out DIR]",
		Short: "Submit a grid to Slurm as a job array of N shards (sbatch)",
		Long: `Write the Slurm job-array script of GRID in N shards into DIR (slurm.sh; the tasks'
output goes to DIR/logs, shard i's results to DIR/shard-i) and submit it with sbatch,
which must be on PATH; print the job id. --dry-run prints the script instead and
writes nothing. DIR/submit.json records the submission for 'dpfil sweep status DIR'.

Preemption: each task asks for SIGTERM --grace seconds before its time limit
(--signal=B:TERM@grace) and is --requeue'able. On SIGTERM (time limit, preemption,
'scancel --batch --signal=TERM') dpfil checkpoints its current run and exits with
status 75; the task then requeues itself ('scontrol requeue', only while the job is
RUNNING: a cancelled job stays cancelled). A requeued task, or the same sweep
submitted again (same GRID, --shards and --out), skips the finished runs of its shard
and resumes the unfinished one from its checkpoint, so the results equal those of an
uninterrupted 'dpfil sweep run'. When all tasks are done:
'dpfil sweep merge DIR/shard-* --out DIR'.`,
		Args: cobra.ExactArgs(1),
	}, func(cmd *cobra.Command, args []string) (*sweep.SubmitReport, error) {
		if !slurm {
			return nil, fmt.Errorf("sweep submit: --slurm is required (the only scheduler submit talks to; for Kubernetes write the manifest with 'dpfil sweep plan --k8s' and kubectl apply it)")
		}
		if req.Bin == "" {
			exe, err := os.Executable()
			if err != nil {
				return nil, fmt.Errorf("sweep submit: this executable's path (give --bin): %w", err)
			}
			req.Bin = exe
		}
		e, err := sweep.ExpandModels(args[0], deps.models)
		if err != nil {
			return nil, err
		}
		return e.Submit(cmd.Context(), req)
	})
	f := cmd.Flags()
	f.IntVar(&req.Shards, "shards", 0, "number of shards (array tasks)")
	f.BoolVar(&slurm, "slurm", false, "submit to Slurm (required)")
	f.BoolVar(&req.DryRun, "dry-run", false, "print the script; write and submit nothing")
	addPlanOptionFlags(cmd, &req.PlanOptions)
	f.Lookup("bin").DefValue = "this executable"
	f.Lookup("bin").Usage = "dpfil executable as the jobs see it"
	req.Bin = ""
	_ = cmd.MarkFlagRequired("shards")
	return cmd
}

func newSweepListCmd(deps sweepDeps) *cobra.Command {
	var shard sweep.Shard
	cmd := reportCmd(&cobra.Command{
		Use:   "list GRID",
		Short: "Expand a grid and list its runs (index, hash, swept settings)",
		Args:  cobra.ExactArgs(1),
	}, func(_ *cobra.Command, args []string) (*sweep.Listing, error) {
		return withGrid(args[0], deps.models, func(e *sweep.Expanded) (*sweep.Listing, error) { return e.List(shard) })
	})
	addShardFlag(cmd, &shard, "list only shard i of n")
	return cmd
}

func newSweepPlanCmd(deps sweepDeps) *cobra.Command {
	var (
		req     sweep.PlanRequest
		slurm   bool
		outFile string
	)
	cmd := &cobra.Command{
		Use:   "plan GRID --shards N (--slurm | --k8s)",
		Short: "Write a Slurm job-array script or a Kubernetes Indexed Job that runs the grid in N shards",
		Long: `Write a cluster plan for GRID in N shards: with --slurm a job-array script (one array
task per shard, 'dpfil sweep run GRID --shard $SLURM_ARRAY_TASK_ID/N'), with --k8s a
Kubernetes manifest (a ConfigMap with the grid file and an Indexed Job whose pod i
runs shard $JOB_COMPLETION_INDEX/N). Shard i writes <results>/shard-i; a retried
task resumes. Gather the shards with 'dpfil sweep merge <results>/shard-* --out <results>'.

Both survive preemption: on SIGTERM dpfil checkpoints its current run and exits 75;
the Slurm task then requeues itself (#SBATCH --requeue, --signal=B:TERM@grace), and
the Job's podFailurePolicy replaces such a pod without counting it as a failure. The
requeued task or pod skips finished runs and resumes the interrupted one from its
checkpoint. 'dpfil sweep submit' writes the Slurm script and calls sbatch.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			e, err := sweep.ExpandModels(args[0], deps.models)
			if err != nil {
				return err
			}
			p, err := e.Plan(req)
			if err != nil {
				return err
			}
			if outFile == "" || outFile == "-" {
				_, err := io.WriteString(cmd.OutOrStdout(), p.Text)
				return err
			}
			if err := p.WriteFile(outFile); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s: %d runs in %d shards of %s\n", outFile, p.Runs, req.Shards, e.Grid.Name)
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&req.Shards, "shards", 0, "number of shards (array tasks / completions)")
	f.BoolVar(&slurm, "slurm", false, "write a Slurm job-array script")
	f.BoolVar(&req.Kubernetes, "k8s", false, "write a Kubernetes Indexed Job manifest")
	f.StringVarP(&outFile, "output", "o", "", "write the plan to this file (default stdout)")
	addPlanOptionFlags(cmd, &req.PlanOptions)
	_ = cmd.MarkFlagRequired("shards")
	cmd.MarkFlagsOneRequired("slurm", "k8s")
	cmd.MarkFlagsMutuallyExclusive("slurm", "k8s")
	return cmd
}

// addPlanOptionFlags binds the scheduler settings of a cluster plan.
func addPlanOptionFlags(cmd *cobra.Command, o *sweep.PlanOptions) {
	f := cmd.Flags()
	f.StringVar(&o.Out, "out", "", "results root as the jobs see it (default sweep-<grid name>; /results on Kubernetes)")
	f.StringVar(&o.Name, "name", "", "job name (default dpfil-<grid name>)")
	f.IntVar(&o.Workers, "workers", 1, "runs in parallel inside each task")
	f.StringVar(&o.Bin, "bin", "dpfil", "dpfil executable as the jobs see it")
	f.IntVar(&o.CPUs, "cpus", 0, "CPUs per task (default --workers)")
	f.StringVar(&o.Time, "time", "", "Slurm --time limit, e.g. 24:00:00")
	f.StringVar(&o.Partition, "partition", "", "Slurm partition")
	f.IntVar(&o.GPUs, "gpus", 0, "GPUs per task")
	f.StringVar(&o.Gres, "gres", "", "Slurm --gres, e.g. gpu:1 or gpu:a100:1 (instead of --gpus)")
	f.IntVar(&o.Grace, "grace", sweep.DefaultGrace, "seconds from SIGTERM to SIGKILL for a task to checkpoint: Slurm --signal=B:TERM@grace before the time limit; Kubernetes terminationGracePeriodSeconds")
	f.StringVar(&o.Mem, "mem", "", "memory per task, e.g. 8G (Slurm) or 8Gi (Kubernetes)")
	f.StringVar(&o.Image, "image", "", "container image with dpfil (Kubernetes)")
	f.IntVar(&o.Parallelism, "parallelism", 0, "pods at once (Kubernetes; default all shards)")
	f.StringVar(&o.PVC, "pvc", "dpfil-results", "PersistentVolumeClaim for the results (Kubernetes)")
	f.StringVar(&o.Namespace, "namespace", "", "Kubernetes namespace")
	f.StringVar(&o.GridDir, "grid-dir", "/etc/dpfil", "where the pods mount the grid ConfigMap (Kubernetes)")
}

func newSweepMergeCmd() *cobra.Command {
	var req sweep.MergeRequest
	cmd := reportCmd(&cobra.Command{
		Use:   "merge DIR|FILE... --out DIR",
		Short: "Merge results.jsonl files of sweep shards, deduplicating by config hash",
		Long: `Merge the results.jsonl of several sweep directories (or results files) into
DIR/results.jsonl. Records are deduplicated by config hash; an existing
DIR/results.jsonl is merged in first, so merging is incremental. Two records of the
same hash with different metrics are a conflict: it is reported and, unless
--keep-first is given, nothing is written.`,
		Args: cobra.MinimumNArgs(1),
	}, func(_ *cobra.Command, args []string) (*sweep.MergeResult, error) {
		req.Inputs = args
		return sweep.MergeDirs(req)
	})
	cmd.Flags().StringVar(&req.Out, "out", "", "directory to write results.jsonl into")
	cmd.Flags().BoolVar(&req.KeepFirst, "keep-first", false, "on conflicts keep the first record and write anyway")
	markRequired(cmd, "out")
	return cmd
}
