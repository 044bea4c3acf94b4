package train

import (
	"context"
	"math"
	"strings"
	"testing"
)

// TestTrainClipAlgoMatchesPerSample trains the engine's models with ghost and mixed
// clipping and with per-sample clipping from the same seed (σ = 0, so the released
// sum is the clipped sum) and checks every step's released sum and parameters
// against the per-sample run's: relative L2 difference below 10⁻⁵, float32 rounding
// (models.TestGhostClippedSumMatchesPerSample states why) carried over three steps,
// but not bit-identical (the sums are computed differently).
func TestTrainClipAlgoMatchesPerSample(t *testing.T) {
	split := imageToyData(120, 10, 4)
	for _, tc := range []struct{ model, algo, mode string }{
		{"mnist-cnn", "ghost", ClipModeSmooth},
		{"mnist-cnn", "auto", ClipModeHard},
		{"mlp", "auto", ClipModeSmooth},
	} {
		t.Run(tc.model+"/"+tc.algo, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Model, cfg.Dataset, cfg.Steps, cfg.Batch, cfg.Sigma, cfg.FILCoords = tc.model, "toy", 3, 40, 0, 0
			cfg.ClipMode, cfg.Clip = tc.mode, 0.5
			type step struct {
				released []float32
				params   []float64
			}
			run := func(algo string) []step {
				c := cfg
				c.ClipAlgo = algo
				var steps []step
				onStep := func(r StepRecord) error {
					steps = append(steps, step{append([]float32(nil), r.Released...), append([]float64(nil), r.Params...)})
					return nil
				}
				if _, err := Run(context.Background(), c, Options{Data: split, OnStep: onStep}); err != nil {
					t.Fatal(err)
				}
				return steps
			}
			want, got := run(""), run(tc.algo)
			if len(got) != cfg.Steps || len(want) != cfg.Steps {
				t.Fatalf("%d and %d steps recorded, want %d", len(got), len(want), cfg.Steps)
			}
			rel := func(a, b []float64) float64 {
				var num, den float64
				for i := range a {
					num += (a[i] - b[i]) * (a[i] - b[i])
					den += b[i] * b[i]
				}
				return math.Sqrt(num / den)
			}
			f64 := func(v []float32) []float64 {
				out := make([]float64, len(v))
				for i, x := range v {
					out[i] = float64(x)
				}
				return out
			}
			// The ghost run did run ghost clipping: its sums round differently.
			differ := false
			for i, v := range got[0].released {
				differ = differ || math.Float32bits(v) != math.Float32bits(want[0].released[i])
			}
			if !differ {
				t.Errorf("clip_algo %s gave the per-sample run's bits: was it applied?", tc.algo)
			}
			for s := range want {
				if e := rel(f64(got[s].released), f64(want[s].released)); !(e < 1e-5) {
					t.Errorf("step %d: released sum differs from per-sample clipping by %.3g (relative)", s, e)
				}
				if e := rel(got[s].params, want[s].params); !(e < 1e-5) {
					t.Errorf("step %d: parameters differ from per-sample clipping by %.3g (relative)", s, e)
				}
			}
		})
	}
}

// TestClipAlgoRefused checks the configurations ghost and mixed clipping refuse —
// FIL of any kind, CUDA, tuning, an unknown name — and a model without them.
func TestClipAlgoRefused(t *testing.T) {
	base := DefaultConfig()
	base.FILCoords, base.ClipAlgo = 0, "ghost"
	if err := base.Validate(); err != nil {
		t.Fatalf("ghost without FIL: %v", err)
	}
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"fil", func(c *Config) { c.FILCoords = 50 }, "fil_coords = 50"},
		{"fil-exact", func(c *Config) { c.FILExact = true }, "per-sample engine"},
		{"fil-eta", func(c *Config) { c.FILEta = 3 }, "per-sample engine"},
		{"fil-label", func(c *Config) { c.FILLabel = true }, "per-sample engine"},
		{"cuda", func(c *Config) { c.Device = "cuda" }, "CPU engine only"},
		{"tuning", func(c *Config) { c.Tuning.PretrainPublic = 0.1 }, "clip per sample"},
		{"auto+fil", func(c *Config) { c.ClipAlgo, c.FILCoords = "auto", 5 }, "clip_algo = auto"},
		{"unknown", func(c *Config) { c.ClipAlgo = "book-keeping" }, `clip algorithm "book-keeping"`},
	} {
		c := base
		tc.edit(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error mentioning %q", tc.name, err, tc.want)
		}
	}
	// A model without ghost clipping (a caller's model) is refused before training.
	cfg := tinyConfig()
	cfg.Batch, cfg.Steps, cfg.ClipAlgo = 5, 2, "auto"
	_, err := Run(context.Background(), cfg, Options{Model: &softmaxModel{d: 4, k: 2}, Data: toyData(50, 5, 4, 2, 1)})
	if err == nil || !strings.Contains(err.Error(), "has no ghost clipping") {
		t.Fatalf("caller model with clip_algo auto: %v", err)
	}
}
