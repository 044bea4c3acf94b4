package train

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dpfil/dpfil/models"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// smallNet is a 6-input, 3-class ELU network of the engine (tangents and per-sample
// passes available) for tuning tests.
func smallNet(t *testing.T) models.Model {
	t.Helper()
	arch := models.Arch{Name: "small-elu", Input: models.Shape{C: 1, H: 1, W: 6}, Classes: 3,
		Layers: []models.LayerSpec{{Kind: models.KindFlatten}, models.Dense(5), {Kind: models.KindELU}, models.Dense(3)}}
	m, err := models.NewCPUModel(arch)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func tuningConfig() Config {
	c := tinyConfig()
	c.Batch, c.Steps, c.Sigma, c.LR, c.FILCoords = 8, 6, 1.5, 0.3, 3
	c.Accountant = AccountantRDP // fast (the PLD calibration of target ε takes seconds)
	return c
}

// clippedMasked is g̃ restricted to mask, recomputed from the engine's per-sample
// gradient in float64 (the reference for finite differences).
func clippedMasked(t *testing.T, net *models.Network[float32], params []float32, x []float32, y int, clip models.Clip, mask []bool) []float64 {
	t.Helper()
	g, _, err := net.PerSampleGrads(params, x, []int{y}, 1)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]float64, len(g))
	ss := 0.0
	for i, v := range g {
		if mask[i] {
			out[i] = float64(v)
			ss += out[i] * out[i]
		}
	}
	s, _ := clip.Scale(math.Sqrt(ss))
	for i := range out {
		out[i] *= s
	}
	return out
}

