package figures

import (
	"bytes"
	"fmt"
	"image/png"
	"strings"
	"testing"

	"github.com/dpfil/dpfil/plot"
)

// attackSweepJSON and attackSweepCSV are the same sweep in the two formats 'dpfil
// attack sweep-*' writes (CSV rows per value and attack, 8 significant digits).
const attackSweepJSON = `{"sweep":"q","values":[0.5,1],"results":[
 {"gamma":0.4,"gamma_ci":[0.39,0.41],"gamma_rdp":0.6,"kappa":0.1,"attacks":{
   "prior":{"successes":30,"trials":100,"success_rate":0.3,"success_ci":[0.21,0.40]},
   "prior-topk":{"successes":35,"trials":100,"success_rate":0.35,"success_ci":[0.26,0.45]}}},
 {"gamma":0.7,"gamma_ci":[0.7,0.7],"gamma_rdp":0.9,"kappa":0.1,"attacks":{
   "prior":{"successes":60,"trials":100,"success_rate":0.6,"success_ci":[0.5,0.7]},
   "prior-topk":{"successes":60,"trials":100,"success_rate":0.6,"success_ci":[0.5,0.7]}}}]}`

const attackSweepCSV = `sweep,value,attack,success_rate,ci_low,ci_high,successes,trials,gamma,gamma_low,gamma_high,gamma_rdp,kappa,epsilon,sigma,q,steps,prior_size,success_orthogonal
q,1,prior,0.6,0.5,0.7,60,100,0.7,0.7,0.7,0.9,0.1,4,1,1,10,10,
q,1,prior-topk,0.6,0.5,0.7,60,100,0.7,0.7,0.7,0.9,0.1,4,1,1,10,10,
q,0.5,prior,0.3,0.21,0.40,30,100,0.4,0.39,0.41,0.6,0.1,4,1,0.5,10,10,
q,0.5,prior-topk,0.35,0.26,0.45,35,100,0.4,0.39,0.41,0.6,0.1,4,1,0.5,10,10,
`

func TestReadAttackSweepFormatsAgree(t *testing.T) {
	want := AttackSweep{Sweep: "q",
		Series: []AttackSeries{
			{"prior", []AttackPoint{{0.5, 0.3, 0.21, 0.40, 30, 100}, {1, 0.6, 0.5, 0.7, 60, 100}}},
			{"prior-topk", []AttackPoint{{0.5, 0.35, 0.26, 0.45, 35, 100}, {1, 0.6, 0.5, 0.7, 60, 100}}},
		},
		Bounds: []BoundPoint{{0.5, 0.4, 0.39, 0.41, 0.6, 0.1}, {1, 0.7, 0.7, 0.7, 0.9, 0.1}},
	}
	for _, tc := range []struct{ format, data string }{{"json", attackSweepJSON}, {"csv", attackSweepCSV}} {
		s, err := ReadAttackSweep(strings.NewReader(tc.data), tc.format)
		if err != nil {
			t.Fatalf("%s: %v", tc.format, err)
		}
		if got, w := fmt.Sprint(*s), fmt.Sprint(want); got != w {
			t.Fatalf("%s: read %s\nwant %s", tc.format, got, w)
		}
		if s.XLabel() != "sampling rate q" {
			t.Fatalf("x label %q", s.XLabel())
		}
	}
}

