package train

import (
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"sort"
	"strings"

	"github.com/dpfil/dpfil/data"
	"github.com/dpfil/dpfil/models"
)

// EvalRequest asks for the evaluation of a finished run's final parameters.
type EvalRequest struct {
	// Run is the run directory and Repeat the repeat whose parameters are used.
	Run    string
	Repeat int
	// Dataset and DataDir name the data ("": the run's own, which must not have
	// changed since the run); Split is "test" (default) or "train".
	Dataset, DataDir, Split string
	// Device is "cpu" (default) or "cuda".
	Device string
	// Logf, if set, receives the data loader's messages.
	Logf func(format string, args ...any)
	// Models are the program's registered models (LoadRunModels): a run of one of
	// them is evaluated with it, a run of a model the program lacks is refused.
	Models Registry
}

// EvalReport is the evaluation of a run's parameters on a dataset.
type EvalReport struct {
	Run        string     `json:"run"`
	Model      string     `json:"model"`
	ArchHash   string     `json:"arch_hash"`
	Repeat     int        `json:"repeat"`
	ParamsFile string     `json:"params_file"`
	Dataset    string     `json:"dataset"`
	Split      string     `json:"split"`
	SHA256     string     `json:"sha256"` // content fingerprint of the evaluated part
	ClassNames []string   `json:"class_names,omitempty"`
	Eval       Evaluation `json:"eval"`
	// Reported is the run's own test accuracy of this repeat, when the evaluated
	// data is the run's test part; Reproduced says whether Eval matches it exactly.
	Reported   *float64 `json:"reported_test_accuracy,omitempty"`
	Reproduced *bool    `json:"reproduced,omitempty"`
}

// EvaluateRun evaluates the final parameters of a finished run exactly as training
// reported them (Evaluate): accuracy, mean cross-entropy, per-class accuracy. On the
// run's own test part it also says whether the reported test accuracy is reproduced.
func EvaluateRun(req EvalRequest) (*EvalReport, error) {
	if req.Run == "" {
		return nil, errors.New("eval: no run directory")
	}
	if req.Split == "" {
		req.Split = "test"
	}
	if req.Split != "test" && req.Split != "train" {
		return nil, fmt.Errorf("eval: split %q, want test or train", req.Split)
	}
	fr, err := LoadRunModels(req.Run, req.Repeat, req.Models)
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	cfg := fr.Result.Config
	name, dir, own := req.Dataset, req.DataDir, req.Dataset == ""
	if own {
		name = cfg.Dataset
		if dir == "" {
			dir = cfg.DataDir
		}
	}
	ds, fingerprint, err := evalData(name, dir, req.Split, req.Logf)
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	if own && cfg.DataSHA256 != "" && fingerprint != cfg.DataSHA256 {
		return nil, fmt.Errorf("eval: dataset %s changed since the run (fingerprint %s, the run pinned %s)", name, fingerprint, cfg.DataSHA256)
	}
	ev, err := evaluateOn(fr, req.Device, ds)
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	out := &EvalReport{Run: req.Run, Model: fr.Arch.Name, ArchHash: fr.Arch.Hash(), Repeat: req.Repeat, ParamsFile: fr.ParamsFile,
		Dataset: name, Split: req.Split, SHA256: ds.SHA256, ClassNames: ds.ClassNames, Eval: ev}
	if own && req.Split == "test" && req.Repeat < len(fr.Result.Repeats) && fr.Result.Dataset.TestSHA256 == ds.SHA256 {
		rep := fr.Result.Repeats[req.Repeat].TestAccuracy
		same := rep == ev.Accuracy
		out.Reported, out.Reproduced = &rep, &same
	}
	return out, nil
}

// evalData loads the split of dataset name and returns it with the fingerprint of
// the whole dataset.
func evalData(name, dir, split string, logf func(string, ...any)) (*data.Dataset, string, error) {
	sp, err := data.Load(name, data.Options{DataDir: dir, Logf: logf})
	if err != nil {
		return nil, "", fmt.Errorf("load dataset %s: %w", name, err)
	}
	ds := sp.Test
	if split == "train" {
		ds = sp.Train
	}
	if ds == nil || ds.N == 0 {
		return nil, "", fmt.Errorf("dataset %s has no %s part", name, split)
	}
	return ds, sp.Fingerprint(), nil
}

// evaluateOn evaluates fr's parameters on ds with a model on device.
func evaluateOn(fr *FinishedRun, device string, ds *data.Dataset) (Evaluation, error) {
	m, err := runModel(fr, device)
	if err != nil {
		return Evaluation{}, err
	}
	if c, ok := m.(io.Closer); ok {
		defer c.Close()
	}
	return Evaluate(m, fr.Params, ds)
}

// runModel is the model of a finished run on device: its registered model (on the
// CPU), or its engine architecture's (openModel).
func runModel(fr *FinishedRun, device string) (models.Model, error) {
	if fr.Model == nil {
		return openModel(fr.Arch, device)
	}
	if device != "" && device != "cpu" {
		return nil, fmt.Errorf("device = %q, but model %s runs on the CPU", device, fr.Arch.Name)
	}
	return fr.Model, nil
}

