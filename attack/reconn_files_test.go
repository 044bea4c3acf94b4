package attack

import (
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/dpfil/dpfil/data"
)

// TestRecoNNFilesFigureCap: the CSV has every target, the figure the first
// RecoNNFigureTargets — as wide as the figure of exactly that many targets.
func TestRecoNNFilesFigureCap(t *testing.T) {
	const d = 4 * 4
	mk := func(n int) (*data.Dataset, *RecoNNResult) {
		ds := &data.Dataset{Name: "tiny", N: n, C: 1, H: 4, W: 4, Classes: 2, Images: make([]float32, n*d), Labels: make([]int, n)}
		res := &RecoNNResult{}
		for k := 0; k < n; k++ {
			ds.Images[k*d+k%d] = 1
			ds.Labels[k] = k % 2
			res.Targets = append(res.Targets, RecoNNTarget{Label: k % 2, MSE: 0.01 * float64(k), Reconstruction: make([]float32, d)})
		}
		return ds, res
	}
	width := func(dir string) int {
		f, err := os.Open(filepath.Join(dir, "reconn_targets.png"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		c, err := png.DecodeConfig(f)
		if err != nil {
			t.Fatal(err)
		}
		return c.Width
	}
	many, capped := t.TempDir(), t.TempDir()
	ds, res := mk(RecoNNFigureTargets + 7)
	if _, err := writeRecoNNFiles(many, ds, res); err != nil {
		t.Fatal(err)
	}
	if rows := readCSVFile(t, filepath.Join(many, "reconn_targets.csv")); len(rows) != RecoNNFigureTargets+7+1 {
		t.Fatalf("%d CSV rows, want every target and a header", len(rows))
	}
	ds, res = mk(RecoNNFigureTargets)
	if _, err := writeRecoNNFiles(capped, ds, res); err != nil {
		t.Fatal(err)
	}
	if w, want := width(many), width(capped); w != want {
		t.Fatalf("figure of %d targets is %d px wide, that of %d targets %d", RecoNNFigureTargets+7, w, RecoNNFigureTargets, want)
	}
	few := t.TempDir()
	ds, res = mk(3)
	if _, err := writeRecoNNFiles(few, ds, res); err != nil {
		t.Fatal(err)
	}
	if width(few) >= width(capped) {
		t.Fatalf("3 targets drawn %d px wide, not narrower than %d targets (%d)", width(few), RecoNNFigureTargets, width(capped))
	}
}