// The masked FIL equals Σ_j ‖∂g̃_m/∂x_j‖² by central finite differences, and with every
// coordinate released it equals the engine's own FIL.
func TestTunedFILMatchesFiniteDifferences(t *testing.T) {
	base := smallNet(t)
	net := base.(interface {
		Network() *models.Network[float32]
	}).Network()
	P := base.NumParams()
	clip := models.Clip{Mode: models.ClipSmooth, C: 0.3, GELU: models.GELUExact}
	tu := &tuning{p: P, net: net, base: base, clip: clip}
	m := &tunedModel{base: base, t: tu}
	params := base.Init(5)
	split := toyData(4, 1, 6, 3, 2)
	x, y := split.Train.Images, split.Train.Labels
	all := [][]int{{0, 1, 2, 3, 4, 5}, {0, 1, 2, 3, 4, 5}, {0, 1, 2, 3, 4, 5}, {0, 1, 2, 3, 4, 5}}
	mask := make([]bool, P)
	for i := range mask {
		mask[i] = true
	}
	tu.cur = &tunedRepeat{mask: mask}
	got := make([]float64, 4)
	want := make([]float64, 4)
	if err := m.FILSqNorms(params, x, y, clip, all, got); err != nil {
		t.Fatal(err)
	}
	if err := base.FILSqNorms(params, x, y, clip, all, want); err != nil {
		t.Fatal(err)
	}
	for s := range got {
		if math.Abs(got[s]-want[s]) > 1e-4*want[s] {
			t.Fatalf("all released: sample %d FIL %v, engine %v", s, got[s], want[s])
		}
	}
	// Freeze the first dense layer's weights and half the rest.
	for i := range mask {
		mask[i] = i >= 30 && i%2 == 0
	}
	if err := m.FILSqNorms(params, x, y, clip, all, got); err != nil {
		t.Fatal(err)
	}
	const h = 1e-2
	for s := 0; s < 4; s++ {
		fd := 0.0
		for j := 0; j < 6; j++ {
			xp := append([]float32(nil), x[s*6:(s+1)*6]...)
			xm := append([]float32(nil), xp...)
			xp[j] += h
			xm[j] -= h
			gp := clippedMasked(t, net, params, xp, y[s], clip, mask)
			gm := clippedMasked(t, net, params, xm, y[s], clip, mask)
			for i := range gp {
				d := (gp[i] - gm[i]) / (2 * h)
				fd += d * d
			}
		}
		if math.Abs(got[s]-fd) > 2e-2*fd {
			t.Errorf("masked: sample %d FIL %v, finite differences %v", s, got[s], fd)
		}
	}
	// Learned noise: the FIL in the metric I − Σ c_q u_q u_qᵀ of finite-difference columns.
	nf := &noiseFIM{beta: 1}
	rng := rand.New(rand.NewPCG(3, 4))
	for q := 0; q < 3; q++ {
		u := make([]float64, P)
		for i := range u {
			if mask[i] {
				u[i] = rng.NormFloat64()
			}
		}
		for _, prev := range nf.u {
			floats.AddScaled(u, -floats.Dot(prev, u), prev)
		}
		n := math.Sqrt(floats.Dot(u, u))
		for i := range u {
			u[i] /= n
		}
		nf.u = append(nf.u, u)
		nf.a = append(nf.a, float64(5*q+1))
		nf.c = append(nf.c, nf.a[q]/(1+nf.a[q]))
	}
	tu.noise = nf
	if err := m.FILSqNorms(params, x, y, clip, all, got); err != nil {
		t.Fatal(err)
	}
	for s := 0; s < 4; s++ {
		fd := 0.0
		for j := 0; j < 6; j++ {
			xp := append([]float32(nil), x[s*6:(s+1)*6]...)
			xm := append([]float32(nil), xp...)
			xp[j] += h
			xm[j] -= h
			gp := clippedMasked(t, net, params, xp, y[s], clip, mask)
			gm := clippedMasked(t, net, params, xm, y[s], clip, mask)
			col := make([]float64, P)
			for i := range gp {
				col[i] = (gp[i] - gm[i]) / (2 * h)
			}
			fd += nf.shapedSqNorm(col)
		}
		if math.Abs(got[s]-fd) > 2e-2*fd {
			t.Errorf("learned metric: sample %d FIL %v, finite differences %v", s, got[s], fd)
		}
	}
	tu.noise = nil
	// Masked clipped sum: frozen coordinates are zero and the rest is the masked clip.
	sum := make([]float32, P)
	losses := make([]float64, 4)
	if err := m.ClippedGradSum(params, x, y, clip, sum, losses); err != nil {
		t.Fatal(err)
	}
	ref := make([]float64, P)
	for s := 0; s < 4; s++ {
		for i, v := range clippedMasked(t, net, params, x[s*6:(s+1)*6], y[s], clip, mask) {
			ref[i] += v
		}
	}
	for i := range sum {
		if math.Abs(float64(sum[i])-ref[i]) > 1e-5 || !mask[i] && sum[i] != 0 {
			t.Fatalf("clipped sum[%d] = %v, want %v (released %v)", i, sum[i], ref[i], mask[i])
		}
	}
}

