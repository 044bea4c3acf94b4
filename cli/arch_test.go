package cli

import (
	"bytes"
	"encoding/json"
	"image"
	"image/png"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpfil/dpfil/internal/npy"
	"github.com/dpfil/dpfil/models"
	"github.com/dpfil/dpfil/train"
)

// squaresNPZ writes a 3-class dataset of 1×10×10 uint8 images (a bright square
// whose position is the class, on noise) with a test part, and returns one test
// image of each class.
func squaresNPZ(t *testing.T, path string) [][]byte {
	t.Helper()
	rng := rand.New(rand.NewPCG(5, 6))
	gen := func(n int) ([]byte, []int) {
		x := make([]byte, n*100)
		y := make([]int, n)
		for i := 0; i < n; i++ {
			c := i % 3
			y[i] = c
			for p := 0; p < 100; p++ {
				x[i*100+p] = byte(rng.IntN(50))
			}
			for r := 1 + 3*c; r < 4+3*c; r++ {
				for q := 6 - 2*c; q < 9-2*c; q++ {
					x[i*100+r*10+q] = byte(190 + rng.IntN(60))
				}
			}
		}
		return x, y
	}
	x, y := gen(300)
	xt, yt := gen(90)
	enc := func(b []byte, err error) []byte {
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var buf bytes.Buffer
	if err := npy.WriteNPZ(&buf, []npy.Entry{
		{Name: "x", NPY: enc(npy.EncodeUint8([]int{300, 1, 10, 10}, x))}, {Name: "y", NPY: enc(npy.EncodeInt64([]int{300}, y))},
		{Name: "x_test", NPY: enc(npy.EncodeUint8([]int{90, 1, 10, 10}, xt))}, {Name: "y_test", NPY: enc(npy.EncodeInt64([]int{90}, yt))},
	}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return [][]byte{xt[:100], xt[100:200], xt[200:300]}
}

const conv3ReLU = `# three convolutions with ReLU: not one of the built-in models
name: conv3-relu
layers:
  - {kind: conv, out: 6, kernel: 3, padding: same}
  - relu
  - {kind: conv, out: 8, kernel: 3, stride: 2, padding: same}
  - relu
  - {kind: conv, out: 8, kernel: 3}
  - relu
  - {kind: avgpool, kernel: 2, stride: 1}
  - flatten
  - {kind: dense}
`

// TestTrainArchEvalPredict is the CLI acceptance check: a YAML architecture
// that is none of the built-in models (three convolutions with ReLU) trains from the
// CLI on an NPZ dataset generated here; eval reproduces the reported test accuracy
// exactly; predict classifies an .npy batch and PNG images; --describe prints the
// network as text and as JSON.
func TestTrainArchEvalPredict(t *testing.T) {
	dir := t.TempDir()
	npz := filepath.Join(dir, "squares.npz")
	tests := squaresNPZ(t, npz)
	archFile := filepath.Join(dir, "conv3.yaml")
	if err := os.WriteFile(archFile, []byte(conv3ReLU), 0o644); err != nil {
		t.Fatal(err)
	}
	ds := "npz:" + npz

	out, _, err := execCLI(t, "train", "--arch", archFile, "--dataset", ds, "--describe")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"conv3-relu: input 1x10x10, 3 classes", "relu", "dense 3", "parameters: "} {
		if !strings.Contains(out, want) {
			t.Errorf("describe lacks %q:\n%s", want, out)
		}
	}
	out, _, err = execCLI(t, "train", "--arch", archFile, "--dataset", ds, "--describe", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var info models.ArchInfo
	if err := json.Unmarshal([]byte(out), &info); err != nil || info.Name != "conv3-relu" || len(info.Layers) != 9 || info.NumParams == 0 {
		t.Fatalf("describe --json: %v\n%s", err, out)
	}

	run := filepath.Join(dir, "run")
	out, _, err = execCLI(t, "train", "--arch", archFile, "--dataset", ds, "--steps", "40", "--batch", "50", "--lr", "0.5",
		"--sigma", "0.5", "--fil-coords", "4", "--out", run, "--quiet", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var res train.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if res.Config.Model != "conv3-relu" || res.Config.Arch == nil || res.ArchHash != info.Hash || res.Config.DataSHA256 != res.Dataset.Fingerprint {
		t.Errorf("result: model %q, hash %q (describe %q), pin %q vs %q", res.Config.Model, res.ArchHash, info.Hash, res.Config.DataSHA256, res.Dataset.Fingerprint)
	}
	if res.TestAccuracy < 0.5 {
		t.Errorf("test accuracy %v", res.TestAccuracy)
	}

	out, _, err = execCLI(t, "eval", "--run", run, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var ev train.EvalReport
	if err := json.Unmarshal([]byte(out), &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Reproduced == nil || !*ev.Reproduced || ev.Eval.Accuracy != res.TestAccuracy || ev.Eval.N != 90 || ev.Eval.Loss != res.TestLoss {
		t.Errorf("eval %+v; the run reported %v (loss %v)", ev, res.TestAccuracy, res.TestLoss)
	}
	out, _, err = execCLI(t, "eval", "--run", run)
	if err != nil || !strings.Contains(out, "reproduced exactly") {
		t.Errorf("eval summary: %v\n%s", err, out)
	}

	// predict: an .npy batch of the three test images and the same as PNG files.
	batch, err := npy.EncodeUint8([]int{3, 1, 10, 10}, append(append(append([]byte(nil), tests[0]...), tests[1]...), tests[2]...))
	if err != nil {
		t.Fatal(err)
	}
	npyPath := filepath.Join(dir, "batch.npy")
	if err := os.WriteFile(npyPath, batch, 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"predict", "--run", run, "--json", npyPath}
	for c, pix := range tests {
		img := image.NewGray(image.Rect(0, 0, 10, 10))
		copy(img.Pix, pix)
		var b bytes.Buffer
		if err := png.Encode(&b, img); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, "class"+string(rune('0'+c))+".png")
		if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, p)
	}
	out, _, err = execCLI(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	var pr train.PredictReport
	if err := json.Unmarshal([]byte(out), &pr); err != nil || len(pr.Predictions) != 6 {
		t.Fatalf("predict: %v\n%s", err, out)
	}
	for i := 0; i < 3; i++ {
		a, b := pr.Predictions[i], pr.Predictions[3+i]
		if a.Class != b.Class || a.Prob != b.Prob {
			t.Errorf("input %d: .npy gives %d (%v), PNG %d (%v)", i, a.Class, a.Prob, b.Class, b.Prob)
		}
	}
	out, _, err = execCLI(t, "predict", "--run", run, npyPath)
	if err != nil || !strings.Contains(out, "batch.npy[2]") {
		t.Errorf("predict summary: %v\n%s", err, out)
	}
}

// TestArchCLIRefusals: the CLI's clear refusals for architectures, runs and inputs.
func TestArchCLIRefusals(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("name: x\nlayers: [flatten, {kind: dense, units: 3}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	npz := filepath.Join(dir, "d.npz")
	squaresNPZ(t, npz)
	wrongSize := filepath.Join(dir, "small.png")
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, 5, 5))); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(wrongSize, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "run")
	if _, _, err := execCLI(t, "train", "--model", "linear", "--dataset", "npz:"+npz, "--steps", "2", "--batch", "10", "--fil-coords", "0",
		"--out", run, "--quiet"); err == nil || !strings.Contains(err.Error(), "takes 784 input values") {
		t.Errorf("linear on 10x10 data: %v", err)
	}
	mlpArch := filepath.Join(dir, "mlp.yaml")
	if err := os.WriteFile(mlpArch, []byte("name: tiny\nlayers: [flatten, {kind: dense, out: 8}, elu, dense]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := execCLI(t, "train", "--arch", mlpArch, "--dataset", "npz:"+npz, "--steps", "2", "--batch", "10", "--fil-coords", "0",
		"--out", run, "--quiet"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"train", "--arch", bad, "--dataset", "npz:" + npz, "--describe"}, `unknown layer key "units"`},
		{[]string{"train", "--arch", filepath.Join(dir, "none.yaml"), "--describe"}, "no such file"},
		{[]string{"train", "--arch", mlpArch, "--model", "mlp", "--describe"}, "none of the others can be"},
		{[]string{"train", "--resume", run, "--arch", mlpArch}, "[arch resume] were all set"},
		{[]string{"train", "--dataset", "npz:" + filepath.Join(dir, "missing.npz"), "--steps", "1"}, "no such file"},
		{[]string{"eval"}, `"run" not set`},
		{[]string{"eval", "--run", filepath.Join(dir, "nowhere")}, "does not exist"},
		{[]string{"eval", "--run", run, "--split", "all"}, "want test or train"},
		{[]string{"eval", "--run", run, "--dataset", "mnist-embedded"}, "has 1x28x28 inputs"},
		{[]string{"predict", "--run", run, wrongSize}, "the model takes 10x10"},
		{[]string{"predict", "--run", run, npz}, "not a PNG"},
	} {
		_, _, err := execCLI(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}

// TestExampleArchs: every architecture file in examples/ parses and resolves for
// MNIST-shaped data (binary digits for a one-logit model, zero_logit last), and
// describes through the CLI.
func TestExampleArchs(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "examples", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no example architectures: %v", err)
	}
	for _, f := range files {
		spec, err := models.LoadArchSpec(f)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		classes, dataset := 10, "mnist-embedded"
		if n := len(spec.Layers); n > 0 && spec.Layers[n-1].Kind == models.KindZeroLogit {
			classes, dataset = 2, "mnist01-embedded"
		}
		if _, err := spec.Resolve(models.Shape{C: 1, H: 28, W: 28}, classes); err != nil {
			t.Errorf("%s: %v", f, err)
		}
		if out, _, err := execCLI(t, "train", "--arch", f, "--dataset", dataset, "--describe"); err != nil || !strings.Contains(out, spec.Name) {
			t.Errorf("%s --describe: %v\n%s", f, err, out)
		}
	}
}
