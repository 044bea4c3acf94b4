package cli

import (
	"encoding/json"
	"fmt"
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/dpfil/dpfil/sweep"
	"github.com/dpfil/dpfil/train/fil"
)

func pngSize(t *testing.T, path string) (int, int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg, err := png.DecodeConfig(f)
	if err != nil {
		t.Fatalf("%s is not a PNG: %v", path, err)
	}
	return cfg.Width, cfg.Height
}

// Each kind of unusable results file gets its own explanation, and skipped lines of
// an otherwise good file are reported, in human output too.
func TestPlotParetoBadInputs(t *testing.T) {
	dir := t.TempDir()
	good := `{"hash":"h1","index":0,"config":{},"result":{"test_accuracy":0.5,"mse_bound_rdp":2,"mse_bound_fil_max":20,"mse_bound_fil_median":200}}` + "\n"
	files := map[string]string{
		"empty.jsonl":   "",
		"binary.jsonl":  "\x00\x01\x02\xff\xfe binary",
		"corrupt.jsonl": `{"hash": "x", broken` + "\n",
		"torn.jsonl":    good[:40],
		"partial.jsonl": good + good[:40],
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, want := range map[string]string{"empty.jsonl": "is empty", "binary.jsonl": "binary data",
		"corrupt.jsonl": "invalid JSON", "torn.jsonl": "torn last line"} {
		_, err := runCLI(t, newRootCmd(), "plot", "pareto", filepath.Join(dir, name), "-o", filepath.Join(dir, "p.png"))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", name, err, want)
		}
	}
	var stdout, stderr strings.Builder
	cmd := newRootCmd()
	cmd.SetArgs([]string{"plot", "pareto", filepath.Join(dir, "partial.jsonl"), "-o", filepath.Join(dir, "p.png")})
	cmd.SetOut(&stdout)
	cmd.SetErr(&stderr)
	err := cmd.Execute()
	out := stdout.String()
	if err != nil || !strings.Contains(out, "1 unusable lines skipped") || !strings.Contains(stderr.String(), "partial.jsonl:2: torn last line") {
		t.Fatalf("partial file: err %v\nstdout %s\nstderr %s", err, out, stderr.String())
	}
}

