package models

// ClipMode selects hard or smooth per-sample gradient clipping.
type ClipMode int

// Clip modes.
const (
	// ClipSmooth is g̃ = g / (GELU(‖g‖/C − 1) + 1) (Guo, Karrer, Chaudhuri & van der Maaten 2022, Sec. 6); the default.
	ClipSmooth ClipMode = iota
	// ClipHard is g̃ = g / max(1, ‖g‖/C).
	ClipHard
)

// GELUKind selects the GELU used by smooth clipping.
type GELUKind int

// GELU variants.
const (
	GELUExact GELUKind = iota // x·Φ(x) with math.Erf (default)
	GELUTanh                  // the tanh approximation
)

// Clip configures per-sample gradient clipping. The clipped gradient has norm at most
// Constant()·C.
type Clip struct {
	Mode ClipMode
	C    float64
	GELU GELUKind
}

// Model is what the trainer, the FIL accountant and the attacks consume: one network
// architecture evaluated by a backend in float32 (accumulating in float64 where it
// matters). Inputs are flat NCHW batches of raw [0,1] pixels, n samples of InputDim()
// values each; params is the flat parameter vector in the layout of LayerSpec.
// Implementations are not safe for concurrent use.
type Model interface {
	Arch() Arch
	NumParams() int
	InputDim() int
	// Init returns freshly initialised parameters drawn deterministically from seed.
	Init(seed uint64) []float32
	// Logits writes the n×Classes logits of x to out.
	Logits(params, x []float32, n int, out []float32) error
	// ClippedGradSum computes every sample's loss gradient g_i, clips it, and writes
	// Σ_i g̃_i to sum (len NumParams) and each sample's loss to losses (len n).
	ClippedGradSum(params, x []float32, y []int, clip Clip, sum []float32, losses []float64) error
	// FILSqNorms writes, for each sample i, Σ_j ‖J_i e_{coords[i][j]}‖² to out[i], where
	// J_i = ∂g̃_i/∂x_i is the Jacobian of the clipped gradient w.r.t. the sample's
	// input (p×d). Coordinates may repeat; coords[i] = 0..d−1 gives ‖J_i‖_F² exactly.
	FILSqNorms(params, x []float32, y []int, clip Clip, coords [][]int, out []float64) error
}

// FirstOrderOnly is implemented by a Model that computes per-sample gradients but not
// the second-order passes: its FILSqNorms always fails, with the error SecondOrderErr
// returns (e.g. a network given as an arbitrary Gorgonia graph, whose second-order
// derivatives Gorgonia does not compute correctly). Consumers that need FIL call
// SecondOrderErr before any work, so that a run fails at once with that error rather
// than midway or with a wrong number.
type FirstOrderOnly interface {
	Model
	// SecondOrderErr is why the second-order passes are unavailable (nil: available).
	SecondOrderErr() error
}
