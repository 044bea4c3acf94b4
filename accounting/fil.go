package accounting

import (
	"errors"
	"fmt"
	"math"
)

// KappaParams are the inputs of the FIL subsampling factor κ: sampling rate Q, noise
// multiplier Sigma, clipping constant ClipConstant c (‖g̃‖ ≤ c·C; 1 for hard
// clipping) and the per-step failure probability DeltaF (DefaultFILDelta).
type KappaParams struct {
	Q, Sigma, ClipConstant, DeltaF float64
}

// Kappa returns the FIL subsampling factor of Guo, Karrer, Chaudhuri & van der
// Maaten (2022, Theorem 4, eq. 3) for DP-SGD: ε₀ is the (ε₀, δ_f)-DP of one Gaussian
// step under replace-one adjacency (sensitivity 2cC, noise σC), taken from the
// analytic Gaussian mechanism (Balle & Wang 2018; GaussianEpsilon), which is valid
// for every σ, and κ = q/(q + (1−q)e^{−ε₀}). The paper's classical
// ε₀ = c·2·√(2 ln(1.25/δ_f))/σ, valid only when it is below 1, is KappaClassic.
func Kappa(p KappaParams) (float64, error) {
	eps0, err := KappaEpsilon0(p)
	if err != nil {
		return 0, err
	}
	return kappaFrom(p.Q, p.Sigma, eps0)
}

// KappaEpsilon0 is the ε₀ that Kappa uses: the analytic Gaussian mechanism's ε at
// δ_f for sensitivity/noise ratio 2c/σ (p.Q is not used).
func KappaEpsilon0(p KappaParams) (float64, error) {
	if err := p.check(); err != nil {
		return 0, err
	}
	eps0, err := GaussianEpsilon(2*p.ClipConstant/p.Sigma, p.DeltaF)
	if err != nil {
		return 0, fmt.Errorf("FIL ε₀: %w", err)
	}
	return eps0, nil
}

// KappaClassicEpsilon0 is the paper's classical Gaussian-mechanism ε₀ =
// c·2·√(2 ln(1.25/δ_f))/σ (Dwork & Roth 2014, Theorem A.1), a valid (ε₀, δ_f)
// guarantee only when it is below 1.
func KappaClassicEpsilon0(p KappaParams) (float64, error) {
	if err := p.check(); err != nil {
		return 0, err
	}
	return p.ClipConstant * 2 * math.Sqrt(2*math.Log(1.25/p.DeltaF)) / p.Sigma, nil
}

// KappaClassic is Kappa with KappaClassicEpsilon0, kept to compare with the paper.
func KappaClassic(p KappaParams) (float64, error) {
	eps0, err := KappaClassicEpsilon0(p)
	if err != nil {
		return 0, err
	}
	return kappaFrom(p.Q, p.Sigma, eps0)
}

func (p KappaParams) check() error {
	if err := checkQSigma(0, p.Sigma); err != nil {
		return err
	}
	if math.IsNaN(p.ClipConstant) || math.IsInf(p.ClipConstant, 0) || p.ClipConstant <= 0 {
		return fmt.Errorf("clipping constant c = %v must be finite and > 0", p.ClipConstant)
	}
	if math.IsNaN(p.DeltaF) || p.DeltaF <= 0 || p.DeltaF >= 1 {
		return fmt.Errorf("FIL failure probability delta_f = %v must be in (0, 1)", p.DeltaF)
	}
	return nil
}

func kappaFrom(q, sigma, eps0 float64) (float64, error) {
	if err := checkQSigma(q, sigma); err != nil {
		return 0, err
	}
	if q == 0 {
		return 0, nil
	}
	return q / (q + (1-q)*math.Exp(-eps0)), nil
}

// DefaultFILDelta returns the default per-step failure probability δ_f = 1/(T·N), so
// that the total failure probability over T steps is at most 1/N. It returns
// NaN when T or N is not positive.
func DefaultFILDelta(steps, n int) float64 {
	if steps <= 0 || n <= 0 {
		return math.NaN()
	}
	return 1 / (float64(steps) * float64(n))
}

