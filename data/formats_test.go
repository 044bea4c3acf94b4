package data

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDecodeIDXRoundTrip(t *testing.T) {
	pix := fixturePixels(3, 784, 1)
	labels := []byte{0, 9, 5}
	cases := []struct {
		name  string
		raw   []byte
		ndims int
		dims  []int
		data  []byte
	}{
		{"images", imagesIDX(pix), 3, []int{3, 28, 28}, pix},
		{"labels", labelsIDX(labels), 1, []int{3}, labels},
		{"non-square images", idxBytes(idxImagesMagic, []uint32{2, 3, 5}, pix[:30]), 3, []int{2, 3, 5}, pix[:30]},
		{"empty labels", labelsIDX(nil), 1, []int{0}, nil},
	}
	for _, c := range cases {
		for _, gz := range []bool{false, true} {
			in := c.raw
			if gz {
				in = gzBytes(t, c.raw)
			}
			x, err := DecodeIDX(bytes.NewReader(in), c.name, c.ndims)
			if err != nil {
				t.Fatalf("%s gz=%v: %v", c.name, gz, err)
			}
			if !equalInts(x.Dims, c.dims) || !bytes.Equal(x.Data, c.data) {
				t.Errorf("%s gz=%v: got dims %v, %d bytes; want %v, %d bytes", c.name, gz, x.Dims, len(x.Data), c.dims, len(c.data))
			}
			sum := sha256.Sum256(c.raw)
			if x.ContentSHA256 != hex.EncodeToString(sum[:]) {
				t.Errorf("%s gz=%v: content SHA-256 %s, want %x", c.name, gz, x.ContentSHA256, sum)
			}
		}
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestReadIDXImagesValues(t *testing.T) {
	pix := make([]byte, 256*784/256*2)
	for i := range pix {
		pix[i] = byte(i)
	}
	p := writeFile(t, t.TempDir(), "img.gz", gzBytes(t, imagesIDX(pix)))
	imgs, n, h, w, err := ReadIDXImages(p, 28, 28)
	if err != nil {
		t.Fatal(err)
	}
	if n != len(pix)/784 || h != 28 || w != 28 {
		t.Fatalf("shape %d×%d×%d", n, h, w)
	}
	for i, v := range imgs {
		// Independent reference: float64 division, then rounding to float32.
		if want := float32(float64(pix[i]) / 255); v != want {
			t.Fatalf("value %d: %v, want %v", i, v, want)
		}
	}
	if imgs[0] != 0 || imgs[255] != 1 {
		t.Errorf("byte 0 → %v, byte 255 → %v; want 0 and 1", imgs[0], imgs[255])
	}
}

// TestIDXCorrupt feeds broken files to the IDX readers: each must fail with an error
// naming the file and the problem, never panic.
func TestIDXCorrupt(t *testing.T) {
	pix := fixturePixels(4, 784, 2)
	good := imagesIDX(pix)
	goodGz := gzBytes(t, good)
	flip := func(b []byte, i int) []byte {
		c := append([]byte(nil), b...)
		c[i] ^= 0xff
		return c
	}
	cases := []struct {
		name   string
		data   []byte
		labels bool // read as a labels file
		want   string
	}{
		{"empty", nil, false, "empty"},
		{"wrong magic", idxBytes(0x00000804, []uint32{4, 28, 28}, pix), false, "wrong magic number 0x00000804, want 0x00000803"},
		{"labels file read as images", labelsIDX([]byte{1, 2}), false, "wrong magic number 0x00000801, want 0x00000803"},
		{"images file read as labels", good, true, "wrong magic number 0x00000803, want 0x00000801"},
		{"float type", idxBytes(0x00000d03, []uint32{4, 28, 28}, pix), false, "wrong magic"},
		{"truncated magic", good[:3], false, "truncated"},
		{"truncated header", good[:10], false, "truncated"},
		{"truncated data", good[:len(good)-100], false, "truncated: 3036 of 3136 data bytes"},
		{"trailing data", append(append([]byte(nil), good...), 7), false, "trailing data"},
		{"zero dimension", idxBytes(idxImagesMagic, []uint32{4, 0, 28}, nil), false, "dimension 1 is 0"},
		{"huge dimensions", idxBytes(idxImagesMagic, []uint32{0xffffffff, 0xffffffff, 28}, pix), false, "more than any supported dataset"},
		{"wrong image size", idxBytes(idxImagesMagic, []uint32{4, 27, 28}, pix[:4*27*28]), false, "images are 27×28, want 28×28"},
		{"label out of range", labelsIDX([]byte{1, 10, 2}), true, "label 10 of item 1 outside [0,10)"},
		{"truncated gzip", goodGz[:len(goodGz)/2], false, "gzip"},
		{"gzip without trailer", goodGz[:len(goodGz)-8], false, "gzip"},
		{"corrupt gzip CRC", flip(goodGz, len(goodGz)-6), false, "checksum"},
		{"corrupt gzip length", flip(goodGz, len(goodGz)-2), false, "gzip"},
		{"corrupt gzip body", flip(goodGz, len(goodGz)/2), false, "gzip"},
		{"corrupt gzip header", []byte{0x1f, 0x8b, 0x00, 0x00, 0x00}, false, "corrupt gzip header"},
		{"gzip of garbage", gzBytes(t, []byte("not an idx file at all")), false, "wrong magic"},
	}
	dir := t.TempDir()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := writeFile(t, dir, strings.ReplaceAll(c.name, " ", "-")+".idx", c.data)
			var err error
			if c.labels {
				_, err = ReadIDXLabels(p, 10)
			} else {
				_, _, _, _, err = ReadIDXImages(p, 28, 28)
			}
			if err == nil {
				t.Fatalf("no error")
			}
			if !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q should name %s and say %q", err, p, c.want)
			}
		})
	}
}

func TestIDXMissingFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "nope.gz")
	_, err := ReadIDXLabels(p, 10)
	if err == nil || !strings.Contains(err.Error(), p) || !os.IsNotExist(unwrapAll(err)) {
		t.Errorf("got %v, want a not-exist error naming %s", err, p)
	}
}

func unwrapAll(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok || u.Unwrap() == nil {
			return err
		}
		err = u.Unwrap()
	}
}

// TestLoadMNISTFormat loads generated MNIST-format directories through Load and checks
// every value against the bytes written.
func TestLoadMNISTFormat(t *testing.T) {
	fx := newMNISTFixture(30, 12, 7)
	cases := []struct {
		name   string
		gz     bool
		subdir string // files placed in DataDir/subdir
	}{
		{"gz in data dir", true, ""},
		{"raw in data dir", false, ""},
		{"gz in data dir/mnist", true, "mnist"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			fx.write(t, filepath.Join(dir, c.subdir), c.gz)
			sp, err := Load("mnist", Options{DataDir: dir, CacheDir: t.TempDir(), NoDownload: true})
			if err != nil {
				t.Fatal(err)
			}
			checkPart(t, sp.Train, fx.trainPix, fx.trainLabels, 1, 28, 28)
			checkPart(t, sp.Test, fx.testPix, fx.testLabels, 1, 28, 28)
			if sp.Train.Name != "mnist" || sp.Train.Classes != 10 {
				t.Errorf("name %q classes %d", sp.Train.Name, sp.Train.Classes)
			}
		})
	}
}

func checkPart(t *testing.T, d *Dataset, pix, labels []byte, c, h, w int) {
	t.Helper()
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	if d.N != len(labels) || d.C != c || d.H != h || d.W != w {
		t.Fatalf("shape N=%d C=%d H=%d W=%d, want %d %d %d %d", d.N, d.C, d.H, d.W, len(labels), c, h, w)
	}
	for i, b := range pix {
		if d.Images[i] != float32(b)/255 {
			t.Fatalf("value %d = %v, want %v", i, d.Images[i], float32(b)/255)
		}
	}
	for i, y := range labels {
		if d.Labels[i] != int(y) {
			t.Fatalf("label %d = %d, want %d", i, d.Labels[i], y)
		}
	}
	if d.SHA256 != d.Fingerprint() || len(d.SHA256) != 64 {
		t.Errorf("SHA256 %q is not the fingerprint", d.SHA256)
	}
}

