package cli

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/dpfil/dpfil/models/enginebench"
)

func runBenchCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, _, err := execCLI(t, args...)
	return out, err
}

func TestBenchEngineJSON(t *testing.T) {
	tests := []struct {
		model  string
		oracle string
	}{
		{"linear", "--oracle=true"},
		{"mnist-cnn", "--oracle=false"},
	}
	for _, tc := range tests {
		t.Run(tc.model, func(t *testing.T) {
			out, err := runBenchCLI(t, "bench", "engine", "--model", tc.model, "--batch", "4", "--coords", "3",
				"--seconds", "0", tc.oracle, "--json")
			if err != nil {
				t.Fatal(err)
			}
			var r enginebench.Report
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatalf("not one JSON object: %v\n%s", err, out)
			}
			if r.Model != tc.model || r.Batch != 4 || r.Coords != 3 || r.Params <= 0 {
				t.Errorf("header %+v", r)
			}
			for name, b := range map[string]enginebench.Rate{"grad": r.Grad, "fil": r.FIL} {
				if !(b.SamplesPerS > 0) || b.Samples < 4 || !(b.FLOPsPerSample > 0) || !(b.FloorSamplesPerS > 0) || !(b.TimesFloor > 0) ||
					!(b.CPUSeconds > 0) || !(b.TimesFloorCPU > 0) {
					t.Errorf("%s: %+v", name, b)
				}
			}
			if !(r.FIL.FLOPsPerSample > r.Grad.FLOPsPerSample) {
				t.Errorf("FIL FLOPs %v not above gradient FLOPs %v", r.FIL.FLOPsPerSample, r.Grad.FLOPsPerSample)
			}
			if (r.Oracle != nil) != (tc.oracle == "--oracle=true") {
				t.Errorf("oracle result present = %v with %s", r.Oracle != nil, tc.oracle)
			}
			if r.Oracle != nil && !(r.GradSpeedupVsOracle > 0 && r.GradSpeedupVsOracleCPU > 0) {
				t.Errorf("speedup %v", r.GradSpeedupVsOracle)
			}
		})
	}
}

func TestBenchEngineHumanAndErrors(t *testing.T) {
	out, err := runBenchCLI(t, "bench", "engine", "--model", "mlp", "--batch", "2", "--coords", "2", "--seconds", "0", "--oracle=false")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "FIL step (k = 2)") || !strings.Contains(out, "per-sample gradients") || !strings.Contains(out, "conv algorithm direct") {
		t.Errorf("human output:\n%s", out)
	}
	out, err = runBenchCLI(t, "bench", "engine", "--model", "mlp", "--batch", "2", "--coords", "2", "--seconds", "0", "--oracle=false", "--conv-algo", "auto")
	if err != nil || !strings.Contains(out, "conv algorithm auto") {
		t.Errorf("--conv-algo auto: %v\n%s", err, out)
	}
	for _, args := range [][]string{
		{"--conv-algo", "fft"},
		{"--model", "nope"},
		{"--batch", "0"},
		{"--coords", "-1"},
		{"--seconds", "-1"},
		{"--batch", "2", "--fil-batch", "3"},
	} {
		a := append([]string{"bench", "engine", "--oracle=false", "--seconds", "0"}, args...)
		if _, err := runBenchCLI(t, a...); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}

// Without the dpfil_cuda build tag, --device cuda explains how to get a GPU binary.
func TestBenchEngineNoCUDA(t *testing.T) {
	if _, err := runBenchCLI(t, "bench", "engine", "--model", "mlp", "--seconds", "0", "--oracle=false", "--device", "cuda"); err == nil || !strings.Contains(err.Error(), "make cuda") {
		t.Errorf("--device cuda without GPU support: %v", err)
	}
}

func TestBenchScaling(t *testing.T) {
	dir := t.TempDir()
	arch := dir + "/narrow.yaml"
	spec := "name: narrow\ninput: [1, 28, 28]\nclasses: 10\nlayers:\n  - {kind: conv, out: 4, kernel: 3, stride: 2, padding: same}\n  - tanh\n  - flatten\n  - {kind: dense}\n"
	if err := os.WriteFile(arch, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := runBenchCLI(t, "bench", "scaling", "--arch", arch, "--batches", "2,4", "--widths", "1,2", "--width-batch", "2",
		"--coords", "1,2", "--fil-batch", "1", "--seconds", "0", "--plot-dir", dir, "--plot-format", "svg", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var r enginebench.ScalingReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, out)
	}
	if r.Arch != "narrow" || len(r.Batch) != 2 || len(r.Width) != 2 || len(r.FIL) != 2 || len(r.Plots) != 4 {
		t.Fatalf("report %+v", r)
	}
	if r.Width[1].Arch != "narrow-x2" || r.Width[1].Params <= r.Width[0].Params {
		t.Errorf("width points %+v", r.Width)
	}
	for _, c := range [][]string{
		{"bench", "scaling", "--arch", dir + "/missing.yaml"},
		{"bench", "scaling", "--coords", "785"},
		{"bench", "scaling", "--model", "nope"},
		{"bench", "scaling", "--batches", "0"},
	} {
		if _, err := runBenchCLI(t, c...); err == nil {
			t.Errorf("%v: no error", c)
		}
	}
}
