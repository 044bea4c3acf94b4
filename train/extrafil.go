package train

import (
	"fmt"
	"path/filepath"

	"github.com/dpfil/dpfil/accounting"
	"github.com/dpfil/dpfil/models"
	"github.com/dpfil/dpfil/train/fil"
)

// The run-level plumbing of η (eta.go) and label FIL (labelfil.go): accountants in
// the repeat state, the per-step hook, the result and the files.

// Files of a run directory written when η or label FIL are on.
const (
	EtaFile       = "eta.npy"        // per-sample η² (κ·Σ_t ‖J_t‖₂²/(σC)²), mean over repeats
	LabelDFILFile = "label_dfil.npy" // per-sample label dFIL
	LabelEtaFile  = "label_eta.npy"  // per-sample label η²
)

// EtaResult is result.json's "eta": the spectral-norm FIL of every training sample.
type EtaResult struct {
	Iterations int `json:"iterations"` // power iterations per FIL member and step (config.fil_eta)
	// EtaSq summarises η²(z) over the training samples (mean over repeats): max,
	// median, quantiles, and the Theorem 2 bounds mse_bound_max = 1/max η² (the
	// worst-protected sample) and mse_bound_median. 1/η² ≤ 1/dFIL in exact
	// arithmetic: it bounds the MSE of every unbiased attacker whatever the direction.
	EtaSq fil.Summary `json:"eta_sq"`
	// MaxRelChange is the largest relative change of ‖J‖₂² in the last power
	// iteration over every sample, step and repeat: small means converged (power
	// iteration approaches ‖J‖₂² from below, so η² can only be under-estimated).
	MaxRelChange float64   `json:"max_rel_change"`
	Path         string    `json:"path,omitempty"`
	PerSample    []float64 `json:"-"`
}

// LabelFILResult is result.json's "label_fil": the FIL of each sample's label taken
// as a continuous one-hot vector of K = classes values.
type LabelFILResult struct {
	Classes int `json:"classes"`
	// DFIL: κ·Σ_t Tr(I_t(y))/K per sample, MSE bound E‖ŷ−y‖²/K ≥ 1/dFIL.
	DFIL fil.Summary `json:"dfil"`
	// EtaSq: κ·Σ_t ‖I_t(y)‖₂ per sample, MSE bound ≥ 1/η².
	EtaSq        fil.Summary `json:"eta_sq"`
	DFILPath     string      `json:"dfil_path,omitempty"`
	EtaPath      string      `json:"eta_path,omitempty"`
	PerSample    []float64   `json:"-"` // label dFIL
	PerSampleEta []float64   `json:"-"`
}

// extraFILOn reports whether η or label FIL are accounted.
func (s *setup) extraFILOn() bool { return s.cfg.FILEta > 0 || s.cfg.FILLabel }

// prepareExtraFIL finds the engine network η and label FIL run on (they use its
// tangent and input-gradient passes) and the input scale of the FIL directions.
func (s *setup) prepareExtraFIL() error {
	if !s.extraFILOn() {
		return nil
	}
	nm, ok := s.model.(interface {
		Network() *models.Network[float32]
	})
	if !ok {
		return fmt.Errorf("fil_eta / fil_label: model %s on device %s does not expose the engine network they need; use --device cpu", s.arch.Name, s.cfg.Device)
	}
	s.net = nm.Network()
	s.etaScale = filInputScale(s.arch, s.cfg.FILNormalizedInputs)
	return nil
}

