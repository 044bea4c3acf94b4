package figures_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/dpfil/dpfil/plot/figures"
	"github.com/dpfil/dpfil/sweep"
	"github.com/dpfil/dpfil/train/fil"
)

func TestParseIndices(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []int
		err  bool
	}{
		{"0,5, 10-12", []int{0, 5, 10, 11, 12}, false},
		{"3,,", []int{3}, false},
		{"", nil, false},
		{"4-2", nil, true},
		{"1-x", nil, true},
		{"x", nil, true},
		{"0-10001", nil, true},
	} {
		got, err := figures.ParseIndices(c.in)
		if (err != nil) != c.err || !reflect.DeepEqual(got, c.want) {
			t.Errorf("ParseIndices(%q) = %v, %v; want %v (error %v)", c.in, got, err, c.want, c.err)
		}
	}
}

// The Pareto report's frontiers are sweep.Frontier of each bound, by record.
func TestWritePareto(t *testing.T) {
	dir := t.TempDir()
	var recs []sweep.Record
	for i, r := range []string{
		`{"test_accuracy":0.90,"mse_bound_rdp":0.01,"mse_bound_fil_max":0.5,"mse_bound_fil_median":null}`,
		`{"test_accuracy":0.95,"mse_bound_rdp":0.001,"mse_bound_fil_max":0.8,"mse_bound_fil_median":9}`,
		`{"test_accuracy":0.93,"mse_bound_rdp":0.0005,"mse_bound_fil_max":0.1,"mse_bound_fil_median":3}`,
	} {
		recs = append(recs, sweep.Record{Hash: fmt.Sprint("h", i), Index: i, Config: json.RawMessage(`{}`), Result: json.RawMessage(r)})
	}
	if err := sweep.WriteResults(sweep.ResultsPath(dir), recs); err != nil {
		t.Fatal(err)
	}
	var warn bytes.Buffer
	out := filepath.Join(dir, "p.svg")
	rep, err := figures.WritePareto(figures.ParetoRequest{Figure: figures.Figure{Out: out, Width: 400, Height: 300}, Inputs: []string{dir, sweep.ResultsPath(dir)}, Warn: &warn})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Records != 3 || len(rep.Series) != 3 || warn.Len() != 0 {
		t.Fatalf("report %+v, warnings %q", rep, &warn)
	}
	want := map[string][]string{"mse_bound_rdp": {"h0", "h1"}, "mse_bound_fil_max": {"h1"}, "mse_bound_fil_median": {"h1"}}
	for _, s := range rep.Series {
		var got []string
		for _, p := range s.Frontier {
			got = append(got, p.Hash)
		}
		if !reflect.DeepEqual(got, want[s.Key]) {
			t.Errorf("%s frontier %v, want %v", s.Key, got, want[s.Key])
		}
		if s.Key == "mse_bound_fil_median" && (s.Dropped != 1 || s.Points != 2) {
			t.Errorf("median series: %d points, %d dropped", s.Points, s.Dropped)
		}
	}
	if b, err := os.ReadFile(out); err != nil || !strings.Contains(string(b), "<svg") {
		t.Fatalf("figure: %v", err)
	}
	if _, err := figures.WritePareto(figures.ParetoRequest{Inputs: []string{dir}}); err == nil || !strings.Contains(err.Error(), "no output file") {
		t.Fatalf("no -o: %v", err)
	}
}

// The histogram of 1/dFIL counts every finite, positive bound; dFIL 0 is dropped.
func TestWriteHist(t *testing.T) {
	dir := t.TempDir()
	npy := filepath.Join(dir, "dfil.npy")
	if err := fil.Save(npy, []float64{0.5, 2, 4, 0}); err != nil {
		t.Fatal(err)
	}
	rep, err := figures.WriteHist(figures.HistRequest{Figure: figures.Figure{Out: filepath.Join(dir, "h.png"), Width: 300, Height: 200}, DFIL: npy, What: "mse", Bins: 4})
	if err != nil {
		t.Fatal(err)
	}
	if rep.N != 3 || rep.Dropped != 1 || rep.Min != 0.25 || rep.Max != 2 || len(rep.Counts) != 4 {
		t.Fatalf("report %+v", rep)
	}
	if _, err := figures.WriteHist(figures.HistRequest{Figure: figures.Figure{Out: filepath.Join(dir, "h.png")}, DFIL: npy, What: "eta"}); err == nil {
		t.Fatal("--what eta accepted")
	}
}

// The dFIL selection is the top samples by dFIL, then the bottom ones.
func TestWriteImagesByDFIL(t *testing.T) {
	dir := t.TempDir()
	npy := filepath.Join(dir, "dfil.npy")
	if err := fil.Save(npy, []float64{3, 9, 1, 7, 5}); err != nil {
		t.Fatal(err)
	}
	rep, err := figures.WriteImages(figures.ImagesRequest{Out: filepath.Join(dir, "g.png"), Dataset: "mnist-embedded", Split: "train", DFIL: npy, Top: 2, Bottom: 1, Scale: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rep.Indices, []int{1, 3, 2}) || !reflect.DeepEqual(rep.DFIL, []float64{9, 7, 1}) || len(rep.Labels) != 3 {
		t.Fatalf("report %+v", rep)
	}
	if rep.Width != rep.Height || rep.Width < 2*28 || rep.Width > 3*28 {
		t.Fatalf("grid %d×%d, want two columns and two rows of 28 px (and padding)", rep.Width, rep.Height)
	}
	for _, bad := range []figures.ImagesRequest{
		{Out: "g.svg", Indices: "1"},
		{Out: "g.png"},
		{Out: "g.png", Indices: "1", DFIL: npy},
		{Out: filepath.Join(dir, "g.png"), Dataset: "mnist-embedded", Split: "test", DFIL: npy, Top: 1},
		{Out: filepath.Join(dir, "g.png"), Dataset: "mnist-embedded", Split: "train", Indices: "99999"},
	} {
		if _, err := figures.WriteImages(bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}