// FIL accumulates per-sample diagonal Fisher information leakage over DP-SGD steps
// (Guo et al. eq. 4): dFIL(z) = κ·Σ_t Tr(I_t(z))/D over the steps whose batch held z.
// Sum[i] holds the accumulated dFIL of sample i (already multiplied by Kappa and
// divided by D), so Kappa may be changed between steps for heterogeneous schedules.
// All fields are exported so that the accountant can be checkpointed.
type FIL struct {
	N     int       `json:"n"`
	D     int       `json:"d"`
	Kappa float64   `json:"kappa"`
	Sum   []float64 `json:"sum"`
	Steps int       `json:"steps"`
}

// NewFIL returns an empty FIL accountant for n training samples of dimension d.
func NewFIL(n, d int, kappa float64) (*FIL, error) {
	if n <= 0 {
		return nil, fmt.Errorf("number of training samples %d must be > 0", n)
	}
	if d <= 0 {
		return nil, fmt.Errorf("data dimension %d must be > 0", d)
	}
	if err := checkKappaFIL(kappa); err != nil {
		return nil, err
	}
	return &FIL{N: n, D: d, Kappa: kappa, Sum: make([]float64, n)}, nil
}

func checkKappaFIL(kappa float64) error {
	if math.IsNaN(kappa) || kappa < 0 || kappa > 1 {
		return fmt.Errorf("FIL subsampling factor kappa = %v must be in [0, 1]", kappa)
	}
	return nil
}

// AddStep adds one step: for batch member idx[j] the trace of that step's FIM
// Tr(I_t(z)) = Tr(J_tᵀJ_t)/(σC)² (traceI[j]); dFIL(z) += Kappa·Tr(I_t(z))/D.
// Indices must be in [0, N) and traces finite and ≥ 0; on error nothing is added.
func (f *FIL) AddStep(idx []int, traceI []float64) error {
	if f == nil {
		return errors.New("nil FIL accountant")
	}
	if len(f.Sum) != f.N || f.D <= 0 {
		return fmt.Errorf("FIL accountant is inconsistent: N=%d, D=%d, len(Sum)=%d", f.N, f.D, len(f.Sum))
	}
	if err := checkKappaFIL(f.Kappa); err != nil {
		return err
	}
	if len(idx) != len(traceI) {
		return fmt.Errorf("FIL step: %d indices but %d traces", len(idx), len(traceI))
	}
	for j, i := range idx {
		if i < 0 || i >= f.N {
			return fmt.Errorf("FIL step: sample index %d out of range [0, %d)", i, f.N)
		}
		if t := traceI[j]; math.IsNaN(t) || math.IsInf(t, 0) || t < 0 {
			return fmt.Errorf("FIL step: trace %v for sample %d must be finite and ≥ 0", t, i)
		}
	}
	s := f.Kappa / float64(f.D)
	for j, i := range idx {
		f.Sum[i] += s * traceI[j]
	}
	f.Steps++
	return nil
}

// DFIL returns a copy of the per-sample dFIL (0 for samples never sampled).
func (f *FIL) DFIL() []float64 {
	if f == nil {
		return nil
	}
	return append([]float64(nil), f.Sum...)
}

// CheckDFILRuns checks repeated runs of per-sample dFIL before they are merged or
// summarised: at least one run, all of the same non-zero length, every value finite
// and ≥ 0. It returns the common length; errors start with what (the caller's name).
func CheckDFILRuns(what string, runs ...[]float64) (int, error) {
	if len(runs) == 0 {
		return 0, fmt.Errorf("%s: no runs", what)
	}
	n := len(runs[0])
	if n == 0 {
		return 0, fmt.Errorf("%s: run 0 has no samples", what)
	}
	for r, run := range runs {
		if len(run) != n {
			return 0, fmt.Errorf("%s: run %d has %d samples, run 0 has %d", what, r, len(run), n)
		}
		for i, v := range run {
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				return 0, fmt.Errorf("%s: run %d sample %d has invalid dFIL %v", what, r, i, v)
			}
		}
	}
	return n, nil
}

// MeanDFIL merges repeated runs: the per-sample mean of dFIL over runs (the Monte
// Carlo estimate of eq. 4). The runs must pass CheckDFILRuns.
func MeanDFIL(runs ...[]float64) ([]float64, error) {
	n, err := CheckDFILRuns("MeanDFIL", runs...)
	if err != nil {
		return nil, err
	}
	out := make([]float64, n)
	for _, run := range runs {
		for i, v := range run {
			out[i] += v
		}
	}
	k := float64(len(runs))
	for i := range out {
		out[i] /= k
	}
	return out, nil
}
