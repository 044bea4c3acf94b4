package data

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// fixtureSpec is an IDX dataset spec whose digests are those of the generated files.
func fixtureSpec(files map[string][]byte) spec {
	s := spec{Name: "fixture", Dir: "fixture", Format: formatIDX}
	for _, name := range []string{"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"} {
		b := files[name]
		sh, m := sha256.Sum256(b), md5.Sum(b)
		s.Files = append(s.Files, fileSpec{Name: name, SHA256: hex.EncodeToString(sh[:]), MD5: hex.EncodeToString(m[:]), Size: int64(len(b))})
	}
	return s
}

// fileServer serves files by base name, with optional per-request mangling, counting
// requests.
type fileServer struct {
	files  map[string][]byte
	mangle func(name string, b []byte, w http.ResponseWriter) []byte
	hits   atomic.Int64
}

func (s *fileServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.hits.Add(1)
	b, ok := s.files[filepath.Base(r.URL.Path)]
	if !ok {
		http.NotFound(w, r)
		return
	}
	if s.mangle != nil {
		b = s.mangle(filepath.Base(r.URL.Path), b, w)
		if b == nil {
			return
		}
	}
	w.Header().Set("Content-Length", fmt.Sprint(len(b)))
	_, _ = w.Write(b)
}

// dirEntries lists the names in dir (none if it does not exist).
func dirEntries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func TestDownload(t *testing.T) {
	fx := newMNISTFixture(20, 10, 11)
	files := fx.files(t, true)
	s := fixtureSpec(files)
	cases := []struct {
		name   string
		mangle func(name string, b []byte, w http.ResponseWriter) []byte
		bad    bool // second mirror serves the good files
		want   string
	}{
		{name: "good"},
		{name: "corrupt", mangle: func(_ string, b []byte, _ http.ResponseWriter) []byte {
			c := append([]byte(nil), b...)
			c[len(c)/2] ^= 1
			return c
		}, want: "SHA-256"},
		{name: "truncated without length", mangle: func(_ string, b []byte, w http.ResponseWriter) []byte {
			return b[:len(b)-10]
		}, want: "SHA-256"},
		{name: "truncated connection", mangle: func(_ string, b []byte, w http.ResponseWriter) []byte {
			w.Header().Set("Content-Length", fmt.Sprint(len(b)))
			_, _ = w.Write(b[:len(b)/2])
			return nil // handler returns early: the client sees a short body
		}, want: "download"},
		{name: "oversized", mangle: func(_ string, b []byte, _ http.ResponseWriter) []byte {
			return append(append([]byte(nil), b...), make([]byte, 2*len(b))...)
		}, want: "rejected"},
		{name: "not found", mangle: func(_ string, b []byte, w http.ResponseWriter) []byte {
			http.Error(w, "gone", http.StatusNotFound)
			return nil
		}, want: "404"},
		{name: "bad first mirror, good second", mangle: func(_ string, b []byte, w http.ResponseWriter) []byte {
			http.Error(w, "gone", http.StatusNotFound)
			return nil
		}, bad: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(&fileServer{files: files, mangle: c.mangle})
			defer srv.Close()
			mirrors := []string{srv.URL + "/mnist/"}
			if c.bad {
				good := httptest.NewServer(&fileServer{files: files})
				defer good.Close()
				mirrors = append(mirrors, good.URL+"/mirror2")
			}
			cache := t.TempDir()
			var logs []string
			opt := Options{CacheDir: cache, Mirrors: mirrors, HTTPClient: srv.Client(),
				Logf: func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) }}
			l, err := loadSpec(s, opt, cifarRecordsPerBin)
			dir := filepath.Join(cache, "fixture")
			if c.want != "" {
				if err == nil {
					t.Fatal("no error")
				}
				if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "train-images-idx3-ubyte.gz") {
					t.Errorf("error %q should say %q and name the file", err, c.want)
				}
				if !strings.Contains(err.Error(), "dpfil data fetch") {
					t.Errorf("error %q lacks the remedy", err)
				}
				if left := dirEntries(t, dir); len(left) != 0 {
					t.Errorf("files left after a failed download: %v", left)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			checkPart(t, l.Train, fx.trainPix, fx.trainLabels, 1, 28, 28)
			if got := dirEntries(t, dir); len(got) != 5 {
				t.Errorf("cache holds %v, want the 4 files and the provenance record, nothing else", got)
			}
			for _, fi := range l.Files {
				if fi.Verified != "sha256" {
					t.Errorf("%s verified %q", fi.Path, fi.Verified)
				}
				if o := fi.Origin; o == nil || o.Via != OriginMirror || o.SHA256 != fi.SHA256 || !strings.HasSuffix(o.URL, "/"+filepath.Base(fi.Path)) {
					t.Errorf("%s origin %+v", fi.Path, o)
				}
			}
			if !strings.Contains(strings.Join(logs, "\n"), "verified") {
				t.Errorf("no progress/verification log: %v", logs)
			}
			// Second load: from the cache, no network.
			if _, err := loadSpec(s, Options{CacheDir: cache, NoDownload: true}, cifarRecordsPerBin); err != nil {
				t.Errorf("reload from cache: %v", err)
			}
		})
	}
}

