package attack

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

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
// count, not any element's summation order.
func TestShadowBatchEqualsOneAtATime(t *testing.T) {
	for _, name := range []string{"mlp", "linear"} {
		arch := toyArch(t, name)
		cfg := reconnRecipe()
		cfg.Model, cfg.Batch, cfg.Steps, cfg.Sigma, cfg.Momentum, cfg.WeightDecay = name, 7, 3, 0.7, 0.5, 1e-3
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
			if init[k*P] == all[k*P] {
				t.Fatalf("%s: model %d did not move", name, k)
			}
		}
	}
}

// Without noise the batched trainer and train.Run run the same algorithm from the
// same start: they agree to float32 rounding (train.Run sums the clipped gradients in
// float32) for both models, both clipping modes, with momentum and weight decay.
func TestShadowBatchMatchesTrainRun(t *testing.T) {
	for _, tc := range []struct {
		model, clip string
		c           float64
	}{{"mlp", train.ClipModeSmooth, 1}, {"mlp", train.ClipModeHard, 0.1}, {"linear", train.ClipModeHard, 0.5}, {"linear", train.ClipModeSmooth, 2}} {
		arch := toyArch(t, tc.model)
		fixed, pool := reconnToy(6, 1), reconnToy(2, 2)
		cfg := reconnRecipe()
		cfg.Model, cfg.Batch, cfg.Steps, cfg.Sigma, cfg.FILCoords = tc.model, 7, 4, 0, 0
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
