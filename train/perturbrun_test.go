package train

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
)

// perturbScheduleEpochs against hand-computed values: the thesis's Tables B.1/B.2
// schedule (200, −50, ≥ 20), no decay, a floor that is reached exactly and one that
// cuts a step short, a decay larger than the whole range, and a decay so large that
// r·D would overflow (and a large r with each).
func TestPerturbScheduleEpochs(t *testing.T) {
	cases := []struct {
		name    string
		e, d, m int
		want    []int // refreshes r = 0, 1, …
		rLarge  int   // a large r (0: none) …
		atLarge int   // … and its epochs
	}{
		{"thesis B.1/B.2", 200, 50, 20, []int{200, 150, 100, 50, 20, 20, 20}, 1 << 40, 20},
		{"cli test", 3, 1, 1, []int{3, 2, 1, 1, 1}, 0, 0},
		{"no decay", 10, 0, 1, []int{10, 10, 10}, 1 << 50, 10},
		{"floor reached exactly", 10, 3, 4, []int{10, 7, 4, 4}, 0, 0},
		{"floor cuts a step", 10, 3, 2, []int{10, 7, 4, 2, 2}, 0, 0},
		{"decay beyond the range", 5, 100, 3, []int{5, 3, 3}, 0, 0},
		{"min equals epochs", 4, 2, 4, []int{4, 4, 4}, 0, 0},
		{"huge decay", 10, math.MaxInt / 2, 1, []int{10, 1, 1}, math.MaxInt / 3, 1},
		{"one epoch", 1, 0, 1, []int{1, 1}, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for r, want := range c.want {
				if got := perturbScheduleEpochs(c.e, c.d, c.m, r); got != want {
					t.Errorf("refresh %d: %d epochs, want %d", r, got, want)
				}
			}
			if c.rLarge > 0 {
				if got := perturbScheduleEpochs(c.e, c.d, c.m, c.rLarge); got != c.atLarge {
					t.Errorf("refresh %d: %d epochs, want %d", c.rLarge, got, c.atLarge)
				}
			}
		})
	}
}

// checkEpoch fails unless batches is one epoch over n samples in batches of b: ⌈n/b⌉
// consecutive batches, all of size b but the last (n − (⌈n/b⌉−1)·b), every index in
// 0…n−1 exactly once. It returns the epoch's order.
func checkEpoch(t *testing.T, batches [][]int, n, b int) []int {
	t.Helper()
	if want := (n + b - 1) / b; len(batches) != want {
		t.Fatalf("%d batches, want ⌈%d/%d⌉ = %d", len(batches), n, b, want)
	}
	seen := make([]int, n)
	var order []int
	for i, bt := range batches {
		want := b
		if i == len(batches)-1 {
			want = n - (len(batches)-1)*b
		}
		if len(bt) != want {
			t.Fatalf("batch %d has %d samples, want %d", i, len(bt), want)
		}
		for _, j := range bt {
			if j < 0 || j >= n {
				t.Fatalf("batch %d: index %d outside 0…%d", i, j, n-1)
			}
			seen[j]++
			order = append(order, j)
		}
	}
	for j, k := range seen {
		if k != 1 {
			t.Fatalf("sample %d seen %d times in the epoch, want once", j, k)
		}
	}
	return order
}

// An epoch covers every public sample exactly once, in consecutive batches of b (the
// last one smaller), one batch of all n when b ≥ n; two epochs are two permutations.
func TestPerturbEpochBatchesPartition(t *testing.T) {
	for _, c := range []struct{ n, b int }{{10, 3}, {12, 4}, {10, 10}, {7, 64}, {1, 1}, {100, 32}, {5, 1}} {
		rng := rand.New(rand.NewPCG(3, uint64(c.n*100+c.b)))
		first := checkEpoch(t, epochBatches(rng, c.n, c.b), c.n, c.b)
		second := checkEpoch(t, epochBatches(rng, c.n, c.b), c.n, c.b)
		if c.n >= 5 && slices.Equal(first, second) {
			t.Errorf("n=%d b=%d: the second epoch repeats the first's order %v", c.n, c.b, first)
		}
	}
}

