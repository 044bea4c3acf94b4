package attack

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/dpfil/dpfil/data"
	"github.com/dpfil/dpfil/train"
)

// reconnToy is an n-image 28×28 dataset with values in [0,1] and 2 classes.
func reconnToy(n int, seed uint64) *data.Dataset {
	r := rand.New(rand.NewPCG(seed, 1))
	ds := &data.Dataset{Name: "toy", Source: "test", N: n, C: 1, H: 28, W: 28, Classes: 2,
		Images: make([]float32, n*784), Labels: make([]int, n)}
	for i := 0; i < n; i++ {
		ds.Labels[i] = i % 2
		for j := 0; j < 784; j++ {
			ds.Images[i*784+j] = float32(r.Float64())
		}
	}
	ds.SHA256 = ds.Fingerprint()
	return ds
}

func reconnRecipe() train.Config {
	cfg := train.DefaultConfig()
	cfg.Model, cfg.Dataset, cfg.Steps, cfg.LR, cfg.Sigma, cfg.FILCoords = "mlp", "toy", 4, 0.5, 0.5, 5
	cfg.Accountant, cfg.Batch = train.AccountantRDP, 0 // full batch
	return cfg
}

// On a one-point prior every shadow target is the same image, so the reconstructor
// outputs it whatever the released weights: it recovers the real target exactly.
func TestRecoNNOnePointPrior(t *testing.T) {
	fixed := reconnToy(8, 1)
	point := reconnToy(1, 2)
	for _, rc := range []string{"ridge", "mlp"} {
		res, err := RunRecoNN(context.Background(), RecoNNOptions{Config: reconnRecipe(), Fixed: fixed, Pool: point, Targets: point,
			Shadows: 5, Reconstructor: rc, MLP: MLPOptions{Hidden: 8, Epochs: 30, LR: 1e-2}, Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		tg := res.Targets[0]
		if tg.MSE > 1e-4 || res.ValMSE > 1e-4 {
			t.Errorf("%s: one-point prior not recovered: target MSE %g, held-out shadow MSE %g", rc, tg.MSE, res.ValMSE)
		}
		if !(tg.DFIL > 0) || tg.BoundRDP <= 0 || res.Features != 7960+2 {
			t.Errorf("%s: dFIL %v, RDP bound %v, %d features", rc, tg.DFIL, tg.BoundRDP, res.Features)
		}
	}
}

// Without noise, from a shared initialisation and after one full-batch step of the
// linear model, the released weights are W₀ + const + (e_y − p)x_zᵀ·lr/B: nearly
// linear in the target, so the ridge reconstructor beats the label-only baseline on
// held-out shadows by far.
func TestRecoNNLearnsWithoutNoise(t *testing.T) {
	fixed := reconnToy(4, 1)
	// A two-factor family of images: a linear reconstructor can only output the span of
	// its training targets, so the prior must be low-dimensional for 30 shadows.
	pool := reconnToy(42, 5)
	b := reconnToy(2, 6)
	r := rand.New(rand.NewPCG(7, 7))
	for i := 0; i < pool.N; i++ {
		f1, f2 := r.Float64()-0.5, r.Float64()-0.5
		for j := 0; j < 784; j++ {
			pool.Images[i*784+j] = float32(0.5 + 0.8*(f1*(float64(b.Images[j])-0.5)+f2*(float64(b.Images[784+j])-0.5)))
		}
	}
	pool.SHA256 = pool.Fingerprint()
	targets, err := pool.Select([]int{40, 41})
	if err != nil {
		t.Fatal(err)
	}
	if pool, err = pool.Head(40); err != nil {
		t.Fatal(err)
	}
	cfg := reconnRecipe()
	cfg.Model, cfg.Sigma, cfg.FILCoords, cfg.Steps = "linear", 0, 0, 1
	res, err := RunRecoNN(context.Background(), RecoNNOptions{Config: cfg, Fixed: fixed, Pool: pool, Targets: targets,
		Shadows: 40, ValFraction: 0.25, SameInit: true, Reconstructor: "ridge", Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !(res.ValMSE < 0.2*res.ValBaselineMSE) || !(res.MeanMSE < 0.2*res.MeanBaselineMSE) {
		t.Errorf("held-out shadow MSE %g vs label-only baseline %g; targets %g vs %g", res.ValMSE, res.ValBaselineMSE, res.MeanMSE, res.MeanBaselineMSE)
	}
}

func TestRecoNNErrors(t *testing.T) {
	fixed, pool := reconnToy(4, 1), reconnToy(4, 2)
	for _, o := range []RecoNNOptions{
		{Config: reconnRecipe(), Fixed: fixed, Pool: pool, Targets: pool, Shadows: 1},
		{Config: reconnRecipe(), Fixed: fixed, Pool: pool, Targets: pool, Shadows: 4, Reconstructor: "cnn"},
		{Config: reconnRecipe(), Fixed: fixed, Pool: nil, Targets: pool, Shadows: 4},
		{Config: reconnRecipe(), Fixed: fixed, Pool: pool, Targets: pool, Shadows: 4, ValFraction: 1.5},
		{Config: func() train.Config { c := reconnRecipe(); c.Tuning.PretrainPublic = 0.5; return c }(), Fixed: fixed, Pool: pool, Targets: pool, Shadows: 4},
	} {
		if _, err := RunRecoNN(context.Background(), o); err == nil {
			t.Errorf("accepted %+v", o)
		}
	}
}

// The closed-form leave-one-out residual of kernel ridge equals refitting without the row.
func TestRidgeLeaveOneOut(t *testing.T) {
	const m, f, d = 7, 5, 2
	r := rand.New(rand.NewPCG(1, 2))
	x := make([]float64, m*f)
	y := make([]float64, m*d)
	for i := range x {
		x[i] = r.NormFloat64()
	}
	for i := range y {
		y[i] = r.Float64()
	}
	rr, err := fitRidge(x, y, m, f, d, 0.3)
	if err != nil {
		t.Fatal(err)
	}
	scale := 0.0
	for i := 0; i < m; i++ {
		row := rr.xs[i*f : (i+1)*f]
		for _, v := range row {
			scale += v * v / m
		}
	}
	reg := 0.3 * scale
	kern := func(a, b int) float64 {
		s := 0.0
		for c := 0; c < f; c++ {
			s += rr.xs[a*f+c] * rr.xs[b*f+c]
		}
		return s
	}
	// (K+λI)⁻¹ from the fitted alpha's definition, by a dense solve.
	full := mat.NewSymDense(m, nil)
	for a := 0; a < m; a++ {
		for b := a; b < m; b++ {
			v := kern(a, b)
			if a == b {
				v += reg
			}
			full.SetSym(a, b, v)
		}
	}
	var inv mat.Dense
	if err := inv.Inverse(full); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < m; i++ {
		// Refit without row i.
		idx := []int{}
		for a := 0; a < m; a++ {
			if a != i {
				idx = append(idx, a)
			}
		}
		kk := mat.NewSymDense(m-1, nil)
		for a, ia := range idx {
			for b, ib := range idx {
				if b >= a {
					v := kern(ia, ib)
					if a == b {
						v += reg
					}
					kk.SetSym(a, b, v)
				}
			}
		}
		var ch mat.Cholesky
		if !ch.Factorize(kk) {
			t.Fatal("not positive definite")
		}
		for j := 0; j < d; j++ {
			yc := mat.NewVecDense(m-1, nil)
			for a, ia := range idx {
				yc.SetVec(a, y[ia*d+j]-rr.ybar[j])
			}
			var al mat.VecDense
			if err := ch.SolveVecTo(&al, yc); err != nil {
				t.Fatal(err)
			}
			pred := 0.0
			for a, ia := range idx {
				pred += kern(i, ia) * al.AtVec(a)
			}
			want := y[i*d+j] - rr.ybar[j] - pred
			got := rr.alpha.At(i, j) / inv.At(i, i)
			if math.Abs(got-want) > 1e-9*(1+math.Abs(want)) {
				t.Fatalf("row %d output %d: closed-form LOO residual %v, refit %v", i, j, got, want)
			}
		}
	}
}

// The reconstructor network (its first layer in float32 GEMMs) learns a smooth map
// from features to images: on targets y = sigmoid(Ax) its held-out error falls far
// below that of the mean image it starts from.
func TestMLPReconstructorLearns(t *testing.T) {
	const m, f, d = 400, 24, 16
	r := rand.New(rand.NewPCG(3, 4))
	a := make([]float64, d*f)
	for i := range a {
		a[i] = r.NormFloat64() / math.Sqrt(f)
	}
	x, y := make([]float64, m*f), make([]float64, m*d)
	for i := 0; i < m; i++ {
		for j := 0; j < f; j++ {
			x[i*f+j] = 3 + 2*r.NormFloat64() // the standardiser must undo the offset and scale
		}
		for o := 0; o < d; o++ {
			z := 0.0
			for j := 0; j < f; j++ {
				z += a[o*f+j] * (x[i*f+j] - 3) / 2
			}
			y[i*d+o] = 1 / (1 + math.Exp(-2*z))
		}
	}
	const tr = 300
	rec, err := fitMLP(x[:tr*f], y[:tr*d], tr, f, d, MLPOptions{Hidden: 32, Epochs: 150, LR: 3e-3}, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	pred := make([]float64, (m-tr)*d)
	rec.Predict(x[tr*f:], m-tr, pred)
	mean := make([]float64, d)
	for i := 0; i < tr; i++ {
		for o := 0; o < d; o++ {
			mean[o] += y[i*d+o] / tr
		}
	}
	var e, e0 float64
	for i := 0; i < m-tr; i++ {
		for o := 0; o < d; o++ {
			v := y[(tr+i)*d+o]
			e += (pred[i*d+o] - v) * (pred[i*d+o] - v)
			e0 += (mean[o] - v) * (mean[o] - v)
		}
	}
	if !(e < 0.1*e0) {
		t.Errorf("held-out MSE %.4g, mean image %.4g: want below a tenth", e/(m-tr)/d, e0/(m-tr)/d)
	}
}

// --rec-best-epoch keeps the epoch with the lowest held-out shadow MSE: the result's
// held-out MSE is the minimum of the learning curve the run logs.
func TestRecoNNBestEpoch(t *testing.T) {
	fixed, pool, targets := reconnToy(5, 1), reconnToy(20, 2), reconnToy(1, 3)
	cfg := reconnRecipe()
	cfg.Steps, cfg.FILCoords = 2, 0
	var curve []float64
	res, err := RunRecoNN(context.Background(), RecoNNOptions{Config: cfg, Fixed: fixed, Pool: pool, Targets: targets, Shadows: 20,
		ValFraction: 0.25, MLP: MLPOptions{Hidden: 16, Epochs: 12, LR: 1e-2, BestEpoch: true}, Seed: 2,
		Logf: func(format string, a ...any) {
			if strings.Contains(format, "reconstructor epoch") {
				curve = append(curve, a[2].(float64))
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if len(curve) != 12 {
		t.Fatalf("%d epochs logged", len(curve))
	}
	best := 0
	for i, v := range curve {
		if v < curve[best] {
			best = i
		}
	}
	if res.BestEpoch != best+1 || math.Abs(res.ValMSE-curve[best]) > 1e-12 {
		t.Errorf("kept epoch %d with held-out MSE %v; curve %v", res.BestEpoch, res.ValMSE, curve)
	}
}

// TestRecoNNSameInitPrune runs engine-trained shadows with a shared initialisation
// and magnitude pruning (Edmunds' Table 3.5 "Prune" row): the fixed-init wrapper
// must keep the engine network that pruning needs (it hid it once, and the run
// stopped with "pruning … need the engine's per-sample passes"). The default
// trainer, auto, trains such shadows batched (TestPrunedShadowMatchesTrainRun
// checks them against train.Run), with and without --same-init.
func TestRecoNNSameInitPrune(t *testing.T) {
	fixed, pool := reconnToy(6, 1), reconnToy(12, 2)
	targets, err := pool.Select([]int{10, 11})
	if err != nil {
		t.Fatal(err)
	}
	if pool, err = pool.Head(10); err != nil {
		t.Fatal(err)
	}
	cfg := reconnRecipe()
	cfg.FILCoords = 0
	cfg.Tuning.PruneFraction = 0.5
	for _, tc := range []struct {
		trainer, want string
		same          bool
	}{{ShadowTrainerEngine, ShadowTrainerEngine, true}, {ShadowTrainerAuto, ShadowTrainerBatched, true}, {ShadowTrainerAuto, ShadowTrainerBatched, false}} {
		res, err := RunRecoNN(context.Background(), RecoNNOptions{Config: cfg, Fixed: fixed, Pool: pool, Targets: targets,
			Shadows: 6, SameInit: tc.same, Reconstructor: "ridge", Trainer: tc.trainer, Seed: 4})
		if err != nil {
			t.Fatalf("%s, same init %v: %v", tc.trainer, tc.same, err)
		}
		if len(res.Targets) != 2 || !(res.MeanMSE > 0) || res.ShadowTrainer != tc.want {
			t.Errorf("%s, same init %v: %d targets, mean MSE %v, trainer %q (want %q)", tc.trainer, tc.same, len(res.Targets), res.MeanMSE, res.ShadowTrainer, tc.want)
		}
	}
}
