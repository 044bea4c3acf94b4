package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writePackage writes a fake npm package: one image per class whose pixel k has the
// value values[(k+c) % len(values)].
func writePackage(t *testing.T, values []string) string {
	t.Helper()
	dir := t.TempDir()
	digits := filepath.Join(dir, "src", "digits")
	if err := os.MkdirAll(digits, 0o755); err != nil {
		t.Fatal(err)
	}
	for c := 0; c < classes; c++ {
		var vs []string
		for k := 0; k < side*side; k++ {
			vs = append(vs, values[(k+c)%len(values)])
		}
		doc := `{ "data": [` + strings.Join(vs, ",") + `] }`
		if err := os.WriteFile(filepath.Join(digits, fmt.Sprintf("%d.json", c)), []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func gunzip(t *testing.T, path string) []byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRun(t *testing.T) {
	// Every byte b written as round(b/255, 3), as the npm package does.
	var values []string
	for b := 0; b < 256; b++ {
		values = append(values, strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.3f", float64(b)/255), "0"), "."))
	}
	pkg := writePackage(t, values)
	out := t.TempDir()
	if err := run(pkg, out, classes); err != nil {
		t.Fatal(err)
	}
	img := gunzip(t, filepath.Join(out, "mnist-embedded-images-idx3-ubyte.gz"))
	lab := gunzip(t, filepath.Join(out, "mnist-embedded-labels-idx1-ubyte.gz"))
	if len(img) != 16+classes*side*side || !bytes.Equal(img[:4], []byte{0, 0, 8, 3}) || img[7] != classes || img[11] != side || img[15] != side {
		t.Fatalf("images header % x", img[:16])
	}
	for c := 0; c < classes; c++ {
		for k := 0; k < side*side; k++ {
			if got, want := img[16+c*side*side+k], byte((k+c)%256); got != want {
				t.Fatalf("class %d pixel %d = %d, want %d", c, k, got, want)
			}
		}
		if lab[8+c] != byte(c) {
			t.Fatalf("label %d = %d", c, lab[8+c])
		}
	}
	// Byte-identical on a second run.
	out2 := t.TempDir()
	if err := run(pkg, out2, classes); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"mnist-embedded-images-idx3-ubyte.gz", "mnist-embedded-labels-idx1-ubyte.gz"} {
		a, _ := os.ReadFile(filepath.Join(out, f))
		b, _ := os.ReadFile(filepath.Join(out2, f))
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between runs", f)
		}
	}
}

func TestRunRejects(t *testing.T) {
	cases := []struct {
		name   string
		values []string
		total  int
		want   string
	}{
		{"value between bytes", []string{"0", "0.5"}, classes, "does not round-trip"},
		{"negative", []string{"-0.1"}, classes, "does not round-trip"},
		{"above one", []string{"1.01"}, classes, "does not round-trip"},
		{"wrong total", []string{"0"}, 10000, "10 images in all"},
	}
	for _, c := range cases {
		if err := run(writePackage(t, c.values), t.TempDir(), c.total); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	if err := run(t.TempDir(), t.TempDir(), classes); err == nil || !strings.Contains(err.Error(), "0.json") {
		t.Errorf("missing package: %v", err)
	}
}
