package train

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpfil/dpfil/models"
)

// TestAdamFirstStepClosedForm: at t = 1 without weight decay m̂ = g and v̂ = g², so
// bias-corrected Adam moves every coordinate by lr·g/(|g| + ε), whatever β1, β2.
func TestAdamFirstStepClosedForm(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct{ lr, b1, b2, eps float64 }{
		{1e-3, 0.9, 0.999, 1e-8}, {0.5, 0, 0.5, 1e-3}, {0.01, 0.5, 0, 1}, {2, 0.99, 0.9999, 1e-12},
	} {
		p := 64
		w0, g := make([]float64, p), make([]float64, p)
		for i := range g {
			w0[i] = rng.NormFloat64()
			g[i] = rng.NormFloat64() * math.Pow(10, float64(i%9-4)) // |g| from 1e-4 to 1e4 around ε
		}
		g[0] = 0
		w := append([]float64(nil), w0...)
		o := newAdam(tc.lr, tc.b1, tc.b2, tc.eps, 0, p)
		o.step(w, g)
		for i := range w {
			want := tc.lr * g[i] / (math.Abs(g[i]) + tc.eps)
			if got := w0[i] - w[i]; math.Abs(got-want) > 1e-14*math.Abs(want)+1e-15*math.Abs(w0[i]) {
				t.Fatalf("%+v coordinate %d (g = %g): moved %v, want lr·g/(|g|+ε) = %v", tc, i, g[i], got, want)
			}
		}
	}
}

// refAdam is Adam written out per coordinate in the textbook form (Kingma & Ba
// 2015, Algorithm 1, with L2 decay added to the gradient): m̂ = m/(1−β1^t),
// v̂ = v/(1−β2^t), w ← w − lr·m̂/(√v̂ + ε), the powers by repeated products.
func refAdam(w, m, v float64, g, lr, b1, b2, eps, wd float64, b1t, b2t float64) (float64, float64, float64) {
	g += wd * w
	m = b1*m + (1-b1)*g
	v = b2*v + (1-b2)*g*g
	mh, vh := m/(1-b1t), v/(1-b2t)
	return w - lr*mh/(math.Sqrt(vh)+eps), m, v
}

// TestAdamMatchesReference runs several steps of the optimizer against refAdam.
func TestAdamMatchesReference(t *testing.T) {
	for _, tc := range []struct {
		name                string
		lr, b1, b2, eps, wd float64
		steps               int
	}{
		{"torch-defaults", 1e-3, 0.9, 0.999, 1e-8, 0, 30},
		{"weight-decay", 1e-2, 0.9, 0.999, 1e-8, 0.1, 30},
		{"beta1-zero", 0.05, 0, 0.99, 1e-6, 0.01, 20},
		{"large-eps", 0.1, 0.8, 0.9, 0.5, 1e-3, 25},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, 4))
			p := 17
			w := make([]float64, p)
			for i := range w {
				w[i] = rng.NormFloat64()
			}
			rw, rm, rv := append([]float64(nil), w...), make([]float64, p), make([]float64, p)
			o := newAdam(tc.lr, tc.b1, tc.b2, tc.eps, tc.wd, p)
			b1t, b2t := 1.0, 1.0
			g := make([]float64, p)
			for s := 0; s < tc.steps; s++ {
				for i := range g {
					g[i] = rng.NormFloat64() * (1 + float64(i))
				}
				o.step(w, g)
				b1t, b2t = b1t*tc.b1, b2t*tc.b2
				for i := range rw {
					rw[i], rm[i], rv[i] = refAdam(rw[i], rm[i], rv[i], g[i], tc.lr, tc.b1, tc.b2, tc.eps, tc.wd, b1t, b2t)
				}
				for i := range w {
					if math.Abs(w[i]-rw[i]) > 1e-12*(1+math.Abs(rw[i])) || math.Abs(o.m[i]-rm[i]) > 1e-12*(1+math.Abs(rm[i])) || math.Abs(o.v[i]-rv[i]) > 1e-12*rv[i] {
						t.Fatalf("step %d coordinate %d: w %v m %v v %v, reference %v %v %v", s+1, i, w[i], o.m[i], o.v[i], rw[i], rm[i], rv[i])
					}
				}
			}
			if o.t != tc.steps {
				t.Fatalf("update count %d, want %d", o.t, tc.steps)
			}
		})
	}
}

