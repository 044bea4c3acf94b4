package attack

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tinySpec is a game on the embedded MNIST small enough for tests.
func tinySpec(t *testing.T) GameSpec {
	s := DefaultGameSpec()
	s.Known, s.Steps, s.PriorSize, s.Trials, s.Workers, s.Epsilon, s.Seed = 20, 3, 4, 5, 2, 8, 7
	s.Out = t.TempDir()
	return s
}

func TestGameSpecValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*GameSpec)
		want string // "" = valid
	}{
		{"default", func(*GameSpec) {}, ""},
		{"sigma 0 given", func(s *GameSpec) { s.UseSigma, s.Sigma, s.Epsilon = true, 0, -1 }, ""},
		{"epsilon 0", func(s *GameSpec) { s.Epsilon = 0 }, "epsilon"},
		{"epsilon inf", func(s *GameSpec) { s.Epsilon = math.Inf(1) }, "epsilon"},
		{"sigma negative", func(s *GameSpec) { s.UseSigma, s.Sigma = true, -1 }, "sigma"},
		{"delta 1", func(s *GameSpec) { s.Delta = 1 }, "delta"},
		{"q 0", func(s *GameSpec) { s.Q = 0 }, "sampling rate"},
		{"steps 0", func(s *GameSpec) { s.Steps = 0 }, "steps"},
		{"K 1", func(s *GameSpec) { s.PriorSize = 1 }, "prior size"},
		{"known -1", func(s *GameSpec) { s.Known = -1 }, "known"},
		{"trials 0", func(s *GameSpec) { s.Trials = 0 }, "trials"},
		{"attack", func(s *GameSpec) { s.Attack = "magic" }, "unknown attack"},
		{"transcripts", func(s *GameSpec) { s.RecordTranscripts = true }, "output directory"},
		{"tuning grid", func(s *GameSpec) { s.TuneLR = []float64{0.1, 1, 10} }, ""},
		{"tuning lr 0", func(s *GameSpec) { s.TuneLR = []float64{0, 1} }, "positive"},
		{"tuning lr negative", func(s *GameSpec) { s.TuneLR = []float64{-1} }, "positive"},
		{"tuning lr nan", func(s *GameSpec) { s.TuneLR = []float64{math.NaN()} }, "positive"},
		{"tuning lr inf", func(s *GameSpec) { s.TuneLR = []float64{math.Inf(1)} }, "positive"},
		{"tuning lr twice", func(s *GameSpec) { s.TuneLR = []float64{1, 2, 1} }, "twice"},
		{"no tuning trials", func(s *GameSpec) { s.TuneLR, s.TuneTrials = []float64{1}, 0 }, "tuning trials"},
		{"trials overlap tuning", func(s *GameSpec) { s.TuneLR, s.Trials = []float64{1}, TuneFirstTrial+1 }, "overlap"},
		{"no grid, no tuning trials needed", func(s *GameSpec) { s.TuneTrials = 0 }, ""},
		{"inputs symmetric", func(s *GameSpec) { s.Inputs = InputsSymmetric }, ""},
		{"inputs unit", func(s *GameSpec) { s.Inputs = InputsUnit }, ""},
		{"inputs unknown", func(s *GameSpec) { s.Inputs = "pm1" }, "input range"},
		{"inputs engine model", func(s *GameSpec) { s.Inputs, s.Model = InputsSymmetric, "linear" }, "hand mlp only"},
		// Several faults: the first field in declaration order is named, every time.
		{"first fault", func(s *GameSpec) { s.Q, s.Delta, s.Epsilon = math.NaN(), math.NaN(), math.Inf(1) }, "epsilon"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := DefaultGameSpec()
			tc.mod(&s)
			err := s.Validate()
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("error %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

// TestPlayGameReport plays a tiny game and checks the report against the trials it
// kept on disk (a second reading of the same run) and the bounds of its σ.
func TestPlayGameReport(t *testing.T) {
	spec := tinySpec(t)
	var events []GameProgress
	spec.Progress = func(p GameProgress) { events = append(events, p) }
	r, err := PlayGame(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != spec.Trials || events[len(events)-1].Done != spec.Trials || events[0].Epsilon != r.Epsilon {
		t.Fatalf("progress events %+v", events)
	}
	if math.Abs(r.Epsilon-8) > 1e-3 || !(r.Sigma > 0) {
		t.Fatalf("σ solved for ε = 8 gives ε = %v (σ = %v)", r.Epsilon, r.Sigma)
	}
	b, err := ComputeBounds(BoundsRequest{Q: 1, Sigma: r.Sigma, Steps: spec.Steps, PriorSize: spec.PriorSize, Delta: spec.Delta, Samples: spec.ReRoSamples, Seed: spec.Seed})
	if err != nil {
		t.Fatal(err)
	}
	if r.Gamma != b.Gamma || r.GammaRDP != b.GammaRDP || r.Kappa != 0.25 || !r.GammaExact {
		t.Fatalf("bounds %+v, want %+v", r, b)
	}
	so, _ := OrthogonalSuccess(r.Sigma, spec.Steps, spec.PriorSize)
	if r.SuccessOrthogonal == nil || *r.SuccessOrthogonal != so {
		t.Fatalf("orthogonal success %v, want %v", r.SuccessOrthogonal, so)
	}
	trials, err := LoadTrials(filepath.Join(spec.Out, TrialsFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(trials) != spec.Trials || r.Trials != spec.Trials {
		t.Fatalf("%d trials on disk, report says %d", len(trials), r.Trials)
	}
	succ, loss, acc := 0, 0.0, 0.0
	for _, tr := range trials {
		if tr.Success[AttackPrior] {
			succ++
		}
		loss += tr.FinalLoss
		acc += *tr.TestAccuracy
	}
	n := float64(spec.Trials)
	if r.Successes != succ || r.SuccessRate != float64(succ)/n || r.Attacks[AttackPrior].Successes != succ {
		t.Fatalf("successes %d (rate %v), trials file says %d", r.Successes, r.SuccessRate, succ)
	}
	if math.Abs(r.FinalLoss-loss/n) > 1e-14 || r.TestAccuracy == nil || math.Abs(*r.TestAccuracy-acc/n) > 1e-14 || r.GradientMSE != nil {
		t.Fatalf("means: loss %v want %v, accuracy %v want %v", r.FinalLoss, loss/n, r.TestAccuracy, acc/n)
	}
	// Resuming reruns nothing and reports the same.
	again, err := PlayGame(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if again.Successes != r.Successes || again.FinalLoss != r.FinalLoss {
		t.Fatalf("resumed game differs: %+v vs %+v", again, r)
	}
}

// TestReplayMatchesGame records transcripts and checks that the adversary's replay
// from the file and the dataset alone guesses what the game's own attack guessed.
func TestReplayMatchesGame(t *testing.T) {
	spec := tinySpec(t)
	spec.Trials, spec.RecordTranscripts = 2, true
	if _, err := PlayGame(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	trials, err := LoadTrials(filepath.Join(spec.Out, TrialsFile))
	if err != nil {
		t.Fatal(err)
	}
	for k := 0; k < spec.Trials; k++ {
		r, err := Replay(filepath.Join(spec.Out, "transcripts", fmt.Sprintf("trial-%06d.dpft", k)), "")
		if err != nil {
			t.Fatal(err)
		}
		tr := trials[k]
		if !r.Complete || r.Steps != spec.Steps || len(r.Prior) != spec.PriorSize {
			t.Fatalf("replay %d: %+v", k, r)
		}
		for _, a := range []string{AttackPrior, AttackPriorTopK, AttackLogLik} {
			if r.Guess[a] != tr.Guess[a] || r.GuessIndex[a] != r.Prior[tr.Guess[a]] {
				t.Fatalf("trial %d %s: replay guesses %d (sample %d), the game %d", k, a, r.Guess[a], r.GuessIndex[a], tr.Guess[a])
			}
		}
	}
	if _, err := Replay(filepath.Join(spec.Out, "nonexistent.dpft"), ""); err == nil {
		t.Fatal("missing transcript accepted")
	}
}

func TestSweepSpecValidate(t *testing.T) {
	base := DefaultGameSpec()
	base.Out = "x"
	for _, tc := range []struct {
		param  string
		values []float64
		sigma  bool
		out    string
		want   string
	}{
		{SweepEpsilon, []float64{1, 10}, false, "x", ""},
		{SweepEpsilon, []float64{1}, true, "x", "fixed sigma"},
		{SweepEpsilon, []float64{0}, false, "x", "positive"},
		{SweepPriorSize, []float64{2, 5}, false, "x", ""},
		{SweepPriorSize, []float64{2.5}, false, "x", "integer"},
		{SweepPriorSize, []float64{1}, false, "x", "integer ≥ 2"},
		{SweepQ, []float64{0.5, 1}, false, "x", ""},
		{SweepQ, []float64{1.5}, false, "x", "outside"},
		{SweepQ, []float64{math.NaN()}, false, "x", "not finite"},
		{SweepQ, nil, false, "x", "no values"},
		{SweepQ, []float64{1}, false, "", "output directory"},
		{"lr", []float64{1}, false, "x", "unknown parameter"},
	} {
		g := base
		g.UseSigma, g.Out = tc.sigma, tc.out
		err := SweepSpec{Param: tc.param, Values: tc.values, Game: g}.Validate()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s %v: error %v, want %q", tc.param, tc.values, err, tc.want)
		}
	}
}

// TestSweepFiles sweeps K and checks the written JSON (the report itself) and CSV
// (one row per value and prior-aware attack, the report's numbers).
func TestSweepFiles(t *testing.T) {
	spec := SweepSpec{Param: SweepPriorSize, Values: []float64{2, 3}, Game: tinySpec(t)}
	spec.Game.Trials = 3
	sr, err := Sweep(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if len(sr.Results) != 2 || sr.Results[0].PriorSize != 2 || sr.Results[1].PriorSize != 3 || sr.Results[1].Out != filepath.Join(spec.Game.Out, "k=3") {
		t.Fatalf("results %+v", sr.Results)
	}
	b, err := os.ReadFile(sr.JSON)
	if err != nil {
		t.Fatal(err)
	}
	var back SweepReport
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Sweep != "k" || len(back.Results) != 2 || back.Results[1].Gamma != sr.Results[1].Gamma {
		t.Fatalf("sweep.json: %+v", back)
	}
	rows := readCSVFile(t, sr.CSV)
	if len(rows) != 1+2*3 || strings.Join(rows[0], ",") != strings.Join(SweepCSVHeader(), ",") {
		t.Fatalf("CSV: %v", rows)
	}
	// Rows are sorted by attack within a value: loglik, prior, prior-topk.
	if rows[2][0] != "k" || rows[2][1] != "2" || rows[2][2] != AttackPrior || rows[2][17] != "2" {
		t.Fatalf("CSV row %v", rows[2])
	}
}