// The shaped norm is β²·vᵀ(β²I + UAUᵀ)⁻¹v, and σ_eff = σ·√λ_min(β²I + UAUᵀ) is the
// Mahalanobis sensitivity of the covariance (dense check).
func TestLearnedNoiseAlgebra(t *testing.T) {
	const P, r = 7, 3
	rng := rand.New(rand.NewPCG(1, 2))
	g := mat.NewDense(P, r, nil)
	for i := 0; i < P; i++ {
		for k := 0; k < r; k++ {
			g.Set(i, k, rng.NormFloat64())
		}
	}
	var qr mat.QR
	qr.Factorize(g)
	var q mat.Dense
	qr.QTo(&q)
	beta := 0.7
	nf := &noiseFIM{beta: beta}
	cov := mat.NewSymDense(P, nil)
	for i := 0; i < P; i++ {
		cov.SetSym(i, i, beta*beta)
	}
	for k := 0; k < r; k++ {
		u := make([]float64, P)
		for i := range u {
			u[i] = q.At(i, k)
		}
		a := 3 * float64(k+1)
		nf.u = append(nf.u, u)
		nf.a = append(nf.a, a)
		nf.c = append(nf.c, a/(beta*beta+a))
		for i := 0; i < P; i++ {
			for j := i; j < P; j++ {
				cov.SetSym(i, j, cov.At(i, j)+a*u[i]*u[j])
			}
		}
	}
	var chol mat.Cholesky
	if !chol.Factorize(cov) {
		t.Fatal("covariance not positive definite")
	}
	v := make([]float64, P)
	for i := range v {
		v[i] = rng.NormFloat64()
	}
	var sol mat.VecDense
	if err := chol.SolveVecTo(&sol, mat.NewVecDense(P, v)); err != nil {
		t.Fatal(err)
	}
	want := beta * beta * mat.Dot(mat.NewVecDense(P, v), &sol)
	if got := nf.shapedSqNorm(v); math.Abs(got-want) > 1e-12*want {
		t.Fatalf("shaped norm %v, dense %v", got, want)
	}
	const sigma, C = 1.3, 0.5
	eff, err := EffectiveNoiseMultiplier(sigma, beta, nf.a, P)
	if err != nil {
		t.Fatal(err)
	}
	scaled := mat.NewSymDense(P, nil)
	scaled.ScaleSym(sigma*sigma*C*C, cov)
	ms, err := MahalanobisSensitivity(scaled, C)
	if err != nil {
		t.Fatal(err)
	}
	// Sensitivity C in whitened units is 1/σ_eff.
	if math.Abs(ms-1/eff) > 1e-12/eff {
		t.Fatalf("σ_eff %v but Mahalanobis sensitivity %v (want 1/σ_eff = %v)", eff, ms, 1/eff)
	}
	if math.Abs(eff-beta*sigma) > 1e-15 {
		t.Fatalf("σ_eff %v, want β·σ = %v when r < P", eff, beta*sigma)
	}
	// Full rank: λ_min = β² + min a.
	if full, _ := EffectiveNoiseMultiplier(sigma, beta, []float64{1, 2}, 2); math.Abs(full-sigma*math.Sqrt(beta*beta+1)) > 1e-15 {
		t.Fatalf("full-rank σ_eff %v", full)
	}
	if _, err := EffectiveNoiseMultiplier(sigma, beta, []float64{1, 2, 3}, 2); err == nil {
		t.Fatal("more directions than dimensions accepted")
	}
}