// TestOffline checks that NoDownload never touches the network and that a network
// failure gives the offline error with the remedy.
func TestOffline(t *testing.T) {
	files := newMNISTFixture(10, 10, 1).files(t, true)
	s := fixtureSpec(files)
	fs := &fileServer{files: files}
	srv := httptest.NewServer(fs)
	defer srv.Close()
	cache := t.TempDir()
	_, err := loadSpec(s, Options{CacheDir: cache, Mirrors: []string{srv.URL}, NoDownload: true}, 0)
	if err == nil || fs.hits.Load() != 0 || !strings.Contains(err.Error(), "downloading is disabled") {
		t.Errorf("NoDownload: err %v, %d requests", err, fs.hits.Load())
	}
	closed := httptest.NewServer(fs)
	url := closed.URL
	closed.Close() // nothing listens there any more: like being offline
	_, err = loadSpec(s, Options{CacheDir: cache, Mirrors: []string{url}}, 0)
	for _, want := range []string{"download failed", "train-images-idx3-ubyte.gz", filepath.Join(cache, "fixture"), "dpfil data fetch", "--data-dir"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("offline error %v should mention %q", err, want)
		}
	}
	if left := dirEntries(t, filepath.Join(cache, "fixture")); len(left) != 0 {
		t.Errorf("files left: %v", left)
	}
}

