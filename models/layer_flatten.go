package models

// KindFlatten reshapes [C][H][W] to [C·H·W] (row-major): no values change, the
// engine's output buffer is the input's.
const KindFlatten LayerKind = "flatten"

func init() { registerLayer(flattenLayer{}) }

type flattenLayer struct{ noParams }

func (flattenLayer) Kind() LayerKind  { return KindFlatten }
func (flattenLayer) Fields() []string { return nil }
func (flattenLayer) Doc() string      { return "reshape [C][H][W] to [C*H*W], row-major" }
func (flattenLayer) OutShape(_ LayerSpec, s Shape) (Shape, error) {
	return Shape{C: s.Size(), H: 1, W: 1}, nil
}
func (flattenLayer) OneHotScale(LayerSpec, Shape, int) (float64, bool) { return 1, true }
func (flattenLayer) Describe(LayerSpec) string                         { return "flatten" }

func (flattenLayer) engine(r *resolved) engines {
	r.view = true
	return engines{flattenOps[float32]{}, flattenOps[float64]{}}
}

// flattenOps does nothing: the layer's buffers are its input's (resolved.view).
type flattenOps[T Float] struct{}

func (flattenOps[T]) forward(*Network[T], *workspace[T], int, []T, int)                   {}
func (flattenOps[T]) backward(*Network[T], *workspace[T], int, []T, int, bool, bool)      {}
func (flattenOps[T]) tangentForward(*Network[T], *workspace[T], int, []T, int, int, []T)  {}
func (flattenOps[T]) tangentBackward(*Network[T], *workspace[T], int, []T, int, int, []T) {}
