package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dpfil/dpfil/models"
	"github.com/dpfil/dpfil/train"
)

// describeModel is train --describe: the architecture as text or JSON.
func describeModel(cmd *cobra.Command, cfg train.Config, archFile string, asJSON bool, logf func(string, ...any)) error {
	arch, err := train.ResolveArch(cfg, archFile, logf)
	if err != nil {
		return err
	}
	info, err := arch.Info()
	if err != nil {
		return err
	}
	var werr error
	err = emit(cmd.OutOrStdout(), asJSON, info, func(w io.Writer) {
		if werr = arch.Describe(w); werr == nil {
			fmt.Fprintln(w, models.InitDoc)
		}
	})
	if err != nil {
		return err
	}
	return werr
}

func newArchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "arch",
		Short: "Architectures: the layer kinds and how a file describes a network",
		Long: `An architecture file (YAML, or JSON) lists layers for train --arch FILE:

  name: conv3-relu
  input: [1, 28, 28]      # optional: C, H, W (default: the dataset's)
  classes: 10             # optional (default: the dataset's)
  layers:
    - {kind: conv, out: 16, kernel: 3, stride: 1, padding: same}
    - relu
    - {kind: avgpool, kernel: 2, stride: 2}
    - flatten
    - {kind: dense}       # the last dense layer's out defaults to the classes

A layer is a kind name or a mapping with kind and the fields that kind uses
('dpfil arch layers'); kernel sets kh and kw, padding is same, valid or a number
(or give pad_t, pad_b, pad_l, pad_r). Stride defaults to 1. Unknown keys, fields a
kind does not use, and layers that do not fit their input are refused.
'dpfil train --arch FILE --describe' prints the resolved network.`,
	}
	var asJSON bool
	layers := &cobra.Command{
		Use:   "layers",
		Short: "List the layer kinds with their fields",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out, err := models.LayerKindInfos()
			if err != nil {
				return err
			}
			return emit(cmd.OutOrStdout(), asJSON, map[string]any{"layers": out}, func(w io.Writer) {
				for _, l := range out {
					f := "no fields"
					if len(l.Fields) > 0 {
						f = "fields: " + strings.Join(l.Fields, ", ")
					}
					fmt.Fprintf(w, "%-10s %s (%s)\n", l.Kind, l.Doc, f)
				}
			})
		},
	}
	addJSONFlag(layers, &asJSON)
	cmd.AddCommand(layers)
	return cmd
}