func TestPlotParetoCommand(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(11, 12))
	type row struct{ acc, rdp, fmax, fmed float64 }
	var rows []row
	var recs []sweep.Record
	for i := 0; i < 40; i++ {
		acc := math.Round((0.6+0.39*rng.Float64())*100) / 100 // ties on accuracy happen
		rdp := math.Pow(10, -3*acc+0.4*rng.NormFloat64())
		r := row{acc, rdp, rdp * 25, rdp * 400}
		if i == 39 {
			r.fmax, r.fmed = math.Inf(1), math.Inf(1) // FIL off: written as null
		}
		rows = append(rows, r)
		res := fmt.Sprintf(`{"test_accuracy":%v,"mse_bound_rdp":%v,"mse_bound_fil_max":%s,"mse_bound_fil_median":%s}`,
			r.acc, r.rdp, jsonNum(r.fmax), jsonNum(r.fmed))
		recs = append(recs, sweep.Record{Hash: fmt.Sprintf("h%02d", i), Index: i, Config: json.RawMessage(`{}`), Result: json.RawMessage(res)})
	}
	if err := sweep.WriteResults(sweep.ResultsPath(dir), recs); err != nil {
		t.Fatal(err)
	}
	for _, ext := range []string{"png", "svg"} {
		fig := filepath.Join(dir, "pareto."+ext)
		s, err := runCLI(t, newRootCmd(), "plot", "pareto", sweep.ResultsPath(dir), "-o", fig, "--width", "640", "--height", "480", "--percent", "--json")
		if err != nil {
			t.Fatal(err)
		}
		var out struct {
			Records int
			Series  []struct {
				Key      string
				Points   int
				Dropped  int
				Frontier []struct {
					Hash      string
					GridIndex int `json:"grid_index"`
					Accuracy  float64
					Bound     float64
				}
			}
		}
		if err := json.Unmarshal([]byte(s), &out); err != nil {
			t.Fatalf("not one JSON object: %v\n%s", err, s)
		}
		if out.Records != 40 || len(out.Series) != 3 {
			t.Fatalf("output %s", s)
		}
		for si, ser := range out.Series {
			// Reference: sweep.Frontier on the drawable points of this bound.
			var pts []sweep.Point
			for i, r := range rows {
				b := []float64{r.rdp, r.fmax, r.fmed}[si]
				if b > 0 && !math.IsInf(b, 0) {
					pts = append(pts, sweep.Point{Index: i, Accuracy: r.acc, Bound: b})
				}
			}
			want, _ := sweep.Frontier(pts)
			var got []sweep.Point
			for _, q := range ser.Frontier {
				if q.Hash != fmt.Sprintf("h%02d", q.GridIndex) {
					t.Fatalf("frontier point hash %s index %d", q.Hash, q.GridIndex)
				}
				got = append(got, sweep.Point{Index: q.GridIndex, Accuracy: q.Accuracy, Bound: q.Bound})
			}
			if !reflect.DeepEqual(got, want) || len(want) == 0 {
				t.Fatalf("%s frontier %v, want %v", ser.Key, got, want)
			}
			if ser.Points != len(pts) || ser.Dropped != 40-len(pts) {
				t.Fatalf("%s: %d points %d dropped", ser.Key, ser.Points, ser.Dropped)
			}
		}
		if ext == "png" {
			if w, h := pngSize(t, fig); w != 640 || h != 480 {
				t.Fatalf("PNG %d×%d", w, h)
			}
		} else if b, _ := os.ReadFile(fig); !strings.Contains(string(b), `width="480pt" height="360pt"`) {
			t.Fatalf("SVG header: %.300s", b)
		}
	}
	for _, args := range [][]string{
		{"plot", "pareto", sweep.ResultsPath(dir)},                                    // no -o
		{"plot", "pareto", sweep.ResultsPath(dir), "-o", filepath.Join(dir, "x.gif")}, // bad format
		{"plot", "pareto", filepath.Join(dir, "none.jsonl"), "-o", filepath.Join(dir, "x.png")},
		{"plot", "pareto", sweep.ResultsPath(dir), "-o", filepath.Join(dir, "x.png"), "--width", "3"},
	} {
		if _, err := runCLI(t, newRootCmd(), args...); err == nil {
			t.Errorf("dpfil %v: want an error", args)
		}
	}
}

func jsonNum(v float64) string {
	if math.IsInf(v, 0) {
		return "null"
	}
	return fmt.Sprint(v)
}