// Pretraining, freezing, pruning and learned noise in a run: the split, the frozen
// parameters untouched, the accounting with σ_eff = β·σ, the result fields.
func TestTuningRun(t *testing.T) {
	split := toyData(120, 30, 6, 3, 4)
	ctx := context.Background()
	run := func(tc TuningConfig, sigma float64) *Result {
		t.Helper()
		cfg := tuningConfig()
		cfg.Sigma, cfg.Tuning = sigma, tc
		res, err := Run(ctx, cfg, Options{Model: smallNet(t), Data: split})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	pre := run(TuningConfig{PretrainPublic: 0.5, PretrainSteps: 30}, 1.5)
	tr := pre.Tuning
	if tr == nil || tr.NPublic != 60 || tr.NPrivate != 60 || pre.Dataset.NTrain != 60 || tr.PretrainSteps != 30 || tr.Frozen != 0 {
		t.Fatalf("pretraining result %+v, n_train %d", tr, pre.Dataset.NTrain)
	}
	if !(tr.PretrainAccuracy > 0.5) {
		t.Errorf("pretrained test accuracy %v on a separable toy problem", tr.PretrainAccuracy)
	}
	// Freezing dense1 keeps its 35 parameters at their pretrained values.
	fr := run(TuningConfig{PretrainPublic: 0.5, PretrainSteps: 30, Freeze: "dense1"}, 1.5)
	if fr.Tuning.Frozen != 35 || strings.Join(fr.Tuning.FrozenTensors, ",") != "dense1.W,dense1.b" {
		t.Fatalf("freeze: %+v", fr.Tuning)
	}
	cfg := tuningConfig()
	cfg.Tuning = TuningConfig{PretrainPublic: 0.5, PretrainSteps: 30, Freeze: "dense1"}
	s, err := prepare(cfg, Options{Model: smallNet(t), Data: split}, func(string, ...any) {})
	if err != nil {
		t.Fatal(err)
	}
	st, err := s.tune.repeat(deriveSeed(cfg.Seed, 0, streamInit))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 35; i++ {
		if fr.Repeats[0].Params[i] != st.params[i] {
			t.Fatalf("frozen parameter %d moved: %v → %v", i, st.params[i], fr.Repeats[0].Params[i])
		}
	}
	moved := false
	for i := 35; i < len(st.params); i++ {
		moved = moved || fr.Repeats[0].Params[i] != st.params[i]
	}
	if !moved {
		t.Fatal("no released parameter moved")
	}
	// Pruning half the parameters (zero mode) freezes them at 0.
	pr := run(TuningConfig{PretrainPublic: 0.5, PretrainSteps: 30, PruneFraction: 0.5, PruneMode: PruneZero}, 1.5)
	zeros := 0
	for _, v := range pr.Repeats[0].Params {
		if v == 0 {
			zeros++
		}
	}
	if pr.Tuning.Frozen != 26 || zeros < 26 {
		t.Fatalf("prune: %d frozen, %d zeros", pr.Tuning.Frozen, zeros)
	}
	// Learned noise with β = 1 has exactly the isotropic ε; with β = 0.5 that of σ/2.
	ln := run(TuningConfig{PretrainPublic: 0.5, PretrainSteps: 30, NoiseRank: 4, NoiseSamples: 20}, 1.5)
	if ln.Epsilon != pre.Epsilon || ln.Sigma != 1.5 || ln.Tuning.Noise == nil || ln.Tuning.Noise.Rank != 4 {
		t.Fatalf("learned noise β=1: ε %v vs isotropic %v, σ %v, %+v", ln.Epsilon, pre.Epsilon, ln.Sigma, ln.Tuning.Noise)
	}
	// At fixed parameters the learned metric can only lower the FIL: ‖v‖² − Σc_i(u_iᵀv)².
	lnModel := smallNet(t)
	lcfg := tuningConfig()
	lcfg.Tuning = TuningConfig{PretrainPublic: 0.5, PretrainSteps: 30, NoiseRank: 4, NoiseSamples: 20}
	ls, err := prepare(lcfg, Options{Model: lnModel, Data: split}, func(string, ...any) {})
	if err != nil {
		t.Fatal(err)
	}
	if err := ls.startTuning(&repeatState{InitSeed: 9}); err != nil {
		t.Fatal(err)
	}
	if err := ls.tune.noise.refresh(ls.tune, 0, ls.tune.cur.params); err != nil {
		t.Fatal(err)
	}
	all := make([][]int, 10)
	for i := range all {
		all[i] = []int{0, 1, 2, 3, 4, 5}
	}
	shaped, plain := make([]float64, 10), make([]float64, 10)
	xs, ys := split.Train.Images[:60], split.Train.Labels[:10]
	if err := ls.model.FILSqNorms(ls.tune.cur.params, xs, ys, ls.clip, all, shaped); err != nil {
		t.Fatal(err)
	}
	if err := lnModel.FILSqNorms(ls.tune.cur.params, xs, ys, ls.clip, all, plain); err != nil {
		t.Fatal(err)
	}
	lower := 0
	for i := range shaped {
		if shaped[i] > plain[i]*(1+1e-5) {
			t.Fatalf("sample %d: shaped FIL %v above isotropic %v", i, shaped[i], plain[i])
		}
		if shaped[i] < 0.95*plain[i] {
			lower++
		}
	}
	if lower == 0 {
		t.Errorf("learned noise lowered no sample's FIL by 5%%: %v vs %v", shaped, plain)
	}
	half := run(TuningConfig{PretrainPublic: 0.5, PretrainSteps: 30, NoiseRank: 4, NoiseSamples: 20, NoiseBase: 0.5}, 1.5)
	iso := run(TuningConfig{PretrainPublic: 0.5, PretrainSteps: 30}, 0.75)
	if half.Epsilon != iso.Epsilon || half.Sigma != 0.75 || half.NoiseMultiplierRDP != iso.NoiseMultiplierRDP || half.Tuning.Noise.SigmaNominal != 1.5 {
		t.Fatalf("β = 0.5: ε %v vs isotropic σ/2 %v; σ %v, σ/c %v vs %v", half.Epsilon, iso.Epsilon, half.Sigma, half.NoiseMultiplierRDP, iso.NoiseMultiplierRDP)
	}
	// Target ε: the calibrated multiplier is σ_eff.
	cfgT := tuningConfig()
	cfgT.Sigma, cfgT.TargetEpsilon = 0, 5
	cfgT.Tuning = TuningConfig{PretrainPublic: 0.5, PretrainSteps: 30, NoiseRank: 2, NoiseSamples: 10, NoiseBase: 0.5}
	rt, err := Run(ctx, cfgT, Options{Model: smallNet(t), Data: split})
	if err != nil {
		t.Fatal(err)
	}
	if rt.Epsilon > 5 || math.Abs(rt.Tuning.Noise.SigmaNominal*0.5-rt.Sigma) > 1e-12 {
		t.Fatalf("target ε: ε %v, σ_eff %v, nominal %v", rt.Epsilon, rt.Sigma, rt.Tuning.Noise.SigmaNominal)
	}
}

func TestTuningResumeIsBitIdentical(t *testing.T) {
	split := imageToyData(60, 20, 4)
	cfg := DefaultConfig()
	cfg.Model, cfg.Dataset, cfg.Batch, cfg.Steps, cfg.Repeats, cfg.FILCoords, cfg.Sigma = "mlp", "toy", 8, 8, 1, 2, 0.9
	cfg.Tuning = TuningConfig{PretrainPublic: 0.4, PretrainSteps: 5, PruneFraction: 0.3, NoiseRank: 2, NoiseSamples: 8}
	full := t.TempDir()
	if _, err := Run(context.Background(), cfg, Options{Out: full, Data: split}); err != nil {
		t.Fatal(err)
	}
	killed := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	_, err := Run(ctx, cfg, Options{Out: killed, Data: split, CheckpointEvery: 2, Progress: func(e Event) {
		if e.Step == 5 {
			cancel()
		}
	}})
	if err == nil {
		t.Fatal("killed run finished")
	}
	if _, err := Run(context.Background(), cfg, Options{Out: killed, Data: split, Resume: true}); err != nil {
		t.Fatal(err)
	}
	a, b := readComparable(t, full), readComparable(t, killed)
	if string(a) != string(b) {
		t.Fatalf("resumed result differs:\n%s\nvs\n%s", a, b)
	}
}

func TestTuningErrors(t *testing.T) {
	split := toyData(40, 10, 6, 3, 4)
	cfgEta := tuningConfig()
	cfgEta.FILEta, cfgEta.Tuning = 2, TuningConfig{PretrainPublic: 0.5}
	if _, err := Run(context.Background(), cfgEta, Options{Model: smallNet(t), Data: split}); err == nil || !strings.Contains(err.Error(), "fil_eta") {
		t.Errorf("fil_eta with tuning: %v", err)
	}
	for _, tc := range []struct {
		tune TuningConfig
		wd   float64
		want string
	}{
		{TuningConfig{PretrainPublic: 1.5}, 0, "pretrain_public"},
		{TuningConfig{PretrainSteps: 10}, 0, "needs public data"},
		{TuningConfig{PretrainWD: 0.01}, 0, "needs public data"},
		{TuningConfig{PretrainPublic: 0.5, PretrainWD: -1}, 0, "pretrain_weight_decay"},
		{TuningConfig{PretrainPublic: 0.5, PretrainWD: math.NaN()}, 0, "pretrain_weight_decay"},
		{TuningConfig{PruneFraction: 0.5}, 0.1, "weight_decay"},
		{TuningConfig{PruneMode: "cut", PruneFraction: 0.1}, 0, "prune_mode"},
		{TuningConfig{NoiseRank: 3}, 0, "public data"},
		{TuningConfig{NoisePower: 3}, 0, "noise_rank"},
		{TuningConfig{Freeze: "conv7"}, 0, "names no parameter"},
		{TuningConfig{Freeze: "dense1,dense3"}, 0, "freezes all"},
		{TuningConfig{PretrainPublic: 0.9}, 0, "private"},
		{TuningConfig{PretrainPublic: 0.5, NoiseRank: 500}, 0, "released parameters"},
	} {
		cfg := tuningConfig()
		cfg.Tuning, cfg.WeightDecay = tc.tune, tc.wd
		_, err := Run(context.Background(), cfg, Options{Model: smallNet(t), Data: split})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want it to mention %q", tc.tune, err, tc.want)
		}
	}
}

