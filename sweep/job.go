package sweep

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/dpfil/dpfil/train"
)

// Job is one run of a sweep: a fully resolved training configuration, its position in
// the expanded grid and its identity, train.Config.Hash.
type Job struct {
	Index  int          `json:"index"`
	Hash   string       `json:"hash"`
	Config train.Config `json:"config"`
}

// ConfigFromSettings overlays settings (train.Config JSON names → values) on
// train.DefaultConfig and validates the result. Unknown keys and ill-typed values are
// errors. Setting epochs without steps clears the default step count (the two are
// exclusive).
func ConfigFromSettings(settings map[string]any) (train.Config, error) {
	cfg := train.DefaultConfig()
	if _, hasEpochs := settings["epochs"]; hasEpochs {
		if _, hasSteps := settings["steps"]; !hasSteps {
			cfg.Steps = 0
		}
	}
	b, err := json.Marshal(settings)
	if err != nil {
		return train.Config{}, fmt.Errorf("settings %v: %w", settings, err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return train.Config{}, fmt.Errorf("settings %v: %w", settings, err)
	}
	if err := cfg.Validate(); err != nil {
		return train.Config{}, fmt.Errorf("settings %v: %w", settings, err)
	}
	return cfg, nil
}

// Jobs expands the grid into training configurations in the deterministic order of
// Points, each grid point repeated g.Repeats times with seeds seed, seed+1, …
// (repeats innermost). Two grid points that resolve to the same configuration are an
// error: every job of a sweep has a distinct hash.
func (g *Grid) Jobs() ([]Job, error) {
	pts := g.Points()
	reps := g.Repeats
	if reps < 1 {
		reps = 1
	}
	jobs := make([]Job, 0, len(pts)*reps)
	seen := make(map[string]int, len(pts)*reps)
	for _, p := range pts {
		base, err := ConfigFromSettings(p)
		if err != nil {
			return nil, fmt.Errorf("grid %s: %w", g.Name, err)
		}
		for r := 0; r < reps; r++ {
			cfg := base
			cfg.Seed += uint64(r)
			j := Job{Index: len(jobs), Hash: cfg.Hash(), Config: cfg}
			if prev, dup := seen[j.Hash]; dup {
				return nil, fmt.Errorf("grid %s: runs %d and %d are the same configuration (hash %s)", g.Name, prev, j.Index, j.Hash)
			}
			seen[j.Hash] = j.Index
			jobs = append(jobs, j)
		}
	}
	return jobs, nil
}
