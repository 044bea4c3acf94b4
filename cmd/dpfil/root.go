package main

import (
	"github.com/spf13/cobra"
)

// newRootCmd builds the whole command tree. Each command group lives in its own file
// and contributes one constructor here.
func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "dpfil",
		Short: "DP-SGD training with Fisher-information and Rényi-DP reconstruction accounting",
		Long: `dpfil trains the tanh/average-pool convnets of Guo, Karrer, Chaudhuri and van der
Maaten (2022), "Bounding training data reconstruction in private (deep) learning",
with DP-SGD, accounts privacy per training sample with Fisher information leakage
(FIL) and globally with Rényi DP, turns both into lower bounds on the MSE of any
reconstruction attack, bounds attack success with ReRo (Hayes, Mahloujifar and Balle
(2023), "Bounding training data reconstruction in DP-SGD"), and runs the
reconstruction attacks those bounds are about.

Every command that computes something prints a human summary, or one JSON object on
stdout with --json. Every random draw flows from --seed.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(
		newDataCmd(),
		newTrainCmd(),
		newEvalCmd(),
		newPredictCmd(),
		newArchCmd(),
		newAccountCmd(),
		newGLMCmd(),
		newAttackCmd(),
		newSweepCmd(),
		newPlotCmd(),
		newBenchCmd(),
		newDemoCmd(),
		newVersionCmd(),
	)
	return root
}

// group completes c, a command group, with its subcommands.
func group(c *cobra.Command, subs ...*cobra.Command) *cobra.Command {
	c.AddCommand(subs...)
	return c
}
