package train

import (
	"context"
	"testing"

	"github.com/dpfil/dpfil/accounting"
)

// TestPrivacyResolvedOnce: the run's privacy parameters are one value built when the
// run is prepared. The config stays as given (σ = 0 with target_epsilon); the
// resolved σ, its noise multiplier σ/c (accounting.NoiseMultiplier, exactly), the
// noise scale σC, q, T, δ and the sampling's adjacency are what the emitted ledger,
// the report and the result carry; ResolvePrivacy (what the attacks compare against)
// gives the same value for the same config.
func TestPrivacyResolvedOnce(t *testing.T) {
	m := &softmaxModel{d: 4, k: 2}
	split := toyData(500, 5, 4, 2, 1)
	for _, tc := range []struct {
		name          string
		sigma, target float64
		clipMode      string
		sampling      string
	}{
		{"sigma smooth poisson", 1.3, 0, ClipModeSmooth, SamplingPoisson},
		{"target smooth uniform", 0, 3, ClipModeSmooth, SamplingUniform},
		{"target hard poisson", 0, 2, ClipModeHard, SamplingPoisson},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tinyConfig()
			cfg.Batch, cfg.Steps, cfg.Sigma, cfg.TargetEpsilon, cfg.ClipMode, cfg.Sampling = 10, 20, tc.sigma, tc.target, tc.clipMode, tc.sampling
			s, err := prepare(cfg, Options{Model: m, Data: split}, func(string, ...any) {})
			if err != nil {
				t.Fatal(err)
			}
			p := s.priv
			c, _ := ClipConstant(tc.clipMode)
			samp, _ := accounting.ParseSampling(tc.sampling)
			if s.cfg.Sigma != tc.sigma || p.ClipConstant != c || p.NoiseMultiplier != accounting.NoiseMultiplier(p.Sigma, c) ||
				p.NoiseStd != p.Sigma*cfg.Clip || p.Q != 10.0/500 || p.Steps != 20 || p.Delta != cfg.Delta ||
				p.Sampling != samp || p.Adjacency != accounting.DefaultAdjacency(samp) || !(p.Sigma > 0) {
				t.Fatalf("privacy %+v (config σ %v)", p, s.cfg.Sigma)
			}
			if tc.sigma > 0 && p.Sigma != tc.sigma {
				t.Errorf("σ %v, want %v as given", p.Sigma, tc.sigma)
			}
			r, err := ResolvePrivacy(cfg, 500)
			if err != nil || r != p {
				t.Errorf("ResolvePrivacy %+v, %v; prepared %+v", r, err, p)
			}
			res, err := Run(context.Background(), cfg, Options{Model: m, Data: split})
			if err != nil {
				t.Fatal(err)
			}
			want, _ := p.Ledger()
			if !res.Privacy.Events.Equal(want) || res.Sigma != p.Sigma || res.NoiseMultiplierRDP != p.NoiseMultiplier {
				t.Errorf("result σ %v, σ/c %v, ledger %+v; want %v, %v, %+v", res.Sigma, res.NoiseMultiplierRDP, res.Privacy.Events, p.Sigma, p.NoiseMultiplier, want)
			}
			if tc.target > 0 && (res.Epsilon > tc.target || res.Epsilon < 0.99*tc.target) {
				t.Errorf("ε %v for target %v", res.Epsilon, tc.target)
			}
		})
	}
}
