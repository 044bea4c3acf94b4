package attack

import (
	"fmt"

	"github.com/dpfil/dpfil/models"
)

// EngineNet adapts the models engine (models.Network[float64] on the CPU backend) to
// InputGrader, for any built-in architecture. It is not safe for concurrent use;
// create one per worker.
type EngineNet struct {
	arch models.Arch
	net  *models.Network[float64]
}

// NewEngineNet builds the engine network of arch in float64.
func NewEngineNet(arch models.Arch) (*EngineNet, error) {
	n, err := models.NewNetwork[float64](arch, models.NewCPUBackend[float64]())
	if err != nil {
		return nil, fmt.Errorf("attack: engine network %s: %w", arch.Name, err)
	}
	return &EngineNet{arch: arch, net: n}, nil
}

// NumParams is the length of the flat parameter vector.
func (e *EngineNet) NumParams() int { return e.net.NumParams() }

// InputDim is d.
func (e *EngineNet) InputDim() int { return e.net.InputDim() }

// Init draws θ₀ with the engine's stax-default initialiser.
func (e *EngineNet) Init(seed uint64) []float64 { return models.InitParams(e.arch, seed) }

// PerSampleGrads implements Net.
func (e *EngineNet) PerSampleGrads(params, x []float64, y []int, n int, grads, losses []float64) error {
	g, l, err := e.net.PerSampleGrads(params, x, y, n)
	if err != nil {
		return err
	}
	if len(grads) != len(g) || (losses != nil && len(losses) != len(l)) {
		return fmt.Errorf("attack: engine gradient buffers have %d/%d values, want %d/%d", len(grads), len(losses), len(g), len(l))
	}
	copy(grads, g)
	if losses != nil {
		copy(losses, l)
	}
	return nil
}

// ClippedDotInputGrad implements InputGrader with the engine's forward-over-reverse
// InputGradOfClippedDot (hard clipping).
func (e *EngineNet) ClippedDotInputGrad(params, x []float64, y int, v []float64, clip float64, clipped, dx []float64) error {
	if err := e.PerSampleGrads(params, x, []int{y}, 1, clipped, nil); err != nil {
		return err
	}
	clipRows(clipped, 1, len(clipped), clip, nil)
	g, err := e.net.InputGradOfClippedDot(params, x, []int{y}, 1, v, models.Clip{Mode: models.ClipHard, C: clip})
	if err != nil {
		return err
	}
	return copyResult("input gradient", dx, g)
}

// copyResult copies an engine result into the caller's buffer, which must have its
// length; what names the buffer in the error.
func copyResult(what string, dst, src []float64) error {
	if len(dst) != len(src) {
		return fmt.Errorf("attack: %s buffer has %d values, want %d", what, len(dst), len(src))
	}
	copy(dst, src)
	return nil
}

// NumClasses is the number of logits.
func (e *EngineNet) NumClasses() int { return e.arch.Classes }

// Logits writes the n×Classes logits of x to out.
func (e *EngineNet) Logits(params, x []float64, n int, out []float64) error {
	l, err := e.net.Forward(params, x, n)
	if err != nil {
		return err
	}
	return copyResult("logits", out, l)
}
