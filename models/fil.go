package models

import (
	"fmt"
	"math"
	"sync"
)

// ClippedGrads returns every sample's clipped gradient g̃ (batch×P) and loss.
func (n *Network[T]) ClippedGrads(params, x []T, y []int, batch int, clip Clip) (clipped []T, losses []T, err error) {
	if err := clip.Validate(); err != nil {
		return nil, nil, err
	}
	grads, losses, err := n.PerSampleGrads(params, x, y, batch)
	if err != nil {
		return nil, nil, err
	}
	for s := 0; s < batch; s++ {
		ClipVector(clip, grads[s*n.p:(s+1)*n.p])
	}
	return grads, losses, nil
}

// ClippedGradSum writes Σ_s g̃_s to sum (len P) and each sample's loss to losses
// (len batch). The sum is accumulated in float64 chunk by chunk in sample order, so
// it is bit-identical for any number of workers.
func (n *Network[T]) ClippedGradSum(params, x []T, y []int, batch int, clip Clip, sum []T, losses []float64) error {
	if err := clip.Validate(); err != nil {
		return err
	}
	if err := n.checkInputs(params, x, y, batch); err != nil {
		return err
	}
	if len(sum) != n.p {
		return fmt.Errorf("%s: sum buffer has %d values, want %d", n.arch.Name, len(sum), n.p)
	}
	if len(losses) != batch {
		return fmt.Errorf("%s: losses buffer has %d values, want %d", n.arch.Name, len(losses), batch)
	}
	if n.dm != nil {
		n.clippedGradSumDevice(params, x, y, batch, clip, sum, losses)
		return nil
	}
	if n.ghost.algo != ClipPerSample {
		n.clippedGradSumGhost(params, x, y, batch, clip, sum, losses, nil)
		return nil
	}
	if len(n.total) != n.p {
		n.total = make([]float64, n.p)
	}
	total := n.total
	clear(total)
	cs, _ := n.chunkSizes(batch, 0, false)
	var mu sync.Mutex
	cond := sync.NewCond(&mu)
	turn := 0
	P := n.p
	axpy := addScaled[T]
	if n.hk != nil {
		axpy = n.hk.addScaled
	}
	var wsFor func(w, cs int) *workspace[T]
	if n.wino.active() {
		n.winoPrepare(params)
		wsFor = n.winoWorkspace
	}
	n.firstOrderIn(wsFor, params, x, y, batch, false, func(ws *workspace[T], s0, c int) {
		if n.dops != nil { // one worker: chunks arrive in order
			sc := make([]float64, c)
			for s := range sc {
				sc[s], _ = clip.Scale(math.Sqrt(ws.gsq[s]))
				losses[s0+s] = float64(ws.losses[s])
			}
			n.dops.ScaledRowSum(c, P, sc, ws.grads, total)
			return
		}
		var scales [64]float64
		sc := scales[:0]
		for s := 0; s < c; s++ {
			v, _ := clip.Scale(math.Sqrt(ws.gsq[s]))
			sc = append(sc, v)
			losses[s0+s] = float64(ws.losses[s])
		}
		// Chunks add their samples to total in batch order (each waits for its
		// turn), so the float64 sum is the same for any number of workers. Adding
		// straight into total saves clearing and re-reading a per-chunk accumulator
		// (P float64 values: 4.4 MB for cifar-cnn).
		mu.Lock()
		for turn != s0/cs {
			cond.Wait()
		}
		for s := 0; s < c; s++ {
			axpy(total, sc[s], ws.grads[s*P:(s+1)*P])
		}
		turn++
		cond.Broadcast()
		mu.Unlock()
	})
	for i, v := range total {
		sum[i] = T(v)
	}
	return nil
}

