package cli

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/dpfil/dpfil/internal/npy"
)

// writeBinaryCIFARShaped writes an .npz of uint8 3×32×32 images with labels 0/1 (the
// shape of a CIFAR-10 plane-vs-car subset; class 1 is brighter on average) and a test
// part.
func writeBinaryCIFARShaped(t *testing.T, path string, n, nTest int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(5, 33))
	gen := func(m int) ([]byte, []int) {
		x := make([]byte, m*3*32*32)
		y := make([]int, m)
		for i := 0; i < m; i++ {
			y[i] = i % 2
			base := 70 + 60*y[i]
			for k := 0; k < 3*32*32; k++ {
				v := base + int(rng.NormFloat64()*40) + (k%32)*y[i]
				x[i*3*32*32+k] = byte(max(0, min(255, v)))
			}
		}
		return x, y
	}
	x, y := gen(n)
	xt, yt := gen(nTest)
	enc := func(b []byte, err error) []byte {
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var buf bytes.Buffer
	if err := npy.WriteNPZ(&buf, []npy.Entry{
		{Name: "x", NPY: enc(npy.EncodeUint8([]int{n, 3, 32, 32}, x))}, {Name: "y", NPY: enc(npy.EncodeInt64([]int{n}, y))},
		{Name: "x_test", NPY: enc(npy.EncodeUint8([]int{nTest, 3, 32, 32}, xt))}, {Name: "y_test", NPY: enc(npy.EncodeInt64([]int{nTest}, yt))},
	}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestGLMHannunOnGeneratedCIFARShape runs the commands of Hannun et al.'s CIFAR-10 half
// (plane vs car, PCA-20, η over (x, y)) on generated 2-class data of CIFAR-10's image
// shape, as they run once a plane-vs-car .npz is present.
func TestGLMHannunOnGeneratedCIFARShape(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "planecar.npz")
	writeBinaryCIFARShaped(t, path, 240, 60)
	res := runGLM(t, "glm", "fil", "--dataset", "npz:"+path, "--pca", "20", "--with-label", "--loss", "lsq", "--lambda", "1e-10", "--sigma", "1", "--out", filepath.Join(dir, "lin"))
	if res["n"].(float64) != 240 || res["d"].(float64) != 20 || res["preprocess"] != "unit-ball+pca-20" {
		t.Fatalf("n %v d %v preprocess %v", res["n"], res["d"], res["preprocess"])
	}
	if len(res["eta_by_class"].([]any)) != 2 || !(res["eta_mean"].(float64) > 0) {
		t.Fatalf("eta_by_class %v eta_mean %v", res["eta_by_class"], res["eta_mean"])
	}
	for _, f := range []string{"glm_eta_top8.png", "glm_eta_hist.png"} {
		if _, err := os.Stat(filepath.Join(dir, "lin", f)); err != nil {
			t.Fatal(err)
		}
	}
	ir := runGLM(t, "glm", "irfil", "--dataset", "npz:"+path, "--pca", "20", "--with-label", "--loss", "logistic", "--lambda", "8e-5", "--iters", "3", "--out", filepath.Join(dir, "log"))
	if n := len(ir["iterations"].([]any)); n != 4 {
		t.Fatalf("%d IRFIL iterations", n)
	}
}