// cifarArchive builds a cifar-10-binary.tar.gz-like archive of the given batch files.
func cifarArchive(t *testing.T, files map[string][]byte, skip string) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	add := func(name string, b []byte, typ byte) {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(b)), Typeflag: typ}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	add("cifar-10-batches-bin/", nil, tar.TypeDir)
	add("cifar-10-batches-bin/batches.meta.txt", []byte("airplane\n"), tar.TypeReg)
	for _, n := range append(cifarTrainNames(), cifarTestNames()...) {
		if n != skip {
			add("cifar-10-batches-bin/"+n, files[n], tar.TypeReg)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestDownloadCIFAR(t *testing.T) {
	const records = 2
	src := t.TempDir()
	trainPix, _, trainLab, _ := writeCIFARFixture(t, src, records)
	files := map[string][]byte{}
	for _, n := range append(cifarTrainNames(), cifarTestNames()...) {
		b, err := os.ReadFile(filepath.Join(src, n))
		if err != nil {
			t.Fatal(err)
		}
		files[n] = b
	}
	base, err := lookup("cifar10")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		archive []byte
		corrupt bool
		want    string
	}{
		{"good", cifarArchive(t, files, ""), false, ""},
		{"archive lacks a batch", cifarArchive(t, files, "data_batch_4.bin"), false, "archive lacks data_batch_4.bin"},
		{"corrupt archive", cifarArchive(t, files, ""), true, "SHA-256"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := base
			s.Files = nil
			for _, f := range base.Files {
				f.Size = records * cifarRecordBytes
				s.Files = append(s.Files, f)
			}
			sh, m := sha256.Sum256(c.archive), md5.Sum(c.archive)
			s.Archive = &fileSpec{Name: "cifar-10-binary.tar.gz", SHA256: hex.EncodeToString(sh[:]), MD5: hex.EncodeToString(m[:]), Size: int64(len(c.archive))}
			served := c.archive
			if c.corrupt {
				served = append([]byte(nil), c.archive...)
				served[len(served)/3] ^= 4
			}
			srv := httptest.NewServer(&fileServer{files: map[string][]byte{"cifar-10-binary.tar.gz": served}})
			defer srv.Close()
			cache := t.TempDir()
			l, err := loadSpec(s, Options{CacheDir: cache, Mirrors: []string{srv.URL + "/~kriz/"}}, records)
			dir := filepath.Join(cache, "cifar10")
			left := dirEntries(t, dir)
			if c.want != "" {
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("error %v, want %q", err, c.want)
				}
				if len(left) != 0 {
					t.Errorf("files left after a failed download: %v", left)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			checkPart(t, l.Train, trainPix, trainLab, 3, 32, 32)
			if len(left) != 6 {
				t.Errorf("cache holds %v, want the 6 batch files only", left)
			}
		})
	}
}

// TestFetchFashionCanonical serves the canonical Fashion-MNIST files (rebuilt from
// Debian's) through a loopback mirror and fetches them with the real digests.
func TestFetchFashionCanonical(t *testing.T) {
	s, err := lookup("fashion-mnist")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, f := range s.Files {
		files[f.Name] = canonicalFashion(t, f.Name)
	}
	srv := httptest.NewServer(&fileServer{files: files})
	defer srv.Close()
	dir := t.TempDir()
	res, err := Fetch("fashion01", Options{DataDir: dir, Mirrors: []string{srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Dataset != "fashion-mnist" || len(res.Downloaded) != 4 || res.Train != 60000 || res.Test != 10000 {
		t.Errorf("result %+v", res)
	}
	for _, f := range res.Files {
		if f.Verified != "sha256" || filepath.Dir(f.Path) != dir {
			t.Errorf("%s verified %q", f.Path, f.Verified)
		}
	}
	// Fetching again downloads nothing.
	res, err = Fetch("fashion-mnist", Options{DataDir: dir, Mirrors: []string{"http://127.0.0.1:1/"}})
	if err != nil || len(res.Downloaded) != 0 {
		t.Errorf("second fetch: %v, downloaded %v", err, res)
	}
}

func TestFetchEmbedded(t *testing.T) {
	res, err := Fetch("mnist01-embedded", Options{Mirrors: []string{"http://127.0.0.1:1/"}})
	if err != nil || res.Note == "" || res.Train != 8000 || res.Test != 2000 {
		t.Errorf("%v %+v", err, res)
	}
	if _, err := Fetch("nope", Options{}); err == nil {
		t.Error("unknown dataset accepted")
	}
}

func TestMirrorsEnv(t *testing.T) {
	s, _ := lookup("mnist")
	t.Setenv("DPFIL_MIRROR", "http://a/, http://b/")
	if got := mirrors(s, Options{}); len(got) != 2 || got[1] != "http://b/" {
		t.Errorf("mirrors from env: %v", got)
	}
	if got := mirrors(s, Options{Mirrors: []string{"http://c/"}}); len(got) != 1 || got[0] != "http://c/" {
		t.Errorf("explicit mirrors: %v", got)
	}
	t.Setenv("DPFIL_MIRROR", "")
	if got := mirrors(s, Options{}); got[0] != "https://ossci-datasets.s3.amazonaws.com/mnist/" {
		t.Errorf("canonical mirrors: %v", got)
	}
}
