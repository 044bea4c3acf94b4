package attack

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/dpfil/dpfil/internal/dirlock"
	"github.com/dpfil/dpfil/models"
	"github.com/dpfil/dpfil/train"
)

// shadowInputs returns D₋ and S target rows of the toy data as float64, and S initial
// parameter vectors (float32-rounded, as train.Run starts from) of arch.
func shadowInputs(t *testing.T, arch models.Arch, n0, S int, sameInit bool) (fx, fsq []float64, fy []int, zs []float64, zy []int, init []float64) {
	t.Helper()
	fixed, pool := reconnToy(n0, 1), reconnToy(S, 2)
	d := fixed.Dim()
	fx, fsq, fy = make([]float64, n0*d), make([]float64, n0), make([]int, n0)
	for i := 0; i < n0; i++ {
		for j, v := range fixed.Image(i) {
			fx[i*d+j] = float64(v)
			fsq[i] += float64(v) * float64(v)
		}
		fy[i] = fixed.Labels[i]
	}
	zs, zy = make([]float64, S*d), make([]int, S)
	for k := 0; k < S; k++ {
		for j, v := range pool.Image(k) {
			zs[k*d+j] = float64(v)
		}
		zy[k] = pool.Labels[k]
	}
	P := arch.NumParams()
	init = make([]float64, S*P)
	for k := 0; k < S; k++ {
		seed := uint64(11)
		if !sameInit {
			seed += uint64(k)
		}
		for i, v := range models.InitParams(arch, seed) {
			init[k*P+i] = float64(float32(v))
		}
	}
	return
}

func toyArch(t *testing.T, name string) models.Arch {
	t.Helper()
	a, err := models.ArchByName(name)
	if err != nil {
		t.Fatal(err)
	}
	a.Classes = 2 // the toy data has 2 classes
	a.Layers[len(a.Layers)-1].Out = 2
	return a
}

// Training S models in one batch gives bit-identical parameters to training each
// alone (S = 1 batches), noise included: the batch changes only the GEMMs' column
// count, not any element's summation order. With pruning each model keeps its own
// mask (from its own θ₀) inside the block.
func TestShadowBatchEqualsOneAtATime(t *testing.T) {
	for _, tc := range []struct {
		name  string
		prune float64
		mode  string
	}{{"mlp", 0, ""}, {"linear", 0, ""}, {"mlp", 0.5, train.PruneFreeze}, {"linear", 0.3, train.PruneZero}} {
		name := tc.name
		arch := toyArch(t, name)
		cfg := reconnRecipe()
		cfg.Model, cfg.Batch, cfg.Steps, cfg.Sigma, cfg.Momentum, cfg.WeightDecay = name, 7, 3, 0.7, 0.5, 1e-3
		if tc.prune > 0 {
			cfg.WeightDecay, cfg.Tuning.PruneFraction, cfg.Tuning.PruneMode = 0, tc.prune, tc.mode
		}
		r, err := newShadowRecipe(cfg, arch, 7)
		if err != nil {
			t.Fatal(err)
		}
		const S = 5
		fx, fsq, fy, zs, zy, init := shadowInputs(t, arch, 6, S, false)
		P, d := r.p, r.d
		noise := func(k int) *rand.Rand { return rand.New(rand.NewPCG(uint64(k), 9)) }
		all := make([]float64, S*P)
		rs := make([]*rand.Rand, S)
		for k := range rs {
			rs[k] = noise(k)
		}
		if err := r.trainShadows(context.Background(), fx, fsq, fy, zs, zy, init, rs, all); err != nil {
			t.Fatal(err)
		}
		for k := 0; k < S; k++ {
			one := make([]float64, P)
			if err := r.trainShadows(context.Background(), fx, fsq, fy, zs[k*d:(k+1)*d], zy[k:k+1], init[k*P:(k+1)*P], []*rand.Rand{noise(k)}, one); err != nil {
				t.Fatal(err)
			}
			for i := range one {
				if one[i] != all[k*P+i] {
					t.Fatalf("%s: model %d parameter %d: batch %v, alone %v", name, k, i, all[k*P+i], one[i])
				}
			}
			moved, frozen := 0, 0
			for i := 0; i < P; i++ {
				switch v := all[k*P+i]; {
				case tc.mode == train.PruneZero && v == 0, tc.mode != train.PruneZero && v == init[k*P+i]:
					frozen++
				default:
					moved++
				}
			}
			if moved == 0 || tc.prune > 0 && frozen < int(tc.prune*float64(P)) {
				t.Fatalf("%s: model %d: %d of %d parameters moved, %d kept θ₀ or 0 (pruning %v)", name, k, moved, P, frozen, tc.prune)
			}
		}
	}
}

