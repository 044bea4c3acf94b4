package models

import (
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
)

// ghostArchYAML is an architecture file (what `--arch` reads) that exercises what the
// built-in models do not: a stride-1 SAME conv, a stride-2 conv with a non-square
// kernel and asymmetric padding, ReLU and ELU, and a dense layer of a conv's output.
const ghostArchYAML = `
name: ghost-arch
layers:
  - {kind: conv, out: 6, kernel: 3, padding: same}
  - relu
  - {kind: conv, out: 5, kh: 3, kw: 2, stride: 2, pad_t: 1, pad_b: 0, pad_l: 0, pad_r: 1}
  - elu
  - {kind: avgpool, kernel: 2, stride: 1}
  - flatten
  - {kind: dense, out: 12}
  - tanh
  - {kind: dense}
`

// ghostTestArchs returns every built-in architecture and the architecture file's,
// with a batch for each (cifar-cnn's is small: ghost norms of its 32×32 layers cost
// T² = 10⁶ products per sample and channel pair; its 3 samples are 3 chunks of
// one group).
func ghostTestArchs(t *testing.T) []struct {
	arch  Arch
	batch int
} {
	t.Helper()
	var out []struct {
		arch  Arch
		batch int
	}
	for _, name := range ArchNames() {
		a, err := ArchByName(name)
		if err != nil {
			t.Fatal(err)
		}
		b := 37 // more than one ghost group (16–32 samples) for the small models
		if name == "cifar-cnn" {
			b = 3
		}
		out = append(out, struct {
			arch  Arch
			batch int
		}{a, b})
	}
	spec, err := ParseArchSpec(strings.NewReader(ghostArchYAML))
	if err != nil {
		t.Fatal(err)
	}
	a, err := spec.Resolve(Shape{C: 2, H: 11, W: 9}, 4)
	if err != nil {
		t.Fatal(err)
	}
	return append(out, struct {
		arch  Arch
		batch int
	}{a, 23})
}

// float64Reference returns the per-sample gradients and losses of the float32
// problem, computed in float64.
func float64Reference(t *testing.T, arch Arch, params, x []float32, y []int, batch int) (grads []float64, net *Network[float64], p64, x64 []float64) {
	t.Helper()
	net, err := NewNetwork(arch, NewCPUBackend[float64]())
	if err != nil {
		t.Fatal(err)
	}
	p64, x64 = toF64(params), toF64(x)
	grads, _, err = net.PerSampleGrads(p64, x64, y, batch)
	if err != nil {
		t.Fatal(err)
	}
	return grads, net, p64, x64
}

// medianNorm returns the median of the per-sample gradient norms (batch×P grads).
func medianNorm(grads []float64, batch int) float64 {
	p := len(grads) / batch
	norms := make([]float64, batch)
	for s := range norms {
		var ss float64
		for _, v := range grads[s*p : (s+1)*p] {
			ss += v * v
		}
		norms[s] = math.Sqrt(ss)
	}
	sort.Float64s(norms)
	return norms[batch/2]
}

// clippedSum64 returns Σ_s c_s·g_s in float64 from float64 per-sample gradients.
func clippedSum64(grads []float64, batch int, clip Clip) []float64 {
	p := len(grads) / batch
	sum := make([]float64, p)
	for s := 0; s < batch; s++ {
		g := grads[s*p : (s+1)*p]
		var ss float64
		for _, v := range g {
			ss += v * v
		}
		c, _ := clip.Scale(math.Sqrt(ss))
		for i, v := range g {
			sum[i] += c * v
		}
	}
	return sum
}

// ghostRelErr returns ‖got − want‖₂/‖want‖₂.
func ghostRelErr[T Float](got []T, want []float64) float64 {
	var num, den float64
	for i, w := range want {
		d := float64(got[i]) - w
		num += d * d
		den += w * w
	}
	return math.Sqrt(num / den)
}

