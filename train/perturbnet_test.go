package train

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dpfil/dpfil/models"
)

var perturbClips = []models.Clip{
	{Mode: models.ClipSmooth, C: 0.7, GELU: models.GELUExact},
	{Mode: models.ClipSmooth, C: 0.7, GELU: models.GELUTanh},
	{Mode: models.ClipHard, C: 0.3},
}

// clipDerivs' s′ and s″ equal float64 central differences of s and s′.
func TestClipDerivsMatchFiniteDifferences(t *testing.T) {
	for _, c := range perturbClips {
		for _, n := range []float64{0.1, 0.5, 0.9, 1.4, 3} {
			if c.Mode == models.ClipHard && math.Abs(n-c.C) < 0.05 {
				continue
			}
			const h = 1e-6
			s, s1, s2 := clipDerivs(c, n)
			sp, s1p, _ := clipDerivs(c, n+h)
			sm, s1m, _ := clipDerivs(c, n-h)
			if want, _ := c.Scale(n); s != want {
				t.Fatalf("%+v n=%v: s %v, Scale %v", c, n, s, want)
			}
			if d := (sp - sm) / (2 * h); math.Abs(d-s1) > 1e-6*(1+math.Abs(d)) {
				t.Errorf("%+v n=%v: s′ %v, finite differences %v", c, n, s1, d)
			}
			if d := (s1p - s1m) / (2 * h); math.Abs(d-s2) > 1e-5*(1+math.Abs(d)) {
				t.Errorf("%+v n=%v: s″ %v, finite differences %v", c, n, s2, d)
			}
		}
	}
}

// randomPerturbNet returns a g_φ with every parameter random (output layer included,
// zero on frozen rows) and random standardisation constants.
func randomPerturbNet(d, p, h int, clip models.Clip, mask []bool, rng *rand.Rand) *perturbNet {
	n := newPerturbNet(d, p, h, 3.7, 2, clip, mask, 0.01, rng)
	for i := n.offa; i < len(n.phi); i++ {
		n.phi[i] = 0.4 * rng.NormFloat64()
	}
	maskAndStandardise(n, p, h, mask, rng)
	return n
}

// maskAndStandardise zeroes the output rows of frozen coordinates (as g_φ keeps
// them) and draws random standardisation constants, for a test g_φ of either body.
func maskAndStandardise(n *perturbNet, p, h int, mask []bool, rng *rand.Rand) {
	for i := 0; i < p; i++ {
		if mask != nil && !mask[i] {
			for j := 0; j < h; j++ {
				n.phi[n.offV+i*h+j] = 0
			}
			n.phi[n.offc+i] = 0
		}
	}
	for i := range n.mean {
		n.mean[i] = 0.2 * rng.NormFloat64()
		n.inv[i] = 0.5 + rng.Float64()
	}
}

func randomSample(d, p, probes int, mask []bool, rng *rand.Rand) pnSample {
	vec := func(m int, sc float64) []float64 {
		v := make([]float64, m)
		for i := range v {
			if m == p && mask != nil && !mask[i] {
				continue
			}
			v[i] = sc * rng.NormFloat64()
		}
		return v
	}
	sm := pnSample{x: vec(d, 1), g: vec(p, 0.5)}
	for k := 0; k < probes; k++ {
		sm.u = append(sm.u, vec(d, 1))
		sm.gdots = append(sm.gdots, vec(p, 0.3))
	}
	return sm
}

