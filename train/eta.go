package train

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dpfil/dpfil/models"
)

// η: the spectral-norm Fisher information leakage (Guo et al. Sec. 5, Theorem 2).
//
// One DP-SGD step releases Σ_i g̃_i + N(0, (σC)²I); for a batch member z its FIM is
// I_t(z) = J_tᵀJ_t/(σC)² with J_t = ∂g̃_t/∂x (P×D). Besides the trace (dFIL, which
// samples pixel coordinates), the paper and its reference code report the spectral
// norm: η_t² = ‖I_t(z)‖₂ = ‖J_t‖₂²/(σC)². It is computed here without forming J by
// power iteration on JᵀJ: J v is a forward-over-reverse JVP of the per-sample
// gradient along the input direction v followed by the clip's JVP
// (models.Network.Tangent, models.ClipJVP), and Jᵀu is the input gradient of the
// clipped dot ⟨u, g̃(x)⟩ (models.Network.InputGradOfClippedDot).
//
// Over the run, η²(z) = κ·Σ_t η_t²(z) (steps where z was in the batch, FIL members
// weighted 1/fil_rate). Since ‖Σ_t A_t‖₂ ≤ Σ_t ‖A_t‖₂ this is an upper bound on the
// spectral norm of the whole run's (κ-scaled) FIM, so 1/η² is a valid — the
// worst-direction, hence weaker — form of Theorem 2: MSE ≥ d/Tr(I) ≥ 1/‖I‖₂ ≥ 1/η².
//
// Power iteration approaches ‖J‖₂² from below (each iterate is a lower bound), so a
// run should use enough iterations; SpectralResult.RelChange reports the last
// iteration's relative change per sample as the convergence diagnostic.

// streamEta seeds the power iteration's start vectors: one PCG per repeat and step
// (no state to checkpoint; the FIL members it serves are drawn from the checkpointed
// coordinate stream).
const streamEta uint64 = 0x657461 // "eta"

// SpectralResult is the outcome of ClippedJacobianSpectral for a batch.
type SpectralResult struct {
	// SqNorm[s] is the estimate of ‖J_s‖₂², the largest eigenvalue of J_sᵀJ_s, after
	// the last iteration: ‖J_sᵀJ_s v‖ for the unit iterate v before it (a lower bound
	// that increases to ‖J_s‖₂²).
	SqNorm []float64
	// RelChange[s] is |λ_k − λ_{k−1}|/λ_k of the last iteration (0 when it could not
	// be measured: one iteration, or J_s = 0).
	RelChange []float64
	// Vec holds the final unit iterates (batch×D): the estimated top right singular
	// vectors (in the input space, scaled back when inScale was given).
	Vec []float64
	// Iterations is the number of applications of JᵀJ done.
	Iterations int
}

