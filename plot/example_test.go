package plot_test

import (
	"encoding/json"
	"fmt"

	"github.com/dpfil/dpfil/plot"
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
	series, err := plot.ParetoData(recs)
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
	idx, err := plot.ParseIndices("0,5,10-13")
	if err != nil {
		panic(err)
	}
	fmt.Println(idx)
	// Output: [0 5 10 11 12 13]
}
