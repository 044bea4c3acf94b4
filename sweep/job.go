package sweep

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/dpfil/dpfil/models"
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
// exclusive); setting optimizer adam starts from train.Config.UseAdam (torch's β1,
// β2, ε and momentum 0, which the settings may override).
func ConfigFromSettings(settings map[string]any) (train.Config, error) {
	cfg := train.DefaultConfig()
	if _, hasEpochs := settings["epochs"]; hasEpochs {
		if _, hasSteps := settings["steps"]; !hasSteps {
			cfg.Steps = 0
		}
	}
	if settings["optimizer"] == train.OptimizerAdam {
		cfg.UseAdam()
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
	archs := map[string]*models.ArchSpec{}
	registered := map[string]string{}
	for _, p := range pts {
		if err := g.resolveArch(p, archs); err != nil {
			return nil, err
		}
		if err := g.resolveModel(p, registered); err != nil {
			return nil, err
		}
	}
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

// resolveArch replaces the architecture file that the grid point p names (arch: FILE,
// relative to g.Dir) by its spec, read once per file into archs, and sets p's model
// to the spec's name unless p gives one (which must then be that name), as
// train --arch does.
func (g *Grid) resolveArch(p map[string]any, archs map[string]*models.ArchSpec) error {
	v, ok := p["arch"]
	if !ok {
		return nil
	}
	file, ok := v.(string)
	if !ok || file == "" {
		return fmt.Errorf("grid %s: arch = %v: want the path of an architecture file (YAML or JSON, as train --arch takes)", g.Name, v)
	}
	path := file
	if !filepath.IsAbs(path) && g.Dir != "" {
		path = filepath.Join(g.Dir, path)
	}
	spec, seen := archs[path]
	if !seen {
		var err error
		if spec, err = models.LoadArchSpec(path); err != nil {
			return fmt.Errorf("grid %s: arch %s (relative to the grid file): %w", g.Name, file, err)
		}
		archs[path] = spec
	}
	p["arch"] = spec
	if _, given := p["model"]; !given {
		p["model"] = spec.Name
	}
	return nil
}

// resolveModel replaces a registered model's name in the grid point p (model: NAME,
// g.Models) by its model's architecture name (gorgonia-graph:<name>@<fingerprint>),
// built once per name into names, as train --model NAME does: the job's hash then
// changes with the model's structure, and the runner finds the model by that name.
func (g *Grid) resolveModel(p map[string]any, names map[string]string) error {
	name, ok := p["model"].(string)
	if _, arch := p["arch"]; !ok || arch || !g.Models.Has(name) {
		return nil
	}
	an, seen := names[name]
	if !seen {
		m, err := g.Models.New(name)
		if err != nil {
			return fmt.Errorf("grid %s: %w", g.Name, err)
		}
		an = m.Arch().Name
		names[name] = an
	}
	p["model"] = an
	return nil
}
