package models

import "fmt"

// KindZeroLogit appends one output fixed at zero to a flat vector: [z; 0]. A binary
// model written as dense(out 1) → zero_logit has one logit against a fixed zero, so
// that softmax([z, 0]) = (σ(z), 1 − σ(z)) and its parameters are those of the one
// logit (785 on MNIST) — Edmunds's binary model (brandonedmunds2/Thesis, its linear
// model's single output), where dense(out 2) has two rows whose per-sample gradients
// are each other's negatives ([g; −g]: twice the squared gradient norm and FIL at
// the same logit difference). Parameter-free; its passes copy and drop one entry.
const KindZeroLogit LayerKind = "zero_logit"

func init() { registerLayer(zeroLogitLayer{}) }

type zeroLogitLayer struct{ noParams }

func (zeroLogitLayer) Kind() LayerKind  { return KindZeroLogit }
func (zeroLogitLayer) Fields() []string { return nil }
func (zeroLogitLayer) Doc() string {
	return "append one output fixed at 0 to a flat input (a binary model's one logit against a fixed zero)"
}

func (zeroLogitLayer) OutShape(_ LayerSpec, s Shape) (Shape, error) {
	if s.H != 1 || s.W != 1 {
		return Shape{}, fmt.Errorf("zero_logit needs a flat input (dense or flatten before it), got %dx%dx%d", s.C, s.H, s.W)
	}
	return Shape{C: s.C + 1, H: 1, W: 1}, nil
}

func (zeroLogitLayer) OneHotScale(LayerSpec, Shape, int) (float64, bool) { return 0, false }
func (zeroLogitLayer) Describe(LayerSpec) string                         { return "zero_logit" }

func (zeroLogitLayer) engine(r *resolved) engines {
	return engines{zeroLogitOps[float32]{r}, zeroLogitOps[float64]{r}}
}

type zeroLogitOps[T Float] struct{ *resolved }

// pad writes rows rows of [src; 0] (inN values in, inN+1 out).
func (z zeroLogitOps[T]) pad(src, dst []T, rows int) {
	for r := 0; r < rows; r++ {
		copy(dst[r*z.outN:r*z.outN+z.inN], src[r*z.inN:(r+1)*z.inN])
		dst[r*z.outN+z.inN] = 0
	}
}

// drop writes rows rows of src without their last entry (the fixed zero's
// cotangent, which reaches nothing).
func (z zeroLogitOps[T]) drop(src, dst []T, rows int) {
	for r := 0; r < rows; r++ {
		copy(dst[r*z.inN:(r+1)*z.inN], src[r*z.outN:r*z.outN+z.inN])
	}
}

func (z zeroLogitOps[T]) forward(_ *Network[T], ws *workspace[T], i int, _ []T, cs int) {
	z.pad(ws.acts[i], ws.acts[i+1], cs)
}

func (z zeroLogitOps[T]) backward(_ *Network[T], ws *workspace[T], i int, _ []T, cs int, needIn, _ bool) {
	if needIn {
		z.drop(ws.dlt[i+1], ws.dlt[i], cs)
	}
}

func (z zeroLogitOps[T]) tangentForward(_ *Network[T], ws *workspace[T], i int, _ []T, cs, kc int, _ []T) {
	z.pad(ws.tacts[i], ws.tacts[i+1], cs*kc)
}

func (z zeroLogitOps[T]) tangentBackward(_ *Network[T], ws *workspace[T], i int, _ []T, cs, kc int, _ []T) {
	z.drop(ws.tdlt[i+1], ws.tdlt[i], cs*kc)
}
