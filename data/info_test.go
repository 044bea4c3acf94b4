package data_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dpfil/dpfil/data"
)

func TestProvenance(t *testing.T) {
	day := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	mirror := &data.Origin{Via: data.OriginMirror, URL: "https://user:pw@example.org:8443/mnist/train.gz", Fetched: day}
	proxy := &data.Origin{Via: data.OriginGoProxy, URL: "https://proxy.golang.org/github.com/x/@v/v1.zip", Module: "github.com/x@v1", ModuleSum: "h1:abc", Fetched: day}
	for _, c := range []struct {
		name  string
		files []data.FileInfo
		want  string
	}{
		{"none", nil, "no source files"},
		{"embedded", []data.FileInfo{{Path: "embedded:mnist.bin", Verified: "sha256"}}, "compiled into the binary"},
		{"mirror", []data.FileInfo{{Verified: "sha256", Origin: mirror}, {Verified: "sha256", Origin: mirror}},
			"downloaded 2026-01-02 from https://example.org:8443; all 2 files match the canonical SHA-256"},
		{"proxy", []data.FileInfo{{Verified: "sha256", Origin: proxy}},
			"Go module proxy: github.com/x@v1 (module hash h1:abc verified), fetched 2026-01-02 from https://proxy.golang.org; all 1 files match the canonical SHA-256"},
		{"by hand, by content", []data.FileInfo{{Verified: "content-sha256"}, {Verified: "sha256"}},
			"placed in /d (not fetched by dpfil); all 2 files match a known digest (some by their uncompressed content)"},
		{"partly unverified", []data.FileInfo{{Verified: "sha256"}, {}},
			"placed in /d (not fetched by dpfil); 1 of 2 files match a known digest, 1 do not (validated by format only)"},
		{"unverified", []data.FileInfo{{}},
			"placed in /d (not fetched by dpfil); no file matches a known digest (validated by format only)"},
	} {
		got := data.Provenance(&data.Loaded{Dir: "/d", Files: c.files})
		if !strings.HasPrefix(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func TestDescribeEmbedded(t *testing.T) {
	l, err := data.LoadFiles("mnist-embedded", data.Options{NoDownload: true})
	if err != nil {
		t.Fatal(err)
	}
	info := data.Describe("mnist-embedded", l)
	total := 0
	for c, n := range info.ClassCounts {
		if n != info.Train.ClassCounts[c]+info.Test.ClassCounts[c] {
			t.Fatalf("class %d: %d ≠ train + test", c, n)
		}
		total += n
	}
	if total != info.Images || info.Images != l.Train.N+l.Test.N || info.Shape[0] != 1 || info.Shape[1] != 28 {
		t.Fatalf("info %+v", info)
	}
	// An independent pass over the pixels.
	var sum float64
	for _, v := range append(append([]float32{}, l.Train.Images...), l.Test.Images...) {
		sum += float64(v)
	}
	if mean := sum / float64(len(l.Train.Images)+len(l.Test.Images)); info.PixelMean != mean || info.PixelMin != 0 || info.PixelMax != 1 {
		t.Fatalf("pixels: mean %v (want %v), range [%v, %v]", info.PixelMean, mean, info.PixelMin, info.PixelMax)
	}
	h := sha256.New()
	for _, f := range l.Files {
		fmt.Fprintf(h, "%s  %s\n", f.SHA256, f.Path[strings.LastIndex(f.Path, "/")+1:])
	}
	if info.Checksum != hex.EncodeToString(h.Sum(nil)) {
		t.Fatalf("checksum %s", info.Checksum)
	}
	var b bytes.Buffer
	info.WriteText(&b)
	if !strings.Contains(b.String(), "images    10000 (train 8000, test 2000)") {
		t.Fatalf("text:\n%s", &b)
	}
}
