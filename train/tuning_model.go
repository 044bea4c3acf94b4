package train

import (
	"fmt"
	"io"
	"math"

	"github.com/dpfil/dpfil/models"
)

// tunedModel is the model the trainer sees when tuning is on: initialisation from
// the pretrained (and pruned) parameters, gradients and FIL restricted to the released
// coordinates, FIL in the metric of the learned noise.
type tunedModel struct {
	base models.Model
	t    *tuning
}

func (m *tunedModel) Arch() models.Arch { return m.base.Arch() }
func (m *tunedModel) NumParams() int    { return m.base.NumParams() }
func (m *tunedModel) InputDim() int     { return m.base.InputDim() }

// Close releases the base model's resources (device memory) when it holds any.
func (m *tunedModel) Close() error {
	if c, ok := m.base.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// Init returns the repeat's pretrained (and pruned) parameters. On an error it
// returns the plain initialisation; startTuning, which the trainer calls next,
// repeats the computation and reports the error.
func (m *tunedModel) Init(seed uint64) []float32 {
	tr, err := m.t.repeat(seed)
	if err != nil {
		return m.base.Init(seed)
	}
	return append([]float32(nil), tr.params...)
}

func (m *tunedModel) Logits(params, x []float32, n int, out []float32) error {
	return m.base.Logits(params, x, n, out)
}

// mask returns the released coordinates of the current repeat (nil: all).
func (m *tunedModel) mask() []bool {
	if m.t.cur == nil {
		return nil
	}
	return m.t.cur.mask
}

// ClippedGradSum clips each sample's gradient restricted to the released coordinates
// (frozen coordinates are neither clipped against nor summed).
func (m *tunedModel) ClippedGradSum(params, x []float32, y []int, clip models.Clip, sum []float32, losses []float64) error {
	if m.t.perturbActive() {
		return m.t.perturbedClippedGradSum(params, x, y, clip, sum, losses)
	}
	mask := m.mask()
	if mask == nil {
		return m.base.ClippedGradSum(params, x, y, clip, sum, losses)
	}
	return clippedSumOf("masked clipped gradients", m.t.net, params, x, y, m.base.InputDim(), clip, sum, losses, nil,
		func(_ int, g []float32, v []float64) {
			for i, on := range mask {
				v[i] = 0
				if on {
					v[i] = float64(g[i])
				}
			}
		})
}

// clippedSumOf writes Σ_s CLIP(v_s) over the batch to sum (accumulated in float64)
// and the samples' losses to losses, where released(s, g, v) writes to v (P values,
// P = len(sum)) what sample s (index in the batch) releases, g being its gradient.
// The per-sample gradients come from net in chunks of 64 samples; what names the
// sum in errors.
func clippedSumOf(what string, net *models.Network[float32], params, x []float32, y []int, D int, clip models.Clip, sum []float32, losses []float64,
	chunkHook func(s0, c int, grads []float32), released func(s int, g []float32, v []float64)) error {
	P, batch := len(sum), len(y)
	if P != net.NumParams() || len(losses) != batch || len(x) != batch*D {
		return fmt.Errorf("%s: buffers of %d, %d, %d values for %d samples", what, len(sum), len(losses), len(x), batch)
	}
	acc := make([]float64, P)
	v := make([]float64, P)
	const chunk = 64
	for s0 := 0; s0 < batch; s0 += chunk {
		c := min(chunk, batch-s0)
		grads, ls, err := net.PerSampleGrads(params, x[s0*D:(s0+c)*D], y[s0:s0+c], c)
		if err != nil {
			return err
		}
		if chunkHook != nil {
			chunkHook(s0, c, grads)
		}
		for s := 0; s < c; s++ {
			released(s0+s, grads[s*P:(s+1)*P], v)
			ss := 0.0
			for _, vi := range v {
				ss += vi * vi
			}
			sc, _ := clip.Scale(math.Sqrt(ss))
			for i, vi := range v {
				acc[i] += sc * vi
			}
			losses[s0+s] = float64(ls[s])
		}
	}
	for i, a := range acc {
		sum[i] = float32(a)
	}
	return nil
}

// FILSqNorms returns, per sample, Σ_j e_jᵀ J̃ᵀ M J̃ e_j over its coordinates j: J̃ is the
// Jacobian of the sample's clipped released gradient (frozen coordinates removed
// before clipping) and M = β²σ²C²·Σ⁻¹ = I − Σ_q c_q u_q u_qᵀ the metric of the
// released noise (I for isotropic noise), so that the trainer's (d/k)·Σ/(σ_eff C)² is
// the unbiased estimate of Tr(J̃ᵀΣ⁻¹J̃). The isotropic part Σ_j ‖J̃e_j‖² is the engine's
// (or, with frozen coordinates, maskedSqNorms'); the learned part subtracts
// Σ_q c_q (J̃ᵀu_q)_j², where J̃ᵀu_q = ∇_x⟨u_q, g̃⟩ comes from one parameter-tangent pass
// per direction (learnedTerms).
func (m *tunedModel) FILSqNorms(params, x []float32, y []int, clip models.Clip, coords [][]int, out []float64) error {
	if m.t.perturbActive() {
		return m.t.perturbedFILSqNorms(params, x, y, coords, out)
	}
	mask := m.mask()
	nf := m.t.noise
	shaped := nf != nil && len(nf.u) > 0
	if mask == nil {
		if err := m.base.FILSqNorms(params, x, y, clip, coords, out); err != nil {
			return err
		}
	} else if err := m.maskedSqNorms(params, x, y, clip, coords, out, mask); err != nil {
		return err
	}
	if !shaped {
		return nil
	}
	return m.learnedTerms(params, x, y, clip, coords, out, mask, nf)
}

// maskedSqNorms writes Σ_j ‖J̃ e_j‖² with J̃ the Jacobian of the clipped masked gradient.
// With g the masked gradient, ġ its masked tangent along e_j, s = s(‖g‖) the clip scale
// and coef = s'(‖g‖)·gᵀġ/‖g‖, the clipped tangent is s·ġ + coef·g, whose squared norm
// s²‖ġ‖² + 2·s·coef·gᵀġ + coef²‖g‖² needs one pass over the parameters.
func (m *tunedModel) maskedSqNorms(params, x []float32, y []int, clip models.Clip, coords [][]int, out []float64, mask []bool) error {
	P := m.t.p
	mk := make([]float64, P) // 1 on released coordinates
	for i, on := range mask {
		if on {
			mk[i] = 1
		}
	}
	g := make([]float64, P)
	return coordTangents(m.t.net, params, x, y, coords, m.base.InputDim(), P, out, func(s0, c, k int, tg *models.Tangents[float32]) {
		for s := 0; s < c; s++ {
			gg := 0.0
			for i := 0; i < P; i++ {
				v := mk[i] * float64(tg.Grads[s*P+i])
				g[i] = v
				gg += v * v
			}
			norm := math.Sqrt(gg)
			sc, ds := clip.Scale(norm)
			acc := 0.0
			for j := 0; j < len(coords[s0+s]); j++ {
				row := tg.GradDots[(s*k+j)*P : (s*k+j+1)*P]
				var gd, dd float64
				for i := 0; i < P; i++ {
					v := mk[i] * float64(row[i])
					gd += g[i] * v
					dd += v * v
				}
				coef := 0.0
				if norm > 0 {
					coef = ds * gd / norm
				}
				acc += sc*sc*dd + 2*sc*coef*gd + coef*coef*gg
			}
			out[s0+s] = acc
		}
	})
}

// coordTangents checks the FIL coordinates (one list per sample, each in [0, D)),
// clears out, and runs net's forward-over-reverse pass along the unit input
// directions e_j of every sample's coordinates, in chunks of at most ~4M tangent
// values; each receives the chunk's first sample s0, its size c, the tangents per
// sample k (the longest list) and the pass's tangents.
func coordTangents(net *models.Network[float32], params, x []float32, y []int, coords [][]int, D, P int, out []float64,
	each func(s0, c, k int, tg *models.Tangents[float32])) error {
	batch := len(y)
	if len(coords) != batch || len(out) != batch {
		return fmt.Errorf("FIL: %d coordinate lists and %d outputs for %d samples", len(coords), len(out), batch)
	}
	k := 0
	for s, cs := range coords {
		for _, c := range cs {
			if c < 0 || c >= D {
				return fmt.Errorf("FIL coordinate %d of sample %d outside [0,%d)", c, s, D)
			}
		}
		k = max(k, len(cs))
	}
	clear(out)
	if k == 0 {
		return nil
	}
	cs := max(1, min(batch, (4<<20)/(k*P)))
	for s0 := 0; s0 < batch; s0 += cs {
		c := min(cs, batch-s0)
		xdot := make([]float32, c*k*D)
		for s := 0; s < c; s++ {
			for j, coord := range coords[s0+s] {
				xdot[(s*k+j)*D+coord] = 1
			}
		}
		tg, err := net.Tangent(params, x[s0*D:(s0+c)*D], y[s0:s0+c], c, k, xdot, nil, false)
		if err != nil {
			return err
		}
		each(s0, c, k, tg)
	}
	return nil
}

// learnedTerms subtracts Σ_j Σ_q c_q (J̃ᵀu_q)_{coord_j}² from out. With g the (masked)
// gradient, ⟨u, g̃⟩ = s(‖g‖)⟨u, g⟩ has input gradient J_rawᵀ(s·u + s'(‖g‖)⟨u,g⟩/‖g‖·g),
// the input-gradient tangent of the parameter direction in parentheses.
func (m *tunedModel) learnedTerms(params, x []float32, y []int, clip models.Clip, coords [][]int, out []float64, mask []bool, nf *noiseFIM) error {
	net, P, D := m.t.net, m.t.p, m.base.InputDim()
	batch := len(y)
	r := len(nf.u)
	cs := max(1, min(batch, (4<<20)/(r*max(P, D))))
	for s0 := 0; s0 < batch; s0 += cs {
		c := min(cs, batch-s0)
		xc, yc := x[s0*D:(s0+c)*D], y[s0:s0+c]
		grads, _, err := net.PerSampleGrads(params, xc, yc, c)
		if err != nil {
			return err
		}
		pdot := make([]float32, c*r*P)
		for s := 0; s < c; s++ {
			g := grads[s*P : (s+1)*P]
			gg := 0.0
			for i, v := range g {
				if mask == nil || mask[i] {
					gg += float64(v) * float64(v)
				}
			}
			norm := math.Sqrt(gg)
			sc, ds := clip.Scale(norm)
			for q, u := range nf.u {
				ug := 0.0
				for i, v := range g {
					ug += u[i] * float64(v) // u is zero on frozen coordinates
				}
				coef := 0.0
				if norm > 0 {
					coef = ds * ug / norm
				}
				row := pdot[(s*r+q)*P : (s*r+q+1)*P]
				for i, v := range g {
					if mask == nil || mask[i] {
						row[i] = float32(sc*u[i] + coef*float64(v))
					}
				}
			}
		}
		tg, err := net.Tangent(params, xc, yc, c, r, nil, pdot, true)
		if err != nil {
			return err
		}
		for s := 0; s < c; s++ {
			sub := 0.0
			for q := 0; q < r; q++ {
				w := tg.InputGradDots[(s*r+q)*D : (s*r+q+1)*D]
				for _, coord := range coords[s0+s] {
					sub += nf.c[q] * float64(w[coord]) * float64(w[coord])
				}
			}
			out[s0+s] = math.Max(out[s0+s]-sub, 0)
		}
	}
	return nil
}