func TestReadAttackSweepRejects(t *testing.T) {
	csvHead := strings.SplitN(attackSweepCSV, "\n", 2)[0] + "\n"
	for _, tc := range []struct{ name, format, data, err string }{
		{"unknown format", "xml", attackSweepJSON, "unknown format"},
		{"bad json", "json", `{"sweep":`, "decode"},
		{"values vs results", "json", `{"sweep":"eps","values":[1,2],"results":[]}`, "2 values but 0 results"},
		{"no gamma", "json", `{"sweep":"eps","values":[1],"results":[{"attacks":{}}]}`, "no gamma"},
		{"unknown sweep", "json", strings.Replace(attackSweepJSON, `"q"`, `"lr"`, 1), "sweep variable"},
		{"rate outside CI", "json", strings.Replace(attackSweepJSON, `"success_rate":0.3,`, `"success_rate":0.9,`, 1), "inconsistent"},
		{"more successes than trials", "json", strings.Replace(attackSweepJSON, `"successes":30,`, `"successes":300,`, 1), "inconsistent"},
		{"gamma > 1", "json", strings.Replace(attackSweepJSON, `"gamma":0.7,"gamma_ci":[0.7,0.7]`, `"gamma":1.7,"gamma_ci":[1.7,1.7]`, 1), "outside"},
		{"empty", "json", `{"sweep":"eps","values":[],"results":[]}`, "no results"},
		{"csv missing column", "csv", "sweep,value\neps,1\n", "missing"},
		{"csv not a number", "csv", csvHead + "q,1,prior,x,0.5,0.7,60,100,0.7,0.7,0.7,0.9,0.1,4,1,1,10,10,\n", "success_rate"},
		{"csv NaN value", "csv", csvHead + "q,NaN,prior,0.6,0.5,0.7,60,100,0.7,0.7,0.7,0.9,0.1,4,1,1,10,10,\n", "not finite"},
		{"csv two sweeps", "csv", attackSweepCSV + "eps,1,prior,0.6,0.5,0.7,60,100,0.7,0.7,0.7,0.9,0.1,4,1,1,10,10,\n", "sweep"},
		{"csv bounds differ", "csv", attackSweepCSV + "q,1,loglik,0.6,0.5,0.7,60,100,0.8,0.8,0.8,0.9,0.1,4,1,1,10,10,\n", "differ"},
		{"csv duplicate", "csv", attackSweepCSV + "q,1,prior,0.6,0.5,0.7,60,100,0.7,0.7,0.7,0.9,0.1,4,1,1,10,10,\n", "twice"},
		{"csv fractional trials", "csv", csvHead + "q,1,prior,0.6,0.5,0.7,60,100.5,0.7,0.7,0.7,0.9,0.1,4,1,1,10,10,\n", "integers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadAttackSweep(strings.NewReader(tc.data), tc.format)
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("error %v, want one mentioning %q", err, tc.err)
			}
		})
	}
}

func TestAttackFigure(t *testing.T) {
	s, err := ReadAttackSweep(strings.NewReader(attackSweepJSON), "json")
	if err != nil {
		t.Fatal(err)
	}
	on := true
	for _, opt := range []AttackOptions{{Title: "q sweep"}, {LogX: &on}} {
		p, err := Attack(s, opt)
		if err != nil {
			t.Fatal(err)
		}
		b, err := plot.Render(p, "png", 500, 350)
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if sz := img.Bounds().Size(); sz.X != 500 || sz.Y != 350 {
			t.Fatalf("PNG %v", sz)
		}
		// the series colours are drawn
		blue := false
		for y := 0; y < 350 && !blue; y++ {
			for x := 0; x < 500; x++ {
				r, g, b, _ := img.At(x, y).RGBA()
				if r>>8 == 31 && g>>8 == 119 && b>>8 == 180 {
					blue = true
					break
				}
			}
		}
		if !blue {
			t.Fatal("the first attack series is not drawn")
		}
		// y axis: success in [0, 1] plus head room; x covers the values
		if p.Y.Min != 0 || p.Y.Max < 1 || p.X.Min >= 0.5 || p.X.Max <= 1 {
			t.Fatalf("axes x [%v, %v], y [%v, %v]", p.X.Min, p.X.Max, p.Y.Min, p.Y.Max)
		}
	}
	// a log axis needs positive x
	neg := *s
	neg.Bounds = append([]BoundPoint{{X: -1}}, s.Bounds...)
	if _, err := Attack(&neg, AttackOptions{LogX: &on}); err == nil {
		t.Fatal("log x with x ≤ 0: want error")
	}
	if _, err := Attack(&AttackSweep{}, AttackOptions{}); err == nil {
		t.Fatal("empty sweep: want error")
	}
}