// The hand-derived gradient of eq. 2.9's per-sample loss w.r.t. every parameter of
// g_φ equals float64 central finite differences, for each clip, with and without a
// frozen-coordinate mask, and with dense and one-hot probes.
func TestPerturbLossGradientMatchesFiniteDifferences(t *testing.T) {
	const d, p, h = 4, 6, 3
	for ci, clip := range perturbClips {
		for _, masked := range []bool{false, true} {
			for _, sparse := range []bool{false, true} {
				rng := rand.New(rand.NewPCG(uint64(ci), 7))
				var mask []bool
				if masked {
					mask = []bool{true, false, true, true, false, true}
				}
				n := randomPerturbNet(d, p, h, clip, mask, rng)
				sm := randomSample(d, p, 2, mask, rng)
				if sparse {
					sm.u, sm.uIdx = nil, []int{2, 0}
				}
				grad := make([]float64, len(n.phi))
				L := n.loss(&sm, grad)
				if !(L > 0) {
					t.Fatalf("loss %v", L)
				}
				const eps = 1e-6
				for i := range n.phi {
					old := n.phi[i]
					n.phi[i] = old + eps
					lp := n.loss(&sm, nil)
					n.phi[i] = old - eps
					lm := n.loss(&sm, nil)
					n.phi[i] = old
					fd := (lp - lm) / (2 * eps)
					if math.Abs(fd-grad[i]) > 1e-5*(1+math.Abs(fd)) {
						t.Fatalf("clip %+v masked %v sparse %v: ∂ℓ/∂φ[%d] = %v, finite differences %v", clip, masked, sparse, i, grad[i], fd)
					}
				}
			}
		}
	}
}

// perturbTuning is a tuning state on the small engine network with g_φ random.
func perturbTuning(t *testing.T, clip models.Clip, mask []bool) (*tuning, *tunedModel, []float32) {
	t.Helper()
	base := smallNet(t)
	net := base.(interface {
		Network() *models.Network[float32]
	}).Network()
	P := base.NumParams()
	tu := &tuning{p: P, net: net, base: base, clip: clip, cur: &tunedRepeat{mask: mask}}
	rng := rand.New(rand.NewPCG(11, 12))
	pn := randomPerturbNet(6, P, 4, clip, mask, rng)
	for i := range pn.phi[n0(pn):] {
		pn.phi[n0(pn)+i] *= 0.5 // a perturbation larger than the gradients
	}
	pn.trained = true
	tu.perturb = &perturbState{net: pn}
	return tu, &tunedModel{base: base, t: tu}, base.Init(5)
}

func n0(pn *perturbNet) int { return pn.offV }

// released is CLIP(g + g_φ(x, g)) for one sample, from the engine's gradient.
func released(t *testing.T, tu *tuning, params, x []float32, y int) []float64 {
	t.Helper()
	g, _, err := tu.net.PerSampleGrads(params, x, []int{y}, 1)
	if err != nil {
		t.Fatal(err)
	}
	sm := pnSample{x: f64(x), g: maskedF64(g, tu.curMask())}
	delta := make([]float64, tu.p)
	tu.perturb.net.perturb(&sm, delta)
	ss := 0.0
	for i := range delta {
		delta[i] += sm.g[i]
		ss += delta[i] * delta[i]
	}
	s, _ := tu.clip.Scale(math.Sqrt(ss))
	for i := range delta {
		delta[i] *= s
	}
	return delta
}

