// Package cli (the dpfil CLI) trains convnets with DP-SGD, accounts their privacy with
// Fisher information leakage (FIL) and Rényi DP, turns both into lower bounds on the
// mean squared error of reconstruction attacks, and runs those attacks.
package cli

import (
	"errors"

	"github.com/dpfil/dpfil/train"
	"github.com/spf13/cobra"
)

// exitCoder is an error that asks for a particular exit status (exitError).
type exitCoder interface{ ExitCode() int }

// exitStatus is the process exit status for err: its own code if it has one, else 1.
func exitStatus(err error) int {
	var ec exitCoder
	if errors.As(err, &ec) {
		return ec.ExitCode()
	}
	return 1
}

// exitError gives err the exit status code.
type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string { return e.err.Error() }
func (e exitError) Unwrap() error { return e.err }
func (e exitError) ExitCode() int { return e.code }

// newRoot builds the whole command tree with the program's options. Each command
// group lives in its own file and contributes one constructor here.
func newRoot(opts Options) *cobra.Command {
	root := group(&cobra.Command{
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
	},
		newDataCmd(),
		newTrainCmd(opts),
		newEvalCmd(opts),
		newPredictCmd(opts),
		newArchCmd(),
		newAccountCmd(),
		newGLMCmd(),
		newAttackCmd(),
		newSweepCmd(opts),
		newPlotCmd(),
		newBenchCmd(),
		newDemoCmd(),
		newVersionCmd(),
	)
	root.SuggestionsMinimumDistance = 2
	setVersionFlag(root)
	setProfileFlag(root)
	checkUnknownSubcommands(root)
	root.SetFlagErrorFunc(flagErrorWithSuggestion)
	return root
}

// group completes c, a command group, with its subcommands.
func group(c *cobra.Command, subs ...*cobra.Command) *cobra.Command {
	c.AddCommand(subs...)
	return c
}

func newVersionCmd() *cobra.Command {
	return reportCmd(&cobra.Command{
		Use:   "version",
		Short: "Print the dpfil version, commit and Go version",
		Args:  cobra.NoArgs,
	}, func(*cobra.Command, []string) (*train.Binary, error) {
		bi := train.DescribeBinary()
		return &bi, nil
	})
}
