package data

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

//go:embed embedded/mnist-embedded-images-idx3-ubyte.gz embedded/mnist-embedded-labels-idx1-ubyte.gz
var embeddedFS embed.FS

const (
	embeddedImages = "embedded/mnist-embedded-images-idx3-ubyte.gz"
	embeddedLabels = "embedded/mnist-embedded-labels-idx1-ubyte.gz"
	// EmbeddedSplitSeed seeds the per-class permutations (Permutation(n_c, seed+c)) that
	// split mnist-embedded into train and test (StratifiedSplit with test fraction 0.2).
	EmbeddedSplitSeed = 20240607
)

// FileInfo describes one source file of a loaded dataset.
type FileInfo struct {
	Path          string `json:"path"`
	Size          int64  `json:"size"`
	SHA256        string `json:"sha256"`                   // of the file as stored
	ContentSHA256 string `json:"content_sha256,omitempty"` // of the uncompressed IDX file
	// Verified names the known digest the file matched: "sha256" (canonical download),
	// "content-sha256" (same content, different compression, e.g. Debian's), or "" when
	// no known digest matched (a user's own file: loaded after format validation only).
	Verified string `json:"verified"`
	// Origin is where the file was fetched from, when dpfil fetched it (nil for files
	// put there by hand, Debian's, or the embedded ones).
	Origin *Origin `json:"origin,omitempty"`
}

// Loaded is a dataset with the description of the files it came from.
type Loaded struct {
	Split
	Dir   string     // directory the files were read from ("" for embedded)
	Files []FileInfo // source files with their checksums
}

// Load returns the named dataset (see Names) split into train and test parts. Files
// are looked up in opt.DataDir, the cache directory, system directories (Debian's
// Fashion-MNIST), and are otherwise downloaded into the cache unless opt.NoDownload.
func Load(name string, opt Options) (*Split, error) {
	l, err := LoadFiles(name, opt)
	if err != nil {
		return nil, err
	}
	return &l.Split, nil
}

// LoadFiles is Load that also reports where the data came from and the checksums of
// the source files.
func LoadFiles(name string, opt Options) (*Loaded, error) {
	if l, ok, err := loadUserData(name, opt); ok { // scheme:path, see userdata.go
		return l, err
	}
	s, err := lookupIn(name, opt.DataDir)
	if err != nil {
		return nil, err
	}
	return loadSpec(s, opt, cifarRecordsPerBin)
}

func loadSpec(s spec, opt Options, cifarRecords int) (*Loaded, error) {
	var l *Loaded
	var err error
	switch {
	case s.Format == formatEmbedded:
		l, err = loadEmbedded()
	default:
		l, err = loadFromDisk(s, opt, cifarRecords)
	}
	if err != nil {
		return nil, err
	}
	if len(s.Filter) > 0 {
		for _, d := range []**Dataset{&l.Train, &l.Test} {
			f, err := (*d).FilterClasses(s.Filter...)
			if err != nil {
				return nil, err
			}
			*d = f
		}
	}
	l.Train.Name, l.Test.Name = s.Name, s.Name
	return l, nil
}

// loadEmbedded decodes the embedded 10 000 digits and splits them.
func loadEmbedded() (*Loaded, error) {
	var infos []FileInfo
	var idx []*IDX
	for _, p := range []struct {
		path  string
		ndims int
	}{{embeddedImages, 3}, {embeddedLabels, 1}} {
		raw, err := embeddedFS.ReadFile(p.path)
		if err != nil {
			return nil, fmt.Errorf("embedded data: %w", err)
		}
		x, err := DecodeIDX(bytes.NewReader(raw), "embedded:"+p.path, p.ndims)
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(raw)
		infos = append(infos, FileInfo{Path: "embedded:" + p.path, Size: int64(len(raw)), SHA256: hex.EncodeToString(sum[:]), ContentSHA256: x.ContentSHA256, Verified: "sha256"})
		idx = append(idx, x)
	}
	img, lab := idx[0], idx[1]
	if img.Dims[1] != 28 || img.Dims[2] != 28 || img.Dims[0] != lab.Dims[0] {
		return nil, fmt.Errorf("embedded data: images %v and labels %v do not match", img.Dims, lab.Dims)
	}
	labels := make([]int, len(lab.Data))
	for i, b := range lab.Data {
		if b >= 10 {
			return nil, fmt.Errorf("embedded data: label %d of item %d outside [0,10)", b, i)
		}
		labels[i] = int(b)
	}
	all := &Dataset{Name: "mnist-embedded", Source: "embedded", N: img.Dims[0], C: 1, H: 28, W: 28, Classes: 10, Images: bytesToUnit(img.Data), Labels: labels}
	sp, err := all.StratifiedSplit(0.2, EmbeddedSplitSeed)
	if err != nil {
		return nil, err
	}
	return &Loaded{Split: *sp, Files: infos}, nil
}

