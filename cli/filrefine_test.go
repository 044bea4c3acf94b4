package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpfil/dpfil/train"
)

// TestAccountFILRefineCLI: a recorded run refined from the command line (--json: the
// estimator named, the top-m exact values, a bootstrap interval over 2 repeats), the
// run's result.json naming its screen estimator, and the clear refusals (no
// transcript; fil_rate < 1).
func TestAccountFILRefineCLI(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	common := []string{"train", "--model", "mlp", "--steps", "6", "--batch", "12", "--train-subset", "96",
		"--fil-coords", "3", "--sigma", "1", "--clip", "1", "--repeats", "2", "--seed", "3", "--quiet"}
	if _, err := runTrainCLI(t, append(common, "--record-transcript", "--out", dir)...); err != nil {
		t.Fatal(err)
	}
	res, err := train.ReadResult(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.FILEstimator, "screen k=3, all members, R=2 runs") {
		t.Errorf("result.json fil_estimator %q", res.FILEstimator)
	}
	out, err := runTrainCLI(t, "account", "fil-refine", dir, "--top", "7", "--quiet", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var rep train.RefineReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if rep.Estimator != "screen k=3, all members, R=2 runs (mean); exact top-7 replayed from the transcript" ||
		len(rep.Refined) != 7 || rep.CI == nil || rep.Max != rep.Refined[0].Exact || rep.MSEBoundMax != 1/rep.Max {
		t.Errorf("report: %+v", rep)
	}
	// --save (default): the estimate is recorded in the run, as train --fil-refine-top
	// records it; both give the same numbers (the bootstrap seeded by the run's seed).
	saved, err := train.ReadResult(dir)
	if err != nil || saved.FILTwoStage == nil || saved.FILTwoStage.Max != rep.Max || *saved.FILTwoStage.CI != *rep.CI {
		t.Fatalf("saved fil_two_stage %+v (err %v), report max %v CI %+v", saved.FILTwoStage, err, rep.Max, rep.CI)
	}
	direct := filepath.Join(t.TempDir(), "direct")
	if _, err := runTrainCLI(t, append(common, "--fil-refine-top", "7", "--out", direct)...); err != nil {
		t.Fatal(err)
	}
	one, err := train.ReadResult(direct)
	if err != nil || one.FILTwoStage == nil || one.FILTwoStage.Max != rep.Max || one.FILTwoStage.ArgMax != rep.ArgMax || *one.FILTwoStage.CI != *rep.CI {
		t.Fatalf("train --fil-refine-top: %+v (err %v), want max %v argmax %d CI %+v", one.FILTwoStage, err, rep.Max, rep.ArgMax, rep.CI)
	}
	unsaved := filepath.Join(t.TempDir(), "unsaved")
	if _, err := runTrainCLI(t, append(common, "--record-transcript", "--out", unsaved)...); err != nil {
		t.Fatal(err)
	}
	if _, err := runTrainCLI(t, "account", "fil-refine", unsaved, "--top", "7", "--save=false", "--quiet"); err != nil {
		t.Fatal(err)
	}
	if r, err := train.ReadResult(unsaved); err != nil || r.FILTwoStage != nil {
		t.Errorf("--save=false wrote fil_two_stage %+v (err %v)", r.FILTwoStage, err)
	}
	if _, err := os.Stat(filepath.Join(unsaved, train.FILRefineFile)); !os.IsNotExist(err) {
		t.Errorf("--save=false: %s: %v", train.FILRefineFile, err)
	}
	text, err := runTrainCLI(t, "account", "fil-refine", dir, "--top", "7", "--quiet")
	if err != nil || !strings.Contains(text, "worst sample: dFIL") || !strings.Contains(text, "bootstrap CI") {
		t.Errorf("text: %v\n%s", err, text)
	}
	noTr := filepath.Join(t.TempDir(), "plain")
	if _, err := runTrainCLI(t, append(common, "--out", noTr)...); err != nil {
		t.Fatal(err)
	}
	if _, err := runTrainCLI(t, "account", "fil-refine", noTr, "--quiet"); err == nil || !strings.Contains(err.Error(), "--record-transcript") {
		t.Errorf("no transcript: %v", err)
	}
	sub := filepath.Join(t.TempDir(), "sub")
	if _, err := runTrainCLI(t, append(common, "--fil-rate", "0.5", "--record-transcript", "--out", sub)...); err != nil {
		t.Fatal(err)
	}
	if _, err := runTrainCLI(t, "account", "fil-refine", sub, "--quiet"); err == nil || !strings.Contains(err.Error(), "fil_rate") {
		t.Errorf("fil_rate 0.5: %v", err)
	}
}
