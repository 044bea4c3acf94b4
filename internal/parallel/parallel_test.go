package parallel

import (
	"slices"
	"sync"
	"testing"
)

// TestChunks checks that the ranges cover [0, n) exactly once, in chunk-sized pieces.
func TestChunks(t *testing.T) {
	for _, tc := range []struct {
		n, chunk int
		want     [][2]int
	}{
		{10, 4, [][2]int{{0, 4}, {4, 8}, {8, 10}}},
		{8, 4, [][2]int{{0, 4}, {4, 8}}},
		{5, 5, [][2]int{{0, 5}}},
		{5, 9, [][2]int{{0, 5}}},
		{5, 0, [][2]int{{0, 5}}},
		{0, 3, nil},
	} {
		var mu sync.Mutex
		var got [][2]int
		Chunks(tc.n, tc.chunk, func(lo, hi int) {
			mu.Lock()
			got = append(got, [2]int{lo, hi})
			mu.Unlock()
		})
		slices.SortFunc(got, func(a, b [2]int) int { return a[0] - b[0] })
		if !slices.Equal(got, tc.want) {
			t.Errorf("n=%d chunk=%d: ranges %v, want %v", tc.n, tc.chunk, got, tc.want)
		}
	}
}
