package train

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/dpfil/dpfil/models"
	"github.com/dpfil/dpfil/train/fil"
)

// smallConvArch is a small conv net with every kind of the mnist-cnn layers (conv
// with padding and stride, tanh, average pooling, dense) on 1×8×8 inputs.
func smallConvArch() models.Arch {
	return models.Arch{Name: "small-conv", Input: models.Shape{C: 1, H: 8, W: 8}, Classes: 4, Layers: []models.LayerSpec{
		models.Conv(3, 3, 2, 1), {Kind: models.KindTanh}, models.AvgPool(2, 1),
		{Kind: models.KindFlatten}, models.Dense(5), {Kind: models.KindTanh}, models.Dense(4),
	}}
}

// float64Setup returns a float64 engine network for arch, perturbed initial
// parameters, a batch of inputs in [0,1] and labels.
func float64Setup(t *testing.T, arch models.Arch, batch int, seed uint64) (*models.Network[float64], []float64, []float64, []int) {
	t.Helper()
	net, err := models.NewNetwork(arch, models.NewCPUBackend[float64]())
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(seed, 5))
	params := models.InitParams(arch, seed)
	for i := range params {
		params[i] += 0.05 * r.NormFloat64()
	}
	d := arch.InputDim()
	x := make([]float64, batch*d)
	for i := range x {
		x[i] = r.Float64()
	}
	y := make([]int, batch)
	for i := range y {
		y[i] = r.IntN(arch.Classes)
	}
	return net, params, x, y
}

// gradNorm is ‖g‖ of the first sample's loss gradient.
func gradNorm(t *testing.T, net *models.Network[float64], params, x []float64, y []int) float64 {
	t.Helper()
	d := net.InputDim()
	g, _, err := net.PerSampleGrads(params, x[:d], y[:1], 1)
	if err != nil {
		t.Fatal(err)
	}
	var ss float64
	for _, v := range g {
		ss += v * v
	}
	return math.Sqrt(ss)
}

