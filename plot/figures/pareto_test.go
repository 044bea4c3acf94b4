package figures

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"image"
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/dpfil/dpfil/plot"
	"github.com/dpfil/dpfil/sweep"
	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

func record(i int, m map[string]float64) sweep.Record {
	res, _ := json.Marshal(m)
	return sweep.Record{Hash: fmt.Sprintf("h%02d", i), Index: i, Config: json.RawMessage(`{}`), Result: res}
}

// syntheticRecords mimics a sweep: accuracy grows, bounds shrink with training.
func syntheticRecords(n int, seed uint64) []sweep.Record {
	rng := rand.New(rand.NewPCG(seed, 1))
	var recs []sweep.Record
	for i := 0; i < n; i++ {
		acc := 0.5 + 0.49*rng.Float64()
		rdp := math.Pow(10, -4*acc+rng.NormFloat64()*0.3)
		recs = append(recs, record(i, map[string]float64{
			"test_accuracy": acc, "mse_bound_rdp": rdp,
			"mse_bound_fil_max": rdp * 20 * (1 + rng.Float64()), "mse_bound_fil_median": rdp * 500,
		}))
	}
	return recs
}

func TestParetoDataMatchesFrontier(t *testing.T) {
	recs := syntheticRecords(60, 7)
	// Records a log axis cannot show: FIL off (bound 0), NaN, Inf.
	recs = append(recs,
		record(60, map[string]float64{"test_accuracy": 0.99, "mse_bound_rdp": 0.5}),
		record(61, map[string]float64{"test_accuracy": 0.98, "mse_bound_rdp": -1, "mse_bound_fil_max": 1, "mse_bound_fil_median": 2}),
	)
	series, err := ParetoData(recs)
	if err != nil {
		t.Fatal(err)
	}
	if len(series) != 3 {
		t.Fatalf("%d series", len(series))
	}
	wantDropped := map[string]int{"mse_bound_rdp": 1, "mse_bound_fil_max": 1, "mse_bound_fil_median": 1}
	for _, s := range series {
		if s.Dropped != wantDropped[s.Key] || len(s.Points) != len(recs)-s.Dropped {
			t.Fatalf("%s: %d points, %d dropped", s.Key, len(s.Points), s.Dropped)
		}
		// Independent reference: Frontier on points built directly from the records.
		var pts []sweep.Point
		for i, r := range recs {
			var m map[string]float64
			json.Unmarshal(r.Result, &m)
			if b := m[s.Key]; b > 0 {
				pts = append(pts, sweep.Point{Index: i, Accuracy: m["test_accuracy"], Bound: b})
			}
		}
		want, _ := sweep.Frontier(pts)
		if !reflect.DeepEqual(s.Frontier, want) || len(want) == 0 {
			t.Fatalf("%s frontier %v, want %v", s.Key, s.Frontier, want)
		}
	}
}

