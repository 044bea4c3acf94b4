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
	"github.com/dpfil/dpfil/train/fil"
)

// Result is what DIR/result.json holds. A number that is not finite is written as
// JSON null, and null reads back as the one value each field documents: +Inf for ε,
// ε₂, the ε order and the MSE bounds (infinite when nothing is noised or dFIL = 0),
// NaN for every other number (internal/jsonfloat's Inf and Float). This file is the
// one reader of result files: sweep reads a record's headline numbers through
// Metrics, and what it writes reads back to the same bytes (TestResultRoundTrip).
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
	FILEstimator string `json:"fil_estimator,omitempty"`
	// SqrtDFIL is the mean, median and max of per-sample √dFIL per repeat, averaged
	// over the repeats: the statistic Edmunds (2024)'s tables print as "dFIL"
	// (fil.SqrtStats). Nil when FIL is off.
	SqrtDFIL *fil.SqrtStats `json:"sqrt_dfil,omitempty"`
	// FILTwoStage is the two-stage worst-sample estimate of a run trained with
	// config.fil_refine_top (nil otherwise); its full report is FILRefineFile.
	FILTwoStage      *TwoStageFIL   `json:"fil_two_stage,omitempty"`
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

// UnmarshalJSON reads a result written by MarshalJSON: null ε, ε₂, ε order and MSE
// bounds as +Inf, a null accuracy or dFIL statistic as NaN, absent dFIL statistics
// (FIL off) as 0.
func (r *Result) UnmarshalJSON(b []byte) error {
	var j resultJSON
	j.resultAlias = (*resultAlias)(r)
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	var m Metrics
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	r.TestAccuracy, r.Epsilon, r.RDPOrder2, r.MSEBoundRDP = m.TestAccuracy, m.Epsilon, m.RDPOrder2, m.MSEBoundRDP
	r.DFILMax, r.DFILMedian, r.DFILMean = m.DFILMax, m.DFILMedian, m.DFILMean
	r.MSEBoundFILMax, r.MSEBoundFILMedian = m.MSEBoundFILMax, m.MSEBoundFILMedian
	r.EpsilonOrder = jsonfloat.Value(j.EpsilonOrder, math.Inf(1))
	return nil
}

// Metrics are the headline numbers of a result.json under their JSON names, read
// with the file's null convention (see Result): null is +Inf for ε, ε₂ and the MSE
// bounds and NaN for the accuracy and the dFIL statistics; an absent field is 0 (the
// dFIL statistics of a run without FIL). sweep reads its records through it.
type Metrics struct {
	TestAccuracy      float64
	Epsilon           float64
	RDPOrder2         float64
	MSEBoundRDP       float64
	DFILMax           float64
	DFILMedian        float64
	DFILMean          float64
	MSEBoundFILMax    float64
	MSEBoundFILMedian float64
	// MSEBoundFILTwoStage is fil_two_stage.mse_bound_max: the worst-sample bound
	// from the two-stage estimate; 0 when the run has none (not refined).
	MSEBoundFILTwoStage float64
}

// metricsJSON is Metrics' JSON form: each field's type says what null reads as.
type metricsJSON struct {
	TestAccuracy      jsonfloat.Float `json:"test_accuracy"`
	Epsilon           jsonfloat.Inf   `json:"epsilon"`
	RDPOrder2         jsonfloat.Inf   `json:"rdp_order2"`
	MSEBoundRDP       jsonfloat.Inf   `json:"mse_bound_rdp"`
	DFILMax           jsonfloat.Float `json:"dfil_max"`
	DFILMedian        jsonfloat.Float `json:"dfil_median"`
	DFILMean          jsonfloat.Float `json:"dfil_mean"`
	MSEBoundFILMax    jsonfloat.Inf   `json:"mse_bound_fil_max"`
	MSEBoundFILMedian jsonfloat.Inf   `json:"mse_bound_fil_median"`
	FILTwoStage       *twoStageBound  `json:"fil_two_stage,omitempty"`
}

// twoStageBound is the part of result.json's fil_two_stage that Metrics reads.
type twoStageBound struct {
	MSEBoundMax jsonfloat.Inf `json:"mse_bound_max"`
}

