package train

import (
	"fmt"

	"github.com/dpfil/dpfil/accounting"
)

// Privacy is a run's privacy parameters, resolved once when the run is prepared
// (ResolvePrivacy: σ solved for target_epsilon, then turned into the effective σ of
// learned noise) and only read after: the trainer's noise, its privacy events, κ,
// the FIL normalisation, the progress ε and the report all take them from here.
//
// Two scales of the Gaussian noise, never to be confused:
//   - Sigma σ is the noise scale of the configuration and flags: the trainer adds
//     N(0, σ²C²I) to the sum of clipped gradients (NoiseStd = σC);
//   - NoiseMultiplier is σ/c (accounting.NoiseMultiplier), the noise standard
//     deviation over the add-remove sensitivity c·C of one clipped gradient (c = 1
//     for hard clipping, ≈ 1.115 for smooth clipping): what every privacy event and
//     accountant takes. "Noise multiplier" means σ/c everywhere in dpfil.
type Privacy struct {
	Sigma           float64 // σ; 0 = no noise (no privacy claim)
	Clip            float64 // C
	ClipConstant    float64 // c: ‖g̃‖ ≤ c·C
	NoiseMultiplier float64 // σ/c
	NoiseStd        float64 // σC, the standard deviation of each released coordinate's noise

	N, Batch, Steps int     // records, nominal batch B, steps T
	Q               float64 // sampling rate B/N
	Sampling        accounting.Sampling
	// Adjacency is the relation ε is reported under: the sampling's default
	// (accounting.DefaultAdjacency).
	Adjacency  accounting.Adjacency
	Accountant string  // auto | pld | rdp (Config.Accountant)
	Delta      float64 // δ of ε
	FILDelta   float64 // κ's δ_f (Config.FILDelta or its default 1/(T·N))
}

// ResolvePrivacy resolves cfg's privacy parameters for a training set of n records
// (steps from cfg.ResolveSteps): σ as given, or with cfg.TargetEpsilon the smallest
// σ whose reported ε is at most it (accounting.CalibrateNoise, the calibration the
// attacks use too). It does not apply learned noise (the run does: σ_eff = βσ).
func ResolvePrivacy(cfg Config, n int) (Privacy, error) {
	c, err := ClipConstant(cfg.ClipMode)
	if err != nil {
		return Privacy{}, err
	}
	steps := cfg.ResolveSteps(n)
	if steps < 1 {
		return Privacy{}, fmt.Errorf("epochs = %v gives no steps", cfg.Epochs)
	}
	return resolvePrivacy(cfg, n, steps, c, nil, func(string, ...any) {})
}

// resolvePrivacy builds the Privacy of a run of steps steps on n records with clip
// constant c; tune (nil: none) turns the σ given or calibrated into the effective σ
// of learned noise; logf receives the calibration's line.
func resolvePrivacy(cfg Config, n, steps int, c float64, tune func(sigma float64) float64, logf func(string, ...any)) (Privacy, error) {
	p := Privacy{Sigma: cfg.Sigma, Clip: cfg.Clip, ClipConstant: c, N: n, Batch: cfg.Batch, Steps: steps,
		Q: float64(cfg.Batch) / float64(n), Accountant: cfg.Accountant, Delta: cfg.Delta, FILDelta: cfg.FILDelta}
	var err error
	if p.Sampling, err = accounting.ParseSampling(cfg.Sampling); err != nil {
		return Privacy{}, fmt.Errorf("config: %w", err)
	}
	p.Adjacency = accounting.DefaultAdjacency(p.Sampling)
	if cfg.TargetEpsilon > 0 {
		nm, err := accounting.CalibrateNoise(p.dpsgd().LedgerAt, p.reportOptions(), cfg.TargetEpsilon)
		if err != nil {
			return Privacy{}, fmt.Errorf("target_epsilon: %w", err)
		}
		p.Sigma = nm * c
		logf("target ε = %g at δ = %g: σ = %.6g (noise multiplier σ/c = %.6g)", cfg.TargetEpsilon, cfg.Delta, p.Sigma, nm)
	}
	if tune != nil {
		p.Sigma = tune(p.Sigma)
	}
	p.NoiseMultiplier = accounting.NoiseMultiplier(p.Sigma, c)
	p.NoiseStd = p.Sigma * p.Clip
	if p.FILDelta == 0 {
		p.FILDelta = accounting.DefaultFILDelta(steps, n)
	}
	return p, nil
}

// Noisy reports whether the run adds noise (and so makes a privacy claim).
func (p Privacy) Noisy() bool { return p.Sigma > 0 }

// dpsgd describes the run's releases for the accountants.
func (p Privacy) dpsgd() accounting.DPSGD {
	return accounting.DPSGD{Sampling: p.Sampling, N: p.N, Batch: p.Batch, Steps: p.Steps, NoiseMultiplier: p.NoiseMultiplier}
}

// reportOptions are the accounting options of the run (κ's δ_f is added by
// privacy).
func (p Privacy) reportOptions() accounting.ReportOptions {
	adj := p.Adjacency
	return accounting.ReportOptions{Delta: p.Delta, Accountant: p.Accountant, Adjacency: &adj}
}

// Ledger is the ledger of the whole run, equal to the one its steps emit.
func (p Privacy) Ledger() (accounting.Ledger, error) { return p.dpsgd().Ledger() }

// Report derives the privacy report of a run with these parameters from the
// ledger it emitted (the result's privacy block).
func (p Privacy) Report(l accounting.Ledger) (*accounting.Report, error) {
	opt := p.reportOptions()
	opt.FILDelta, opt.ClipConstant = p.FILDelta, p.ClipConstant
	r, err := accounting.NewReport(l, opt)
	if err != nil {
		return nil, fmt.Errorf("privacy accounting: %w", err)
	}
	return r, nil
}

// privacy derives the run's privacy report from the ledger the run emitted.
func (s *setup) privacy(l accounting.Ledger) (*accounting.Report, error) { return s.priv.Report(l) }

// emit records the privacy event of step t (0-based), if it starts one.
func (w *worker) emit(t int) error {
	if !w.s.priv.Noisy() {
		return nil
	}
	e, ok := w.s.priv.dpsgd().StepEvent(t)
	if !ok {
		return nil
	}
	if err := w.ledger.Add(e, 1); err != nil {
		return err
	}
	return w.progress.Compose(e)
}
