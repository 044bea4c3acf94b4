package models

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

func TestClipConstant(t *testing.T) {
	tests := []struct {
		clip   Clip
		lo, hi float64
	}{
		{Clip{Mode: ClipHard, C: 1}, 1, 1},
		{Clip{Mode: ClipSmooth, C: 1}, 1.114, 1.116},
		{Clip{Mode: ClipSmooth, C: 3, GELU: GELUTanh}, 1.11, 1.12},
	}
	for _, tc := range tests {
		c := tc.clip.Constant()
		if c < tc.lo || c > tc.hi {
			t.Errorf("%+v: constant %v outside [%v, %v]", tc.clip, c, tc.lo, tc.hi)
		}
		if tc.clip.Mode != ClipSmooth {
			continue
		}
		// independent check: a fine grid of ‖g̃‖/C over ‖g‖/C never exceeds c and
		// comes within 1e-9 of it.
		best := 0.0
		for t0 := 0.0; t0 < 6; t0 += 1e-5 {
			s, _ := tc.clip.Scale(t0 * tc.clip.C)
			best = math.Max(best, s*t0)
		}
		if best > c+1e-12 || c-best > 1e-9 {
			t.Errorf("%+v: constant %.12f, grid maximum %.12f", tc.clip, c, best)
		}
	}
}

func TestClipScaleDerivative(t *testing.T) {
	for _, clip := range []Clip{{Mode: ClipSmooth, C: 2}, {Mode: ClipSmooth, C: 2, GELU: GELUTanh}, {Mode: ClipHard, C: 2}} {
		for _, norm := range []float64{0, 0.3, 1.9, 2, 2.1, 7, 2000} {
			if clip.Mode == ClipHard && norm == 2 {
				// the kink: the branch taken is s = 1, derivative 0 (one-sided)
				if s, ds := clip.Scale(norm); s != 1 || ds != 0 {
					t.Errorf("hard clip at the kink: s=%v ds=%v, want 1, 0", s, ds)
				}
				continue
			}
			h := 1e-6
			sp, _ := clip.Scale(norm + h)
			sm, _ := clip.Scale(math.Max(norm-h, 0))
			fd := (sp - sm) / (norm + h - math.Max(norm-h, 0))
			_, ds := clip.Scale(norm)
			if math.Abs(ds-fd) > 1e-7*math.Max(1, math.Abs(fd)) {
				t.Errorf("%+v at %v: ds %v, finite difference %v", clip, norm, ds, fd)
			}
		}
	}
}

// TestClipJVPFD checks ġ̃ against finite differences of the clipping map itself, for
// gradient norms below, near and far above C, both modes, and g = 0.
func TestClipJVPFD(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for _, mode := range []ClipMode{ClipSmooth, ClipHard} {
		for _, ratio := range []float64{0, 0.01, 0.5, 0.98, 1, 1.02, 3, 1000} {
			if mode == ClipHard && ratio == 1 {
				continue // the kink, see TestClipScaleDerivative
			}
			clip := Clip{Mode: mode, C: 1.5}
			g := randVec(rng, 20)
			for i := range g {
				g[i] *= ratio * clip.C
			}
			gd := randVec(rng, 20)
			got := make([]float64, 20)
			ClipJVP(clip, g, gd, got)
			fd := richardson(func(e float64) []float64 {
				v := axpy(e, gd, g)
				ClipVector(clip, v)
				return v
			}, 1e-4*math.Max(ratio, 0.01))
			tol := 1e-8
			if ratio == 0 {
				tol = 1e-6 // ‖·‖ is not smooth at 0: the difference is only O(h)
			}
			if e := relErr(got, fd); e > tol {
				t.Errorf("mode %d, ‖g‖/C = %v: JVP rel. error %.3g", mode, ratio, e)
			}
			// clipped norm never exceeds c·C
			v := append([]float64(nil), g...)
			ClipVector(clip, v)
			if nv := math.Sqrt(dot(v, v)); nv > clip.Constant()*clip.C*(1+1e-12) {
				t.Errorf("‖g̃‖ = %v above c·C = %v", nv, clip.Constant()*clip.C)
			}
		}
	}
}