// TestOptimizerStateRoundTrip: Adam's state saved into a repeat state and restored
// into a fresh optimizer continues bit-identically; a momentum SGD state does not
// restore into Adam and vice versa.
func TestOptimizerStateRoundTrip(t *testing.T) {
	cfg := DefaultConfig()
	cfg.UseAdam()
	cfg.WeightDecay = 0.01
	p := 9
	grads := make([][]float64, 8)
	rng := rand.New(rand.NewPCG(5, 6))
	for s := range grads {
		grads[s] = make([]float64, p)
		for i := range grads[s] {
			grads[s][i] = rng.NormFloat64()
		}
	}
	run := func(split int) []float64 {
		w := make([]float64, p)
		o := newOptimizer(cfg, 0.01, cfg.WeightDecay, p)
		for s, g := range grads {
			if s == split {
				st := &repeatState{Step: s}
				o.save(st)
				// through gob, as a checkpoint
				b, err := encodeCheckpoint(&checkpoint{Config: cfg, ConfigHash: cfg.Hash(), Cur: st})
				if err != nil {
					t.Fatal(err)
				}
				ck, err := decodeCheckpoint(b)
				if err != nil {
					t.Fatal(err)
				}
				o = newOptimizer(cfg, 0.01, cfg.WeightDecay, p)
				if err := o.restore(ck.Cur); err != nil {
					t.Fatal(err)
				}
			}
			o.step(w, g)
		}
		return w
	}
	want := run(-1)
	for _, split := range []int{1, 4, 7} {
		if got := run(split); !bitEqual(got, want) {
			t.Fatalf("restored at step %d: %v, uninterrupted %v", split, got, want)
		}
	}
	sgdCfg := DefaultConfig()
	sgdState, adamState := &repeatState{Step: 3}, &repeatState{Step: 3}
	newOptimizer(sgdCfg, 0.1, 0, p).save(sgdState)
	a := newOptimizer(cfg, 0.1, 0, p)
	for range 3 {
		a.step(make([]float64, p), grads[0])
	}
	a.save(adamState)
	if err := newOptimizer(cfg, 0.1, 0, p).restore(sgdState); err == nil {
		t.Error("a momentum SGD state restored into Adam")
	}
	if err := newOptimizer(sgdCfg, 0.1, 0, p).restore(adamState); err == nil {
		t.Error("an Adam state restored into momentum SGD")
	}
	adamState.Step = 4
	if err := newOptimizer(cfg, 0.1, 0, p).restore(adamState); err == nil {
		t.Error("an Adam state whose update count is not its step restored")
	}
}

func bitEqual(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}

