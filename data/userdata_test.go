package data

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpfil/dpfil/internal/npy"
)

func writeNPZ(t *testing.T, path string, entries ...npy.Entry) {
	t.Helper()
	var buf bytes.Buffer
	if err := npy.WriteNPZ(&buf, entries); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func u8(t *testing.T, shape []int, v []byte) []byte {
	t.Helper()
	b, err := npy.EncodeUint8(shape, v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func f32(t *testing.T, shape []int, v []float32) []byte {
	t.Helper()
	b, err := npy.EncodeFloat32(shape, v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func i64(t *testing.T, shape []int, v []int) []byte {
	t.Helper()
	b, err := npy.EncodeInt64(shape, v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestNPZ: an .npz of uint8 (N, C, H, W) images with a test part, and one of float
// (N, H, W) images without (split 80/20), load with the shape and classes of the data.
func TestNPZ(t *testing.T) {
	dir := t.TempDir()
	n, c, h, w := 20, 2, 3, 4
	x := make([]byte, n*c*h*w)
	for i := range x {
		x[i] = byte(i * 7)
	}
	y := make([]int, n)
	for i := range y {
		y[i] = i % 3
	}
	p := filepath.Join(dir, "d.npz")
	writeNPZ(t, p, npy.Entry{Name: "x", NPY: u8(t, []int{n, c, h, w}, x)}, npy.Entry{Name: "y", NPY: i64(t, []int{n}, y)},
		npy.Entry{Name: "x_test", NPY: u8(t, []int{2, c, h, w}, x[:2*c*h*w])}, npy.Entry{Name: "y_test", NPY: i64(t, []int{2}, []int{0, 2})})
	l, err := LoadFiles("npz:"+p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	tr := l.Train
	if tr.N != n || tr.C != c || tr.H != h || tr.W != w || tr.Classes != 3 || l.Test.N != 2 || tr.Images[5] != float32(35)/255 {
		t.Fatalf("train %+v", tr)
	}
	if tr.Name != "npz:"+p || tr.SHA256 != tr.Fingerprint() || len(l.Files) != 1 || l.Files[0].SHA256 == "" {
		t.Errorf("provenance %q %q %+v", tr.Name, tr.SHA256, l.Files)
	}
	// Floats in [0,1], (N, H, W), no test part: relative to DataDir.
	fx := make([]float32, 30*5*5)
	for i := range fx {
		fx[i] = float32(i%11) / 10
	}
	fy := make([]int, 30)
	for i := range fy {
		fy[i] = i % 2
	}
	writeNPZ(t, filepath.Join(dir, "f.npz"), npy.Entry{Name: "x", NPY: f32(t, []int{30, 5, 5}, fx)}, npy.Entry{Name: "y", NPY: i64(t, []int{30, 1}, fy)})
	l, err = LoadFiles("npz:f.npz", Options{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if l.Train.N != 24 || l.Test.N != 6 || l.Train.C != 1 || l.Train.H != 5 || l.Train.Classes != 2 || !strings.Contains(l.Train.Source, "80/20") {
		t.Errorf("split %d/%d %dx%dx%d source %q", l.Train.N, l.Test.N, l.Train.C, l.Train.H, l.Train.W, l.Train.Source)
	}
}

func TestNPZRefusals(t *testing.T) {
	dir := t.TempDir()
	good := func() []npy.Entry {
		return []npy.Entry{{Name: "x", NPY: u8(t, []int{4, 2, 2}, make([]byte, 16))}, {Name: "y", NPY: i64(t, []int{4}, []int{0, 1, 0, 1})}}
	}
	for _, c := range []struct {
		name    string
		entries []npy.Entry
		want    string
	}{
		{"unknown array", append(good(), npy.Entry{Name: "z", NPY: i64(t, []int{1}, []int{1})}), `unknown array "z"`},
		{"no y", good()[:1], "want arrays x (images) and y"},
		{"float labels", []npy.Entry{good()[0], {Name: "y", NPY: f32(t, []int{4}, []float32{0, 1, 0, 1})}}, "integer dtype"},
		{"label count", []npy.Entry{good()[0], {Name: "y", NPY: i64(t, []int{3}, []int{0, 1, 0})}}, "to match the 4 images"},
		{"pixels > 1", []npy.Entry{{Name: "x", NPY: f32(t, []int{4, 1}, []float32{0, 2, 0, 0})}, good()[1]}, "outside [0,1]"},
		{"int pixels", []npy.Entry{{Name: "x", NPY: i64(t, []int{4, 1}, []int{0, 2, 0, 0})}, good()[1]}, "want uint8"},
		{"negative label", []npy.Entry{good()[0], {Name: "y", NPY: i64(t, []int{4}, []int{0, -1, 0, 1})}}, "not a class index"},
		{"one class", []npy.Entry{good()[0], {Name: "y", NPY: i64(t, []int{4}, []int{0, 0, 0, 0})}}, "at least 2"},
		{"test shape", append(good(), npy.Entry{Name: "x_test", NPY: u8(t, []int{1, 3, 3}, make([]byte, 9))},
			npy.Entry{Name: "y_test", NPY: i64(t, []int{1}, []int{0})}), "test images"},
		{"half a test part", append(good(), npy.Entry{Name: "x_test", NPY: u8(t, []int{1, 2, 2}, make([]byte, 4))}), "both x_test and y_test"},
	} {
		p := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_")+".npz")
		writeNPZ(t, p, c.entries...)
		_, err := LoadFiles("npz:"+p, Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "x.txt"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, want string }{
		{"npz:" + filepath.Join(dir, "missing.npz"), "no such file"},
		{"npz:" + filepath.Join(dir, "x.txt"), "not a zip"},
		{"npz:" + dir, "is a directory"},
		{"npz:", "no path"},
		{"idx:" + dir, "unknown file"},
	} {
		_, err := LoadFiles(c.name, Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

func TestNPYDir(t *testing.T) {
	dir := t.TempDir()
	x := make([]byte, 10*6)
	for i := range x {
		x[i] = byte(i)
	}
	y := []int{0, 1, 2, 3, 0, 1, 2, 3, 0, 1}
	for name, b := range map[string][]byte{"x.npy": u8(t, []int{10, 6}, x), "y.npy": i64(t, []int{10}, y),
		"x_test.npy": u8(t, []int{2, 6}, x[:12]), "y_test.npy": i64(t, []int{2}, y[:2])} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l, err := LoadFiles("npy:"+dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if l.Train.N != 10 || l.Train.C != 6 || l.Train.H != 1 || l.Train.Classes != 4 || l.Test.N != 2 || len(l.Files) != 4 {
		t.Errorf("%+v", l.Train)
	}
}

func writePNG(t *testing.T, path string, img image.Image) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestImageFolder(t *testing.T) {
	dir := t.TempDir()
	gray := func(v uint8) image.Image {
		g := image.NewGray(image.Rect(0, 0, 3, 2))
		for i := range g.Pix {
			g.Pix[i] = v + uint8(i)
		}
		return g
	}
	for i, cls := range []string{"cat", "dog", "ant"} {
		for j := 0; j < 5; j++ {
			writePNG(t, filepath.Join(dir, "train", cls, string(rune('a'+j))+".png"), gray(uint8(10*i+j)))
		}
		writePNG(t, filepath.Join(dir, "test", cls, "t.png"), gray(uint8(100+i)))
	}
	if err := os.WriteFile(filepath.Join(dir, "train", "cat", ".DS_Store"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := LoadFiles("imagefolder:"+dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	tr := l.Train
	if tr.N != 15 || tr.C != 1 || tr.H != 2 || tr.W != 3 || tr.Classes != 3 || l.Test.N != 3 {
		t.Fatalf("%d %dx%dx%d classes %d test %d", tr.N, tr.C, tr.H, tr.W, tr.Classes, l.Test.N)
	}
	if strings.Join(tr.ClassNames, ",") != "ant,cat,dog" || tr.Labels[0] != 0 || tr.Images[1] != float32(21)/255 {
		t.Errorf("classes %v labels %v images %v", tr.ClassNames, tr.Labels[:5], tr.Images[:6])
	}
	// RGB images make C = 3; a size mismatch and a stray file are refused.
	rgb := image.NewNRGBA(image.Rect(0, 0, 2, 2))
	rgb.Set(1, 0, color.NRGBA{R: 255, G: 51, B: 0, A: 255})
	dir2 := t.TempDir()
	writePNG(t, filepath.Join(dir2, "a", "1.png"), rgb)
	writePNG(t, filepath.Join(dir2, "b", "1.png"), rgb)
	l, err = LoadFiles("imagefolder:"+dir2, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if l.Train.C+l.Test.C != 6 || l.Train.N+l.Test.N != 2 {
		t.Errorf("rgb: C %d, N %d+%d", l.Train.C, l.Train.N, l.Test.N)
	}
	img := l.Train.Image(0)
	if img[1] != 1 || img[4+1] != float32(51)/255 || img[8+1] != 0 {
		t.Errorf("rgb planes %v", img)
	}
	writePNG(t, filepath.Join(dir2, "b", "2.png"), image.NewGray(image.Rect(0, 0, 3, 3)))
	if _, err := LoadFiles("imagefolder:"+dir2, Options{}); err == nil || !strings.Contains(err.Error(), "same size") {
		t.Errorf("size mismatch: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir2, "b", "2.png"), []byte("notes"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadFiles("imagefolder:"+dir2, Options{}); err == nil || !strings.Contains(err.Error(), "2.png") {
		t.Errorf("corrupt image: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir2, "b", "2.png"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Rename(filepath.Join(dir2, "b", "2.png"), filepath.Join(dir2, "b", "notes.txt"))
	if _, err := LoadFiles("imagefolder:"+dir2, Options{}); err == nil || !strings.Contains(err.Error(), "not a PNG") {
		t.Errorf("stray file: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir2, "README"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadFiles("imagefolder:"+dir2, Options{}); err == nil || !strings.Contains(err.Error(), "one sub-directory per class") {
		t.Errorf("file beside classes: %v", err)
	}
}

// idxFile encodes an IDX file of unsigned bytes, gzip-compressed when gz.
func idxFile(t *testing.T, path string, dims []int, data []byte, gz bool) {
	t.Helper()
	var b bytes.Buffer
	b.Write([]byte{0, 0, 8, byte(len(dims))})
	for _, d := range dims {
		_ = binary.Write(&b, binary.BigEndian, uint32(d))
	}
	b.Write(data)
	out := b.Bytes()
	if gz {
		var z bytes.Buffer
		zw := gzip.NewWriter(&z)
		zw.Write(out)
		zw.Close()
		out = z.Bytes()
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestIDXAnyShape(t *testing.T) {
	dir := t.TempDir()
	img := make([]byte, 12*3*4*5)
	for i := range img {
		img[i] = byte(i)
	}
	lab := []byte{0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1}
	idxFile(t, filepath.Join(dir, "norb-train-images-idx4-ubyte.gz"), []int{12, 3, 4, 5}, img, true)
	idxFile(t, filepath.Join(dir, "norb-train-labels-idx1-ubyte"), []int{12}, lab, false)
	l, err := LoadFiles("idx:"+dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if l.Train.C != 3 || l.Train.H != 4 || l.Train.W != 5 || l.Train.Classes != 5 || l.Train.N+l.Test.N != 12 {
		t.Errorf("%+v", l.Train)
	}
	idxFile(t, filepath.Join(dir, "norb-test-images-idx3-ubyte"), []int{2, 4, 5}, img[:40], false)
	idxFile(t, filepath.Join(dir, "norb-test-labels-idx1-ubyte"), []int{2}, lab[:2], false)
	if _, err := LoadFiles("idx:"+dir, Options{}); err == nil || !strings.Contains(err.Error(), "test images are 1x4x5") {
		t.Errorf("shape mismatch: %v", err)
	}
	os.Remove(filepath.Join(dir, "norb-test-labels-idx1-ubyte"))
	if _, err := LoadFiles("idx:"+dir, Options{}); err == nil || !strings.Contains(err.Error(), "both test images and test labels") {
		t.Errorf("half a test part: %v", err)
	}
}
