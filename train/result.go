package train

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/dpfil/dpfil/accounting"
	"github.com/dpfil/dpfil/internal/jsonfloat"
	"github.com/dpfil/dpfil/models"
)

// Result is what DIR/result.json holds. Values that are infinite (ε and ε₂ without
// noise, the FIL MSE bounds 1/dFIL when dFIL = 0) are written as JSON null and read
// back as +Inf (internal/jsonfloat's convention).
type Result struct {
	Config         Config    `json:"config"`
	TestAccuracy   float64   `json:"test_accuracy"`   // mean over repeats
	TestAccuracies []float64 `json:"test_accuracies"` // per repeat
	Epsilon        float64   `json:"epsilon"`         // at Config.Delta: Privacy.Epsilon (see Privacy for accountant, adjacency, sampling)
	RDPOrder2      float64   `json:"rdp_order2"`      // ε₂ for Theorem 1: proven order-2 RDP under replace-one
	MSEBoundRDP    float64   `json:"mse_bound_rdp"`   // 1/(4(e^ε₂ − 1)), Theorem 1 with the replace-one ε₂
	// RDPOrder2Adjacency names the adjacency of rdp_order2 and mse_bound_rdp
	// (replace-one, Theorem 1's), which differs from epsilon's (Privacy.Adjacency).
	RDPOrder2Adjacency string             `json:"rdp_order2_adjacency,omitempty"`
	Privacy            *accounting.Report `json:"privacy"` // what every privacy number holds for (null without noise)
	DFILMax            float64            `json:"dfil_max"`
	DFILMedian         float64            `json:"dfil_median"`
	DFILMean           float64            `json:"dfil_mean"`
	MSEBoundFILMax     float64            `json:"mse_bound_fil_max"`    // 1/dfil_max
	MSEBoundFILMedian  float64            `json:"mse_bound_fil_median"` // 1/dfil_median

	EpsilonOrder       float64            `json:"epsilon_order"`        // RDP order that attains the RDP ε (null when ε is not from RDP)
	Conversion         string             `json:"conversion"`           // RDP → (ε, δ) conversion used
	Sigma              float64            `json:"sigma"`                // noise multiplier σ used (solved when config.target_epsilon is set)
	NoiseMultiplierRDP float64            `json:"noise_multiplier_rdp"` // σ/c given to the RDP accountant
	ClipConstant       float64            `json:"clip_constant"`        // c: ‖g̃‖ ≤ c·C (1 for hard clipping)
	SampleRate         float64            `json:"sample_rate"`          // q = B/N
	Steps              int                `json:"steps"`                // T (resolved from epochs if given)
	Sampling           string             `json:"sampling"`             // poisson | uniform | shuffle
	FIL                bool               `json:"fil"`                  // whether FIL was accounted
	FILCoordsUsed      int                `json:"fil_coords_used"`      // k per sample and step (d when exact)
	FILRate            float64            `json:"fil_rate"`             // probability a batch member's FIL was computed (weighted 1/rate)
	FILInput           string             `json:"fil_input"`            // what FIL is taken w.r.t.: "raw_pixels" or "normalized_inputs"
	Kappa              float64            `json:"kappa"`                // FIL factor κ under the run's sampling (Privacy.Kappa)
	FILDelta           float64            `json:"fil_delta"`            // δ_f used for κ
	DFILQuantiles      map[string]float64 `json:"dfil_quantiles,omitempty"`
	// FILEstimator names the estimator behind dfil_max, dfil_median and their MSE
	// bounds (train/filrefine.go: the max of random-coordinate estimates is biased
	// upward; 'dpfil account fil-refine' gives the two-stage worst-sample value).
	FILEstimator     string         `json:"fil_estimator,omitempty"`
	TrainLoss        float64        `json:"train_loss"`         // final loss on the first ≤ 10 000 training samples, mean over repeats
	TrainAccuracy    float64        `json:"train_accuracy"`     // final training accuracy, mean over repeats
	TestLoss         float64        `json:"test_loss"`          // final test loss, mean over repeats
	PerClassAccuracy Floats         `json:"per_class_accuracy"` // test accuracy per class, mean over repeats (null: class absent)
	Repeats          []RepeatResult `json:"repeats"`
	NumParams        int            `json:"num_params"`
	InputDim         int            `json:"input_dim"`
	Dataset          DatasetInfo    `json:"dataset"`
	GitCommit        string         `json:"git_commit"` // VCS revision stamped into the binary ("" when none)
	Version          BuildVersion   `json:"dpfil"`      // dpfil's build version (build info, not the caller's git)
	Arch             *models.Arch   `json:"arch,omitempty"`
	ArchHash         string         `json:"arch_hash,omitempty"` // models.Arch.Hash of Arch
	ParamsNPZPath    string         `json:"params_npz_path,omitempty"`
	DFILPath         string         `json:"dfil_path,omitempty"` // file names inside the run directory
	ParamsPath       string         `json:"params_path,omitempty"`
	DFIL             []float64      `json:"-"` // per-sample dFIL averaged over repeats (nil when FIL is off)
	// Eta is η, the spectral-norm FIL, and its MSE bounds (config.fil_eta > 0).
	Eta *EtaResult `json:"eta,omitempty"`
	// LabelFIL is the FIL of the labels (config.fil_label).
	LabelFIL *LabelFILResult `json:"label_fil,omitempty"`
	// Tuning reports pretraining, pruning, freezing and learned noise (config.tuning).
	Tuning *TuningResult `json:"tuning,omitempty"`
	// Device counts the transfers and synchronisations of a run on a device, per step
	// (nil on the CPU; resident.go).
	Device *DeviceReport `json:"device,omitempty"`

	// Timings (the only fields that differ between identical runs).
	WallSeconds   float64 `json:"wall_seconds"`    // run time (steps, evaluations, checkpoints), summed over resumed segments
	StepSeconds   float64 `json:"step_seconds"`    // time in DP-SGD steps (gradients, FIL, noise, update)
	SamplesPerSec float64 `json:"samples_per_sec"` // batch samples per second of step time
}

