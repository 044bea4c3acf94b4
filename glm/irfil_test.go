package glm

import (
	"image/png"
	"math"
	"os"
	"path/filepath"
	"testing"
)

func TestIRFILEqualisesEtaSynthetic(t *testing.T) {
	dt := synth(150, 10, 7)
	res, err := IRFIL(dt, IRFILOptions{Config: Config{Loss: Logistic, Lambda: 1e-2, Bias: true}, Sigma: 1, Iters: 15})
	if err != nil {
		t.Fatal(err)
	}
	first, last := res.Iterations[0], res.Iterations[len(res.Iterations)-1]
	if len(res.Iterations) != 16 {
		t.Fatalf("%d iteration records, want 16", len(res.Iterations))
	}
	if !(first.Spread > 0.1) {
		t.Fatalf("initial spread %v: test data not heterogeneous enough", first.Spread)
	}
	if last.Spread > 0.01 {
		t.Fatalf("η spread after 15 iterations %.4g (initial %.4g)", last.Spread, first.Spread)
	}
	// Independent check of the final η with a fresh fit at the final weights.
	m, err := Fit(dt, Config{Loss: Logistic, Lambda: 1e-2, Bias: true, Weights: res.Weights})
	if err != nil {
		t.Fatal(err)
	}
	an, _ := NewAnalysis(m)
	jac, _ := an.Jacobian(5)
	_, s2 := denseNorms(t, jac)
	// res.Eta and res.Weights belong to the same (last) fitted model.
	if math.Abs(math.Sqrt(s2)-res.Eta[5]) > 1e-7*res.Eta[5] {
		t.Fatalf("η(5) = %v, dense recomputation %v", res.Eta[5], math.Sqrt(s2))
	}
}

func TestIRFILClampAndErrors(t *testing.T) {
	dt := synth(60, 5, 8)
	res, err := IRFIL(dt, IRFILOptions{Config: Config{Loss: LeastSquares, Lambda: 1e-1, Bias: true}, Sigma: 1, Iters: 5, ClampLo: 0.9, ClampHi: 1.1})
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range res.Weights {
		if w < 0.9 || w > 1.1 {
			t.Fatalf("weight %d = %v outside the clamp", i, w)
		}
	}
	if res.Iterations[1].Clamped == 0 {
		t.Fatal("tight clamp never hit")
	}
	for _, o := range []IRFILOptions{
		{Config: Config{Lambda: 1}, Sigma: 1, Iters: -1},
		{Config: Config{Lambda: 1}, Sigma: 1, Iters: 2, ClampLo: 2, ClampHi: 1},
		{Config: Config{Lambda: 1}, Sigma: 0, Iters: 2},
	} {
		if _, err := IRFIL(dt, o); err == nil {
			t.Fatalf("options %+v accepted", o)
		}
	}
}

func TestWriteImageGrid(t *testing.T) {
	path := filepath.Join(t.TempDir(), "g.png")
	imgs := [][]float32{{0, 1, 0.5, 2}, {float32(math.NaN()), -1, 1, 0}, {1, 1, 1, 1}}
	if err := WriteImageGridScaled(path, imgs, 2, 2, 2, 3); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	im, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	b := im.Bounds()
	if b.Dx() != 2*(2*3+1)+1 || b.Dy() != 2*(2*3+1)+1 {
		t.Fatalf("size %v", b)
	}
	grey := func(x, y int) uint32 { r, _, _, _ := im.At(x, y).RGBA(); return r >> 8 }
	// Image 0 pixel (0,1) = 1 → white; pixel (1,1) = 2 → clipped white; (1,0) = 0.5.
	for _, c := range []struct {
		x, y int
		want uint32
	}{
		{1, 1, 0}, {1 + 3, 1, 255}, {1 + 3 + 2, 1 + 3 + 2, 255}, {1, 1 + 3, 128},
		{8, 1, 128}, {8 + 3, 1, 0}, {1, 8, 255},
	} {
		if g := grey(c.x, c.y); g != c.want {
			t.Fatalf("pixel (%d,%d) = %d, want %d", c.x, c.y, g, c.want)
		}
	}
	if err := WriteImageGrid(path, imgs, 3, 2, 1); err == nil {
		t.Fatal("wrong image size accepted")
	}
	if err := WriteImageGrid(filepath.Join(t.TempDir(), "no", "dir.png"), imgs, 2, 2, 1); err == nil {
		t.Fatal("missing directory accepted")
	}
}
