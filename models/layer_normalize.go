package models

import "fmt"

// KindNormalize is the fixed per-channel (x − Mean[c]) / Std[c]: a layer of the model,
// so that inputs, and FIL, stay in raw [0,1] pixels (the FIL and its MSE bounds are in pixel units).
const KindNormalize LayerKind = "normalize"

func init() { registerLayer(normalizeLayer{}) }

type normalizeLayer struct{ noParams }

func (normalizeLayer) Kind() LayerKind  { return KindNormalize }
func (normalizeLayer) Fields() []string { return []string{"mean", "std"} }
func (normalizeLayer) Doc() string {
	return "fixed per-channel (x - mean[c]) / std[c] (mean, std: one value per input channel)"
}

func (normalizeLayer) OutShape(l LayerSpec, s Shape) (Shape, error) {
	if len(l.Mean) != s.C || len(l.Std) != s.C {
		return Shape{}, fmt.Errorf("normalize needs %d means and stds", s.C)
	}
	for _, sd := range l.Std {
		if !(sd > 0) {
			return Shape{}, fmt.Errorf("normalize std must be positive")
		}
	}
	return s, nil
}

// OneHotScale: e_idx maps to e_idx/std of idx's channel.
func (normalizeLayer) OneHotScale(l LayerSpec, in Shape, idx int) (float64, bool) {
	return 1 / l.Std[idx/(in.H*in.W)], true
}

func (normalizeLayer) Describe(l LayerSpec) string {
	return fmt.Sprintf("normalize mean %v std %v", l.Mean, l.Std)
}

func (normalizeLayer) engine(r *resolved) engines {
	z := normalizeOf{resolved: r, mean: append([]float64(nil), r.spec.Mean...), inv: make([]float64, len(r.spec.Std))}
	for c, s := range r.spec.Std {
		z.inv[c] = 1 / s
	}
	return engines{&normalizeOps[float32]{z}, &normalizeOps[float64]{z}}
}

// normalizeOf is a resolved normalize layer: per-channel mean and 1/std.
type normalizeOf struct {
	*resolved
	mean, inv []float64
}

type normalizeOps[T Float] struct{ normalizeOf }

func (z *normalizeOps[T]) forward(n *Network[T], ws *workspace[T], i int, _ []T, cs int) {
	in, out := ws.acts[i], ws.acts[i+1]
	hw := z.in.H * z.in.W
	if n.dm != nil { // plain device memory: the same float arithmetic as a kernel
		m, iv := make([]T, z.in.C), make([]T, z.in.C)
		for c := range m {
			m[c], iv[c] = T(z.mean[c]), T(z.inv[c])
		}
		n.dm.ChannelAffine(cs, z.in.C, hw, m, iv, in[:cs*z.inN], out[:cs*z.inN])
		return
	}
	for s := 0; s < cs; s++ {
		for c := 0; c < z.in.C; c++ {
			off := s*z.inN + c*hw
			m, iv := T(z.mean[c]), T(z.inv[c])
			for j := off; j < off+hw; j++ {
				out[j] = (in[j] - m) * iv
			}
		}
	}
}

// scale writes dst = src/std per channel for rows rows.
func (z *normalizeOps[T]) scale(n *Network[T], rows int, src, dst []T) {
	hw := z.in.H * z.in.W
	if n.dm != nil {
		zero, iv := make([]T, z.in.C), make([]T, z.in.C)
		for c := range iv {
			iv[c] = T(z.inv[c])
		}
		n.dm.ChannelAffine(rows, z.in.C, hw, zero, iv, src[:rows*z.inN], dst[:rows*z.inN])
		return
	}
	for r := 0; r < rows; r++ {
		for c := 0; c < z.in.C; c++ {
			off := r*z.inN + c*hw
			iv := T(z.inv[c])
			for j := off; j < off+hw; j++ {
				dst[j] = src[j] * iv
			}
		}
	}
}

func (z *normalizeOps[T]) backward(n *Network[T], ws *workspace[T], i int, _ []T, cs int, needIn, _ bool) {
	if needIn {
		z.scale(n, cs, ws.dlt[i+1], ws.dlt[i])
	}
}

func (z *normalizeOps[T]) tangentForward(n *Network[T], ws *workspace[T], i int, _ []T, cs, kc int, _ []T) {
	z.scale(n, cs*kc, ws.tacts[i], ws.tacts[i+1])
}

func (z *normalizeOps[T]) tangentBackward(n *Network[T], ws *workspace[T], i int, _ []T, cs, kc int, _ []T) {
	z.scale(n, cs*kc, ws.tdlt[i+1], ws.tdlt[i])
}
