package main

import (
	"bytes"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpfil/dpfil/cli"
)

// TestCLIWithGraphModel builds this program with the go tool and runs it end to end
// as a user would: train the registered Gorgonia model (sigmoid, residual, max-pool)
// with FIL, evaluate the run (the graph rebuilt from this code reproduces the
// reported accuracy), classify an image with it, and sweep a 2-run grid naming
// model: my-graph, whose runs report dFIL with the estimator named. The dpfil command
// line without the model refuses the run, naming the model it was trained with.
func TestCLIWithGraphModel(t *testing.T) {
	tmp := t.TempDir()
	exe := filepath.Join(tmp, "gorgonia-cli")
	if out, err := exec.Command("go", "build", "-o", exe, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	run := func(v any, args ...string) {
		t.Helper()
		c := exec.Command(exe, args...)
		c.Dir = tmp
		var out, errb bytes.Buffer
		c.Stdout, c.Stderr = &out, &errb
		if err := c.Run(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, errb.String())
		}
		if err := json.Unmarshal(out.Bytes(), v); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out.String())
		}
	}

	var res struct {
		Config struct {
			Model string `json:"model"`
		} `json:"config"`
		FIL        bool    `json:"fil"`
		DFILMax    float64 `json:"dfil_max"`
		DFILMedian float64 `json:"dfil_median"`
		Privacy    struct {
			Epsilon    float64 `json:"epsilon"`
			Accountant string  `json:"accountant"`
		} `json:"privacy"`
	}
	run(&res, "train", "--model", "my-graph", "--fil-coords", "4", "--steps", "3", "--batch", "20", "--train-subset", "200", "--out", "g", "--json", "--quiet")
	if !strings.HasPrefix(res.Config.Model, "gorgonia-graph:my-graph@") || !res.FIL || !(res.DFILMax > 0) || res.DFILMedian > res.DFILMax ||
		!(res.Privacy.Epsilon > 0) || res.Privacy.Accountant == "" {
		t.Fatalf("train: %+v", res)
	}

	var ev struct {
		Model      string `json:"model"`
		Reproduced *bool  `json:"reproduced"`
		Eval       struct {
			N int `json:"n"`
		} `json:"eval"`
	}
	run(&ev, "eval", "--run", "g", "--json")
	if ev.Model != res.Config.Model || ev.Reproduced == nil || !*ev.Reproduced || ev.Eval.N == 0 {
		t.Errorf("eval: %+v", ev)
	}

	img := image.NewGray(image.Rect(0, 0, 28, 28)) // a "1": a bright vertical bar
	for y := 4; y < 24; y++ {
		img.SetGray(13, y, color.Gray{Y: 255})
		img.SetGray(14, y, color.Gray{Y: 255})
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "one.png"), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var pr struct {
		Model       string `json:"model"`
		Predictions []struct {
			Class int       `json:"class"`
			Probs []float64 `json:"probs"`
		} `json:"predictions"`
	}
	run(&pr, "predict", "--run", "g", "one.png", "--json")
	if pr.Model != res.Config.Model || len(pr.Predictions) != 1 || len(pr.Predictions[0].Probs) != 10 {
		t.Fatalf("predict: %+v", pr)
	}
	sum := 0.0
	for _, p := range pr.Predictions[0].Probs {
		sum += p
	}
	if c := pr.Predictions[0].Class; c < 0 || c > 9 || math.Abs(sum-1) > 1e-9 {
		t.Errorf("predict: class %d, probabilities sum to %v", c, sum)
	}

	grid := "name: graph\nbase: {model: my-graph, train_subset: 100, batch: 20, steps: 2, fil_coords: 4}\ngrid: {sigma: [0.5, 2]}\n"
	if err := os.WriteFile(filepath.Join(tmp, "grid.yaml"), []byte(grid), 0o644); err != nil {
		t.Fatal(err)
	}
	var sw struct {
		Ran    int `json:"ran"`
		Points []struct {
			Hash           string   `json:"hash"`
			Epsilon        *float64 `json:"epsilon"`
			MSEBoundFILMax *float64 `json:"mse_bound_fil_max"`
		} `json:"points"`
	}
	run(&sw, "sweep", "run", "grid.yaml", "--out", "sw", "--json", "--quiet")
	if sw.Ran != 2 || len(sw.Points) != 2 {
		t.Fatalf("sweep: %+v", sw)
	}
	for _, p := range sw.Points {
		if p.Epsilon == nil || !(*p.Epsilon > 0) || p.MSEBoundFILMax == nil || !(*p.MSEBoundFILMax > 0) {
			t.Errorf("sweep point %s: ε %v, FIL bound %v", p.Hash, p.Epsilon, p.MSEBoundFILMax)
		}
		var fil struct {
			Estimator string `json:"estimator"`
			Summary   struct {
				Count int     `json:"count"`
				Max   float64 `json:"max"`
			} `json:"summary"`
		}
		run(&fil, "account", "fil", filepath.Join("sw", "runs", p.Hash), "--json")
		if !strings.Contains(fil.Estimator, "random-coordinate estimate") || !strings.Contains(fil.Estimator, "k = 4 of d = 784") ||
			fil.Summary.Count != 100 || !(fil.Summary.Max > 0) {
			t.Errorf("run %s: dFIL estimator %q, summary %+v", p.Hash, fil.Estimator, fil.Summary)
		}
	}

	root, err := cli.NewRoot(cli.Options{}) // the dpfil binary: no registered models
	if err != nil {
		t.Fatal(err)
	}
	root.SetArgs([]string{"eval", "--run", filepath.Join(tmp, "g")})
	root.SetOut(&bytes.Buffer{})
	root.SetErr(&bytes.Buffer{})
	if err := root.Execute(); err == nil || !strings.Contains(err.Error(), "model "+res.Config.Model+" was registered by the program that trained it") {
		t.Errorf("dpfil eval of the graph run: %v", err)
	}
}
