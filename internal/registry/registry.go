// Package registry is the one plug-in table of the code base: implementations
// register themselves by kind (from their init functions), callers look them up by
// kind and list the kinds, sorted. The engine's layer kinds (models) and their
// Gorgonia nodes (models/oracle) are two such tables.
package registry

import (
	"fmt"
	"slices"
	"sync"
)

// Table maps kinds to implementations; it is safe for concurrent use.
type Table[K ~string, V any] struct {
	what string
	mu   sync.RWMutex
	m    map[K]V
}

// New returns an empty table; what names its entries in the panic of a duplicate
// registration (e.g. "models: layer kind").
func New[K ~string, V any](what string) *Table[K, V] {
	return &Table[K, V]{what: what, m: map[K]V{}}
}

// Register adds v under kind. Registering a kind twice is a programming error (two
// init functions claim it) and panics.
func (t *Table[K, V]) Register(kind K, v V) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, dup := t.m[kind]; dup {
		panic(fmt.Sprintf("%s %q registered twice", t.what, kind))
	}
	t.m[kind] = v
}

// Lookup returns the implementation of kind and whether there is one.
func (t *Table[K, V]) Lookup(kind K) (V, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	v, ok := t.m[kind]
	return v, ok
}

// Kinds lists the registered kinds, sorted.
func (t *Table[K, V]) Kinds() []K {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make([]K, 0, len(t.m))
	for k := range t.m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