// loadFromDisk locates (or downloads) the files of s and decodes them.
func loadFromDisk(s spec, opt Options, cifarRecords int) (*Loaded, error) {
	paths, err := locate(s, opt)
	if err == nil {
		paths, err = checkCache(s, opt, paths)
		if err != nil {
			return nil, err
		}
	} else {
		var nf *notFoundError
		if !errors.As(err, &nf) || opt.NoDownload || opt.DataDir != "" {
			return nil, err // with --data-dir nothing is fetched elsewhere
		}
		root, rerr := cacheRoot(opt)
		if rerr != nil {
			return nil, rerr
		}
		dir := filepath.Join(root, s.Dir)
		if _, derr := fetchInto(s, opt, dir); derr != nil {
			nf.cause = derr
			return nil, nf
		}
		var missing []string
		paths, missing = findIn(s, dir)
		if len(missing) > 0 {
			return nil, fmt.Errorf("dataset %s: files %v still missing in %s after download", s.Dir, missing, dir)
		}
	}
	l := &Loaded{Dir: filepath.Dir(paths[0])}
	content := make([]string, len(paths))
	switch s.Format {
	case formatIDX:
		train, sums, err := loadIDXPair(s.Dir, paths[0], paths[1], 10)
		if err != nil {
			return nil, err
		}
		content[0], content[1] = sums[0], sums[1]
		test, sums, err := loadIDXPair(s.Dir, paths[2], paths[3], 10)
		if err != nil {
			return nil, err
		}
		content[2], content[3] = sums[0], sums[1]
		l.Train, l.Test = train, test
	case formatCIFAR:
		nTrain := len(cifarTrainNames())
		train, err := loadCIFARFiles(s.Dir, paths[:nTrain], cifarRecords)
		if err != nil {
			return nil, err
		}
		test, err := loadCIFARFiles(s.Dir, paths[nTrain:], cifarRecords)
		if err != nil {
			return nil, err
		}
		l.Train, l.Test = train, test
	default:
		return nil, fmt.Errorf("dataset %s: unsupported format", s.Name)
	}
	if err := checkNotOtherDataset(s, paths, content); err != nil {
		return nil, err
	}
	prov := readProvenance(l.Dir)
	for i, p := range paths {
		fi, err := describeFile(p, s.Files[i], content[i])
		if err != nil {
			return nil, err
		}
		if o, ok := prov.Files[s.Files[i].Name]; ok && o.SHA256 == fi.SHA256 && filepath.Base(p) == s.Files[i].Name {
			fi.Origin = &o
		}
		l.Files = append(l.Files, fi)
	}
	return l, nil
}

// checkCache verifies the files found in the cache directory against the known
// digests (files in a user's --data-dir or a system directory are only reported,
// see FileInfo.Verified). A corrupt cached file is an error naming it; unless
// opt.NoDownload it is set aside and fetched again. It returns the files' paths.
func checkCache(s spec, opt Options, paths []string) ([]string, error) {
	root, err := cacheRoot(opt)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(root, s.Dir)
	if len(paths) == 0 || filepath.Dir(paths[0]) != dir {
		return paths, nil
	}
	bad, err := verifyDir(s, dir)
	if err != nil || len(bad) == 0 {
		return paths, err
	}
	var errs []error
	for _, f := range s.Files {
		if e, ok := bad[f.Name]; ok {
			errs = append(errs, e)
		}
	}
	if opt.NoDownload {
		return nil, fmt.Errorf("dataset %s: corrupt file(s) in the cache: %w. Remedy: run 'dpfil data fetch --dataset %s' (it sets corrupt files aside and fetches verified copies), or delete them", s.Dir, errors.Join(errs...), s.Dir)
	}
	logf(opt, "dataset %s: corrupt file(s) in the cache, fetching them again: %v", s.Dir, errors.Join(errs...))
	if _, err := fetchInto(s, opt, dir); err != nil {
		return nil, fmt.Errorf("dataset %s: corrupt file(s) in the cache (%v), and fetching them again failed: %w", s.Dir, errors.Join(errs...), err)
	}
	paths, missing := findIn(s, dir)
	if len(missing) > 0 {
		return nil, fmt.Errorf("dataset %s: files %v still missing in %s after download", s.Dir, missing, dir)
	}
	return paths, nil
}

// describeFile hashes a source file and checks it, and its content digest (if any),
// against the known digests of f.
func describeFile(path string, f fileSpec, content string) (FileInfo, error) {
	fi := FileInfo{Path: path, ContentSHA256: content}
	sum, size, err := hashFile(path)
	if err != nil {
		return fi, err
	}
	fi.Size, fi.SHA256 = size, sum
	switch {
	case f.SHA256 != "" && sum == f.SHA256:
		fi.Verified = "sha256"
	case f.ContentSHA256 != "" && content == f.ContentSHA256:
		fi.Verified = "content-sha256"
	}
	return fi, nil
}

// idxDims is 3 for an IDX images file name, 1 for a labels file name.
func idxDims(name string) int {
	if strings.Contains(name, "idx3") {
		return 3
	}
	return 1
}

// checkNotOtherDataset refuses files that are, by their digests, another known
// dataset's (Fashion-MNIST given as --dataset mnist trains happily and would be
// labelled "mnist"). Files matching no known digest pass (user copies, format-checked).
func checkNotOtherDataset(s spec, paths, content []string) error {
	if s.Format != formatIDX {
		return nil
	}
	matches := func(o spec) bool {
		for i, p := range paths {
			sum, _, err := hashFile(p)
			if err != nil {
				return false
			}
			f := o.Files[i]
			if !(f.SHA256 != "" && sum == f.SHA256 || f.ContentSHA256 != "" && content[i] == f.ContentSHA256) {
				return false
			}
		}
		return true
	}
	if matches(s) {
		return nil
	}
	for _, name := range Names() {
		o, err := lookup(name)
		if err != nil || o.Format != formatIDX || o.Dir == s.Dir || len(o.Files) != len(paths) || o.Base != "" {
			continue
		}
		if matches(o) {
			return fmt.Errorf("dataset %s: the files in %s are %s's (their SHA-256 match its known digests), not %s's; use --dataset %s", s.Name, filepath.Dir(paths[0]), o.Name, s.Dir, o.Name)
		}
	}
	return nil
}
