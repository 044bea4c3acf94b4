package sweep_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpfil/dpfil/sweep"
)

const reportGrid = `name: rep
base: {model: linear, steps: 1, batch: 10}
grid: {sigma: [0.5, 1, 2]}
`

func expand(t *testing.T) *sweep.Expanded {
	t.Helper()
	f := filepath.Join(t.TempDir(), "g.yaml")
	if err := os.WriteFile(f, []byte(reportGrid), 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := sweep.Expand(f)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// runner returns metrics from the job's σ; σ = 2 has no FIL (null bounds).
func runner(_ context.Context, j sweep.Job, _ string) (json.RawMessage, error) {
	m := map[string]any{"test_accuracy": 1 / (1 + j.Config.Sigma), "epsilon": 3 / j.Config.Sigma,
		"mse_bound_rdp": j.Config.Sigma / 10, "mse_bound_fil_max": j.Config.Sigma, "mse_bound_fil_median": 2 * j.Config.Sigma}
	if j.Config.Sigma == 2 {
		m["mse_bound_fil_max"], m["mse_bound_fil_median"] = nil, nil
	}
	return json.Marshal(m)
}

func TestExpandedRunStatusListMerge(t *testing.T) {
	e := expand(t)
	out := t.TempDir()
	rep, err := e.Run(context.Background(), sweep.RunRequest{Out: out, Workers: 2, Runner: runner})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Ran != 3 || len(rep.Points) != 3 {
		t.Fatalf("report %+v", rep)
	}
	for i, p := range rep.Points {
		sigma := []float64{0.5, 1, 2}[i]
		if p.Index != i || float64(p.TestAccuracy) != 1/(1+sigma) || float64(p.Epsilon) != 3/sigma || float64(p.MSEBoundRDP) != sigma/10 {
			t.Fatalf("point %d: %+v", i, p)
		}
		if fil := float64(p.MSEBoundFILMax); (sigma == 2) != math.IsInf(fil, 1) {
			t.Fatalf("point %d: FIL bound %v", i, fil)
		}
	}
	b, _ := json.Marshal(rep.Points[2])
	if !strings.Contains(string(b), `"mse_bound_fil_max":null`) {
		t.Fatalf("no FIL must be null: %s", b)
	}
	var text bytes.Buffer
	rep.WriteText(&text)
	if !strings.Contains(text.String(), "3 ran") || strings.Count(text.String(), "∞") != 3 { // two points and the footnote
		t.Fatalf("text:\n%s", &text)
	}
	if _, err := e.Run(context.Background(), sweep.RunRequest{Out: out, Workers: 0, Runner: runner}); err == nil {
		t.Fatal("0 workers accepted")
	}

	st, err := e.Status(out, sweep.Shard{I: 1, N: 2})
	if err != nil || st.Jobs != 1 || st.Done != 1 || st.Pending != 0 {
		t.Fatalf("status %+v, %v", st, err)
	}
	l, err := e.List(sweep.Shard{I: 0, N: 2})
	if err != nil || l.Total != 3 || len(l.Jobs) != 2 || l.Jobs[1].Index != 2 || l.Keys[0] != "sigma" {
		t.Fatalf("list %+v, %v", l, err)
	}

	// Merging the sweep into a new directory, twice: the second finds duplicates.
	dst := t.TempDir()
	for _, dups := range []int{0, 3} {
		m, err := sweep.MergeDirs(sweep.MergeRequest{Out: dst, Inputs: []string{out}})
		if err != nil || !m.Written || m.Unique != 3 || m.Duplicates != dups {
			t.Fatalf("merge %+v, %v", m, err)
		}
	}
	recs, rep2, err := sweep.ReadInputs([]string{dst, sweep.ResultsPath(out)})
	if err != nil || len(recs) != 3 || rep2.Duplicates != 3 {
		t.Fatalf("read inputs: %d records, %+v, %v", len(recs), rep2, err)
	}
}

func TestReadInputsSaysWhy(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ content, want string }{
		{"", "is empty"},
		{"\x00\x01\x02binary", "binary data"},
		{"garbage\n", "no usable record: 1 unusable lines"},
	} {
		f := filepath.Join(dir, "r.jsonl")
		if err := os.WriteFile(f, []byte(c.content), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, _, err := sweep.ReadInputs([]string{f}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.content, err, c.want)
		}
	}
	if _, _, err := sweep.ReadInputs([]string{filepath.Join(dir, "missing")}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing input: %v", err)
	}
}

func TestPlanDefaults(t *testing.T) {
	e := expand(t)
	for _, k8s := range []bool{false, true} {
		p, err := e.Plan(sweep.PlanRequest{PlanOptions: sweep.PlanOptions{Shards: 2, Image: "img"}, Kubernetes: k8s})
		if err != nil {
			t.Fatal(err)
		}
		root, mode := "sweep-rep", os.FileMode(0o755)
		if k8s {
			root, mode = "/results", 0o644
		}
		if !strings.Contains(p.Text, "dpfil-rep") || !strings.Contains(p.Text, root) || p.Mode != mode || p.Runs != 3 {
			t.Fatalf("k8s %v: mode %v runs %d\n%s", k8s, p.Mode, p.Runs, p.Text)
		}
	}
	if _, err := e.Plan(sweep.PlanRequest{PlanOptions: sweep.PlanOptions{Shards: 4}}); err == nil {
		t.Fatal("4 shards of 3 runs accepted")
	}
}

// Metrics reads null (an infinite bound) as +Inf and a missing field as 0.
func TestMetricsNullIsInfinite(t *testing.T) {
	r := sweep.Record{Hash: "h", Result: json.RawMessage(`{"test_accuracy": 0.5, "epsilon": null, "mse_bound_fil_max": null, "dfil_max": 2}`)}
	m, err := r.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	if m.TestAccuracy != 0.5 || !math.IsInf(m.Epsilon, 1) || !math.IsInf(m.MSEBoundFILMax, 1) || m.DFILMax != 2 || m.MSEBoundRDP != 0 {
		t.Fatalf("metrics %+v", m)
	}
	if _, err := (sweep.Record{Result: json.RawMessage(`{"epsilon": "x"}`)}).Metrics(); err == nil {
		t.Fatal("a string ε accepted")
	}
}

func TestRunPointJSONRoundTrip(t *testing.T) {
	p := sweep.RunPoint{Index: 3, Hash: "h", TestAccuracy: math.NaN(), Epsilon: 2.5, MSEBoundRDP: 1e-7, MSEBoundFILMax: math.Inf(1), MSEBoundFILMedian: math.Inf(1)}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"index":3,"hash":"h","test_accuracy":null,"epsilon":2.5,"mse_bound_rdp":1e-7,"mse_bound_fil_max":null,"mse_bound_fil_median":null}`
	if string(b) != want {
		t.Fatalf("%s, want %s", b, want)
	}
	var back sweep.RunPoint
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Index != 3 || !math.IsNaN(back.TestAccuracy) || back.Epsilon != 2.5 || back.MSEBoundRDP != 1e-7 || !math.IsInf(back.MSEBoundFILMax, 1) || !math.IsInf(back.MSEBoundFILMedian, 1) {
		t.Fatalf("read back %+v", back)
	}
}

// TestNullReadsOneWay: a null accuracy, ε, dFIL and FIL bound in a record read the
// same through Record.Metrics (results.jsonl) and RunPoint (the sweep report), a
// report point written, read and written again is byte-identical with its nulls
// kept, and two records that both lack an accuracy are duplicates, not a conflict.
// (Metrics used to read a null accuracy as +Inf while RunPoint read NaN.)
func TestNullReadsOneWay(t *testing.T) {
	res := json.RawMessage(`{"test_accuracy":null,"epsilon":null,"mse_bound_rdp":0.01,"dfil_max":null,"mse_bound_fil_max":null,"mse_bound_fil_median":4}`)
	r := sweep.Record{Hash: "h", Index: 2, Config: json.RawMessage(`{}`), Result: res}
	m, err := r.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(m.TestAccuracy) || !math.IsInf(m.Epsilon, 1) || !math.IsNaN(m.DFILMax) || !math.IsInf(m.MSEBoundFILMax, 1) || m.MSEBoundFILMedian != 4 {
		t.Fatalf("metrics %+v: want NaN accuracy and dFIL, +Inf ε and bound", m)
	}
	p := sweep.PointOf(r)
	b1, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var back sweep.RunPoint
	if err := json.Unmarshal(b1, &back); err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(back.TestAccuracy) || !math.IsNaN(m.TestAccuracy) || !math.IsInf(back.Epsilon, 1) {
		t.Fatalf("report point %+v reads null differently from Metrics %+v", back, m)
	}
	b2, err := json.Marshal(back)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"index":2,"hash":"h","test_accuracy":null,"epsilon":null,"mse_bound_rdp":0.01,"mse_bound_fil_max":null,"mse_bound_fil_median":4}`
	if string(b1) != want || string(b2) != want {
		t.Fatalf("written %s, rewritten %s, want %s", b1, b2, want)
	}
	mb, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var m2 sweep.Metrics
	if err := json.Unmarshal(mb, &m2); err != nil {
		t.Fatal(err)
	}
	if mb2, _ := json.Marshal(m2); string(mb2) != string(mb) {
		t.Fatalf("metrics rewritten %s, first %s", mb2, mb)
	}
	out, rep, err := sweep.Merge([]sweep.Source{{Name: "a", Records: []sweep.Record{r}}, {Name: "b", Records: []sweep.Record{r}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 || rep.Duplicates != 1 || len(rep.Conflicts) != 0 {
		t.Fatalf("merge of a record with itself: %d kept, %d duplicates, conflicts %v", len(out), rep.Duplicates, rep.Conflicts)
	}
}