// MarshalJSON writes the metrics, null for numbers that are not finite.
func (m Metrics) MarshalJSON() ([]byte, error) {
	j := metricsJSON{jsonfloat.Float(m.TestAccuracy), jsonfloat.Inf(m.Epsilon), jsonfloat.Inf(m.RDPOrder2),
		jsonfloat.Inf(m.MSEBoundRDP), jsonfloat.Float(m.DFILMax), jsonfloat.Float(m.DFILMedian), jsonfloat.Float(m.DFILMean),
		jsonfloat.Inf(m.MSEBoundFILMax), jsonfloat.Inf(m.MSEBoundFILMedian), nil}
	if m.MSEBoundFILTwoStage != 0 {
		j.FILTwoStage = &twoStageBound{jsonfloat.Inf(m.MSEBoundFILTwoStage)}
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads the headline numbers of a result (other fields are ignored).
func (m *Metrics) UnmarshalJSON(b []byte) error {
	var j metricsJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*m = Metrics{float64(j.TestAccuracy), float64(j.Epsilon), float64(j.RDPOrder2), float64(j.MSEBoundRDP),
		float64(j.DFILMax), float64(j.DFILMedian), float64(j.DFILMean), float64(j.MSEBoundFILMax), float64(j.MSEBoundFILMedian), 0}
	if j.FILTwoStage != nil {
		m.MSEBoundFILTwoStage = float64(j.FILTwoStage.MSEBoundMax)
	}
	return nil
}

// Metrics is r's headline numbers.
func (r *Result) Metrics() Metrics {
	m := Metrics{r.TestAccuracy, r.Epsilon, r.RDPOrder2, r.MSEBoundRDP, r.DFILMax, r.DFILMedian, r.DFILMean,
		r.MSEBoundFILMax, r.MSEBoundFILMedian, 0}
	if r.FILTwoStage != nil {
		m.MSEBoundFILTwoStage = r.FILTwoStage.MSEBoundMax
	}
	return m
}

// filSummaryJSON reads an fil.Summary of result.json (η², label dFIL)
// with the file's null convention: null statistics and quantiles are NaN, null MSE
// bounds +Inf (accounting writes both as null; encoding/json alone would read 0).
type filSummaryJSON struct {
	Count          int                        `json:"count"`
	Max            jsonfloat.Float            `json:"max"`
	Median         jsonfloat.Float            `json:"median"`
	Mean           jsonfloat.Float            `json:"mean"`
	Min            jsonfloat.Float            `json:"min"`
	Quantiles      map[string]jsonfloat.Float `json:"quantiles"`
	MSEBoundMax    jsonfloat.Inf              `json:"mse_bound_max"`
	MSEBoundMedian jsonfloat.Inf              `json:"mse_bound_median"`
}

// summary is the FILSummary read.
func (j filSummaryJSON) summary() fil.Summary {
	var q map[string]float64
	if j.Quantiles != nil {
		q = make(map[string]float64, len(j.Quantiles))
		for k, v := range j.Quantiles {
			q[k] = float64(v)
		}
	}
	return fil.Summary{Count: j.Count, Max: float64(j.Max), Median: float64(j.Median), Mean: float64(j.Mean),
		Min: float64(j.Min), Quantiles: q, MSEBoundMax: float64(j.MSEBoundMax), MSEBoundMedian: float64(j.MSEBoundMedian)}
}

// UnmarshalJSON reads "eta" with its summary's nulls (see filSummaryJSON).
func (e *EtaResult) UnmarshalJSON(b []byte) error {
	type plain EtaResult
	j := struct {
		*plain
		EtaSq filSummaryJSON `json:"eta_sq"`
	}{plain: (*plain)(e)}
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	e.EtaSq = j.EtaSq.summary()
	return nil
}

// UnmarshalJSON reads "label_fil" with its summaries' nulls (see filSummaryJSON).
func (l *LabelFILResult) UnmarshalJSON(b []byte) error {
	type plain LabelFILResult
	j := struct {
		*plain
		DFIL  filSummaryJSON `json:"dfil"`
		EtaSq filSummaryJSON `json:"eta_sq"`
	}{plain: (*plain)(l)}
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	l.DFIL, l.EtaSq = j.DFIL.summary(), j.EtaSq.summary()
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
