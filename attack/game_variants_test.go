package attack

import (
	"context"
	"math"
	"strings"
	"testing"
)

// TestUniformPriorMatchesDistance: the uniform prior's candidates are new noise
// images (not pool points), inside [½ − h, ½ + h], whose mean pairwise squared
// distance matches the pool's (computed here over all pairs, not the 2 000 sampled
// pairs the game uses) to within 5 %.
func TestUniformPriorMatchesDistance(t *testing.T) {
	cfg := smallConfig()
	cfg.PriorKind = PriorUniform
	const d, poolN = 20, 120
	g := testGame(t, cfg, d, 4, 3, poolN)
	pool := synthPool(poolN, d, 3, cfg.Seed+100)
	meanSq := func(p Pool, idx []int) float64 {
		s, n := 0.0, 0
		for a := range idx {
			for b := a + 1; b < len(idx); b++ {
				x, y := p.AppendImages(nil, idx[a], idx[a]+1), p.AppendImages(nil, idx[b], idx[b]+1)
				for k := range x {
					s += (x[k] - y[k]) * (x[k] - y[k])
				}
				n++
			}
		}
		return s / float64(n)
	}
	inKnown := map[int]bool{}
	for _, i := range g.Known() {
		inKnown[i] = true
	}
	var rest []int
	for i := 0; i < poolN; i++ {
		if !inKnown[i] {
			rest = append(rest, i)
		}
	}
	want := meanSq(pool, rest)
	h := g.NoiseHalfWidth()
	if math.Abs(h-math.Sqrt(6*want/d)/2) > 0.05*h {
		t.Errorf("half-width %.4f, want ≈ %.4f from the pool's mean squared distance %.4f", h, math.Sqrt(6*want/d)/2, want)
	}
	for _, i := range g.rest {
		if i < poolN {
			t.Fatalf("prior candidate %d is a pool point, want noise (index ≥ %d)", i, poolN)
		}
		for _, v := range g.pool.AppendImages(nil, i, i+1) {
			if v < 0.5-h-1e-12 || v > 0.5+h+1e-12 {
				t.Fatalf("noise value %v outside [½ − h, ½ + h], h = %v", v, h)
			}
		}
	}
	if got := meanSq(g.pool, g.rest[:300]); math.Abs(got-want) > 0.05*want {
		t.Errorf("noise mean pairwise squared distance %.4f, pool's %.4f (want within 5 %%)", got, want)
	}
	// Trials draw their priors from the noise and run.
	for _, r := range runGame(t, g, 3, 1) {
		for _, i := range r.Prior {
			if i < poolN {
				t.Errorf("trial %d: prior holds pool point %d", r.Trial, i)
			}
		}
	}
	// The data prior (default) is untouched by the option's code.
	cfg.PriorKind = ""
	if g2 := testGame(t, cfg, d, 4, 3, poolN); g2.pool.N() != poolN || g2.NoiseHalfWidth() != 0 {
		t.Errorf("data prior: pool %d points, half-width %v", g2.pool.N(), g2.NoiseHalfWidth())
	}
}

// TestNoSubtractDecision: prior-nosub sums the raw scores, the others the subtracted
// ones; without raw scores it is not reported.
func TestNoSubtractDecision(t *testing.T) {
	s := Scores{Dot: [][]float64{{1, 0}, {1, 0}}, NormSq: [][]float64{{1, 1}, {1, 1}}}
	if _, ok := decide(s, 1, 1, 2)[AttackPriorNoSub]; ok {
		t.Fatal("prior-nosub decided without raw scores")
	}
	s.Raw = [][]float64{{0, 3}, {1, -1}}
	g := decide(s, 1, 1, 2)
	if g[AttackPrior] != 0 || g[AttackPriorNoSub] != 1 {
		t.Errorf("guesses %v, want prior 0 (Σ Dot = 2 vs 0) and prior-nosub 1 (Σ Raw = 1 vs 2)", g)
	}
}