// Without noise the batched trainer and train.Run run the same algorithm from the
// same start: they agree to float32 rounding (train.Run sums the clipped gradients in
// float32) for both models, both clipping modes, with momentum and weight decay, and
// with one logit against a fixed zero (zero_logit) after either.
func TestShadowBatchMatchesTrainRun(t *testing.T) {
	for _, tc := range []struct {
		model, clip string
		c           float64
	}{{"mlp", train.ClipModeSmooth, 1}, {"mlp", train.ClipModeHard, 0.1}, {"linear", train.ClipModeHard, 0.5}, {"linear", train.ClipModeSmooth, 2},
		{"linear-logit", train.ClipModeHard, 0.5}, {"mlp-logit", train.ClipModeSmooth, 1}} {
		arch := toyArch(t, strings.TrimSuffix(tc.model, "-logit"))
		if strings.HasSuffix(tc.model, "-logit") { // one logit against a fixed zero
			arch.Name = tc.model
			arch.Layers = append(arch.Layers, models.LayerSpec{Kind: models.KindZeroLogit})
			arch.Layers[len(arch.Layers)-2].Out = 1
		}
		fixed, pool := reconnToy(6, 1), reconnToy(2, 2)
		cfg := reconnRecipe()
		cfg.Model, cfg.Batch, cfg.Steps, cfg.Sigma, cfg.FILCoords = strings.TrimSuffix(tc.model, "-logit"), 7, 4, 0, 0
		cfg.ClipMode, cfg.Clip, cfg.Momentum, cfg.WeightDecay, cfg.LR = tc.clip, tc.c, 0.5, 1e-3, 0.5
		r, err := newShadowRecipe(cfg, arch, 7)
		if err != nil {
			t.Fatal(err)
		}
		fx, fsq, fy, zs, zy, init := shadowInputs(t, arch, 6, 2, true)
		got := make([]float64, 2*r.p)
		if err := r.trainShadows(context.Background(), fx, fsq, fy, zs, zy, init, []*rand.Rand{nil, nil}, got); err != nil {
			t.Fatal(err)
		}
		for k := 0; k < 2; k++ {
			m, err := models.NewCPUModel(arch)
			if err != nil {
				t.Fatal(err)
			}
			res, err := train.Run(context.Background(), cfg, train.Options{Data: withTarget(fixed, pool.Image(k), pool.Labels[k], pool),
				Model: fixedInitModel{Model: m, seed: 11}})
			if err != nil {
				t.Fatal(err)
			}
			want := res.Repeats[0].Params
			maxDiff, maxMove := 0.0, 0.0
			for i, w := range want {
				maxDiff = math.Max(maxDiff, math.Abs(float64(w)-got[k*r.p+i]))
				maxMove = math.Max(maxMove, math.Abs(float64(w)-init[k*r.p+i]))
			}
			t.Logf("%s %s model %d: max diff %.3g, moved %.3g", tc.model, tc.clip, k, maxDiff, maxMove)
			if maxDiff > 1e-5 || maxMove < 1e-3 {
				t.Errorf("%s %s C=%v model %d: max |batched − train.Run| = %.3g (parameters moved up to %.3g)", tc.model, tc.clip, tc.c, k, maxDiff, maxMove)
			}
		}
	}
}

