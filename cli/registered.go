package cli

import (
	"fmt"
	"io"

	"github.com/dpfil/dpfil/models"
	"github.com/dpfil/dpfil/train"
	"github.com/spf13/cobra"
)

// registeredInfo is what `train --model NAME --describe` prints of a registered
// model: its architecture name (a Gorgonia graph's holds its fingerprint), shapes
// and parameter tensors.
type registeredInfo struct {
	Model   string              `json:"model"`
	Arch    string              `json:"arch"`
	Input   models.Shape        `json:"input"`
	Classes int                 `json:"classes"`
	Params  int                 `json:"params"`
	Tensors []models.ParamShape `json:"tensors,omitempty"`
}

// describeRegistered prints the registered model name of reg.
func describeRegistered(cmd *cobra.Command, reg train.Registry, name string, asJSON bool) error {
	m, err := reg.New(name)
	if err != nil {
		return err
	}
	a := m.Arch()
	info := registeredInfo{Model: name, Arch: a.Name, Input: a.Input, Classes: a.Classes, Params: m.NumParams()}
	if pt, ok := m.(interface{ ParamTensors() []models.ParamShape }); ok {
		info.Tensors = pt.ParamTensors()
	}
	return emit(cmd.OutOrStdout(), asJSON, info, func(w io.Writer) {
		fmt.Fprintf(w, "%s (registered by this program): %s, input %dx%dx%d, %d classes, %d parameters\n",
			name, a.Name, a.Input.C, a.Input.H, a.Input.W, a.Classes, info.Params)
		for _, t := range info.Tensors {
			fmt.Fprintf(w, "  %-16s %v\n", t.Name, t.Dims)
		}
	})
}
