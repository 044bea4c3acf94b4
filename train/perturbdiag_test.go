package train

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// diagConfig is a small g_φ run with pruning (so that columns are dropped) and FIL.
func diagConfig(steps int) Config {
	cfg := tuningConfig()
	cfg.FILCoords, cfg.Repeats = 3, 2
	cfg.Tuning = TuningConfig{PretrainPublic: 0.5, PretrainSteps: 30, PruneFraction: 0.3, PerturbNet: true, PerturbSteps: steps,
		PerturbBatch: 16, PerturbHidden: 4, PerturbLambda: 10}
	return cfg
}

// TestPerturbDiagRecordsSteps: every step of every repeat has its record and arrays;
// the final vectors are exactly what was summed (the released noisy sum minus the
// noise, recomputed from the noise generator, is Σ final on the released columns,
// zero elsewhere), final = CLIP(base + perturb), the norms and cosines are those of
// the vectors, and the last step's accuracy and dFIL are the repeat's result. With
// g_φ never trained (perturb_steps −1) the perturbation is zero and the base
// gradients are still taken at θ_t (before the update), else the first check fails.
func TestPerturbDiagRecordsSteps(t *testing.T) {
	for _, steps := range []int{3, -1} {
		t.Run(map[int]string{3: "trained", -1: "never trained"}[steps], func(t *testing.T) {
			cfg := diagConfig(steps)
			if steps > 0 { // the λ schedule: each record names the λ its g_φ was trained with
				cfg.Tuning.PerturbLambdaDecay, cfg.Tuning.PerturbMinLambda = 3, 2
			}
			data := toyData(120, 30, 6, 3, 4)
			dir := t.TempDir()
			released := map[[2]int][]float32{}
			res, err := Run(context.Background(), cfg, Options{Out: dir, Model: smallNet(t), Data: data, PerturbDiag: 1000,
				OnStep: func(r StepRecord) error {
					released[[2]int{r.Repeat, r.Step + 1}] = slices.Clone(r.Released)
					return nil
				}})
			if err != nil {
				t.Fatal(err)
			}
			recs, err := ReadPerturbDiag(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) != cfg.Repeats*cfg.Steps {
				t.Fatalf("%d records, want %d", len(recs), cfg.Repeats*cfg.Steps)
			}
			clip, _ := cfg.clip()
			std := res.Sigma * cfg.Clip
			for _, rec := range recs {
				a, err := ReadPerturbDiagArrays(dir, rec)
				if err != nil {
					t.Fatal(err)
				}
				if rec.Perturbed != (steps > 0) || rec.Vectors != rec.Samples || rec.Columns >= rec.Params || rec.Standardised != true {
					t.Fatalf("record %+v", rec)
				}
				wantLam := 10.0
				if steps > 0 {
					wantLam = perturbScheduleLambda(10, 3, 2, rec.Step-1)
				}
				if rec.Lambda != wantLam {
					t.Fatalf("repeat %d step %d: λ %v, want %v", rec.Repeat, rec.Step, rec.Lambda, wantLam)
				}
				// Released − noise = Σ final on the released columns.
				rel := released[[2]int{rec.Repeat, rec.Step}]
				noise := make([]float32, rec.Params)
				addNoise(noise, std, noiseKey(cfg.Seed, rec.Repeat), rec.Step-1)
				sum := make([]float64, rec.Params)
				for s := 0; s < a.M; s++ {
					for j, c := range a.Columns {
						sum[c] += a.Final[s*a.K+j]
					}
				}
				for i := range sum {
					got := float64(rel[i])
					if slices.Contains(a.Columns, i) {
						got -= float64(noise[i])
					}
					if math.Abs(got-sum[i]) > 1e-4*(1+math.Abs(sum[i])) {
						t.Fatalf("repeat %d step %d coordinate %d: released − noise %v, Σ final %v", rec.Repeat, rec.Step, i, got, sum[i])
					}
				}
				for s := 0; s < a.M; s++ {
					var bb, pp, bp, ww float64
					w := make([]float64, a.K)
					for j := 0; j < a.K; j++ {
						b, p := a.Base[s*a.K+j], a.Perturb[s*a.K+j]
						w[j] = b + p
						bb, pp, bp, ww = bb+b*b, pp+p*p, bp+b*p, ww+w[j]*w[j]
					}
					sc, _ := clip.Scale(math.Sqrt(ww))
					for j := range w {
						if math.Abs(a.Final[s*a.K+j]-sc*w[j]) > 1e-5*(1+math.Abs(w[j])) {
							t.Fatalf("sample %d column %d: final %v, CLIP(base + perturb) %v", s, j, a.Final[s*a.K+j], sc*w[j])
						}
					}
					if math.Abs(a.BaseNorm[s]-math.Sqrt(bb)) > 1e-5*(1+a.BaseNorm[s]) || math.Abs(a.PerturbNorm[s]-math.Sqrt(pp)) > 1e-5*(1+a.PerturbNorm[s]) ||
						math.Abs(a.FinalNorm[s]-sc*math.Sqrt(ww)) > 1e-5*(1+a.FinalNorm[s]) {
						t.Fatalf("sample %d: norms %v %v %v, of the vectors %v %v %v", s, a.BaseNorm[s], a.PerturbNorm[s], a.FinalNorm[s], math.Sqrt(bb), math.Sqrt(pp), sc*math.Sqrt(ww))
					}
					if steps < 0 {
						if pp != 0 || !math.IsNaN(a.Cosine[s]) {
							t.Fatalf("g_φ never trained: sample %d perturbation norm² %v, cosine %v", s, pp, a.Cosine[s])
						}
					} else if math.Abs(a.Cosine[s]-bp/math.Sqrt(bb*pp)) > 1e-4 {
						t.Fatalf("sample %d: cosine %v, of the vectors %v", s, a.Cosine[s], bp/math.Sqrt(bb*pp))
					}
				}
				if rec.Step == cfg.Steps {
					rr := res.Repeats[rec.Repeat]
					if rec.TestAccuracy != rr.TestAccuracy || rec.DFILMax == nil || *rec.DFILMax != rr.DFILMax || *rec.DFILMedian != rr.DFILMedian {
						t.Fatalf("last step: accuracy %v dFIL max %v, repeat result %v %v", rec.TestAccuracy, rec.DFILMax, rr.TestAccuracy, rr.DFILMax)
					}
					if rec.Epsilon == nil || math.Abs(*rec.Epsilon-res.Epsilon) > 1e-9*res.Epsilon {
						t.Fatalf("last step: ε %v, result %v", rec.Epsilon, res.Epsilon)
					}
				}
			}
		})
	}
}

