// Package enumtext spells the values of a small enum in flags, JSON and errors
// (accounting's adjacency, sampling and PLD mechanism, models' clipping and conv
// algorithms): one table of names instead of a switch per direction.
package enumtext

import (
	"fmt"
	"strings"
)

// Text is the text form of a small enum whose values are 0 … len(Names)−1: one
// spelling per value, plus aliases that parse too.
type Text[E ~int] struct {
	Type    string       // the Go type, in the String of a value out of range
	What    string       // the enum in errors ("adjacency")
	Names   []string     // Names[v] spells value v
	Aliases map[string]E // other spellings that parse
}

func (t Text[E]) valid(v E) bool { return v >= 0 && int(v) < len(t.Names) }

// String spells v, or writes Type(v) for a value out of range.
func (t Text[E]) String(v E) string {
	if !t.valid(v) {
		return fmt.Sprintf("%s(%d)", t.Type, int(v))
	}
	return t.Names[v]
}

// Marshal spells v and refuses a value out of range.
func (t Text[E]) Marshal(v E) ([]byte, error) {
	if !t.valid(v) {
		return nil, fmt.Errorf("invalid %s %d", t.What, int(v))
	}
	return []byte(t.Names[v]), nil
}

// Parse reads a spelling or an alias.
func (t Text[E]) Parse(s string) (E, error) {
	for v, name := range t.Names {
		if s == name {
			return E(v), nil
		}
	}
	if v, ok := t.Aliases[s]; ok {
		return v, nil
	}
	want := t.Names[len(t.Names)-1]
	if len(t.Names) > 1 {
		want = strings.Join(t.Names[:len(t.Names)-1], ", ") + " or " + want
	}
	return 0, fmt.Errorf("unknown %s %q (want %s)", t.What, s, want)
}

// Unmarshal parses b into *v.
func (t Text[E]) Unmarshal(b []byte, v *E) error {
	p, err := t.Parse(string(b))
	if err != nil {
		return err
	}
	*v = p
	return nil
}