// refreshPlan: in the epoch mode refresh r runs perturbScheduleEpochs(r) epochs of
// ⌈n/b⌉ steps, its batches epoch after epoch each a partition of the public split, and
// records the epochs and steps; in the fixed-steps mode it runs perturb_steps batches
// of b distinct samples and records nothing (the result stays that of earlier runs).
func TestPerturbRefreshPlan(t *testing.T) {
	const n, b = 10, 4 // 3 steps per epoch: 4, 4, 2
	ps := &perturbState{cfg: TuningConfig{PerturbNet: true, PretrainPublic: 0.5, PerturbEpochs: 3, PerturbEpochDecay: 1, PerturbEvery: 2}.perturbDefaults(),
		rng: rand.New(rand.NewPCG(1, 2))}
	for _, c := range []struct{ step, epochs int }{{0, 3}, {2, 2}, {4, 1}, {6, 1}} {
		rec := PerturbRefresh{}
		steps, next := ps.refreshPlan(c.step, n, b, &rec)
		if steps != 3*c.epochs || rec.Epochs != c.epochs || rec.AdamSteps != steps {
			t.Fatalf("step %d: %d steps, record %+v; want %d epochs of 3 steps", c.step, steps, rec, c.epochs)
		}
		for e := 0; e < c.epochs; e++ {
			checkEpoch(t, [][]int{next(), next(), next()}, n, b)
		}
	}
	fixed := &perturbState{cfg: TuningConfig{PerturbNet: true, PretrainPublic: 0.5, PerturbSteps: 5}.perturbDefaults(), rng: rand.New(rand.NewPCG(1, 2))}
	rec := PerturbRefresh{}
	steps, next := fixed.refreshPlan(3, n, b, &rec)
	if steps != 5 || rec.Epochs != 0 || rec.AdamSteps != 0 {
		t.Fatalf("fixed steps: %d steps, record %+v; want 5 and no schedule", steps, rec)
	}
	for i := 0; i < steps; i++ {
		idx := next()
		if len(idx) != b || len(slices.Compact(slices.Sorted(slices.Values(idx)))) != b {
			t.Fatalf("fixed-steps batch %v: want %d distinct samples", idx, b)
		}
	}
}

