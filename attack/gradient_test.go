package attack

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"testing"
)

func TestGradientLossFiniteDifferences(t *testing.T) {
	m, _ := NewMLP(12, 5, 3)
	r := rand.New(rand.NewPCG(4, 4))
	const clip = 0.05
	obs := make([]Observation, 3)
	for i := range obs {
		th := m.Init(uint64(i + 1))
		for j := range th {
			th[j] += 0.3 * r.NormFloat64()
		}
		gb := make([]float64, m.NumParams())
		for j := range gb {
			gb[j] = 0.01 * r.NormFloat64()
		}
		obs[i] = Observation{Theta: th, GBar: gb}
	}
	x := make([]float64, m.D)
	for i := range x {
		x[i] = r.Float64()
	}
	dx := make([]float64, m.D)
	if _, err := GradientLoss(m, obs, x, 1, clip, dx); err != nil {
		t.Fatal(err)
	}
	const h = 1e-7
	for i := range x {
		xp := append([]float64(nil), x...)
		xp[i] += h
		fp, _ := GradientLoss(m, obs, xp, 1, clip, nil)
		xp[i] -= 2 * h
		fm, _ := GradientLoss(m, obs, xp, 1, clip, nil)
		fd := (fp - fm) / (2 * h)
		if math.Abs(fd-dx[i]) > 1e-5*(1+math.Abs(fd)) {
			t.Errorf("pixel %d: gradient %v, finite difference %v", i, dx[i], fd)
		}
	}
	if _, err := GradientLoss(m, obs, x[:3], 1, clip, nil); err == nil {
		t.Error("short input: no error")
	}
}

func TestGradientAttackRecoversTargetWithoutNoise(t *testing.T) {
	cfg := smallConfig()
	cfg.Sigma, cfg.Steps = 1e-6, 6
	cfg.Gradient = GradientConfig{Enabled: true, Iters: 300, Restarts: 2, LR: 0.02}
	g := testGame(t, cfg, 20, 6, 3, 400)
	res := runGame(t, g, 6, 2)
	st, err := Summarize(res)
	if err != nil {
		t.Fatal(err)
	}
	mse := 0.0
	for _, r := range res {
		mse += *r.GradientMSE / float64(len(res))
	}
	// the uniform-random start has MSE ≈ E(U − z)² ≈ 0.1–0.3 on these images
	if mse > 0.01 {
		t.Errorf("mean reconstruction MSE %.4f at σ ≈ 0, want < 0.01", mse)
	}
	if s := st[AttackGradient]; s.Successes != s.Trials {
		t.Errorf("nearest-prior-point success %d/%d at σ ≈ 0, want all", s.Successes, s.Trials)
	}
	// with huge noise the reconstruction carries no information
	cfg.Sigma = 1e4
	g = testGame(t, cfg, 20, 6, 3, 400)
	noisy := 0.0
	for _, r := range runGame(t, g, 6, 2) {
		noisy += *r.GradientMSE / 6
	}
	if noisy < 10*mse || noisy < 0.02 {
		t.Errorf("MSE %.4f at σ = 1e4 vs %.4f at σ ≈ 0: the attack does not depend on the noise", noisy, mse)
	}
}

func TestReconstructBadInput(t *testing.T) {
	m, _ := NewMLP(4, 3, 2)
	if _, err := Reconstruct(context.Background(), m, nil, 0, 0.1, DefaultGradientConfig(), 1); err == nil {
		t.Error("no observations: no error")
	}
	bad := DefaultGradientConfig()
	bad.Restarts = 0
	obs := []Observation{{Theta: m.Init(1), GBar: make([]float64, m.NumParams())}}
	if _, err := Reconstruct(context.Background(), m, obs, 0, 0.1, bad, 1); err == nil {
		t.Error("0 restarts: no error")
	}
}

// TestGradientReconstructionsSaved: every trial keeps its reconstruction, whose MSE to
// the target (recomputed here from the stored image) is the reported one, and a game
// with --out draws them (Hayes et al. Fig. 6a).
func TestGradientReconstructionsSaved(t *testing.T) {
	cfg := smallConfig()
	cfg.Sigma, cfg.Steps = 1e-6, 4
	cfg.Gradient = GradientConfig{Enabled: true, Iters: 40, Restarts: 1, LR: 0.02}
	g := testGame(t, cfg, 16, 4, 3, 200)
	for _, r := range runGame(t, g, 3, 1) {
		if len(r.Reconstruction) != 16 || r.GradientMSE == nil {
			t.Fatalf("trial %d: reconstruction of %d values", r.Trial, len(r.Reconstruction))
		}
		tg := g.pool.AppendImages(nil, r.Prior[r.Target], r.Prior[r.Target]+1)
		mse := 0.0
		for i, v := range r.Reconstruction {
			mse += (v - tg[i]) * (v - tg[i]) / 16
		}
		if math.Abs(mse-*r.GradientMSE) > 1e-12 {
			t.Errorf("trial %d: stored reconstruction's MSE %v, reported %v", r.Trial, mse, *r.GradientMSE)
		}
	}
	s := tinySpec(t)
	s.Attack, s.Trials, s.Steps = AttackGradient, 2, 2
	s.Gradient = GradientConfig{Iters: 5, Restarts: 1, LR: 0.02}
	rep, err := PlayGame(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Linf) != len(linfRhos) || rep.Linf[0].Trials != 2 {
		t.Fatalf("ℓ∞ success table %+v", rep.Linf)
	}
	if rep.ReconstructionsPNG == "" {
		t.Fatal("no reconstructions figure")
	}
	if st, err := os.Stat(rep.ReconstructionsPNG); err != nil || st.Size() < 1000 {
		t.Fatalf("figure %s: %v", rep.ReconstructionsPNG, err)
	}
}
