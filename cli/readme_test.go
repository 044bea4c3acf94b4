package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// readmeCommands returns every `bin/dpfil …` command of README.md's ```sh blocks,
// continuation lines joined and trailing comments removed, in order.
func readmeCommands(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var cmds []string
	inSh, cur := false, ""
	for _, line := range strings.Split(string(b), "\n") {
		trim := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trim, "```"):
			inSh = trim == "```sh" || trim == "```bash"
			cur = ""
			continue
		case !inSh:
			continue
		}
		if cur != "" {
			trim = cur + " " + trim
			cur = ""
		}
		if i := strings.Index(trim, " #"); i >= 0 && !strings.Contains(trim[:i], `"`) {
			trim = strings.TrimSpace(trim[:i])
		}
		if strings.HasSuffix(trim, `\`) {
			cur = strings.TrimSpace(strings.TrimSuffix(trim, `\`))
			continue
		}
		if strings.HasPrefix(trim, "bin/dpfil ") {
			cmds = append(cmds, trim)
		}
	}
	return cmds
}

// readmeSkip says why a README command is not run here ("" = run it).
func readmeSkip(args []string) string {
	s := " " + strings.Join(args, " ") + " "
	switch {
	case strings.Contains(s, " data fetch "):
		return "downloads (tested against local servers in data_test.go)"
	case strings.Contains(s, " --device cuda "):
		return "needs the GPU build"
	case strings.Contains(s, " runs/cluster") && !strings.Contains(s, " --dry-run "):
		return "needs a Slurm cluster (TestSlurmSweepPreemptAndMerge runs these on one)"
	}
	return ""
}

// readmeReduce shrinks the work of a README command for the test: fewer steps,
// trials and samples, shorter benchmarks. The command line is otherwise as written.
func readmeReduce(args []string) []string {
	sub := ""
	if len(args) > 0 {
		sub = args[0]
	}
	reduce := map[string]string{"--trials": "8", "--samples": "20000", "--seconds": "0.05"}
	if sub == "train" || sub == "demo" {
		reduce["--steps"] = "3"
		reduce["--fil-coords"] = "2"
	}
	if sub == "bench" {
		reduce["--batch"] = "32"
		reduce["--coords"] = "4"
	}
	out := append([]string(nil), args...)
	for i := 0; i+1 < len(out); i++ {
		if out[i] == "--fil-coords" && out[i+1] == "0" {
			continue // FIL off stays off
		}
		if v, ok := reduce[out[i]]; ok {
			out[i+1] = v
		}
	}
	if sub == "bench" && !strings.Contains(strings.Join(args, " "), "--seconds") {
		out = append(out, "--seconds", "0.05")
	}
	if sub == "attack" || sub == "account" && len(args) > 1 && args[1] == "rero" {
		out = append(out, "--quiet")
	}
	return out
}

// TestREADMECommands runs every dpfil command the README shows, in order, in a
// scratch directory (so that `train --resume runs/a` finds the run the command
// before it wrote), with reduced sizes: a README command that breaks fails here.
func TestREADMECommands(t *testing.T) {
	cmds := readmeCommands(t)
	if len(cmds) < 10 {
		t.Fatalf("found only %d README commands: %q", len(cmds), cmds)
	}
	root, err := filepath.Abs(filepath.Join(".."))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, d := range []string{"sweeps", "examples"} { // grids name architecture files in examples/
		if err := os.Symlink(filepath.Join(root, d), filepath.Join(dir, d)); err != nil {
			t.Fatal(err)
		}
	}
	wd, _ := os.Getwd()
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	defer os.Chdir(wd)
	ran := 0
	for _, c := range cmds {
		args := strings.Fields(strings.TrimPrefix(c, "bin/dpfil "))
		if why := readmeSkip(args); why != "" {
			t.Logf("skip %q: %s", c, why)
			continue
		}
		args = readmeReduce(args)
		var out, errb bytes.Buffer
		cmd := newRootCmd()
		cmd.SetArgs(args)
		cmd.SetOut(&out)
		cmd.SetErr(&errb)
		t0 := time.Now()
		err := cmd.Execute()
		t.Logf("%5.1f s  %s", time.Since(t0).Seconds(), strings.Join(args, " "))
		if err != nil {
			t.Fatalf("README command %q (run as %q) failed: %v\nstderr: %s", c, args, err, errb.String())
		}
		if strings.Contains(c, "--json") && !json.Valid(out.Bytes()) {
			t.Fatalf("README command %q: --json output is not one JSON value:\n%s", c, out.String())
		}
		if strings.Contains(strings.ToLower(out.String()+errb.String()), "warning:") {
			t.Errorf("README command %q prints a warning:\n%s%s", c, out.String(), errb.String())
		}
		ran++
	}
	t.Logf("ran %d of %d README commands", ran, len(cmds))
}