// The epoch-schedule fields are checked: set both modes, a negative value, a floor
// above the start, decay/floor without epochs, any of them without perturb_net.
func TestPerturbEpochsValidation(t *testing.T) {
	on := TuningConfig{PretrainPublic: 0.5, PerturbNet: true}
	with := func(f func(*TuningConfig)) TuningConfig {
		c := on
		f(&c)
		return c
	}
	cases := []struct {
		name string
		tc   TuningConfig
		want string // "" = accepted
	}{
		{"thesis schedule", with(func(c *TuningConfig) { c.PerturbEpochs, c.PerturbEpochDecay, c.PerturbMinEpochs = 200, 50, 20 }), ""},
		{"epochs alone", with(func(c *TuningConfig) { c.PerturbEpochs = 3 }), ""},
		{"min equals epochs", with(func(c *TuningConfig) { c.PerturbEpochs, c.PerturbMinEpochs = 3, 3 }), ""},
		{"steps and epochs", with(func(c *TuningConfig) { c.PerturbEpochs, c.PerturbSteps = 3, 5 }), "set one of them"},
		{"never-trained steps and epochs", with(func(c *TuningConfig) { c.PerturbEpochs, c.PerturbSteps = 3, -1 }), "set one of them"},
		{"negative epochs", with(func(c *TuningConfig) { c.PerturbEpochs = -2 }), "must be ≥ 0"},
		{"negative decay", with(func(c *TuningConfig) { c.PerturbEpochs, c.PerturbEpochDecay = 3, -1 }), "must be ≥ 0"},
		{"negative min", with(func(c *TuningConfig) { c.PerturbEpochs, c.PerturbMinEpochs = 3, -1 }), "must be ≥ 0"},
		{"min above epochs", with(func(c *TuningConfig) { c.PerturbEpochs, c.PerturbMinEpochs = 3, 4 }), "perturb_min_epochs = 4 must be ≤ perturb_epochs = 3"},
		{"decay without epochs", with(func(c *TuningConfig) { c.PerturbEpochDecay = 1 }), "set perturb_epochs > 0"},
		{"min without epochs", with(func(c *TuningConfig) { c.PerturbMinEpochs = 1 }), "set perturb_epochs > 0"},
		{"epochs without the net", TuningConfig{PretrainPublic: 0.5, PerturbEpochs: 3}, "need perturb_net"},
		{"decay without the net", TuningConfig{PretrainPublic: 0.5, PerturbEpochDecay: 1}, "need perturb_net"},
		{"min without the net", TuningConfig{PretrainPublic: 0.5, PerturbMinEpochs: 1}, "need perturb_net"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := tuningConfig()
			err := c.tc.validate(cfg)
			if c.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

// A run under the epoch schedule records each refresh's epochs and Adam steps
// (perturb_every 2: refreshes r = 0, 1, 2 before steps 1, 3, 5 run 3, 2, 1 epochs of
// ⌈60/16⌉ = 4 steps); a run killed mid-way has run exactly those Adam steps (its
// checkpointed AdamW step count) and, resumed, continues the schedule to the result of
// the uninterrupted run.
func TestPerturbEpochScheduleRunAndResume(t *testing.T) {
	cfg := tuningConfig()
	cfg.FILCoords = 2
	cfg.Tuning = TuningConfig{PretrainPublic: 0.5, PretrainSteps: 30, PerturbNet: true, PerturbEpochs: 3, PerturbEpochDecay: 1,
		PerturbBatch: 16, PerturbHidden: 4, PerturbLambda: 10, PerturbEvery: 2}
	data := toyData(120, 30, 6, 3, 4) // 60 public samples
	full := t.TempDir()
	if _, err := Run(context.Background(), cfg, Options{Out: full, Model: smallNet(t), Data: data}); err != nil {
		t.Fatal(err)
	}
	r := mustRead(t, full).Tuning.Perturb
	wantEpochs := []int{3, 2, 1}
	if r == nil || len(r.Series) != len(wantEpochs) || r.Epochs != 3 || r.EpochDecay != 1 || r.MinEpochs != 1 || r.Steps != 0 || r.AdamSteps != 24 {
		t.Fatalf("perturb result %+v: want 3 refreshes of the schedule 3/1/1, 24 Adam steps", r)
	}
	for i, s := range r.Series {
		if s.Step != 1+2*i || s.Epochs != wantEpochs[i] || s.AdamSteps != 4*wantEpochs[i] {
			t.Errorf("refresh %d: step %d, %d epochs, %d Adam steps; want step %d, %d epochs, %d steps",
				i, s.Step, s.Epochs, s.AdamSteps, 1+2*i, wantEpochs[i], 4*wantEpochs[i])
		}
	}

	// Stopped after private steps 1–3: refreshes before steps 1 and 3 (12 + 8 Adam steps).
	killed := runKilledAt(t, cfg, Options{Model: smallNet(t), Data: data, CheckpointEvery: 1}, 3)
	ck, err := loadCheckpoint(killed)
	if err != nil {
		t.Fatal(err)
	}
	if ck.Cur == nil || ck.Cur.Perturb == nil || ck.Cur.Step == 0 || ck.Cur.Step >= cfg.Steps {
		t.Fatalf("checkpoint mid-run with g_φ state: %+v", ck.Cur)
	}
	wantT, wantN := 0, 0
	for step := 0; step < ck.Cur.Step; step += 2 {
		wantT += 4 * wantEpochs[step/2]
		wantN++
	}
	if p := ck.Cur.Perturb; p.AdamT != wantT || len(p.Result.Series) != wantN {
		t.Fatalf("checkpoint at step %d: %d Adam steps and %d refreshes, want %d and %d", ck.Cur.Step, p.AdamT, len(p.Result.Series), wantT, wantN)
	}
	if _, err := Run(context.Background(), cfg, Options{Out: killed, Model: smallNet(t), Data: data, Resume: true}); err != nil {
		t.Fatal(err)
	}
	a, b := readComparable(t, full), readComparable(t, killed)
	if string(a) != string(b) {
		t.Fatalf("resumed epoch-schedule run differs:\n%s\nvs\n%s", a, b)
	}
}

// runKilledAt runs cfg with opt into a fresh directory, cancelling it once private
// step stop has run (as a killed run: it checkpoints and stops), and returns the
// directory.
func runKilledAt(t *testing.T, cfg Config, opt Options, stop int) string {
	t.Helper()
	opt.Out = t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opt.Progress = func(e Event) {
		if e.Step == stop {
			cancel()
		}
	}
	if _, err := Run(ctx, cfg, opt); !errors.Is(err, context.Canceled) {
		t.Fatalf("run stopped at step %d: %v, want context.Canceled", stop, err)
	}
	return opt.Out
}

// TestPerturbRestandardise checks perturb_restandardise: the input scales recorded
// at each refresh stay those of the first refresh by default, are refitted (and move
// with θ_t) with the option, are 1 without standardisation; the option excludes
// perturb_no_standardise and a killed-and-resumed run gives the same result.
func TestPerturbRestandardise(t *testing.T) {
	base := tuningConfig()
	base.FILCoords = 2
	base.Tuning = TuningConfig{PretrainPublic: 0.5, PretrainSteps: 30, PerturbNet: true, PerturbSteps: 2,
		PerturbBatch: 16, PerturbHidden: 4, PerturbLambda: 10, PerturbEvery: 2}
	data := toyData(120, 30, 6, 3, 4)
	series := func(tc TuningConfig) []PerturbRefresh {
		cfg := base
		cfg.Tuning = tc
		dir := t.TempDir()
		if _, err := Run(context.Background(), cfg, Options{Out: dir, Model: smallNet(t), Data: data}); err != nil {
			t.Fatal(err)
		}
		s := mustRead(t, dir).Tuning.Perturb.Series
		if len(s) < 3 {
			t.Fatalf("%d refreshes, want ≥ 3", len(s))
		}
		return s
	}
	def := series(base.Tuning)
	for i, r := range def {
		if r.InputScale != def[0].InputScale || r.InputScale[1] == 1 || r.InputScale[1] <= 0 {
			t.Fatalf("default: refresh %d input scale %v, refresh 1 %v: want one fitted scale per repeat", i, r.InputScale, def[0].InputScale)
		}
	}
	re := base.Tuning
	re.PerturbRestd = true
	rs := series(re)
	if rs[0].InputScale != def[0].InputScale {
		t.Fatalf("restandardise: first refresh scale %v, want the default's %v (same first batch)", rs[0].InputScale, def[0].InputScale)
	}
	moved := 0
	for i := 1; i < len(rs); i++ {
		if rs[i].InputScale[1] != rs[i-1].InputScale[1] {
			moved++
		}
	}
	if moved == 0 {
		t.Fatalf("restandardise: the gradient block's scale never changed over %d refreshes: %+v", len(rs), rs)
	}
	raw := base.Tuning
	raw.PerturbNoStd = true
	for i, r := range series(raw) {
		if r.InputScale != [2]float64{1, 1} {
			t.Fatalf("no standardisation: refresh %d scale %v, want 1, 1", i, r.InputScale)
		}
	}
	both := base
	both.Tuning = re
	both.Tuning.PerturbNoStd = true
	if _, err := Run(context.Background(), both, Options{Out: t.TempDir(), Model: smallNet(t), Data: data}); err == nil || !strings.Contains(err.Error(), "exclude each other") {
		t.Fatalf("no_standardise with restandardise: err = %v", err)
	}
	cfg := base
	cfg.Tuning = re
	full := t.TempDir()
	if _, err := Run(context.Background(), cfg, Options{Out: full, Model: smallNet(t), Data: data}); err != nil {
		t.Fatal(err)
	}
	killed := runKilledAt(t, cfg, Options{Model: smallNet(t), Data: data, CheckpointEvery: 1}, 3)
	if _, err := Run(context.Background(), cfg, Options{Out: killed, Model: smallNet(t), Data: data, Resume: true}); err != nil {
		t.Fatal(err)
	}
	if a, b := readComparable(t, full), readComparable(t, killed); string(a) != string(b) {
		t.Fatalf("resumed restandardise run differs:\n%s\nvs\n%s", a, b)
	}
}

// countdownCtx is a context whose Err turns to context.Canceled at its n-th call: an
// interruption at a chosen point of the run's work, the same on every machine.
type countdownCtx struct {
	context.Context
	n atomic.Int64
}

func (c *countdownCtx) Err() error {
	if c.n.Add(-1) < 0 {
		return context.Canceled
	}
	return nil
}

// TestPerturbRefreshInterrupted: an interruption inside a g_φ refresh stops the
// refresh between Adam steps (the error says where and wraps context.Canceled), keeps
// the checkpoint taken before that private step (the half-trained g_φ is not saved),
// and resuming from it ends with the uninterrupted run's result and diagnostics, byte
// for byte. The run's Err calls: one before each private step, one per Adam step.
func TestPerturbRefreshInterrupted(t *testing.T) {
	const adam = 6
	cfg := diagConfig(adam)
	data := toyData(120, 30, 6, 3, 4)
	full, killed := t.TempDir(), t.TempDir()
	if _, err := Run(context.Background(), cfg, Options{Out: full, Model: smallNet(t), Data: data, PerturbDiag: 5}); err != nil {
		t.Fatal(err)
	}
	ctx := &countdownCtx{Context: context.Background()}
	ctx.n.Store(1 + adam + 1 + 2) // step 1, its refresh, step 2, two Adam steps of its refresh
	var logs []string
	_, err := Run(ctx, cfg, Options{Out: killed, Model: smallNet(t), Data: data, PerturbDiag: 5, CheckpointEvery: 1,
		Logf: func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) }})
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "before private step 2 stopped after 2 of 6 Adam steps") {
		t.Fatalf("interrupted run: %v", err)
	}
	if !slices.ContainsFunc(logs, func(l string) bool {
		return strings.Contains(l, "interrupted inside step 2; the checkpoint of step 1 is kept")
	}) {
		t.Errorf("log %q lacks the interruption", logs)
	}
	ck, err := loadCheckpoint(killed)
	if err != nil || ck == nil || ck.Cur == nil || ck.Cur.Repeat != 0 || ck.Cur.Step != 1 {
		t.Fatalf("checkpoint of the interrupted run: %v %+v", err, ck)
	}
	if _, err := Run(context.Background(), cfg, Options{Out: killed, Model: smallNet(t), Data: data, Resume: true}); err != nil {
		t.Fatal(err)
	}
	if a, b := readComparable(t, full), readComparable(t, killed); !bytes.Equal(a, b) {
		t.Fatalf("resumed run differs:\n%s\nvs\n%s", a, b)
	}
	want := dirEntries(t, filepath.Join(full, PerturbDiagDir))
	for _, name := range want {
		a, errA := os.ReadFile(filepath.Join(full, PerturbDiagDir, name))
		b, errB := os.ReadFile(filepath.Join(killed, PerturbDiagDir, name))
		if errA != nil || errB != nil || !bytes.Equal(a, b) {
			t.Fatalf("diagnostics %s differ after the resume (%v, %v)", name, errA, errB)
		}
	}
}
