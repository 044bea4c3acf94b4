package data

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/dpfil/dpfil/internal/npy"
)

// User datasets are named by a scheme and a path instead of a dataset name:
//
//	npz:FILE.npz      arrays x (N, C, H, W), (N, H, W) or (N, D) and y (N); optional
//	                  x_test and y_test
//	npy:DIR           DIR/x.npy and DIR/y.npy (optional DIR/x_test.npy, y_test.npy)
//	imagefolder:DIR   DIR/<class>/<image> (PNG, JPEG or GIF), or DIR/train/<class>/…
//	                  and DIR/test/<class>/…; classes in name order
//	idx:DIR           IDX files of any shape (unsigned bytes): *train-images* and
//	                  *train-labels*, optional *t10k-images*/*test-images* and
//	                  *t10k-labels*/*test-labels*, raw or gzip
//
// The input shape and class count come from the data (classes = largest label + 1).
// Pixels are uint8 (divided by 255) or floats already in [0,1]; anything else is
// refused, as are unknown files and mismatched shapes. Without a test part the data
// is split 80/20 by class (StratifiedSplit with UserSplitSeed), and Source says so.
// A relative path is taken relative to Options.DataDir when it is set. User data is
// never downloaded and never looked up anywhere else.
var userSchemes = []string{"npz", "npy", "imagefolder", "idx"}

// UserSplitSeed seeds the 80/20 split of user data that has no test part.
const UserSplitSeed = 20250101

// IsUserDataset reports whether name is a user dataset (scheme:path).
func IsUserDataset(name string) bool {
	_, _, ok := userDataset(name)
	return ok
}

// UserDatasetSchemes lists the schemes of user datasets (npz, npy, imagefolder, idx).
func UserDatasetSchemes() []string { return append([]string(nil), userSchemes...) }

func userDataset(name string) (scheme, path string, ok bool) {
	for _, s := range userSchemes {
		if p, found := strings.CutPrefix(name, s+":"); found {
			return s, p, true
		}
	}
	return "", "", false
}

// loadUserData loads a user dataset (scheme:path); ok is false when name is not one.
func loadUserData(name string, opt Options) (l *Loaded, ok bool, err error) {
	scheme, path, ok := userDataset(name)
	if !ok {
		return nil, false, nil
	}
	if path == "" {
		return nil, true, fmt.Errorf("dataset %s: no path after %q", name, scheme+":")
	}
	if !filepath.IsAbs(path) && opt.DataDir != "" {
		path = filepath.Join(opt.DataDir, path)
	}
	if _, err := os.Stat(path); err != nil {
		return nil, true, fmt.Errorf("dataset %s: %w", name, err)
	}
	var parts *userParts
	switch scheme {
	case "npz":
		parts, err = readNPZParts(path)
	case "npy":
		parts, err = readNPYParts(path)
	case "imagefolder":
		parts, err = readImageFolder(path)
	case "idx":
		parts, err = readIDXParts(path)
	}
	if err != nil {
		return nil, true, fmt.Errorf("dataset %s: %w", name, err)
	}
	l, err = parts.split(name, path)
	if err != nil {
		return nil, true, fmt.Errorf("dataset %s: %w", name, err)
	}
	return l, true, nil
}

// userParts is a user dataset as read: train and (optionally) test samples with a
// common shape, and the files they came from.
type userParts struct {
	train, test *Dataset
	classNames  []string // imagefolder: the class directories
	files       []string
}

