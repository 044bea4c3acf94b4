// Package suggest finds what a user probably meant by a misspelt name (a command, a
// flag, a dataset): the candidates nearest by edit distance.
package suggest

import (
	"sort"
	"strings"
)

// Distance is the optimal-string-alignment distance between a and b: the fewest
// insertions, deletions, substitutions of runes and transpositions of two adjacent
// runes ("sigam" → "sigma") that turn a into b, no substring edited twice.
func Distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

// Near returns the candidates that name is probably a misspelling of, nearest
// first (ties in name order): those within max(1, len/3) edits of it, case
// ignored, and those it is a prefix of (at least 3 runes). Nil when none is near.
func Near(name string, candidates []string) []string {
	low := strings.ToLower(name)
	type hit struct {
		c string
		d int
	}
	var hits []hit
	for _, c := range candidates {
		lc := strings.ToLower(c)
		d := Distance(low, lc)
		switch {
		case d <= max(1, len([]rune(c))/3):
		case len([]rune(low)) >= 3 && strings.HasPrefix(lc, low):
			d = len([]rune(c)) // a prefix ranks after every close spelling
		default:
			continue
		}
		hits = append(hits, hit{c, d})
	}
	sort.Slice(hits, func(i, j int) bool {
		if hits[i].d != hits[j].d {
			return hits[i].d < hits[j].d
		}
		return hits[i].c < hits[j].c
	})
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.c
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// Nearest is the first of Near(name, candidates), or "" when none is near.
func Nearest(name string, candidates []string) string {
	if n := Near(name, candidates); len(n) > 0 {
		return n[0]
	}
	return ""
}
