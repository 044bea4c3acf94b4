package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dpfil/dpfil/data"
	"github.com/dpfil/dpfil/models"
	"github.com/dpfil/dpfil/train"
)

// archFlagHelp is the help of train's --arch flag.
const archFlagHelp = "train the architecture of this YAML/JSON file instead of --model (see 'dpfil arch layers'; input shape and classes default to the dataset's)"

// initDoc describes the parameter initialisation of the built-in layer kinds.
const initDoc = "init: stax defaults — weights Glorot normal (truncated to ±2, rescaled to the Glorot variance), biases normal with std 1e-6 (conv) and 1e-2 (dense)"

// prepareCustom applies train's --arch file to cfg and, for a user dataset
// (npz:, npy:, imagefolder:, idx:), pins its fingerprint (config.data_sha256), so
// that the config hash, and a resumed run, know which data it is.
func prepareCustom(cfg train.Config, archFile string, logf func(string, ...any)) (train.Config, error) {
	if archFile != "" {
		spec, err := models.LoadArchSpec(archFile)
		if err != nil {
			return cfg, err
		}
		cfg = cfg.WithArch(spec)
	}
	if data.IsUserDataset(cfg.Dataset) && cfg.DataSHA256 == "" {
		split, err := data.Load(cfg.Dataset, data.Options{DataDir: cfg.DataDir, NoDownload: true, Logf: logf})
		if err != nil {
			return cfg, fmt.Errorf("load dataset %s: %w", cfg.Dataset, err)
		}
		cfg.DataSHA256 = split.Fingerprint()
	}
	return cfg, nil
}

// resolveModelArch returns the architecture --model or --arch names; an --arch
// spec without input shape or classes is resolved with the dataset's.
func resolveModelArch(cfg train.Config, archFile string, logf func(string, ...any)) (models.Arch, error) {
	if archFile == "" {
		return models.ArchByName(cfg.Model)
	}
	spec, err := models.LoadArchSpec(archFile)
	if err != nil {
		return models.Arch{}, err
	}
	if len(spec.Input) == 3 && spec.Classes > 0 {
		return spec.Resolve(models.Shape{}, 0)
	}
	split, err := data.Load(cfg.Dataset, data.Options{DataDir: cfg.DataDir, Logf: logf})
	if err != nil {
		return models.Arch{}, fmt.Errorf("%s takes its input shape or classes from the data: load dataset %s: %w", archFile, cfg.Dataset, err)
	}
	tr := split.Train
	return spec.Resolve(models.Shape{C: tr.C, H: tr.H, W: tr.W}, tr.Classes)
}

// describeModel is train --describe: the architecture as text or JSON.
func describeModel(cmd *cobra.Command, cfg train.Config, archFile string, asJSON bool, logf func(string, ...any)) error {
	arch, err := resolveModelArch(cfg, archFile, logf)
	if err != nil {
		return err
	}
	info, err := arch.Info()
	if err != nil {
		return err
	}
	var werr error
	err = emit(cmd.OutOrStdout(), asJSON, info, func(w io.Writer) { werr = describeArch(w, arch) })
	if err != nil {
		return err
	}
	return werr
}

// layerKindInfo is one registered layer kind (dpfil arch layers).
type layerKindInfo struct {
	Kind   models.LayerKind `json:"kind"`
	Doc    string           `json:"doc"`
	Fields []string         `json:"fields"`
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
			var out []layerKindInfo
			for _, k := range models.LayerKinds() {
				l, err := models.LayerOf(k)
				if err != nil {
					return err
				}
				fields := l.Fields()
				if fields == nil {
					fields = []string{}
				}
				out = append(out, layerKindInfo{Kind: k, Doc: l.Doc(), Fields: fields})
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

// trainLogf logs to stderr unless quiet.
func trainLogf(cmd *cobra.Command, quiet bool) func(string, ...any) {
	return func(format string, args ...any) {
		if !quiet {
			fmt.Fprintf(cmd.ErrOrStderr(), format+"\n", args...)
		}
	}
}
