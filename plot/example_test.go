package plot_test

import (
	"fmt"

	"github.com/dpfil/dpfil/plot"
)

func ExampleScatter() {
	predicted := []float64{0.01, 0.1, 1}
	realised := []float64{0.02, 0.05, 3}
	_, st, err := plot.Scatter(predicted, realised, plot.ScatterOptions{LogX: true, LogY: true, Diagonal: true})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%d points, %d below the bound\n", st.N, st.Violations)
	// Output: 3 points, 1 below the bound
}
