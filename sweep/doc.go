// Package sweep runs hyperparameter sweeps of train configurations on one machine or
// a cluster, and computes the accuracy-vs-privacy Pareto frontier of their results,
// as behind the Pareto plots of Guo, Karrer, Chaudhuri and van der Maaten (2022),
// "Bounding training data reconstruction in private (deep) learning" (ICML), Fig. 5
// and the hyperparameter grids of its Appendix C (Tables 3 and 4).
//
// A Grid (YAML or JSON file: fixed base settings and lists of swept values) expands
// deterministically into Jobs, each a validated train.Config identified by its Hash.
// Shard i of n holds the jobs whose grid index is i mod n. Run executes the pending
// jobs of a shard with a Runner (TrainRunner wraps train.Run; tests use fakes), each
// in its own run directory so an interrupted run resumes from its checkpoint, and
// appends one Record per finished run to results.jsonl with a single O_APPEND write
// and fsync; ReadResults skips (and reports) a torn last line, so a killed sweep
// resumes without repeating or losing finished runs. Merge combines the results of
// shards, deduplicating by hash and reporting conflicting results; SlurmScript and
// K8sManifest write the cluster plans that fan the shards out; their tasks survive
// SIGTERM (checkpoint, exit ExitInterrupted, requeue) and resume. Expanded.Submit
// hands the Slurm script to sbatch and records the submission; StatusOfSubmission
// reports its runs from the shard directories, squeue and sacct. Frontier computes the
// non-dominated (accuracy, MSE bound) points.
//
// Expand reads a grid file for the typed requests behind 'dpfil sweep': its Run,
// Status, List and Plan methods return reports (RunReport, StatusReport, Listing,
// ClusterPlan) that encode as the command's JSON and write its text; MergeDirs and
// ReadInputs gather the results of several sweep directories. Numbers that are not
// finite (an infinite ε, the MSE bound of a run without FIL) are JSON null.
package sweep
