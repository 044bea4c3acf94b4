// Package data loads the image-classification datasets dpfil trains on: MNIST and
// Fashion-MNIST (IDX files, raw or gzip), CIFAR-10 (binary batches) and an embedded
// 10 000-digit MNIST subset compiled into the binary, so the default job works
// offline.
//
// Images are float32 in [0,1] (byte/255), stored NCHW row-major; labels are ints in
// [0, Classes). Files are looked up, in this order, in Options.DataDir, the cache
// directory ($DPFIL_DATA or os.UserCacheDir()/dpfil, one sub-directory per dataset),
// Debian's /usr/share/datasets/fashion-mnist (Fashion-MNIST only), and are finally
// downloaded from the canonical mirrors with SHA-256 (and MD5) verification, written
// atomically into the cache. Every decoder validates its input (magic numbers, shapes,
// counts, sizes, label ranges, gzip integrity) and returns an error naming the file and
// what was expected; no input makes it panic.
package data

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"sort"

	"github.com/dpfil/dpfil/internal/splitmix"
)

// Dataset is a set of images with their labels, all in memory.
type Dataset struct {
	Name       string    // e.g. "mnist-embedded", "fashion-mnist", "cifar10", "mnist01-embedded"
	Source     string    // where it was read from: "embedded", a file path, or a URL
	SHA256     string    // hex SHA-256 fingerprint of the content (see Fingerprint)
	N, C, H, W int       // sample count and per-sample shape (MNIST: C=1,H=W=28; CIFAR: 3,32,32)
	Classes    int       // number of classes (10, or 2 for binary variants)
	Images     []float32 // N*C*H*W values in [0,1], NCHW, row-major
	Labels     []int     // N labels in [0, Classes)
	ClassNames []string  // names of the classes when the data has them (image folders), else nil
}

// Split is a dataset's training and test parts.
type Split struct{ Train, Test *Dataset }

// Dim is the number of values of one sample, C*H*W.
func (d *Dataset) Dim() int { return d.C * d.H * d.W }

// Image returns a view (not a copy) of sample i's C*H*W values.
func (d *Dataset) Image(i int) []float32 {
	dim := d.Dim()
	return d.Images[i*dim : (i+1)*dim : (i+1)*dim]
}

// Subset returns a copy of the samples idx, in that order (an index may repeat). Like
// slice indexing it panics on an index outside [0, N); use Select to get an error
// instead. The copy's SHA256 is the fingerprint of its own content.
func (d *Dataset) Subset(idx []int) *Dataset {
	s, err := d.Select(idx)
	if err != nil {
		panic(err)
	}
	return s
}

// Select is Subset with an error instead of a panic for an index outside [0, N).
func (d *Dataset) Select(idx []int) (*Dataset, error) {
	dim := d.Dim()
	out := &Dataset{
		Name: d.Name, Source: d.Source, N: len(idx), C: d.C, H: d.H, W: d.W, Classes: d.Classes, ClassNames: d.ClassNames,
		Images: make([]float32, len(idx)*dim),
		Labels: make([]int, len(idx)),
	}
	for j, i := range idx {
		if i < 0 || i >= d.N {
			return nil, fmt.Errorf("dataset %s: subset index %d (position %d) outside [0, %d)", d.Name, i, j, d.N)
		}
		copy(out.Images[j*dim:(j+1)*dim], d.Images[i*dim:(i+1)*dim])
		out.Labels[j] = d.Labels[i]
	}
	out.SHA256 = out.Fingerprint()
	return out, nil
}

// ClassCounts returns the number of samples of each class 0..Classes-1.
func (d *Dataset) ClassCounts() []int {
	n := d.Classes
	if n < 0 {
		n = 0
	}
	counts := make([]int, n)
	for _, y := range d.Labels {
		if y >= 0 && y < n {
			counts[y]++
		}
	}
	return counts
}