// A run that stops keeps its finished shadows in the checkpoint: resuming (from a
// file with a torn last record) or extending a smaller set gives exactly the shadows,
// and so the results, of one uninterrupted run, with either trainer; a checkpoint of
// another experiment is refused.
func TestRecoNNCheckpointResume(t *testing.T) {
	fixed, pool, targets := reconnToy(5, 1), reconnToy(12, 2), reconnToy(1, 3)
	for _, trainer := range []string{ShadowTrainerBatched, ShadowTrainerEngine} {
		dir := t.TempDir()
		opts := func(m int, ck string) RecoNNOptions {
			cfg := reconnRecipe()
			cfg.Steps, cfg.FILCoords = 2, 0
			return RecoNNOptions{Config: cfg, Fixed: fixed, Pool: pool, Targets: targets, Shadows: m, Reconstructor: "ridge",
				Trainer: trainer, ShadowBlock: 2, Checkpoint: ck, Seed: 5}
		}
		run := func(o RecoNNOptions) *RecoNNResult {
			t.Helper()
			res, err := RunRecoNN(context.Background(), o)
			if err != nil {
				t.Fatalf("%s: %v", trainer, err)
			}
			return res
		}
		same := func(what string, a, b *RecoNNResult) {
			t.Helper()
			if a.TrainMSE != b.TrainMSE || a.ValMSE != b.ValMSE || a.Targets[0].MSE != b.Targets[0].MSE {
				t.Errorf("%s, %s: train %v / %v, val %v / %v, target %v / %v", trainer, what, a.TrainMSE, b.TrainMSE, a.ValMSE, b.ValMSE, a.Targets[0].MSE, b.Targets[0].MSE)
			}
		}
		ck := dir + "/shadows.bin"
		full := run(opts(6, ck))
		if full.ShadowsTrained != 6 || full.ShadowTrainer != trainer {
			t.Fatalf("%s: trained %d with %s", trainer, full.ShadowsTrained, full.ShadowTrainer)
		}
		same("no checkpoint", full, run(opts(6, "")))
		again := run(opts(6, ck))
		if again.ShadowsLoaded != 6 || again.ShadowsTrained != 0 {
			t.Errorf("%s: rerun loaded %d, trained %d", trainer, again.ShadowsLoaded, again.ShadowsTrained)
		}
		same("all loaded", full, again)
		// Keep 3 records and half of the 4th, as a killed run can leave it.
		st, err := os.Stat(ck)
		if err != nil {
			t.Fatal(err)
		}
		rec := (st.Size() - int64(len(shadowFileMagic)+1+32+1)) / 6
		if err := os.Truncate(ck, st.Size()-3*rec+rec/2); err != nil {
			t.Fatal(err)
		}
		resumed := run(opts(6, ck))
		if resumed.ShadowsLoaded != 3 || resumed.ShadowsTrained != 3 {
			t.Errorf("%s: resumed with %d loaded, %d trained", trainer, resumed.ShadowsLoaded, resumed.ShadowsTrained)
		}
		same("resumed", full, resumed)
		ck2 := dir + "/grow.bin"
		run(opts(4, ck2))
		same("extended", full, run(opts(6, ck2)))
		o := opts(6, ck)
		o.Seed = 6
		if _, err := RunRecoNN(context.Background(), o); err == nil || !strings.Contains(err.Error(), "another experiment") {
			t.Errorf("%s: a checkpoint of another seed: %v", trainer, err)
		}
	}
}

// The batched trainer refuses what it does not implement, and auto falls back to
// train.Run for it.
func TestShadowTrainerChoice(t *testing.T) {
	fixed, pool := reconnToy(5, 1), reconnToy(8, 2)
	for _, tc := range []struct {
		mod     func(*train.Config)
		trainer string
		want    string // "" = an error
	}{
		{func(*train.Config) {}, ShadowTrainerAuto, ShadowTrainerBatched},
		{func(c *train.Config) { c.Batch = 3 }, ShadowTrainerAuto, ShadowTrainerEngine},
		{func(c *train.Config) { c.Batch = 3 }, ShadowTrainerBatched, ""},
		{func(c *train.Config) { c.Model = "mnist-cnn" }, ShadowTrainerBatched, ""},
		{func(c *train.Config) { c.Sigma, c.TargetEpsilon = 0, 10 }, ShadowTrainerBatched, ""},
		{func(c *train.Config) { c.Tuning.PruneFraction = 0.5 }, ShadowTrainerAuto, ShadowTrainerBatched},
		{func(c *train.Config) { c.Tuning.PruneFraction, c.Tuning.PruneMode = 0.5, train.PruneZero }, ShadowTrainerBatched, ShadowTrainerBatched},
		{func(c *train.Config) { c.Tuning.PruneFraction, c.WeightDecay = 0.5, 1e-3 }, ShadowTrainerBatched, ""},
		{func(c *train.Config) { c.Tuning.PruneFraction, c.Tuning.PruneMode = 0.5, "random" }, ShadowTrainerBatched, ""},
		{func(c *train.Config) { c.Tuning.PruneFraction, c.Tuning.Freeze = 0.5, "0" }, ShadowTrainerBatched, ""},
		{func(c *train.Config) { c.Tuning.Freeze = "dense1" }, ShadowTrainerAuto, ShadowTrainerEngine},
		{func(c *train.Config) { c.Tuning.PruneFraction, c.Tuning.PerturbNet = 0.5, true }, ShadowTrainerAuto, ShadowTrainerEngine},
		{func(c *train.Config) { c.Tuning.PretrainPublic = 0.5 }, ShadowTrainerBatched, ""},
		{func(c *train.Config) { c.UseAdam() }, ShadowTrainerBatched, ""},
		{func(c *train.Config) { c.UseAdam() }, ShadowTrainerAuto, ShadowTrainerEngine},
		{func(c *train.Config) { c.Optimizer = train.OptimizerSGD }, ShadowTrainerBatched, ShadowTrainerBatched},
		{func(*train.Config) {}, "gpu", ""},
	} {
		cfg := reconnRecipe()
		cfg.Batch = fixed.N + 1
		tc.mod(&cfg)
		arch, err := models.ArchByName(cfg.Model)
		if err != nil {
			t.Fatal(err)
		}
		o := RecoNNOptions{Config: cfg, Fixed: fixed, Pool: pool, Trainer: tc.trainer}
		got, _, err := resolveTrainer(&o, arch)
		if tc.want == "" && err == nil || tc.want != "" && (err != nil || got != tc.want) {
			t.Errorf("%+v with %q: %q, %v (want %q)", cfg, tc.trainer, got, err, tc.want)
		}
	}
}

