package models

// KindReLU is the elementwise max(x, 0). Its second derivative is 0 (almost
// everywhere), so through a ReLU the FIL tangents only carry first-order terms.
// Unlike tanh and ELU it needs no backend kernel: its passes are plain loops.
const KindReLU LayerKind = "relu"

func init() {
	registerLayer(elementwiseLayer{kind: KindReLU, doc: "elementwise max(x, 0)", passes: func(r *resolved) engines {
		return engines{&reluOps[float32]{r}, &reluOps[float64]{r}}
	}})
}

type reluOps[T Float] struct{ *resolved }

func (l *reluOps[T]) forward(_ *Network[T], ws *workspace[T], i int, _ []T, cs int) {
	out := ws.acts[i+1][:cs*l.outN]
	for j, v := range ws.acts[i][:cs*l.inN] {
		out[j] = max(v, 0)
	}
}

// mask writes dst = src where the sample's input is positive, 0 elsewhere, for cs
// samples of kc rows each (rows s·kc+j use sample s's input x).
func (l *reluOps[T]) mask(x, src, dst []T, cs, kc int) {
	n := l.inN
	for s := 0; s < cs; s++ {
		xs := x[s*n : (s+1)*n]
		for r := s * kc; r < (s+1)*kc; r++ {
			sr, dr := src[r*n:(r+1)*n], dst[r*n:(r+1)*n]
			for e, v := range xs {
				if v > 0 {
					dr[e] = sr[e]
				} else {
					dr[e] = 0
				}
			}
		}
	}
}

func (l *reluOps[T]) backward(_ *Network[T], ws *workspace[T], i int, _ []T, cs int, needIn, _ bool) {
	if needIn {
		l.mask(ws.acts[i], ws.dlt[i+1], ws.dlt[i], cs, 1)
	}
}

// tangentForward: ẏ = f'(x)·ẋ.
func (l *reluOps[T]) tangentForward(_ *Network[T], ws *workspace[T], i int, _ []T, cs, kc int, _ []T) {
	l.mask(ws.acts[i], ws.tacts[i], ws.tacts[i+1], cs, kc)
}

// tangentBackward: δ̇_in = f'(x)·δ̇_out + f”(x)·ẋ·δ_out, with f” = 0.
func (l *reluOps[T]) tangentBackward(_ *Network[T], ws *workspace[T], i int, _ []T, cs, kc int, _ []T) {
	l.mask(ws.acts[i], ws.tdlt[i+1], ws.tdlt[i], cs, kc)
}