// TestNoSubtractEqualsPriorWithoutKnown: with |D₋| = 0 there is nothing to subtract,
// so the two attacks guess alike in every trial; with D₋ present they differ in some.
func TestNoSubtractEqualsPriorWithoutKnown(t *testing.T) {
	cfg := smallConfig()
	cfg.Known, cfg.NoSubtract, cfg.Sigma = 0, true, 0.5
	for _, r := range runGame(t, testGame(t, cfg, 12, 4, 3, 60), 12, 2) {
		if r.Guess[AttackPriorNoSub] != r.Guess[AttackPrior] {
			t.Fatalf("trial %d: |D₋| = 0 but prior-nosub guessed %d, prior %d", r.Trial, r.Guess[AttackPriorNoSub], r.Guess[AttackPrior])
		}
	}
	cfg.Known = 40
	differ := 0
	for _, r := range runGame(t, testGame(t, cfg, 12, 4, 3, 80), 12, 2) {
		if r.Guess[AttackPriorNoSub] != r.Guess[AttackPrior] {
			differ++
		}
	}
	if differ == 0 {
		t.Error("with |D₋| = 40 the unsubtracted attack never guessed differently: the raw sum is not used")
	}
}

// TestClippedNormStatistic: every gradient clipped at a tiny C (mean clipped norm C,
// fraction exactly 1: it once summed 1/(T·K) to 1.0000000000000002); none at a huge
// C (fraction 0, mean norm below C and positive).
func TestClippedNormStatistic(t *testing.T) {
	for _, tc := range []struct {
		clip     float64
		fraction float64
	}{{1e-6, 1}, {1e6, 0}} {
		cfg := smallConfig()
		cfg.Clip, cfg.Sigma, cfg.LR = tc.clip, 1, 0
		for _, r := range runGame(t, testGame(t, cfg, 12, 4, 3, 60), 3, 1) {
			if r.Clipped != tc.fraction { // exactly: a fraction of whole counts, never above 1
				t.Errorf("C = %g: clipped fraction %v, want %v", tc.clip, r.Clipped, tc.fraction)
			}
			if tc.fraction == 1 && math.Abs(r.ClippedNorm-tc.clip) > 1e-9*tc.clip {
				t.Errorf("C = %g: mean clipped norm %v, want C", tc.clip, r.ClippedNorm)
			}
			if tc.fraction == 0 && !(r.ClippedNorm > 0 && r.ClippedNorm < tc.clip) {
				t.Errorf("C = %g: mean norm %v", tc.clip, r.ClippedNorm)
			}
		}
	}
}

// TestGameVariantSpecs: the spec options reach the game and the report, and bad
// combinations are refused.
func TestGameVariantSpecs(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*GameSpec)
		err  string
	}{
		{"negative hidden", func(s *GameSpec) { s.Hidden = -1 }, "hidden width"},
		{"hidden on a convnet", func(s *GameSpec) { s.Hidden, s.Model = 100, "mnist-cnn" }, "mlp's hidden width"},
		{"unknown prior", func(s *GameSpec) { s.PriorKind = "gaussian" }, "unknown prior kind"},
		{"uniform prior with transcripts", func(s *GameSpec) { s.PriorKind, s.RecordTranscripts, s.Out = PriorUniform, true, t.TempDir() }, "transcripts"},
	} {
		s := tinySpec(t)
		tc.edit(&s)
		if err := s.Validate(); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: error %v, want one mentioning %q", tc.name, err, tc.err)
		}
	}
	s := tinySpec(t)
	s.Hidden, s.PriorKind, s.Attack = 30, PriorUniform, AttackPriorNoSub
	r, err := PlayGame(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if r.Hidden != 30 || r.PriorKind != PriorUniform || !(r.NoiseHalfWidth > 0) {
		t.Errorf("report: hidden %d, prior %q, half-width %v", r.Hidden, r.PriorKind, r.NoiseHalfWidth)
	}
	if _, ok := r.Attacks[AttackPriorNoSub]; !ok {
		t.Errorf("attack prior-nosub named but not reported: %v", r.Attacks)
	}
	if !(r.ClippedNorm > 0 && r.ClippedNorm <= s.Clip*(1+1e-12)) {
		t.Errorf("mean clipped norm %v outside (0, C = %v]", r.ClippedNorm, s.Clip)
	}
}
