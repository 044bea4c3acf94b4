package attack

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/dpfil/dpfil/internal/dirlock"
)

// synthPool is n random images of dimension d in [0,1] with labels in [0, classes).
func synthPool(n, d, classes int, seed uint64) Pool {
	r := rand.New(rand.NewPCG(seed, 9))
	p := Pool{X: make([]float64, n*d), Y: make([]int, n), D: d}
	for i := range p.Y {
		p.Y[i] = r.IntN(classes)
		for j := 0; j < d; j++ {
			// class-dependent mean so that training has something to learn
			p.X[i*d+j] = math.Min(1, math.Max(0, 0.5+0.3*math.Sin(float64(p.Y[i]*d+j))+0.2*r.NormFloat64()))
		}
	}
	return p
}

func testGame(t *testing.T, cfg GameConfig, d, hidden, classes, poolN int) *Game {
	t.Helper()
	m, err := NewMLP(d, hidden, classes)
	if err != nil {
		t.Fatal(err)
	}
	g, err := NewGame(cfg, synthPool(poolN, d, classes, cfg.Seed+100), func() Net { return m }, m.Init)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func smallConfig() GameConfig {
	c := DefaultGameConfig()
	c.Known, c.PriorSize, c.Steps, c.LR = 30, 5, 8, 0.5
	return c
}

func runGame(t *testing.T, g *Game, trials, workers int) []TrialResult {
	t.Helper()
	res, err := g.Run(context.Background(), RunOptions{Trials: trials, Workers: workers})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestPriorAttackNoiseExtremes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		sigma  float64
		q      float64
		wantLo float64 // success rate must be in the CI sense compatible with [wantLo, wantHi]
		wantHi float64
	}{
		{"sigma tiny full batch", 1e-4, 1, 1, 1},
		{"sigma tiny poisson", 1e-4, 0.5, 1, 1},
		{"sigma huge full batch", 1e4, 1, 0.2, 0.2},
		{"sigma huge poisson", 1e4, 0.5, 0.2, 0.2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := smallConfig()
			cfg.Sigma, cfg.Q = tc.sigma, tc.q
			g := testGame(t, cfg, 20, 6, 3, 400)
			n := 300
			if tc.wantHi == 1 {
				n = 40
			}
			res := runGame(t, g, n, 2)
			if tc.wantLo == 1 {
				// a target that never entered a batch left no trace: drop those trials
				kept := res[:0]
				for _, r := range res {
					if r.TargetSteps > 0 {
						kept = append(kept, r)
					}
				}
				res = kept
			}
			st, err := Summarize(res)
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range []string{AttackPrior, AttackPriorTopK, AttackLogLik} {
				s := st[a]
				if tc.wantLo == 1 {
					if s.Successes != s.Trials {
						t.Errorf("%s: %d/%d successes with σ = %g, want all", a, s.Successes, s.Trials, tc.sigma)
					}
					continue
				}
				lo, hi, err := ClopperPearson(s.Successes, s.Trials, 0.999)
				if err != nil {
					t.Fatal(err)
				}
				if lo > tc.wantHi || hi < tc.wantLo {
					t.Errorf("%s: success %d/%d (99.9%% CI [%.3f, %.3f]) with σ = %g, want 1/K = %.2f", a, s.Successes, s.Trials, lo, hi, tc.sigma, tc.wantLo)
				}
			}
		})
	}
}

func TestTopKEqualsPlainAtFullBatch(t *testing.T) {
	cfg := smallConfig()
	cfg.Sigma = 0.8
	g := testGame(t, cfg, 20, 6, 3, 400)
	if g.Config().TopK() != cfg.Steps {
		t.Fatalf("TopK at q = 1 is %d, want T = %d", g.Config().TopK(), cfg.Steps)
	}
	diff := 0
	for _, r := range runGame(t, g, 60, 2) {
		if r.Guess[AttackPrior] != r.Guess[AttackPriorTopK] {
			t.Fatalf("trial %d: prior guessed %d, prior-topk %d", r.Trial, r.Guess[AttackPrior], r.Guess[AttackPriorTopK])
		}
		if r.Guess[AttackPrior] != r.Target {
			diff++
		}
	}
	if diff == 0 {
		t.Fatal("σ = 0.8 gave no failures: the test would not distinguish anything")
	}
	for _, r := range runGame(t, g, 5, 1) {
		if !(r.PriorCosine > -1 && r.PriorCosine < 1) || r.PriorCosine == 0 {
			t.Fatalf("trial %d: mean prior cosine %v", r.Trial, r.PriorCosine)
		}
	}
}

