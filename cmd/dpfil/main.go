// Command dpfil trains private convnets with DP-SGD, accounts their privacy with
// Fisher information leakage (FIL) and Rényi DP, turns both into lower bounds on the
// mean squared error of reconstruction attacks, and runs those attacks.
package main

import (
	"fmt"
	"os"
)

func main() {
	root := newRootCmd()
	if err := root.Execute(); err != nil {
		fmt.Fprintf(os.Stderr, "dpfil: error: %v\n", err)
		os.Exit(1)
	}
}