// The accounted FIL of a perturbed run is Σ_j ‖∂CLIP(g + g_φ(x, g(x)))/∂x_j‖² by
// central finite differences through the engine, with and without frozen coordinates.
func TestPerturbFILMatchesFiniteDifferences(t *testing.T) {
	clip := models.Clip{Mode: models.ClipSmooth, C: 0.3, GELU: models.GELUExact}
	split := toyData(3, 1, 6, 3, 2)
	x, y := split.Train.Images, split.Train.Labels
	all := [][]int{{0, 1, 2, 3, 4, 5}, {0, 1, 2, 3, 4, 5}, {0, 2, 5}}
	for _, masked := range []bool{false, true} {
		var mask []bool
		if masked {
			mask = make([]bool, 53)
			for i := range mask {
				mask[i] = i >= 30 || i%3 == 0
			}
		}
		tu, m, params := perturbTuning(t, clip, mask)
		got := make([]float64, 3)
		if err := m.FILSqNorms(params, x, y, clip, all, got); err != nil {
			t.Fatal(err)
		}
		const h = 1e-2
		for s := 0; s < 3; s++ {
			fd := 0.0
			for _, j := range all[s] {
				xp := append([]float32(nil), x[s*6:(s+1)*6]...)
				xm := append([]float32(nil), xp...)
				xp[j] += h
				xm[j] -= h
				gp, gm := released(t, tu, params, xp, y[s]), released(t, tu, params, xm, y[s])
				for i := range gp {
					dd := (gp[i] - gm[i]) / (2 * h)
					fd += dd * dd
				}
			}
			if !(got[s] > 0) || math.Abs(got[s]-fd) > 2e-2*fd {
				t.Errorf("masked %v: sample %d FIL %v, finite differences %v", masked, s, got[s], fd)
			}
		}
	}
	// With g_φ's output zero, the perturbed path (forced) is the engine's FIL.
	tu, _, params := perturbTuning(t, clip, nil)
	for i := tu.perturb.net.offV; i < len(tu.perturb.net.phi); i++ {
		tu.perturb.net.phi[i] = 0
	}
	got, want := make([]float64, 3), make([]float64, 3)
	if err := tu.perturbedFILSqNorms(params, x, y, all, got); err != nil {
		t.Fatal(err)
	}
	if err := tu.base.FILSqNorms(params, x, y, clip, all, want); err != nil {
		t.Fatal(err)
	}
	for s := range got {
		if math.Abs(got[s]-want[s]) > 1e-4*want[s] {
			t.Errorf("zero g_φ: sample %d FIL %v, engine %v", s, got[s], want[s])
		}
	}
}

// The perturbation is added before clipping: with g_φ ≡ δ₀ (A = 0, a = 0 so the hidden
// layer is GeLU(0) = 0, c = δ₀) and a hard clip, every contribution is
// C·(g_i + δ₀)/‖g_i + δ₀‖, computed here by hand, and differs from adding δ₀ after
// clipping.
func TestPerturbAddedBeforeClipping(t *testing.T) {
	clip := models.Clip{Mode: models.ClipHard, C: 0.5}
	tu, m, params := perturbTuning(t, clip, nil)
	pn := tu.perturb.net
	for i := 0; i < pn.offV; i++ {
		pn.phi[i] = 0
	}
	P := tu.p
	d0 := make([]float64, P)
	for i := range d0 {
		d0[i] = 0.3 * math.Sin(float64(i+1))
		pn.phi[pn.offc+i] = d0[i]
	}
	split := toyData(5, 1, 6, 3, 3)
	x, y := split.Train.Images, split.Train.Labels
	sum := make([]float32, P)
	losses := make([]float64, 5)
	if err := m.ClippedGradSum(params, x, y, clip, sum, losses); err != nil {
		t.Fatal(err)
	}
	grads, _, err := tu.net.PerSampleGrads(params, x, y, 5)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]float64, P)
	after := make([]float64, P)
	for s := 0; s < 5; s++ {
		w := make([]float64, P)
		gg, ww := 0.0, 0.0
		for i := range w {
			g := float64(grads[s*P+i])
			w[i] = g + d0[i]
			ww += w[i] * w[i]
			gg += g * g
		}
		if math.Sqrt(ww) <= clip.C {
			t.Fatalf("sample %d: ‖g+δ₀‖ = %v does not reach the clip", s, math.Sqrt(ww))
		}
		for i := range w {
			want[i] += clip.C * w[i] / math.Sqrt(ww)
			after[i] += float64(grads[s*P+i])*math.Min(1, clip.C/math.Sqrt(gg)) + d0[i]
		}
	}
	diff := 0.0
	for i := range want {
		if math.Abs(float64(sum[i])-want[i]) > 1e-5 {
			t.Fatalf("coordinate %d: sum %v, Σ CLIP(g+δ₀) %v", i, sum[i], want[i])
		}
		diff += math.Abs(want[i] - after[i])
	}
	if diff < 1e-2 {
		t.Fatalf("test does not separate adding before and after clipping (difference %v)", diff)
	}
}

