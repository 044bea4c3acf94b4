package suggest

import (
	"reflect"
	"testing"
)

// TestDistance checks the optimal-string-alignment distance on hand-computed pairs
// (ca → abc is 3, not the unrestricted Damerau distance 2) and its symmetry.
func TestDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"", "abc", 3}, {"abc", "abc", 0}, {"kitten", "sitting", 3},
		{"flaw", "lawn", 2}, {"sigma", "sigam", 1}, {"ca", "abc", 3}, {"σ", "s", 1}, {"fil-coords", "fil-cords", 1},
	} {
		if got := Distance(c.a, c.b); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
		if got := Distance(c.b, c.a); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d (symmetry)", c.b, c.a, got, c.want)
		}
	}
}

func TestNear(t *testing.T) {
	cands := []string{"sigma", "steps", "seed", "fil-coords", "fil-exact", "mnist", "mnist01", "cifar10"}
	for _, c := range []struct {
		name string
		want []string
	}{
		{"sigam", []string{"sigma"}},
		{"fil-cords", []string{"fil-coords"}},
		{"MNIST", []string{"mnist", "mnist01"}},
		{"cifar", []string{"cifar10"}},
		{"fil-", []string{"fil-exact", "fil-coords"}}, // a prefix of both: the shorter first
		{"fi", nil},     // a prefix too short to mean anything
		{"zzzzzz", nil}, // nothing near
	} {
		got := Near(c.name, cands)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("Near(%q) = %q, want %q", c.name, got, c.want)
		}
	}
	if got := Nearest("stpes", cands); got != "steps" {
		t.Errorf("Nearest(stpes) = %q, want steps", got)
	}
}