// RepeatResult is one of the R independent runs.
type RepeatResult struct {
	Repeat           int               `json:"repeat"`
	InitSeed         uint64            `json:"init_seed"` // seed given to Model.Init
	TestAccuracy     float64           `json:"test_accuracy"`
	TestLoss         float64           `json:"test_loss"`
	PerClassAccuracy Floats            `json:"per_class_accuracy"`
	TrainLoss        float64           `json:"train_loss"`
	TrainAccuracy    float64           `json:"train_accuracy"`
	SamplesSeen      int64             `json:"samples_seen"` // Σ_t |B_t|
	DFILMax          float64           `json:"dfil_max"`
	DFILMedian       float64           `json:"dfil_median"`
	History          []EvalPoint       `json:"history,omitempty"`
	DFIL             []float64         `json:"-"` // per-sample dFIL of this repeat
	Params           []float32         `json:"-"` // final parameters
	Ledger           accounting.Ledger `json:"-"` // privacy events this repeat emitted

	// Per-sample η² and label dFIL / η² of this repeat (nil when off), and the
	// largest last-iteration relative change of the power iteration.
	Eta, LabelDFIL, LabelEta []float64 `json:"-"`
	EtaRelChange             float64   `json:"eta_rel_change,omitempty"`
}

// EvalPoint is one evaluation during training.
type EvalPoint struct {
	Step         int     `json:"step"`
	BatchLoss    float64 `json:"batch_loss"` // mean loss of the step's batch
	TestAccuracy float64 `json:"test_accuracy"`
	TestLoss     float64 `json:"test_loss"`
}

// DatasetInfo identifies the data a run used.
type DatasetInfo struct {
	Name    string `json:"name"`
	Source  string `json:"source"`
	SHA256  string `json:"sha256"`
	NTrain  int    `json:"n_train"`
	NTest   int    `json:"n_test"`
	Classes int    `json:"classes"`
	// TestSHA256 is the test part's content fingerprint, Fingerprint the split's
	// (data.Split.Fingerprint: what config.data_sha256 pins).
	TestSHA256  string   `json:"test_sha256,omitempty"`
	Fingerprint string   `json:"fingerprint,omitempty"`
	InputShape  []int    `json:"input_shape,omitempty"` // C, H, W
	ClassNames  []string `json:"class_names,omitempty"`
}

// Floats is a float64 slice whose NaN and infinite entries are JSON null, read back
// as NaN (internal/jsonfloat's Float).
type Floats []float64