func TestTopK(t *testing.T) {
	for _, tc := range []struct {
		q    float64
		T, k int
	}{{1, 100, 100}, {0.02, 100, 2}, {0.01, 100, 1}, {0.001, 100, 1}, {0.5, 3, 2}, {0.3, 10, 3}} {
		c := GameConfig{Q: tc.q, Steps: tc.T}
		if got := c.TopK(); got != tc.k {
			t.Errorf("q = %v, T = %d: TopK %d, want %d", tc.q, tc.T, got, tc.k)
		}
	}
}

// TestLogLikelihoodReference checks App. G's score against log-densities of the
// Gaussian mixture written out directly: Σ_t ln[(1−q)·N(ḡ_t; 0, s²I) + q·N(ḡ_t; c_t, s²I)]
// − ln N(ḡ_t; 0, s²I), s = σC.
func TestLogLikelihoodReference(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	const P, T, C = 6, 4, 0.3
	for _, q := range []float64{1, 0.3} {
		for _, sigma := range []float64{0.7, 2} {
			s := sigma * C
			dot := make([][]float64, T)
			nsq := make([][]float64, T)
			want := 0.0
			for t := 0; t < T; t++ {
				c := make([]float64, P)
				gb := make([]float64, P)
				for i := range c {
					c[i] = C * r.NormFloat64() / math.Sqrt(P)
					gb[i] = c[i] + s*r.NormFloat64()
				}
				d, n, l0, l1 := 0.0, 0.0, 0.0, 0.0
				for i := range c {
					d += c[i] * gb[i]
					n += c[i] * c[i]
					l0 += distuv.Normal{Mu: 0, Sigma: s}.LogProb(gb[i])
					l1 += distuv.Normal{Mu: c[i], Sigma: s}.LogProb(gb[i])
				}
				dot[t] = []float64{d / (C * C)}
				nsq[t] = []float64{n / (C * C)}
				want += math.Log((1-q)*math.Exp(l0)+q*math.Exp(l1)) - l0
			}
			got := logLikelihood(dot, nsq, 0, q, sigma)
			if math.Abs(got-want) > 1e-9*(1+math.Abs(want)) {
				t.Errorf("q = %v σ = %v: log-likelihood %v, reference %v", q, sigma, got, want)
			}
		}
	}
}

// When every prior gradient is clipped to norm exactly C and q = 1, the log-likelihood
// attack ranks like the prior-aware attack.
func TestLogLikEqualsPriorWhenAllClipped(t *testing.T) {
	cfg := smallConfig()
	cfg.Clip, cfg.Sigma = 1e-3, 0.8
	g := testGame(t, cfg, 20, 6, 3, 400)
	for _, r := range runGame(t, g, 40, 2) {
		if r.Guess[AttackPrior] != r.Guess[AttackLogLik] {
			t.Fatalf("trial %d: prior %d, loglik %d", r.Trial, r.Guess[AttackPrior], r.Guess[AttackLogLik])
		}
	}
}

