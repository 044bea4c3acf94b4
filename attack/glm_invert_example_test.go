package attack_test

import (
	"fmt"

	"github.com/dpfil/dpfil/attack"
)

// The 2×2 pixel block at row 13, column 13 of a 28×28 image (row-major indices).
func ExampleBlockColumns() {
	cols, err := attack.BlockColumns([]int{13, 13, 2, 2}, 28, 28)
	if err != nil {
		panic(err)
	}
	fmt.Println(cols)
	// Output: [377 378 405 406]
}