// TestLoadMNISTCorrupt breaks one file of a generated MNIST directory at a time.
func TestLoadMNISTCorrupt(t *testing.T) {
	fx := newMNISTFixture(20, 10, 3)
	cases := []struct {
		name   string
		file   string
		data   []byte
		remove bool
		want   string
	}{
		{"count mismatch", "train-labels-idx1-ubyte.gz", labelsIDX(fx.trainLabels[:19]), false, "has 20 images but"},
		{"label out of range", "t10k-labels-idx1-ubyte.gz", labelsIDX(append(append([]byte(nil), fx.testLabels[:9]...), 12)), false, "label 12 of item 9"},
		{"wrong dims", "t10k-images-idx3-ubyte.gz", idxBytes(idxImagesMagic, []uint32{10, 32, 32}, fixturePixels(10, 1024, 1)), false, "want 28×28"},
		{"wrong magic", "train-images-idx3-ubyte.gz", idxBytes(0x00000802, []uint32{20, 28}, fx.trainPix[:560]), false, "wrong magic"},
		{"truncated", "train-images-idx3-ubyte.gz", imagesIDX(fx.trainPix)[:5000], false, "truncated"},
		{"empty test set", "t10k-images-idx3-ubyte.gz", idxBytes(idxImagesMagic, []uint32{0, 28, 28}, nil), false, "no images"},
		{"missing file", "t10k-labels-idx1-ubyte.gz", nil, true, "lacks t10k-labels-idx1-ubyte.gz"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			fx.write(t, dir, true)
			p := filepath.Join(dir, c.file)
			if c.remove {
				if err := os.Remove(p); err != nil {
					t.Fatal(err)
				}
			} else {
				writeFile(t, dir, c.file, gzBytes(t, c.data))
			}
			_, err := Load("mnist", Options{DataDir: dir, CacheDir: t.TempDir(), NoDownload: true})
			if err == nil {
				t.Fatal("no error")
			}
			name := p
			if c.remove {
				name = dir
			}
			if !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q should name %s and say %q", err, name, c.want)
			}
		})
	}
}

// TestLoadCIFAR loads generated CIFAR-10 batch files (3 records each instead of
// 10 000, through the same code path) and checks the CHW layout and labels.
func TestLoadCIFAR(t *testing.T) {
	s, err := lookup("cifar10")
	if err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{"", "cifar-10-batches-bin", "cifar10/cifar-10-batches-bin"} {
		t.Run("dir="+sub, func(t *testing.T) {
			dir := t.TempDir()
			trainPix, testPix, trainLab, testLab := writeCIFARFixture(t, filepath.Join(dir, sub), 3)
			l, err := loadSpec(s, Options{DataDir: dir, CacheDir: t.TempDir(), NoDownload: true}, 3)
			if err != nil {
				t.Fatal(err)
			}
			checkPart(t, l.Train, trainPix, trainLab, 3, 32, 32)
			checkPart(t, l.Test, testPix, testLab, 3, 32, 32)
			// CHW: value (c, y, x) of sample i is byte 1 + c·1024 + y·32 + x of its record.
			img := l.Train.Image(4)
			if img[1*1024+5*32+7] != float32(trainPix[4*3072+1024+5*32+7])/255 {
				t.Error("CHW layout broken")
			}
			if len(l.Files) != 6 || l.Files[5].Size != 3*3073 {
				t.Errorf("files %+v", l.Files)
			}
		})
	}
}

func TestLoadCIFARCorrupt(t *testing.T) {
	s, err := lookup("cifar10")
	if err != nil {
		t.Fatal(err)
	}
	pix := fixturePixels(3, 3072, 9)
	cases := []struct {
		name    string
		file    string
		data    []byte
		records int
		remove  bool
		want    string
	}{
		{"wrong size for real batches", "data_batch_1.bin", nil, 10000, false, "9219 bytes, want 30730000"},
		{"truncated", "data_batch_2.bin", cifarBatch([]byte{1, 2, 3}, pix)[:5000], 3, false, "5000 bytes, want 9219"},
		{"too long", "data_batch_2.bin", append(cifarBatch([]byte{1, 2, 3}, pix), 0), 3, false, "9220 bytes, want 9219"},
		{"label out of range", "data_batch_5.bin", cifarBatch([]byte{1, 10, 3}, pix), 3, false, "label 10 of record 1 outside [0,10)"},
		{"missing batch", "data_batch_3.bin", nil, 3, true, "data_batch_3.bin"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeCIFARFixture(t, dir, 3)
			p := filepath.Join(dir, c.file)
			switch {
			case c.remove:
				if err := os.Remove(p); err != nil {
					t.Fatal(err)
				}
			case c.data != nil:
				writeFile(t, dir, c.file, c.data)
			}
			_, err := loadSpec(s, Options{DataDir: dir, CacheDir: t.TempDir(), NoDownload: true}, c.records)
			if err == nil {
				t.Fatal("no error")
			}
			name := p
			if c.remove {
				name = dir
			}
			if !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q should name %s and say %q", err, name, c.want)
			}
		})
	}
}

