package cli

import (
	"fmt"
	"os"

	"github.com/dpfil/dpfil/train"
	"github.com/spf13/cobra"
)

// Options are what a program built on package cli adds to the dpfil command line.
type Options struct {
	// Models are the program's own models by name (e.g. gorgonet.FromGraph models
	// written in Gorgonia): `train --model NAME`, a sweep grid's `model: NAME`,
	// and `eval` and `predict` of their runs resolve them as they resolve built-in
	// architectures and architecture files (train.Registry).
	Models train.Registry
}

// Main runs the dpfil command line with opts on os.Args and exits with its status:
// a program's whole main function (cmd/dpfil calls it with no options).
func Main(opts Options) {
	root, err := NewRoot(opts)
	if err == nil {
		err = root.Execute()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: error: %v\n", root.Name(), err)
		os.Exit(exitStatus(err))
	}
}

// NewRoot returns the dpfil command tree with opts (cobra: SetArgs, Execute). Its
// registered model names are checked (train.Registry.Check).
func NewRoot(opts Options) (*cobra.Command, error) {
	if err := opts.Models.Check(); err != nil {
		return &cobra.Command{Use: "dpfil"}, err
	}
	return newRoot(opts), nil
}

// newRootCmd is the command tree of dpfil itself (no registered models).
func newRootCmd() *cobra.Command { return newRoot(Options{}) }
