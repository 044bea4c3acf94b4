package models

import (
	"math/rand/v2"
)

// truncNormalStd is the standard deviation of a standard normal truncated to [−2, 2];
// JAX's variance_scaling divides by it so that truncated samples have the intended
// variance.
const truncNormalStd = 0.87962566103423978

// InitParams draws the initial parameters of arch deterministically from seed; each
// layer kind fills its own tensors (Layer.InitParam). The built-in kinds use the
// defaults of jax.example_libraries.stax, which the reference code used:
//
//   - weights: Glorot normal = variance_scaling(1, "fan_avg", "truncated_normal"):
//     w = t·√(2/(fan_in+fan_out))/0.8796…, t a standard normal truncated to [−2, 2]
//     (drawn by rejection); conv fan_in = InC·KH·KW, fan_out = Out·KH·KW; dense
//     fan_in = In, fan_out = Out;
//   - conv biases N(0, (1e-6)²) (stax.Conv), dense biases N(0, (1e-2)²) (stax.Dense).
//
// The generator is math/rand/v2's PCG seeded with (seed, 0x6470666c); values are
// drawn tensor after tensor in the flat layout order. It returns nil when arch is
// invalid.
func InitParams(arch Arch, seed uint64) []float64 {
	ps, err := arch.Params()
	if err != nil {
		return nil
	}
	shapes, _ := arch.Shapes()
	rng := rand.New(rand.NewPCG(seed, 0x6470666c))
	out := make([]float64, arch.NumParams())
	for _, p := range ps {
		spec := arch.Layers[p.Layer]
		kind, _ := LayerOf(spec.Kind) // known: Params checked it
		kind.InitParam(spec, shapes[p.Layer], p.Tensor, rng, out[p.Offset:p.Offset+p.Size])
	}
	return out
}