func TestPlotHistCommand(t *testing.T) {
	dir := t.TempDir()
	npy := filepath.Join(dir, "dfil.npy")
	vals := make([]float64, 500)
	rng := rand.New(rand.NewPCG(1, 1))
	for i := range vals {
		vals[i] = math.Exp(rng.NormFloat64())
	}
	vals[7] = 0 // never sampled: infinite MSE bound, not drawable
	if err := fil.Save(npy, vals); err != nil {
		t.Fatal(err)
	}
	fig := filepath.Join(dir, "h.png")
	s, err := runCLI(t, newRootCmd(), "plot", "hist", "--dfil", npy, "--what", "mse", "--bins", "20", "-o", fig, "--width", "500", "--height", "300", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		N, Dropped int
		Counts     []float64
		Min, Max   float64
	}
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, c := range out.Counts {
		total += c
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, v := range vals {
		if i != 7 {
			lo, hi = math.Min(lo, 1/v), math.Max(hi, 1/v)
		}
	}
	if out.N != 499 || out.Dropped != 1 || total != 499 || len(out.Counts) != 20 || out.Min != lo || out.Max != hi {
		t.Fatalf("hist output %s", s)
	}
	if w, h := pngSize(t, fig); w != 500 || h != 300 {
		t.Fatalf("PNG %d×%d", w, h)
	}
	if _, err := runCLI(t, newRootCmd(), "plot", "hist", "--dfil", filepath.Join(dir, "missing.npy"), "-o", fig); err == nil {
		t.Fatal("missing .npy: want error")
	}
	if _, err := runCLI(t, newRootCmd(), "plot", "hist", "--dfil", npy, "--what", "eta", "-o", fig); err == nil {
		t.Fatal("--what eta: want error")
	}
	bad := filepath.Join(dir, "bad.npy")
	os.WriteFile(bad, []byte("\x93NUMPY garbage"), 0o644)
	if _, err := runCLI(t, newRootCmd(), "plot", "hist", "--dfil", bad, "-o", fig); err == nil {
		t.Fatal("corrupt .npy: want error")
	}
}

func TestPlotScatterCommand(t *testing.T) {
	dir := t.TempDir()
	csv := filepath.Join(dir, "mse.csv")
	os.WriteFile(csv, []byte("sample,predicted,realised\n0,0.1,0.3\n1,0.5,0.2\n2,2,2.5\n3,0.01,0.009\n"), 0o644)
	fig := filepath.Join(dir, "s.svg")
	s, err := runCLI(t, newRootCmd(), "plot", "scatter", "--csv", csv, "--x", "predicted", "--y", "realised", "-o", fig, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var out struct{ N, Violations int }
	if err := json.Unmarshal([]byte(s), &out); err != nil || out.N != 4 || out.Violations != 2 {
		t.Fatalf("scatter %s, %v", s, err)
	}
	if _, err := runCLI(t, newRootCmd(), "plot", "scatter", "--csv", csv, "--x", "predicted", "--y", "nope", "-o", fig); err == nil {
		t.Fatal("unknown column: want error")
	}
}

func TestPlotImagesCommand(t *testing.T) {
	dir := t.TempDir()
	fig := filepath.Join(dir, "g.png")
	s, err := runCLI(t, newRootCmd(), "plot", "images", "--indices", "0,1,2-4", "--scale", "3", "-o", fig, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Indices, Labels []int
		Width, Height   int
	}
	if err := json.Unmarshal([]byte(s), &out); err != nil || !reflect.DeepEqual(out.Indices, []int{0, 1, 2, 3, 4}) || len(out.Labels) != 5 {
		t.Fatalf("images %s, %v", s, err)
	}
	// 5 MNIST images in one row at 3×, 2 px gaps: 5·(84+2)+2 by 84+2+2.
	if w, h := pngSize(t, fig); w != 432 || h != 88 || out.Width != 432 || out.Height != 88 {
		t.Fatalf("PNG %d×%d (reported %d×%d)", w, h, out.Width, out.Height)
	}
	// Highest and lowest dFIL from a dfil.npy.
	d := make([]float64, 50)
	for i := range d {
		d[i] = float64((i * 37) % 50) // a permutation of 0..49
	}
	npy := filepath.Join(dir, "dfil.npy")
	if err := fil.Save(npy, d); err != nil {
		t.Fatal(err)
	}
	s, err = runCLI(t, newRootCmd(), "plot", "images", "--dfil", npy, "--top", "2", "--bottom", "2", "-o", fig, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var out2 struct {
		Indices []int
		DFIL    []float64
	}
	json.Unmarshal([]byte(s), &out2)
	// (i·37) mod 50 = 49 at i = 27 (999), 48 at i = 4 (148), 1 at i = 23 (851), 0 at i = 0.
	if !reflect.DeepEqual(out2.Indices, []int{27, 4, 23, 0}) || !reflect.DeepEqual(out2.DFIL, []float64{49, 48, 1, 0}) {
		t.Fatalf("selected %v with dFIL %v", out2.Indices, out2.DFIL)
	}
	for _, args := range [][]string{
		{"plot", "images", "-o", fig},                                           // neither --indices nor --dfil
		{"plot", "images", "--indices", "999999", "-o", fig},                    // out of range
		{"plot", "images", "--indices", "1", "-o", filepath.Join(dir, "g.svg")}, // not PNG
		{"plot", "images", "--dfil", npy, "--top", "40", "--bottom", "40", "-o", fig},
	} {
		if _, err := runCLI(t, newRootCmd(), args...); err == nil {
			t.Errorf("dpfil %v: want an error", args)
		}
	}
}