// Validate checks the dataset's internal consistency: shape, lengths, pixel range
// [0,1] (no NaN) and label range.
func (d *Dataset) Validate() error {
	if d.N < 0 || d.C <= 0 || d.H <= 0 || d.W <= 0 || d.Classes <= 0 {
		return fmt.Errorf("dataset %s: invalid shape N=%d C=%d H=%d W=%d Classes=%d", d.Name, d.N, d.C, d.H, d.W, d.Classes)
	}
	if len(d.Images) != d.N*d.Dim() {
		return fmt.Errorf("dataset %s: %d image values, want N*C*H*W = %d", d.Name, len(d.Images), d.N*d.Dim())
	}
	if len(d.Labels) != d.N {
		return fmt.Errorf("dataset %s: %d labels, want N = %d", d.Name, len(d.Labels), d.N)
	}
	for i, v := range d.Images {
		if !(v >= 0 && v <= 1) {
			return fmt.Errorf("dataset %s: value %v of sample %d outside [0,1]", d.Name, v, i/d.Dim())
		}
	}
	for i, y := range d.Labels {
		if y < 0 || y >= d.Classes {
			return fmt.Errorf("dataset %s: label %d of sample %d outside [0,%d)", d.Name, y, i, d.Classes)
		}
	}
	return nil
}

// Fingerprint is the hex SHA-256 of a canonical encoding of the content, independent
// of file format and compression: the big-endian uint32s N, C, H, W, Classes, then
// every value as the byte round(v·255) (half up, clamped to [0,255], NaN as 0), then every label as a
// big-endian uint32. Two datasets with the same fingerprint hold the same 8-bit images
// and labels in the same order.
func (d *Dataset) Fingerprint() string {
	h := sha256.New()
	var hdr [20]byte
	for i, v := range []int{d.N, d.C, d.H, d.W, d.Classes} {
		binary.BigEndian.PutUint32(hdr[4*i:], uint32(v))
	}
	h.Write(hdr[:])
	buf := make([]byte, 0, 1<<16)
	for _, v := range d.Images {
		buf = append(buf, toByte(v))
		if len(buf) == cap(buf) {
			h.Write(buf)
			buf = buf[:0]
		}
	}
	h.Write(buf)
	buf = buf[:0]
	for _, y := range d.Labels {
		buf = binary.BigEndian.AppendUint32(buf, uint32(y))
		if len(buf)+4 > cap(buf) {
			h.Write(buf)
			buf = buf[:0]
		}
	}
	h.Write(buf)
	return hex.EncodeToString(h.Sum(nil))
}

// toByte is round(v·255) (half up) clamped to [0,255]; NaN maps to 0.
func toByte(v float32) byte {
	x := v*255 + 0.5
	switch {
	case x >= 255:
		return 255
	case x >= 1:
		return byte(int32(x))
	default: // also NaN
		return 0
	}
}

// FilterClasses keeps only the samples whose label is in classes and relabels them
// by their position in classes: classes = [3, 8] maps label 3 to 0 and 8 to 1. The
// result has Classes = len(classes) and keeps the samples' order.
func (d *Dataset) FilterClasses(classes ...int) (*Dataset, error) {
	if len(classes) == 0 {
		return nil, fmt.Errorf("dataset %s: filter needs at least one class", d.Name)
	}
	newLabel := make(map[int]int, len(classes))
	for i, c := range classes {
		if c < 0 || c >= d.Classes {
			return nil, fmt.Errorf("dataset %s: class %d outside [0,%d)", d.Name, c, d.Classes)
		}
		if _, dup := newLabel[c]; dup {
			return nil, fmt.Errorf("dataset %s: class %d listed twice", d.Name, c)
		}
		newLabel[c] = i
	}
	var idx []int
	for i, y := range d.Labels {
		if _, ok := newLabel[y]; ok {
			idx = append(idx, i)
		}
	}
	out, err := d.Select(idx)
	if err != nil {
		return nil, err
	}
	out.Classes = len(classes)
	for i, y := range out.Labels {
		out.Labels[i] = newLabel[y]
	}
	out.SHA256 = out.Fingerprint()
	return out, nil
}

