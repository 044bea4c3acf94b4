package sweep

import (
	"math"
	"math/rand/v2"
	"reflect"
	"sort"
	"testing"
)

func pts(xy ...float64) []Point {
	var p []Point
	for i := 0; i+1 < len(xy); i += 2 {
		p = append(p, Point{Index: len(p), Accuracy: xy[i], Bound: xy[i+1]})
	}
	return p
}

func indices(ps []Point) []int {
	out := []int{}
	for _, p := range ps {
		out = append(out, p.Index)
	}
	return out
}

func TestFrontierHandMade(t *testing.T) {
	inf := math.Inf(1)
	tests := []struct {
		name string
		in   []Point
		want []int // indices, in increasing accuracy
	}{
		{"empty", nil, []int{}},
		{"one point", pts(0.5, 0.1), []int{0}},
		{"chain all dominated by one", pts(0.1, 0.1, 0.2, 0.2, 0.9, 0.9, 0.5, 0.5), []int{2}},
		{"trade-off curve", pts(0.9, 0.01, 0.5, 1, 0.7, 0.1, 0.6, 0.05), []int{1, 2, 0}},
		{"equal accuracy keeps higher bound", pts(0.8, 0.1, 0.8, 0.3, 0.5, 0.2), []int{1}},
		{"equal bound keeps higher accuracy", pts(0.8, 0.3, 0.9, 0.3, 0.5, 0.4), []int{2, 1}},
		{"exact duplicates keep lowest index", pts(0.7, 0.2, 0.7, 0.2, 0.9, 0.1, 0.7, 0.2), []int{0, 2}},
		{"duplicate on frontier, dominated duplicate", pts(0.5, 0.5, 0.4, 0.4, 0.4, 0.4), []int{0}},
		{"infinite bound", pts(0.5, inf, 0.9, 1, 0.4, inf), []int{0, 1}},
		{"negative infinite bound", pts(0.9, math.Inf(-1), 0.1, 0.2), []int{1, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Frontier(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if g := indices(got); !reflect.DeepEqual(g, tc.want) {
				t.Fatalf("frontier = %v, want %v", g, tc.want)
			}
			if b := indices(bruteFrontier(tc.in)); !reflect.DeepEqual(b, tc.want) {
				t.Fatalf("brute-force reference = %v, want %v (test table wrong?)", b, tc.want)
			}
		})
	}
}

func TestFrontierNaN(t *testing.T) {
	for _, in := range [][]Point{pts(math.NaN(), 1), pts(0.5, 1, 0.6, math.NaN())} {
		if _, err := Frontier(in); err == nil {
			t.Fatalf("Frontier(%v): want an error for NaN", in)
		}
	}
}

// bruteFrontier is the O(n²) definition: keep p unless some q dominates it; of exact
// duplicates keep the lowest index.
func bruteFrontier(in []Point) []Point {
	out := []Point{}
	for _, p := range in {
		keep := true
		for _, q := range in {
			if q.Dominates(p) || (q.Accuracy == p.Accuracy && q.Bound == p.Bound && q.Index < p.Index) {
				keep = false
				break
			}
		}
		if keep {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Accuracy < out[j].Accuracy })
	return out
}

func TestFrontierMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 300; trial++ {
		n := rng.IntN(40)
		in := make([]Point, n)
		for i := range in {
			// Coarse grid values so that ties and duplicates are common.
			in[i] = Point{Index: i, Accuracy: float64(rng.IntN(8)) / 8, Bound: math.Pow(10, float64(rng.IntN(6)-3))}
		}
		rng.Shuffle(len(in), func(i, j int) { in[i], in[j] = in[j], in[i] })
		got, err := Frontier(in)
		if err != nil {
			t.Fatal(err)
		}
		want := bruteFrontier(in)
		if !reflect.DeepEqual(indices(got), indices(want)) {
			t.Fatalf("trial %d: frontier %v, brute force %v", trial, got, want)
		}
		// Frontier must be strictly increasing in accuracy and strictly decreasing in bound.
		for i := 1; i < len(got); i++ {
			if !(got[i].Accuracy > got[i-1].Accuracy && got[i].Bound < got[i-1].Bound) {
				t.Fatalf("trial %d: frontier not monotone: %v", trial, got)
			}
		}
	}
}

func BenchmarkFrontier(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	in := make([]Point, 10000)
	for i := range in {
		in[i] = Point{Index: i, Accuracy: rng.Float64(), Bound: rng.ExpFloat64()}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Frontier(in); err != nil {
			b.Fatal(err)
		}
	}
}
