package attack

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/dpfil/dpfil/internal/atomicfile"
)

// The parameters a Sweep can vary.
const (
	SweepEpsilon   = "eps" // the target ε (σ re-solved for each value)
	SweepPriorSize = "k"   // the prior size K
	SweepQ         = "q"   // the sampling rate q (σ re-solved for the spec's ε unless UseSigma)
)

// SweepSpec repeats one game over values of one parameter: Hayes, Mahloujifar and
// Balle (2023) Sec. 4.1 (ε), 4.2 (the prior size K) and 4.3 (q).
type SweepSpec struct {
	Param  string    // SweepEpsilon, SweepPriorSize or SweepQ
	Values []float64 // the values of Param, in order
	// Game is the game each value modifies; Game.Out is required: value v plays in
	// Out/<param>=<v>/ (resumable) and the results go to Out/sweep.json and
	// Out/sweep.csv.
	Game GameSpec
}

// SweepReport is the outcome of Sweep (also written to JSON).
type SweepReport struct {
	Sweep   string        `json:"sweep"`
	Values  []float64     `json:"values"`
	Results []*GameReport `json:"results"`
	JSON    string        `json:"json"`
	CSV     string        `json:"csv"`
}

// Validate rejects impossible sweeps, the swept values included.
func (s SweepSpec) Validate() error {
	if s.Game.Out == "" {
		return fmt.Errorf("attack sweep: needs an output directory (--out)")
	}
	if len(s.Values) == 0 {
		return fmt.Errorf("attack sweep: no values to sweep")
	}
	for _, v := range s.Values {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("attack sweep: value %v is not finite", v)
		}
		switch s.Param {
		case SweepEpsilon:
			if s.Game.UseSigma {
				return fmt.Errorf("attack sweep: the ε sweep solves σ for each ε; a fixed sigma is not allowed")
			}
			if !(v > 0) {
				return fmt.Errorf("attack sweep: ε = %v must be positive", v)
			}
		case SweepPriorSize:
			if v != math.Trunc(v) || v < 2 {
				return fmt.Errorf("attack sweep: prior size K = %v must be an integer ≥ 2", v)
			}
		case SweepQ:
			if !(v > 0 && v <= 1) {
				return fmt.Errorf("attack sweep: q = %v outside (0, 1]", v)
			}
		default:
			return fmt.Errorf("attack sweep: unknown parameter %q (want %s, %s or %s)", s.Param, SweepEpsilon, SweepPriorSize, SweepQ)
		}
	}
	return s.Game.Validate()
}

// at returns the game of value v.
func (s SweepSpec) at(v float64) GameSpec {
	g := s.Game
	switch s.Param {
	case SweepEpsilon:
		g.Epsilon, g.UseSigma = v, false
	case SweepPriorSize:
		g.PriorSize = int(v)
	case SweepQ:
		g.Q = v
	}
	g.Out = filepath.Join(s.Game.Out, fmt.Sprintf("%s=%s", s.Param, strconv.FormatFloat(v, 'g', -1, 64)))
	return g
}

// Sweep plays the game at every value (loading the dataset once) and writes
// sweep.json and sweep.csv (SweepCSVHeader) to spec.Game.Out.
func Sweep(ctx context.Context, spec SweepSpec) (*SweepReport, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	pools, err := LoadPools(spec.Game.Dataset, spec.Game.DataDir)
	if err != nil {
		return nil, err
	}
	sr := &SweepReport{Sweep: spec.Param, Values: spec.Values,
		JSON: filepath.Join(spec.Game.Out, "sweep.json"), CSV: filepath.Join(spec.Game.Out, "sweep.csv")}
	for _, v := range spec.Values {
		r, err := PlayGameOn(ctx, spec.at(v), pools)
		if err != nil {
			return nil, fmt.Errorf("%s = %v: %w", spec.Param, v, err)
		}
		sr.Results = append(sr.Results, r)
	}
	if err := sr.Write(); err != nil {
		return nil, err
	}
	return sr, nil
}

// SweepCSVHeader names the columns of sweep.csv: one row per (value, attack).
func SweepCSVHeader() []string {
	return []string{"sweep", "value", "attack", "success_rate", "ci_low", "ci_high", "successes", "trials",
		"gamma", "gamma_low", "gamma_high", "gamma_rdp", "kappa", "epsilon", "sigma", "q", "steps", "prior_size", "success_orthogonal", "fano_success", "lr", "clipped_norm", "clipped_fraction", "optimal_success"}
}

// Write writes the report to sr.JSON and its table (SweepCSVHeader) to sr.CSV,
// atomically.
func (sr *SweepReport) Write() error {
	js, err := json.MarshalIndent(sr, "", "  ")
	if err != nil {
		return fmt.Errorf("encode sweep: %w", err)
	}
	if err := atomicfile.WriteFile(sr.JSON, append(js, '\n')); err != nil {
		return err
	}
	var b strings.Builder
	w := csv.NewWriter(&b)
	_ = w.Write(SweepCSVHeader())
	_ = w.WriteAll(sr.csvRows())
	if err := w.Error(); err != nil {
		return fmt.Errorf("encode sweep CSV: %w", err)
	}
	return atomicfile.WriteFile(sr.CSV, []byte(b.String()))
}

// ReadSweepReport reads a sweep.json written by SweepReport.Write. Every result
// must carry its bounds (gamma and gamma_rdp present and not null), and there must be
// one result per value.
func ReadSweepReport(r io.Reader) (*SweepReport, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read sweep: %w", err)
	}
	var sr SweepReport
	if err := json.Unmarshal(b, &sr); err != nil {
		return nil, fmt.Errorf("decode JSON: %w", err)
	}
	if len(sr.Values) != len(sr.Results) {
		return nil, fmt.Errorf("%d values but %d results", len(sr.Values), len(sr.Results))
	}
	var raw struct {
		Results []map[string]json.RawMessage `json:"results"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("decode JSON: %w", err)
	}
	for i, res := range raw.Results {
		if res == nil {
			return nil, fmt.Errorf("result %d (x = %v) is null", i, sr.Values[i])
		}
		for _, k := range []string{"gamma", "gamma_rdp"} {
			if v, ok := res[k]; !ok || string(v) == "null" {
				return nil, fmt.Errorf("result %d (x = %v) has no gamma or gamma_rdp", i, sr.Values[i])
			}
		}
	}
	return &sr, nil
}

func (sr *SweepReport) csvRows() [][]string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 8, 64) }
	var rows [][]string
	for i, r := range sr.Results {
		so := ""
		if r.SuccessOrthogonal != nil {
			so = f(*r.SuccessOrthogonal)
		}
		fano := ""
		if r.Fano != nil {
			fano = f(r.Fano.Success)
		}
		opt := ""
		if r.OptimalSuccess != nil {
			opt = f(*r.OptimalSuccess)
		}
		for _, a := range sortedKeys(r.Attacks) {
			s := r.Attacks[a]
			rows = append(rows, []string{sr.Sweep, f(sr.Values[i]), a, f(s.Rate), f(s.CI[0]), f(s.CI[1]), strconv.Itoa(s.Successes), strconv.Itoa(s.Trials),
				f(r.Gamma), f(r.GammaCI[0]), f(r.GammaCI[1]), f(r.GammaRDP), f(r.Kappa), f(r.Epsilon), f(r.Sigma), f(r.Q), strconv.Itoa(r.Steps), strconv.Itoa(r.PriorSize), so, fano, f(r.LR), f(r.ClippedNorm), f(r.ClippedFraction), opt})
		}
	}
	return rows
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
