package data

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Origin says where one file of a dataset came from (recorded by 'dpfil data fetch'
// and by downloads during Load in the directory's provenance file).
type Origin struct {
	Via             string    `json:"via"`                         // OriginMirror or OriginGoProxy
	URL             string    `json:"url"`                         // file URL, or the module zip's URL
	Module          string    `json:"module,omitempty"`            // path@version of the Go module
	ModuleSum       string    `json:"module_sum,omitempty"`        // its verified go.sum h1 hash
	ModuleZipSHA256 string    `json:"module_zip_sha256,omitempty"` // SHA-256 of the zip as served
	Entry           string    `json:"entry,omitempty"`             // the file's path inside the module
	SHA256          string    `json:"sha256"`                      // of the installed file
	Fetched         time.Time `json:"fetched"`                     // UTC
	Licence         string    `json:"licence,omitempty"`
}

// Origin kinds.
const (
	OriginMirror  = "mirror"          // a canonical (or $DPFIL_MIRROR) download URL
	OriginGoProxy = "go-module-proxy" // a Go module zip from a GOPROXY
)

// ProvenanceFile is the name of the per-directory record of where its files came from.
const ProvenanceFile = "dpfil-provenance.json"

// provenance is the content of ProvenanceFile.
type provenance struct {
	Dataset string            `json:"dataset"`
	Files   map[string]Origin `json:"files"` // by file name
}

// readProvenance reads dir's provenance file (empty when absent or unreadable: it is
// informative only, the digests are what is trusted).
func readProvenance(dir string) provenance {
	var p provenance
	b, err := os.ReadFile(filepath.Join(dir, ProvenanceFile))
	if err == nil {
		_ = json.Unmarshal(b, &p)
	}
	if p.Files == nil {
		p.Files = map[string]Origin{}
	}
	return p
}

// recordProvenance merges origins into dir's provenance file (written atomically).
func recordProvenance(dir, dataset string, origins map[string]Origin) error {
	if len(origins) == 0 {
		return nil
	}
	p := readProvenance(dir)
	p.Dataset = dataset
	for k, v := range origins {
		p.Files[k] = v
	}
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return fmt.Errorf("provenance: %w", err)
	}
	tmp, err := os.CreateTemp(dir, "."+ProvenanceFile+".part-*")
	if err != nil {
		return fmt.Errorf("provenance: %w", err)
	}
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("provenance: %w", err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("provenance: %w", err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("provenance: %w", err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, ProvenanceFile)); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("provenance: %w", err)
	}
	return nil
}

// hasDigest reports whether anything is known to verify f against.
func (f fileSpec) hasDigest() bool { return f.SHA256 != "" || f.MD5 != "" || f.ContentSHA256 != "" }

// CorruptFileError says that a file on disk does not match its dataset's known
// digests.
type CorruptFileError struct {
	Path   string
	SHA256 string // of the file
	Want   string // the canonical file's SHA-256
	// WantContent is the known SHA-256 of the uncompressed content ("" if unknown).
	WantContent string
	Content     string // of the file's decoded content ("" if not decodable or not checked)
	Reason      string // e.g. a decoding error
}

func (e *CorruptFileError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s is corrupt: SHA-256 %s, want %s", e.Path, e.SHA256, e.Want)
	if e.WantContent != "" {
		if e.Content != "" {
			fmt.Fprintf(&b, " (or uncompressed content SHA-256 %s, got %s)", e.WantContent, e.Content)
		} else {
			fmt.Fprintf(&b, " (or uncompressed content SHA-256 %s)", e.WantContent)
		}
	}
	if e.Reason != "" {
		fmt.Fprintf(&b, "; %s", e.Reason)
	}
	return b.String()
}

// verifyLocal checks a file on disk against f's known digests: the canonical file's
// SHA-256 ("sha256"), else the SHA-256 of its uncompressed IDX content
// ("content-sha256", e.g. an uncompressed or recompressed copy). A file with no known
// digest passes unverified (""). A mismatch is a *CorruptFileError.
func verifyLocal(path string, f fileSpec) (verified, sha string, err error) {
	sha, _, err = hashFile(path)
	if err != nil {
		return "", "", err
	}
	if !f.hasDigest() {
		return "", sha, nil
	}
	if f.SHA256 != "" && sha == f.SHA256 {
		return "sha256", sha, nil
	}
	ce := &CorruptFileError{Path: path, SHA256: sha, Want: f.SHA256, WantContent: f.ContentSHA256}
	if f.SHA256 == "" {
		ce.Want = "(unknown)"
	}
	if f.ContentSHA256 != "" && strings.Contains(f.Name, "-idx") {
		fh, err := os.Open(path)
		if err != nil {
			return "", sha, fmt.Errorf("open %s: %w", path, err)
		}
		x, derr := DecodeIDX(fh, path, idxDims(f.Name))
		fh.Close()
		switch {
		case derr != nil:
			ce.Reason = derr.Error()
		case x.ContentSHA256 == f.ContentSHA256:
			return "content-sha256", sha, nil
		default:
			ce.Content = x.ContentSHA256
		}
	}
	return "", sha, ce
}

// verifyDir checks every file of s found in dir against the known digests and
// returns the corrupt ones (by file name in s.Files) with their errors.
func verifyDir(s spec, dir string) (map[string]error, error) {
	bad := map[string]error{}
	paths, _ := findIn(s, dir)
	for i, p := range paths {
		if p == "" {
			continue
		}
		_, _, err := verifyLocal(p, s.Files[i])
		var ce *CorruptFileError
		switch {
		case errors.As(err, &ce):
			bad[s.Files[i].Name] = err
		case err != nil:
			return nil, err
		}
	}
	return bad, nil
}

// quarantine renames a corrupt file to NAME.corrupt-<UTC time> so that it is never
// used again but stays there to be looked at, and returns the new path.
func quarantine(path string) (string, error) {
	to := fmt.Sprintf("%s.corrupt-%s", path, time.Now().UTC().Format("20060102T150405.000000000"))
	if err := os.Rename(path, to); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("set corrupt file aside: %w", err)
	}
	return to, nil
}

// quarantineCorrupt sets aside every corrupt file of s in dir (both the .gz and the
// uncompressed name are looked at) and returns the messages describing them.
func quarantineCorrupt(s spec, dir string, opt Options) ([]string, error) {
	bad, err := verifyDir(s, dir)
	if err != nil {
		return nil, err
	}
	paths, _ := findIn(s, dir)
	var msgs []string
	names := make([]string, 0, len(bad))
	for n := range bad {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		for i, f := range s.Files {
			if f.Name != n || paths[i] == "" {
				continue
			}
			to, err := quarantine(paths[i])
			if err != nil {
				return msgs, err
			}
			msg := fmt.Sprintf("%v; moved to %s", bad[n], filepath.Base(to))
			logf(opt, "%s", msg)
			msgs = append(msgs, msg)
		}
	}
	return msgs, nil
}
