package data

import (
	"math"
	"sort"
	"strings"
	"testing"
)

// smallDataset has n samples of shape 1×2×2 with value i/255 everywhere in sample i
// (n ≤ 256) and label i%classes.
func smallDataset(n, classes int) *Dataset {
	d := &Dataset{Name: "small", Source: "test", N: n, C: 1, H: 2, W: 2, Classes: classes}
	for i := 0; i < n; i++ {
		for k := 0; k < 4; k++ {
			d.Images = append(d.Images, float32(i%256)/255)
		}
		d.Labels = append(d.Labels, i%classes)
	}
	d.SHA256 = d.Fingerprint()
	return d
}

func TestSubsetSelect(t *testing.T) {
	d := smallDataset(10, 3)
	s := d.Subset([]int{7, 2, 7})
	if s.N != 3 || s.Labels[0] != 1 || s.Labels[1] != 2 || s.Image(2)[3] != float32(7)/255 {
		t.Errorf("subset %+v", s)
	}
	s.Images[0] = 0.5 // a copy: the original is untouched
	if d.Images[7*4] != float32(7)/255 {
		t.Error("Subset shares memory with the original")
	}
	for _, bad := range [][]int{{-1}, {10}, {0, 11}} {
		if _, err := d.Select(bad); err == nil || !strings.Contains(err.Error(), "outside [0, 10)") {
			t.Errorf("Select(%v): %v", bad, err)
		}
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("Subset with a bad index did not panic")
			}
		}()
		d.Subset([]int{10})
	}()
	if got := d.Image(3); len(got) != 4 || cap(got) != 4 {
		t.Errorf("Image view len %d cap %d, want 4, 4", len(got), cap(got))
	}
}

func TestFilterClasses(t *testing.T) {
	d := smallDataset(30, 10)
	cases := []struct {
		classes []int
		wantN   int
		err     string
	}{
		{[]int{0, 1}, 6, ""},
		{[]int{8, 3}, 6, ""},
		{[]int{9}, 3, ""},
		{nil, 0, "at least one class"},
		{[]int{10}, 0, "outside [0,10)"},
		{[]int{2, 2}, 0, "twice"},
	}
	for _, c := range cases {
		f, err := d.FilterClasses(c.classes...)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%v: error %v, want %q", c.classes, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if f.N != c.wantN || f.Classes != len(c.classes) {
			t.Fatalf("%v: N=%d classes=%d", c.classes, f.N, f.Classes)
		}
		prev := -1
		for i := 0; i < f.N; i++ {
			orig := int(math.Round(float64(f.Image(i)[0]) * 255)) // sample index in d
			if orig <= prev {
				t.Errorf("%v: order not kept", c.classes)
			}
			prev = orig
			if c.classes[f.Labels[i]] != d.Labels[orig] {
				t.Errorf("%v: sample %d relabelled %d, original label %d", c.classes, orig, f.Labels[i], d.Labels[orig])
			}
		}
		if err := f.Validate(); err != nil {
			t.Error(err)
		}
	}
}

func TestHeadSample(t *testing.T) {
	d := smallDataset(50, 5)
	h, err := d.Head(7)
	if err != nil || h.N != 7 || h.Labels[6] != 1 {
		t.Fatalf("Head: %v %+v", err, h)
	}
	if h, _ := d.Head(99); h.N != 50 {
		t.Errorf("Head(99) N=%d", h.N)
	}
	a, err := d.Sample(20, 3)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := d.Sample(20, 3)
	c, _ := d.Sample(20, 4)
	if a.SHA256 != b.SHA256 || a.SHA256 == c.SHA256 {
		t.Error("Sample is not deterministic in its seed")
	}
	seen := map[float32]bool{}
	for i := 0; i < a.N; i++ {
		seen[a.Image(i)[0]] = true
	}
	if len(seen) != 20 {
		t.Errorf("Sample repeated samples: %d distinct of 20", len(seen))
	}
	for _, n := range []int{-1, 51} {
		if _, err := d.Sample(n, 1); err == nil {
			t.Errorf("Sample(%d) gave no error", n)
		}
	}
}

