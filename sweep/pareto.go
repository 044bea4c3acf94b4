package sweep

import (
	"fmt"
	"math"
	"sort"
)

// Point is one configuration's position in the privacy–utility plane: its test
// accuracy and an MSE lower bound (higher is more private). Index identifies the
// point in the caller's slice.
type Point struct {
	Index    int     `json:"index"`
	Accuracy float64 `json:"accuracy"`
	Bound    float64 `json:"bound"`
}

// Dominates reports whether p dominates q: p is at least as accurate and at least as
// private as q, and strictly better in one of the two.
func (p Point) Dominates(q Point) bool {
	return p.Accuracy >= q.Accuracy && p.Bound >= q.Bound &&
		(p.Accuracy > q.Accuracy || p.Bound > q.Bound)
}

// Frontier returns the Pareto frontier of pts when both accuracy and bound are to be
// maximised: the points no other point dominates, sorted by increasing accuracy (and
// so by decreasing bound). Exact duplicates do not dominate each other; of a group of
// duplicates only the one with the lowest Index is returned, so the result does not
// depend on the input order. NaN coordinates are an error; ±Inf are ordinary values.
func Frontier(pts []Point) ([]Point, error) {
	for _, p := range pts {
		if math.IsNaN(p.Accuracy) || math.IsNaN(p.Bound) {
			return nil, fmt.Errorf("pareto: point %d has a NaN coordinate (accuracy %v, bound %v)", p.Index, p.Accuracy, p.Bound)
		}
	}
	s := make([]Point, len(pts))
	copy(s, pts)
	// Best accuracy first; within equal accuracy best bound first; then lowest index,
	// so that the first of a duplicate group is the representative.
	sort.Slice(s, func(i, j int) bool {
		if s[i].Accuracy != s[j].Accuracy {
			return s[i].Accuracy > s[j].Accuracy
		}
		if s[i].Bound != s[j].Bound {
			return s[i].Bound > s[j].Bound
		}
		return s[i].Index < s[j].Index
	})
	var front []Point
	best := math.Inf(-1)
	for i, p := range s {
		// A point is non-dominated iff its bound beats every point seen so far (all of
		// which are at least as accurate). The very first point always qualifies, even
		// with bound −Inf.
		if i == 0 || p.Bound > best {
			front = append(front, p)
			best = p.Bound
		}
	}
	// Reverse into increasing accuracy.
	for i, j := 0, len(front)-1; i < j; i, j = i+1, j-1 {
		front[i], front[j] = front[j], front[i]
	}
	return front, nil
}
