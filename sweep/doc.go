// Package sweep runs hyperparameter sweeps of train configurations on one machine or
// a cluster, and computes the accuracy-vs-privacy Pareto frontier of their results
// (seed 000 Fig. 5, Appendix C Tables 3 and 4).
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
// K8sManifest write the cluster plans that fan the shards out. Frontier computes the
// non-dominated (accuracy, MSE bound) points.
package sweep
