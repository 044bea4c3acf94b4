package glm

import (
	"slices"
	"testing"
)

func TestSampleRows(t *testing.T) {
	for _, tc := range []struct{ n, k, want int }{
		{10, 0, 10}, {10, 3, 3}, {10, 10, 10}, {10, 25, 10}, {1, 1, 1},
	} {
		rows := SampleRows(tc.n, tc.k, 7, 0x74617267)
		if len(rows) != tc.want {
			t.Fatalf("n=%d k=%d: %d rows, want %d", tc.n, tc.k, len(rows), tc.want)
		}
		if !slices.IsSorted(rows) || len(slices.Compact(slices.Clone(rows))) != len(rows) {
			t.Fatalf("n=%d k=%d: rows %v not sorted and distinct", tc.n, tc.k, rows)
		}
		if rows[0] < 0 || rows[len(rows)-1] >= tc.n {
			t.Fatalf("n=%d k=%d: rows %v out of range", tc.n, tc.k, rows)
		}
		if again := SampleRows(tc.n, tc.k, 7, 0x74617267); !slices.Equal(rows, again) {
			t.Fatalf("n=%d k=%d: not deterministic: %v then %v", tc.n, tc.k, rows, again)
		}
	}
	a, b := SampleRows(1000, 5, 7, 1), SampleRows(1000, 5, 7, 2)
	if slices.Equal(a, b) {
		t.Fatalf("streams 1 and 2 drew the same rows %v", a)
	}
}