// waterFill spends the budget and equalises the marginal gain λ_i β²/(β² + a_i)² over
// the directions that get noise (and gives none where it would not reach that gain).
func TestWaterFill(t *testing.T) {
	lam := []float64{9, 4, 1, 0.01}
	const beta, budget = 0.8, 3.0
	a := waterFill(lam, beta, budget)
	sum := 0.0
	var gain []float64
	for k, v := range a {
		sum += v
		if v > 0 {
			gain = append(gain, lam[k]*beta*beta/((beta*beta+v)*(beta*beta+v)))
		}
	}
	if math.Abs(sum-budget) > 1e-9 || a[3] != 0 || len(gain) != 3 {
		t.Fatalf("a = %v (Σ %v)", a, sum)
	}
	for _, g := range gain[1:] {
		if math.Abs(g-gain[0]) > 1e-9*gain[0] {
			t.Fatalf("marginal gains %v not equal", gain)
		}
	}
	if lam[3]/(beta*beta) > gain[0] {
		t.Fatalf("direction 3 left out although its gain %v exceeds %v", lam[3]/(beta*beta), gain[0])
	}
	if z := waterFill(lam, beta, 0); z[0] != 0 {
		t.Fatal("zero budget allocated noise")
	}
}

// Monte Carlo: with the noise the trainer actually draws (isotropic σ_eff·C plus
// noiseFIM.add's low-rank part), the efficient unbiased estimator of a scalar input
// from one release y = J·x + noise has variance 1/FIL, FIL = ‖J‖²_M/(σ_eff C)² in the
// learned metric — the FIL the trainer accounts is that of the noise it adds.
func TestLearnedNoiseFILMatchesMonteCarlo(t *testing.T) {
	const P, sigma, C, beta = 6, 0.8, 1.5, 0.6
	rng := rand.New(rand.NewPCG(5, 6))
	nf := &noiseFIM{beta: beta, nominal: sigma, clipC: C, seed: 3}
	for q := 0; q < 2; q++ {
		u := make([]float64, P)
		for i := range u {
			u[i] = rng.NormFloat64()
		}
		for _, prev := range nf.u {
			floats.AddScaled(u, -floats.Dot(prev, u), prev)
		}
		n := math.Sqrt(floats.Dot(u, u))
		for i := range u {
			u[i] /= n
		}
		a := []float64{4, 1.5}[q]
		nf.u, nf.a, nf.c = append(nf.u, u), append(nf.a, a), append(nf.c, a/(beta*beta+a))
	}
	J := make([]float64, P)
	for i := range J {
		J[i] = rng.NormFloat64()
	}
	J[0] += 3 * nf.u[0][0] // some weight along the noisy direction
	effStd := beta * sigma * C
	fil := nf.shapedSqNorm(J) / (effStd * effStd)
	// Σ⁻¹J for the estimator, from the same metric: Σ⁻¹ = (I − Σ c_q u_q u_qᵀ)/(σ_eff C)².
	w := append([]float64(nil), J...)
	for q, u := range nf.u {
		floats.AddScaled(w, -nf.c[q]*floats.Dot(u, J), u)
	}
	const trials = 20000
	const x = 0.37
	sq := 0.0
	sum := make([]float32, P)
	for tr := 0; tr < trials; tr++ {
		for i := range sum {
			sum[i] = float32(J[i]*x + effStd*rng.NormFloat64())
		}
		nf.add(tr, sum)
		y := make([]float64, P)
		for i, v := range sum {
			y[i] = float64(v)
		}
		xhat := floats.Dot(w, y) / floats.Dot(w, J)
		sq += (xhat - x) * (xhat - x)
	}
	mse := sq / trials
	if r := mse * fil; r < 0.96 || r > 1.04 { // 20 000 trials: relative sd ≈ 1 %
		t.Fatalf("Monte Carlo MSE %v vs 1/FIL %v (ratio %v)", mse, 1/fil, r)
	}
}