// ghostSumTol is the tolerance of a float32 clipped sum against the float64 one, as
// a relative L2 error. The float32 passes round every product and sum with unit
// roundoff u = 2⁻²⁴ ≈ 6·10⁻⁸; a GEMM's sum of K terms carries an error of about
// √K·u relative to its magnitude — K up to 1.6·10⁴ here (a ghost group of 16
// cifar-cnn samples × 1 024 positions; 18 mnist-cnn samples × 196), so ≈ 8·10⁻⁶
// — and the forward and backward passes add a few such errors.
// Measured: the per-sample path 5·10⁻⁸–4·10⁻⁷ against float64 on these models, the
// ghost and mixed sums 1·10⁻⁷–4·10⁻⁷. 10⁻⁵ is the √K·u estimate and 25 times the
// largest measured error, and far below a real error (one sample left out or
// clipped by a wrong factor changes the sum by ≈ 1/batch ≥ 3 %).
const ghostSumTol = 1e-5

// TestGhostClippedSumMatchesPerSample checks that ghost and mixed (auto) clipping
// give the per-sample path's clipped sum to float32 rounding, on every built-in
// architecture and an architecture file, with hard and smooth clipping (C at the
// median norm, so that some samples are clipped and some not), on both CPU
// layouts (the packed GEMM's patch-major strided convs, and gonum's column-major
// ones), and in float64, where the sums must agree to 10⁻¹⁰: there the only
// difference is the order of the arithmetic.
func TestGhostClippedSumMatchesPerSample(t *testing.T) {
	backends := []struct {
		name string
		be   Backend[float32]
	}{
		{"packed", NewCPUBackend[float32]()},
		{"gonum", Restrict(NewCPUBackend[float32](), ExtHostKernels)},
	}
	for _, tc := range ghostTestArchs(t) {
		arch, batch := tc.arch, tc.batch
		t.Run(arch.Name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(21, uint64(batch)))
			params, x, y, _ := testProblem(arch, 4, batch, 0, rng, false)
			grads64, net64, p64, x64 := float64Reference(t, arch, params, x, y, batch)
			C := medianNorm(grads64, batch)
			for _, mode := range []ClipMode{ClipSmooth, ClipHard} {
				clip := Clip{Mode: mode, C: C}
				want := clippedSum64(grads64, batch, clip)
				// float64: ghost and auto against the float64 per-sample path.
				for _, algo := range []ClipAlgo{ClipGhost, ClipAuto} {
					if err := net64.SetClipAlgo(algo); err != nil {
						t.Fatal(err)
					}
					got := make([]float64, len(p64))
					if err := net64.ClippedGradSum(p64, x64, y, batch, clip, got, make([]float64, batch)); err != nil {
						t.Fatal(err)
					}
					if e := ghostRelErr(got, want); !(e < 1e-10) {
						t.Errorf("float64 %v %v: relative error %.3g against the per-sample sum", mode, algo, e)
					}
				}
				for _, b := range backends {
					net, err := NewNetwork(arch, b.be)
					if err != nil {
						t.Fatal(err)
					}
					ps := make([]float32, len(params))
					psLoss := make([]float64, batch)
					if err := net.ClippedGradSum(params, x, y, batch, clip, ps, psLoss); err != nil {
						t.Fatal(err)
					}
					ePS := ghostRelErr(ps, want)
					if !(ePS < ghostSumTol) {
						t.Errorf("%s %v per-sample: relative error %.3g against float64", b.name, mode, ePS)
					}
					for _, algo := range []ClipAlgo{ClipGhost, ClipAuto} {
						if err := net.SetClipAlgo(algo); err != nil {
							t.Fatal(err)
						}
						got := make([]float32, len(params))
						loss := make([]float64, batch)
						if err := net.ClippedGradSum(params, x, y, batch, clip, got, loss); err != nil {
							t.Fatal(err)
						}
						e := ghostRelErr(got, want)
						t.Logf("%s %v %v: relative error %.2g against float64 (per-sample path %.2g)", b.name, mode, algo, e, ePS)
						if !(e < ghostSumTol) {
							t.Errorf("%s %v %v: relative error %.3g against float64 (per-sample path %.3g)", b.name, mode, algo, e, ePS)
						}
						if e := ghostRelErr(got, toF64(ps)); !(e < ghostSumTol) {
							t.Errorf("%s %v %v: relative difference %.3g from the float32 per-sample path", b.name, mode, algo, e)
						}
						for s := range loss {
							if loss[s] != psLoss[s] {
								t.Fatalf("%s %v %v: loss %d = %v, per-sample path %v", b.name, mode, algo, s, loss[s], psLoss[s])
							}
						}
					}
					if err := net.SetClipAlgo(ClipPerSample); err != nil {
						t.Fatal(err)
					}
				}
			}
		})
	}
}

