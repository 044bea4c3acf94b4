package glm_test

import (
	"fmt"

	"github.com/dpfil/dpfil/glm"
)

// Four 2-pixel examples. The printed values were reproduced independently by a
// pure-Python Newton solver with central finite differences of the re-solved minimiser.
func ExampleAnalysis_PerExample() {
	data, err := glm.NewData([]float32{0.1, 0.9, 0.8, 0.2, 0.3, 0.7, 0.9, 0.4}, []int{0, 1, 0, 1}, 4, 2)
	if err != nil {
		panic(err)
	}
	m, err := glm.Fit(data, glm.Config{Loss: glm.Logistic, Lambda: 0.1, Bias: true})
	if err != nil {
		panic(err)
	}
	an, err := glm.NewAnalysis(m)
	if err != nil {
		panic(err)
	}
	res, err := an.PerExample(0.1, glm.FILOptions{})
	if err != nil {
		panic(err)
	}
	fmt.Printf("converged: %v\n", m.GradNorm < 1e-12)
	for i := range res.DFIL {
		fmt.Printf("example %d: dFIL %.4f  eta %.4f  MSE bound %.3f\n", i, res.DFIL[i], res.Eta[i], 1/res.DFIL[i])
	}
	// Output:
	// converged: true
	// example 0: dFIL 25.8290  eta 6.3661  MSE bound 0.039
	// example 1: dFIL 32.7064  eta 6.8835  MSE bound 0.031
	// example 2: dFIL 52.4021  eta 8.2157  MSE bound 0.019
	// example 3: dFIL 37.8695  eta 7.3891  MSE bound 0.026
}

func ExampleFit() {
	// Least squares with targets ±1 (labels 0/1) and no bias: w* solves (XᵀX + nλI)w = Xᵀt.
	data, _ := glm.NewData([]float32{1, 0, 0, 1}, []int{1, 0}, 2, 2)
	m, err := glm.Fit(data, glm.Config{Loss: glm.LeastSquares, Lambda: 0.5})
	if err != nil {
		panic(err)
	}
	fmt.Printf("w* = [%.4f %.4f], iterations %d\n", m.W[0], m.W[1], m.Iters)
	// Output: w* = [0.5000 -0.5000], iterations 1
}

// The columns of an attribute given as indices and inclusive ranges.
func ExampleParseColumns() {
	cols, err := glm.ParseColumns("350-353,406", 784)
	if err != nil {
		panic(err)
	}
	fmt.Println(cols)
	// Output: [350 351 352 353 406]
}

// The median interpolates between the two middle values (numpy's default).
func ExampleSpreadOf() {
	s := glm.SpreadOf([]float64{3, 1, 2, 10})
	fmt.Printf("max %v, median %v, mean %v\n", s.Max, s.Median, s.Mean)
	// Output: max 10, median 2.5, mean 4
}
