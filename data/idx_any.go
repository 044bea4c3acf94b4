package data

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// idxRoles are the files of an idx: dataset directory, by name fragment.
var idxRoles = []struct {
	role      string
	fragments []string
}{
	{"train images", []string{"train-images"}},
	{"train labels", []string{"train-labels"}},
	{"test images", []string{"t10k-images", "test-images"}},
	{"test labels", []string{"t10k-labels", "test-labels"}},
}

// readIDXParts reads an IDX dataset of any image shape from dir: train images and
// labels, and optionally test images and labels, found by their names; any other
// file is refused.
func readIDXParts(dir string) (*userParts, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("idx: wants a directory of IDX files: %w", err)
	}
	found := make([]string, len(idxRoles))
	for _, e := range ents {
		name := e.Name()
		if strings.HasPrefix(name, ".") || e.IsDir() {
			continue
		}
		role := -1
		for r, spec := range idxRoles {
			for _, f := range spec.fragments {
				if strings.Contains(name, f) {
					role = r
				}
			}
		}
		if role < 0 {
			return nil, fmt.Errorf("%s: unknown file %q (want *train-images*, *train-labels* and optionally *t10k-images*/*test-images*, *t10k-labels*/*test-labels*)", dir, name)
		}
		if found[role] != "" {
			return nil, fmt.Errorf("%s: two %s files, %s and %s", dir, idxRoles[role].role, filepath.Base(found[role]), name)
		}
		found[role] = filepath.Join(dir, name)
	}
	if found[0] == "" || found[1] == "" {
		return nil, fmt.Errorf("%s: want a *train-images* and a *train-labels* IDX file", dir)
	}
	if (found[2] == "") != (found[3] == "") {
		return nil, fmt.Errorf("%s: give both test images and test labels, or neither", dir)
	}
	u := &userParts{}
	if u.train, err = readIDXAnyPair(found[0], found[1]); err != nil {
		return nil, err
	}
	u.files = append(u.files, found[0], found[1])
	if found[2] != "" {
		if u.test, err = readIDXAnyPair(found[2], found[3]); err != nil {
			return nil, err
		}
		if u.test.C != u.train.C || u.test.H != u.train.H || u.test.W != u.train.W {
			return nil, fmt.Errorf("%s: test images are %dx%dx%d, training images %dx%dx%d", dir, u.test.C, u.test.H, u.test.W, u.train.C, u.train.H, u.train.W)
		}
		u.files = append(u.files, found[2], found[3])
	}
	return u, nil
}

// idxNDims reads the number of dimensions from an IDX file's magic (raw or gzip),
// refusing types other than unsigned bytes.
func idxNDims(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	br := bufio.NewReader(f)
	var r io.Reader = br
	if h, err := br.Peek(2); err == nil && h[0] == 0x1f && h[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return 0, fmt.Errorf("%s: corrupt gzip header: %w", path, err)
		}
		defer zr.Close()
		r = zr
	}
	var m [4]byte
	if _, err := io.ReadFull(r, m[:]); err != nil {
		return 0, fmt.Errorf("%s: not an IDX file (cannot read the magic): %w", path, err)
	}
	if m[0] != 0 || m[1] != 0 {
		return 0, fmt.Errorf("%s: not an IDX file (magic %02x%02x%02x%02x)", path, m[0], m[1], m[2], m[3])
	}
	if m[2] != 0x08 {
		return 0, fmt.Errorf("%s: IDX element type 0x%02x, only unsigned bytes (0x08) are supported", path, m[2])
	}
	return int(m[3]), nil
}

// readIDXAnyPair reads an images file of shape (N, D), (N, H, W) or (N, C, H, W)
// and its labels file (N).
func readIDXAnyPair(imagesPath, labelsPath string) (*Dataset, error) {
	nd, err := idxNDims(imagesPath)
	if err != nil {
		return nil, err
	}
	if nd < 2 || nd > 4 {
		return nil, fmt.Errorf("%s: %d dimensions, want images of shape (N, D), (N, H, W) or (N, C, H, W)", imagesPath, nd)
	}
	img, err := decodeIDXFile(imagesPath, nd)
	if err != nil {
		return nil, err
	}
	lab, err := decodeIDXFile(labelsPath, 1)
	if err != nil {
		return nil, err
	}
	n := img.Dims[0]
	if n == 0 {
		return nil, fmt.Errorf("%s: no images", imagesPath)
	}
	if lab.Dims[0] != n {
		return nil, fmt.Errorf("%s has %d labels for the %d images of %s", labelsPath, lab.Dims[0], n, imagesPath)
	}
	d := shapedDataset(img.Dims)
	d.Images, d.Labels = bytesToUnit(img.Data), make([]int, n)
	for i, b := range lab.Data {
		d.Labels[i] = int(b)
	}
	return d, nil
}
