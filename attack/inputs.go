package attack

import "fmt"

// Input ranges of GameSpec.Inputs: what the game's network sees of a pool sample x,
// whose values are in [0,1]. The pool, the priors, the reconstructions and their
// errors stay in [0,1] either way; only the network's first layer reads the map.
const (
	// InputsUnit feeds x as stored (the default; "" means the same).
	InputsUnit = "unit"
	// InputsSymmetric feeds 2x − 1 ∈ [−1, 1], the preprocessing of a copy of Hayes
	// et al.'s public attack notebook (its loss maps its /255 MNIST inputs by
	// 2x − 1). A sample's first-layer gradient grows with the input's norm —
	// ‖2x − 1‖ / ‖x‖ is 3.03 on average over the embedded MNIST, whose background is
	// 0 — so more per-sample gradients reach a clipping norm C (Fig. 13's C = 0.1 side).
	InputsSymmetric = "symmetric"
)

// checkInputs rejects an unknown input range, and a mapped one for a model other
// than the hand mlp (the only network that carries the map).
func checkInputs(inputs, model string) error {
	if _, _, err := inputMap(inputs); err != nil {
		return err
	}
	if inputs == InputsSymmetric && model != "mlp" {
		return fmt.Errorf("input range %s is built into the hand mlp only, not model %s", inputs, model)
	}
	return nil
}

// inputMap returns the affine map x ↦ a·x + b of an input range.
func inputMap(inputs string) (a, b float64, err error) {
	switch inputs {
	case "", InputsUnit:
		return 1, 0, nil
	case InputsSymmetric:
		return 2, -1, nil
	}
	return 0, 0, fmt.Errorf("unknown input range %q (known: %s, %s)", inputs, InputsUnit, InputsSymmetric)
}

// mappedMLP is the hand MLP behind the input map x ↦ a·x + b: its losses, parameter
// gradients and logits are the MLP's at the mapped inputs, and the input gradient of
// ClippedDotInputGrad is taken with respect to the unmapped x (the chain rule's factor
// a), so the gradient attack reconstructs in the pool's [0,1]. It keeps the mapped
// inputs in a scratch buffer: like every Net a Game's newNet returns, a value serves
// one worker at a time.
type mappedMLP struct {
	MLP
	a, b float64
	buf  []float64
}

// mapped returns a·x + b in the scratch buffer.
func (m *mappedMLP) mapped(x []float64) []float64 {
	if cap(m.buf) < len(x) {
		m.buf = make([]float64, len(x))
	}
	z := m.buf[:len(x)]
	for i, v := range x {
		z[i] = m.a*v + m.b
	}
	return z
}

// PerSampleGrads is the MLP's at the mapped inputs.
func (m *mappedMLP) PerSampleGrads(params, x []float64, y []int, n int, grads, losses []float64) error {
	return m.MLP.PerSampleGrads(params, m.mapped(x), y, n, grads, losses)
}

// Logits is the MLP's at the mapped inputs.
func (m *mappedMLP) Logits(params, x []float64, n int, out []float64) error {
	return m.MLP.Logits(params, m.mapped(x), n, out)
}

// ClippedGradSum is the MLP's at the mapped inputs.
func (m *mappedMLP) ClippedGradSum(params, x []float64, y []int, n int, clip float64, sum []float64) (float64, error) {
	return m.MLP.ClippedGradSum(params, m.mapped(x), y, n, clip, sum)
}

// ClippedDotInputGrad is the MLP's at the mapped input, its input gradient carried
// back through the map (∂/∂x = a·∂/∂(ax + b)).
func (m *mappedMLP) ClippedDotInputGrad(params, x []float64, y int, v []float64, clip float64, clipped, dx []float64) error {
	if err := m.MLP.ClippedDotInputGrad(params, m.mapped(x), y, v, clip, clipped, dx); err != nil {
		return err
	}
	for i := range dx {
		dx[i] *= m.a
	}
	return nil
}

// withInputs returns a constructor of the game's per-worker networks for the hand MLP
// m under the input range inputs.
func withInputs(m MLP, inputs string) (func() Net, error) {
	a, b, err := inputMap(inputs)
	if err != nil {
		return nil, err
	}
	if a == 1 && b == 0 {
		return func() Net { return m }, nil
	}
	return func() Net { return &mappedMLP{MLP: m, a: a, b: b} }, nil
}
