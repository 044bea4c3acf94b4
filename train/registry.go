package train

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/dpfil/dpfil/models"
)

// Registry is the models a program adds to the built-in architectures and
// architecture files, by name: the name `--model NAME` and a sweep grid's
// `model: NAME` take in a program built on package cli (e.g. a gorgonet.FromGraph
// model written in Gorgonia). Each entry builds a fresh model (a model is not
// shared between concurrent runs). A registered model's architecture name must
// have the form kind:name (gorgonet.GraphModel's is
// "gorgonia-graph:<name>@<fingerprint>"): a run's configuration and result record
// that name (Config.WithModel), so that the configuration hash changes when the
// model's structure does, and a finished run finds its model again by it.
type Registry map[string]func() (models.Model, error)

var registryNameRE = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// Check reports a name that is empty, holds other characters than letters,
// digits, '.', '_' and '-', or is a built-in architecture's, and a nil entry.
func (r Registry) Check() error {
	for _, name := range r.Names() {
		if !registryNameRE.MatchString(name) {
			return fmt.Errorf("registered model %q: a name is letters, digits, '.', '_' and '-'", name)
		}
		if _, err := models.ArchByName(name); err == nil {
			return fmt.Errorf("registered model %q: the name of a built-in architecture", name)
		}
		if r[name] == nil {
			return fmt.Errorf("registered model %q: no constructor", name)
		}
	}
	return nil
}

// Names returns the registered names, sorted.
func (r Registry) Names() []string {
	names := make([]string, 0, len(r))
	for n := range r {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Has reports whether name is registered.
func (r Registry) Has(name string) bool {
	_, ok := r[name]
	return ok
}

// New builds the model registered as name and checks that its architecture name
// has the form kind:name.
func (r Registry) New(name string) (models.Model, error) {
	f, ok := r[name]
	if !ok || f == nil {
		return nil, fmt.Errorf("model %q is not registered (registered: %s)", name, r.list())
	}
	m, err := f()
	if err != nil {
		return nil, fmt.Errorf("build registered model %s: %w", name, err)
	}
	if m == nil {
		return nil, fmt.Errorf("build registered model %s: the constructor returned no model", name)
	}
	if an := m.Arch().Name; !callerModel(an) {
		return nil, fmt.Errorf("registered model %s has architecture name %q: it must have the form kind:name (as a gorgonet.GraphModel's) so that runs record what ran", name, an)
	}
	return m, nil
}

// list is the registered names for messages, "none" when there are none.
func (r Registry) list() string {
	if len(r) == 0 {
		return "none"
	}
	return strings.Join(r.Names(), ", ")
}

// Find returns the registered model whose architecture name is arch (a run's
// recorded Config.Model, e.g. gorgonia-graph:<name>@<fingerprint>), freshly built,
// with its registered name. It builds the registered models in name order until one
// matches. When none does, the error says that the run was trained with a model
// registered by another program (or by an older version of this one: a changed
// graph has another fingerprint), and which models this program registers.
func (r Registry) Find(arch string) (string, models.Model, error) {
	var have []string
	for _, name := range r.Names() {
		m, err := r.New(name)
		if err != nil {
			return "", nil, err
		}
		if m.Arch().Name == arch {
			return name, m, nil
		}
		have = append(have, name+" = "+m.Arch().Name)
	}
	these := "none"
	if len(have) > 0 {
		these = strings.Join(have, ", ")
	}
	return "", nil, fmt.Errorf("model %s was registered by the program that trained it (its structure is in the name: the same code builds the same name); "+
		"this program registers %s: run this command with that program", arch, these)
}

// Resolve prepares a configuration whose Model may name a registered model: a
// registered name is replaced by its model's architecture name (Config.WithModel)
// and the model is returned for Options.Model; a configuration that already names a
// registered model's architecture (a resumed run, a sweep job) gets that model
// (Find). Built-in architectures and architecture files are returned unchanged,
// with a nil model.
func (r Registry) Resolve(cfg Config) (Config, models.Model, error) {
	switch {
	case cfg.Arch != nil:
		return cfg, nil, nil
	case r.Has(cfg.Model):
		m, err := r.New(cfg.Model)
		if err != nil {
			return cfg, nil, err
		}
		return cfg.WithModel(m), m, nil
	case callerModel(cfg.Model):
		_, m, err := r.Find(cfg.Model)
		if err != nil {
			return cfg, nil, err
		}
		return cfg, m, nil
	}
	return cfg, nil, nil
}