// TestOptimizerValidation lists the optimizer settings Validate refuses.
func TestOptimizerValidation(t *testing.T) {
	adam := func(f func(*Config)) func(*Config) {
		return func(c *Config) { c.UseAdam(); f(c) }
	}
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		want string // "" = valid
	}{
		{"default-sgd", func(*Config) {}, ""},
		{"explicit-sgd", func(c *Config) { c.Optimizer = OptimizerSGD }, ""},
		{"adam-defaults", adam(func(*Config) {}), ""},
		{"adam-beta1-zero", adam(func(c *Config) { c.AdamBeta1 = 0 }), ""},
		{"adam-momentum-zero", adam(func(c *Config) { c.Momentum = 0 }), ""},
		{"unknown", func(c *Config) { c.Optimizer = "adamw" }, `optimizer = "adamw"`},
		{"upper-case", func(c *Config) { c.Optimizer = "Adam" }, `optimizer = "Adam"`},
		{"beta1-one", adam(func(c *Config) { c.AdamBeta1 = 1 }), "adam_beta1 = 1 must be in [0, 1)"},
		{"beta1-negative", adam(func(c *Config) { c.AdamBeta1 = -0.1 }), "adam_beta1"},
		{"beta2-one", adam(func(c *Config) { c.AdamBeta2 = 1 }), "adam_beta2 = 1 must be in [0, 1)"},
		{"beta2-nan", adam(func(c *Config) { c.AdamBeta2 = math.NaN() }), "adam_beta2"},
		{"eps-zero", adam(func(c *Config) { c.AdamEps = 0 }), "adam_eps = 0 must be positive"},
		{"eps-negative", adam(func(c *Config) { c.AdamEps = -1e-8 }), "adam_eps"},
		{"eps-inf", adam(func(c *Config) { c.AdamEps = math.Inf(1) }), "adam_eps"},
		{"eps-nan", adam(func(c *Config) { c.AdamEps = math.NaN() }), "adam_eps"},
		{"adam-unset-params", func(c *Config) { c.Optimizer, c.Momentum = OptimizerAdam, 0 }, "adam_eps = 0"},
		{"adam-with-momentum", adam(func(c *Config) { c.Momentum = 0.5 }), "momentum = 0.5 is momentum SGD's"},
		{"sgd-with-adam-params", func(c *Config) { c.AdamBeta1 = 0.9 }, "are Adam's"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.mod(&c)
			err := c.Validate()
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("Validate() = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestOptimizerConfigCompat: configs without the optimizer keep their JSON and hash
// (no new keys), decode as momentum SGD, and "sgd" hashes as "".
func TestOptimizerConfigCompat(t *testing.T) {
	c := DefaultConfig()
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"optimizer", "adam_"} {
		if bytes.Contains(b, []byte(k)) {
			t.Fatalf("default config JSON holds %q: %s", k, b)
		}
	}
	var old Config
	if err := json.Unmarshal(b, &old); err != nil || old.IsAdam() || old.Optimizer != "" || old.Validate() != nil {
		t.Fatalf("old config decodes as %+v, %v", old, err)
	}
	s := c
	s.Optimizer = OptimizerSGD
	if s.Hash() != c.Hash() {
		t.Error(`optimizer "sgd" hashes differently from the default ""`)
	}
	a := c
	a.UseAdam()
	if a.Hash() == c.Hash() {
		t.Error("adam hashes as sgd")
	}
}

// TestAdamRun trains the linear model privately with Adam: it learns, its ε is the
// SGD run's (the optimizer is post-processing), its FIL is finite, the report names
// the optimizer, and a killed and resumed run is bit-identical to an uninterrupted one.
func TestAdamRun(t *testing.T) {
	split := imageToyData(200, 100, 7)
	cfg := DefaultConfig()
	cfg.Model, cfg.Dataset, cfg.Batch, cfg.Steps, cfg.FILCoords, cfg.Sigma, cfg.Clip = "linear", "toy", 50, 60, 2, 0.5, 1
	cfg.Sampling, cfg.EvalEvery, cfg.WeightDecay = SamplingPoisson, 20, 1e-3
	sgd := cfg
	cfg.UseAdam()
	cfg.LR = 0.01
	full := t.TempDir()
	res, err := Run(context.Background(), cfg, Options{Out: full, Data: split})
	if err != nil {
		t.Fatal(err)
	}
	// Measured: test accuracy 0.80, train loss 0.58 (the same run with momentum SGD at
	// lr 0.1: 0.33, 1.83).
	if !(res.TestAccuracy > 0.5) || !(res.TrainLoss < 1.5) {
		t.Fatalf("adam run: test accuracy %v, train loss %v (chance 0.1, ln 10 = 2.30)", res.TestAccuracy, res.TrainLoss)
	}
	if !(res.DFILMax > 0) || math.IsInf(res.DFILMax, 0) || !(res.DFILMedian > 0) {
		t.Fatalf("adam run: dFIL max %v median %v", res.DFILMax, res.DFILMedian)
	}
	sres, err := Run(context.Background(), sgd, Options{Data: split})
	if err != nil {
		t.Fatal(err)
	}
	if res.Epsilon != sres.Epsilon || res.Sigma != sres.Sigma || res.Kappa != sres.Kappa {
		t.Fatalf("adam ε %v σ %v κ %v, sgd ε %v σ %v κ %v: the optimizer must not change the accounting", res.Epsilon, res.Sigma, res.Kappa, sres.Epsilon, sres.Sigma, sres.Kappa)
	}
	pa, _ := json.Marshal(res.Privacy)
	ps, _ := json.Marshal(sres.Privacy)
	if !bytes.Equal(pa, ps) {
		t.Fatalf("privacy reports differ:\n%s\n%s", pa, ps)
	}
	t.Logf("adam: test accuracy %v, train loss %v; sgd (lr 0.1, momentum 0.5): %v, %v; ε %v", res.TestAccuracy, res.TrainLoss, sres.TestAccuracy, sres.TrainLoss, res.Epsilon)
	if sres.TestAccuracy == res.TestAccuracy && sres.TrainLoss == res.TrainLoss {
		t.Fatal("the adam run equals the sgd run")
	}
	var text strings.Builder
	res.WriteText(&text)
	if !strings.Contains(text.String(), "adam β1 0.9 β2 0.999 ε 1e-08") {
		t.Fatalf("report does not name the optimizer:\n%s", text.String())
	}
	killed := runKilledAt(t, cfg, Options{Data: split, CheckpointEvery: 10}, 25)
	ck, err := loadCheckpoint(killed)
	if err != nil || ck == nil || ck.Cur == nil || ck.Cur.AdamSteps != ck.Cur.Step || len(ck.Cur.AdamV) != res.NumParams {
		t.Fatalf("checkpoint of the killed run: %+v, %v", ck, err)
	}
	if _, err := Run(context.Background(), sgd, Options{Out: killed, Data: split, Resume: true}); err == nil || !strings.Contains(err.Error(), "different config") {
		t.Fatalf("resuming an adam checkpoint as sgd: %v", err)
	}
	if _, err := Run(context.Background(), cfg, Options{Out: killed, Data: split, Resume: true}); err != nil {
		t.Fatal(err)
	}
	if a, b := readComparable(t, full), readComparable(t, killed); !bytes.Equal(a, b) {
		t.Fatalf("resumed adam run differs:\n%s\nvs\n%s", a, b)
	}
	for _, f := range []string{DFILFile, ParamsFile} {
		x, _ := os.ReadFile(filepath.Join(full, f))
		y, _ := os.ReadFile(filepath.Join(killed, f))
		if len(x) == 0 || !bytes.Equal(x, y) {
			t.Fatalf("%s differs after resume", f)
		}
	}
}

// TestPretrainUsesRunOptimizer: one full-batch pretraining step under adam moves
// each parameter by lr·g/(|g| + ε) (the closed form of Adam's first step), g the
// mean gradient of the public data plus the weight decay's λw; under sgd by lr·g.
func TestPretrainUsesRunOptimizer(t *testing.T) {
	split := imageToyData(30, 5, 2)
	arch, err := models.ArchByName("linear")
	if err != nil {
		t.Fatal(err)
	}
	m, err := models.NewCPUModel(arch)
	if err != nil {
		t.Fatal(err)
	}
	p := m.NumParams()
	init := m.Init(3)
	p32 := append([]float32(nil), init...)
	sum, losses := make([]float32, p), make([]float64, split.Train.N)
	noClip := models.Clip{Mode: models.ClipHard, C: math.MaxFloat32}
	if err := m.ClippedGradSum(p32, split.Train.Images, split.Train.Labels, noClip, sum, losses); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		adam bool
		wd   float64
	}{{false, 0}, {true, 0}, {false, 0.3}, {true, 0.3}} {
		adam := tc.adam
		cfg := DefaultConfig()
		if adam {
			cfg.UseAdam()
		}
		tu := &tuning{public: split.Train, base: m, steps: 1, lr: 0.05, wd: tc.wd, batch: split.Train.N, p: p, runCfg: cfg}
		params := make([]float64, p)
		for i, v := range init {
			params[i] = float64(v)
		}
		if err := tu.pretrain(params, 11); err != nil {
			t.Fatal(err)
		}
		for i := range params {
			g := float64(sum[i])/float64(split.Train.N) + tc.wd*float64(init[i]) // the weight decay's L2 term
			want := tu.lr * g
			if adam {
				want = tu.lr * g / (math.Abs(g) + cfg.AdamEps)
			}
			if got := float64(init[i]) - params[i]; math.Abs(got-want) > 1e-12*math.Abs(want)+1e-15 {
				t.Fatalf("adam %v, weight decay %v: parameter %d moved %v, want %v", adam, tc.wd, i, got, want)
			}
		}
	}
}

// fakeResident is a device model that could keep the steps resident: it records
// whether the data was uploaded (the rest of the device interface is not reached).
type fakeResident struct {
	models.Model
	loaded bool
}

func (f *fakeResident) Resident() bool                        { return true }
func (f *fakeResident) DeviceCounts() models.DeviceCounts     { return models.DeviceCounts{} }
func (f *fakeResident) ResidentSetState(w, v []float64) error { return nil }
func (f *fakeResident) ResidentState(w, v []float64) error    { return nil }
func (f *fakeResident) ResidentParams(dst []float32) error    { return nil }
func (f *fakeResident) ResidentLoad(train []float32, nTrain int, test []float32, nTest int) error {
	f.loaded = true
	return nil
}
func (f *fakeResident) ResidentGradSum(idx, y []int, clip models.Clip, losses []float64) error {
	return nil
}
func (f *fakeResident) ResidentFIL(idx, y []int, clip models.Clip, coords [][]int, out []float64) error {
	return nil
}
func (f *fakeResident) ResidentFILDrawn(idx, y []int, clip models.Clip, k, d int, pcg []byte, out []float64) (bool, error) {
	return false, nil
}
func (f *fakeResident) ResidentCoordsUsed() (uint64, error) { return 0, nil }
func (f *fakeResident) ResidentUpdate(key uint64, step int, std, denom, lr, mom, wd float64) (int, error) {
	return 0, nil
}
func (f *fakeResident) ResidentReleased(dst []float32) error { return nil }
func (f *fakeResident) ResidentLogits(test bool, s0, n int, out []float32) error {
	return nil
}

// TestAdamStepsOnHost: the device-resident step updates with momentum SGD, so an
// adam run on a device keeps its steps on the host (and says why); an sgd run
// stays resident.
func TestAdamStepsOnHost(t *testing.T) {
	split := imageToyData(10, 2, 1)
	var _ residentModel = (*fakeResident)(nil)
	for _, adam := range []bool{false, true} {
		cfg := DefaultConfig()
		if adam {
			cfg.UseAdam()
		}
		f := &fakeResident{}
		s := &setup{cfg: cfg, model: f, train: split.Train, test: split.Test}
		if err := s.prepareResident(func(string, ...any) {}); err != nil {
			t.Fatal(err)
		}
		if adam != (s.res == nil) || adam == f.loaded || adam != strings.Contains(s.tally.report.NotResident, "adam") {
			t.Fatalf("adam %v: resident %v, loaded %v, not resident because %q", adam, s.res != nil, f.loaded, s.tally.report.NotResident)
		}
	}
}