// initExtraFIL creates (st new) or checks (st from a checkpoint) the accountants.
func (s *setup) initExtraFIL(st *repeatState, fresh bool) error {
	type acc struct {
		p  **accounting.FIL
		on bool
		d  int
	}
	k := s.arch.Classes
	for _, a := range []acc{{&st.Eta, s.cfg.FILEta > 0, 1}, {&st.LabelFIL, s.cfg.FILLabel, k}, {&st.LabelEta, s.cfg.FILLabel, 1}} {
		if fresh {
			if a.on {
				f, err := accounting.NewFIL(s.n, a.d, s.kappa)
				if err != nil {
					return fmt.Errorf("FIL accounting: %w", err)
				}
				*a.p = f
			}
			continue
		}
		f := *a.p
		if (f != nil) != a.on || f != nil && (f.N != s.n || f.D != a.d || len(f.Sum) != s.n) {
			return fmt.Errorf("checkpoint η / label FIL state does not fit the run")
		}
	}
	return nil
}

// extraFILStep runs η and label FIL for the FIL members of a step.
func (w *worker) extraFILStep(idx []int, x []float32, y []int) error {
	if len(idx) == 0 {
		return nil
	}
	if w.s.cfg.FILEta > 0 {
		if err := w.etaStep(w.s.net, idx, x, y); err != nil {
			return err
		}
	}
	if w.s.cfg.FILLabel {
		if err := w.labelStep(w.s.net, idx, x, y); err != nil {
			return err
		}
	}
	return nil
}

// finishExtraFIL copies a finished repeat's per-sample values into its result.
func (w *worker) finishExtraFIL(rr *RepeatResult) {
	rr.Eta, rr.LabelDFIL, rr.LabelEta = w.st.Eta.DFIL(), w.st.LabelFIL.DFIL(), w.st.LabelEta.DFIL()
	rr.EtaRelChange = w.st.EtaRelChange
}

// extraFILResult averages η and label FIL over the repeats into res.
func (s *setup) extraFILResult(res *Result, done []RepeatResult) error {
	mean := func(get func(rr RepeatResult) []float64) ([]float64, error) {
		runs := make([][]float64, len(done))
		for i, rr := range done {
			runs[i] = get(rr)
		}
		return accounting.MeanDFIL(runs...)
	}
	if s.cfg.FILEta > 0 {
		m, err := mean(func(rr RepeatResult) []float64 { return rr.Eta })
		if err != nil {
			return fmt.Errorf("η accounting: %w", err)
		}
		e := &EtaResult{Iterations: s.cfg.FILEta, EtaSq: fil.Summarize(m), PerSample: m}
		for _, rr := range done {
			e.MaxRelChange = max(e.MaxRelChange, rr.EtaRelChange)
		}
		res.Eta = e
	}
	if s.cfg.FILLabel {
		m, err := mean(func(rr RepeatResult) []float64 { return rr.LabelDFIL })
		if err != nil {
			return fmt.Errorf("label FIL accounting: %w", err)
		}
		me, err := mean(func(rr RepeatResult) []float64 { return rr.LabelEta })
		if err != nil {
			return fmt.Errorf("label FIL accounting: %w", err)
		}
		res.LabelFIL = &LabelFILResult{Classes: s.arch.Classes, DFIL: fil.Summarize(m), EtaSq: fil.Summarize(me),
			PerSample: m, PerSampleEta: me}
	}
	return nil
}

// writeExtraFIL writes eta.npy, label_dfil.npy and label_eta.npy.
func writeExtraFIL(dir string, res *Result) error {
	if e := res.Eta; e != nil {
		if err := fil.Save(filepath.Join(dir, EtaFile), e.PerSample); err != nil {
			return fmt.Errorf("save η: %w", err)
		}
		e.Path = EtaFile
	}
	if l := res.LabelFIL; l != nil {
		if err := fil.Save(filepath.Join(dir, LabelDFILFile), l.PerSample); err != nil {
			return fmt.Errorf("save label dFIL: %w", err)
		}
		if err := fil.Save(filepath.Join(dir, LabelEtaFile), l.PerSampleEta); err != nil {
			return fmt.Errorf("save label η: %w", err)
		}
		l.DFILPath, l.EtaPath = LabelDFILFile, LabelEtaFile
	}
	return nil
}
