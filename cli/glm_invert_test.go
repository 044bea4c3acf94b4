package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runGLMInvertJSON(t *testing.T, args ...string) map[string]any {
	t.Helper()
	out, stderr, err := execCLI(t, append([]string{"glm", "invert", "--quiet", "--json"}, args...)...)
	if err != nil {
		t.Fatalf("glm invert %v: %v\n%s", args, err, stderr)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("glm invert %v: invalid JSON: %v\n%s", args, err, out)
	}
	return m
}

func TestGLMInvertCommand(t *testing.T) {
	dir := t.TempDir()
	csvPath := filepath.Join(dir, "iwpc.csv")
	// Noise-free: the white-box attack recovers the one-hot allele group exactly.
	m := runGLMInvertJSON(t, "--synthetic", "iwpc", "--rows", "200", "--noise-free", "--targets", "10", "--trials", "1", "--write-csv", csvPath)
	if m["white_box_mse"].(float64) != 0 || m["white_box_accuracy"].(float64) != 1 || m["discrete"] != true {
		t.Fatalf("noise-free inversion not exact: %v", m)
	}
	// The same table read back from CSV, a continuous column, a box and the scatter.
	png := filepath.Join(dir, "scatter.png")
	m = runGLMInvertJSON(t, "--csv", csvPath, "--target", "dose", "--columns", "height", "--sigma", "1e-5",
		"--targets", "8", "--trials", "40", "--out", dir, "--scatter", png, "--box", "-10,10")
	if m["n"].(float64) != 200 || m["loss"] != "lsq" || m["discrete"] != false {
		t.Fatalf("csv run: %v", m)
	}
	if r := m["median_ratio_mse_to_crb"].(float64); r < 0.5 || r > 1.5 {
		t.Errorf("realised/CRB median %v far from 1", r)
	}
	for _, f := range []string{png, filepath.Join(dir, "glm_invert.csv")} {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			t.Errorf("missing output %s: %v", f, err)
		}
	}
	// Logistic with attribute-level IRFIL, human output.
	out, _, err := execCLI(t, "glm", "invert", "--quiet", "--synthetic", "adult", "--rows", "150", "--irfil", "2", "--targets", "5", "--trials", "2", "--sigma", "1e-3")
	if err != nil || !strings.Contains(out, "IRFIL: η spread") || !strings.Contains(out, "white-box") {
		t.Fatalf("human output: %v\n%s", err, out)
	}
}

func TestGLMInvertErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--synthetic", "nope"},
		{"--synthetic", "iwpc", "--csv", "x.csv"},
		{"--csv", "/nonexistent.csv"},
		{"--synthetic", "iwpc", "--columns", "nosuch"},
		{"--synthetic", "iwpc", "--sigma", "0"},
		{"--synthetic", "iwpc", "--loss", "probit"},
		{"--synthetic", "iwpc", "--loss", "logistic"},
		{"--synthetic", "iwpc", "--block", "0,0,2,2"},
		{"--synthetic", "iwpc", "--box", "1,0"},
		{"--synthetic", "iwpc", "--attr-type", "both"},
		{"--synthetic", "iwpc", "--noise-free", "--irfil", "1"},
	} {
		if _, _, err := execCLI(t, append([]string{"glm", "invert", "--quiet", "--targets", "2", "--trials", "1"}, args...)...); err == nil {
			t.Errorf("glm invert %v accepted", args)
		}
	}
}
