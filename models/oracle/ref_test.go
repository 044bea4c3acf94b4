package oracle_test

import (
	"math"
	"math/rand/v2"

	"github.com/dpfil/dpfil/models"
)

// This file is an independent float64 reference: direct loops over the definitions of
// every layer kind, written without Gorgonia.

// refLosses returns the batch×Classes logits and the per-sample softmax cross-entropy
// losses of arch on x with labels y (y may be nil: losses are then nil).
func refLosses(a models.Arch, p, x []float64, y []int, batch int) (logits, losses []float64) {
	shapes, err := a.Shapes()
	if err != nil {
		panic(err)
	}
	ps, err := a.Params()
	if err != nil {
		panic(err)
	}
	d := a.InputDim()
	K := a.Classes
	logits = make([]float64, batch*K)
	if y != nil {
		losses = make([]float64, batch)
	}
	for n := 0; n < batch; n++ {
		act := append([]float64(nil), x[n*d:(n+1)*d]...)
		pi := 0
		for li, l := range a.Layers {
			in, out := shapes[li], shapes[li+1]
			next := make([]float64, out.Size())
			switch l.Kind {
			case models.KindConv:
				w := p[ps[pi].Offset : ps[pi].Offset+ps[pi].Size]
				b := p[ps[pi+1].Offset : ps[pi+1].Offset+ps[pi+1].Size]
				pi += 2
				for o := 0; o < out.C; o++ {
					for i := 0; i < out.H; i++ {
						for j := 0; j < out.W; j++ {
							s := b[o]
							for c := 0; c < in.C; c++ {
								for ki := 0; ki < l.KH; ki++ {
									r := i*l.Stride + ki - l.PadT
									if r < 0 || r >= in.H {
										continue
									}
									for kj := 0; kj < l.KW; kj++ {
										q := j*l.Stride + kj - l.PadL
										if q < 0 || q >= in.W {
											continue
										}
										s += w[((o*in.C+c)*l.KH+ki)*l.KW+kj] * act[(c*in.H+r)*in.W+q]
									}
								}
							}
							next[(o*out.H+i)*out.W+j] = s
						}
					}
				}
			case models.KindAvgPool:
				for c := 0; c < out.C; c++ {
					for i := 0; i < out.H; i++ {
						for j := 0; j < out.W; j++ {
							s := 0.0
							for ki := 0; ki < l.KH; ki++ {
								for kj := 0; kj < l.KW; kj++ {
									s += act[(c*in.H+i*l.Stride+ki)*in.W+j*l.Stride+kj]
								}
							}
							next[(c*out.H+i)*out.W+j] = s / float64(l.KH*l.KW)
						}
					}
				}
			case models.KindTanh:
				for i, v := range act {
					next[i] = math.Tanh(v)
				}
			case models.KindELU:
				for i, v := range act {
					if v > 0 {
						next[i] = v
					} else {
						next[i] = math.Expm1(v)
					}
				}
			case models.KindFlatten:
				copy(next, act)
			case models.KindDense:
				w := p[ps[pi].Offset : ps[pi].Offset+ps[pi].Size]
				b := p[ps[pi+1].Offset : ps[pi+1].Offset+ps[pi+1].Size]
				pi += 2
				nin := in.Size()
				for o := range next {
					s := b[o]
					for i := 0; i < nin; i++ {
						s += w[o*nin+i] * act[i]
					}
					next[o] = s
				}
			case models.KindNormalize:
				hw := in.H * in.W
				for i, v := range act {
					c := i / hw
					next[i] = (v - l.Mean[c]) / l.Std[c]
				}
			default:
				panic("reference: unknown layer " + string(l.Kind))
			}
			act = next
		}
		copy(logits[n*K:], act)
		if y != nil {
			m := math.Inf(-1)
			for _, v := range act {
				m = math.Max(m, v)
			}
			s := 0.0
			for _, v := range act {
				s += math.Exp(v - m)
			}
			losses[n] = m + math.Log(s) - act[y[n]]
		}
	}
	return logits, losses
}

// refSumLoss is the summed loss of the reference.
func refSumLoss(a models.Arch, p, x []float64, y []int, batch int) float64 {
	_, l := refLosses(a, p, x, y, batch)
	s := 0.0
	for _, v := range l {
		s += v
	}
	return s
}

