package accounting

import (
	"fmt"
	"strings"
)

// enumText is the text form of a small enum whose values are 0 … len(names)−1 (the
// Adjacency, Sampling and PLDMechanism spellings in flags and JSON): one spelling per
// value, plus aliases that parse too.
type enumText[E ~int] struct {
	typ     string       // the Go type, in the String of a value out of range
	what    string       // the enum in errors ("adjacency")
	names   []string     // names[v] spells value v
	aliases map[string]E // other spellings that parse
}

func (t enumText[E]) valid(v E) bool { return v >= 0 && int(v) < len(t.names) }

// String spells v, or writes Type(v) for a value out of range.
func (t enumText[E]) String(v E) string {
	if !t.valid(v) {
		return fmt.Sprintf("%s(%d)", t.typ, int(v))
	}
	return t.names[v]
}

// Marshal spells v and refuses a value out of range.
func (t enumText[E]) Marshal(v E) ([]byte, error) {
	if !t.valid(v) {
		return nil, fmt.Errorf("invalid %s %d", t.what, int(v))
	}
	return []byte(t.names[v]), nil
}

// Parse reads a spelling or an alias.
func (t enumText[E]) Parse(s string) (E, error) {
	for v, name := range t.names {
		if s == name {
			return E(v), nil
		}
	}
	if v, ok := t.aliases[s]; ok {
		return v, nil
	}
	want := t.names[len(t.names)-1]
	if len(t.names) > 1 {
		want = strings.Join(t.names[:len(t.names)-1], ", ") + " or " + want
	}
	return 0, fmt.Errorf("unknown %s %q (want %s)", t.what, s, want)
}

// Unmarshal parses b into *v.
func (t enumText[E]) Unmarshal(b []byte, v *E) error {
	p, err := t.Parse(string(b))
	if err != nil {
		return err
	}
	*v = p
	return nil
}