func perturbRun(t *testing.T, tc TuningConfig, filCoords int) *Result {
	t.Helper()
	cfg := tuningConfig()
	cfg.Tuning, cfg.FILCoords = tc, filCoords
	res, err := Run(context.Background(), cfg, Options{Model: smallNet(t), Data: toyData(120, 30, 6, 3, 4)})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// g_φ never trained (perturb_steps = −1, output layer zero) gives a run bit-identical
// to plain DP-SGD with the same public split; a trained g_φ changes the parameters
// and dFIL but not ε (every accountant's number is that of the plain run).
func TestPerturbRunPrivacyAndZeroIdentity(t *testing.T) {
	plainCfg := TuningConfig{PretrainPublic: 0.5, PretrainSteps: 30}
	plain := perturbRun(t, plainCfg, 3)
	zc := plainCfg
	zc.PerturbNet, zc.PerturbSteps = true, -1
	zero := perturbRun(t, zc, 3)
	for i, v := range plain.Repeats[0].Params {
		if zero.Repeats[0].Params[i] != v {
			t.Fatalf("g_φ ≡ 0: parameter %d = %v, plain DP-SGD %v", i, zero.Repeats[0].Params[i], v)
		}
	}
	if zero.Epsilon != plain.Epsilon || zero.Repeats[0].DFILMax != plain.Repeats[0].DFILMax {
		t.Fatalf("g_φ ≡ 0: ε %v dFIL %v, plain %v %v", zero.Epsilon, zero.Repeats[0].DFILMax, plain.Epsilon, plain.Repeats[0].DFILMax)
	}
	on := plainCfg
	on.PerturbNet, on.PerturbSteps, on.PerturbBatch, on.PerturbHidden, on.PerturbLambda = true, 3, 16, 4, 10
	pr := perturbRun(t, on, 3)
	if pr.Epsilon != plain.Epsilon || pr.Sigma != plain.Sigma {
		t.Fatalf("ε with g_φ %v (σ %v), without %v (σ %v)", pr.Epsilon, pr.Sigma, plain.Epsilon, plain.Sigma)
	}
	g := pr.Tuning.Perturb
	if g == nil || g.Refreshes != 6 || !(g.PerturbNorm > 0) || !strings.Contains(g.Privacy, "ε") {
		t.Fatalf("tuning.perturb %+v", g)
	}
	same := true
	for i, v := range plain.Repeats[0].Params {
		same = same && pr.Repeats[0].Params[i] == v
	}
	if same || pr.Repeats[0].DFILMax == plain.Repeats[0].DFILMax || !(pr.Repeats[0].DFILMax > 0) {
		t.Fatalf("trained g_φ changed nothing: dFIL %v vs %v", pr.Repeats[0].DFILMax, plain.Repeats[0].DFILMax)
	}
}

// Configurations g_φ cannot run are refused with errors that name the problem.
func TestPerturbRefusals(t *testing.T) {
	split := toyData(40, 10, 6, 3, 4)
	cases := []struct {
		name string
		tc   TuningConfig
		m    models.Model
		want string
	}{
		{"no public split", TuningConfig{PerturbNet: true}, nil, "public split"},
		{"with learned noise", TuningConfig{PretrainPublic: 0.5, PerturbNet: true, NoiseRank: 2}, nil, "noise_rank"},
		{"fields without the net", TuningConfig{PretrainPublic: 0.5, PerturbLambda: 5}, nil, "need perturb_net"},
		{"negative width", TuningConfig{PretrainPublic: 0.5, PerturbNet: true, PerturbHidden: -1}, nil, "perturb_hidden"},
		{"negative lambda", TuningConfig{PretrainPublic: 0.5, PerturbNet: true, PerturbLambda: -1}, nil, "perturb_lambda"},
		{"no engine", TuningConfig{PretrainPublic: 0.5, PerturbNet: true}, &softmaxModel{d: 6, k: 3}, "perturb_net need"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := tuningConfig()
			cfg.Tuning = c.tc
			m := c.m
			if m == nil {
				m = smallNet(t)
			}
			_, err := Run(context.Background(), cfg, Options{Model: m, Data: split})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
	cfg := tuningConfig()
	cfg.Tuning = TuningConfig{PretrainPublic: 0.5, PerturbNet: true}
	cfg.FILLabel = true
	if _, err := Run(context.Background(), cfg, Options{Model: smallNet(t), Data: split}); err == nil || !strings.Contains(err.Error(), "fil_label") {
		t.Fatalf("fil_label with g_φ: %v", err)
	}
}

// Two Adam steps equal the update computed by hand from the formulas
// m̂ = m/(1−β₁ᵗ), v̂ = v/(1−β₂ᵗ): AdamW, φ ← φ − lr·(m̂/(√v̂+ε) + wd·φ); with L2 (the
// thesis code's), g ← g + wd·φ before the moments and φ ← φ − lr·m̂/(√v̂+ε).
func TestPerturbAdamWStep(t *testing.T) {
	for _, l2 := range []bool{false, true} {
		n := newPerturbNet(1, 1, 1, 1, 1, perturbClips[0], nil, 0.05, rand.New(rand.NewPCG(1, 2)))
		n.wd, n.l2 = 0.1, l2
		phi0 := append([]float64(nil), n.phi...)
		g1 := []float64{0.3, -2, 0.5, 1e-3, -0.7}
		g2 := []float64{-0.1, 1, 0.5, 2e-3, 0.2}
		n.adamStep(g1)
		n.adamStep(g2)
		for i := range phi0 {
			p := phi0[i]
			m, v := 0.0, 0.0
			for t, g := range [][]float64{g1, g2} {
				gi, decoupled := g[i], 0.1*p
				if l2 {
					gi, decoupled = gi+decoupled, 0
				}
				m = 0.9*m + 0.1*gi
				v = 0.999*v + 0.001*gi*gi
				mh := m / (1 - math.Pow(0.9, float64(t+1)))
				vh := v / (1 - math.Pow(0.999, float64(t+1)))
				p -= 0.05 * (mh/(math.Sqrt(vh)+1e-8) + decoupled)
			}
			if math.Abs(p-n.phi[i]) > 1e-12 {
				t.Fatalf("l2 %v: φ[%d] = %v, hand %v", l2, i, n.phi[i], p)
			}
		}
		if !n.trained {
			t.Fatal("output layer moved but trained is false")
		}
	}
}

// standardise: per-feature means and one scale per block (z, g) from the mean feature
// variance, so a feature constant in the batch is not amplified.
func TestPerturbStandardise(t *testing.T) {
	n := newPerturbNet(2, 2, 1, 1, 1, perturbClips[0], nil, 0.01, rand.New(rand.NewPCG(1, 2)))
	n.standardise([][]float64{{1, 5, 0, 2}, {3, 5, 0, -2}})
	// z block: means 2, 5; variances 1, 0 → scale 1/√(0.5 + 1e-5). g block: means 0, 0; variances 0, 4 → 1/√(2 + 1e-5).
	wantMean := []float64{2, 5, 0, 0}
	wantInv := []float64{1 / math.Sqrt(0.5+1e-5), 1 / math.Sqrt(0.5+1e-5), 1 / math.Sqrt(2+1e-5), 1 / math.Sqrt(2+1e-5)}
	for i := range wantMean {
		if math.Abs(n.mean[i]-wantMean[i]) > 1e-15 || math.Abs(n.inv[i]-wantInv[i]) > 1e-12 {
			t.Fatalf("feature %d: mean %v inv %v, want %v %v", i, n.mean[i], n.inv[i], wantMean[i], wantInv[i])
		}
	}
}

// TestPerturbResumeIsBitIdentical: a g_φ run killed mid-way and resumed from its
// checkpoint (φ, its AdamW state, standardisation and draws restored) ends with the
// result of the uninterrupted run; without the g_φ state in the checkpoint the resumed
// run would retrain g_φ from its initialisation and differ.
func TestPerturbResumeIsBitIdentical(t *testing.T) {
	cfg := tuningConfig()
	cfg.FILCoords = 3
	cfg.Tuning = TuningConfig{PretrainPublic: 0.5, PretrainSteps: 30, PerturbNet: true, PerturbSteps: 3, PerturbBatch: 16, PerturbHidden: 4, PerturbLambda: 10}
	data := toyData(120, 30, 6, 3, 4)
	full := t.TempDir()
	if _, err := Run(context.Background(), cfg, Options{Out: full, Model: smallNet(t), Data: data}); err != nil {
		t.Fatal(err)
	}
	killed := runKilledAt(t, cfg, Options{Model: smallNet(t), Data: data, CheckpointEvery: 1}, cfg.Steps/2)
	ck, err := loadCheckpoint(killed)
	if err != nil {
		t.Fatal(err)
	}
	if ck.Cur == nil || ck.Cur.Perturb == nil || ck.Cur.Step == 0 || ck.Cur.Step >= cfg.Steps {
		t.Fatalf("checkpoint mid-run with g_φ state: %+v", ck.Cur)
	}
	if _, err := Run(context.Background(), cfg, Options{Out: killed, Model: smallNet(t), Data: data, Resume: true}); err != nil {
		t.Fatal(err)
	}
	a, b := readComparable(t, full), readComparable(t, killed)
	if string(a) != string(b) {
		t.Fatalf("resumed g_φ run differs:\n%s\nvs\n%s", a, b)
	}
}

// TestPerturbSeries: result.json's tuning.perturb.series has one record per refresh,
// at the private steps perturb_every apart, and the means over it are the summary
// fields.
func TestPerturbSeries(t *testing.T) {
	cfg := tuningConfig()
	cfg.FILCoords = 2
	cfg.Tuning = TuningConfig{PretrainPublic: 0.5, PretrainSteps: 30, PerturbNet: true, PerturbSteps: 3, PerturbBatch: 16, PerturbHidden: 4, PerturbLambda: 10, PerturbEvery: 2}
	data := toyData(120, 30, 6, 3, 4)
	dir := t.TempDir()
	if _, err := Run(context.Background(), cfg, Options{Out: dir, Model: smallNet(t), Data: data}); err != nil {
		t.Fatal(err)
	}
	r := mustRead(t, dir).Tuning.Perturb
	if r == nil || r.Refreshes == 0 || len(r.Series) != r.Refreshes {
		t.Fatalf("perturb result %+v: want one series record per refresh", r)
	}
	var loss, first, pn, gn, cos float64
	for i, s := range r.Series {
		if want := 1 + 2*i; s.Step != want {
			t.Errorf("refresh %d at step %d, want %d (perturb_every 2)", i, s.Step, want)
		}
		if s.CosMeanGrad == nil || math.Abs(*s.CosMeanGrad) > 1 {
			t.Errorf("refresh %d: cosine %v", i, s.CosMeanGrad)
			continue
		}
		loss, first, pn, gn, cos = loss+s.Loss, first+s.LossFirst, pn+s.PerturbNorm, gn+s.GradNorm, cos+*s.CosMeanGrad
	}
	n := float64(len(r.Series))
	for _, c := range []struct {
		name      string
		sum, mean float64
	}{{"loss", loss, r.Loss}, {"loss_first", first, r.LossFirst}, {"perturb_norm", pn, r.PerturbNorm}, {"grad_norm", gn, r.GradNorm}, {"cos", cos, r.CosMeanGrad}} {
		if math.Abs(c.sum/n-c.mean) > 1e-12*math.Max(1, math.Abs(c.mean)) {
			t.Errorf("%s: series mean %v, summary %v", c.name, c.sum/n, c.mean)
		}
	}
}

// batchTestSamples returns n random g_φ samples with 1–3 probes each, dense, one-hot
// or mixed (every other sample one-hot); every third sample keeps its gradient and
// tangents on the frozen coordinates of mask, which the per-sample path ignores there.
func batchTestSamples(d, p, n int, probes string, mask []bool, rng *rand.Rand) []pnSample {
	sms := make([]pnSample, n)
	for i := range sms {
		m := mask
		if i%3 == 2 {
			m = nil
		}
		sms[i] = randomSample(d, p, 1+i%3, m, rng)
		if probes == "one-hot" || probes == "mixed" && i%2 == 0 {
			sms[i].u = nil
			for range sms[i].gdots {
				sms[i].uIdx = append(sms[i].uIdx, rng.IntN(d))
			}
		}
	}
	return sms
}

// checkBatchMatchesPerSample compares n's batched loss sum and gradient, FIL sums and
// perturbations on sms with the per-sample loss, filSq and perturb; param names a
// parameter index in the failure message.
func checkBatchMatchesPerSample(t *testing.T, name string, n *perturbNet, sms []pnSample, param func(i int) string) {
	t.Helper()
	want := make([]float64, len(n.phi))
	wantL := 0.0
	for i := range sms {
		wantL += n.loss(&sms[i], want)
	}
	got := make([]float64, len(n.phi))
	gotL := n.lossBatch(sms, got)
	if math.Abs(gotL-wantL) > 1e-10*math.Abs(wantL) {
		t.Fatalf("%s: batched loss %v, per-sample %v", name, gotL, wantL)
	}
	if l := n.lossBatch(sms, nil); l != gotL {
		t.Fatalf("%s: loss without gradient %v, with %v", name, l, gotL)
	}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-9*(1+math.Abs(want[i])) {
			t.Fatalf("%s: ∂/∂%s batched %v, per-sample %v", name, param(i), got[i], want[i])
		}
	}
	fil := make([]float64, len(sms))
	n.filSqBatch(sms, fil)
	delta := make([]float64, len(sms)*n.p)
	n.perturbBatch(sms, delta)
	one := make([]float64, n.p)
	for i := range sms {
		if w := n.filSq(&sms[i]); math.Abs(fil[i]-w) > 1e-10*(1+w) {
			t.Fatalf("%s: sample %d FIL batched %v, per-sample %v", name, i, fil[i], w)
		}
		n.perturb(&sms[i], one)
		for j, w := range one {
			if math.Abs(delta[i*n.p+j]-w) > 1e-12*(1+math.Abs(w)) {
				t.Fatalf("%s: sample %d δ[%d] batched %v, per-sample %v", name, i, j, delta[i*n.p+j], w)
			}
		}
	}
}

// The batched g_φ (perturbbatch.go) equals the per-sample reference: the loss sum and
// its gradient, each sample's FIL sum and perturbation, for every clip, with and
// without a mask, with dense, one-hot and mixed probes, over enough samples to span
// several chunks.
func TestPerturbBatchMatchesPerSample(t *testing.T) {
	const d, p, h, nSamples = 5, 7, 4, 300
	for ci, clip := range perturbClips {
		for _, masked := range []bool{false, true} {
			for _, probes := range []string{"dense", "one-hot", "mixed"} {
				rng := rand.New(rand.NewPCG(uint64(ci), 99))
				var mask []bool
				if masked {
					mask = []bool{true, false, true, true, false, true, true}
				}
				n := randomPerturbNet(d, p, h, clip, mask, rng)
				sms := batchTestSamples(d, p, nSamples, probes, mask, rng)
				name := fmt.Sprintf("clip %+v masked %v probes %s", clip, masked, probes)
				checkBatchMatchesPerSample(t, name, n, sms, func(i int) string { return fmt.Sprintf("φ[%d]", i) })
			}
		}
	}
}