// TestSourceOrder checks the lookup order: the data dir, then the cache ($DPFIL_DATA or
// Options.CacheDir), and the offline error when nothing is found.
func TestSourceOrder(t *testing.T) {
	user, cache, env := t.TempDir(), t.TempDir(), t.TempDir()
	newMNISTFixture(11, 5, 1).write(t, user, true)
	newMNISTFixture(12, 5, 2).write(t, filepath.Join(cache, "mnist"), true)
	newMNISTFixture(13, 5, 3).write(t, filepath.Join(env, "mnist"), false)
	t.Setenv("DPFIL_DATA", env)
	cases := []struct {
		name   string
		opt    Options
		wantN  int
		source string
	}{
		{"data dir first", Options{DataDir: user, CacheDir: cache}, 11, user},
		{"cache dir", Options{CacheDir: cache}, 12, cache},
		{"$DPFIL_DATA", Options{}, 13, env},
	}
	// The fixtures are not the real MNIST: a cached copy is verified against the known
	// digests (TestCorruptCache), so the lookup order is checked with a digest-free
	// copy of the mnist spec; the real one rejects the cached fixture.
	s, err := lookup("mnist")
	if err != nil {
		t.Fatal(err)
	}
	s.GoModule = nil
	s.Files = append([]fileSpec(nil), s.Files...)
	for i := range s.Files {
		s.Files[i] = fileSpec{Name: s.Files[i].Name}
	}
	if _, err := Load("mnist", Options{CacheDir: cache, NoDownload: true}); err == nil || !strings.Contains(err.Error(), "is corrupt: SHA-256") {
		t.Errorf("the real spec accepted a generated file in the cache: %v", err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.opt.NoDownload = true
			l, err := loadSpec(s, c.opt, 0)
			if err != nil {
				t.Fatal(err)
			}
			sp := &l.Split
			if sp.Train.N != c.wantN || !strings.HasPrefix(sp.Train.Source, c.source) {
				t.Errorf("N=%d from %s, want %d from %s", sp.Train.N, sp.Train.Source, c.wantN, c.source)
			}
		})
	}
	// A --data-dir lacking files is an error naming them, never a silent fall back to
	// the complete copy in the cache (or a download elsewhere).
	partial := t.TempDir()
	newMNISTFixture(14, 5, 4).write(t, partial, true)
	for _, f := range []string{"t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"} {
		if err := os.Remove(filepath.Join(partial, f)); err != nil {
			t.Fatal(err)
		}
	}
	for _, nd := range []bool{true, false} {
		_, err := loadSpec(s, Options{DataDir: partial, CacheDir: cache, NoDownload: nd}, 0)
		if err == nil || !strings.Contains(err.Error(), partial+" lacks t10k-images-idx3-ubyte.gz, t10k-labels-idx1-ubyte.gz") {
			t.Errorf("incomplete --data-dir (no download %v): %v", nd, err)
		}
	}
	empty := t.TempDir()
	_, err = Load("mnist", Options{DataDir: empty, CacheDir: empty, NoDownload: true})
	for _, want := range []string{"train-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz", empty, filepath.Join(empty, "mnist"), "dpfil data fetch --dataset mnist", "--data-dir"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("offline error %v should mention %q", err, want)
		}
	}
	if _, err := Load("imagenet", Options{}); err == nil || !strings.Contains(err.Error(), "mnist-embedded") {
		t.Errorf("unknown dataset: %v", err)
	}
}

// TestBinaryVariant loads mnist01 from a generated directory: only classes 0 and 1,
// relabelled, in their original order.
func TestBinaryVariant(t *testing.T) {
	dir := t.TempDir()
	fx := newMNISTFixture(40, 20, 5)
	fx.write(t, dir, true)
	sp, err := Load("mnist01", Options{DataDir: dir, CacheDir: t.TempDir(), NoDownload: true})
	if err != nil {
		t.Fatal(err)
	}
	var wantPix, wantLab []byte
	for i, y := range fx.trainLabels {
		if y <= 1 {
			wantPix = append(wantPix, fx.trainPix[i*784:(i+1)*784]...)
			wantLab = append(wantLab, y)
		}
	}
	if sp.Train.Classes != 2 || sp.Train.Name != "mnist01" {
		t.Fatalf("classes %d name %s", sp.Train.Classes, sp.Train.Name)
	}
	checkPart(t, sp.Train, wantPix, wantLab, 1, 28, 28)
}
