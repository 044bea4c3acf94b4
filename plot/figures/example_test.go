package figures_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dpfil/dpfil/plot"
	"github.com/dpfil/dpfil/plot/figures"
	"github.com/dpfil/dpfil/sweep"
)

func ExampleParetoData() {
	var recs []sweep.Record
	for i, r := range []string{
		`{"test_accuracy":0.90,"mse_bound_rdp":0.01,"mse_bound_fil_max":0.5,"mse_bound_fil_median":null}`,
		`{"test_accuracy":0.95,"mse_bound_rdp":0.001,"mse_bound_fil_max":0.8,"mse_bound_fil_median":9}`,
		`{"test_accuracy":0.93,"mse_bound_rdp":0.0005,"mse_bound_fil_max":0.1,"mse_bound_fil_median":3}`,
	} {
		recs = append(recs, sweep.Record{Hash: fmt.Sprint(i), Config: json.RawMessage(`{}`), Result: json.RawMessage(r)})
	}
	series, err := figures.ParetoData(recs)
	if err != nil {
		panic(err)
	}
	for _, s := range series {
		fmt.Printf("%s: %d points, %d dropped, frontier", s.Key, len(s.Points), s.Dropped)
		for _, p := range s.Frontier {
			fmt.Printf(" #%d", p.Index)
		}
		fmt.Println()
	}
	// Output:
	// mse_bound_rdp: 3 points, 0 dropped, frontier #0 #1
	// mse_bound_fil_max: 3 points, 0 dropped, frontier #1
	// mse_bound_fil_median: 2 points, 1 dropped, frontier #1
}

// Sample indices for 'dpfil plot images --indices': single indices and inclusive
// ranges.
func ExampleParseIndices() {
	idx, err := figures.ParseIndices("0,5,10-13")
	if err != nil {
		panic(err)
	}
	fmt.Println(idx)
	// Output: [0 5 10 11 12 13]
}

// Reading an attack sweep and drawing success and bounds on one figure.
func ExampleAttack() {
	// Two attacks at two sampling rates, as 'dpfil attack sweep-q' writes them.
	const csv = `sweep,value,attack,success_rate,ci_low,ci_high,successes,trials,gamma,gamma_low,gamma_high,gamma_rdp,kappa,epsilon,sigma,q,steps,prior_size,success_orthogonal
q,1,prior,0.6,0.5,0.7,60,100,0.7,0.7,0.7,0.9,0.1,4,1,1,10,10,
q,1,prior-topk,0.6,0.5,0.7,60,100,0.7,0.7,0.7,0.9,0.1,4,1,1,10,10,
q,0.5,prior,0.3,0.21,0.40,30,100,0.4,0.39,0.41,0.6,0.1,4,1,0.5,10,10,
q,0.5,prior-topk,0.35,0.26,0.45,35,100,0.4,0.39,0.41,0.6,0.1,4,1,0.5,10,10,
`
	s, err := figures.ReadAttackSweep(strings.NewReader(csv), "csv")
	if err != nil {
		panic(err)
	}
	p, err := figures.Attack(s, figures.AttackOptions{Title: "success vs q"})
	if err != nil {
		panic(err)
	}
	b, err := plot.Render(p, "svg", 400, 300)
	fmt.Println(s.XLabel(), len(s.Series), len(s.Bounds), err, bytes.HasPrefix(b, []byte("<?xml")))
	// Output: sampling rate q 2 2 <nil> true
}
