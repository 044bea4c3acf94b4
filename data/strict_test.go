package data

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const debianFashion = "/usr/share/datasets/fashion-mnist"

func needDebianFashion(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(debianFashion, "train-images-idx3-ubyte.gz")); err != nil {
		t.Fatalf("Debian's Fashion-MNIST is needed (make test installs it; or apt-get install dataset-fashion-mnist): %v", err)
	}
}

// Fashion-MNIST's files given as --dataset mnist are refused by their digests.
func TestOtherDatasetsFilesRefused(t *testing.T) {
	needDebianFashion(t)
	dir := t.TempDir()
	for _, f := range []string{"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"} {
		if err := os.Symlink(filepath.Join(debianFashion, f), filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	_, err := Load("mnist", Options{DataDir: dir, NoDownload: true})
	if err == nil || !strings.Contains(err.Error(), "are fashion-mnist's") || !strings.Contains(err.Error(), "--dataset fashion-mnist") {
		t.Fatalf("Fashion-MNIST as mnist: %v", err)
	}
	if _, err := Load("fashion-mnist", Options{DataDir: dir, NoDownload: true}); err != nil {
		t.Fatalf("the same files as fashion-mnist: %v", err)
	}
}

// data fetch uses an installed, verified system copy instead of downloading.
func TestFetchUsesSystemCopy(t *testing.T) {
	needDebianFashion(t)
	res, err := Fetch("fashion-mnist", Options{CacheDir: t.TempDir(), Mirrors: []string{"http://127.0.0.1:1/"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Dir != debianFashion || !strings.Contains(res.Note, "installed system copy") || len(res.Downloaded) != 0 || res.Train != 60000 {
		t.Fatalf("fetch with the Debian copy installed: %+v", res)
	}
}

// Offline, fetch fails once, with the remedy, not the raw network error twice.
func TestFetchOfflineErrorHasRemedy(t *testing.T) {
	srv := httptest.NewServer(nil)
	url := srv.URL + "/cifar/"
	srv.Close() // nothing listens there any more
	var logged []string
	_, err := Fetch("cifar10", Options{CacheDir: t.TempDir(), Mirrors: []string{url}, GoProxy: "off",
		Logf: func(f string, a ...any) { logged = append(logged, f) }})
	if err == nil {
		t.Fatal("offline fetch succeeded")
	}
	msg := err.Error()
	for _, want := range []string{"could not download cifar10", "offline?", "--data-dir", "each logged above"} {
		if !strings.Contains(msg, want) {
			t.Errorf("offline error %q lacks %q", msg, want)
		}
	}
	if n := strings.Count(msg, url); n > 1 {
		t.Errorf("offline error repeats the URL %d times: %q", n, msg)
	}
}
