package attack

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestReadSweepReport reads back what SweepReport.Write wrote (the file the attack
// figure reads) and rejects results without their bounds.
func TestReadSweepReport(t *testing.T) {
	dir := t.TempDir()
	so := 0.25
	sr := &SweepReport{Sweep: SweepQ, Values: []float64{0.5, 1},
		Results: []*GameReport{
			{Attack: "prior", Gamma: 0.4, GammaCI: [2]float64{0.39, 0.41}, GammaRDP: 0.6, Kappa: 0.1, Q: 0.5, Steps: 10, PriorSize: 10,
				Attacks: map[string]AttackStats{"prior": {Successes: 30, Trials: 100, Rate: 0.3, CI: [2]float64{0.21, 0.4}}}},
			{Attack: "prior", Gamma: 0.7, GammaCI: [2]float64{0.7, 0.7}, GammaRDP: 0.9, Kappa: 0.1, Q: 1, Steps: 10, PriorSize: 10,
				SuccessOrthogonal: &so, Attacks: map[string]AttackStats{"prior": {Successes: 60, Trials: 100, Rate: 0.6, CI: [2]float64{0.5, 0.7}}}},
		},
		JSON: filepath.Join(dir, "sweep.json"), CSV: filepath.Join(dir, "sweep.csv")}
	if err := sr.Write(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(sr.JSON)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := ReadSweepReport(f)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, sr) {
		t.Fatalf("read back %+v, want %+v", got, sr)
	}
	for _, tc := range []struct{ name, data, err string }{
		{"bad json", `{"sweep":`, "decode"},
		{"values vs results", `{"sweep":"eps","values":[1,2],"results":[]}`, "2 values but 0 results"},
		{"no gamma", `{"sweep":"eps","values":[1],"results":[{"gamma_rdp":0.5,"attacks":{}}]}`, "no gamma"},
		{"null gamma_rdp", `{"sweep":"eps","values":[1],"results":[{"gamma":0.5,"gamma_rdp":null}]}`, "no gamma"},
		{"null result", `{"sweep":"eps","values":[1],"results":[null]}`, "null"},
	} {
		if _, err := ReadSweepReport(strings.NewReader(tc.data)); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: error %v, want one mentioning %q", tc.name, err, tc.err)
		}
	}
}
