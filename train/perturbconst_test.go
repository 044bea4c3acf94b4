package train

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/dpfil/dpfil/models"
)

// randomPerturbConst returns a constant-body g_φ with every block random (β too) so
// that every derivative is exercised.
func randomPerturbConst(d, p, h, h2 int, clip models.Clip, mask []bool, rng *rand.Rand) *perturbNet {
	n := newPerturbConst(d, p, h, h2, 3.7, 2, clip, mask, 0.01, rng)
	o := n.constOff
	for i := range n.phi {
		n.phi[i] = 0.5 * rng.NormFloat64()
	}
	for i := 0; i < p; i++ {
		if mask != nil && !mask[i] {
			clear(n.phi[o[3]+i*h2 : o[3]+(i+1)*h2])
			n.phi[o[4]+i] = 0
		}
	}
	return n
}

var constBlockNames = []string{"β", "A", "a", "V", "c"}

// The constant body's δ is V·GeLU(A·β + a) + c, evaluated directly, the same for
// every sample, zero on frozen coordinates.
func TestPerturbConstForward(t *testing.T) {
	const d, p, h, h2 = 3, 4, 3, 2
	rng := rand.New(rand.NewPCG(5, 6))
	mask := []bool{true, false, true, true}
	n := randomPerturbConst(d, p, h, h2, perturbClips[0], mask, rng)
	pv := n.constViews(n.phi)
	want := make([]float64, p)
	for i := range want {
		if !mask[i] {
			continue
		}
		want[i] = pv.c[i]
		for j := 0; j < h2; j++ {
			z := pv.c1[j]
			for k := 0; k < h; k++ {
				z += pv.a1[j*h+k] * pv.beta[k]
			}
			want[i] += pv.v[i*h2+j] * z * 0.5 * (1 + math.Erf(z/math.Sqrt2))
		}
	}
	sms := batchTestSamples(d, p, 3, "dense", mask, rng)
	got := make([]float64, 3*p)
	n.perturbBatch(sms, got)
	for s := 0; s < 3; s++ {
		for i := range want {
			if math.Abs(got[s*p+i]-want[i]) > 1e-14*(1+math.Abs(want[i])) {
				t.Fatalf("sample %d: δ[%d] = %v, direct %v", s, i, got[s*p+i], want[i])
			}
		}
	}
	if want[1] != 0 || got[1] != 0 {
		t.Fatalf("frozen coordinate perturbed: %v", got[1])
	}
}

// ∂ℓ/∂φ of the constant body equals central finite differences in every block, for
// each clip, with and without a mask, with dense and one-hot probes, and the FIL term
// is on (so the derivative through the clip head is checked).
func TestPerturbConstLossGradientMatchesFiniteDifferences(t *testing.T) {
	const d, p, h, h2 = 6, 5, 4, 3
	for ci, clip := range perturbClips {
		for _, masked := range []bool{false, true} {
			rng := rand.New(rand.NewPCG(uint64(ci), 31))
			var mask []bool
			if masked {
				mask = []bool{true, false, true, true, false}
			}
			n := randomPerturbConst(d, p, h, h2, clip, mask, rng)
			sm := randomSample(d, p, 2, mask, rng)
			if ci == 1 {
				sm.u, sm.uIdx = nil, []int{0, 4}
			}
			grad := make([]float64, len(n.phi))
			L := n.loss(&sm, grad)
			_, _, delta := n.constForward()
			if dd := dotF64(delta, delta); !(L-dd > 0.05*L) {
				t.Fatalf("clip %d masked %v: loss %v, ‖δ‖² %v: the FIL term does not contribute", ci, masked, L, dd)
			}
			checkBlockGradients(t, fmt.Sprintf("clip %d masked %v", ci, masked), n, &sm, grad, n.constOff, constBlockNames, 1<<30, 1e-6, rng)
		}
	}
}

