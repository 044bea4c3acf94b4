package sweep

import (
	"bytes"
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// PlanOptions describes how to fan a sweep out over a cluster scheduler: one array
// task (Slurm) or one completion index (Kubernetes) per shard, shard i writing to its
// own directory <Out>/shard-<i> (separate files, so no two processes ever append to
// one results log, even on a network file system). Once all tasks are done,
// `dpfil sweep merge <Out>/shard-* --out <Out>` gathers the results.
type PlanOptions struct {
	Name     string // job name (letters, digits, '-'); default "dpfil-sweep"
	Grid     string // grid file path as the jobs see it (Slurm)
	GridYAML []byte // grid file content, shipped in a ConfigMap (Kubernetes)
	Shards   int    // number of shards = array tasks = completions
	Out      string // results root as the jobs see it
	Workers  int    // runs in parallel inside one task (default 1)
	Bin      string // dpfil executable (default "dpfil")

	// Slurm.
	CPUs      int    // --cpus-per-task (default Workers)
	Time      string // --time, e.g. "24:00:00" (optional)
	Partition string // --partition (optional)
	GPUs      int    // --gres=gpu:N (optional)
	Gres      string // --gres as given, e.g. "gpu:a100:1" (optional; exclusive with GPUs)
	Mem       string // --mem, e.g. "8G" (optional)
	// Grace is how many seconds before the time limit Slurm sends SIGTERM to the
	// task (--signal=B:TERM@Grace; default DefaultGrace). The task then checkpoints,
	// exits with ExitInterrupted and requeues itself.
	Grace int
	// Log is the Slurm output file pattern (--output, e.g. "logs/%A_%a.out";
	// optional: Slurm's default slurm-%A_%a.out in the submit directory).
	Log string

	// Kubernetes.
	Image           string // container image holding the dpfil binary
	Parallelism     int    // pods at once (default Shards)
	PVC             string // PersistentVolumeClaim mounted at Out (default "dpfil-results")
	GridDir         string // where the grid ConfigMap is mounted (default "/etc/dpfil")
	Namespace       string // optional
	BackoffPerIndex int    // retries per index (default 3); a retried index resumes
}

var nameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

func (o *PlanOptions) defaults() error {
	if o.Name == "" {
		o.Name = "dpfil-sweep"
	}
	if !nameRE.MatchString(o.Name) || len(o.Name) > 52 {
		return fmt.Errorf("plan: job name %q: want lower-case letters, digits and '-', at most 52 characters", o.Name)
	}
	if o.Shards < 1 {
		return fmt.Errorf("plan: shards = %d must be at least 1", o.Shards)
	}
	if o.Out == "" {
		return fmt.Errorf("plan: no output directory")
	}
	if o.Workers < 1 {
		o.Workers = 1
	}
	if o.Bin == "" {
		o.Bin = "dpfil"
	}
	if o.CPUs < 1 {
		o.CPUs = o.Workers
	}
	if o.Parallelism < 1 || o.Parallelism > o.Shards {
		o.Parallelism = o.Shards
	}
	if o.PVC == "" {
		o.PVC = "dpfil-results"
	}
	if o.GridDir == "" {
		o.GridDir = "/etc/dpfil"
	}
	if o.BackoffPerIndex < 1 {
		o.BackoffPerIndex = 3
	}
	if o.Grace < 0 {
		return fmt.Errorf("plan: grace = %d s must not be negative", o.Grace)
	}
	if o.Grace == 0 {
		o.Grace = DefaultGrace
	}
	if o.GPUs < 0 {
		return fmt.Errorf("plan: gpus = %d must not be negative", o.GPUs)
	}
	if o.GPUs > 0 && o.Gres != "" {
		return fmt.Errorf("plan: give either --gpus (%d) or --gres (%q), not both", o.GPUs, o.Gres)
	}
	for _, s := range []string{o.Time, o.Partition, o.Mem, o.Out, o.Bin, o.Grid, o.Image, o.PVC, o.GridDir, o.Namespace, o.Gres, o.Log} {
		if strings.ContainsAny(s, "\n\r") {
			return fmt.Errorf("plan: option %q contains a line break", s)
		}
	}
	return nil
}

// DefaultGrace is the default number of seconds between the SIGTERM a task gets
// before its time limit (or on preemption) and the SIGKILL that follows.
const DefaultGrace = 120

// ExitInterrupted is the exit status of 'dpfil sweep run' stopped by SIGTERM or
// SIGINT after checkpointing its current run (EX_TEMPFAIL of sysexits.h: try again).
// The Slurm script requeues its task on it; a Kubernetes pod that exits with it is
// replaced without counting against the index's backoff limit.
const ExitInterrupted = 75

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@%+,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// SlurmScript returns a Slurm job-array script running shard $SLURM_ARRAY_TASK_ID of
// opt.Shards. Submit it with sbatch.
//
// Preemption and time limits: Slurm sends SIGTERM to the batch shell opt.Grace
// seconds before the time limit (--signal=B:TERM@Grace), and preemption or
// 'scancel --signal=TERM --batch' send it too. The shell forwards it to dpfil, which
// checkpoints its current run and exits with ExitInterrupted; the shell then
// requeues its own array task with 'scontrol requeue' when the job is still RUNNING
// (not when it is being cancelled) and exits with the same status. The requeued task
// (or a resubmitted array) skips the shard's finished runs and resumes the
// unfinished one from its checkpoint.
func SlurmScript(opt PlanOptions) (string, error) {
	if err := opt.defaults(); err != nil {
		return "", err
	}
	if opt.Grid == "" {
		return "", fmt.Errorf("plan: no grid file")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "#!/bin/bash\n")
	fmt.Fprintf(&b, "#SBATCH --job-name=%s\n", opt.Name)
	fmt.Fprintf(&b, "#SBATCH --array=0-%d\n", opt.Shards-1)
	fmt.Fprintf(&b, "#SBATCH --cpus-per-task=%d\n", opt.CPUs)
	if opt.Time != "" {
		fmt.Fprintf(&b, "#SBATCH --time=%s\n", opt.Time)
	}
	if opt.Partition != "" {
		fmt.Fprintf(&b, "#SBATCH --partition=%s\n", opt.Partition)
	}
	if opt.Mem != "" {
		fmt.Fprintf(&b, "#SBATCH --mem=%s\n", opt.Mem)
	}
	if opt.GPUs > 0 {
		fmt.Fprintf(&b, "#SBATCH --gres=gpu:%d\n", opt.GPUs)
	}
	if opt.Gres != "" {
		fmt.Fprintf(&b, "#SBATCH --gres=%s\n", opt.Gres)
	}
	if opt.Log != "" {
		fmt.Fprintf(&b, "#SBATCH --output=%s\n", opt.Log)
	}
	fmt.Fprintf(&b, "#SBATCH --open-mode=append\n")
	fmt.Fprintf(&b, "#SBATCH --requeue\n")
	fmt.Fprintf(&b, "#SBATCH --signal=B:TERM@%d\n", opt.Grace)
	fmt.Fprintf(&b, "#\n# dpfil sweep %s in %d shards; shard i writes %s/shard-i.\n", opt.Name, opt.Shards, opt.Out)
	fmt.Fprintf(&b, "# Submit: sbatch THIS_FILE. Rerunning a task resumes it (finished runs are kept).\n")
	fmt.Fprintf(&b, "# SIGTERM (time limit - %d s, preemption, scancel --signal=TERM --batch) is forwarded\n", opt.Grace)
	fmt.Fprintf(&b, "# to dpfil, which checkpoints and exits %d; the task then requeues itself.\n", ExitInterrupted)
	fmt.Fprintf(&b, "# When all tasks are done: %s sweep merge %s/shard-* --out %s\n", opt.Bin, opt.Out, opt.Out)
	fmt.Fprintf(&b, "set -uo pipefail\n")
	fmt.Fprintf(&b, "N=%d\n", opt.Shards)
	fmt.Fprintf(&b, "SHARD=\"${SLURM_ARRAY_TASK_ID:?submit this script as a Slurm job array (sbatch)}\"\n")
	fmt.Fprintf(&b, "term=0 pid=\n")
	fmt.Fprintf(&b, "trap 'term=1; [ -n \"$pid\" ] && kill -TERM \"$pid\" 2>/dev/null' TERM\n")
	fmt.Fprintf(&b, "%s sweep run %s --out %s/shard-\"$SHARD\" --shard \"$SHARD/$N\" --workers %d &\n",
		shellQuote(opt.Bin), shellQuote(opt.Grid), shellQuote(opt.Out), opt.Workers)
	fmt.Fprintf(&b, "pid=$!\n")
	fmt.Fprintf(&b, "if [ \"$term\" = 1 ]; then kill -TERM \"$pid\"; fi # TERM before dpfil started\n")
	// wait returns early (status > 128) when the trapped TERM arrives; wait again
	// until dpfil has really exited, then once more for its status.
	fmt.Fprintf(&b, "while wait \"$pid\"; rc=$?; kill -0 \"$pid\" 2>/dev/null; do :; done\n")
	fmt.Fprintf(&b, "if [ \"$term\" = 1 ] && [ \"$rc\" -gt 128 ]; then wait \"$pid\"; rc=$?; fi\n")
	// 143: the TERM came before dpfil handled signals (nothing to checkpoint yet).
	fmt.Fprintf(&b, "if [ -n \"${SLURM_JOB_ID:-}\" ] && { [ \"$rc\" = %d ] || [ \"$term:$rc\" = 1:143 ]; }; then\n", ExitInterrupted)
	fmt.Fprintf(&b, "  state=$(squeue -h -j \"$SLURM_JOB_ID\" -o %%T 2>/dev/null || true)\n")
	fmt.Fprintf(&b, "  if [ \"$state\" = RUNNING ]; then\n")
	fmt.Fprintf(&b, "    echo \"dpfil: shard $SHARD/$N checkpointed after SIGTERM; requeueing task $SLURM_JOB_ID\" >&2\n")
	fmt.Fprintf(&b, "    scontrol requeue \"$SLURM_JOB_ID\" || echo \"dpfil: scontrol requeue failed; resubmit to resume\" >&2\n")
	fmt.Fprintf(&b, "  fi\n")
	fmt.Fprintf(&b, "fi\n")
	fmt.Fprintf(&b, "exit \"$rc\"\n")
	return b.String(), nil
}

// Kubernetes objects, only the fields the manifest uses (field order = output order).
type (
	k8sMeta struct {
		Name      string            `yaml:"name,omitempty"`
		Namespace string            `yaml:"namespace,omitempty"`
		Labels    map[string]string `yaml:"labels,omitempty"`
	}
	k8sConfigMap struct {
		APIVersion string            `yaml:"apiVersion"`
		Kind       string            `yaml:"kind"`
		Metadata   k8sMeta           `yaml:"metadata"`
		Data       map[string]string `yaml:"data"`
	}
	k8sJob struct {
		APIVersion string     `yaml:"apiVersion"`
		Kind       string     `yaml:"kind"`
		Metadata   k8sMeta    `yaml:"metadata"`
		Spec       k8sJobSpec `yaml:"spec"`
	}
	k8sJobSpec struct {
		CompletionMode       string              `yaml:"completionMode"`
		Completions          int                 `yaml:"completions"`
		Parallelism          int                 `yaml:"parallelism"`
		BackoffLimitPerIndex int                 `yaml:"backoffLimitPerIndex"`
		PodFailurePolicy     k8sPodFailurePolicy `yaml:"podFailurePolicy"`
		Template             k8sPodTemplate      `yaml:"template"`
	}
	k8sPodFailurePolicy struct {
		Rules []k8sPodFailureRule `yaml:"rules"`
	}
	k8sPodFailureRule struct {
		Action          string              `yaml:"action"`
		OnExitCodes     *k8sExitCodes       `yaml:"onExitCodes,omitempty"`
		OnPodConditions []k8sPodCondPattern `yaml:"onPodConditions,omitempty"`
	}
	k8sExitCodes struct {
		ContainerName string `yaml:"containerName"`
		Operator      string `yaml:"operator"`
		Values        []int  `yaml:"values"`
	}
	k8sPodCondPattern struct {
		Type   string `yaml:"type"`
		Status string `yaml:"status"`
	}
	k8sPodTemplate struct {
		Metadata k8sMeta    `yaml:"metadata"`
		Spec     k8sPodSpec `yaml:"spec"`
	}
	k8sPodSpec struct {
		RestartPolicy                 string         `yaml:"restartPolicy"`
		TerminationGracePeriodSeconds int            `yaml:"terminationGracePeriodSeconds"`
		Containers                    []k8sContainer `yaml:"containers"`
		Volumes                       []k8sVolume    `yaml:"volumes"`
	}
	k8sContainer struct {
		Name         string       `yaml:"name"`
		Image        string       `yaml:"image"`
		Command      []string     `yaml:"command"`
		Resources    k8sResources `yaml:"resources"`
		VolumeMounts []k8sMount   `yaml:"volumeMounts"`
	}
	k8sResources struct {
		Requests map[string]string `yaml:"requests,omitempty"`
		Limits   map[string]string `yaml:"limits,omitempty"`
	}
	k8sMount struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
		ReadOnly  bool   `yaml:"readOnly,omitempty"`
	}
	k8sVolume struct {
		Name                  string        `yaml:"name"`
		ConfigMap             *k8sCMSource  `yaml:"configMap,omitempty"`
		PersistentVolumeClaim *k8sPVCSource `yaml:"persistentVolumeClaim,omitempty"`
	}
	k8sCMSource struct {
		Name string `yaml:"name"`
	}
	k8sPVCSource struct {
		ClaimName string `yaml:"claimName"`
	}
)