// Shadow k is the same model whatever the block size and the number of blocks
// trained at once: the results of a run do not depend on them.
func TestRecoNNShadowBlockInvariance(t *testing.T) {
	fixed, pool, targets := reconnToy(5, 1), reconnToy(9, 2), reconnToy(1, 3)
	var ref *RecoNNResult
	for _, bp := range [][2]int{{1, 1}, {4, 2}, {9, 1}, {2, 3}} {
		cfg := reconnRecipe()
		cfg.Steps, cfg.FILCoords = 2, 0
		res, err := RunRecoNN(context.Background(), RecoNNOptions{Config: cfg, Fixed: fixed, Pool: pool, Targets: targets, Shadows: 9,
			Reconstructor: "ridge", Trainer: ShadowTrainerBatched, ShadowBlock: bp[0], Parallel: bp[1], Seed: 4})
		if err != nil {
			t.Fatal(err)
		}
		if ref == nil {
			ref = res
			continue
		}
		if res.TrainMSE != ref.TrainMSE || res.ValMSE != ref.ValMSE || res.Targets[0].MSE != ref.Targets[0].MSE {
			t.Errorf("block %d, parallel %d: train %v, val %v, target %v; block 1: %v, %v, %v", bp[0], bp[1],
				res.TrainMSE, res.ValMSE, res.Targets[0].MSE, ref.TrainMSE, ref.ValMSE, ref.Targets[0].MSE)
		}
	}
}

