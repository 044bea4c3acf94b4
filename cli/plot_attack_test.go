package cli

import (
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpfil/dpfil/attack"
)

// TestPlotAttackCommand writes a sweep with the attack commands' own writer (JSON and
// CSV), plots both and checks the figure size and that --json reports exactly the
// points of the sweep.
func TestPlotAttackCommand(t *testing.T) {
	dir := t.TempDir()
	vals := []float64{1, 4, 10, 40}
	sr := &attack.SweepReport{Sweep: "eps", Values: vals, JSON: filepath.Join(dir, "sweep.json"), CSV: filepath.Join(dir, "sweep.csv")}
	for i, v := range vals {
		g := math.Min(1, 0.1+0.2*float64(i))
		r := &attack.GameReport{Attack: attack.AttackPrior, Gamma: g, GammaCI: [2]float64{g, g}, GammaRDP: math.Min(1, g+0.1),
			Kappa: 0.1, Epsilon: v, Sigma: 5 / v, Q: 1, Steps: 10, PriorSize: 10, Attacks: map[string]attack.AttackStats{}}
		for k, a := range []string{attack.AttackPrior, attack.AttackLogLik} {
			n := 50 + 10*k
			s := int(g*float64(n)) - i
			lo, hi, err := attack.ClopperPearson(s, n, 0.95)
			if err != nil {
				t.Fatal(err)
			}
			r.Attacks[a] = attack.AttackStats{Successes: s, Trials: n, Rate: float64(s) / float64(n), CI: [2]float64{lo, hi}}
		}
		sr.Results = append(sr.Results, r)
	}
	if err := sr.Write(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ in, out string }{{sr.JSON, "a.png"}, {sr.CSV, "b.png"}, {sr.CSV, "c.svg"}} {
		fig := filepath.Join(dir, tc.out)
		s, err := runCLI(t, newRootCmd(), "plot", "attack", tc.in, "-o", fig, "--width", "640", "--height", "400", "--json")
		if err != nil {
			t.Fatal(err)
		}
		var out plotAttackOut
		if err := json.Unmarshal([]byte(s), &out); err != nil {
			t.Fatalf("%s: %v\n%s", tc.in, err, s)
		}
		if strings.HasSuffix(tc.out, ".png") {
			if w, h := pngSize(t, fig); w != 640 || h != 400 {
				t.Fatalf("PNG %d×%d", w, h)
			}
		}
		if out.Sweep != "eps" || !out.LogX || out.XLabel != "ε" || len(out.Bounds) != len(vals) || len(out.Series) != 2 {
			t.Fatalf("%s: %+v", tc.in, out)
		}
		tol := 1e-7 // the CSV has 8 significant digits
		for i, r := range sr.Results {
			b := out.Bounds[i]
			if b.X != vals[i] || math.Abs(b.Gamma-r.Gamma) > tol || math.Abs(b.GammaRDP-r.GammaRDP) > tol || b.Kappa != r.Kappa {
				t.Fatalf("%s: bounds %d = %+v, want γ %v, γ_RDP %v", tc.in, i, b, r.Gamma, r.GammaRDP)
			}
			for _, se := range out.Series {
				want, p := r.Attacks[se.Attack], se.Points[i]
				if p.X != vals[i] || p.Successes != want.Successes || p.Trials != want.Trials || math.Abs(p.Rate-want.Rate) > tol ||
					math.Abs(p.Low-want.CI[0]) > tol || math.Abs(p.High-want.CI[1]) > tol {
					t.Fatalf("%s: %s point %d = %+v, want %+v", tc.in, se.Attack, i, p, want)
				}
			}
		}
	}
	// human output, forced linear axis
	s, err := runCLI(t, newRootCmd(), "plot", "attack", sr.JSON, "-o", filepath.Join(dir, "d.png"), "--linear-x")
	if err != nil || !strings.Contains(s, "2 attack variants at 4 values of ε") {
		t.Fatalf("human output %q, %v", s, err)
	}
	// two sweeps on one figure: labelled series, only the kept attack
	s, err = runCLI(t, newRootCmd(), "plot", "attack", sr.JSON, sr.CSV, "--labels", "first,second", "--attacks", "prior",
		"-o", filepath.Join(dir, "m.png"), "--json")
	if err != nil {
		t.Fatal(err)
	}
	var merged plotAttackOut
	if err := json.Unmarshal([]byte(s), &merged); err != nil {
		t.Fatal(err)
	}
	if len(merged.Series) != 2 || merged.Series[0].Attack != "first: prior" || merged.Series[1].Attack != "second: prior" || len(merged.Bounds) != len(vals) {
		t.Fatalf("merged: %+v", merged.Series)
	}
	// one panel per sweep: a second setting whose bounds differ (refused on one figure)
	sr2 := *sr
	sr2.JSON, sr2.CSV = filepath.Join(dir, "k2.json"), filepath.Join(dir, "k2.csv")
	sr2.Results = nil
	for _, r := range sr.Results {
		c := *r
		c.Gamma, c.GammaCI = r.Gamma/2, [2]float64{r.Gamma / 2, r.Gamma / 2}
		sr2.Results = append(sr2.Results, &c)
	}
	if err := sr2.Write(); err != nil {
		t.Fatal(err)
	}
	if _, err := runCLI(t, newRootCmd(), "plot", "attack", sr.JSON, sr2.JSON, "--labels", "a,b", "-o", filepath.Join(dir, "g.png")); err == nil ||
		!strings.Contains(err.Error(), "not the same privacy setting") {
		t.Fatalf("two settings on one figure: error %v", err)
	}
	s, err = runCLI(t, newRootCmd(), "plot", "attack", sr.JSON, sr2.JSON, sr.CSV, "--labels", "K = 10,K = 2,again", "--attacks", "loglik",
		"--grid", "2", "-o", filepath.Join(dir, "g.png"), "--width", "900", "--height", "600", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var grid plotAttackOut
	if err := json.Unmarshal([]byte(s), &grid); err != nil {
		t.Fatal(err)
	}
	if w, h := pngSize(t, filepath.Join(dir, "g.png")); w != 900 || h != 600 {
		t.Fatalf("grid PNG %d×%d", w, h)
	}
	if grid.AttackSweep != nil || len(grid.Panels) != 3 || strings.Join(grid.Labels, "|") != "K = 10|K = 2|again" {
		t.Fatalf("grid output: %s", s)
	}
	for i, p := range grid.Panels {
		want := sr.Results[1].Gamma
		if i == 1 {
			want /= 2
		}
		if len(p.Series) != 1 || p.Series[0].Attack != attack.AttackLogLik || math.Abs(p.Bounds[1].Gamma-want) > 1e-7 {
			t.Fatalf("panel %d: %+v, want loglik only and γ(x=4) = %v", i, p, want)
		}
	}
	s, err = runCLI(t, newRootCmd(), "plot", "attack", sr.JSON, sr2.JSON, "--labels", "x,y", "--grid", "1", "-o", filepath.Join(dir, "g1.png"))
	if err != nil || !strings.Contains(s, "2 panels") || !strings.Contains(s, "panel y:") {
		t.Fatalf("grid human output %q, %v", s, err)
	}
	if _, err := runCLI(t, newRootCmd(), "plot", "attack", sr.JSON, sr2.JSON, "--labels", "ε = 1, K = 2,ε = 1, K = 10", "--grid", "2",
		"-o", filepath.Join(dir, "e.png")); err == nil || !strings.Contains(err.Error(), "got 4; labels are split at commas") {
		t.Fatalf("labels with commas: error %v", err)
	}
	for _, bad := range [][]string{
		{"plot", "attack", sr.JSON, sr2.JSON, "--grid", "2", "-o", filepath.Join(dir, "e.png")},
		{"plot", "attack", sr.JSON},
		{"plot", "attack", sr.JSON, sr.CSV, "-o", filepath.Join(dir, "e.png")},
		{"plot", "attack", sr.JSON, sr.CSV, "--labels", "one", "-o", filepath.Join(dir, "e.png")},
		{"plot", "attack", filepath.Join(dir, "a.png"), "-o", filepath.Join(dir, "e.png")},
		{"plot", "attack", filepath.Join(dir, "missing.json"), "-o", filepath.Join(dir, "e.png")},
		{"plot", "attack", sr.JSON, "-o", filepath.Join(dir, "e.png"), "--log-x", "--linear-x"},
	} {
		if _, err := runCLI(t, newRootCmd(), bad...); err == nil {
			t.Fatalf("%v: want error", bad)
		}
	}
}
