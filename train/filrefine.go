package train

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sort"

	"github.com/dpfil/dpfil/accounting"
	"github.com/dpfil/dpfil/data"
	"github.com/dpfil/dpfil/internal/stats"
	"github.com/dpfil/dpfil/train/fil"
)

// The worst-sample FIL estimate without the upward bias of a noisy maximum.
//
// The maximum over N unbiased but noisy per-sample dFIL estimates (k random input
// coordinates per sample and step) is biased upward: the largest estimate is mostly
// the one with the largest error. RefineFIL removes that bias in two stages:
//
//  1. screen: every sample's dFIL, accumulated over every step it took part in (no
//     member subsampling: fil_rate 1), from k random coordinates (the run's own
//     dfil.npy);
//  2. refine: the m samples with the largest screen values recomputed exactly (the
//     trace over all d input coordinates, as fil_exact computes it) at the
//     parameters replayed from the run's recorded transcripts.
//
// The reported maximum is the largest exact value among the m: it is the exact
// maximum whenever the true argmax is among the screened top m, and otherwise lower
// than it (never biased upward). With R ≥ 2 repeats (each with its transcript) the
// per-sample dFIL is the mean over repeats (the paper's Monte-Carlo estimate) and
// the maximum gets a percentile bootstrap interval over the repeats.

// Trajectory is one repeat's training trajectory, replayed: Replay calls each, in
// step order, with θ_t (the float64 master parameters before step t's update) and
// step t's batch (training-set indices). train/transcript replays it from a
// recorded transcript.
type Trajectory interface {
	Replay(each func(t int, theta []float64, batch []int) error) error
}

// RefineRequest asks for the two-stage worst-sample FIL estimate of a finished run.
type RefineRequest struct {
	// Run is the run directory: result.json (config) and dfil.npy (the screen).
	Run string
	// Trajectories holds one replayed trajectory per repeat of the run, in order.
	Trajectories []Trajectory
	// Top is m, the number of screened samples refined exactly (default 100).
	Top int
	// Bootstrap is the number of bootstrap resamples over repeats (default 2000;
	// used when the run has ≥ 2 repeats).
	Bootstrap int
	// Seed seeds the bootstrap resampling.
	Seed uint64
	// Data, when set, is the run's dataset (else loaded from the run's config).
	Data *data.Split
	// Logf, if set, receives progress messages.
	Logf func(format string, args ...any)
}

// RefinedSample is one of the refined samples.
type RefinedSample struct {
	Index      int       `json:"index"`       // training-set index
	ScreenRank int       `json:"screen_rank"` // 1 = largest screen value
	Screen     float64   `json:"screen"`      // screen dFIL (the run's dfil.npy)
	Exact      float64   `json:"exact"`       // exact dFIL, mean over repeats
	PerRepeat  []float64 `json:"exact_per_repeat"`
	MSEBound   float64   `json:"mse_bound"` // 1/exact (Theorem 2)
}

// Interval is a confidence interval.
type Interval struct {
	Level     float64 `json:"level"`
	Lo        float64 `json:"lo"`
	Hi        float64 `json:"hi"`
	Resamples int     `json:"resamples"`
	Over      string  `json:"over"`
}

// RefineReport is RefineFIL's answer.
type RefineReport struct {
	Run string `json:"run"`
	// Estimator names the two-stage estimator behind Max, e.g. "screen k=4, all
	// members, R=1 run; exact top-100 replayed from the transcript".
	Estimator       string `json:"estimator"`
	ScreenEstimator string `json:"screen_estimator"` // how the run's dfil.npy was computed
	N               int    `json:"n"`
	InputDim        int    `json:"input_dim"`
	Repeats         int    `json:"repeats"`
	Top             int    `json:"top"`
	RefinedMax
	// ScreenMax is the largest screen value (the biased estimate refine replaces),
	// ScreenThreshold the m-th largest (a sample outside the refined set was below it).
	ScreenMax       float64 `json:"screen_max"`
	ScreenArgMax    int     `json:"screen_argmax"`
	ScreenThreshold float64 `json:"screen_threshold"`
	// ScreenMaxExact is the exact value of the screen's argmax.
	ScreenMaxExact float64 `json:"screen_max_exact"`
	// Refined lists the m samples by decreasing exact dFIL.
	Refined []RefinedSample `json:"refined"`
	Note    string          `json:"note"`
}