// TestGhostNormsMatchFloat64 checks each sample's squared gradient norm taken by
// ghost and mixed clipping (float32) against the norm of its float64 per-sample
// gradient: relative error below 10⁻⁵ (float32 rounding of the Gram and outer
// product terms, accumulated in float64), and below 10⁻¹² in float64.
func TestGhostNormsMatchFloat64(t *testing.T) {
	for _, tc := range ghostTestArchs(t) {
		arch, batch := tc.arch, tc.batch
		t.Run(arch.Name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(5, uint64(batch)))
			params, x, y, _ := testProblem(arch, 6, batch, 0, rng, false)
			grads64, net64, p64, x64 := float64Reference(t, arch, params, x, y, batch)
			p := len(params)
			want := make([]float64, batch)
			for s := range want {
				for _, v := range grads64[s*p : (s+1)*p] {
					want[s] += v * v
				}
			}
			net, err := NewNetwork(arch, NewCPUBackend[float32]())
			if err != nil {
				t.Fatal(err)
			}
			clip := Clip{C: 1}
			for _, algo := range []ClipAlgo{ClipGhost, ClipAuto} {
				if err := net.SetClipAlgo(algo); err != nil {
					t.Fatal(err)
				}
				if err := net64.SetClipAlgo(algo); err != nil {
					t.Fatal(err)
				}
				sq := make([]float64, batch)
				net.clippedGradSumGhost(params, x, y, batch, clip, make([]float32, p), make([]float64, batch), sq)
				sq64 := make([]float64, batch)
				net64.clippedGradSumGhost(p64, x64, y, batch, clip, make([]float64, p), make([]float64, batch), sq64)
				for s := range want {
					if e := math.Abs(sq[s]-want[s]) / want[s]; !(e < 1e-5) {
						t.Errorf("%v sample %d: ‖g‖² = %.9g, float64 per-sample %.9g (rel. %.2g)", algo, s, sq[s], want[s], e)
					}
					if e := math.Abs(sq64[s]-want[s]) / want[s]; !(e < 1e-12) {
						t.Errorf("float64 %v sample %d: ‖g‖² = %.15g, per-sample %.15g (rel. %.2g)", algo, s, sq64[s], want[s], e)
					}
				}
			}
		})
	}
}

// TestClipPlanAuto checks mixed clipping's per-layer choice against the FLOP model
// worked out by hand: ghost norm when 2·T²·(DIn+DOut) < 2·T·DIn·DOut.
func TestClipPlanAuto(t *testing.T) {
	for _, tc := range []struct {
		arch string
		// per parameter layer: T, DIn, DOut, ghost
		want [][4]int
	}{
		// conv0: 14×14 positions, 8×8 patches: 196·80 > 64·16 → per sample;
		// conv3: 5×5 positions, 16·4·4 patches: 25·288 = 7 200 < 256·32 = 8 192 → ghost.
		{"mnist-cnn", [][4]int{{196, 64, 16, 0}, {25, 256, 32, 1}, {1, 512, 32, 1}, {1, 32, 10, 1}}},
		// 32×32 and 16×16 layers per sample (1 024·59 > 27·32, …), the 8×8 ones
		// ghost (64·704 = 45 056 < 576·128 = 73 728; 64·1 280 < 1 152·128).
		{"cifar-cnn", [][4]int{{1024, 27, 32, 0}, {1024, 288, 32, 0}, {256, 288, 64, 0}, {256, 576, 64, 0},
			{64, 576, 128, 1}, {64, 1152, 128, 1}, {1, 2048, 128, 1}, {1, 128, 10, 1}}},
		{"linear", [][4]int{{1, 784, 10, 1}}},
	} {
		arch, err := ArchByName(tc.arch)
		if err != nil {
			t.Fatal(err)
		}
		net, err := NewNetwork(arch, NewCPUBackend[float32]())
		if err != nil {
			t.Fatal(err)
		}
		if net.ClipPlan() != nil || net.ClipAlgo() != ClipPerSample {
			t.Fatalf("%s: a new network has plan %v, algorithm %v", tc.arch, net.ClipPlan(), net.ClipAlgo())
		}
		for _, algo := range []ClipAlgo{ClipAuto, ClipGhost} {
			if err := net.SetClipAlgo(algo); err != nil {
				t.Fatal(err)
			}
			plan := net.ClipPlan()
			if len(plan) != len(tc.want) {
				t.Fatalf("%s %v: %d layers in the plan, want %d", tc.arch, algo, len(plan), len(tc.want))
			}
			for j, w := range tc.want {
				l := plan[j]
				ghost := w[3] == 1 || algo == ClipGhost
				T, a, b := float64(w[0]), float64(w[1]), float64(w[2])
				if l.Positions != w[0] || l.DIn != w[1] || l.DOut != w[2] || l.Ghost != ghost ||
					l.GhostFLOPs != 2*T*T*(a+b) || l.PerSampleFLOPs != 2*T*a*b {
					t.Errorf("%s %v layer %d: %+v, want T %d DIn %d DOut %d ghost %v", tc.arch, algo, l.Layer, l, w[0], w[1], w[2], ghost)
				}
			}
		}
	}
}

