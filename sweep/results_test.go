package sweep

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func rec(hash string, idx int, acc float64) Record {
	res, _ := json.Marshal(map[string]any{"test_accuracy": acc, "mse_bound_rdp": 0.1, "extra_field": []int{1, 2}})
	return Record{Hash: hash, Index: idx, Config: json.RawMessage(`{"sigma":1}`), Result: res}
}

func TestReadResultsTolerance(t *testing.T) {
	good := func(h string) string { b, _ := json.Marshal(rec(h, 0, 0.5)); return string(b) }
	tests := []struct {
		name     string
		content  string
		hashes   []string
		badLines []int
		reason   string
	}{
		{"empty", "", nil, nil, ""},
		{"clean", good("a") + "\n" + good("b") + "\n", []string{"a", "b"}, nil, ""},
		{"blank lines", "\n" + good("a") + "\n\n", []string{"a"}, nil, ""},
		{"torn last line", good("a") + "\n" + good("b")[:20], []string{"a"}, []int{2}, "torn"},
		{"complete last line without newline", good("a") + "\n" + good("b"), []string{"a", "b"}, nil, ""},
		{"corrupt middle line", good("a") + "\n{oops}\n" + good("b") + "\n", []string{"a", "b"}, []int{2}, "invalid JSON"},
		{"record without hash", `{"config":{},"result":{}}` + "\n", nil, []int{1}, "no hash"},
		{"result not an object", `{"hash":"x","config":{},"result":3}` + "\n", nil, []int{1}, "not a JSON object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			recs, bad, err := readResults(strings.NewReader(tc.content), "r.jsonl")
			if err != nil {
				t.Fatal(err)
			}
			var hs []string
			for _, r := range recs {
				hs = append(hs, r.Hash)
			}
			if !reflect.DeepEqual(hs, tc.hashes) {
				t.Fatalf("hashes %v, want %v", hs, tc.hashes)
			}
			var lines []int
			for _, b := range bad {
				lines = append(lines, b.Line)
				if !strings.Contains(b.Reason, tc.reason) {
					t.Fatalf("reason %q, want %q", b.Reason, tc.reason)
				}
			}
			if !reflect.DeepEqual(lines, tc.badLines) {
				t.Fatalf("bad lines %v, want %v", lines, tc.badLines)
			}
		})
	}
}

func TestLogAppendAfterTornLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", ResultsFile)
	l, err := OpenLog(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Append(rec("a", 0, 0.5)); err != nil {
		t.Fatal(err)
	}
	if err := l.Append(Record{Hash: "bad", Config: json.RawMessage(`[]`), Result: json.RawMessage(`{}`)}); err == nil {
		t.Fatal("appending an invalid record: want error")
	}
	l.Close()
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"hash":"torn","ind`)
	f.Close()
	l, err = OpenLog(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Append(rec("b", 1, 0.6)); err != nil {
		t.Fatal(err)
	}
	l.Close()
	recs, bad, err := ReadResults(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0].Hash != "a" || recs[1].Hash != "b" || len(bad) != 1 || bad[0].Line != 2 {
		t.Fatalf("records %v, bad %v", recs, bad)
	}
	// Unknown result fields survive the round trip.
	if !strings.Contains(string(recs[1].Result), "extra_field") {
		t.Fatalf("result lost fields: %s", recs[1].Result)
	}
}

func TestReadResultsMissingFile(t *testing.T) {
	recs, bad, err := ReadResults(filepath.Join(t.TempDir(), "none.jsonl"))
	if err != nil || recs != nil || bad != nil {
		t.Fatalf("missing file: %v %v %v", recs, bad, err)
	}
}

func TestMerge(t *testing.T) {
	a := Source{Name: "a", Records: []Record{rec("h2", 2, 0.5), rec("h0", 0, 0.7)}}
	b := Source{Name: "b", Records: []Record{rec("h1", 1, 0.6), rec("h2", 2, 0.5), rec("h0", 0, 0.9)}}
	out, rep, err := Merge([]Source{a, b})
	if err != nil {
		t.Fatal(err)
	}
	var hs []string
	for _, r := range out {
		hs = append(hs, r.Hash)
	}
	if !reflect.DeepEqual(hs, []string{"h0", "h1", "h2"}) {
		t.Fatalf("merged %v", hs)
	}
	if m, _ := out[0].Metrics(); m.TestAccuracy != 0.7 {
		t.Fatalf("kept the wrong h0 record: %v", m.TestAccuracy)
	}
	if rep.Read != 5 || rep.Unique != 3 || rep.Duplicates != 1 || len(rep.Conflicts) != 1 {
		t.Fatalf("report %+v", rep)
	}
	c := rep.Conflicts[0]
	if c.Hash != "h0" || c.Kept != "a" || c.Other != "b" || !reflect.DeepEqual(c.Fields, []string{"test_accuracy"}) {
		t.Fatalf("conflict %+v", c)
	}
	// Merge output written and read back is identical.
	path := filepath.Join(t.TempDir(), ResultsFile)
	if err := WriteResults(path, out); err != nil {
		t.Fatal(err)
	}
	back, bad, err := ReadResults(path)
	if err != nil || len(bad) != 0 || !reflect.DeepEqual(back, out) {
		t.Fatalf("round trip: %v %v %v", back, bad, err)
	}
}

func TestDiffMetricsTolerance(t *testing.T) {
	a := Metrics{TestAccuracy: 0.9, MSEBoundRDP: 1e-3}
	b := a
	b.MSEBoundRDP *= 1 + 1e-12
	if d := diffMetrics(a, b); len(d) != 0 {
		t.Fatalf("round-off counted as a difference: %v", d)
	}
	b.MSEBoundRDP *= 1 + 1e-6
	if d := diffMetrics(a, b); !reflect.DeepEqual(d, []string{"mse_bound_rdp"}) {
		t.Fatalf("diff %v", d)
	}
}

func BenchmarkReadResults(b *testing.B) {
	var sb strings.Builder
	res, _ := json.Marshal(map[string]any{"test_accuracy": 0.9, "mse_bound_rdp": 0.01, "per_class_accuracy": make([]float64, 10)})
	for i := 0; i < 1000; i++ {
		line, _ := json.Marshal(Record{Hash: fmt.Sprintf("%016x", i), Index: i, Config: json.RawMessage(`{"sigma":1,"lr":0.1}`), Result: res})
		sb.Write(line)
		sb.WriteByte('\n')
	}
	data := sb.String()
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		recs, bad, err := readResults(strings.NewReader(data), "bench")
		if err != nil || len(recs) != 1000 || len(bad) != 0 {
			b.Fatal(err)
		}
	}
}
