package train

import (
	"runtime"

	"github.com/dpfil/dpfil/internal/parallel"
	"github.com/dpfil/dpfil/internal/philox"
)

// NoiseGenerator names how the trainer draws the Gaussian noise of DP-SGD (recorded in
// checkpoints): coordinate i of the noise at step t of a repeat is component i mod 2 of
// the Box–Muller pair of Philox4x32-10 block (counter = (⌊i/2⌋, t), key = the repeat's
// noise seed). The CUDA kernels draw the same bits (internal/philox).
const NoiseGenerator = "philox4x32-10 box-muller (counter: coordinate pair, step)"

// noiseKey is the Philox key of a repeat's noise.
func noiseKey(seed uint64, repeat int) [2]uint32 {
	return philox.Key(deriveSeed(seed, repeat, streamNoise))
}

// noiseParallelMin is the parameter count from which the noise is drawn on several
// goroutines (each coordinate's draw is independent, so the result is the same).
const noiseParallelMin = 1 << 15

// addNoise privatises a gradient sum in place: sum[i] = float32(sum[i] + std·z_i) with
// z_i the standard normal of coordinate i at step (rounded once to float64 and once to
// float32, no fused multiply-add: the device kernel rounds the same way).
func addNoise(sum []float32, std float64, key [2]uint32, step int) {
	add := func(lo, hi int) { // lo even
		for i := lo; i < hi; i += 2 {
			z0, z1 := philox.Pair(key, uint64(step), uint64(i/2))
			sum[i] = float32(float64(sum[i]) + float64(std*z0))
			if i+1 < hi {
				sum[i+1] = float32(float64(sum[i+1]) + float64(std*z1))
			}
		}
	}
	n := len(sum)
	workers := min(runtime.GOMAXPROCS(0), n/noiseParallelMin)
	if workers <= 1 {
		add(0, n)
		return
	}
	parallel.Chunks(n, (n/workers+1)&^1, add)
}