func TestRunDeterministicAndResumable(t *testing.T) {
	cfg := smallConfig()
	cfg.Q, cfg.Sigma = 0.5, 1
	g := testGame(t, cfg, 20, 6, 3, 400)
	one := runGame(t, g, 10, 1)
	two := runGame(t, g, 10, 2)
	if !reflect.DeepEqual(one, two) {
		t.Fatal("results depend on the number of workers")
	}
	dir := t.TempDir()
	if _, err := g.Run(context.Background(), RunOptions{Trials: 4, Workers: 2, Out: dir}); err != nil {
		t.Fatal(err)
	}
	// a torn write after a crash
	f, err := os.OpenFile(filepath.Join(dir, TrialsFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"trial":7,"pri`)
	f.Close()
	ran := 0
	res, err := g.Run(context.Background(), RunOptions{Trials: 10, Workers: 2, Out: dir,
		Progress: func(int, *TrialResult) { ran++ }})
	if err != nil {
		t.Fatal(err)
	}
	if ran != 6 {
		t.Errorf("resumed run played %d trials, want 6", ran)
	}
	if !reflect.DeepEqual(res, one) {
		t.Fatal("resumed results differ from a fresh run")
	}
	loaded, err := LoadTrials(filepath.Join(dir, TrialsFile))
	if err != nil || len(loaded) != 10 {
		t.Fatalf("trials file holds %d trials (%v), want 10", len(loaded), err)
	}
	// a different game in the same directory is refused
	cfg.Sigma = 2
	g2 := testGame(t, cfg, 20, 6, 3, 400)
	if _, err := g2.Run(context.Background(), RunOptions{Trials: 2, Out: dir}); err == nil {
		t.Fatal("a different game reused the output directory")
	}
}

func TestGameConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*GameConfig)
	}{
		{"K < 2", func(c *GameConfig) { c.PriorSize = 1 }},
		{"q = 0", func(c *GameConfig) { c.Q = 0 }},
		{"q > 1", func(c *GameConfig) { c.Q = 1.5 }},
		{"q NaN", func(c *GameConfig) { c.Q = math.NaN() }},
		{"sigma < 0", func(c *GameConfig) { c.Sigma = -1 }},
		{"sigma Inf", func(c *GameConfig) { c.Sigma = math.Inf(1) }},
		{"clip 0", func(c *GameConfig) { c.Clip = 0 }},
		{"steps 0", func(c *GameConfig) { c.Steps = 0 }},
		{"lr NaN", func(c *GameConfig) { c.LR = math.NaN() }},
		{"gradient iters 0", func(c *GameConfig) { c.Gradient.Enabled = true; c.Gradient.Iters = 0 }},
	} {
		c := DefaultGameConfig()
		tc.mod(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
	if err := DefaultGameConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	m, _ := NewMLP(20, 6, 3)
	if _, err := NewGame(smallConfig(), synthPool(20, 20, 3, 1), func() Net { return m }, m.Init); err == nil {
		t.Error("pool smaller than |D₋| + K: no error")
	}
	bad := synthPool(100, 20, 3, 1)
	bad.X[5] = math.NaN()
	if _, err := NewGame(smallConfig(), bad, func() Net { return m }, m.Init); err == nil {
		t.Error("NaN pixel: no error")
	}
}

func TestClopperPearson(t *testing.T) {
	// closed forms at the ends: x = 0 → hi = 1 − (α/2)^{1/n}; x = n → lo = (α/2)^{1/n}
	for _, n := range []int{1, 10, 250} {
		lo, hi, err := ClopperPearson(0, n, 0.95)
		if err != nil || lo != 0 || math.Abs(hi-(1-math.Pow(0.025, 1/float64(n)))) > 1e-9 {
			t.Errorf("x = 0, n = %d: [%v, %v] %v", n, lo, hi, err)
		}
		lo, hi, err = ClopperPearson(n, n, 0.95)
		if err != nil || hi != 1 || math.Abs(lo-math.Pow(0.025, 1/float64(n))) > 1e-9 {
			t.Errorf("x = n = %d: [%v, %v] %v", n, lo, hi, err)
		}
	}
	// n = 2, x = 1: lo solves 1 − (1−p)² = α/2, hi solves p² = α/2
	lo, hi, _ := ClopperPearson(1, 2, 0.95)
	if math.Abs(lo-(1-math.Sqrt(0.975))) > 1e-9 || math.Abs(hi-math.Sqrt(0.975)) > 1e-9 {
		t.Errorf("x = 1, n = 2: [%v, %v]", lo, hi)
	}
	for _, tc := range [][2]int{{-1, 3}, {4, 3}, {0, 0}} {
		if _, _, err := ClopperPearson(tc[0], tc[1], 0.95); err == nil {
			t.Errorf("x = %d, n = %d: no error", tc[0], tc[1])
		}
	}
}

func TestGameTestAccuracy(t *testing.T) {
	cfg := smallConfig()
	cfg.Sigma, cfg.Steps, cfg.LR, cfg.Clip = 1e-3, 30, 5, 1
	m, _ := NewMLP(20, 6, 3)
	pool := synthPool(400, 20, 3, 8)
	g, err := NewGame(cfg, pool, func() Net { return m }, m.Init)
	if err != nil {
		t.Fatal(err)
	}
	eval := synthPool(300, 20, 3, 9)
	if err := g.SetEval(eval); err != nil {
		t.Fatal(err)
	}
	res := runGame(t, g, 2, 1)
	for _, r := range res {
		if r.TestAccuracy == nil || *r.TestAccuracy < 0.6 {
			t.Fatalf("trial %d: test accuracy %v after training on a separable task, want ≥ 0.6", r.Trial, r.TestAccuracy)
		}
	}
	// untrained (lr 0): about chance
	cfg.LR = 0
	g0, _ := NewGame(cfg, pool, func() Net { return m }, m.Init)
	if err := g0.SetEval(eval); err != nil {
		t.Fatal(err)
	}
	if a := *runGame(t, g0, 1, 1)[0].TestAccuracy; a > *res[0].TestAccuracy-0.1 {
		t.Fatalf("untrained accuracy %v not below trained %v", a, *res[0].TestAccuracy)
	}
	if err := g.SetEval(synthPool(10, 5, 3, 1)); err == nil {
		t.Fatal("evaluation pool of the wrong dimension accepted")
	}
}

// TestGameShapeSameInSpecAndConfig checks that a game's spec and its config reject
// the settings they share (q, T, K, |D₋|) with the same error, the first in the
// spec's declaration order, whichever of the two is validated.
func TestGameShapeSameInSpecAndConfig(t *testing.T) {
	for _, tc := range []struct {
		name            string
		q               float64
		steps, k, known int
		want            string
	}{
		{"q NaN", math.NaN(), 3, 4, 5, "sampling rate q = NaN outside (0, 1]"},
		{"q > 1", 1.5, 3, 4, 5, "sampling rate q = 1.5 outside (0, 1]"},
		{"steps 0", 1, 0, 4, 5, "steps 0 < 1"},
		{"K 1", 1, 3, 1, 5, "prior size 1 < 2 (the target must be guessed among ≥ 2 candidates)"},
		{"known -1", 1, 3, 4, -1, "known set size -1 < 0"},
		{"steps and known", 1, 0, 4, -1, "steps 0 < 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := DefaultGameSpec()
			s.Q, s.Steps, s.PriorSize, s.Known = tc.q, tc.steps, tc.k, tc.known
			c := DefaultGameConfig()
			c.Q, c.Steps, c.PriorSize, c.Known = tc.q, tc.steps, tc.k, tc.known
			es, ec := s.Validate(), c.Validate()
			if es == nil || ec == nil || es.Error() != ec.Error() || es.Error() != "attack game: "+tc.want {
				t.Fatalf("spec: %v; config: %v; want both %q", es, ec, "attack game: "+tc.want)
			}
		})
	}
}

// TestRunRefusesLockedOut: a game whose output directory another run holds fails
// with an error wrapping dirlock.ErrLocked and writes nothing there.
func TestRunRefusesLockedOut(t *testing.T) {
	g := testGame(t, smallConfig(), 20, 6, 3, 400)
	dir := t.TempDir()
	unlock, err := dirlock.Lock(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = g.Run(context.Background(), RunOptions{Trials: 2, Workers: 1, Out: dir})
	if !errors.Is(err, dirlock.ErrLocked) {
		t.Fatalf("Run in a held directory: %v, want ErrLocked", err)
	}
	if _, err := os.Stat(filepath.Join(dir, TrialsFile)); !os.IsNotExist(err) {
		t.Errorf("Run in a held directory wrote %s (%v)", TrialsFile, err)
	}
	unlock()
	if _, err := g.Run(context.Background(), RunOptions{Trials: 2, Workers: 1, Out: dir}); err != nil {
		t.Fatalf("after the holder unlocked: %v", err)
	}
}
