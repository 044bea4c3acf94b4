// Command dpfil trains private convnets with DP-SGD, accounts their privacy with
// Fisher information leakage (FIL) and Rényi DP, turns both into lower bounds on the
// mean squared error of reconstruction attacks, and runs those attacks. The command
// line lives in package cli, which a program of your own imports to add its models
// (README: "Your own Gorgonia model").
package main

import "github.com/dpfil/dpfil/cli"

func main() { cli.Main(cli.Options{}) }