// fdGrad is the central finite-difference gradient of the reference's summed loss
// w.r.t. the parameters at the given indices (all when idx is nil).
func fdGrad(a models.Arch, p, x []float64, y []int, batch int, idx []int) []float64 {
	if idx == nil {
		idx = make([]int, len(p))
		for i := range idx {
			idx[i] = i
		}
	}
	const h = 1e-5
	q := append([]float64(nil), p...)
	g := make([]float64, len(idx))
	for k, i := range idx {
		q[i] = p[i] + h
		lp := refSumLoss(a, q, x, y, batch)
		q[i] = p[i] - h
		lm := refSumLoss(a, q, x, y, batch)
		q[i] = p[i]
		g[k] = (lp - lm) / (2 * h)
	}
	return g
}

// relErr is max|got−want| / max(max|want|, 1e-12).
func relErr(got, want []float64) float64 {
	if len(got) != len(want) {
		return math.Inf(1)
	}
	num, den := 0.0, 1e-12
	for i := range want {
		num = math.Max(num, math.Abs(got[i]-want[i]))
		den = math.Max(den, math.Abs(want[i]))
	}
	if math.IsNaN(num) {
		return math.Inf(1)
	}
	return num / den
}

// randomProblem draws parameters (normal, scale 0.3), inputs in [0,1] and labels from
// a seeded generator.
func randomProblem(a models.Arch, batch int, seed uint64) (p, x []float64, y []int) {
	r := rand.New(rand.NewPCG(seed, 0x0dac1e))
	p = make([]float64, a.NumParams())
	for i := range p {
		p[i] = 0.3 * r.NormFloat64()
	}
	x = make([]float64, batch*a.InputDim())
	for i := range x {
		x[i] = r.Float64()
	}
	y = make([]int, batch)
	for i := range y {
		y[i] = r.IntN(a.Classes)
	}
	return p, x, y
}

// tinyArchs are small architectures that exercise every layer kind, asymmetric SAME
// padding, explicit asymmetric padding, stride-2 convolutions and stride-2 pooling
// with leftover rows/columns.
func tinyArchs() []models.Arch {
	in := models.Shape{C: 2, H: 7, W: 6}
	return []models.Arch{
		{Name: "tiny-conv", Input: in, Classes: 3, Layers: []models.LayerSpec{
			{Kind: models.KindNormalize, Mean: []float64{0.4, 0.6}, Std: []float64{0.3, 0.2}},
			models.ConvSame(3, 3, 2, 7, 6), // 4×3 out, width padding 0/1
			{Kind: models.KindTanh},
			models.AvgPool(2, 1), // 3×2
			{Kind: models.KindConv, Out: 4, KH: 2, KW: 3, Stride: 1, PadT: 2, PadB: 0, PadL: 1, PadR: 0}, // 4×1
			{Kind: models.KindELU},
			{Kind: models.KindFlatten},
			models.Dense(5),
			{Kind: models.KindTanh},
			models.Dense(3),
		}},
		{Name: "tiny-pool2", Input: models.Shape{C: 2, H: 9, W: 8}, Classes: 4, Layers: []models.LayerSpec{
			models.Conv(3, 2, 1, 1), // 10×9
			{Kind: models.KindELU},
			models.AvgPool(3, 2), // 4×4 (leftover row and column)
			{Kind: models.KindTanh},
			models.AvgPool(2, 2), // 2×2
			{Kind: models.KindFlatten},
			models.Dense(4),
		}},
		// 40 channels whose means and stds are equal except in channel 20.
		{Name: "tiny-norm40", Input: models.Shape{C: 40, H: 2, W: 1}, Classes: 3, Layers: []models.LayerSpec{
			{Kind: models.KindNormalize, Mean: norm40(0.1), Std: norm40(0.9)},
			{Kind: models.KindFlatten}, models.Dense(3),
		}},
		{Name: "tiny-mlp", Input: models.Shape{C: 1, H: 3, W: 4}, Classes: 3, Layers: []models.LayerSpec{
			{Kind: models.KindFlatten}, models.Dense(6), {Kind: models.KindELU}, models.Dense(3),
		}},
	}
}

// norm40 is 40 values of 0.5 except mid at index 20.
func norm40(mid float64) []float64 {
	v := make([]float64, 40)
	for i := range v {
		v[i] = 0.5
	}
	v[20] = mid
	return v
}