// Head returns a copy of the first n samples (all of them if n ≥ N).
func (d *Dataset) Head(n int) (*Dataset, error) {
	if n < 0 {
		return nil, fmt.Errorf("dataset %s: head of %d samples", d.Name, n)
	}
	if n > d.N {
		n = d.N
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	return d.Select(idx)
}

// Sample returns a copy of n samples drawn without replacement, uniformly, by a
// Fisher–Yates shuffle driven by SplitMix64(seed); the same seed always gives the same
// samples in the same order, on every platform and Go version.
func (d *Dataset) Sample(n int, seed uint64) (*Dataset, error) {
	if n < 0 || n > d.N {
		return nil, fmt.Errorf("dataset %s: cannot sample %d of %d samples", d.Name, n, d.N)
	}
	return d.Select(Permutation(d.N, seed)[:n])
}

// StratifiedSplit splits d into a training and a test part keeping the class
// proportions: class c contributes round(testFrac·n_c) test samples (largest-remainder
// rounding so the test part has round(testFrac·N) samples in all), chosen by a
// per-class Permutation(n_c, seed+c). Both parts interleave the classes round-robin
// (so any prefix is close to balanced) and are deterministic in seed.
func (d *Dataset) StratifiedSplit(testFrac float64, seed uint64) (*Split, error) {
	if !(testFrac >= 0 && testFrac <= 1) {
		return nil, fmt.Errorf("dataset %s: test fraction %v outside [0,1]", d.Name, testFrac)
	}
	byClass := make([][]int, d.Classes)
	for i, y := range d.Labels {
		if y < 0 || y >= d.Classes {
			return nil, fmt.Errorf("dataset %s: label %d of sample %d outside [0,%d)", d.Name, y, i, d.Classes)
		}
		byClass[y] = append(byClass[y], i)
	}
	counts := make([]int, d.Classes)
	for c := range byClass {
		counts[c] = len(byClass[c])
	}
	nTest := largestRemainder(counts, testFrac)
	var trainPer, testPer [][]int
	for c, members := range byClass {
		p := Permutation(len(members), seed+uint64(c))
		picked := make([]int, len(members))
		for j, k := range p {
			picked[j] = members[k]
		}
		trainPer = append(trainPer, picked[nTest[c]:])
		testPer = append(testPer, picked[:nTest[c]])
	}
	train, err := d.Select(roundRobin(trainPer))
	if err != nil {
		return nil, err
	}
	test, err := d.Select(roundRobin(testPer))
	if err != nil {
		return nil, err
	}
	return &Split{Train: train, Test: test}, nil
}

// largestRemainder apportions round(frac·Σcounts) among the classes proportionally to
// counts (Hamilton's method; ties go to the lower class index).
func largestRemainder(counts []int, frac float64) []int {
	total := 0
	for _, n := range counts {
		total += n
	}
	want := int(math.Round(frac * float64(total)))
	out := make([]int, len(counts))
	type rem struct {
		c int
		r float64
	}
	rems := make([]rem, len(counts))
	got := 0
	for c, n := range counts {
		x := frac * float64(n)
		out[c] = int(math.Floor(x))
		got += out[c]
		rems[c] = rem{c, x - math.Floor(x)}
	}
	sort.SliceStable(rems, func(i, j int) bool { return rems[i].r > rems[j].r })
	for k := 0; got < want && k < len(rems); k++ {
		if out[rems[k].c] < counts[rems[k].c] {
			out[rems[k].c]++
			got++
		}
	}
	return out
}

// roundRobin interleaves the lists: first element of each, then second of each, ...
func roundRobin(lists [][]int) []int {
	var out []int
	for j := 0; ; j++ {
		added := false
		for _, l := range lists {
			if j < len(l) {
				out = append(out, l[j])
				added = true
			}
		}
		if !added {
			return out
		}
	}
}

// Permutation returns a permutation of 0..n-1: the Fisher–Yates shuffle (for i from
// n-1 down to 1, swap i with j = u mod (i+1)) of the identity, where the u are
// successive outputs of SplitMix64 started at seed. It is fixed by this definition, not
// by a library's random stream. (The modulo bias, below n/2⁶⁴, is negligible.)
func Permutation(n int, seed uint64) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	state := seed
	for i := n - 1; i > 0; i-- {
		j := int(splitmix.Next(&state) % uint64(i+1))
		p[i], p[j] = p[j], p[i]
	}
	return p
}
