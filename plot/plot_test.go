package plot

import (
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func TestHistogramCounts(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	vals := make([]float64, 1000)
	for i := range vals {
		vals[i] = math.Exp(rng.NormFloat64() * 2)
	}
	vals = append(vals, math.NaN(), math.Inf(1), 0, -1)
	for _, log := range []bool{false, true} {
		p, st, err := Histogram(vals, HistOptions{Bins: 17, Log10: log, XLabel: "dFIL", Marker: 1, MarkerLabel: "MSE = 1"})
		if err != nil {
			t.Fatal(err)
		}
		wantDropped := 2
		if log {
			wantDropped = 4
		}
		if st.Dropped != wantDropped || st.N != len(vals)-wantDropped || len(st.Counts) != 17 || len(st.Edges) != 18 {
			t.Fatalf("log=%v stats %+v", log, st)
		}
		// Independent binning over [min, max] with the last bin closed.
		var xs []float64
		for _, v := range vals {
			if !math.IsNaN(v) && !math.IsInf(v, 0) && (!log || v > 0) {
				if log {
					v = math.Log10(v)
				}
				xs = append(xs, v)
			}
		}
		lo, hi := xs[0], xs[0]
		for _, v := range xs {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
		want := make([]float64, 17)
		for _, v := range xs {
			k := int((v - lo) / (hi - lo) * 17)
			want[min(k, 16)]++
		}
		if !reflect.DeepEqual(st.Counts, want) {
			t.Fatalf("log=%v counts %v, want %v", log, st.Counts, want)
		}
		if _, err := Render(p, "png", 300, 200); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := Histogram([]float64{math.NaN()}, HistOptions{}); err == nil {
		t.Fatal("all NaN: want error")
	}
	if _, _, err := Histogram([]float64{1}, HistOptions{Bins: -3}); err == nil {
		t.Fatal("negative bins: want error")
	}
}

func TestScatter(t *testing.T) {
	x := []float64{0.01, 0.1, 1, 10, 5, 0, math.NaN()}
	y := []float64{0.02, 0.05, 3, 9, 5, 1, 1}
	p, st, err := Scatter(x, y, ScatterOptions{LogX: true, LogY: true, Diagonal: true, XLabel: "predicted", YLabel: "realised"})
	if err != nil {
		t.Fatal(err)
	}
	// Violations y < x: (0.1, 0.05) and (10, 9); (5, 5) holds with equality.
	if st.N != 5 || st.Dropped != 2 || st.Violations != 2 {
		t.Fatalf("stats %+v", st)
	}
	if _, err := Render(p, "svg", 300, 300); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Scatter([]float64{1}, []float64{1, 2}, ScatterOptions{}); err == nil {
		t.Fatal("length mismatch: want error")
	}
}

func TestReadCSVColumns(t *testing.T) {
	x, y, err := ReadCSVColumns(strings.NewReader("# comment\nidx,bound,mse\n0,0.5,0.7\n1, 2e-3 ,NaN\n"), "bound", "mse")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(x, []float64{0.5, 2e-3}) || y[0] != 0.7 || !math.IsNaN(y[1]) {
		t.Fatalf("x %v y %v", x, y)
	}
	for name, src := range map[string]string{
		"missing column": "a,b\n1,2\n",
		"not a number":   "bound,mse\n1,x\n",
		"no rows":        "bound,mse\n",
		"ragged":         "bound,mse\n1\n",
		"empty":          "",
	} {
		if _, _, err := ReadCSVColumns(strings.NewReader(src), "bound", "mse"); err == nil {
			t.Errorf("%s: want error", name)
		}
	}
}

func TestImageGrid(t *testing.T) {
	// Two 2×3 grey images and one check of the RGB path.
	a := []float32{0, 0.5, 1, 1, 0.5, 0}
	b := []float32{1, 1, 1, 0, 0, 2} // 2 clamps to 1
	img, err := ImageGrid([][]float32{a, b, a}, 1, 2, 3, GridOptions{Cols: 2, Scale: 3, Pad: 1})
	if err != nil {
		t.Fatal(err)
	}
	// Width = 2·(3·3+1)+1 = 21, height = 2 rows·(2·3+1)+1 = 15.
	if sz := img.Bounds().Size(); sz.X != 21 || sz.Y != 15 {
		t.Fatalf("size %v", sz)
	}
	grey := func(x, y int) uint8 { return img.RGBAAt(x, y).R }
	// Image a, pixel (row 0, col 1) = 0.5 → 128 at output (1+3·1 .. , 1+0 ..).
	if g := grey(1+3, 1); g != 128 {
		t.Fatalf("a(0,1) = %d, want 128", g)
	}
	if g := grey(1+3*2+2, 1+3+2); g != 0 { // a(1,2) = 0, last sub-pixel
		t.Fatalf("a(1,2) = %d, want 0", g)
	}
	if g := grey(11+3*2, 1+3); g != 255 { // b(1,2) = 2 clamped
		t.Fatalf("b(1,2) = %d, want 255", g)
	}
	if g := grey(0, 0); g != 255 { // padding is white
		t.Fatalf("padding %d", g)
	}
	if g := grey(1, 8); g != 0 { // third image, row 2 of the grid: a(0,0) = 0
		t.Fatalf("third image %d", g)
	}
	rgb := []float32{1, 0, 0, 1} // a 1×2 RGB image needs 6 values
	if _, err := ImageGrid([][]float32{rgb}, 3, 1, 2, GridOptions{}); err == nil {
		t.Fatal("wrong length: want error")
	}
	rgb = []float32{1, 0, 0, 1, 0, 0} // planes R = (1,0), G = (0,1), B = (0,0)
	img, err = ImageGrid([][]float32{rgb}, 3, 1, 2, GridOptions{Scale: 1, Pad: 1})
	if err != nil {
		t.Fatal(err)
	}
	if c := img.RGBAAt(1, 1); c.R != 255 || c.G != 0 || c.B != 0 {
		t.Fatalf("pixel 0 = %v, want red", c)
	}
	if c := img.RGBAAt(2, 1); c.R != 0 || c.G != 255 || c.B != 0 {
		t.Fatalf("pixel 1 = %v, want green", c)
	}
	for name, f := range map[string]func() error{
		"no images": func() error { _, err := ImageGrid(nil, 1, 2, 2, GridOptions{}); return err },
		"bad C":     func() error { _, err := ImageGrid([][]float32{{1, 1}}, 2, 1, 1, GridOptions{}); return err },
		"wrong size": func() error {
			_, err := ImageGrid([][]float32{{1, 1, 1}}, 1, 2, 2, GridOptions{})
			return err
		},
	} {
		if f() == nil {
			t.Errorf("%s: want error", name)
		}
	}
}

func TestDecadeTicks(t *testing.T) {
	tests := []struct {
		min, max float64
		labels   []string // labelled ticks in order
		minor    int      // unlabelled ticks
	}{
		{1e-5, 1e-3, []string{"1e-5", "1e-4", "0.001"}, 16},
		{0.5, 2000, []string{"1", "10", "100", "1000"}, 0},
		{0.5, 200, []string{"1", "10", "100"}, 5 + 8 + 8 + 1}, // 0.5…0.9, 2…9, 20…90, 200
		{1e-24, 1e5, []string{"1e-24", "1e-20", "1e-16", "1e-12", "1e-8", "1e-4", "1", "10000"}, 22},
		// Fewer than three labelled decades: 2 and 5 × 10^k too, or all of 2…9 × 10^k
		// (the glm-invert scatter's 0.03–0.7 had only "0.1").
		{3, 7, []string{"3", "4", "5", "6", "7"}, 0},
		{0.03, 0.7, []string{"0.05", "0.1", "0.2", "0.5"}, 10},
		{2e-5, 7e-5, []string{"2e-05", "3e-05", "4e-05", "5e-05", "6e-05", "7e-05"}, 0},
		{0.5, 20, []string{"0.5", "1", "2", "5", "10", "20"}, 4 + 6}, // 0.6…0.9, 3, 4, 6…9
	}
	for _, tc := range tests {
		var labels []string
		minor := 0
		for _, tk := range (DecadeTicks{}).Ticks(tc.min, tc.max) {
			if tk.Value < tc.min || tk.Value > tc.max {
				t.Fatalf("[%g, %g]: tick %g outside the range", tc.min, tc.max, tk.Value)
			}
			if tk.Label == "" {
				minor++
			} else {
				labels = append(labels, tk.Label)
				if v, err := strconv.ParseFloat(tk.Label, 64); err != nil || v != tk.Value {
					t.Fatalf("label %q does not read back as %g", tk.Label, tk.Value)
				}
			}
		}
		if !reflect.DeepEqual(labels, tc.labels) || minor != tc.minor {
			t.Errorf("[%g, %g]: labels %v (%d minor), want %v (%d minor)", tc.min, tc.max, labels, minor, tc.labels, tc.minor)
		}
	}
	if ts := (DecadeTicks{}).Ticks(0, 1); ts != nil {
		t.Fatalf("non-positive range: %v", ts)
	}
}

func TestImageGridNaNIsGrey(t *testing.T) {
	img, err := ImageGrid([][]float32{{0, 1, float32(math.NaN()), 2}}, 1, 2, 2, GridOptions{Scale: 1, Pad: 1})
	if err != nil {
		t.Fatal(err)
	}
	// Pixels sit at (1+x, 1+y) behind a 1-pixel pad.
	want := map[[2]int]uint8{{1, 1}: 0, {2, 1}: 255, {1, 2}: 128, {2, 2}: 255}
	for p, v := range want {
		if got := img.RGBAAt(p[0], p[1]).R; got != v {
			t.Errorf("pixel %v = %d, want %d", p, got, v)
		}
	}
}
