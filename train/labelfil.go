package train

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/dpfil/dpfil/models"
)

// Label-privacy FIL: the Fisher information the released gradients carry about a
// training sample's label, with the label taken as a continuous vector y ∈ R^K (the
// one-hot label, or a soft label), as the paper's reference code offers.
//
// Softmax cross-entropy is linear in y: ℓ(θ; x, y) = Σ_c y_c ℓ_c with
// ℓ_c = −log softmax(f_θ(x))_c, so the per-sample gradient is g(y) = Σ_c y_c g_c
// with g_c the gradient for the hard label c, and its Jacobian is ∂g/∂y = [g_0 … g_{K−1}]
// (P×K). Through the clip g̃ = s(‖g‖)·g, at the sample's one-hot label (g = g_y):
//
//	J_y[:, c] = ∂g̃/∂y_c = s·g_c + (ds/d‖g‖)·(⟨g, g_c⟩/‖g‖)·g,
//
// and everything needed is the K×K Gram matrix Γ_cc′ = ⟨g_c, g_c′⟩ (K first-order
// passes, no second-order derivative):
//
//	(J_yᵀJ_y)_cc′ = s²Γ_cc′ + s·(a_c′Γ_cy + a_cΓ_c′y) + a_c a_c′ Γ_yy,  a_c = ds·Γ_cy/‖g‖.
//
// One step's label FIM is I_t(y) = J_yᵀJ_y/(σC)²; over the run, as for the input,
// label dFIL = κ·Σ_t Tr(I_t(y))/K and label η² = κ·Σ_t ‖I_t(y)‖₂, with the MSE
// bounds E‖ŷ − y‖²/K ≥ 1/dFIL (unbiased attacker, Theorem 2 with d = K) and ≥ 1/η².

// labelChunkFloats bounds the per-class gradients held at once (K·chunk·P values).
const labelChunkFloats = 1 << 22

// LabelJacobianGram returns, for every sample s of the batch, the K×K matrix
// J_yᵀJ_y of its clipped gradient's Jacobian w.r.t. its label vector, at its one-hot
// label y[s] (row-major, K = the network's classes, out[s·K·K:]), computed in float64
// from the per-class gradients' Gram matrix.
func LabelJacobianGram[T models.Float](net *models.Network[T], params, x []T, y []int, batch int, clip models.Clip) ([]float64, error) {
	if net == nil {
		return nil, fmt.Errorf("label FIL: nil network")
	}
	if err := clip.Validate(); err != nil {
		return nil, fmt.Errorf("label FIL: %w", err)
	}
	d, p, k := net.InputDim(), net.NumParams(), net.Arch().Classes
	if batch < 0 || len(x) != batch*d || len(y) != batch {
		return nil, fmt.Errorf("label FIL: %d inputs of %d values and %d labels for a batch of %d", len(x), d, len(y), batch)
	}
	for s, c := range y {
		if c < 0 || c >= k {
			return nil, fmt.Errorf("label FIL: label %d of sample %d outside [0, %d)", c, s, k)
		}
	}
	out := make([]float64, batch*k*k)
	chunk := max(1, labelChunkFloats/(k*p))
	grads := make([][]T, k)
	yc := make([]int, chunk)
	gram := make([]float64, k*k)
	for s0 := 0; s0 < batch; s0 += chunk {
		n := min(chunk, batch-s0)
		xs := x[s0*d : (s0+n)*d]
		for c := 0; c < k; c++ {
			for i := range yc[:n] {
				yc[i] = c
			}
			g, _, err := net.PerSampleGrads(params, xs, yc[:n], n)
			if err != nil {
				return nil, fmt.Errorf("label FIL: gradients for label %d: %w", c, err)
			}
			grads[c] = g
		}
		for i := 0; i < n; i++ {
			for a := 0; a < k; a++ {
				ga := grads[a][i*p : (i+1)*p]
				for b := a; b < k; b++ {
					gb := grads[b][i*p : (i+1)*p]
					var dot float64
					for j := range ga {
						dot += float64(ga[j]) * float64(gb[j])
					}
					gram[a*k+b], gram[b*k+a] = dot, dot
				}
			}
			clippedLabelGram(clip, gram, k, y[s0+i], out[(s0+i)*k*k:(s0+i+1)*k*k])
		}
	}
	return out, nil
}

// clippedLabelGram writes J_yᵀJ_y (K×K) from the per-class Gram matrix gram at the
// one-hot label y (see the package comment above).
func clippedLabelGram(clip models.Clip, gram []float64, k, y int, out []float64) {
	gg := gram[y*k+y]
	norm := math.Sqrt(gg)
	s, ds := clip.Scale(norm)
	a := make([]float64, k)
	if norm > 0 {
		for c := range a {
			a[c] = ds * gram[c*k+y] / norm
		}
	}
	for c := 0; c < k; c++ {
		for c2 := 0; c2 < k; c2++ {
			out[c*k+c2] = s*s*gram[c*k+c2] + s*(a[c2]*gram[c*k+y]+a[c]*gram[c2*k+y]) + a[c]*a[c2]*gg
		}
	}
}

// symTraceMaxEig returns the trace and the largest eigenvalue of a symmetric k×k
// matrix (clamped at 0: J_yᵀJ_y is positive semi-definite).
func symTraceMaxEig(m []float64, k int) (trace, top float64, err error) {
	for c := 0; c < k; c++ {
		trace += m[c*k+c]
	}
	var es mat.EigenSym
	if !es.Factorize(mat.NewSymDense(k, append([]float64(nil), m...)), false) {
		return 0, 0, fmt.Errorf("label FIL: eigen-decomposition of the %d×%d label FIM failed", k, k)
	}
	vals := es.Values(nil)
	top = max(0, vals[len(vals)-1])
	return max(0, trace), top, nil
}

// labelStep adds, for the FIL members idx (inputs x, labels y) of a step, κ times
// their label-FIM trace and top eigenvalue (÷ (σC)², ÷ fil_rate) to the repeat's
// label accountants.
func (w *worker) labelStep(net *models.Network[float32], idx []int, x []float32, y []int) error {
	s := w.s
	k := s.arch.Classes
	g, err := LabelJacobianGram(net, w.p32, x, y, len(idx), s.clip)
	if err != nil {
		return err
	}
	scale := 1 / (s.priv.NoiseStd * s.priv.NoiseStd) / s.filRate
	tr := make([]float64, len(idx))
	top := make([]float64, len(idx))
	for j := range idx {
		t, e, err := symTraceMaxEig(g[j*k*k:(j+1)*k*k], k)
		if err != nil {
			return err
		}
		tr[j], top[j] = scale*t, scale*e
	}
	if err := w.st.LabelFIL.AddStep(idx, tr); err != nil {
		return fmt.Errorf("label FIL accounting: %w", err)
	}
	if err := w.st.LabelEta.AddStep(idx, top); err != nil {
		return fmt.Errorf("label FIL accounting: %w", err)
	}
	return nil
}
