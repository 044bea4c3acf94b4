package attack

import (
	"slices"
	"strings"
	"testing"

	"github.com/dpfil/dpfil/accounting"
)

// TestBoundsFano: the game's bounds carry the Fano bound of the same run and prior
// (equal to accounting.FanoDPSGD, never below the exact ReRo γ at q = 1), the game
// report prints it beside ReRo, and the sweep CSV has its column.
func TestBoundsFano(t *testing.T) {
	b, err := ComputeBounds(BoundsRequest{Q: 1, Sigma: 2, Steps: 4, PriorSize: 10, Delta: 1e-5, Samples: 1000, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	want, err := accounting.FanoDPSGD(1, 2, 4, 10)
	if err != nil {
		t.Fatal(err)
	}
	if b.Fano == nil || *b.Fano != *want {
		t.Fatalf("bounds Fano %+v, want %+v", b.Fano, want)
	}
	if b.Fano.Success < b.Gamma {
		t.Errorf("Fano %v below the exact ReRo γ %v", b.Fano.Success, b.Gamma)
	}
	spec := GameSpec{Attack: "prior-aware", Q: 1, Steps: 4, PriorSize: 10}
	r := newGameReport(spec, 2, b, map[string]AttackStats{"prior-aware": {Rate: 0.5, Trials: 2, Successes: 1}})
	var sb strings.Builder
	r.WriteText(&sb)
	if !strings.Contains(sb.String(), "Fano bound (Guo et al. 2022b) on success") {
		t.Errorf("report text %q has no Fano line", sb.String())
	}
	sr := &SweepReport{Sweep: "sweep-k", Values: []float64{10}, Results: []*GameReport{r}}
	rows := sr.csvRows()
	h := SweepCSVHeader()
	fc := slices.Index(h, "fano_success")
	if fc < 0 || len(rows) != 1 || len(rows[0]) != len(h) || rows[0][fc] == "" {
		t.Errorf("CSV header %v, rows %v: want a filled fano_success column", h, rows)
	}
	// σ = 0: no Fano bound (nothing to bound).
	z, err := ComputeBounds(BoundsRequest{Q: 1, Sigma: 0, Steps: 4, PriorSize: 10, Delta: 1e-5})
	if err != nil || z.Fano != nil {
		t.Errorf("σ = 0: Fano %+v, %v", z.Fano, err)
	}
}
