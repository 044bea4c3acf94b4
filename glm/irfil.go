package glm

import (
	"errors"
	"fmt"
	"math"
)

// IRFILOptions configures IRFIL (Hannun et al. 2021, Algorithm 1).
type IRFILOptions struct {
	// Config gives the loss, λ, bias and solver tolerance; its Weights and Init are
	// ignored (IRFIL starts from ω = 1).
	Config Config
	// Sigma is the output-perturbation noise; η_i = ‖J_i‖₂/σ.
	Sigma float64
	// Iters is the number of re-weighting iterations T.
	Iters int
	// ClampLo, ClampHi bound every weight after each normalised update (both 0: no
	// clamping). The clamp is applied after normalisation and the weights are not
	// renormalised afterwards, so a clamp can keep η from equalising fully.
	ClampLo, ClampHi float64
	// Test, if set, is used to report test accuracy per iteration.
	Test *Data
	// WithLabel takes η over (x_i, y_i), as Hannun et al. do (FILOptions.WithLabel).
	WithLabel bool
	// Workers for the per-example FIL (default GOMAXPROCS).
	Workers int
	// Progress, if set, receives each iteration's summary as it completes.
	Progress func(IRFILIteration)
}

// IRFILIteration summarises one iteration (0 = the unweighted model).
type IRFILIteration struct {
	Iter      int     `json:"iter"`
	EtaMean   float64 `json:"eta_mean"`
	EtaStd    float64 `json:"eta_std"`
	Spread    float64 `json:"spread"` // std/mean of η
	EtaMin    float64 `json:"eta_min"`
	EtaMax    float64 `json:"eta_max"`
	WeightMin float64 `json:"weight_min"`
	WeightMax float64 `json:"weight_max"`
	Clamped   int     `json:"clamped"` // weights hitting the clamp in this update
	GradNorm  float64 `json:"grad_norm"`
	TrainAcc  float64 `json:"train_accuracy"`
	TestAcc   float64 `json:"test_accuracy,omitempty"`
}

// IRFILResult is the outcome of IRFIL.
type IRFILResult struct {
	Iterations []IRFILIteration
	Weights    []float64 // final weights ω^T
	Eta        []float64 // final per-example η
	Model      *Model    // final model (w*, before perturbation)
}

// IRFIL runs iteratively reweighted Fisher information loss: starting from ω = 1 it
// alternates fitting the weighted objective Σ ω_i ℓ_i + (nλ/2)‖w‖² and the update
// ω_i ← n(ω_i/η_i) / Σ_j(ω_j/η_j), then clamps the weights to [ClampLo, ClampHi].
// Each refit is warm-started from the previous minimiser. The η used in the update is
// the weighted Jacobian's: J_i = −ω_i H_ω⁻¹ ∇_x∇_wℓ_i.
func IRFIL(data *Data, opt IRFILOptions) (*IRFILResult, error) {
	if data == nil || data.N == 0 {
		return nil, errors.New("irfil: empty data")
	}
	if opt.Iters < 0 {
		return nil, fmt.Errorf("irfil: iterations must be ≥ 0, got %d", opt.Iters)
	}
	clamp := opt.ClampLo != 0 || opt.ClampHi != 0
	if clamp && !(opt.ClampLo > 0 && opt.ClampHi >= opt.ClampLo && !math.IsInf(opt.ClampHi, 0)) {
		return nil, fmt.Errorf("irfil: clamp must satisfy 0 < lo ≤ hi < ∞, got [%v, %v]", opt.ClampLo, opt.ClampHi)
	}
	n := data.N
	wts := make([]float64, n)
	for i := range wts {
		wts[i] = 1
	}
	cfg := opt.Config
	cfg.Init = nil
	res := &IRFILResult{}
	var prev *Model
	clamped := 0
	for it := 0; it <= opt.Iters; it++ {
		cfg.Weights = wts
		if prev != nil {
			cfg.Init = prev.W
		}
		m, err := Fit(data, cfg)
		if err != nil {
			return nil, fmt.Errorf("irfil iteration %d: %w", it, err)
		}
		an, err := NewAnalysis(m)
		if err != nil {
			return nil, fmt.Errorf("irfil iteration %d: %w", it, err)
		}
		fil, err := an.PerExample(opt.Sigma, FILOptions{Workers: opt.Workers, WithLabel: opt.WithLabel})
		if err != nil {
			return nil, fmt.Errorf("irfil iteration %d: %w", it, err)
		}
		rec := IRFILIteration{Iter: it, GradNorm: m.GradNorm, Clamped: clamped,
			EtaMin: math.Inf(1), WeightMin: math.Inf(1)}
		for i, e := range fil.Eta {
			rec.EtaMean += e
			rec.EtaMin = math.Min(rec.EtaMin, e)
			rec.EtaMax = math.Max(rec.EtaMax, e)
			rec.WeightMin = math.Min(rec.WeightMin, wts[i])
			rec.WeightMax = math.Max(rec.WeightMax, wts[i])
		}
		rec.EtaMean /= float64(n)
		for _, e := range fil.Eta {
			rec.EtaStd += (e - rec.EtaMean) * (e - rec.EtaMean)
		}
		rec.EtaStd = math.Sqrt(rec.EtaStd / float64(n))
		rec.Spread = rec.EtaStd / rec.EtaMean
		if rec.TrainAcc, err = m.Accuracy(data, nil); err != nil {
			return nil, err
		}
		if opt.Test != nil {
			if rec.TestAcc, err = m.Accuracy(opt.Test, nil); err != nil {
				return nil, err
			}
		}
		res.Iterations = append(res.Iterations, rec)
		if opt.Progress != nil {
			opt.Progress(rec)
		}
		res.Eta, res.Model = fil.Eta, m
		prev = m
		if it == opt.Iters {
			break
		}
		// ω_i ← n (ω_i/η_i) / Σ_j ω_j/η_j, then clamp.
		next := make([]float64, n)
		sum := 0.0
		for i, e := range fil.Eta {
			if !(e > 0) {
				return nil, fmt.Errorf("irfil iteration %d: example %d has η = %v; cannot reweight", it, i, e)
			}
			next[i] = wts[i] / e
			sum += next[i]
		}
		clamped = 0
		for i := range next {
			next[i] *= float64(n) / sum
			if clamp {
				if next[i] < opt.ClampLo {
					next[i] = opt.ClampLo
					clamped++
				} else if next[i] > opt.ClampHi {
					next[i] = opt.ClampHi
					clamped++
				}
			}
		}
		wts = next
	}
	res.Weights = wts
	return res, nil
}
