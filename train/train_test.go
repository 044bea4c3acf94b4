package train

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dpfil/dpfil/accounting"
	"github.com/dpfil/dpfil/data"
	"github.com/dpfil/dpfil/internal/dirlock"
	"github.com/dpfil/dpfil/internal/philox"
	"github.com/dpfil/dpfil/models"
	"github.com/dpfil/dpfil/models/oracle"
	dfil "github.com/dpfil/dpfil/train/fil"
)

// batchesOf replays the sampler of repeat r of cfg on n samples.
func batchesOf(t *testing.T, cfg Config, r, n, steps int) [][]int {
	t.Helper()
	s, err := newSampler(cfg.Sampling, n, cfg.Batch, newRNG(newStream(cfg.Seed, r, streamSampler)))
	if err != nil {
		t.Fatal(err)
	}
	out := make([][]int, steps)
	for i := range out {
		out[i] = slices.Clone(s.next())
	}
	return out
}

func tinyConfig() Config {
	c := DefaultConfig()
	c.Model = "linear" // replaced by the test model through Options.Model
	c.Dataset = "toy"
	c.FILCoords = 0
	return c
}

// TestStepMatchesHandComputed pins the DP-SGD glue — batch, clipping, noise N(0,σ²C²I)
// on the sum, division by the nominal B, momentum and weight decay — against a step
// computed by hand from the test model's analytic gradients.
func TestStepMatchesHandComputed(t *testing.T) {
	cases := []struct {
		name     string
		sampling string
		clipMode string
		batch    int
		sigma    float64
		clip     float64
		wd       float64
		mom      float64
		steps    int
	}{
		{"shuffle-hard", SamplingShuffle, ClipModeHard, 3, 0.7, 0.5, 0, 0.5, 4},
		{"shuffle-smooth-wd", SamplingShuffle, ClipModeSmooth, 4, 1.3, 0.8, 0.01, 0.9, 5},
		{"poisson-smooth", SamplingPoisson, ClipModeSmooth, 2, 0.5, 2, 0.001, 0.5, 6},
		{"no-noise", SamplingShuffle, ClipModeHard, 5, 0, 0.3, 0, 0, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := &softmaxModel{d: 4, k: 3}
			split := toyData(9, 6, 4, 3, 1)
			cfg := tinyConfig()
			cfg.Sampling, cfg.ClipMode, cfg.Batch, cfg.Sigma, cfg.Clip = tc.sampling, tc.clipMode, tc.batch, tc.sigma, tc.clip
			cfg.WeightDecay, cfg.Momentum, cfg.Steps, cfg.LR, cfg.Seed = tc.wd, tc.mom, tc.steps, 0.3, 42
			res, err := Run(context.Background(), cfg, Options{Model: m, Data: split})
			if err != nil {
				t.Fatal(err)
			}
			// By hand.
			clip, _ := cfg.clip()
			p32 := m.Init(deriveSeed(cfg.Seed, 0, streamInit))
			w := make([]float64, len(p32))
			for i, v := range p32 {
				w[i] = float64(v)
			}
			v := make([]float64, len(w))
			key := noiseKey(cfg.Seed, 0) // coordinate j of step t: philox.Normal(key, t, j)
			sawEmpty := false
			for step, idx := range batchesOf(t, cfg, 0, split.Train.N, cfg.Steps) {
				sawEmpty = sawEmpty || len(idx) == 0
				sum := make([]float64, len(w))
				for _, i := range idx {
					g, _ := m.clipped(p32, m.sample(split.Train.Images, i), split.Train.Labels[i], clip)
					for j := range g {
						sum[j] += g[j]
					}
				}
				for j := range w {
					gbar := sum[j] / float64(cfg.Batch)
					if cfg.Sigma > 0 {
						gbar += cfg.Sigma * cfg.Clip * philox.Normal(key, uint64(step), uint64(j)) / float64(cfg.Batch)
					}
					gbar += cfg.WeightDecay * w[j]
					v[j] = cfg.Momentum*v[j] + gbar
					w[j] -= cfg.LR * v[j]
				}
				for j := range w {
					p32[j] = float32(w[j])
				}
			}
			got := res.Repeats[0].Params
			for j := range w {
				if math.Abs(float64(got[j])-w[j]) > 1e-5*(1+math.Abs(w[j])) {
					t.Fatalf("param %d: trainer %v, by hand %v", j, got[j], w[j])
				}
			}
			if tc.sampling == SamplingPoisson && !sawEmpty {
				t.Logf("no empty Poisson batch in this case")
			}
		})
	}
}