// MarshalJSON writes non-finite entries as null.
func (f Floats) MarshalJSON() ([]byte, error) {
	if f == nil {
		return []byte("null"), nil
	}
	out := make([]jsonfloat.Float, len(f))
	for i, v := range f {
		out[i] = jsonfloat.Float(v)
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads null entries as NaN.
func (f *Floats) UnmarshalJSON(b []byte) error {
	var in []jsonfloat.Float
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	if in == nil {
		*f = nil
		return nil
	}
	*f = make(Floats, len(in))
	for i, v := range in {
		(*f)[i] = float64(v)
	}
	return nil
}

type resultAlias Result

// resultJSON shadows the possibly infinite fields of Result with nullable ones, and
// the dFIL statistics with ones left out when FIL is off (rather than written as 0).
type resultJSON struct {
	*resultAlias
	Epsilon           *float64 `json:"epsilon"`
	RDPOrder2         *float64 `json:"rdp_order2"`
	EpsilonOrder      *float64 `json:"epsilon_order"`
	MSEBoundFILMax    *float64 `json:"mse_bound_fil_max"`
	MSEBoundFILMedian *float64 `json:"mse_bound_fil_median"`
	DFILMax           *float64 `json:"dfil_max,omitempty"`
	DFILMedian        *float64 `json:"dfil_median,omitempty"`
	DFILMean          *float64 `json:"dfil_mean,omitempty"`
}

// ifFIL is &x when FIL was accounted, else nil (the field is left out).
func ifFIL(fil bool, x float64) *float64 {
	if !fil {
		return nil
	}
	return &x
}

// MarshalJSON writes infinite ε, ε₂ and FIL MSE bounds as null, and leaves
// dfil_max, dfil_median and dfil_mean out when FIL is off (fil false).
func (r Result) MarshalJSON() ([]byte, error) {
	a := resultAlias(r)
	return json.Marshal(resultJSON{
		resultAlias:       &a,
		Epsilon:           jsonfloat.Ptr(r.Epsilon),
		RDPOrder2:         jsonfloat.Ptr(r.RDPOrder2),
		EpsilonOrder:      jsonfloat.Ptr(r.EpsilonOrder),
		MSEBoundFILMax:    jsonfloat.Ptr(r.MSEBoundFILMax),
		MSEBoundFILMedian: jsonfloat.Ptr(r.MSEBoundFILMedian),
		DFILMax:           ifFIL(r.FIL, r.DFILMax),
		DFILMedian:        ifFIL(r.FIL, r.DFILMedian),
		DFILMean:          ifFIL(r.FIL, r.DFILMean),
	})
}

// UnmarshalJSON reads null ε, ε₂ and FIL MSE bounds back as +Inf, and absent dFIL
// statistics as 0.
func (r *Result) UnmarshalJSON(b []byte) error {
	var j resultJSON
	j.resultAlias = (*resultAlias)(r)
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	r.Epsilon = jsonfloat.Value(j.Epsilon, math.Inf(1))
	r.RDPOrder2 = jsonfloat.Value(j.RDPOrder2, math.Inf(1))
	r.EpsilonOrder = jsonfloat.Value(j.EpsilonOrder, math.Inf(1))
	r.MSEBoundFILMax = jsonfloat.Value(j.MSEBoundFILMax, math.Inf(1))
	r.MSEBoundFILMedian = jsonfloat.Value(j.MSEBoundFILMedian, math.Inf(1))
	r.DFILMax, r.DFILMedian, r.DFILMean = jsonfloat.Value(j.DFILMax, 0), jsonfloat.Value(j.DFILMedian, 0), jsonfloat.Value(j.DFILMean, 0)
	return nil
}

// WriteResult writes r to dir/result.json atomically.
func WriteResult(dir string, r *Result) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode result: %w", err)
	}
	return writeFileAtomic(filepath.Join(dir, ResultFile), append(b, '\n'))
}

// ReadResult reads dir/result.json.
func ReadResult(dir string) (*Result, error) {
	b, err := os.ReadFile(filepath.Join(dir, ResultFile))
	if err != nil {
		return nil, fmt.Errorf("read result: %w", err)
	}
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("read result %s: %w", filepath.Join(dir, ResultFile), err)
	}
	return &r, nil
}