// TestParetoTwoStageSeries: the two-stage bound (nested fil_two_stage.mse_bound_max,
// written by runs with fil_refine_top) is a fourth series when some record has it,
// with the frontier of exactly those records, and absent otherwise.
func TestParetoTwoStageSeries(t *testing.T) {
	recs := syntheticRecords(20, 3)
	series, err := ParetoData(recs)
	if err != nil || len(series) != 3 {
		t.Fatalf("without two-stage bounds: %d series (err %v), want 3", len(series), err)
	}
	var pts []sweep.Point
	for i := range recs {
		if i%3 == 0 {
			continue // some runs were not refined
		}
		var m map[string]any
		json.Unmarshal(recs[i].Result, &m)
		b := m["mse_bound_fil_max"].(float64) * 2
		m["fil_two_stage"] = map[string]any{"mse_bound_max": b, "max": 1 / b}
		recs[i].Result, _ = json.Marshal(m)
		pts = append(pts, sweep.Point{Index: i, Accuracy: m["test_accuracy"].(float64), Bound: b})
	}
	series, err = ParetoData(recs)
	if err != nil || len(series) != 4 || series[3].Key != "mse_bound_fil_two_stage" {
		t.Fatalf("with two-stage bounds: %d series (err %v), want 4 ending in mse_bound_fil_two_stage", len(series), err)
	}
	want, _ := sweep.Frontier(pts)
	if s := series[3]; !reflect.DeepEqual(s.Frontier, want) || len(s.Points) != len(pts) || s.Dropped != len(recs)-len(pts) {
		t.Fatalf("two-stage series: %d points, %d dropped, frontier %v, want %v", len(s.Points), s.Dropped, s.Frontier, want)
	}
	if _, err := Pareto(series, ParetoOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestRenderSizes(t *testing.T) {
	series, err := ParetoData(syntheticRecords(30, 1))
	if err != nil {
		t.Fatal(err)
	}
	p, err := Pareto(series, ParetoOptions{Title: "test", AccuracyPercent: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, sz := range [][2]int{{640, 480}, {333, 211}, {1200, 900}} {
		b, err := plot.Render(p, "png", sz[0], sz[1])
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if got := img.Bounds().Size(); got.X != sz[0] || got.Y != sz[1] {
			t.Fatalf("PNG %v, want %v", got, sz)
		}
		// Something was drawn: not every pixel is the background.
		colours := map[uint32]bool{}
		for y := 0; y < sz[1]; y += 3 {
			for x := 0; x < sz[0]; x += 3 {
				r, g, b, _ := img.At(x, y).RGBA()
				colours[r<<16|g<<8|b] = true
			}
		}
		if len(colours) < 5 {
			t.Fatalf("PNG looks blank (%d colours)", len(colours))
		}

		b, err = plot.Render(p, "svg", sz[0], sz[1])
		if err != nil {
			t.Fatal(err)
		}
		var root struct {
			XMLName xml.Name
			Width   string `xml:"width,attr"`
			Height  string `xml:"height,attr"`
		}
		if err := xml.Unmarshal(b, &root); err != nil {
			t.Fatalf("SVG does not parse: %v", err)
		}
		w, _ := strconv.ParseFloat(strings.TrimSuffix(root.Width, "pt"), 64)
		h, _ := strconv.ParseFloat(strings.TrimSuffix(root.Height, "pt"), 64)
		if root.XMLName.Local != "svg" || math.Abs(w-float64(sz[0])*0.75) > 0.01 || math.Abs(h-float64(sz[1])*0.75) > 0.01 {
			t.Fatalf("SVG %s %s×%s, want %g×%g pt", root.XMLName.Local, root.Width, root.Height, float64(sz[0])*0.75, float64(sz[1])*0.75)
		}
	}
	b, err := plot.Render(p, "pdf", 400, 300)
	if err != nil || !bytes.HasPrefix(b, []byte("%PDF")) {
		t.Fatalf("PDF: %v, %q", err, b[:min(8, len(b))])
	}
	for _, bad := range [][2]int{{0, 100}, {100, 5}, {100000, 100}} {
		if _, err := plot.Render(p, "png", bad[0], bad[1]); err == nil {
			t.Fatalf("size %v: want error", bad)
		}
	}
	if _, err := plot.Render(p, "gif", 100, 100); err == nil {
		t.Fatal("gif: want error")
	}
}

func TestSave(t *testing.T) {
	series, _ := ParetoData(syntheticRecords(10, 2))
	p, err := Pareto(series, ParetoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "f.png")
	if err := plot.Save(p, path, 300, 200); err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(path)
	defer f.Close()
	cfg, err := png.DecodeConfig(f)
	if err != nil || cfg.Width != 300 || cfg.Height != 200 {
		t.Fatalf("saved PNG %v %v", cfg, err)
	}
	if err := plot.Save(p, filepath.Join(dir, "f.txt"), 300, 200); err == nil {
		t.Fatal(".txt: want error")
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "sub"))
	if len(entries) != 1 {
		t.Fatalf("temporary files left behind: %v", entries)
	}
}

func TestParetoNoPoints(t *testing.T) {
	series, err := ParetoData([]sweep.Record{record(0, map[string]float64{"test_accuracy": 0.9})})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Pareto(series, ParetoOptions{}); err == nil {
		t.Fatal("no drawable points: want error")
	}
	// One point per series is fine (degenerate x range).
	series, _ = ParetoData([]sweep.Record{record(0, map[string]float64{"test_accuracy": 0.9, "mse_bound_rdp": 3})})
	p, err := Pareto(series, ParetoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plot.Render(p, "png", 200, 150); err != nil {
		t.Fatal(err)
	}
}

func BenchmarkRenderParetoPNG(b *testing.B) {
	series, _ := ParetoData(syntheticRecords(432, 3))
	p, err := Pareto(series, ParetoOptions{})
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		if _, err := plot.Render(p, "png", 800, 600); err != nil {
			b.Fatal(err)
		}
	}
}

// TestParetoLegendLayout draws the Fig. 5 plot of docs/img from its recorded
// results and checks where the legend went: inside the data area, clear of the
// title band, and over no data point.
func TestParetoLegendLayout(t *testing.T) {
	for _, files := range [][]string{
		{"fig5-reduced-mnist.results.jsonl"},
		{"fig5-reduced-mnist-poisson.results.jsonl"},
	} {
		var recs []sweep.Record
		for _, f := range files {
			rs, _, err := sweep.ReadResults(filepath.Join("..", "..", "docs", "img", f))
			if err != nil {
				t.Fatal(err)
			}
			recs = append(recs, rs...)
		}
		f := files[0]
		series, err := ParetoData(recs)
		if err != nil {
			t.Fatal(err)
		}
		for _, size := range [][2]int{{800, 600}, {600, 450}, {1200, 500}} {
			p, legend, err := pareto(series, ParetoOptions{Title: "Fig. 5 on the full MNIST (60 000 digits, T = 1000)", AccuracyPercent: true})
			if err != nil {
				t.Fatal(err)
			}
			c := vgimg.NewWith(vgimg.UseImage(image.NewRGBA(image.Rect(0, 0, size[0], size[1]))), vgimg.UseDPI(plot.DPI))
			dc := draw.New(c)
			p.Draw(dc)
			title := p.Title.TextStyle.Rectangle(p.Title.Text)
			titleBottom := dc.Max.Y - title.Size().Y - p.Title.Padding
			data := p.DataCanvas(dc)
			r := legend.Rect
			if r.Max.Y >= titleBottom {
				t.Errorf("%s %v: legend top %v reaches the title band (from %v)", f, size, r.Max.Y, titleBottom)
			}
			if r.Min.X < data.Min.X || r.Max.X > data.Max.X || r.Min.Y < data.Min.Y || r.Max.Y > data.Max.Y {
				t.Errorf("%s %v: legend %v outside the data area %v", f, size, r, data.Rectangle)
			}
			trX, trY := p.Transforms(&data)
			for _, s := range series {
				for _, q := range s.Points {
					x, y := trX(100*q.Accuracy), trY(q.Bound)
					if x >= r.Min.X && x <= r.Max.X && y >= r.Min.Y && y <= r.Max.Y {
						t.Errorf("%s %v: legend covers the %s point (%v, %v)", f, size, s.Key, q.Accuracy, q.Bound)
					}
				}
			}
			if n := labelled(p.X.Tick.Marker.Ticks(p.X.Min, p.X.Max)); n < 4 {
				t.Errorf("%s %v: %d labelled x ticks", f, size, n)
			}
			if r.Size().X < vg.Points(50) || r.Size().Y < vg.Points(40) {
				t.Errorf("%s %v: legend box %v too small for four entries", f, size, r.Size())
			}
		}
	}
}

// labelled counts the ticks with a label.
func labelled(ts []gplot.Tick) int {
	n := 0
	for _, t := range ts {
		if t.Label != "" {
			n++
		}
	}
	return n
}