// TestNoNoiseHugeClipIsPlainSGD: σ = 0 and C → ∞ (hard clipping) is plain momentum
// SGD on the mean loss, checked against the Gorgonia oracle's batch gradient.
func TestNoNoiseHugeClipIsPlainSGD(t *testing.T) {
	for _, model := range []string{"linear", "mlp"} {
		t.Run(model, func(t *testing.T) {
			split := imageToyData(40, 20, 3)
			cfg := DefaultConfig()
			cfg.Model, cfg.Dataset, cfg.Sigma, cfg.Clip, cfg.ClipMode = model, "toy", 0, 1e9, ClipModeHard
			cfg.Sampling = SamplingShuffle // fixed-size batches: the oracle's batch is 8
			cfg.FILCoords, cfg.Batch, cfg.Steps, cfg.LR, cfg.Momentum, cfg.Seed = 0, 8, 6, 0.2, 0.5, 7
			res, err := Run(context.Background(), cfg, Options{Data: split})
			if err != nil {
				t.Fatal(err)
			}
			arch, _ := models.ArchByName(model)
			eng, err := models.NewCPUModel(arch)
			if err != nil {
				t.Fatal(err)
			}
			gr, err := oracle.Build(arch, cfg.Batch)
			if err != nil {
				t.Fatal(err)
			}
			p32 := eng.Init(deriveSeed(cfg.Seed, 0, streamInit))
			init := slices.Clone(p32)
			w := make([]float64, len(p32))
			for i, v := range p32 {
				w[i] = float64(v)
			}
			vel := make([]float64, len(w))
			d := split.Train.Dim()
			for _, idx := range batchesOf(t, cfg, 0, split.Train.N, cfg.Steps) {
				x := make([]float64, 0, len(idx)*d)
				y := make([]int, 0, len(idx))
				for _, i := range idx {
					for _, v := range split.Train.Image(i) {
						x = append(x, float64(v))
					}
					y = append(y, split.Train.Labels[i])
				}
				g, _, err := gr.BatchGrad(w, x, y)
				if err != nil {
					t.Fatal(err)
				}
				for j := range w {
					vel[j] = cfg.Momentum*vel[j] + g[j]/float64(cfg.Batch)
					w[j] -= cfg.LR * vel[j]
				}
			}
			// float32 engine vs float64 oracle: the error must be tiny compared to how
			// far the parameters moved (a wrong divisor, momentum or step moves them O(1)
			// differently).
			got := res.Repeats[0].Params
			maxErr, moved := 0.0, 0.0
			for j := range w {
				maxErr = math.Max(maxErr, math.Abs(float64(got[j])-w[j]))
				moved = math.Max(moved, math.Abs(w[j]-float64(init[j])))
			}
			if !(maxErr <= 1e-3*moved) {
				t.Fatalf("trainer vs oracle momentum SGD: max abs error %g, parameters moved up to %g", maxErr, moved)
			}
			t.Logf("max abs error %.3g, moved %.3g", maxErr, moved)
		})
	}
}