func TestPermutation(t *testing.T) {
	for _, n := range []int{0, 1, 2, 10, 1000} {
		p := Permutation(n, 42)
		q := append([]int(nil), p...)
		sort.Ints(q)
		for i := range q {
			if q[i] != i {
				t.Fatalf("Permutation(%d) is not a permutation: %v", n, p)
			}
		}
	}
	// Uniformity: over many seeds, each of the 6 permutations of 3 items is equally
	// likely (chi-square with 5 degrees of freedom; 20.5 is its 0.999 quantile).
	counts := map[[3]int]int{}
	const trials = 60000
	for s := uint64(0); s < trials; s++ {
		p := Permutation(3, s)
		counts[[3]int{p[0], p[1], p[2]}]++
	}
	if len(counts) != 6 {
		t.Fatalf("%d distinct permutations of 3, want 6", len(counts))
	}
	chi2 := 0.0
	for _, c := range counts {
		e := trials / 6.0
		chi2 += (float64(c) - e) * (float64(c) - e) / e
	}
	if chi2 > 20.5 {
		t.Errorf("chi-square %.1f: permutations not uniform: %v", chi2, counts)
	}
}

func TestStratifiedSplit(t *testing.T) {
	d := smallDataset(103, 4) // class sizes 26, 26, 26, 25
	for _, frac := range []float64{0, 0.2, 0.5, 1} {
		sp, err := d.StratifiedSplit(frac, 9)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := sp.Test.N, int(math.Round(frac*103)); got != want || sp.Train.N+sp.Test.N != 103 {
			t.Errorf("frac %v: test %d (want %d), train %d", frac, got, want, sp.Train.N)
		}
		all := d.ClassCounts()
		for c, n := range sp.Test.ClassCounts() {
			if math.Abs(float64(n)-frac*float64(all[c])) >= 1 {
				t.Errorf("frac %v class %d: %d test samples of %d", frac, c, n, all[c])
			}
		}
		// Disjoint and complete: every original sample exactly once.
		seen := map[float32]int{}
		for _, part := range []*Dataset{sp.Train, sp.Test} {
			for i := 0; i < part.N; i++ {
				seen[part.Image(i)[0]]++
			}
		}
		if len(seen) != 103 {
			t.Errorf("frac %v: %d distinct samples, want 103", frac, len(seen))
		}
		again, _ := d.StratifiedSplit(frac, 9)
		if again.Train.SHA256 != sp.Train.SHA256 || again.Test.SHA256 != sp.Test.SHA256 {
			t.Errorf("frac %v: split not deterministic", frac)
		}
	}
	sp, _ := d.StratifiedSplit(0.2, 9)
	// Round-robin interleaving: the first 4 training samples are one of each class.
	for i := 0; i < 4; i++ {
		if sp.Train.Labels[i] != i {
			t.Errorf("train labels start %v, want 0 1 2 3", sp.Train.Labels[:4])
		}
	}
	if _, err := d.StratifiedSplit(1.5, 1); err == nil {
		t.Error("test fraction 1.5 accepted")
	}
	if _, err := d.StratifiedSplit(math.NaN(), 1); err == nil {
		t.Error("test fraction NaN accepted")
	}
}

func TestFingerprintAndValidate(t *testing.T) {
	d := smallDataset(5, 2)
	base := d.Fingerprint()
	if base != d.SHA256 {
		t.Fatal("SHA256 is not the fingerprint")
	}
	e := d.Subset([]int{0, 1, 2, 3, 4})
	if e.SHA256 != base {
		t.Error("identical copy has a different fingerprint")
	}
	e.Images[3] = 200.0 / 255
	if e.Fingerprint() == base {
		t.Error("fingerprint ignores a pixel change")
	}
	f := d.Subset([]int{0, 1, 2, 3, 4})
	f.Labels[4] = 1
	if f.Fingerprint() == base {
		t.Error("fingerprint ignores a label change")
	}
	bad := []struct {
		name string
		mod  func(*Dataset)
		want string
	}{
		{"NaN pixel", func(d *Dataset) { d.Images[2] = float32(math.NaN()) }, "outside [0,1]"},
		{"pixel > 1", func(d *Dataset) { d.Images[2] = 1.5 }, "outside [0,1]"},
		{"label", func(d *Dataset) { d.Labels[1] = 2 }, "label 2"},
		{"short images", func(d *Dataset) { d.Images = d.Images[:3] }, "image values"},
		{"short labels", func(d *Dataset) { d.Labels = d.Labels[:3] }, "labels"},
		{"shape", func(d *Dataset) { d.C = 0 }, "invalid shape"},
	}
	for _, b := range bad {
		x := d.Subset([]int{0, 1, 2, 3, 4})
		b.mod(x)
		if err := x.Validate(); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%s: Validate gave %v, want %q", b.name, err, b.want)
		}
	}
	if got := (&Dataset{Classes: 3, Labels: []int{0, 2, 2, 7, -1}}).ClassCounts(); got[0] != 1 || got[1] != 0 || got[2] != 2 {
		t.Errorf("ClassCounts %v", got)
	}
}