// split finishes the parts: classes from the labels, a stratified split when there
// is no test part, names, sources and fingerprints.
func (u *userParts) split(name, path string) (*Loaded, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	classes := 0
	for _, d := range []*Dataset{u.train, u.test} {
		if d == nil {
			continue
		}
		for _, y := range d.Labels {
			classes = max(classes, y+1)
		}
	}
	if len(u.classNames) > 0 {
		classes = len(u.classNames)
	}
	if classes < 2 {
		return nil, fmt.Errorf("labels have %d distinct class (want at least 2)", classes)
	}
	source := abs
	for _, d := range []*Dataset{u.train, u.test} {
		if d != nil {
			d.Classes = classes
			d.Name = name
			if err := d.Validate(); err != nil {
				return nil, err
			}
		}
	}
	sp := &Split{Train: u.train, Test: u.test}
	if u.test == nil {
		if sp, err = u.train.StratifiedSplit(0.2, UserSplitSeed); err != nil {
			return nil, err
		}
		source += " (no test part: 80/20 stratified split, seed " + fmt.Sprint(UserSplitSeed) + ")"
	}
	l := &Loaded{Split: *sp, Dir: filepath.Dir(abs)}
	for _, d := range []*Dataset{l.Train, l.Test} {
		d.Name, d.Source, d.ClassNames = name, source, u.classNames
		d.SHA256 = d.Fingerprint()
	}
	if l.Train.N == 0 {
		return nil, fmt.Errorf("no training samples")
	}
	for _, f := range u.files {
		sum, size, err := hashFile(f)
		if err != nil {
			return nil, err
		}
		l.Files = append(l.Files, FileInfo{Path: f, Size: size, SHA256: sum})
	}
	return l, nil
}

// arraysToDataset converts an image array and a label array into a dataset.
func arraysToDataset(x, y *npy.Array, what string) (*Dataset, error) {
	if len(x.Shape) < 2 || len(x.Shape) > 4 {
		return nil, fmt.Errorf("%s: images have shape %v, want (N, C, H, W), (N, H, W) or (N, D)", what, x.Shape)
	}
	n := x.Shape[0]
	d := shapedDataset(x.Shape)
	if n == 0 || d.Dim() == 0 {
		return nil, fmt.Errorf("%s: images have shape %v: no samples or no values", what, x.Shape)
	}
	ys := y.Shape
	if !(len(ys) == 1 && ys[0] == n) && !(len(ys) == 2 && ys[0] == n && ys[1] == 1) {
		return nil, fmt.Errorf("%s: labels have shape %v, want (%d,) to match the %d images", what, ys, n, n)
	}
	if !y.Integer() {
		return nil, fmt.Errorf("%s: labels are %s, want an integer dtype (class indices 0, 1, …)", what, y.Dtype)
	}
	d.Labels = make([]int, n)
	for i, v := range y.Data {
		if v < 0 || v > 1<<20 {
			return nil, fmt.Errorf("%s: label %v of sample %d is not a class index in [0, 2²⁰)", what, v, i)
		}
		d.Labels[i] = int(v)
	}
	d.Images = make([]float32, len(x.Data))
	switch {
	case x.Dtype == "|u1" || x.Dtype == "<u1" || x.Dtype == "=u1":
		for i, v := range x.Data {
			d.Images[i] = float32(v) / 255
		}
	case x.Dtype[1] == 'f':
		for i, v := range x.Data {
			if !(v >= 0 && v <= 1) || math.IsNaN(v) {
				return nil, fmt.Errorf("%s: value %v of sample %d outside [0,1]: scale the images to [0,1] (FIL is taken w.r.t. raw pixels in [0,1]) or store them as uint8", what, v, i/d.Dim())
			}
			d.Images[i] = float32(v)
		}
	default:
		return nil, fmt.Errorf("%s: images are %s, want uint8 (0–255) or float32/float64 in [0,1]", what, x.Dtype)
	}
	return d, nil
}

// pairArrays finds the named arrays among arrs, refusing unknown ones.
func pairArrays(arrs map[string]*npy.Array, where string) (train, test *Dataset, err error) {
	for k := range arrs {
		switch k {
		case "x", "y", "x_test", "y_test":
		default:
			return nil, nil, fmt.Errorf("%s: unknown array %q (want x, y and optionally x_test, y_test)", where, k)
		}
	}
	if arrs["x"] == nil || arrs["y"] == nil {
		return nil, nil, fmt.Errorf("%s: want arrays x (images) and y (labels)", where)
	}
	if train, err = arraysToDataset(arrs["x"], arrs["y"], where); err != nil {
		return nil, nil, err
	}
	xt, yt := arrs["x_test"], arrs["y_test"]
	if (xt == nil) != (yt == nil) {
		return nil, nil, fmt.Errorf("%s: give both x_test and y_test, or neither", where)
	}
	if xt != nil {
		if test, err = arraysToDataset(xt, yt, where+" (test)"); err != nil {
			return nil, nil, err
		}
		if test.C != train.C || test.H != train.H || test.W != train.W {
			return nil, nil, fmt.Errorf("%s: test images %dx%dx%d, training images %dx%dx%d", where, test.C, test.H, test.W, train.C, train.H, train.W)
		}
	}
	return train, test, nil
}