// TestPerturbDiagResume: a run with diagnostics killed mid-way and resumed (without
// asking for them again) ends with the same result and the same diagnostics files,
// byte for byte, as the uninterrupted run; and the diagnostics change no result.
func TestPerturbDiagResume(t *testing.T) {
	cfg := diagConfig(3)
	data := toyData(120, 30, 6, 3, 4)
	full, plain := t.TempDir(), t.TempDir()
	if _, err := Run(context.Background(), cfg, Options{Out: full, Model: smallNet(t), Data: data, PerturbDiag: 5}); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), cfg, Options{Out: plain, Model: smallNet(t), Data: data}); err != nil {
		t.Fatal(err)
	}
	if a, b := readComparable(t, full), readComparable(t, plain); !bytes.Equal(a, b) {
		t.Fatalf("the diagnostics changed the result:\n%s\nvs\n%s", a, b)
	}
	killed := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	_, err := Run(ctx, cfg, Options{Out: killed, Model: smallNet(t), Data: data, PerturbDiag: 5, CheckpointEvery: 1, Progress: func(e Event) {
		if e.Repeat == 1 && e.Step == 2 {
			cancel()
		}
	}})
	if err == nil {
		t.Fatal("killed run finished")
	}
	if ck, err := loadCheckpoint(killed); err != nil || ck == nil || ck.Cur == nil || ck.Cur.Repeat != 1 || ck.Cur.Step != 2 {
		t.Fatalf("checkpoint of the killed run: %v %+v", err, ck)
	}
	if _, err := Run(context.Background(), cfg, Options{Out: killed, Model: smallNet(t), Data: data, Resume: true}); err != nil {
		t.Fatal(err)
	}
	if a, b := readComparable(t, full), readComparable(t, killed); !bytes.Equal(a, b) {
		t.Fatalf("resumed run differs:\n%s\nvs\n%s", a, b)
	}
	want := dirEntries(t, filepath.Join(full, PerturbDiagDir))
	if got := dirEntries(t, filepath.Join(killed, PerturbDiagDir)); !slices.Equal(got, want) {
		t.Fatalf("resumed run's diagnostics %v, uninterrupted %v", got, want)
	}
	if len(want) != 1+2*cfg.Repeats*cfg.Steps {
		t.Fatalf("diagnostics %v: want diag.json and 2 files per step", want)
	}
	for _, name := range want {
		a, err := os.ReadFile(filepath.Join(full, PerturbDiagDir, name))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(killed, PerturbDiagDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Fatalf("%s differs after the resume", name)
		}
	}
	// Resuming with another vector count is refused.
	ctx2, cancel2 := context.WithCancel(context.Background())
	again := t.TempDir()
	_, _ = Run(ctx2, cfg, Options{Out: again, Model: smallNet(t), Data: data, PerturbDiag: 5, CheckpointEvery: 1, Progress: func(e Event) { cancel2() }})
	_, err = Run(context.Background(), cfg, Options{Out: again, Model: smallNet(t), Data: data, Resume: true, PerturbDiag: 7})
	if err == nil || !strings.Contains(err.Error(), "recorded 5 vectors") {
		t.Fatalf("resume with another count: %v", err)
	}
}

