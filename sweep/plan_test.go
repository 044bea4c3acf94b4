package sweep

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestSlurmScript(t *testing.T) {
	s, err := SlurmScript(PlanOptions{Name: "fig5", Grid: "sweeps/it's here.yaml", Shards: 8, Out: "/scratch/out dir", Workers: 2, Time: "12:00:00", GPUs: 1, Partition: "gpu"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"#!/bin/bash\n", "#SBATCH --array=0-7\n", "#SBATCH --cpus-per-task=2\n", "#SBATCH --time=12:00:00\n",
		"#SBATCH --gres=gpu:1\n", "#SBATCH --partition=gpu\n", "N=8\n", `--shard "$SHARD/$N"`, "SLURM_ARRAY_TASK_ID",
		`'sweeps/it'\''s here.yaml'`, `'/scratch/out dir'/shard-"$SHARD"`, "--workers 2",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("script lacks %q:\n%s", want, s)
		}
	}
	f := filepath.Join(t.TempDir(), "job.sh")
	if err := os.WriteFile(f, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("bash", "-n", f).CombinedOutput(); err != nil {
		t.Fatalf("bash -n: %v\n%s", err, out)
	}
	// Without the array variable the script refuses to run instead of guessing.
	cmd := exec.Command("bash", f)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "Slurm job array") {
		t.Fatalf("script without SLURM_ARRAY_TASK_ID: err %v, output %s", err, out)
	}
}

func TestK8sManifest(t *testing.T) {
	grid := []byte("name: g\ngrid: {sigma: [1, 2]}\n")
	m, err := K8sManifest(PlanOptions{Name: "fig5", GridYAML: grid, Shards: 5, Parallelism: 2, Out: "/results", Workers: 3, Image: "ghcr.io/x/dpfil:1", GPUs: 1, Mem: "4Gi"})
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader([]byte(m)))
	var docs []map[string]any
	for {
		var d map[string]any
		if err := dec.Decode(&d); err != nil {
			break
		}
		docs = append(docs, d)
	}
	if len(docs) != 2 {
		t.Fatalf("%d YAML documents, want 2:\n%s", len(docs), m)
	}
	cm, job := docs[0], docs[1]
	if cm["kind"] != "ConfigMap" || job["kind"] != "Job" || job["apiVersion"] != "batch/v1" {
		t.Fatalf("kinds %v %v", cm["kind"], job["kind"])
	}
	if got := cm["data"].(map[string]any)[GridFileName]; got != string(grid) {
		t.Fatalf("ConfigMap grid %q", got)
	}
	spec := job["spec"].(map[string]any)
	if spec["completionMode"] != "Indexed" || spec["completions"] != 5 || spec["parallelism"] != 2 {
		t.Fatalf("job spec %v", spec)
	}
	if _, named := spec["template"].(map[string]any)["metadata"].(map[string]any)["name"]; named {
		t.Fatal("pod template metadata carries a name")
	}
	pod := spec["template"].(map[string]any)["spec"].(map[string]any)
	if pod["restartPolicy"] != "Never" {
		t.Fatalf("restartPolicy %v", pod["restartPolicy"])
	}
	c := pod["containers"].([]any)[0].(map[string]any)
	cmd := c["command"].([]any)
	if len(cmd) != 3 || cmd[0] != "/bin/sh" || cmd[1] != "-c" {
		t.Fatalf("command %v", cmd)
	}
	sh := cmd[2].(string)
	for _, want := range []string{"sweep run /etc/dpfil/grid.yaml", `--shard "$JOB_COMPLETION_INDEX/5"`, `/results/shard-"$JOB_COMPLETION_INDEX"`, "--workers 3"} {
		if !strings.Contains(sh, want) {
			t.Errorf("command %q lacks %q", sh, want)
		}
	}
	if c["image"] != "ghcr.io/x/dpfil:1" {
		t.Fatalf("image %v", c["image"])
	}
	res := c["resources"].(map[string]any)
	if res["limits"].(map[string]any)["nvidia.com/gpu"] != "1" || res["requests"].(map[string]any)["memory"] != "4Gi" {
		t.Fatalf("resources %v", res)
	}
	vols := pod["volumes"].([]any)
	if vols[0].(map[string]any)["configMap"].(map[string]any)["name"] != cm["metadata"].(map[string]any)["name"] {
		t.Fatalf("grid volume does not reference the ConfigMap: %v", vols)
	}
	f := filepath.Join(t.TempDir(), "cmd.sh")
	os.WriteFile(f, []byte(sh), 0o644)
	if out, err := exec.Command("sh", "-n", f).CombinedOutput(); err != nil {
		t.Fatalf("sh -n: %v\n%s", err, out)
	}
}

func TestPlanErrors(t *testing.T) {
	tests := []struct {
		name string
		opt  PlanOptions
		k8s  bool
	}{
		{"no shards", PlanOptions{Grid: "g", Out: "o"}, false},
		{"no out", PlanOptions{Grid: "g", Shards: 2}, false},
		{"no grid", PlanOptions{Shards: 2, Out: "o"}, false},
		{"bad name", PlanOptions{Name: "Bad_Name", Grid: "g", Shards: 2, Out: "o"}, false},
		{"newline", PlanOptions{Grid: "g\nrm -rf /", Shards: 2, Out: "o"}, false},
		{"no image", PlanOptions{GridYAML: []byte("x"), Shards: 2, Out: "o"}, true},
		{"no grid content", PlanOptions{Image: "i", Shards: 2, Out: "o"}, true},
	}
	for _, tc := range tests {
		var err error
		if tc.k8s {
			_, err = K8sManifest(tc.opt)
		} else {
			_, err = SlurmScript(tc.opt)
		}
		if err == nil {
			t.Errorf("%s: want error", tc.name)
		}
	}
}
