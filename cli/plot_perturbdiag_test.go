package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --perturb-diag N through 'train', drawn by 'plot perturb-diag' (--json: the figures
// and the numbers per step and across repeats); the "No BN" flag reaches the
// records; bad counts, a run without g_φ and a missing directory are refused.
func TestPlotPerturbDiagCommand(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	args := []string{"train", "--model", "linear", "--steps", "2", "--batch", "40", "--train-subset", "200", "--repeats", "2",
		"--fil-coords", "2", "--sigma", "1", "--quiet", "--pretrain-public", "0.5", "--pretrain-steps", "2", "--prune-fraction", "0.5",
		"--perturb-net", "--perturb-steps", "1", "--perturb-batch", "8", "--perturb-hidden", "2"}
	if _, err := runTrainCLI(t, append(args, "--out", run, "--perturb-diag", "5")...); err != nil {
		t.Fatal(err)
	}
	figs := filepath.Join(dir, "figs")
	out, err := runCLI(t, newRootCmd(), "plot", "perturb-diag", run, "--out-dir", figs, "--prefix", "t-", "--steps", "1", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Files   []string `json:"files"`
		Repeats []struct {
			Steps []struct {
				Step     int `json:"step"`
				BaseNorm struct {
					N    int     `json:"n"`
					Mean float64 `json:"mean"`
				} `json:"base_norm"`
				PCABase *struct {
					Points int `json:"points"`
				} `json:"pca_base"`
			} `json:"steps"`
		} `json:"repeats"`
		Across []struct {
			Repeats  int `json:"repeats"`
			Accuracy struct {
				Std *float64 `json:"std"`
			} `json:"test_accuracy"`
		} `json:"across_repeats"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("invalid JSON: %v\n%s", err, out)
	}
	if len(rep.Files) != 6 || len(rep.Repeats) != 2 || len(rep.Repeats[0].Steps) != 2 || len(rep.Across) != 2 ||
		rep.Across[0].Repeats != 2 || rep.Across[0].Accuracy.Std == nil {
		t.Fatalf("report: %s", out)
	}
	s := rep.Repeats[0].Steps[0]
	if s.BaseNorm.N < 1 || !(s.BaseNorm.Mean > 0) || s.PCABase == nil || s.PCABase.Points != min(5, s.BaseNorm.N) || rep.Repeats[0].Steps[1].PCABase != nil {
		t.Fatalf("step 1: %+v", s)
	}
	for _, f := range rep.Files {
		if w, h := pngSize(t, f); w < 100 || h < 100 || !strings.HasPrefix(filepath.Base(f), "t-") {
			t.Fatalf("%s: %d×%d", f, w, h)
		}
	}
	noStd := filepath.Join(dir, "nostd")
	if _, err := runTrainCLI(t, append(args, "--out", noStd, "--perturb-diag", "3", "--perturb-no-standardise")...); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(noStd, "perturb-diag", "r1-step0002.json"))
	if err != nil || !strings.Contains(string(b), `"standardised": false`) {
		t.Fatalf("No-BN record: %v\n%s", err, b)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{append(args, "--out", filepath.Join(dir, "neg"), "--perturb-diag", "-1"), "must be ≥ 0"},
		{[]string{"train", "--model", "linear", "--steps", "1", "--train-subset", "100", "--batch", "20", "--quiet", "--out", filepath.Join(dir, "nonet"), "--perturb-diag", "3"}, "--perturb-net"},
		{[]string{"plot", "perturb-diag", filepath.Join(dir, "absent"), "--out-dir", figs}, "no such file"},
		{[]string{"plot", "perturb-diag", noStd}, "out-dir"},
	} {
		if _, err := runCLI(t, newRootCmd(), c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("dpfil %s: error %v, want %q", strings.Join(c.args, " "), err, c.want)
		}
	}
}