// addScaled adds sc·g to acc, in float64.
func addScaled[T Float](acc []float64, sc float64, g []T) {
	acc = acc[:len(g)]
	i := 0
	for ; i+4 <= len(g); i += 4 {
		acc[i] += sc * float64(g[i])
		acc[i+1] += sc * float64(g[i+1])
		acc[i+2] += sc * float64(g[i+2])
		acc[i+3] += sc * float64(g[i+3])
	}
	for ; i < len(g); i++ {
		acc[i] += sc * float64(g[i])
	}
}

// checkFILArgs checks the arguments of FILSqNorms and FILSqNormsAfterGradSum and
// returns the largest number of coordinates of a sample.
func (n *Network[T]) checkFILArgs(params, x []T, y []int, batch int, clip Clip, coords [][]int, out []float64) (int, error) {
	if err := clip.Validate(); err != nil {
		return 0, err
	}
	if err := n.checkInputs(params, x, y, batch); err != nil {
		return 0, err
	}
	if len(coords) != batch || len(out) != batch {
		return 0, fmt.Errorf("%s: FIL needs %d coordinate lists and outputs, got %d and %d", n.arch.Name, batch, len(coords), len(out))
	}
	k := 0
	for s, cs := range coords {
		for _, c := range cs {
			if c < 0 || c >= n.d {
				return 0, fmt.Errorf("%s: FIL coordinate %d of sample %d outside [0,%d)", n.arch.Name, c, s, n.d)
			}
		}
		k = max(k, len(cs))
	}
	return k, nil
}

// FILSqNorms writes, for each sample s, Σ_j ‖J_s e_{coords[s][j]}‖² to out[s], where
// J_s = ∂g̃_s/∂x_s (P×D) is the Jacobian of the sample's clipped gradient w.r.t. its
// input. Coordinates may repeat; coords[s] = 0..D−1 gives ‖J_s‖_F² exactly. The
// Jacobian-vector products are computed in T by forward-over-reverse; norms and dot
// products are accumulated in float64, and the clipped tangent's norm is obtained
// from ‖ġ‖², gᵀġ and ‖g‖² without forming ġ̃.
func (n *Network[T]) FILSqNorms(params, x []T, y []int, batch int, clip Clip, coords [][]int, out []float64) error {
	k, err := n.checkFILArgs(params, x, y, batch, clip, coords, out)
	if err != nil {
		return err
	}
	clear(out)
	if k == 0 {
		return nil
	}
	if n.dm != nil {
		return n.filSqNormsDevice(params, x, y, batch, clip, coords, k, out)
	}
	P := n.p
	gg := make([]float64, batch)
	// A device backend with TangentBatcher reduces a whole chunk layer by layer
	// (filDotSqAll; the network runs one worker then, so these buffers are not shared).
	var gdBuf, ddBuf []float64
	var consumeChunk func(ws *workspace[T], s0, cs, j0, kc int)
	if n.tb != nil {
		consumeChunk = func(ws *workspace[T], s0, cs, j0, kc int) {
			if len(gdBuf) < cs*kc {
				gdBuf, ddBuf = make([]float64, cs*kc), make([]float64, cs*kc)
			}
			n.tb.FILDotSqEnd(cs, kc, gdBuf, ddBuf)
			for sl := 0; sl < cs; sl++ {
				s := s0 + sl
				var acc float64
				for j := 0; j < min(kc, len(coords[s])-j0); j++ {
					acc += clippedTangentSqNorm(clip, gg[s], gdBuf[sl*kc+j], ddBuf[sl*kc+j])
				}
				out[s] += acc
			}
		}
	}
	n.run(&tangentRun[T]{
		params: params, x: x, y: y, batch: batch, k: k, grads: true, filDots: n.filFuse, coords: coords, consumeChunk: consumeChunk,
		first: func(ws *workspace[T], s0, cs int) {
			copy(gg[s0:s0+cs], ws.gsq[:cs])
		},
		seeds: func(*workspace[T], int, int, int, int, []T, []T) {}, // one-hot input tangents come from coords
		consume: func(ws *workspace[T], s0, sl, j0, kc int, _ []T) {
			s := s0 + sl
			g := ws.grads[sl*P : (sl+1)*P]
			var acc float64
			f := &ws.fil
			for j := 0; j < kc && j0+j < len(coords[s]); j++ {
				var gd, dd float64
				ti := 0
				for i := range n.layers {
					for _, t := range n.layers[i].params {
						var a, b float64
						if f.done != nil && f.done[i] { // taken by the layer (filReduce)
							a, b = f.dots[j*f.nt+ti][0], f.dots[j*f.nt+ti][1]
						} else {
							gt := ws.tg[kc*t.off+j*t.size : kc*t.off+(j+1)*t.size]
							a, b = n.be.DotSq(g[t.off:t.off+t.size], gt)
						}
						gd += a
						dd += b
						ti++
					}
				}
				acc += clippedTangentSqNorm(clip, gg[s], gd, dd)
			}
			out[s] += acc
		},
	})
	return nil
}