// openModel is NewModel with "" meaning the CPU.
func openModel(arch models.Arch, device string) (models.Model, error) {
	if device == "" {
		device = "cpu"
	}
	return NewModel(arch, device)
}

// PredictRequest asks for the classes of inputs under a finished run's final
// parameters. A file is an image (PNG, JPEG, GIF) of exactly the model's size (gray
// for one channel, RGB for three), or an .npy array of shape (N, C, H, W) (or
// (C, H, W), (N, H, W), (H, W) when the shape allows), uint8 or floats in [0,1].
type PredictRequest struct {
	Run    string
	Repeat int
	Files  []string
	Device string // "cpu" (default) or "cuda"
	// Models are the program's registered models, as EvalRequest.Models.
	Models Registry
}

// Prediction is one input's prediction.
type Prediction struct {
	File  string    `json:"file"`
	Index int       `json:"index"` // position in an .npy batch (0 for an image)
	Class int       `json:"class"`
	Name  string    `json:"name,omitempty"` // class name when the run's data had them
	Prob  float64   `json:"prob"`
	Probs []float64 `json:"probs"` // softmax over the classes
}

// Top returns the k most probable classes, most probable first (ties: lower class
// first); k is clamped to [1, classes].
func (p Prediction) Top(k int) []int {
	order := make([]int, len(p.Probs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return p.Probs[order[a]] > p.Probs[order[b]] })
	return order[:min(max(k, 1), len(order))]
}

// Where names the input: the file, with its index for an .npy batch.
func (p Prediction) Where() string {
	if strings.EqualFold(filepath.Ext(p.File), ".npy") {
		return fmt.Sprintf("%s[%d]", p.File, p.Index)
	}
	return p.File
}

// PredictReport holds the predictions of a PredictRequest.
type PredictReport struct {
	Run         string       `json:"run"`
	Model       string       `json:"model"`
	Repeat      int          `json:"repeat"`
	Predictions []Prediction `json:"predictions"`
	// ClassNames are the run's class names (may be empty).
	ClassNames []string `json:"-"`
}

// Predict classifies the inputs of req.
func Predict(req PredictRequest) (*PredictReport, error) {
	if req.Run == "" {
		return nil, errors.New("predict: no run directory")
	}
	fr, err := LoadRunModels(req.Run, req.Repeat, req.Models)
	if err != nil {
		return nil, fmt.Errorf("predict: %w", err)
	}
	x, from, err := readInputs(req.Files, fr.Arch.Input)
	if err != nil {
		return nil, fmt.Errorf("predict: %w", err)
	}
	m, err := runModel(fr, req.Device)
	if err != nil {
		return nil, fmt.Errorf("predict: %w", err)
	}
	if c, ok := m.(io.Closer); ok {
		defer c.Close()
	}
	K := fr.Arch.Classes
	logits := make([]float32, len(from)*K)
	if err := m.Logits(fr.Params, x, len(from), logits); err != nil {
		return nil, fmt.Errorf("predict: %w", err)
	}
	names := fr.Result.Dataset.ClassNames
	res := &PredictReport{Run: req.Run, Model: fr.Arch.Name, Repeat: req.Repeat, ClassNames: names}
	for i, o := range from {
		p := softmax(logits[i*K : (i+1)*K])
		o.Probs, o.Class = p, argmax(p)
		o.Prob = p[o.Class]
		if o.Class < len(names) {
			o.Name = names[o.Class]
		}
		res.Predictions = append(res.Predictions, o)
	}
	return res, nil
}

// readInputs reads the inputs of files (images or .npy batches of shape in) and
// says where each came from.
func readInputs(files []string, in models.Shape) ([]float32, []Prediction, error) {
	var x []float32
	var from []Prediction
	for _, f := range files {
		if strings.EqualFold(filepath.Ext(f), ".npy") {
			n, v, err := data.ReadNPYBatch(f, in.C, in.H, in.W)
			if err != nil {
				return nil, nil, err
			}
			x = append(x, v...)
			for i := 0; i < n; i++ {
				from = append(from, Prediction{File: f, Index: i})
			}
			continue
		}
		v, err := data.ReadImage(f, in.C, in.H, in.W)
		if err != nil {
			return nil, nil, err
		}
		x = append(x, v...)
		from = append(from, Prediction{File: f})
	}
	return x, from, nil
}

// softmax returns the probabilities of a logit row (float64, max subtracted).
func softmax(z []float32) []float64 {
	mx := math.Inf(-1)
	for _, v := range z {
		mx = math.Max(mx, float64(v))
	}
	p := make([]float64, len(z))
	var s float64
	for i, v := range z {
		p[i] = math.Exp(float64(v) - mx)
		s += p[i]
	}
	for i := range p {
		p[i] /= s
	}
	return p
}

// argmax is the index of the largest value (the first of ties).
func argmax(p []float64) int {
	best := 0
	for c := range p {
		if p[c] > p[best] {
			best = c
		}
	}
	return best
}