// ClippedJacobianSpectral estimates, for each sample s of the batch, ‖J_s‖₂² where
// J_s = ∂g̃(x_s)/∂x_s is the Jacobian of its clipped gradient w.r.t. its input, by
// iters power iterations on J_sᵀJ_s (each one JVP and one vector-Jacobian product of
// the whole batch). v0 holds batch×D start vectors (nil: all ones); they need not be
// normalised. tol > 0 stops early once every sample's relative change is below it.
// inScale, when not nil (len D), takes the Jacobian w.r.t. inputs u with x = μ + inScale⊙u
// (e.g. the output of a leading Normalize layer, scale = its std): J ← J·diag(inScale).
// Products are computed in T, norms and the normalisation in float64.
func ClippedJacobianSpectral[T models.Float](net *models.Network[T], params, x []T, y []int, batch int, clip models.Clip,
	iters int, tol float64, v0 []float64, inScale []float64) (*SpectralResult, error) {
	if net == nil {
		return nil, fmt.Errorf("spectral norm: nil network")
	}
	if err := clip.Validate(); err != nil {
		return nil, fmt.Errorf("spectral norm: %w", err)
	}
	d, p := net.InputDim(), net.NumParams()
	switch {
	case iters < 1:
		return nil, fmt.Errorf("spectral norm: %d power iterations, want ≥ 1", iters)
	case batch < 0 || len(x) != batch*d || len(y) != batch:
		return nil, fmt.Errorf("spectral norm: %d inputs of %d values and %d labels for a batch of %d", len(x), d, len(y), batch)
	case v0 != nil && len(v0) != batch*d:
		return nil, fmt.Errorf("spectral norm: %d start values, want %d", len(v0), batch*d)
	case inScale != nil && len(inScale) != d:
		return nil, fmt.Errorf("spectral norm: input scale of %d values, want %d", len(inScale), d)
	case math.IsNaN(tol) || tol < 0:
		return nil, fmt.Errorf("spectral norm: tolerance %v must be ≥ 0", tol)
	}
	res := &SpectralResult{SqNorm: make([]float64, batch), RelChange: make([]float64, batch), Vec: make([]float64, batch*d)}
	if batch == 0 {
		return res, nil
	}
	v := res.Vec
	if v0 != nil {
		copy(v, v0)
	} else {
		for i := range v {
			v[i] = 1
		}
	}
	for s := 0; s < batch; s++ {
		if normalize(v[s*d:(s+1)*d]) == 0 {
			return nil, fmt.Errorf("spectral norm: start vector of sample %d is zero or not finite", s)
		}
	}
	xdot := make([]T, batch*d)
	u := make([]T, batch*p)
	prev := make([]float64, batch)
	for it := 1; it <= iters; it++ {
		for i, vi := range v {
			if inScale != nil {
				vi *= inScale[i%d]
			}
			xdot[i] = T(vi)
		}
		tg, err := net.Tangent(params, x, y, batch, 1, xdot, nil, false)
		if err != nil {
			return nil, fmt.Errorf("spectral norm: J v: %w", err)
		}
		for s := 0; s < batch; s++ {
			models.ClipJVP(clip, tg.Grads[s*p:(s+1)*p], tg.GradDots[s*p:(s+1)*p], u[s*p:(s+1)*p])
		}
		w, err := net.InputGradOfClippedDot(params, x, y, batch, u, clip)
		if err != nil {
			return nil, fmt.Errorf("spectral norm: Jᵀu: %w", err)
		}
		converged := true
		for s := 0; s < batch; s++ {
			vs := v[s*d : (s+1)*d]
			for i := range vs {
				vs[i] = float64(w[s*d+i])
				if inScale != nil {
					vs[i] *= inScale[i]
				}
			}
			lam := normalize(vs) // ‖JᵀJ v‖ for the previous unit v
			if lam == 0 {        // J v = 0: keep the previous direction, λ = 0
				res.SqNorm[s], res.RelChange[s] = 0, 0
				for i := range vs {
					vs[i] = 0
				}
				vs[0] = 1
				continue
			}
			res.SqNorm[s] = lam
			if it > 1 {
				res.RelChange[s] = math.Abs(lam-prev[s]) / lam
				if !(res.RelChange[s] <= tol) {
					converged = false
				}
			} else {
				converged = false
			}
			prev[s] = lam
		}
		res.Iterations = it
		if tol > 0 && converged {
			break
		}
	}
	return res, nil
}

// normalize scales v to unit norm and returns its former norm (0, leaving v
// unchanged, when it is zero or not finite).
func normalize(v []float64) float64 {
	var ss float64
	for _, x := range v {
		ss += x * x
	}
	n := math.Sqrt(ss)
	if n == 0 || math.IsNaN(n) || math.IsInf(n, 0) {
		return 0
	}
	for i := range v {
		v[i] /= n
	}
	return n
}

// filInputScale is the input scale of the FIL directions: nil for raw pixels, or the
// per-pixel std of the leading Normalize layers when FIL is taken w.r.t. the
// normalised inputs (SetFILNormalizedInputs).
func filInputScale(arch models.Arch, normalized bool) []float64 {
	if !normalized {
		return nil
	}
	hw := arch.Input.H * arch.Input.W
	d := arch.Input.C * hw
	scale := make([]float64, d)
	for i := range scale {
		scale[i] = 1
	}
	any := false
	for _, l := range arch.Layers {
		if l.Kind == models.KindFlatten {
			continue
		}
		if l.Kind != models.KindNormalize {
			break
		}
		any = true
		for i := range scale {
			if c := i / hw; c < len(l.Std) {
				scale[i] *= l.Std[c]
			}
		}
	}
	if !any {
		return nil
	}
	return scale
}

// etaStep computes, for the FIL members idx (inputs x, labels y) of step t, each
// one's ‖J_t‖₂²/(σC)²/fil_rate and adds κ times it to the repeat's η² accountant.
func (w *worker) etaStep(net *models.Network[float32], idx []int, x []float32, y []int) error {
	s := w.s
	nb := len(idx)
	r := rand.New(rand.NewPCG(deriveSeed(s.cfg.Seed, w.st.Repeat, streamEta), uint64(w.st.Step)))
	v0 := make([]float64, nb*s.d)
	for i := range v0 {
		v0[i] = r.NormFloat64()
	}
	sp, err := ClippedJacobianSpectral(net, w.p32, x, y, nb, s.clip, s.cfg.FILEta, 0, v0, s.etaScale)
	if err != nil {
		return fmt.Errorf("η: %w", err)
	}
	scale := 1 / (s.priv.NoiseStd * s.priv.NoiseStd) / s.filRate
	vals := make([]float64, nb)
	for j, lam := range sp.SqNorm {
		vals[j] = scale * lam
		w.st.EtaRelChange = max(w.st.EtaRelChange, sp.RelChange[j])
	}
	if err := w.st.Eta.AddStep(idx, vals); err != nil {
		return fmt.Errorf("η accounting: %w", err)
	}
	return nil
}