// InputGradOfClippedDot returns, for every sample s, ∇_x ⟨v_s, g̃(x_s)⟩ (batch×D),
// the gradient w.r.t. the input of the inner product of a fixed vector with the
// sample's clipped gradient — the second-order derivative the gradient-inversion
// attack follows. v has P values (the same for every sample) or batch·P.
//
// Derivation: g̃ = s(‖g‖)·g, so ⟨v, g̃⟩ has the same x-gradient as ⟨u, g(x)⟩ with u
// held fixed at u = s·v + (ds/d‖g‖)(⟨v,g⟩/‖g‖)·g (the transposed clip JVP applied to
// v). And ∇_x⟨u, ∇_θℓ(θ,x)⟩ = ∂/∂ε ∇_xℓ(θ+εu, x): the tangent of the input gradient
// under the parameter tangent u, which one forward-over-reverse pass computes.
func (n *Network[T]) InputGradOfClippedDot(params, x []T, y []int, batch int, v []T, clip Clip) ([]T, error) {
	if err := clip.Validate(); err != nil {
		return nil, err
	}
	if err := n.checkInputs(params, x, y, batch); err != nil {
		return nil, err
	}
	if n.dm != nil {
		return nil, fmt.Errorf("%s: input gradient of a clipped dot: %w", n.arch.Name, ErrDeviceMemory)
	}
	shared := len(v) == n.p
	if !shared && len(v) != batch*n.p {
		return nil, fmt.Errorf("%s: v has %d values, want %d or %d", n.arch.Name, len(v), n.p, batch*n.p)
	}
	if err := checkFinite("v", v); err != nil {
		return nil, fmt.Errorf("%s: %w", n.arch.Name, err)
	}
	P := n.p
	vOf := func(s int) []T {
		if shared {
			return v
		}
		return v[s*P : (s+1)*P]
	}
	out := make([]T, batch*n.d)
	n.run(&tangentRun[T]{
		params: params, x: x, y: y, batch: batch, k: 1, pt: true, inputGrad: true,
		seeds: func(ws *workspace[T], s0, cs, _, _ int, _, tp []T) {
			for s := 0; s < cs; s++ {
				g := ws.grads[s*P : (s+1)*P]
				vs := vOf(s0 + s)
				vg := n.be.Dot(vs, g)
				norm := math.Sqrt(ws.gsq[s])
				sc, ds := clip.Scale(norm)
				coef := 0.0
				if norm > 0 {
					coef = ds * vg / norm
				}
				u := tp[s*P : (s+1)*P]
				for i := range u {
					u[i] = T(sc*float64(vs[i]) + coef*float64(g[i]))
				}
			}
		},
		consume: func(_ *workspace[T], s0, sl, _, _ int, tdx0 []T) {
			s := s0 + sl
			copy(out[s*n.d:(s+1)*n.d], tdx0[:n.d])
		},
	})
	return out, nil
}
