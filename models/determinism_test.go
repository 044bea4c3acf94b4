package models

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestFloat32WorkerCountBitIdentical checks that the float32 CPU backend (packed GEMM
// and vector kernels where the CPU has them) gives bit-identical per-sample gradients,
// clipped sums and FIL values with 1, 2 and 3 workers.
func TestFloat32WorkerCountBitIdentical(t *testing.T) {
	newBE := func(w int) *cpuBackend[float32] {
		b := &cpuBackend[float32]{workers: w, tile: w > 1}
		if hasAVX2FMA() {
			b.sg = &packedSgemm{}
		}
		return b
	}
	// batches of several first-order chunks (mnist-cnn: 6 samples, mlp: 32)
	for _, tc := range []struct {
		name  string
		batch int
	}{{"mnist-cnn", 13}, {"mlp", 70}} {
		name, batch := tc.name, tc.batch
		t.Run(name, func(t *testing.T) {
			arch, err := ArchByName(name)
			if err != nil {
				t.Fatal(err)
			}
			const k = 5
			rng := rand.New(rand.NewPCG(9, 9))
			params, x, y, coords := testProblem(arch, 3, batch, k, rng, false)
			type result struct {
				grads, sum []float32
				losses     []float64
				fil        []float64
			}
			run := func(w int) result {
				net, err := NewNetwork(arch, Backend[float32](newBE(w)))
				if err != nil {
					t.Fatal(err)
				}
				var r result
				if r.grads, _, err = net.PerSampleGrads(params, x, y, batch); err != nil {
					t.Fatal(err)
				}
				r.sum = make([]float32, len(params))
				r.losses = make([]float64, batch)
				if err := net.ClippedGradSum(params, x, y, batch, Clip{C: 0.5}, r.sum, r.losses); err != nil {
					t.Fatal(err)
				}
				r.fil = make([]float64, batch)
				if err := net.FILSqNorms(params, x, y, batch, Clip{C: 0.5}, coords, r.fil); err != nil {
					t.Fatal(err)
				}
				return r
			}
			ref := run(1)
			for _, w := range []int{2, 3} {
				got := run(w)
				for i := range ref.grads {
					if math.Float32bits(got.grads[i]) != math.Float32bits(ref.grads[i]) {
						t.Fatalf("%d workers: grad[%d] = %v, 1 worker %v", w, i, got.grads[i], ref.grads[i])
					}
				}
				for i := range ref.sum {
					if math.Float32bits(got.sum[i]) != math.Float32bits(ref.sum[i]) {
						t.Fatalf("%d workers: sum[%d] = %v, 1 worker %v", w, i, got.sum[i], ref.sum[i])
					}
				}
				for i := range ref.fil {
					if got.fil[i] != ref.fil[i] || got.losses[i] != ref.losses[i] {
						t.Fatalf("%d workers: sample %d: FIL %v loss %v, 1 worker %v %v", w, i, got.fil[i], got.losses[i], ref.fil[i], ref.losses[i])
					}
				}
			}
		})
	}
}

// TestFloat32FastPathMatchesPlain compares the float32 CPU backend with its AVX2
// kernels (packed GEMM, rational tanh, vector dots) against the same backend on
// gonum and plain Go loops, end to end: per-sample gradients and FIL values.
func TestFloat32FastPathMatchesPlain(t *testing.T) {
	if !hasAVX2FMA() {
		t.Log("no AVX2/FMA: both paths are the plain one")
		return
	}
	for _, name := range []string{"mnist-cnn", "mnist-cnn-3x3", "mlp", "cifar-cnn"} {
		t.Run(name, func(t *testing.T) {
			arch, err := ArchByName(name)
			if err != nil {
				t.Fatal(err)
			}
			const batch, k = 3, 4
			rng := rand.New(rand.NewPCG(11, 11))
			params, x, y, coords := testProblem(arch, 5, batch, k, rng, false)
			run := func(fast bool) ([]float32, []float64) {
				be := &cpuBackend[float32]{workers: 2, tile: true}
				if fast {
					be.sg = &packedSgemm{}
				}
				net, err := NewNetwork(arch, Backend[float32](be))
				if err != nil {
					t.Fatal(err)
				}
				g, _, err := net.PerSampleGrads(params, x, y, batch)
				if err != nil {
					t.Fatal(err)
				}
				fil := make([]float64, batch)
				if err := net.FILSqNorms(params, x, y, batch, Clip{C: 1}, coords, fil); err != nil {
					t.Fatal(err)
				}
				return g, fil
			}
			g0, f0 := run(false)
			g1, f1 := run(true)
			var num, den float64
			for i := range g0 {
				num += (float64(g1[i]) - float64(g0[i])) * (float64(g1[i]) - float64(g0[i]))
				den += float64(g0[i]) * float64(g0[i])
			}
			e := math.Sqrt(num / den)
			if !(e < 1e-4) {
				t.Errorf("per-sample gradients: relative error %.3g", e)
			}
			t.Logf("per-sample gradients: relative error %.3g", e)
			for s := range f0 {
				if e := math.Abs(f1[s]-f0[s]) / f0[s]; !(e < 1e-3) {
					t.Errorf("FIL sample %d: %v vs %v (rel. %.3g)", s, f1[s], f0[s], e)
				}
			}
		})
	}
}

// testProblem returns arch's float32 parameters InitParams(arch, paramSeed) and, drawn
// from rng in this order, batch inputs uniform in [0, 1) and, sample by sample, a
// label and k FIL coordinates (k − s for sample s when shrink, so that coordinate
// lists differ in length).
func testProblem(arch Arch, paramSeed uint64, batch, k int, rng *rand.Rand, shrink bool) (params, x []float32, y []int, coords [][]int) {
	p64 := InitParams(arch, paramSeed)
	params = make([]float32, len(p64))
	for i, v := range p64 {
		params[i] = float32(v)
	}
	d := arch.InputDim()
	x = make([]float32, batch*d)
	for i := range x {
		x[i] = rng.Float32()
	}
	y = make([]int, batch)
	coords = make([][]int, batch)
	for s := range y {
		y[s] = rng.IntN(arch.Classes)
		ks := k
		if shrink {
			ks = k - s
		}
		for j := 0; j < ks; j++ {
			coords[s] = append(coords[s], rng.IntN(d))
		}
	}
	return params, x, y, coords
}