// clipCases gives, for a sample with gradient norm gn, clip settings with ‖g‖ far
// below, near and far above C in both modes (hard clipping avoids the kink itself).
func clipCases(gn float64) []Clip {
	return []Clip{
		{Mode: ClipSmooth, C: 100 * gn}, {Mode: ClipSmooth, C: gn}, {Mode: ClipSmooth, C: gn / 100},
		{Mode: ClipSmooth, C: 0.8 * gn, GELU: GELUTanh},
		{Mode: ClipHard, C: 100 * gn}, {Mode: ClipHard, C: 1.02 * gn}, {Mode: ClipHard, C: 0.98 * gn}, {Mode: ClipHard, C: gn / 100},
	}
}

// TestClippedTangentNetworkFD checks the JVP of a network's clipped gradient along
// input and parameter directions against finite differences of ClippedGrads.
func TestClippedTangentNetworkFD(t *testing.T) {
	for _, name := range []string{"tiny-conv", "mnist-cnn"} {
		arch := tinyConv()
		if name != "tiny-conv" {
			arch, _ = ArchByName(name)
		}
		n := newNet64(t, arch, backends64()[0])
		P, D := n.NumParams(), n.InputDim()
		params, x, y := randomProblem(arch, 1, 21)
		g, _, err := n.PerSampleGrads(params, x, y, 1)
		if err != nil {
			t.Fatal(err)
		}
		gn := math.Sqrt(dot(g, g))
		rng := rand.New(rand.NewPCG(6, 6))
		xdot, pdot := randVec(rng, D), randVec(rng, P)
		res, err := n.Tangent(params, x, y, 1, 1, xdot, pdot, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, clip := range clipCases(gn) {
			t.Run(fmt.Sprintf("%s/mode%d/gelu%d/C=%.3g‖g‖", name, clip.Mode, clip.GELU, clip.C/gn), func(t *testing.T) {
				got := make([]float64, P)
				ClipJVP(clip, res.Grads, res.GradDots, got)
				fd := richardson(func(e float64) []float64 {
					v, _, err := n.ClippedGrads(axpy(e, pdot, params), axpy(e, xdot, x), y, 1, clip)
					if err != nil {
						t.Fatal(err)
					}
					return v
				}, 1e-4)
				if e := relErr(got, fd); e > 1e-6 {
					t.Errorf("clipped-gradient JVP rel. error %.3g", e)
				}
			})
		}
	}
}

// TestFILExactTraceFD compares the exact trace (all coordinates) with the sum over
// every input coordinate of squared finite-difference JVPs of the clipped gradient.
func TestFILExactTraceFD(t *testing.T) {
	arch := tinyConv()
	for _, bc := range backends64() {
		n := newNet64(t, arch, bc)
		D := n.InputDim()
		const B = 2
		params, x, y := randomProblem(arch, B, 31)
		g, _, _ := n.PerSampleGrads(params, x, y, B)
		gn := math.Sqrt(dot(g[:n.NumParams()], g[:n.NumParams()]))
		all := make([]int, D)
		for i := range all {
			all[i] = i
		}
		for _, clip := range []Clip{{Mode: ClipSmooth, C: gn}, {Mode: ClipSmooth, C: gn / 50}, {Mode: ClipHard, C: gn / 3}, {Mode: ClipHard, C: 10 * gn}} {
			t.Run(fmt.Sprintf("%s/mode%d/C=%.3g", bc.name, clip.Mode, clip.C), func(t *testing.T) {
				out := make([]float64, B)
				if err := n.FILSqNorms(params, x, y, B, clip, [][]int{all, all}, out); err != nil {
					t.Fatal(err)
				}
				for s := 0; s < B; s++ {
					var want float64
					xs := x[s*D : (s+1)*D]
					for i := 0; i < D; i++ {
						e := make([]float64, D)
						e[i] = 1
						jv := richardson(func(h float64) []float64 {
							v, _, err := n.ClippedGrads(params, axpy(h, e, xs), y[s:s+1], 1, clip)
							if err != nil {
								t.Fatal(err)
							}
							return v
						}, 1e-4)
						want += dot(jv, jv)
					}
					if math.Abs(out[s]-want) > 1e-6*want {
						t.Errorf("sample %d: exact trace %.10g, finite differences %.10g", s, out[s], want)
					}
				}
			})
		}
	}
}

// TestFILEstimatorUnbiased draws k coordinates per replica independently and checks
// that the mean of (d/k)·Σ_j ‖J e_{i_j}‖² is within 3 standard errors of the exact
// trace.
func TestFILEstimatorUnbiased(t *testing.T) {
	arch := tinyConv()
	n := newNet64(t, arch, backends64()[0])
	D := n.InputDim()
	params, x, y := randomProblem(arch, 1, 41)
	clip := Clip{Mode: ClipSmooth, C: 0.5}
	all := make([]int, D)
	for i := range all {
		all[i] = i
	}
	exact := make([]float64, 1)
	if err := n.FILSqNorms(params, x, y, 1, clip, [][]int{all}, exact); err != nil {
		t.Fatal(err)
	}
	const R, k = 2000, 3
	xs := make([]float64, 0, R*D)
	ys := make([]int, R)
	coords := make([][]int, R)
	rng := rand.New(rand.NewPCG(8, 8))
	for r := 0; r < R; r++ {
		xs = append(xs, x...)
		ys[r] = y[0]
		coords[r] = []int{rng.IntN(D), rng.IntN(D), rng.IntN(D)}
	}
	out := make([]float64, R)
	if err := n.FILSqNorms(params, xs, ys, R, clip, coords, out); err != nil {
		t.Fatal(err)
	}
	var m, m2 float64
	for _, v := range out {
		e := float64(D) / k * v
		m += e
		m2 += e * e
	}
	m /= R
	se := math.Sqrt((m2/R - m*m) / (R - 1))
	if math.Abs(m-exact[0]) > 3*se || se == 0 {
		t.Errorf("estimator mean %.6g ± %.2g, exact trace %.6g", m, se, exact[0])
	}
}

// TestInputGradOfClippedDotFD checks ∇_x⟨v, g̃(x)⟩ against finite differences of
// ⟨v, ClippedGrads(x)⟩ on every coordinate (tiny net) and along random directions
// (mnist-cnn), with v shared and per sample, both clip modes.
func TestInputGradOfClippedDotFD(t *testing.T) {
	for _, name := range []string{"tiny-conv", "mnist-cnn", "mlp"} {
		arch := tinyConv()
		if name != "tiny-conv" {
			arch, _ = ArchByName(name)
		}
		for _, bc := range backends64() {
			n := newNet64(t, arch, bc)
			P, D := n.NumParams(), n.InputDim()
			const B = 2
			params, x, y := randomProblem(arch, B, 51)
			g, _, _ := n.PerSampleGrads(params, x, y, B)
			gn := math.Sqrt(dot(g[:P], g[:P]))
			rng := rand.New(rand.NewPCG(9, 9))
			for vi, v := range [][]float64{randVec(rng, P), append(randVec(rng, P), randVec(rng, P)...)} {
				for _, clip := range []Clip{{Mode: ClipSmooth, C: gn}, {Mode: ClipSmooth, C: gn / 30}, {Mode: ClipHard, C: gn / 2}, {Mode: ClipHard, C: 30 * gn}} {
					t.Run(fmt.Sprintf("%s/%s/v%d/mode%d/C=%.3g", name, bc.name, vi, clip.Mode, clip.C), func(t *testing.T) {
						got, err := n.InputGradOfClippedDot(params, x, y, B, v, clip)
						if err != nil {
							t.Fatal(err)
						}
						for s := 0; s < B; s++ {
							vs := v
							if len(v) > P {
								vs = v[s*P : (s+1)*P]
							}
							f := func(xs []float64) float64 {
								c, _, err := n.ClippedGrads(params, xs, y[s:s+1], 1, clip)
								if err != nil {
									t.Fatal(err)
								}
								return dot(vs, c)
							}
							xs := x[s*D : (s+1)*D]
							dirs := [][]float64{randVec(rng, D), randVec(rng, D)}
							if D < 100 {
								dirs = nil
								for i := 0; i < D; i++ {
									e := make([]float64, D)
									e[i] = 1
									dirs = append(dirs, e)
								}
							}
							want, have := make([]float64, len(dirs)), make([]float64, len(dirs))
							for i, r := range dirs {
								want[i] = richardson(func(h float64) []float64 { return []float64{f(axpy(h, r, xs))} }, 1e-4)[0]
								have[i] = dot(got[s*D:(s+1)*D], r)
							}
							if e := relErr(have, want); e > 1e-6 {
								t.Errorf("sample %d: rel. error %.3g (%v vs %v)", s, e, have[:min(3, len(have))], want[:min(3, len(want))])
							}
						}
					})
				}
			}
		}
	}
}

// TestFILSparseMatchesDense checks FILSqNorms (one-hot tangents propagated sparsely
// through the first parameter layer) against explicit dense input tangents through
// Tangent followed by ClipJVP, for every network, with repeated, edge and padding-
// adjacent coordinates and samples with fewer coordinates than others.
func TestFILSparseMatchesDense(t *testing.T) {
	for _, tc := range testArchs(t) {
		t.Run(tc.arch.Name, func(t *testing.T) {
			n := newNet64(t, tc.arch, backends64()[0])
			P, D := n.NumParams(), n.InputDim()
			B := min(2, tc.batch)
			params, x, y := randomProblem(tc.arch, B, 91)
			coords := [][]int{{0, D - 1, D / 2, D / 2, 1}, {7, D - 2}}[:B]
			k := 5
			xdot := make([]float64, B*k*D)
			for s, cl := range coords {
				for j, c := range cl {
					xdot[(s*k+j)*D+c] = 1
				}
			}
			res, err := n.Tangent(params, x, y, B, k, xdot, nil, false)
			if err != nil {
				t.Fatal(err)
			}
			for _, clip := range []Clip{{Mode: ClipSmooth, C: 0.3}, {Mode: ClipHard, C: 0.01}} {
				out := make([]float64, B)
				if err := n.FILSqNorms(params, x, y, B, clip, coords, out); err != nil {
					t.Fatal(err)
				}
				for s := 0; s < B; s++ {
					var want float64
					jv := make([]float64, P)
					for j := range coords[s] {
						ClipJVP(clip, res.Grads[s*P:(s+1)*P], res.GradDots[(s*k+j)*P:(s*k+j+1)*P], jv)
						want += dot(jv, jv)
					}
					if math.Abs(out[s]-want) > 1e-9*want {
						t.Errorf("mode %d sample %d: FIL %.12g, dense tangents %.12g", clip.Mode, s, out[s], want)
					}
				}
			}
		})
	}
}

// TestCountFLOPs checks the FLOP model against hand counts for mnist-cnn.
func TestCountFLOPs(t *testing.T) {
	arch, _ := ArchByName("mnist-cnn")
	c, err := CountFLOPs(arch, 50)
	if err != nil {
		t.Fatal(err)
	}
	conv1, conv2, d1, d2 := 16.0*64*196, 32.0*256*25, 512.0*32, 32.0*10
	grad := 2*conv1*2 + 2*(conv2+d1+d2)*3
	dir := 2*conv1*1 + 2*(conv2+d1+d2)*4 + 4*26010 // fwd, bwd, two ġ terms; conv1: one ġ term
	if c.PerSampleGrad != grad || c.FILDirection != dir || c.FILStep != grad+50*dir {
		t.Errorf("got %+v, want grad %v, direction %v", c, grad, dir)
	}
}

// TestFILNormalizedInputs checks that FIL w.r.t. normalised inputs multiplies each
// coordinate's ‖J e_i‖² by std_c², on the sparse and on the dense seeding path.
func TestFILNormalizedInputs(t *testing.T) {
	arch := tinyConv() // Normalize with std 0.3 (channel 0) and 0.5 (channel 1), 7×6
	params, x, y := randomProblem(arch, 1, 17)
	clip := Clip{Mode: ClipSmooth, C: 0.2}
	for _, c := range []struct {
		coord int
		std   float64
	}{{3, 0.3}, {41, 0.3}, {42, 0.5}, {80, 0.5}} {
		for _, dense := range []bool{false, true} {
			n := newNet64(t, arch, backends64()[0])
			if dense {
				n.sparseFirst = false // force the dense seeding path
			}
			raw := make([]float64, 1)
			if err := n.FILSqNorms(params, x, y, 1, clip, [][]int{{c.coord}}, raw); err != nil {
				t.Fatal(err)
			}
			n.SetFILNormalizedInputs(true)
			nrm := make([]float64, 1)
			if err := n.FILSqNorms(params, x, y, 1, clip, [][]int{{c.coord}}, nrm); err != nil {
				t.Fatal(err)
			}
			if want := raw[0] * c.std * c.std; math.Abs(nrm[0]-want) > 1e-12*want || raw[0] == 0 {
				t.Errorf("coord %d dense=%v: normalised %v, want std²·raw = %v", c.coord, dense, nrm[0], want)
			}
		}
	}
}