// TestSetClipAlgoRefused checks that ghost and mixed clipping are refused, with the
// per-sample algorithm kept, on a backend with device extensions, and that an
// unknown algorithm or name is an error.
func TestSetClipAlgoRefused(t *testing.T) {
	arch, err := ArchByName("mlp")
	if err != nil {
		t.Fatal(err)
	}
	net, err := NewNetwork(arch, Backend[float32](fakeDevice{Backend: NewCPUBackend[float32]()}))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []ClipAlgo{ClipGhost, ClipAuto} {
		err := net.SetClipAlgo(a)
		if err == nil || !strings.Contains(err.Error(), "CPU backend only") {
			t.Errorf("%v on a device backend: error %v", a, err)
		}
		if net.ClipAlgo() != ClipPerSample {
			t.Errorf("%v refused, but the algorithm is now %v", a, net.ClipAlgo())
		}
	}
	if err := net.SetClipAlgo(ClipAlgo(7)); err == nil {
		t.Error("unknown algorithm accepted")
	}
	for _, s := range []string{"", "per-sample", "ghost", "auto"} {
		a, err := ParseClipAlgo(s)
		if err != nil || (s != "" && a.String() != s) {
			t.Errorf("ParseClipAlgo(%q) = %v, %v", s, a, err)
		}
	}
	if _, err := ParseClipAlgo("Ghost"); err == nil {
		t.Error(`ParseClipAlgo("Ghost") accepted`)
	}
}

// TestGhostWorkerCountBitIdentical checks that ghost and mixed clipping give
// bit-identical sums with 1, 2 and 3 workers (chunks are added in batch order).
func TestGhostWorkerCountBitIdentical(t *testing.T) {
	arch, err := ArchByName("mnist-cnn")
	if err != nil {
		t.Fatal(err)
	}
	const batch = 75 // five groups (4 of 18 samples in chunks of 6, one of 3)
	rng := rand.New(rand.NewPCG(3, 3))
	params, x, y, _ := testProblem(arch, 2, batch, 0, rng, false)
	for _, algo := range []ClipAlgo{ClipGhost, ClipAuto} {
		var ref []float32
		for _, w := range []int{1, 2, 3} {
			net := workerNetwork(t, arch, w)
			if err := net.SetClipAlgo(algo); err != nil {
				t.Fatal(err)
			}
			sum := make([]float32, len(params))
			if err := net.ClippedGradSum(params, x, y, batch, Clip{C: 0.5}, sum, make([]float64, batch)); err != nil {
				t.Fatal(err)
			}
			if ref == nil {
				ref = sum
				continue
			}
			for i := range sum {
				if math.Float32bits(sum[i]) != math.Float32bits(ref[i]) {
					t.Fatalf("%v, %d workers: sum[%d] = %v, 1 worker %v", algo, w, i, sum[i], ref[i])
				}
			}
		}
	}
}

// workerNetwork returns arch on a CPU backend with w workers (tiled GEMMs when w >
// 1, the packed kernel where the CPU has it), for worker-count bit-identity tests.
func workerNetwork(t *testing.T, arch Arch, w int) *Network[float32] {
	t.Helper()
	be := &cpuBackend[float32]{workers: w, tile: w > 1}
	if hasAVX2FMA() {
		be.sg = &packedSgemm{}
	}
	net, err := NewNetwork(arch, Backend[float32](be))
	if err != nil {
		t.Fatal(err)
	}
	return net
}