// The released Jacobian under the constant body is that of CLIP(g(z) + δ): filSq
// equals Σ_k ‖(CLIP(g(z + εu_k) + δ) − CLIP(g(z − εu_k) + δ))/2ε‖² with
// g(z) = g₀ + M·z, and differs from the unperturbed clip's (δ matters).
func TestPerturbConstFILMatchesFiniteDifferences(t *testing.T) {
	const d, p = 7, 5
	clip := models.Clip{Mode: models.ClipSmooth, C: 0.9, GELU: models.GELUExact}
	rng := rand.New(rand.NewPCG(8, 9))
	n := randomPerturbConst(d, p, 3, 4, clip, nil, rng)
	_, _, delta := n.constForward()
	M := make([]float64, p*d)
	for i := range M {
		M[i] = 0.3 * rng.NormFloat64()
	}
	g0 := make([]float64, p)
	for i := range g0 {
		g0[i] = rng.NormFloat64()
	}
	gOf := func(x []float64) []float64 {
		g := append([]float64(nil), g0...)
		for i := range g {
			for j, v := range x {
				g[i] += M[i*d+j] * v
			}
		}
		return g
	}
	released := func(x []float64, shift []float64) []float64 {
		g := gOf(x)
		ss := 0.0
		for i := range g {
			g[i] += shift[i]
			ss += g[i] * g[i]
		}
		s, _ := clip.Scale(math.Sqrt(ss))
		for i := range g {
			g[i] *= s
		}
		return g
	}
	x := make([]float64, d)
	for i := range x {
		x[i] = rng.Float64()
	}
	sm := pnSample{x: x, g: gOf(x)}
	for k := 0; k < 3; k++ {
		u := make([]float64, d)
		for i := range u {
			u[i] = rng.NormFloat64()
		}
		gd := make([]float64, p)
		for i := range gd {
			for j, v := range u {
				gd[i] += M[i*d+j] * v
			}
		}
		sm.u, sm.gdots = append(sm.u, u), append(sm.gdots, gd)
	}
	fd := func(shift []float64) float64 {
		tot := 0.0
		for _, u := range sm.u {
			const eps = 1e-6
			xp, xm := make([]float64, d), make([]float64, d)
			for i := range x {
				xp[i], xm[i] = x[i]+eps*u[i], x[i]-eps*u[i]
			}
			vp, vm := released(xp, shift), released(xm, shift)
			for i := range vp {
				v := (vp[i] - vm[i]) / (2 * eps)
				tot += v * v
			}
		}
		return tot
	}
	want, plain := fd(delta), fd(make([]float64, p))
	if got := n.filSq(&sm); math.Abs(got-want) > 1e-6*want {
		t.Fatalf("filSq %v, finite differences %v", got, want)
	}
	if math.Abs(want-plain) < 0.01*plain {
		t.Fatalf("δ does not change the FIL (%v vs %v): the test checks nothing", want, plain)
	}
}

// The batched paths of the constant body equal the per-sample ones.
func TestPerturbConstBatchMatchesPerSample(t *testing.T) {
	const d, p, h, h2 = 5, 7, 3, 4
	for ci, clip := range perturbClips {
		rng := rand.New(rand.NewPCG(uint64(ci), 77))
		mask := []bool{true, false, true, true, false, true, true}
		n := randomPerturbConst(d, p, h, h2, clip, mask, rng)
		sms := batchTestSamples(d, p, 40, "mixed", mask, rng)
		checkBatchMatchesPerSample(t, fmt.Sprintf("clip %+v", clip), n, sms, func(i int) string { return fmt.Sprintf("φ[%d]", i) })
	}
}