// A checkpoint file that another run has open is refused before it is read or
// truncated, and taken once that run has closed it.
func TestRecoNNCheckpointInUse(t *testing.T) {
	fixed, pool, targets := reconnToy(5, 1), reconnToy(12, 2), reconnToy(1, 3)
	cfg := reconnRecipe()
	cfg.Steps, cfg.FILCoords = 2, 0
	ck := t.TempDir() + "/shadows.bin"
	o := RecoNNOptions{Config: cfg, Fixed: fixed, Pool: pool, Targets: targets, Shadows: 4, Reconstructor: "ridge",
		ShadowBlock: 2, Checkpoint: ck, Seed: 5}
	held, err := os.OpenFile(ck, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := dirlock.LockOpenFile(held); err != nil {
		t.Fatal(err)
	}
	if _, err := RunRecoNN(context.Background(), o); !errors.Is(err, dirlock.ErrLocked) {
		t.Errorf("RunRecoNN on a held checkpoint: %v, want ErrLocked", err)
	}
	if st, err := os.Stat(ck); err != nil || st.Size() != 0 {
		t.Errorf("the held checkpoint was written to: %v, %v", st, err)
	}
	held.Close()
	if _, err := RunRecoNN(context.Background(), o); err != nil {
		t.Errorf("after the holder closed it: %v", err)
	}
}

// pruneMask freezes the ⌊f·P⌋ smallest |θ₀| (ties by index), keeping at least one.
func TestPruneMask(t *testing.T) {
	for _, tc := range []struct {
		p0   []float64
		frac float64
		want []float64
	}{
		{[]float64{0.3, -0.1, 0.1, 0, 0.2}, 0.6, []float64{1, 0, 0, 0, 1}},          // |−0.1| = |0.1|: the lower index first
		{[]float64{0.3, -0.1, 0.1, 0, 0.2}, 0.4, []float64{1, 0, 1, 0, 1}},          // k = 2
		{[]float64{0.3, -0.1, 0.1, 0, 0.2}, 0.1, []float64{1, 1, 1, 1, 1}},          // ⌊0.5⌋ = 0
		{[]float64{0.5, 0.5, 0.5}, 0.99, []float64{0, 0, 1}},                        // k = 2 of 3, ties by index
		{[]float64{-2, 1}, 0.99, []float64{1, 0}},                                   // ⌊1.98⌋ = 1
		{[]float64{7}, 0.9, []float64{1}},                                           // at least one kept
		{[]float64{0.2, -0.4, 0.1, 0.4, -0.3, 0}, 0.5, []float64{0, 1, 0, 1, 1, 0}}, // 0, 0.1, 0.2
	} {
		got := pruneMask(tc.p0, tc.frac)
		if !slices.Equal(got, tc.want) {
			t.Errorf("pruneMask(%v, %v) = %v, want %v", tc.p0, tc.frac, got, tc.want)
		}
	}
}

// A pruned shadow of the batched trainer is train.Run's pruned model (same tuning:
// magnitude pruning of θ₀, modes freeze and zero, shared or per-model θ₀), to float32
// rounding without noise: the mask leaves each per-sample gradient before clipping
// (every sample is clipped here, so a norm over all coordinates would scale the step
// differently), and the frozen coordinates keep θ₀ (or 0) exactly in both. With
// noise, no frozen coordinate moves in either (their noise is dropped too).
func TestPrunedShadowMatchesTrainRun(t *testing.T) {
	type tc struct {
		model, clip, mode string
		c                 float64
		sameInit          bool
	}
	cases := []tc{
		{"mlp", train.ClipModeHard, train.PruneFreeze, 0.05, true},
		{"mlp", train.ClipModeSmooth, train.PruneZero, 0.2, false},
		{"mlp", train.ClipModeHard, train.PruneZero, 0.05, true},
		{"linear", train.ClipModeHard, train.PruneFreeze, 0.1, false},
		{"linear", train.ClipModeSmooth, train.PruneZero, 0.3, true},
	}
	const S, n0 = 2, 6
	for _, c := range cases {
		for _, sigma := range []float64{0, 0.5} {
			name := fmt.Sprintf("%s/%s/%s/C=%v/same=%v/σ=%v", c.model, c.clip, c.mode, c.c, c.sameInit, sigma)
			arch := toyArch(t, c.model)
			fixed, pool := reconnToy(n0, 1), reconnToy(S, 2)
			cfg := reconnRecipe()
			cfg.Model, cfg.Batch, cfg.Steps, cfg.Sigma, cfg.FILCoords = c.model, n0+1, 4, sigma, 0
			cfg.ClipMode, cfg.Clip, cfg.Momentum, cfg.WeightDecay, cfg.LR = c.clip, c.c, 0.5, 0, 0.5
			cfg.Tuning.PruneFraction, cfg.Tuning.PruneMode = 0.5, c.mode
			r, err := newShadowRecipe(cfg, arch, n0+1)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			P := r.p
			fx, fsq, fy, zs, zy, init := shadowInputs(t, arch, n0, S, c.sameInit)
			got := make([]float64, S*P)
			noise := []*rand.Rand{rand.New(rand.NewPCG(1, 2)), rand.New(rand.NewPCG(3, 4))}
			if err := r.trainShadows(context.Background(), fx, fsq, fy, zs, zy, init, noise, got); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			nFrozen := int(math.Floor(0.5 * float64(P)))
			for k := 0; k < S; k++ {
				seed := uint64(11)
				if !c.sameInit {
					seed += uint64(k)
				}
				m, err := models.NewCPUModel(arch)
				if err != nil {
					t.Fatal(err)
				}
				res, err := train.Run(context.Background(), cfg, train.Options{Data: withTarget(fixed, pool.Image(k), pool.Labels[k], pool),
					Model: withFixedInit(m, seed)})
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if res.Tuning == nil || res.Tuning.Frozen != nFrozen {
					t.Fatalf("%s: train.Run froze %+v, want %d", name, res.Tuning, nFrozen)
				}
				want := res.Repeats[0].Params
				mask := pruneMask(init[k*P:(k+1)*P], 0.5)
				start := func(i int) float64 {
					if mask[i] == 0 && c.mode == train.PruneZero {
						return 0
					}
					return init[k*P+i]
				}
				frozen, maxDiff, maxMove := 0, 0.0, 0.0
				for i, w := range want {
					g := got[k*P+i]
					if mask[i] == 0 {
						frozen++
						if g != start(i) || float64(w) != start(i) {
							t.Fatalf("%s model %d: frozen parameter %d moved: θ₀ %v, batched %v, train.Run %v", name, k, i, start(i), g, w)
						}
						continue
					}
					maxDiff = math.Max(maxDiff, math.Abs(float64(w)-g))
					maxMove = math.Max(maxMove, math.Abs(float64(w)-start(i)))
				}
				if frozen != nFrozen || maxMove < 1e-3 {
					t.Fatalf("%s model %d: %d frozen (want %d), released parameters moved up to %.3g", name, k, frozen, nFrozen, maxMove)
				}
				if sigma > 0 {
					continue // other noise draws: only the frozen coordinates compare
				}
				t.Logf("%s model %d: max |batched − train.Run| %.3g, moved %.3g", name, k, maxDiff, maxMove)
				if maxDiff > 1e-6 {
					t.Errorf("%s model %d: max |batched − train.Run| = %.3g (released parameters moved up to %.3g)", name, k, maxDiff, maxMove)
				}
			}
		}
	}
}

// BenchmarkShadowBlock trains one block of S = 32 mlp shadows (784 → 10 → ELU → 10,
// |D₋| = 999, full batch) for 20 steps on random digits-like data (the pruning masks,
// computed once per block, are ≈ 8 % of the pruned time here, ≈ 2 % at T = 100) and
// reports shadows/s (scaled to the papers' T = 100) and the rate of the two float32
// GEMMs per step, 2·2·N·d·h FLOPs per shadow (docs/perf.md "RecoNN shadows").
func BenchmarkShadowBlock(b *testing.B) {
	for _, prune := range []float64{0, 0.5} {
		b.Run(fmt.Sprintf("prune=%g", prune), func(b *testing.B) {
			arch, err := models.ArchByName("mlp")
			if err != nil {
				b.Fatal(err)
			}
			const n0, S, steps = 999, 32, 20
			cfg := reconnRecipe()
			cfg.Batch, cfg.Steps, cfg.Sigma, cfg.Momentum, cfg.Clip = n0+1, steps, 0.2, 0, 0.1
			cfg.Tuning.PruneFraction = prune
			r, err := newShadowRecipe(cfg, arch, n0+1)
			if err != nil {
				b.Fatal(err)
			}
			d, P := r.d, r.p
			rng := rand.New(rand.NewPCG(1, 2))
			fx, fsq, fy := make([]float64, n0*d), make([]float64, n0), make([]int, n0)
			for i := 0; i < n0; i++ {
				for j := 0; j < d; j++ {
					if rng.Float64() < 0.2 { // about MNIST's share of lit pixels
						fx[i*d+j] = rng.Float64()
						fsq[i] += fx[i*d+j] * fx[i*d+j]
					}
				}
				fy[i] = rng.IntN(10)
			}
			zs, zy := make([]float64, S*d), make([]int, S)
			for i := range zs {
				if rng.Float64() < 0.2 {
					zs[i] = rng.Float64()
				}
			}
			init := make([]float64, S*P)
			for k := 0; k < S; k++ {
				zy[k] = k % 10
				for i, v := range models.InitParams(arch, 11) {
					init[k*P+i] = float64(float32(v))
				}
			}
			out := make([]float64, S*P)
			b.ResetTimer()
			for it := 0; it < b.N; it++ {
				rs := make([]*rand.Rand, S)
				for k := range rs {
					rs[k] = rand.New(rand.NewPCG(uint64(k), 9))
				}
				if err := r.trainShadows(context.Background(), fx, fsq, fy, zs, zy, init, rs, out); err != nil {
					b.Fatal(err)
				}
			}
			sec := b.Elapsed().Seconds() / float64(b.N)
			b.ReportMetric(float64(S)*steps/100/sec, "shadows/s@T=100")
			b.ReportMetric(float64(S)*steps*4*float64(n0*d*r.h)/sec/1e9, "GEMM-GFLOP/s")
		})
	}
}
