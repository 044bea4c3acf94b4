package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestTrainEtaLabelCLI: --fil-eta and --fil-label reach the trainer, result.json
// carries "eta" and "label_fil", and the human summary prints their bounds.
func TestTrainEtaLabelCLI(t *testing.T) {
	t.Setenv("DPFIL_DATA", t.TempDir())
	dir := filepath.Join(t.TempDir(), "run")
	args := []string{"train", "--model", "linear", "--train-subset", "100", "--steps", "3", "--batch", "20",
		"--fil-coords", "2", "--fil-eta", "4", "--fil-label", "--quiet", "--out", dir}
	out, _, err := execCLI(t, append(args, "--json")...)
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Eta *struct {
			Iterations int `json:"iterations"`
			EtaSq      struct {
				Count       int      `json:"count"`
				Max         float64  `json:"max"`
				MSEBoundMax *float64 `json:"mse_bound_max"`
			} `json:"eta_sq"`
			Path string `json:"path"`
		} `json:"eta"`
		LabelFIL *struct {
			Classes int `json:"classes"`
			DFIL    struct {
				Max float64 `json:"max"`
			} `json:"dfil"`
		} `json:"label_fil"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if res.Eta == nil || res.Eta.Iterations != 4 || res.Eta.EtaSq.Count != 100 || !(res.Eta.EtaSq.Max > 0) ||
		res.Eta.EtaSq.MSEBoundMax == nil || res.Eta.Path != "eta.npy" {
		t.Errorf("eta: %+v", res.Eta)
	}
	if res.LabelFIL == nil || res.LabelFIL.Classes != 10 || !(res.LabelFIL.DFIL.Max > 0) {
		t.Errorf("label_fil: %+v", res.LabelFIL)
	}
	out, _, err = execCLI(t, append(args[:len(args)-1], dir+"-2")...)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"η (4 power iter.) η² max", "label FIL (K = 10)", "label MSE ≥"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if _, _, err := execCLI(t, "train", "--model", "linear", "--fil-eta", "-1"); err == nil || !strings.Contains(err.Error(), "fil_eta") {
		t.Errorf("--fil-eta -1: %v", err)
	}
}