// GridFileName is the key of the grid file in the Kubernetes ConfigMap.
const GridFileName = "grid.yaml"

// K8sManifest returns a two-document Kubernetes manifest: a ConfigMap holding the grid
// file and an Indexed Job (completionMode: Indexed, completions = shards) whose pod
// with index i runs shard $JOB_COMPLETION_INDEX into <Out>/shard-i on a persistent
// volume. Apply it with kubectl apply -f.
//
// Resume semantics are those of the Slurm script: dpfil is the container's process
// (sh -c exec), so the SIGTERM of a pod deletion, eviction or preemption reaches it;
// it checkpoints its current run within terminationGracePeriodSeconds (opt.Grace)
// and exits with ExitInterrupted. The Job's podFailurePolicy ignores that exit code
// and disruptions (DisruptionTarget), so such a pod is replaced without counting
// against backoffLimitPerIndex; other failures count. The replacement pod, like any
// retried index, skips the shard's finished runs and resumes the unfinished one from
// its checkpoint on the volume.
func K8sManifest(opt PlanOptions) (string, error) {
	if err := opt.defaults(); err != nil {
		return "", err
	}
	if opt.Image == "" {
		return "", fmt.Errorf("plan: --image is required for Kubernetes")
	}
	if opt.Gres != "" {
		return "", fmt.Errorf("plan: --gres %q is Slurm's; on Kubernetes ask for GPUs with --gpus", opt.Gres)
	}
	if len(opt.GridYAML) == 0 {
		return "", fmt.Errorf("plan: empty grid file")
	}
	labels := map[string]string{"app.kubernetes.io/name": "dpfil", "dpfil/sweep": opt.Name}
	cm := k8sConfigMap{
		APIVersion: "v1", Kind: "ConfigMap",
		Metadata: k8sMeta{Name: opt.Name + "-grid", Namespace: opt.Namespace, Labels: labels},
		Data:     map[string]string{GridFileName: string(opt.GridYAML)},
	}
	gridPath := path.Join(opt.GridDir, GridFileName)
	cmd := fmt.Sprintf("exec %s sweep run %s --out %s/shard-\"$JOB_COMPLETION_INDEX\" --shard \"$JOB_COMPLETION_INDEX/%d\" --workers %d",
		shellQuote(opt.Bin), shellQuote(gridPath), shellQuote(opt.Out), opt.Shards, opt.Workers)
	cpu := strconv.Itoa(opt.CPUs)
	res := k8sResources{Requests: map[string]string{"cpu": cpu}}
	if opt.Mem != "" {
		res.Requests["memory"] = opt.Mem
	}
	if opt.GPUs > 0 {
		res.Limits = map[string]string{"nvidia.com/gpu": strconv.Itoa(opt.GPUs)}
	}
	job := k8sJob{
		APIVersion: "batch/v1", Kind: "Job",
		Metadata: k8sMeta{Name: opt.Name, Namespace: opt.Namespace, Labels: labels},
		Spec: k8sJobSpec{
			CompletionMode:       "Indexed",
			Completions:          opt.Shards,
			Parallelism:          opt.Parallelism,
			BackoffLimitPerIndex: opt.BackoffPerIndex,
			PodFailurePolicy: k8sPodFailurePolicy{Rules: []k8sPodFailureRule{
				{Action: "Ignore", OnExitCodes: &k8sExitCodes{ContainerName: "dpfil", Operator: "In", Values: []int{ExitInterrupted}}},
				{Action: "Ignore", OnPodConditions: []k8sPodCondPattern{{Type: "DisruptionTarget", Status: "True"}}},
			}},
			Template: k8sPodTemplate{
				Metadata: k8sMeta{Labels: labels},
				Spec: k8sPodSpec{
					RestartPolicy:                 "Never",
					TerminationGracePeriodSeconds: opt.Grace,
					Containers: []k8sContainer{{
						Name:      "dpfil",
						Image:     opt.Image,
						Command:   []string{"/bin/sh", "-c", cmd},
						Resources: res,
						VolumeMounts: []k8sMount{
							{Name: "grid", MountPath: opt.GridDir, ReadOnly: true},
							{Name: "results", MountPath: opt.Out},
						},
					}},
					Volumes: []k8sVolume{
						{Name: "grid", ConfigMap: &k8sCMSource{Name: cm.Metadata.Name}},
						{Name: "results", PersistentVolumeClaim: &k8sPVCSource{ClaimName: opt.PVC}},
					},
				},
			},
		},
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "# dpfil sweep %s: %d shards as a Kubernetes Indexed Job; shard i writes %s/shard-i.\n", opt.Name, opt.Shards, opt.Out)
	fmt.Fprintf(&buf, "# kubectl apply -f THIS_FILE; afterwards, on the volume: %s sweep merge %s/shard-* --out %s\n", opt.Bin, opt.Out, opt.Out)
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(cm); err != nil {
		return "", fmt.Errorf("plan: encode ConfigMap: %w", err)
	}
	if err := enc.Encode(job); err != nil {
		return "", fmt.Errorf("plan: encode Job: %w", err)
	}
	if err := enc.Close(); err != nil {
		return "", fmt.Errorf("plan: encode manifest: %w", err)
	}
	return buf.String(), nil
}