// A run with the constant body trains it (reports its arch, widths and L2, a
// perturbation that is the same for every sample, aligned with nothing in
// particular), changes the parameters and dFIL, and leaves ε unchanged; its widths
// default to Table B.6's; the standardisation options are refused with it.
func TestPerturbConstRun(t *testing.T) {
	data := toyData(60, 20, 6, 3, 9)
	run := func(tc TuningConfig) *Result {
		cfg := tuningConfig()
		cfg.Steps, cfg.FILCoords, cfg.Tuning = 3, 2, tc
		res, err := Run(context.Background(), cfg, Options{Model: smallNet(t), Data: data})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	plainCfg := TuningConfig{PretrainPublic: 0.5, PretrainSteps: 10}
	plain := run(plainCfg)
	on := plainCfg
	on.PerturbNet, on.PerturbArch, on.PerturbSteps, on.PerturbBatch, on.PerturbHidden, on.PerturbHidden2, on.PerturbLambda, on.PerturbL2 =
		true, PerturbArchConstant, 3, 8, 5, 4, 10, true
	pr := run(on)
	if pr.Epsilon != plain.Epsilon || pr.Sigma != plain.Sigma || !(pr.Epsilon > 0) {
		t.Fatalf("ε with g_φ %v (σ %v), without %v (σ %v)", pr.Epsilon, pr.Sigma, plain.Epsilon, plain.Sigma)
	}
	g := pr.Tuning.Perturb
	if g == nil || g.Arch != PerturbArchConstant || g.Hidden != 5 || g.Hidden2 != 4 || !g.L2 || g.Refreshes != 3 || !(g.PerturbNorm > 0) {
		t.Fatalf("tuning.perturb %+v", g)
	}
	same := true
	for i, v := range plain.Repeats[0].Params {
		same = same && pr.Repeats[0].Params[i] == v
	}
	if same || pr.Repeats[0].DFILMax == plain.Repeats[0].DFILMax || !(pr.Repeats[0].DFILMax > 0) {
		t.Fatalf("constant g_φ changed nothing: dFIL %v vs %v", pr.Repeats[0].DFILMax, plain.Repeats[0].DFILMax)
	}
	if d := (TuningConfig{PerturbNet: true, PerturbArch: PerturbArchConstant}).perturbDefaults(); d.PerturbHidden != 256 || d.PerturbHidden2 != 256 {
		t.Fatalf("constant default widths %d, %d, want Table B.6's 256, 256", d.PerturbHidden, d.PerturbHidden2)
	}
	for _, tc := range []TuningConfig{
		{PretrainPublic: 0.5, PerturbNet: true, PerturbArch: PerturbArchConstant, PerturbRestd: true},
		{PretrainPublic: 0.5, PerturbNet: true, PerturbArch: PerturbArchConstant, PerturbNoStd: true},
	} {
		cfg := tuningConfig()
		cfg.Tuning = tc
		if _, err := Run(context.Background(), cfg, Options{Model: smallNet(t), Data: data}); err == nil || !strings.Contains(err.Error(), "no input to standardise") {
			t.Fatalf("%+v: error %v", tc, err)
		}
	}
	cfg := tuningConfig()
	cfg.Tuning = TuningConfig{PretrainPublic: 0.5, PerturbL2: true}
	if _, err := Run(context.Background(), cfg, Options{Model: smallNet(t), Data: data}); err == nil || !strings.Contains(err.Error(), "need perturb_net") {
		t.Fatalf("perturb_l2 without the net: error %v", err)
	}
}

// A constant-body run under the epoch schedule with L2 decay, killed mid-run and
// resumed, gives the same result as the uninterrupted run.
func TestPerturbConstResume(t *testing.T) {
	cfg := tuningConfig()
	cfg.FILCoords = 2
	cfg.Tuning = TuningConfig{PretrainPublic: 0.5, PretrainSteps: 30, PerturbNet: true, PerturbArch: PerturbArchConstant,
		PerturbL2: true, PerturbEpochs: 3, PerturbEpochDecay: 1, PerturbBatch: 16, PerturbHidden: 4, PerturbHidden2: 3, PerturbLambda: 10}
	data := toyData(120, 30, 6, 3, 4)
	full := t.TempDir()
	if _, err := Run(context.Background(), cfg, Options{Out: full, Model: smallNet(t), Data: data}); err != nil {
		t.Fatal(err)
	}
	killed := runKilledAt(t, cfg, Options{Model: smallNet(t), Data: data, CheckpointEvery: 1}, 2)
	if _, err := Run(context.Background(), cfg, Options{Out: killed, Model: smallNet(t), Data: data, Resume: true}); err != nil {
		t.Fatal(err)
	}
	if a, b := readComparable(t, full), readComparable(t, killed); string(a) != string(b) {
		t.Fatalf("resumed constant-g_φ run differs:\n%s\nvs\n%s", a, b)
	}
}

// constHead's closed form equals the element-wise head it replaces —
// clippedTangent's v̇_k and lossHeadInto's ℓ and ∂ℓ/∂δ — for every clip, probe counts
// 1 to 3, with the clip active and not, and with the FIL term off (w = 0).
func TestPerturbConstHeadMatchesElementwise(t *testing.T) {
	const d, p = 4, 9
	for ci, clip := range perturbClips {
		for _, S := range []int{1, 2, 3} {
			for _, scale := range []float64{0, 0.05, 1, 20} { // ‖w‖ from 0 to far above C
				name := fmt.Sprintf("clip %d S %d scale %v", ci, S, scale)
				rng := rand.New(rand.NewPCG(uint64(ci), uint64(S)))
				mask := []bool{true, true, false, true, true, true, false, true, true}
				n := randomPerturbConst(d, p, 3, 4, clip, mask, rng)
				sm := randomSample(d, p, S, mask, rng)
				delta := make([]float64, p)
				for i := range delta {
					if mask[i] {
						delta[i] = scale * rng.NormFloat64()
					}
					sm.g[i] *= scale
				}
				if scale == 0 {
					clear(sm.g)
				}
				dd := dotF64(delta, delta)
				// The element-wise reference.
				f := pnFwd{delta: delta, w: make([]float64, p)}
				nn := 0.0
				for i := range f.w {
					f.w[i] = sm.g[i] + delta[i]
					nn += f.w[i] * f.w[i]
				}
				f.n = math.Sqrt(nn)
				f.s, f.s1, f.s2 = clipDerivs(n.clip, f.n)
				vdots, sq, m := make([][]float64, S), make([]float64, S), make([]float64, S)
				wantFIL, F := 0.0, 0.0
				for k := range vdots {
					vdots[k] = make([]float64, p)
					sq[k], m[k] = clippedTangent(&f, sm.gdots[k], vdots[k])
					wantFIL += sq[k]
					F += sq[k] / float64(S)
				}
				wantDD := make([]float64, p)
				wantL, _ := n.lossHeadInto(&f, F, f.s*f.s*f.n*f.n, dd, sm.gdots, vdots, m, wantDD, false)
				// The closed form.
				me, b := make([]float64, 2*S), make([]float64, S)
				fil, L, aw := n.constHead(constStats(&sm, delta, me), dd, me, b)
				got := make([]float64, p)
				for i := range got {
					if !mask[i] {
						continue
					}
					got[i] = 2*delta[i] + aw*(sm.g[i]+delta[i])
					for k, gd := range sm.gdots {
						got[i] += b[k] * gd[i]
					}
				}
				close := func(a, b float64) bool { return math.Abs(a-b) <= 1e-10*(1+math.Abs(b)) }
				if !close(fil, wantFIL) || !close(L, wantL) {
					t.Fatalf("%s: FIL %v, ℓ %v; element-wise %v, %v", name, fil, L, wantFIL, wantL)
				}
				if scale > 0 && !(L > dd) {
					t.Fatalf("%s: the FIL term does not contribute (ℓ %v, ‖δ‖² %v)", name, L, dd)
				}
				for i := range got {
					if !close(got[i], wantDD[i]) {
						t.Fatalf("%s: ∂ℓ/∂δ[%d] = %v, element-wise %v", name, i, got[i], wantDD[i])
					}
				}
			}
		}
	}
}

// packSample returns sm with g and ġ_k packed to the free coordinates.
func packSample(sm pnSample, free []int) pnSample {
	pack := func(v []float64) []float64 {
		out := make([]float64, len(free))
		for t, i := range free {
			out[t] = v[i]
		}
		return out
	}
	out := sm
	out.g = pack(sm.g)
	out.gdots = nil
	for _, gd := range sm.gdots {
		out.gdots = append(out.gdots, pack(gd))
	}
	return out
}

// Samples packed to the free coordinates (what publicSamples hands this body under
// pruning) give the loss, gradient and FIL of the full masked vectors, and
// constTrainStep is lossBatch's batch-mean gradient followed by adamStep: the same
// parameters and moments after three steps, with AdamW and with L2 decay, the
// gradient's norm included.
func TestPerturbConstPackedAndTrainStep(t *testing.T) {
	const d, p, h, h2 = 5, 9, 3, 4
	mask := []bool{true, false, true, true, false, true, true, false, true}
	for ci, clip := range perturbClips {
		for _, l2 := range []bool{false, true} {
			name := fmt.Sprintf("clip %d l2 %v", ci, l2)
			rng := rand.New(rand.NewPCG(uint64(ci), 99))
			n := randomPerturbConst(d, p, h, h2, clip, mask, rng)
			n.wd, n.l2 = 0.1, l2
			if len(n.free) != 6 {
				t.Fatalf("%s: free coordinates %v", name, n.free)
			}
			var full, packed []pnSample
			for i := 0; i < 70; i++ { // three chunks
				sm := randomSample(d, p, 1+i%3, mask, rng)
				full = append(full, sm)
				packed = append(packed, packSample(sm, n.free))
			}
			if !n.packed(packed) || n.packed(full) {
				t.Fatalf("%s: packed() misreads the samples", name)
			}
			gf, gp := make([]float64, len(n.phi)), make([]float64, len(n.phi))
			Lf, Lp := n.lossBatch(full, gf), n.lossBatch(packed, gp)
			ff, fp := make([]float64, len(full)), make([]float64, len(full))
			n.filSqBatch(full, ff)
			n.filSqBatch(packed, fp)
			if Lf != Lp || !slices.Equal(gf, gp) || !slices.Equal(ff, fp) {
				t.Fatalf("%s: packed samples differ: loss %v vs %v", name, Lp, Lf)
			}
			ref := *n
			ref.phi = append([]float64(nil), n.phi...)
			ref.adamM = append([]float64(nil), n.adamM...)
			ref.adamV = append([]float64(nil), n.adamV...)
			for step := 0; step < 3; step++ {
				grad := make([]float64, len(ref.phi))
				wantL := ref.lossBatch(full, grad)
				gn := 0.0
				for i := range grad {
					grad[i] /= float64(len(full))
					gn += grad[i] * grad[i]
				}
				ref.adamStep(grad)
				L, gotGn := n.constTrainStep(packed)
				if L != wantL || math.Abs(gotGn-math.Sqrt(gn)) > 1e-12*math.Sqrt(gn) {
					t.Fatalf("%s step %d: loss %v, ‖∇‖ %v; reference %v, %v", name, step, L, gotGn, wantL, math.Sqrt(gn))
				}
				if !slices.Equal(n.phi, ref.phi) || !slices.Equal(n.adamM, ref.adamM) || !slices.Equal(n.adamV, ref.adamV) {
					t.Fatalf("%s step %d: parameters or moments differ from lossBatch + adamStep", name, step)
				}
			}
		}
	}
}

// An empty batch gives a zero loss and leaves the gradient unchanged.
func TestPerturbConstEmptyBatch(t *testing.T) {
	n := randomPerturbConst(3, 4, 2, 3, perturbClips[0], []bool{true, false, true, true}, rand.New(rand.NewPCG(1, 2)))
	grad := make([]float64, len(n.phi))
	if L := n.lossBatch(nil, grad); L != 0 || slices.ContainsFunc(grad, func(v float64) bool { return v != 0 }) {
		t.Fatalf("empty batch: loss %v, gradient %v", L, grad)
	}
}
