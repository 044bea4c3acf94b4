package sweep

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/dpfil/dpfil/internal/strictyaml"
	"github.com/dpfil/dpfil/train"
)

// Grid is a sweep specification: fixed Base settings plus, for each swept key, the
// list of values to try. Keys are train.Config JSON names (CLI flag names with '-'
// replaced by '_'). The file format is YAML; JSON is accepted as the YAML subset it is.
// The key arch names an architecture file (YAML or JSON, as train --arch takes;
// models.LoadArchSpec), relative to the grid file; it may be swept like any key.
//
//	name: mnist-small
//	repeats: 1            # independent runs per configuration, seeds seed, seed+1, …
//	base:  {model: mnist-cnn, batch: 64}
//	grid:  {sigma: [0.5, 2], lr: [0.03, 0.1]}
type Grid struct {
	Name        string           `yaml:"name" json:"name"`
	Description string           `yaml:"description,omitempty" json:"description,omitempty"`
	Repeats     int              `yaml:"repeats,omitempty" json:"repeats,omitempty"`
	Base        map[string]any   `yaml:"base" json:"base"`
	Grid        map[string][]any `yaml:"grid" json:"grid"`

	// Dir is the directory relative paths of the grid (arch files) are taken from:
	// the grid file's, set by LoadGrid ("" = the working directory).
	Dir string `yaml:"-" json:"-"`
	// Models are the program's registered models (train.Registry): a grid's
	// model: NAME may name one, as --model NAME does (ExpandModels).
	Models train.Registry `yaml:"-" json:"-"`
}

// maxGridPoints caps the expansion so that a typo cannot allocate without bound.
const maxGridPoints = 1 << 20

// ParseGrid decodes a grid file. Unknown top-level fields, nested values, empty value
// lists, duplicate values and keys given both in base and grid are errors.
func ParseGrid(b []byte) (*Grid, error) {
	var g Grid
	if err := strictyaml.Decode(bytes.NewReader(b), &g); err != nil {
		return nil, fmt.Errorf("parse grid: %w", err)
	}
	if err := g.normalize(); err != nil {
		return nil, err
	}
	return &g, nil
}

// LoadGrid reads and parses a grid file.
func LoadGrid(path string) (*Grid, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read grid: %w", err)
	}
	g, err := ParseGrid(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	g.Dir = filepath.Dir(path)
	return g, nil
}

// normalize canonicalises key spellings and checks values.
func (g *Grid) normalize() error {
	if g.Repeats < 0 {
		return fmt.Errorf("grid: repeats must be >= 0, got %d", g.Repeats)
	}
	if g.Repeats == 0 {
		g.Repeats = 1
	}
	base := make(map[string]any, len(g.Base))
	for k, v := range g.Base {
		key := normKey(k)
		if _, dup := base[key]; dup {
			return fmt.Errorf("grid: base key %q given twice", key)
		}
		if err := checkScalar(key, v); err != nil {
			return err
		}
		base[key] = v
	}
	grid := make(map[string][]any, len(g.Grid))
	for k, vs := range g.Grid {
		key := normKey(k)
		if _, dup := grid[key]; dup {
			return fmt.Errorf("grid: grid key %q given twice", key)
		}
		if _, both := base[key]; both {
			return fmt.Errorf("grid: key %q is in both base and grid", key)
		}
		if len(vs) == 0 {
			return fmt.Errorf("grid: key %q has an empty value list", key)
		}
		seen := make(map[string]bool, len(vs))
		for _, v := range vs {
			if err := checkScalar(key, v); err != nil {
				return err
			}
			id := fmt.Sprintf("%T:%v", v, v)
			if seen[id] {
				return fmt.Errorf("grid: key %q lists the value %v twice", key, v)
			}
			seen[id] = true
		}
		grid[key] = vs
	}
	if g.Repeats > 1 {
		if _, ok := grid["seed"]; ok {
			return fmt.Errorf("grid: use either top-level repeats or a seed list, not both")
		}
	}
	g.Base, g.Grid = base, grid
	n := g.Repeats
	for _, vs := range grid {
		n *= len(vs)
		if n > maxGridPoints {
			return fmt.Errorf("grid: expands to more than %d runs", maxGridPoints)
		}
	}
	return nil
}

func normKey(k string) string { return strings.ReplaceAll(strings.TrimSpace(k), "-", "_") }

func checkScalar(key string, v any) error {
	switch x := v.(type) {
	case string, bool, int, int64, uint64:
		return nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("grid: key %q has a non-finite value %v", key, x)
		}
		return nil
	case nil:
		return fmt.Errorf("grid: key %q has an empty value", key)
	default:
		return fmt.Errorf("grid: key %q has a non-scalar value %v (%T)", key, v, v)
	}
}

// Keys returns the swept keys in expansion order (sorted).
func (g *Grid) Keys() []string {
	keys := make([]string, 0, len(g.Grid))
	for k := range g.Grid {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Size is the number of grid points (before repeats).
func (g *Grid) Size() int {
	n := 1
	for _, vs := range g.Grid {
		n *= len(vs)
	}
	return n
}

// Points expands the grid into its settings, one map per grid point: Base merged with
// one value per swept key. The order is deterministic: the cartesian product over the
// sorted keys, the last key varying fastest, values in the order the file lists them.
// Repeats are not applied here (see Jobs).
func (g *Grid) Points() []map[string]any {
	keys := g.Keys()
	n := g.Size()
	out := make([]map[string]any, 0, n)
	idx := make([]int, len(keys))
	for p := 0; p < n; p++ {
		m := make(map[string]any, len(g.Base)+len(keys))
		for k, v := range g.Base {
			m[k] = v
		}
		for i, k := range keys {
			m[k] = g.Grid[k][idx[i]]
		}
		out = append(out, m)
		for i := len(keys) - 1; i >= 0; i-- { // odometer increment
			idx[i]++
			if idx[i] < len(g.Grid[keys[i]]) {
				break
			}
			idx[i] = 0
		}
	}
	return out
}

// archFiles lists the relative architecture file paths the grid names (arch in base
// or grid), in file order; absolute paths are left out.
func (g *Grid) archFiles() []string {
	var out []string
	add := func(v any) {
		if f, ok := v.(string); ok && !filepath.IsAbs(f) {
			out = append(out, f)
		}
	}
	if v, ok := g.Base["arch"]; ok {
		add(v)
	}
	for _, v := range g.Grid["arch"] {
		add(v)
	}
	return out
}