// RefineFIL computes the two-stage worst-sample FIL estimate of a finished run
// (see Trajectory and RefineReport).
func RefineFIL(req RefineRequest) (*RefineReport, error) {
	if req.Run == "" {
		return nil, errors.New("fil refine: no run directory")
	}
	if req.Top == 0 {
		req.Top = 100
	}
	if req.Top < 1 {
		return nil, fmt.Errorf("fil refine: top = %d must be ≥ 1", req.Top)
	}
	if req.Bootstrap == 0 {
		req.Bootstrap = 2000
	}
	if req.Bootstrap < 100 {
		return nil, fmt.Errorf("fil refine: bootstrap = %d resamples must be ≥ 100", req.Bootstrap)
	}
	logf := req.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	res, err := ReadResult(req.Run)
	if err != nil {
		return nil, fmt.Errorf("fil refine: %w", explainNoResult(req.Run, err))
	}
	cfg := res.Config
	if !res.FIL || res.DFILPath == "" {
		return nil, fmt.Errorf("fil refine: run %s accounted no FIL (fil_coords = 0): there is no screen to refine", req.Run)
	}
	if res.FILRate > 0 && res.FILRate < 1 {
		return nil, fmt.Errorf("fil refine: run %s subsampled the FIL members (fil_rate = %g): the screen must cover every member at every step (fil_rate 1)", req.Run, res.FILRate)
	}
	if cfg.Tuning.On() {
		return nil, fmt.Errorf("fil refine: run %s uses pretraining, pruning, freezing or learned noise; refine supports plain DP-SGD runs", req.Run)
	}
	reps := max(1, len(res.Repeats))
	if len(req.Trajectories) != reps {
		return nil, fmt.Errorf("fil refine: run %s has %d repeats, %d trajectories given (record them with --record-transcript)", req.Run, reps, len(req.Trajectories))
	}
	screen, err := fil.Load(filepath.Join(req.Run, res.DFILPath))
	if err != nil {
		return nil, fmt.Errorf("fil refine: screen: %w", err)
	}
	cfg.Device = "cpu"
	s, err := prepare(cfg, Options{Data: req.Data}, logf)
	if err != nil {
		return nil, fmt.Errorf("fil refine: %w", err)
	}
	if len(screen) != s.n {
		return nil, fmt.Errorf("fil refine: the screen has %d samples, the run's training set %d", len(screen), s.n)
	}
	m := min(req.Top, s.n)
	order := make([]int, s.n)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return screen[order[a]] > screen[order[b]] })
	cand := slices.Clone(order[:m])
	exact := make([][]float64, m) // [candidate][repeat]
	for j := range exact {
		exact[j] = make([]float64, reps)
	}
	for r, tr := range req.Trajectories {
		logf("fil refine: repeat %d: exact dFIL of the top %d over all %d coordinates", r, m, s.d)
		v, err := exactDFIL(s, tr, cand)
		if err != nil {
			return nil, fmt.Errorf("fil refine: repeat %d: %w", r, err)
		}
		for j := range cand {
			exact[j][r] = v[j]
		}
	}
	rep := &RefineReport{Run: req.Run, N: s.n, InputDim: s.d, Repeats: reps, Top: m,
		ScreenMax: screen[order[0]], ScreenArgMax: order[0], ScreenThreshold: screen[order[m-1]],
		ScreenEstimator: filEstimator(res, cfg.FILExact || res.FILCoordsUsed == res.InputDim)}
	rep.Estimator = RefineEstimatorName(res.FILCoordsUsed, reps, m)
	means := make([]float64, m)
	for j, i := range cand {
		means[j] = meanOf(exact[j])
		rep.Refined = append(rep.Refined, RefinedSample{Index: i, ScreenRank: j + 1, Screen: screen[i],
			Exact: means[j], PerRepeat: exact[j], MSEBound: 1 / means[j]})
	}
	rep.ScreenMaxExact = means[0]
	sort.SliceStable(rep.Refined, func(a, b int) bool { return rep.Refined[a].Exact > rep.Refined[b].Exact })
	rep.Max, rep.ArgMax = rep.Refined[0].Exact, rep.Refined[0].Index
	rep.MSEBoundMax = 1 / rep.Max
	if reps >= 2 {
		rep.CI = bootstrapMax(exact, reps, req.Bootstrap, req.Seed, 0.95)
		rep.CIMSE = &Interval{Level: rep.CI.Level, Lo: 1 / rep.CI.Hi, Hi: 1 / rep.CI.Lo, Resamples: rep.CI.Resamples, Over: rep.CI.Over}
		rep.Note = fmt.Sprintf("max = the largest exact dFIL (mean over %d repeats) among the screen's top %d: exact when the true argmax is among them, lower otherwise; CI: percentile bootstrap over the repeats", reps, m)
	} else {
		rep.Note = fmt.Sprintf("max = the largest exact dFIL among the screen's top %d: exact for this trajectory when its argmax is among them, lower otherwise; one repeat, so no bootstrap interval over runs (train with --repeats ≥ 2 and --record-transcript for one)", m)
	}
	return rep, nil
}