func TestMergeAttackSweeps(t *testing.T) {
	read := func() *AttackSweep {
		s, err := ReadAttackSweep(strings.NewReader(attackSweepJSON), "json")
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a, b := read(), read()
	b.Series[0].Points[0].Rate, b.Series[0].Points[0].Low = 0.25, 0.2 // a different setting's success
	m, err := MergeAttackSweeps([]*AttackSweep{a, b}, []string{"MNIST prior", "uniform prior"}, []string{"prior"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range m.Series {
		names = append(names, s.Attack)
	}
	if fmt.Sprint(names) != "[MNIST prior: prior uniform prior: prior]" {
		t.Fatalf("series %v", names)
	}
	if m.Series[1].Points[0].Rate != 0.25 || m.Series[0].Points[0].Rate != 0.3 || len(m.Bounds) != 2 {
		t.Fatalf("merged %+v", m)
	}
	if _, err := Attack(m, AttackOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		edit   func(b *AttackSweep)
		labels []string
		keep   []string
		err    string
	}{
		{"bounds differ", func(b *AttackSweep) { b.Bounds[1].Gamma = 0.71 }, []string{"x", "y"}, nil, "not the same privacy setting"},
		{"other variable", func(b *AttackSweep) { b.Sweep = "k" }, []string{"x", "y"}, nil, "varies k"},
		{"label count", func(*AttackSweep) {}, []string{"x"}, nil, "1 labels for 2 sweeps"},
		{"no such attack", func(*AttackSweep) {}, []string{"x", "y"}, []string{"loglik"}, "none of the attacks"},
	} {
		b := read()
		tc.edit(b)
		if _, err := MergeAttackSweeps([]*AttackSweep{read(), b}, tc.labels, tc.keep); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.err)
		}
	}
}

// TestAttackPanels lays three sweeps out two per row: the third row padded with a
// blank tile, each panel titled by its label and drawing only the kept attack.
func TestAttackPanels(t *testing.T) {
	read := func() *AttackSweep {
		s, err := ReadAttackSweep(strings.NewReader(attackSweepJSON), "json")
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a, b, c := read(), read(), read()
	b.Bounds[1].Gamma, b.Bounds[1].GammaLow, b.Bounds[1].GammaHi = 0.5, 0.5, 0.5 // a different setting: refused by MergeAttackSweeps, fine in panels
	rows, drawn, err := AttackPanels([]*AttackSweep{a, b, c}, []string{"A", "B", "C"}, []string{"prior"}, 2, AttackOptions{Title: "ε = 4"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || len(rows[0]) != 2 || len(rows[1]) != 2 || rows[1][1] != nil || rows[1][0] == nil {
		t.Fatalf("layout %v", rows)
	}
	if rows[0][1].Title.Text != "ε = 4: B" || rows[1][0].Title.Text != "ε = 4: C" {
		t.Fatalf("titles %q, %q", rows[0][1].Title.Text, rows[1][0].Title.Text)
	}
	if len(drawn) != 3 || len(drawn[1].Series) != 1 || drawn[1].Series[0].Attack != "prior" || drawn[1].Bounds[1].Gamma != 0.5 {
		t.Fatalf("drawn %+v", drawn)
	}
	if _, err := plot.RenderTiles(rows, "png", 600, 400); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		labels []string
		keep   []string
		cols   int
		err    string
	}{
		{"cols 0", []string{"A", "B", "C"}, nil, 0, "columns"},
		{"labels", []string{"A"}, nil, 2, "1 labels for 3 sweeps"},
		{"attack", []string{"A", "B", "C"}, []string{"gradient"}, 2, "none of the attacks"},
	} {
		if _, _, err := AttackPanels([]*AttackSweep{a, b, c}, tc.labels, tc.keep, tc.cols, AttackOptions{}); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.err)
		}
	}
}