// exactJacobian returns sample s's J = ∂g̃/∂x (P×D, float64) column by column: the
// engine's tangent along every unit input direction, through the clip's JVP.
func exactJacobian(t *testing.T, net *models.Network[float64], params, x []float64, y []int, s int, clip models.Clip) *mat.Dense {
	t.Helper()
	d, p := net.InputDim(), net.NumParams()
	xdot := make([]float64, d*d)
	for i := 0; i < d; i++ {
		xdot[i*d+i] = 1
	}
	tg, err := net.Tangent(params, x[s*d:(s+1)*d], y[s:s+1], 1, d, xdot, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	J := mat.NewDense(p, d, nil)
	col := make([]float64, p)
	for i := 0; i < d; i++ {
		models.ClipJVP(clip, tg.Grads[:p], tg.GradDots[i*p:(i+1)*p], col)
		J.SetCol(i, col)
	}
	return J
}

// TestEtaMatchesSVD: the power iteration's ‖J‖₂ (η·σC of one step) equals the largest
// singular value of the exact Jacobian from a float64 SVD, to 1e-6 relative, on the
// linear model, the mlp and a small conv net, with smooth and hard clipping (C set
// relative to the gradient norm so that the clip is active and curved).
func TestEtaMatchesSVD(t *testing.T) {
	linear, _ := models.ArchByName("linear")
	mlp, _ := models.ArchByName("mlp")
	cases := []struct {
		arch models.Arch
		clip models.Clip
	}{
		{linear, models.Clip{Mode: models.ClipSmooth, C: 0.8}},
		{mlp, models.Clip{Mode: models.ClipSmooth, C: 0.9}},
		{mlp, models.Clip{Mode: models.ClipHard, C: 0.7}},
		{smallConvArch(), models.Clip{Mode: models.ClipSmooth, C: 0.8}},
		{smallConvArch(), models.Clip{Mode: models.ClipSmooth, C: 50}}, // far below C: scale ≈ 1.19, nearly constant
	}
	for _, c := range cases {
		t.Run(c.arch.Name+"-"+map[models.ClipMode]string{models.ClipSmooth: "smooth", models.ClipHard: "hard"}[c.clip.Mode], func(t *testing.T) {
			batch := 2
			if c.arch.InputDim() > 100 {
				batch = 1 // the SVD of a 7 850×784 J takes seconds
			}
			net, params, x, y := float64Setup(t, c.arch, batch, 11)
			c.clip.C *= gradNorm(t, net, params, x, y) // C relative to sample 0's ‖g‖: the clip's curved part
			r := rand.New(rand.NewPCG(3, 4))
			v0 := make([]float64, batch*net.InputDim())
			for i := range v0 {
				v0[i] = r.NormFloat64()
			}
			sp, err := ClippedJacobianSpectral(net, params, x, y, batch, c.clip, 3000, 1e-15, v0, nil)
			if err != nil {
				t.Fatal(err)
			}
			for s := 0; s < batch; s++ {
				J := exactJacobian(t, net, params, x, y, s, c.clip)
				var svd mat.SVD
				if !svd.Factorize(J, mat.SVDNone) {
					t.Fatal("SVD failed")
				}
				vals := svd.Values(nil)
				want := vals[0]
				got := math.Sqrt(sp.SqNorm[s])
				if rel := math.Abs(got-want) / want; !(rel <= 1e-6) {
					t.Errorf("sample %d: power iteration ‖J‖₂ = %.12g, SVD %.12g (σ₂ = %.6g), relative error %.2g after %d iterations",
						s, got, want, vals[1], rel, sp.Iterations)
				}
				t.Logf("sample %d: ‖J‖₂ = %.12g (SVD), %.12g (power iteration, %d iterations); σ₂/σ₁ = %.4f", s, want, got, sp.Iterations, vals[1]/want)
				// The iterate is the top right singular vector: ‖J v‖ = σ₁.
				Jv := mat.NewVecDense(J.RawMatrix().Rows, nil)
				Jv.MulVec(J, mat.NewVecDense(net.InputDim(), sp.Vec[s*net.InputDim():(s+1)*net.InputDim()]))
				if rel := math.Abs(mat.Norm(Jv, 2)-want) / want; rel > 1e-6 {
					t.Errorf("sample %d: ‖J v‖ = %g, σ₁ = %g", s, mat.Norm(Jv, 2), want)
				}
			}
		})
	}
}

// TestEtaScaleAndErrors: the input scale multiplies J by diag(scale); bad inputs are
// errors.
func TestEtaScaleAndErrors(t *testing.T) {
	arch := smallConvArch()
	net, params, x, y := float64Setup(t, arch, 1, 2)
	clip := models.Clip{Mode: models.ClipSmooth, C: 0.2}
	d := net.InputDim()
	scale := make([]float64, d)
	for i := range scale {
		scale[i] = 0.5 + float64(i%3)
	}
	sp, err := ClippedJacobianSpectral(net, params, x, y, 1, clip, 3000, 1e-15, nil, scale)
	if err != nil {
		t.Fatal(err)
	}
	J := exactJacobian(t, net, params, x, y, 0, clip)
	var js mat.Dense
	js.Mul(J, mat.NewDiagDense(d, scale))
	var svd mat.SVD
	svd.Factorize(&js, mat.SVDNone)
	if want := svd.Values(nil)[0]; math.Abs(math.Sqrt(sp.SqNorm[0])-want) > 1e-6*want {
		t.Errorf("scaled: %g, want %g", math.Sqrt(sp.SqNorm[0]), want)
	}
	for name, call := range map[string]func() error{
		"iters": func() error {
			_, err := ClippedJacobianSpectral(net, params, x, y, 1, clip, 0, 0, nil, nil)
			return err
		},
		"v0": func() error {
			_, err := ClippedJacobianSpectral(net, params, x, y, 1, clip, 1, 0, make([]float64, d), nil)
			return err
		},
		"v0 len": func() error {
			_, err := ClippedJacobianSpectral(net, params, x, y, 1, clip, 1, 0, make([]float64, 3), nil)
			return err
		},
		"scale": func() error {
			_, err := ClippedJacobianSpectral(net, params, x, y, 1, clip, 1, 0, nil, []float64{1})
			return err
		},
		"x": func() error {
			_, err := ClippedJacobianSpectral(net, params, x[:3], y, 1, clip, 1, 0, nil, nil)
			return err
		},
		"clip": func() error {
			_, err := ClippedJacobianSpectral(net, params, x, y, 1, models.Clip{C: -1}, 1, 0, nil, nil)
			return err
		},
		"nil net": func() error {
			_, err := ClippedJacobianSpectral[float64](nil, params, x, y, 1, clip, 1, 0, nil, nil)
			return err
		},
	} {
		if call() == nil {
			t.Errorf("%s: no error", name)
		}
	}
	c := Config{Model: "mnist-cnn", Dataset: "x", Steps: 1, Batch: 1, LR: 1, Sigma: 1, Clip: 1, ClipMode: "smooth", Sampling: "poisson", Delta: 1e-5, Repeats: 1, Device: "cpu", FILEta: -1}
	if err := c.Validate(); err == nil {
		t.Error("fil_eta < 0 accepted")
	}
	c.FILEta, c.Sigma = 5, 0
	if err := c.Validate(); err == nil {
		t.Error("fil_eta without noise accepted")
	}
}

// TestEtaInTraining: a run with fil_eta and fil_exact reports η² per sample with
// η²(z) ≥ dFIL(z) (a step's Tr(JᵀJ)/d ≤ ‖J‖₂², same steps, same weights), the η MSE
// bounds, eta.npy, and a resumed run gives the same η.
func TestEtaInTraining(t *testing.T) {
	split := imageToyData(40, 10, 6)
	cfg := DefaultConfig()
	cfg.Model, cfg.Dataset, cfg.Batch, cfg.Steps, cfg.Sigma = "mlp", "toy", 8, 6, 1
	cfg.FILCoords, cfg.FILExact, cfg.FILEta, cfg.FILLabel = 0, true, 30, true
	dir := t.TempDir()
	res, err := Run(context.Background(), cfg, Options{Out: dir, Data: split})
	if err != nil {
		t.Fatal(err)
	}
	if res.Eta == nil || res.Eta.Iterations != 30 || res.Eta.Path != EtaFile || res.LabelFIL == nil || res.LabelFIL.Classes != 10 {
		t.Fatalf("result η %+v, label %+v", res.Eta, res.LabelFIL)
	}
	sampled := 0
	for i, e := range res.Eta.PerSample {
		dfil := res.DFIL[i]
		if e < dfil*(1-1e-4) {
			t.Errorf("sample %d: η² = %g < dFIL = %g", i, e, dfil)
		}
		if dfil > 0 {
			sampled++
			if e > 784*dfil*(1+1e-4) {
				t.Errorf("sample %d: η² = %g > d·dFIL = %g", i, e, 784*dfil)
			}
		}
		if (dfil > 0) != (e > 0) || (dfil > 0) != (res.LabelFIL.PerSample[i] > 0) {
			t.Errorf("sample %d: dFIL %g, η² %g, label dFIL %g: not the same steps", i, dfil, e, res.LabelFIL.PerSample[i])
		}
		if l, le := res.LabelFIL.PerSample[i], res.LabelFIL.PerSampleEta[i]; le < l*(1-1e-9) || le > 10*l*(1+1e-9) {
			t.Errorf("sample %d: label η² %g outside [dFIL, K·dFIL] = [%g, %g]", i, le, l, 10*l)
		}
	}
	if sampled < 10 {
		t.Fatalf("only %d samples were in a batch", sampled)
	}
	if got := res.Eta.EtaSq.MSEBoundMax; math.Abs(got-1/res.Eta.EtaSq.Max) > 1e-12*got || got > res.MSEBoundFILMax {
		t.Errorf("η bound 1/max η² = %g (max η² %g), dFIL bound %g", got, res.Eta.EtaSq.Max, res.MSEBoundFILMax)
	}
	if res.Eta.MaxRelChange > 1e-3 {
		t.Errorf("power iteration not converged in 30 iterations: relative change %g", res.Eta.MaxRelChange)
	}
	saved, err := fil.Load(filepath.Join(dir, EtaFile))
	if err != nil || len(saved) != 40 || saved[0] != res.Eta.PerSample[0] {
		t.Fatalf("eta.npy: %v", err)
	}
	for _, f := range []string{LabelDFILFile, LabelEtaFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	// Killed after step 3 and resumed: identical η and label FIL.
	killed := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	_, err = Run(ctx, cfg, Options{Out: killed, Data: split, CheckpointEvery: 1, Progress: func(e Event) {
		if e.Step == 3 {
			cancel()
		}
	}})
	if err == nil {
		t.Fatal("not cancelled")
	}
	r2, err := Run(context.Background(), cfg, Options{Out: killed, Data: split, Resume: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range res.Eta.PerSample {
		if r2.Eta.PerSample[i] != res.Eta.PerSample[i] || r2.LabelFIL.PerSample[i] != res.LabelFIL.PerSample[i] {
			t.Fatalf("sample %d: resumed η² %g / label %g, uninterrupted %g / %g", i, r2.Eta.PerSample[i], r2.LabelFIL.PerSample[i], res.Eta.PerSample[i], res.LabelFIL.PerSample[i])
		}
	}
	// A config without η or label FIL has the same JSON (and hash) as before they
	// existed: both keys are omitted.
	b, _ := json.Marshal(DefaultConfig())
	if strings.Contains(string(b), "fil_eta") || strings.Contains(string(b), "fil_label") {
		t.Errorf("config JSON names η or label FIL when they are off: %s", b)
	}
}
