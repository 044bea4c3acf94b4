package plot

import (
	"math"
	"path/filepath"
	"testing"
)

func TestGroupedHistogramSharedBins(t *testing.T) {
	a := []float64{0.1, 0.2, 0.2, 0.9, math.NaN()}
	b := []float64{0.5, 0.55, 1.0}
	p, st, err := GroupedHistogram([][]float64{a, b}, []string{"a", "b"}, HistOptions{Bins: 9})
	if err != nil {
		t.Fatal(err)
	}
	if st[0].N != 4 || st[0].Dropped != 1 || st[1].N != 3 {
		t.Fatalf("stats %+v", st)
	}
	// Common edges over [0.1, 1.0]: width 0.1.
	for k, e := range st[0].Edges {
		if math.Abs(e-(0.1+0.1*float64(k))) > 1e-12 || st[1].Edges[k] != e {
			t.Fatalf("edge %d: %v / %v", k, e, st[1].Edges[k])
		}
	}
	for g, want := range [][]float64{{1, 2, 0, 0, 0, 0, 0, 0, 1}, {0, 0, 0, 0, 2, 0, 0, 0, 1}} {
		for k, c := range st[g].Counts {
			if c != want[k] {
				t.Fatalf("group %d counts %v, want %v", g, st[g].Counts, want)
			}
		}
	}
	if err := Save(p, filepath.Join(t.TempDir(), "h.png"), 300, 200); err != nil {
		t.Fatal(err)
	}
	if _, _, err := GroupedHistogram([][]float64{a}, []string{"a", "b"}, HistOptions{}); err == nil {
		t.Error("names/groups mismatch accepted")
	}
	if _, _, err := GroupedHistogram([][]float64{{math.NaN()}}, []string{"a"}, HistOptions{}); err == nil {
		t.Error("no finite values accepted")
	}
	if _, st, err := GroupedHistogram([][]float64{{1, 10, 100}}, []string{"a"}, HistOptions{Bins: 2, Log10: true}); err != nil || st[0].Counts[0] != 1 || st[0].Counts[1] != 2 {
		t.Errorf("log10 bins: %v %+v", err, st)
	}
}