func readNPZParts(path string) (*userParts, error) {
	m, err := npy.ReadNPZFile(path)
	if errors.Is(err, npy.ErrIsDir) {
		return nil, fmt.Errorf("%s is a directory; npz: wants an .npz file (npy:DIR reads x.npy and y.npy)", path)
	}
	if err != nil {
		return nil, err
	}
	train, test, err := pairArrays(m, path)
	if err != nil {
		return nil, err
	}
	return &userParts{train: train, test: test, files: []string{path}}, nil
}

func readNPYParts(dir string) (*userParts, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("npy: wants a directory holding x.npy and y.npy: %w", err)
	}
	m := map[string]*npy.Array{}
	var files []string
	for _, e := range ents {
		name := e.Name()
		if strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".npy") {
			continue
		}
		p := filepath.Join(dir, name)
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		a, err := npy.Read(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		m[strings.TrimSuffix(name, ".npy")] = a
		files = append(files, p)
	}
	train, test, err := pairArrays(m, dir)
	if err != nil {
		return nil, err
	}
	return &userParts{train: train, test: test, files: files}, nil
}

// ReadNPYBatch reads a batch of inputs from an .npy file: shape (N, C, H, W), or
// (C, H, W), (H, W) or (N, H, W) when C (and N) are 1 as far as the model's input
// c×h×w tells; uint8 (divided by 255) or floats in [0,1]. It returns N and the
// N·c·h·w values.
func ReadNPYBatch(path string, c, h, w int) (int, []float32, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, nil, err
	}
	defer f.Close()
	a, err := npy.Read(f)
	if err != nil {
		return 0, nil, fmt.Errorf("%s: %w", path, err)
	}
	sh := a.Shape
	n := -1
	switch {
	case len(sh) == 4 && sh[1] == c && sh[2] == h && sh[3] == w:
		n = sh[0]
	case len(sh) == 3 && sh[0] == c && sh[1] == h && sh[2] == w:
		n = 1
	case len(sh) == 3 && c == 1 && sh[1] == h && sh[2] == w:
		n = sh[0]
	case len(sh) == 2 && c == 1 && sh[0] == h && sh[1] == w:
		n = 1
	case len(sh) == 2 && h == 1 && w == 1 && sh[1] == c:
		n = sh[0]
	}
	if n <= 0 {
		return 0, nil, fmt.Errorf("%s: shape %v does not hold inputs of %dx%dx%d (want (N, %d, %d, %d))", path, sh, c, h, w, c, h, w)
	}
	y := &npy.Array{Dtype: "<i8", Shape: []int{n}, Data: make([]float64, n)}
	x := &npy.Array{Dtype: a.Dtype, Shape: []int{n, c, h, w}, Data: a.Data}
	d, err := arraysToDataset(x, y, path)
	if err != nil {
		return 0, nil, err
	}
	return n, d.Images, nil
}

// shapedDataset returns an empty Dataset of the image shape dims: (N, C, H, W),
// (N, H, W) with one channel, or (N, D) as D channels of 1×1 (other lengths: N
// images of 1×1×1).
func shapedDataset(dims []int) *Dataset {
	d := &Dataset{N: dims[0], C: 1, H: 1, W: 1}
	switch len(dims) {
	case 2:
		d.C = dims[1]
	case 3:
		d.H, d.W = dims[1], dims[2]
	case 4:
		d.C, d.H, d.W = dims[1], dims[2], dims[3]
	}
	return d
}