// RefineEstimatorName names the two-stage estimator.
func RefineEstimatorName(k, repeats, top int) string {
	runs := "run"
	if repeats != 1 {
		runs = "runs (mean)"
	}
	return fmt.Sprintf("screen k=%d, all members, R=%d %s; exact top-%d replayed from the transcript", k, repeats, runs, top)
}

func meanOf(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// bootstrapMax is the percentile bootstrap interval of max_j mean_r exact[j][r]
// over resamples of the repeats r.
func bootstrapMax(exact [][]float64, reps, b int, seed uint64, level float64) *Interval {
	rng := rand.New(rand.NewPCG(seed, 0x6a09e667f3bcc909))
	pick := make([]int, reps)
	maxes := make([]float64, b)
	for i := range maxes {
		for r := range pick {
			pick[r] = rng.IntN(reps)
		}
		best := math.Inf(-1)
		for _, row := range exact {
			s := 0.0
			for _, r := range pick {
				s += row[r]
			}
			best = max(best, s/float64(reps))
		}
		maxes[i] = best
	}
	slices.Sort(maxes)
	a := (1 - level) / 2
	return &Interval{Level: level, Lo: stats.QuantileSorted(maxes, a), Hi: stats.QuantileSorted(maxes, 1-a),
		Resamples: b, Over: fmt.Sprintf("the %d independent repeats (resampled with replacement)", reps)}
}

// exactDFIL replays tr and returns the exact dFIL of the samples cand (computed as
// a fil_exact run computes it: the trace over all d coordinates, at θ_t rounded to
// float32, scaled by κ/(d(σC)²), accumulated over the steps whose batch held them).
func exactDFIL(s *setup, tr Trajectory, cand []int) ([]float64, error) {
	all := make([]int, s.d)
	for i := range all {
		all[i] = i
	}
	return replayFIL(s, tr, cand, func(j int) []int { return all })
}

// ScreenFIL replays tr and returns every sample's random-coordinate dFIL estimate
// with k coordinates per member and step, drawn from rng in the trainer's order
// (each batch member in batch order, k draws with replacement): with the run's
// coordinate stream it reproduces the run's dfil.npy; with other streams it gives
// independent screens of the same trajectory.
func ScreenFIL(run string, tr Trajectory, k int, rng *rand.Rand, ds *data.Split) ([]float64, error) {
	res, err := ReadResult(run)
	if err != nil {
		return nil, fmt.Errorf("fil screen: %w", explainNoResult(run, err))
	}
	cfg := res.Config
	cfg.Device = "cpu"
	s, err := prepare(cfg, Options{Data: ds}, func(string, ...any) {})
	if err != nil {
		return nil, fmt.Errorf("fil screen: %w", err)
	}
	if k < 1 || k > s.d {
		return nil, fmt.Errorf("fil screen: k = %d coordinates must be in [1, %d]", k, s.d)
	}
	all := make([]int, s.n)
	for i := range all {
		all[i] = i
	}
	buf := make([]int, k)
	return replayFIL(s, tr, all, func(int) []int {
		for i := range buf {
			buf[i] = rng.IntN(s.d)
		}
		return buf
	})
}

// ScreenStream is the coordinate stream of repeat r of a run with seed seed (the
// stream the trainer draws FIL coordinates from).
func ScreenStream(seed uint64, r int) *rand.Rand {
	return rand.New(newStream(seed, r, streamCoords))
}

// replayFIL accumulates, over the replayed steps, the dFIL of the samples cand
// from the coordinates coords(j) of the j-th of them in each batch.
func replayFIL(s *setup, tr Trajectory, cand []int, coords func(j int) []int) ([]float64, error) {
	pos := make(map[int]int, len(cand))
	for j, i := range cand {
		if i < 0 || i >= s.n {
			return nil, fmt.Errorf("sample %d out of range [0, %d)", i, s.n)
		}
		pos[i] = j
	}
	fil, err := accounting.NewFIL(s.n, s.d, s.kappa)
	if err != nil {
		return nil, err
	}
	d := s.d
	p32 := make([]float32, s.p)
	var (
		idx []int
		x   []float32
		y   []int
		cs  [][]int
		sq  []float64
	)
	steps := 0
	err = tr.Replay(func(t int, theta []float64, batch []int) error {
		if t != steps {
			return fmt.Errorf("replay: step %d after %d steps", t, steps)
		}
		steps++
		if len(theta) != s.p {
			return fmt.Errorf("replay: step %d has %d parameters, the model %d", t, len(theta), s.p)
		}
		idx, x, y, cs = idx[:0], x[:0], y[:0], cs[:0]
		for _, i := range batch {
			if i < 0 || i >= s.n {
				return fmt.Errorf("replay: step %d: batch index %d out of range [0, %d)", t, i, s.n)
			}
			if _, ok := pos[i]; !ok {
				continue
			}
			idx = append(idx, i)
			x = append(x, s.train.Image(i)...)
			y = append(y, s.train.Labels[i])
			cs = append(cs, slices.Clone(coords(len(idx)-1)))
		}
		if len(idx) == 0 {
			return nil
		}
		for i, v := range theta {
			p32[i] = float32(v)
		}
		sq = slices.Grow(sq[:0], len(idx))[:len(idx)]
		if err := s.model.FILSqNorms(p32, x, y, s.clip, cs, sq); err != nil {
			return fmt.Errorf("FIL step %d: %w", t, err)
		}
		for j, v := range sq {
			k := len(cs[j])
			scale := float64(d) / float64(k) / (s.priv.NoiseStd * s.priv.NoiseStd) / 1 // as filStep (fil_rate 1)
			sq[j] = scale * v
		}
		return fil.AddStep(idx, sq)
	})
	if err != nil {
		return nil, err
	}
	if steps != s.steps {
		return nil, fmt.Errorf("replay: the trajectory has %d steps, the run %d", steps, s.steps)
	}
	out := make([]float64, len(cand))
	for j, i := range cand {
		out[j] = fil.Sum[i]
	}
	return out, nil
}

// WriteText writes the refine report for a human.
func (r *RefineReport) WriteText(w io.Writer) {
	fmt.Fprintf(w, "run %s: %d training samples, d = %d, %d repeat(s)\n", r.Run, r.N, r.InputDim, r.Repeats)
	fmt.Fprintf(w, "estimator: %s\n", r.Estimator)
	fmt.Fprintf(w, "screen: %s\n", r.ScreenEstimator)
	fmt.Fprintf(w, "worst sample: dFIL %.4g (sample %d), MSE ≥ %.4g", r.Max, r.ArgMax, r.MSEBoundMax)
	if r.CI != nil {
		fmt.Fprintf(w, "; %.0f%% bootstrap CI dFIL [%.4g, %.4g], MSE ≥ [%.4g, %.4g] (over %s, %d resamples)",
			100*r.CI.Level, r.CI.Lo, r.CI.Hi, r.CIMSE.Lo, r.CIMSE.Hi, r.CI.Over, r.CI.Resamples)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "screen max %.4g (sample %d; exact %.4g); screen's %d-th largest %.4g\n", r.ScreenMax, r.ScreenArgMax, r.ScreenMaxExact, r.Top, r.ScreenThreshold)
	fmt.Fprintln(w, r.Note)
	fmt.Fprintln(w, "refined (by exact dFIL): index  screen-rank  screen  exact  1/exact")
	for i, s := range r.Refined {
		if i == 10 {
			fmt.Fprintf(w, "  … %d more (--json lists all)\n", len(r.Refined)-10)
			break
		}
		fmt.Fprintf(w, "  %6d  %4d  %.4g  %.4g  %.4g\n", s.Index, s.ScreenRank, s.Screen, s.Exact, s.MSEBound)
	}
}

// resultFILEstimator is result.json's fil_estimator: how each sample's dFIL was
// computed, over how many runs, and what its maximum is.
func resultFILEstimator(r *Result, exact bool) string {
	members := "all members"
	if r.FILRate > 0 && r.FILRate < 1 {
		members = fmt.Sprintf("members subsampled at rate %g (weighted 1/rate)", r.FILRate)
	}
	reps := max(1, len(r.Repeats))
	if exact {
		return fmt.Sprintf("exact (all d = %d coordinates), %s, R=%d runs (mean)", r.InputDim, members, reps)
	}
	return fmt.Sprintf("screen k=%d, %s, R=%d runs (mean); dfil_max is the max of N noisy estimates (biased upward): refine it with 'dpfil account fil-refine'", r.FILCoordsUsed, members, reps)
}