// TestFILMatchesHandFedAccountant replays the engine's per-step FILSqNorms values into
// a fresh accountant and checks dFIL, κ, the coordinate draws (replayed from the
// coordinate stream: k per member, independent per sample and draw), the 1/rate
// weighting of fil_rate, and that samples never drawn have dFIL 0.
func TestFILMatchesHandFedAccountant(t *testing.T) {
	for _, tc := range []struct {
		sampling string
		rate     float64
	}{{SamplingShuffle, 0}, {SamplingPoisson, 0}, {SamplingShuffle, 0.5}} {
		t.Run(fmt.Sprintf("%s-rate%v", tc.sampling, tc.rate), func(t *testing.T) {
			m := &softmaxModel{d: 16, k: 3, record: true}
			split := toyData(60, 10, 16, 3, 5)
			cfg := tinyConfig()
			cfg.Sampling, cfg.Batch, cfg.Steps, cfg.Sigma, cfg.Clip = tc.sampling, 4, 5, 0.8, 1.5
			cfg.FILCoords, cfg.Seed, cfg.FILRate = 6, 11, tc.rate
			res, err := Run(context.Background(), cfg, Options{Model: m, Data: split})
			if err != nil {
				t.Fatal(err)
			}
			n, d := split.Train.N, 16
			q := float64(cfg.Batch) / float64(n)
			c := models.Clip{Mode: models.ClipSmooth, C: cfg.Clip}.Constant()
			kappa, err := accounting.Kappa(accounting.KappaParams{Q: q, Sigma: cfg.Sigma, ClipConstant: c, DeltaF: 1 / float64(cfg.Steps*n)})
			if err != nil {
				t.Fatal(err)
			}
			if tc.sampling == SamplingShuffle {
				kappa = 1 // shuffled batches: no amplification claimed
			}
			if res.Kappa != kappa {
				t.Fatalf("kappa %v, want %v", res.Kappa, kappa)
			}
			rate := tc.rate
			if rate == 0 {
				rate = 1
			}
			fil, _ := accounting.NewFIL(n, d, kappa)
			coordRNG := newRNG(newStream(cfg.Seed, 0, streamCoords)).r
			drawn := make([]bool, n)
			call := 0
			for _, batch := range batchesOf(t, cfg, 0, n, cfg.Steps) {
				idx := batch
				if rate < 1 {
					idx = nil
					for _, i := range batch {
						if coordRNG.Float64() < rate {
							idx = append(idx, i)
						}
					}
				}
				if len(idx) == 0 {
					continue
				}
				fc := m.filCall[call]
				call++
				tr := make([]float64, len(idx))
				for j, i := range idx {
					drawn[i] = true
					if fc.y[j] != split.Train.Labels[i] {
						t.Fatalf("FIL call %d sample %d: label %d, want %d", call, j, fc.y[j], split.Train.Labels[i])
					}
					for r := 0; r < cfg.FILCoords; r++ {
						if want := coordRNG.IntN(d); fc.coords[j][r] != want {
							t.Fatalf("FIL call %d sample %d draw %d: coordinate %d, want %d", call, j, r, fc.coords[j][r], want)
						}
					}
					tr[j] = float64(d) / float64(cfg.FILCoords) * fc.out[j] / (cfg.Sigma * cfg.Sigma * cfg.Clip * cfg.Clip) / rate
				}
				if err := fil.AddStep(idx, tr); err != nil {
					t.Fatal(err)
				}
			}
			if call != len(m.filCall) {
				t.Fatalf("%d FIL calls, %d replayed", len(m.filCall), call)
			}
			want := fil.DFIL()
			for i := range want {
				if math.Abs(res.DFIL[i]-want[i]) > 1e-12*math.Abs(want[i]) {
					t.Fatalf("sample %d: dFIL %v, hand-fed accountant %v", i, res.DFIL[i], want[i])
				}
				if !drawn[i] && res.DFIL[i] != 0 {
					t.Fatalf("sample %d never drawn but dFIL %v", i, res.DFIL[i])
				}
				if drawn[i] && !(res.DFIL[i] > 0) {
					t.Fatalf("sample %d drawn but dFIL %v", i, res.DFIL[i])
				}
			}
			// the same 1e-12 tolerance as per sample: trainer and test scale the
			// squared norms in a different order of operations
			sum := dfil.Summarize(want)
			if math.Abs(res.DFILMax-sum.Max) > 1e-12*sum.Max || res.MSEBoundFILMax != 1/res.DFILMax {
				t.Fatalf("dfil max %v / bound %v, want %v / %v", res.DFILMax, res.MSEBoundFILMax, sum.Max, 1/sum.Max)
			}
		})
	}
}

// TestFILExactEqualsFrobenius: with fil_exact the trace is ‖J‖_F²/(σC)² exactly,
// checked for one step against the test model's Jacobian summed over all coordinates.
func TestFILExactEqualsFrobenius(t *testing.T) {
	m := &softmaxModel{d: 5, k: 2}
	split := toyData(6, 4, 5, 2, 2)
	cfg := tinyConfig()
	cfg.Batch, cfg.Steps, cfg.FILExact, cfg.Sigma, cfg.Seed = 6, 1, true, 2, 3
	res, err := Run(context.Background(), cfg, Options{Model: m, Data: split})
	if err != nil {
		t.Fatal(err)
	}
	p := m.Init(deriveSeed(cfg.Seed, 0, streamInit))
	clip, _ := cfg.clip()
	all := []int{0, 1, 2, 3, 4}
	for i := 0; i < 6; i++ {
		out := []float64{0}
		if err := m.FILSqNorms(p, split.Train.Image(i), split.Train.Labels[i:i+1], clip, [][]int{all}, out); err != nil {
			t.Fatal(err)
		}
		want := res.Kappa * out[0] / (cfg.Sigma * cfg.Sigma * cfg.Clip * cfg.Clip) / 5
		if math.Abs(res.DFIL[i]-want) > 1e-12*want {
			t.Fatalf("sample %d: dFIL %v, want %v", i, res.DFIL[i], want)
		}
	}
}

// TestResumeIsBitIdentical kills a run mid-way (in the second repeat), resumes it and
// compares result.json (minus timings), dfil.npy and the parameter files with an
// uninterrupted run.
func TestResumeIsBitIdentical(t *testing.T) {
	for _, tc := range [][2]string{{"mlp", SamplingUniform}, {"mlp", SamplingShuffle}, {"mnist-cnn", SamplingPoisson}} {
		t.Run(tc[0]+"-"+tc[1], func(t *testing.T) { testResume(t, tc[0], tc[1]) })
	}
}