// Diagnostics need a run directory and g_φ; a negative count is refused.
func TestPerturbDiagRefusals(t *testing.T) {
	data := toyData(120, 30, 6, 3, 4)
	noNet := diagConfig(3)
	noNet.Tuning = TuningConfig{PretrainPublic: 0.5, PretrainSteps: 30}
	for _, c := range []struct {
		name string
		cfg  Config
		opt  Options
		want string
	}{
		{"no directory", diagConfig(3), Options{PerturbDiag: 5}, "--out"},
		{"no g_φ", noNet, Options{Out: "DIR", PerturbDiag: 5}, "perturb_net"},
		{"negative", diagConfig(3), Options{Out: "DIR", PerturbDiag: -1}, "≥ 0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			opt := c.opt
			if opt.Out == "DIR" {
				opt.Out = t.TempDir()
			}
			opt.Model, opt.Data = smallNet(t), data
			if _, err := Run(context.Background(), c.cfg, opt); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

// perturb_no_standardise leaves g_φ's input constants at the identity (mean 0,
// scale 1) where the default sets them from the first public batch, and changes the
// run.
func TestPerturbNoStandardise(t *testing.T) {
	data := toyData(120, 30, 6, 3, 4)
	constants := func(noStd bool) (mean, inv []float64, params []float32) {
		cfg := diagConfig(3)
		cfg.Repeats = 1
		cfg.Tuning.PerturbNoStd = noStd
		dir := t.TempDir()
		ctx, cancel := context.WithCancel(context.Background())
		_, _ = Run(ctx, cfg, Options{Out: dir, Model: smallNet(t), Data: data, CheckpointEvery: 1, Progress: func(e Event) { cancel() }})
		ck, err := loadCheckpoint(dir)
		if err != nil || ck == nil || ck.Cur == nil || ck.Cur.Perturb == nil {
			t.Fatalf("checkpoint after step 1: %v %+v", err, ck)
		}
		p := make([]float32, len(ck.Cur.Params))
		for i, v := range ck.Cur.Params {
			p[i] = float32(v)
		}
		return ck.Cur.Perturb.Mean, ck.Cur.Perturb.Inv, p
	}
	m0, i0, p0 := constants(false)
	m1, i1, p1 := constants(true)
	for i := range m1 {
		if m1[i] != 0 || i1[i] != 1 {
			t.Fatalf("no standardisation: feature %d mean %v scale %v, want 0 and 1", i, m1[i], i1[i])
		}
	}
	if slices.Equal(m0, m1) || slices.Equal(i0, i1) || slices.Equal(p0, p1) {
		t.Fatal("standardised and raw g_φ inputs gave the same constants or parameters: the option does nothing")
	}
	cfg := tuningConfig()
	cfg.Tuning = TuningConfig{PretrainPublic: 0.5, PerturbNoStd: true}
	if _, err := Run(context.Background(), cfg, Options{Model: smallNet(t), Data: data}); err == nil || !strings.Contains(err.Error(), "need perturb_net") {
		t.Fatalf("perturb_no_standardise without g_φ: %v", err)
	}
}

// TestResumedRunKeepsPretrainAccuracy: a pretraining run of two repeats killed in
// the second and resumed reports the pretraining accuracy of the uninterrupted run
// (the mean over both repeats; the resumed process did not start the first one).
func TestResumedRunKeepsPretrainAccuracy(t *testing.T) {
	cfg := tuningConfig()
	cfg.Repeats = 2
	cfg.Tuning = TuningConfig{PretrainPublic: 0.5, PretrainSteps: 30}
	data := toyData(120, 30, 6, 3, 4)
	full := t.TempDir()
	want, err := Run(context.Background(), cfg, Options{Out: full, Model: smallNet(t), Data: data})
	if err != nil {
		t.Fatal(err)
	}
	killed := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	_, _ = Run(ctx, cfg, Options{Out: killed, Model: smallNet(t), Data: data, CheckpointEvery: 1, Progress: func(e Event) {
		if e.Repeat == 1 && e.Step == 2 {
			cancel()
		}
	}})
	got, err := Run(context.Background(), cfg, Options{Out: killed, Model: smallNet(t), Data: data, Resume: true})
	if err != nil {
		t.Fatal(err)
	}
	a, b := want.Tuning.PretrainAccuracy, got.Tuning.PretrainAccuracy
	if a != b || !(a > 0) {
		t.Fatalf("pretraining accuracy: uninterrupted %v, resumed %v", a, b)
	}
}

// A run with diagnostics that diverges leaves no directory behind: the diagnostics
// of a run without a result go with its checkpoint.
func TestPerturbDiagDivergedRunRemovesThem(t *testing.T) {
	cfg := diagConfig(3)
	cfg.LR, cfg.Tuning.PretrainLR = 1e300, 0.3 // the float32 parameters overflow at the first private step
	dir := filepath.Join(t.TempDir(), "run")
	_, err := Run(context.Background(), cfg, Options{Out: dir, Model: smallNet(t), Data: toyData(120, 30, 6, 3, 4), PerturbDiag: 5})
	if !errors.Is(err, ErrDiverged) {
		t.Fatalf("lr 1e300: %v, want a divergence", err)
	}
	if got := dirEntries(t, dir); got != nil {
		t.Fatalf("diverged run left %v", got)
	}
}
