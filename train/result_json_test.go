package train

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpfil/dpfil/train/fil"
)

// TestResultRoundTrip writes a result whose non-finite numbers are null (ε without
// noise, FIL bounds at dFIL = 0, η² and label-FIL summaries with infinite MSE bounds
// and a NaN statistic), reads it back and writes it again: the two files are
// byte-identical and every null is still null. (FILSummary's nulls used to read back
// as 0 and be rewritten as 0.)
func TestResultRoundTrip(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	sum := fil.Summary{Count: 3, Max: 0, Median: 0, Mean: 0, Min: nan,
		Quantiles: map[string]float64{"p50": 0, "p99": nan}, MSEBoundMax: inf, MSEBoundMedian: inf}
	r := &Result{Config: DefaultConfig(), TestAccuracy: 0.5, TestAccuracies: []float64{0.5}, Epsilon: inf, RDPOrder2: inf,
		EpsilonOrder: inf, MSEBoundRDP: 0, FIL: true, DFILMax: 0, DFILMedian: 0, DFILMean: 0, MSEBoundFILMax: inf,
		MSEBoundFILMedian: inf, PerClassAccuracy: Floats{0.5, nan},
		Eta:      &EtaResult{Iterations: 2, EtaSq: sum, MaxRelChange: 0.1},
		LabelFIL: &LabelFILResult{Classes: 10, DFIL: sum, EtaSq: sum}}
	d1, d2 := t.TempDir(), t.TempDir()
	if err := WriteResult(d1, r); err != nil {
		t.Fatal(err)
	}
	back, err := ReadResult(d1)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteResult(d2, back); err != nil {
		t.Fatal(err)
	}
	b1, err := os.ReadFile(filepath.Join(d1, ResultFile))
	if err != nil {
		t.Fatal(err)
	}
	b2, err := os.ReadFile(filepath.Join(d2, ResultFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b1, b2) {
		t.Fatalf("rewritten result differs:\n%s\nfirst:\n%s", b2, b1)
	}
	for _, want := range []string{`"mse_bound_max": null`, `"mse_bound_median": null`, `"min": null`, `"p99": null`, `"epsilon": null`} {
		if !strings.Contains(string(b2), want) {
			t.Errorf("rewritten result lacks %s", want)
		}
	}
	if e := back.Eta.EtaSq; !math.IsInf(e.MSEBoundMax, 1) || !math.IsNaN(e.Min) || !math.IsNaN(e.Quantiles["p99"]) || e.Quantiles["p50"] != 0 {
		t.Errorf("η² summary read back as %+v: want +Inf bounds, NaN min and p99", e)
	}
	if l := back.LabelFIL; !math.IsInf(l.DFIL.MSEBoundMedian, 1) || !math.IsInf(l.EtaSq.MSEBoundMax, 1) || l.Classes != 10 {
		t.Errorf("label FIL read back as %+v", l)
	}
	if !math.IsInf(back.Epsilon, 1) || !math.IsInf(back.MSEBoundFILMax, 1) || !math.IsNaN(back.PerClassAccuracy[1]) {
		t.Errorf("read back ε %v, FIL bound %v, per-class %v", back.Epsilon, back.MSEBoundFILMax, back.PerClassAccuracy)
	}
}

// TestMetricsReadLikeResult: the headline numbers read through Metrics (what sweep
// reads) equal those of the whole Result, for nulls, absent fields and numbers.
func TestMetricsReadLikeResult(t *testing.T) {
	for _, js := range []string{
		`{"test_accuracy":null,"epsilon":null,"rdp_order2":null,"mse_bound_rdp":0.25,"dfil_max":null,"mse_bound_fil_max":null,"mse_bound_fil_median":null}`,
		`{"test_accuracy":0.9,"epsilon":3,"rdp_order2":0.5,"mse_bound_rdp":0.4,"mse_bound_fil_max":null,"mse_bound_fil_median":null}`,
		`{"test_accuracy":0.9,"epsilon":3,"dfil_max":4,"dfil_median":2,"dfil_mean":2.5,"mse_bound_fil_max":0.25,"mse_bound_fil_median":0.5}`,
	} {
		var r Result
		if err := json.Unmarshal([]byte(js), &r); err != nil {
			t.Fatal(err)
		}
		var m Metrics
		if err := json.Unmarshal([]byte(js), &m); err != nil {
			t.Fatal(err)
		}
		a, _ := json.Marshal(r.Metrics())
		b, _ := json.Marshal(m)
		if string(a) != string(b) {
			t.Errorf("%s: Result reads %s, Metrics %s", js, a, b)
		}
	}
}