func testResume(t *testing.T, model, sampling string) {
	split := imageToyData(60, 20, 4)
	cfg := DefaultConfig()
	cfg.Model, cfg.Dataset, cfg.Batch, cfg.Steps, cfg.Repeats, cfg.FILCoords, cfg.Sigma = model, "toy", 10, 12, 2, 3, 0.9
	cfg.Sampling, cfg.EvalEvery = sampling, 5 // shuffle: 6 batches per epoch, killed mid-epoch
	full := t.TempDir()
	if _, err := Run(context.Background(), cfg, Options{Out: full, Data: split}); err != nil {
		t.Fatal(err)
	}
	killed := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	_, err := Run(ctx, cfg, Options{Out: killed, Data: split, CheckpointEvery: 4, Progress: func(e Event) {
		if e.Repeat == 1 && e.Step == 7 {
			cancel()
		}
	}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("killed run returned %v, want context.Canceled", err)
	}
	if _, err := os.Stat(filepath.Join(killed, ResultFile)); err == nil {
		t.Fatal("killed run wrote result.json")
	}
	ck, err := loadCheckpoint(killed)
	if err != nil || ck == nil || ck.Repeat != 1 || ck.Cur.Step != 7 {
		t.Fatalf("checkpoint after kill: %+v, %v", ck, err)
	}
	if _, err := Run(context.Background(), cfg, Options{Out: killed, Data: split}); err == nil {
		t.Fatal("re-running into a directory with a checkpoint without Resume must fail")
	}
	if _, err := Run(context.Background(), cfg, Options{Out: killed, Data: split, Resume: true}); err != nil {
		t.Fatal(err)
	}
	a, b := readComparable(t, full), readComparable(t, killed)
	if !bytes.Equal(a, b) {
		t.Fatalf("resumed result differs:\n%s\nvs\n%s", a, b)
	}
	for _, f := range []string{DFILFile, ParamsFile, "params_r1.npy"} {
		x, _ := os.ReadFile(filepath.Join(full, f))
		y, _ := os.ReadFile(filepath.Join(killed, f))
		if len(x) == 0 || !bytes.Equal(x, y) {
			t.Fatalf("%s differs after resume (%d vs %d bytes)", f, len(x), len(y))
		}
	}
	if _, err := os.Stat(filepath.Join(killed, CheckpointFile)); err == nil {
		t.Fatal("checkpoint left behind after the run finished")
	}
	// Resuming a finished run returns its result.
	r, err := Run(context.Background(), cfg, Options{Out: killed, Data: split, Resume: true})
	if err != nil || r.TestAccuracy != mustRead(t, full).TestAccuracy {
		t.Fatalf("resume of a finished run: %v", err)
	}
}

func mustRead(t *testing.T, dir string) *Result {
	t.Helper()
	r, err := ReadResult(dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// readComparable is result.json with the timing fields zeroed.
func readComparable(t *testing.T, dir string) []byte {
	t.Helper()
	r := mustRead(t, dir)
	r.WallSeconds, r.StepSeconds, r.SamplesPerSec, r.GitCommit = 0, 0, 0, "" // timings; commits may land in between
	b, err := json.MarshalIndent(r, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRunErrors(t *testing.T) {
	split := imageToyData(20, 5, 1)
	base := DefaultConfig()
	base.Model, base.Dataset, base.Batch, base.Steps, base.FILCoords = "linear", "toy", 5, 2, 0
	cases := []struct {
		name string
		mod  func(*Config)
		data *data.Split
	}{
		{"batch>N", func(c *Config) { c.Batch = 21 }, split},
		{"subset>N", func(c *Config) { c.TrainSubset = 50 }, split},
		{"cuda", func(c *Config) { c.Device = "cuda" }, split},
		{"wrong-dim", func(c *Config) {}, toyData(20, 5, 10, 10, 1)},
		{"too-many-classes", func(c *Config) { c.Model = "linear" }, func() *data.Split {
			s := imageToyData(20, 5, 1)
			s.Train.Classes = 11
			return s
		}()},
		{"missing-dataset", func(c *Config) { c.Dataset = "no-such-dataset" }, nil},
		{"sigma0-with-fil", func(c *Config) { c.Sigma, c.FILCoords = 0, 5 }, split},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base
			tc.mod(&cfg)
			if _, err := Run(context.Background(), cfg, Options{Data: tc.data}); err == nil {
				t.Fatal("want an error")
			} else {
				t.Log(err)
			}
		})
	}
}

// TestSigmaZeroNoFIL: without noise ε is infinite, written as null, and the RDP bound 0.
func TestSigmaZeroNoFIL(t *testing.T) {
	split := imageToyData(20, 5, 1)
	cfg := DefaultConfig()
	cfg.Model, cfg.Dataset, cfg.Batch, cfg.Steps, cfg.FILCoords, cfg.Sigma = "linear", "toy", 5, 3, 0, 0
	dir := t.TempDir()
	res, err := Run(context.Background(), cfg, Options{Data: split, Out: dir})
	if err != nil {
		t.Fatal(err)
	}
	if !math.IsInf(res.Epsilon, 1) || res.MSEBoundRDP != 0 || !math.IsInf(res.MSEBoundFILMax, 1) {
		t.Fatalf("eps %v, rdp bound %v, fil bound %v", res.Epsilon, res.MSEBoundRDP, res.MSEBoundFILMax)
	}
	raw, _ := os.ReadFile(filepath.Join(dir, ResultFile))
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if m["epsilon"] != nil || m["mse_bound_fil_max"] != nil {
		t.Fatalf("infinite values must be null in JSON: %v %v", m["epsilon"], m["mse_bound_fil_max"])
	}
	back := mustRead(t, dir)
	if !math.IsInf(back.Epsilon, 1) {
		t.Fatalf("null epsilon read back as %v", back.Epsilon)
	}
}

// TestAccountingFields checks ε, ε₂ and the RDP bound of every sampling against the
// accountants called directly with noise multiplier σ/c.
func TestAccountingFields(t *testing.T) {
	m := &softmaxModel{d: 4, k: 2}
	split := toyData(50, 5, 4, 2, 1)
	const T = 7
	for _, mode := range []string{ClipModeSmooth, ClipModeHard} {
		for _, sampling := range []string{SamplingPoisson, SamplingUniform, SamplingShuffle} {
			cfg := tinyConfig()
			cfg.ClipMode, cfg.Batch, cfg.Steps, cfg.Sigma, cfg.FILCoords, cfg.Sampling = mode, 5, T, 1.1, 2, sampling
			res, err := Run(context.Background(), cfg, Options{Model: m, Data: split})
			if err != nil {
				t.Fatal(err)
			}
			clip, _ := cfg.clip()
			c := clip.Constant()
			if mode == ClipModeHard && c != 1 || mode == ClipModeSmooth && !(c > 1.1 && c < 1.12) {
				t.Fatalf("%s: clip constant %v", mode, c)
			}
			nm, q := 1.1/c, 0.1
			p := res.Privacy
			if p == nil || res.NoiseMultiplierRDP != nm || p.Sampling != sampling {
				t.Fatalf("%s/%s: privacy %+v, noise multiplier %v", mode, sampling, p, res.NoiseMultiplierRDP)
			}
			var wantRDP, wantO2 float64
			wantAdj := "add-remove"
			switch sampling {
			case SamplingPoisson:
				wantRDP, _, _ = rdpEpsilon(q, nm, T)
				o2, _ := accounting.Order2StepRDP(accounting.ReplaceOne, accounting.SamplingPoisson, q, nm)
				wantO2 = T * o2
			case SamplingUniform:
				wantAdj = "replace-one"
				wantRDP, _, _ = rdpEpsilon(q, nm/2, T)
				o2, _ := accounting.Order2StepRDP(accounting.ReplaceOne, accounting.SamplingUniform, q, nm)
				wantO2 = T * o2
			case SamplingShuffle: // T = 7 < 10 batches per epoch: one epoch, one Gaussian release
				wantAdj = accounting.ZeroOut // batches fixed, the record's gradient removed
				wantRDP, _, _ = rdpEpsilon(1, nm, 1)
				wantO2 = 4 / (nm * nm)
				approx, _, _ := rdpEpsilon(q, nm, T)
				if p.EpsilonPoissonApprox == nil || *p.EpsilonPoissonApprox > approx || p.ShuffleAccounting != "no-amplification" {
					t.Errorf("%s/shuffle: Poisson approximation %v (RDP %v), accounting %q", mode, p.EpsilonPoissonApprox, approx, p.ShuffleAccounting)
				}
			}
			if p.EpsilonRDP == nil || math.Abs(*p.EpsilonRDP-wantRDP) > 1e-12*wantRDP || p.Adjacency != wantAdj {
				t.Errorf("%s/%s: RDP ε %v, want %v (adjacency %s, want %s)", mode, sampling, p.EpsilonRDP, wantRDP, p.Adjacency, wantAdj)
			}
			if res.Epsilon != p.Epsilon || p.Epsilon > *p.EpsilonRDP || p.EpsilonPLD != nil && p.Epsilon > *p.EpsilonPLD {
				t.Errorf("%s/%s: ε %v is not the tighter of RDP %v and PLD %v", mode, sampling, res.Epsilon, *p.EpsilonRDP, p.EpsilonPLD)
			}
			if math.Abs(res.RDPOrder2-wantO2) > 1e-12*wantO2 || res.MSEBoundRDP != accounting.MSEBoundRDP(res.RDPOrder2) || p.Theorem1.Adjacency != "replace-one" {
				t.Errorf("%s/%s: ε₂ %v, want %v", mode, sampling, res.RDPOrder2, wantO2)
			}
			paper, _ := accounting.SampledGaussianRDP(q, nm, 2)
			if math.Abs(p.Theorem1.PaperRDPOrder2-T*paper) > 1e-12 || !(p.Theorem1.PaperMSEBoundRDP > res.MSEBoundRDP) {
				t.Errorf("%s/%s: paper ε₂ %v, want %v; its bound %v must exceed the replace-one %v", mode, sampling, p.Theorem1.PaperRDPOrder2, T*paper, p.Theorem1.PaperMSEBoundRDP, res.MSEBoundRDP)
			}
		}
	}
}

// TestFILNormalizedInputs: w.r.t. the normalised inputs every ‖J e_i‖² is scaled by
// std_c² of its channel, so for cifar-cnn (same seed, same coordinates) the ratio of
// dFIL to the raw-pixel dFIL lies between the smallest and largest std²; the option
// needs an engine model.
func TestFILNormalizedInputs(t *testing.T) {
	split := toyData(4, 2, 3*32*32, 10, 8)
	for _, ds := range []*data.Dataset{split.Train, split.Test} {
		ds.C, ds.H, ds.W = 3, 32, 32
	}
	cfg := DefaultConfig()
	cfg.Model, cfg.Dataset, cfg.Batch, cfg.Steps, cfg.FILCoords = "cifar-cnn", "toy", 2, 1, 3
	raw, err := Run(context.Background(), cfg, Options{Data: split})
	if err != nil {
		t.Fatal(err)
	}
	cfg.FILNormalizedInputs = true
	norm, err := Run(context.Background(), cfg, Options{Data: split})
	if err != nil {
		t.Fatal(err)
	}
	if raw.FILInput != "raw_pixels" || norm.FILInput != "normalized_inputs" {
		t.Fatalf("fil_input %q / %q", raw.FILInput, norm.FILInput)
	}
	lo, hi := math.Inf(1), 0.0
	for _, s := range models.CIFAR10Std {
		lo, hi = math.Min(lo, s*s), math.Max(hi, s*s)
	}
	seen := 0
	for i := range raw.DFIL {
		if raw.DFIL[i] == 0 {
			continue
		}
		seen++
		if r := norm.DFIL[i] / raw.DFIL[i]; r < lo*(1-1e-4) || r > hi*(1+1e-4) {
			t.Fatalf("sample %d: normalised/raw dFIL = %v, want in [%v, %v]", i, r, lo, hi)
		}
	}
	if seen == 0 {
		t.Fatal("no sample with FIL")
	}
	tcfg := tinyConfig()
	tcfg.FILNormalizedInputs, tcfg.FILCoords = true, 2
	if _, err := Run(context.Background(), tcfg, Options{Model: &softmaxModel{d: 4, k: 2}, Data: toyData(6, 2, 4, 2, 1)}); err == nil {
		t.Fatal("a model without the engine's option must be refused")
	}
}

// TestRepeatsAverage: R repeats use different seeds (different batches and results),
// dFIL is their per-sample mean and the accuracy their mean.
func TestRepeatsAverage(t *testing.T) {
	m := &softmaxModel{d: 6, k: 2}
	split := toyData(30, 10, 6, 2, 4)
	cfg := tinyConfig()
	cfg.Batch, cfg.Steps, cfg.Repeats, cfg.FILCoords, cfg.Sampling = 5, 4, 3, 2, SamplingPoisson
	res, err := Run(context.Background(), cfg, Options{Model: m, Data: split})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Repeats) != 3 || len(res.TestAccuracies) != 3 {
		t.Fatalf("%d repeats, %d accuracies", len(res.Repeats), len(res.TestAccuracies))
	}
	runs := [][]float64{res.Repeats[0].DFIL, res.Repeats[1].DFIL, res.Repeats[2].DFIL}
	want, err := accounting.MeanDFIL(runs...)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.DFIL, want) {
		t.Fatal("dFIL is not the per-sample mean of the repeats")
	}
	if slices.Equal(runs[0], runs[1]) || res.Repeats[0].InitSeed == res.Repeats[1].InitSeed {
		t.Fatal("repeats 0 and 1 are identical: seeds not derived per repeat")
	}
	mean := (res.TestAccuracies[0] + res.TestAccuracies[1] + res.TestAccuracies[2]) / 3
	if math.Abs(res.TestAccuracy-mean) > 1e-15 {
		t.Fatalf("test accuracy %v, mean of repeats %v", res.TestAccuracy, mean)
	}
}

// TestTargetEpsilon: with target_epsilon the run solves for σ (clip constant and
// accountant included) and reports an ε within 1 % below the target; the result
// keeps the config as given and records the σ used.
func TestTargetEpsilon(t *testing.T) {
	m := &softmaxModel{d: 4, k: 2}
	split := toyData(500, 5, 4, 2, 1)
	for _, acct := range []string{AccountantAuto, AccountantRDP} {
		cfg := tinyConfig()
		cfg.Batch, cfg.Steps, cfg.Sigma, cfg.TargetEpsilon, cfg.FILCoords, cfg.Accountant = 10, 40, 0, 3, 2, acct
		res, err := Run(context.Background(), cfg, Options{Model: m, Data: split})
		if err != nil {
			t.Fatal(err)
		}
		if res.Epsilon > 3 || res.Epsilon < 0.99*3 || res.Config.Sigma != 0 || res.Config.TargetEpsilon != 3 {
			t.Errorf("%s: ε %v for target 3 (config σ %v, target %v)", acct, res.Epsilon, res.Config.Sigma, res.Config.TargetEpsilon)
		}
		if res.Sigma <= 0 || math.Abs(res.NoiseMultiplierRDP-res.Sigma/res.ClipConstant) > 1e-15 || res.Privacy.Accountant == "" {
			t.Errorf("%s: σ %v, σ/c %v, accountant %q", acct, res.Sigma, res.NoiseMultiplierRDP, res.Privacy.Accountant)
		}
	}
	cfg := tinyConfig()
	cfg.TargetEpsilon = 2
	if err := cfg.Validate(); err == nil {
		t.Error("sigma and target_epsilon together: want an error")
	}
}

// TestRunDirectoryLocked: a run directory held by another process (here: its lock
// taken) is refused with a clear error, and nothing in it is touched.
func TestRunDirectoryLocked(t *testing.T) {
	dir := t.TempDir()
	unlock, err := dirlock.Lock(dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg := tinyConfig()
	cfg.Batch, cfg.Steps = 5, 3
	_, err = Run(context.Background(), cfg, Options{Out: dir, Model: &softmaxModel{d: 4, k: 2}, Data: toyData(50, 5, 4, 2, 1)})
	if !errors.Is(err, dirlock.ErrLocked) || !strings.Contains(err.Error(), "in use by another dpfil process") {
		t.Fatalf("run into a locked directory: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, ResultFile)); err == nil {
		t.Fatal("result written into a locked directory")
	}
	unlock()
	if _, err := Run(context.Background(), cfg, Options{Out: dir, Model: &softmaxModel{d: 4, k: 2}, Data: toyData(50, 5, 4, 2, 1)}); err != nil {
		t.Fatalf("after unlock: %v", err)
	}
}

// TestFirstCheckpointAfterFirstStep: with the default schedule a checkpoint exists
// as soon as one step is done (a kill after it loses at most that step's work).
func TestFirstCheckpointAfterFirstStep(t *testing.T) {
	dir := t.TempDir()
	cfg := tinyConfig()
	cfg.Batch, cfg.Steps = 5, 6
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var seen *checkpoint
	_, _ = Run(ctx, cfg, Options{Out: dir, Model: &softmaxModel{d: 4, k: 2}, Data: toyData(50, 5, 4, 2, 1),
		CheckpointInterval: time.Hour, Progress: func(e Event) {
			if e.Step == 2 && seen == nil {
				seen, _ = loadCheckpoint(dir) // before step 2's own work could write one
			}
		}})
	if seen == nil || seen.Cur == nil || seen.Cur.Step != 1 {
		t.Fatalf("checkpoint seen after step 2's progress: %+v", seen)
	}
}

func TestFILCoordsAboveInputDim(t *testing.T) {
	cfg := tinyConfig()
	cfg.Batch, cfg.Steps, cfg.FILCoords = 5, 2, 5 // the toy inputs have 4 values
	_, err := Run(context.Background(), cfg, Options{Model: &softmaxModel{d: 4, k: 2}, Data: toyData(50, 5, 4, 2, 1)})
	if err == nil || !strings.Contains(err.Error(), "fil_exact") {
		t.Fatalf("fil_coords > d: %v", err)
	}
}

// TestSamplingParsedOnce: the run's sampling scheme is parsed once when the run is
// prepared; the per-step privacy description (dpsgd, called for every step's event)
// no longer reads the configuration string.
func TestSamplingParsedOnce(t *testing.T) {
	split := toyData(40, 10, 6, 3, 1)
	for _, tc := range []struct {
		name string
		want accounting.Sampling
	}{
		{SamplingPoisson, accounting.SamplingPoisson},
		{SamplingUniform, accounting.SamplingUniform},
		{SamplingShuffle, accounting.SamplingShuffle},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tinyConfig()
			cfg.Sampling, cfg.Batch, cfg.Steps = tc.name, 8, 3
			s, err := prepare(cfg, Options{Model: &softmaxModel{d: 6, k: 3}, Data: split}, func(string, ...any) {})
			if err != nil {
				t.Fatal(err)
			}
			if got := s.priv.dpsgd().Sampling; got != tc.want {
				t.Fatalf("dpsgd sampling %v, want %v", got, tc.want)
			}
			s.cfg.Sampling = "not parsed again"
			if got := s.priv.dpsgd().Sampling; got != tc.want {
				t.Errorf("dpsgd re-read the sampling string: %v, want %v", got, tc.want)
			}
		})
	}
}

// Issue 27: the live ε of the progress events comes from the accountant the result
// reports (auto: PLD here), so the last event agrees with the summary's ε.
func TestProgressEpsilonMatchesResult(t *testing.T) {
	for _, acct := range []string{accounting.AccountantAuto, accounting.AccountantRDP} {
		cfg := tinyConfig()
		cfg.Batch, cfg.Steps, cfg.Sigma, cfg.Sampling, cfg.Accountant = 5, 40, 0.8, SamplingPoisson, acct
		var last Event
		res, err := Run(context.Background(), cfg, Options{Model: &softmaxModel{d: 4, k: 2}, Data: toyData(50, 5, 4, 2, 1),
			Progress: func(e Event) { last = e }})
		if err != nil {
			t.Fatal(err)
		}
		p := res.Privacy
		if last.Step != 40 || last.Accountant != p.Accountant || math.Abs(last.Epsilon-res.Epsilon) > 1e-3*res.Epsilon || last.Epsilon < res.Epsilon-1e-9 {
			t.Errorf("%s: last progress ε(%s) = %v at step %d, result ε(%s) = %v (RDP %v)", acct, last.Accountant, last.Epsilon, last.Step, p.Accountant, res.Epsilon, *p.EpsilonRDP)
		}
	}
}

// Issue 27: the summary's headline lines are clean — c is explained where it is
// shown, the paper's add-remove ε₂ and the antipodal pair's exact value sit on
// secondary lines, labelled.
func TestResultSummaryHeadlines(t *testing.T) {
	cfg := tinyConfig()
	cfg.Batch, cfg.Steps, cfg.Sigma, cfg.ClipMode = 5, 10, 1, ClipModeSmooth
	res, err := Run(context.Background(), cfg, Options{Model: &softmaxModel{d: 4, k: 2}, Data: toyData(50, 5, 4, 2, 1)})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	res.WriteText(&b)
	lines := strings.Split(b.String(), "\n")
	if strings.Contains(lines[0], "c =") {
		t.Errorf("first line carries c unexplained: %q", lines[0])
	}
	var sawC, sawT1, sawPaper, sawAnti bool
	for _, l := range lines {
		switch {
		case strings.Contains(l, "smooth clipping bounds a clipped gradient by c·C, c = 1.115"):
			sawC = true
		case strings.HasPrefix(l, "Theorem 1 (RDP)"):
			sawT1 = strings.Contains(l, "proven bound") && !strings.Contains(l, "paper") && !strings.Contains(l, "not a valid")
		case strings.Contains(l, "the paper's add-remove ε₂") && strings.Contains(l, "not a valid Theorem 1 input"):
			sawPaper = true
		case strings.Contains(l, "antipodal pair, exact (not proven worst case)"):
			sawAnti = true
		}
	}
	if !sawC || !sawT1 || !sawPaper || !sawAnti {
		t.Errorf("c explained %v, clean Theorem 1 line %v, paper's value labelled %v, antipodal labelled %v:\n%s", sawC, sawT1, sawPaper, sawAnti, b.String())
	}
	if res.RDPOrder2Adjacency != "replace-one" || res.Privacy.Adjacency != "add-remove" {
		t.Errorf("rdp_order2 under %q, epsilon under %q", res.RDPOrder2Adjacency, res.Privacy.Adjacency)
	}
	if res.Privacy.Theorem1.RDPOrder2Antipodal == nil || *res.Privacy.Theorem1.RDPOrder2Antipodal > res.RDPOrder2 {
		t.Errorf("result theorem1 %+v", res.Privacy.Theorem1)
	}
}

// rdpEpsilon is (ε, order) at δ = 1e-5 of steps Poisson-sampled Gaussian steps
// under add-remove by the bare per-order RDP accumulator (the improved conversion):
// an independent reference for the report's RDP ε.
func rdpEpsilon(q, nm float64, steps int) (float64, float64, error) {
	r := accounting.NewRDP(nil)
	if err := r.Compose(q, nm, steps); err != nil {
		return 0, 0, err
	}
	return r.Epsilon(1e-5, accounting.ConversionImproved)
}
