package train_test

import (
	"context"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/dpfil/dpfil/data"
	"github.com/dpfil/dpfil/train"
	"github.com/dpfil/dpfil/train/fil"
)

// refineConfig is a small run whose exact dFIL is cheap: mlp on 120 digits.
func refineConfig(repeats int) train.Config {
	cfg := train.DefaultConfig()
	cfg.Model, cfg.TrainSubset, cfg.Batch, cfg.Steps = "mlp", 120, 12, 10
	cfg.Repeats, cfg.Seed, cfg.LR, cfg.Sigma, cfg.Clip = repeats, 5, 0.2, 1.1, 1
	cfg.FILCoords = 3
	return cfg
}

// runRecorded trains cfg into a fresh directory, recording its transcripts.
func runRecorded(t *testing.T, cfg train.Config) (string, *train.Result) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	res, err := train.RunWithTranscript(context.Background(), cfg, train.Options{Out: dir}, true)
	if err != nil {
		t.Fatal(err)
	}
	return dir, res
}

// exactTwin trains cfg with fil_exact on the same trajectory (FIL draws have their
// own stream, so batches, noise and parameters are those of cfg) and returns its
// per-sample exact dFIL (mean over repeats).
func exactTwin(t *testing.T, cfg train.Config, screened *train.Result) []float64 {
	t.Helper()
	cfg.FILExact, cfg.FILCoords = true, 0
	res, err := train.Run(context.Background(), cfg, train.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for r := range res.Repeats {
		if !slices.Equal(res.Repeats[r].Params, screened.Repeats[r].Params) {
			t.Fatalf("repeat %d: the fil_exact twin followed another trajectory", r)
		}
	}
	return res.DFIL
}

func relClose(a, b, tol float64) bool {
	return math.Abs(a-b) <= tol*math.Max(math.Abs(a), math.Abs(b))
}

// TestRefineEqualsExactRun: refined values equal an independent fil_exact run on
// the same trajectory; with every sample refined the two-stage maximum is the exact
// maximum; with m < N it equals it when the true argmax is in the screened top m
// and is never above it.
func TestRefineEqualsExactRun(t *testing.T) {
	cfg := refineConfig(2)
	dir, res := runRecorded(t, cfg)
	exact := exactTwin(t, cfg, res)
	trueArg := 0
	for i, v := range exact {
		if v > exact[trueArg] {
			trueArg = i
		}
	}
	screen, err := fil.Load(filepath.Join(dir, train.DFILFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, top := range []int{cfg.TrainSubset, 30, 5} {
		rep, err := train.RefineRun(train.RefineRequest{Run: dir, Top: top, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Refined) != top || rep.Repeats != 2 {
			t.Fatalf("top %d: %d refined, %d repeats", top, len(rep.Refined), rep.Repeats)
		}
		for _, s := range rep.Refined {
			if !relClose(s.Exact, exact[s.Index], 1e-12) {
				t.Errorf("top %d: sample %d refined %.17g, fil_exact run %.17g", top, s.Index, s.Exact, exact[s.Index])
			}
		}
		inTop := false
		rank := 1
		for _, v := range screen {
			if v > screen[trueArg] {
				rank++
			}
		}
		inTop = rank <= top
		if inTop && (rep.ArgMax != trueArg || !relClose(rep.Max, exact[trueArg], 1e-12)) {
			t.Errorf("top %d: argmax (screen rank %d) refined, but max %.6g (sample %d) != exact max %.6g (sample %d)", top, rank, rep.Max, rep.ArgMax, exact[trueArg], trueArg)
		}
		if rep.Max > exact[trueArg]*(1+1e-12) {
			t.Errorf("top %d: two-stage max %.6g above the exact max %.6g", top, rep.Max, exact[trueArg])
		}
		if rep.CI == nil || !(rep.CI.Lo <= rep.CI.Hi) || rep.CI.Hi > rep.Max*2 || rep.CIMSE.Lo != 1/rep.CI.Hi {
			t.Errorf("top %d: bootstrap interval %+v", top, rep.CI)
		}
		t.Logf("top %d: true argmax at screen rank %d; max %.4g, CI %+v; screen max %.4g", top, rank, rep.Max, rep.CI, rep.ScreenMax)
	}
}

// TestScreenReproducesRunAndIsUnbiased: the replayed screen with the run's own
// coordinate stream reproduces the run's dfil.npy, and the mean of S independent
// screens of the trajectory converges to the exact dFIL (Monte Carlo tolerance:
// 5 standard errors per sample, and the mean relative error over samples < 3 %).
func TestScreenReproducesRunAndIsUnbiased(t *testing.T) {
	cfg := refineConfig(1)
	dir, res := runRecorded(t, cfg)
	tjs, err := train.OpenTrajectories(dir)
	if err != nil {
		t.Fatal(err)
	}
	own, err := train.ScreenFIL(dir, tjs[0], cfg.FILCoords, train.ScreenStream(cfg.Seed, 0), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(own, res.DFIL) {
		t.Fatalf("the replayed screen differs from the run's dFIL: %v vs %v", own[:4], res.DFIL[:4])
	}
	exact := exactTwin(t, cfg, res)
	ds, err := data.Load(cfg.Dataset, data.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const S = 200
	sum := make([]float64, len(exact))
	sumSq := make([]float64, len(exact))
	for s := range S {
		v, err := train.ScreenFIL(dir, tjs[0], cfg.FILCoords, train.ScreenStream(uint64(1000+s), 7), ds)
		if err != nil {
			t.Fatal(err)
		}
		for i, x := range v {
			sum[i] += x
			sumSq[i] += x * x
		}
	}
	relErr, n := 0.0, 0
	for i, e := range exact {
		if e == 0 {
			if sum[i] != 0 {
				t.Errorf("sample %d never in a batch but screened %g", i, sum[i])
			}
			continue
		}
		mean := sum[i] / S
		sd := math.Sqrt(max(0, sumSq[i]/S-mean*mean))
		if math.Abs(mean-e) > 5*sd/math.Sqrt(S)+1e-12*e {
			t.Errorf("sample %d: screen mean %.6g over %d draws, exact %.6g (sd %.3g)", i, mean, S, e, sd)
		}
		relErr += (mean - e) / e
		n++
	}
	if m := relErr / float64(n); math.Abs(m) > 0.03 {
		t.Errorf("mean relative error of the screen mean %.4f over %d samples", m, n)
	} else {
		t.Logf("screen mean over %d draws: mean relative error %.4f over %d samples", S, m, n)
	}
}
