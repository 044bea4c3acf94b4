package data

import (
	"archive/tar"
	"compress/gzip"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	neturl "net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// FetchResult reports what Fetch did.
type FetchResult struct {
	Dataset     string     `json:"dataset"`
	Dir         string     `json:"dir"`                   // directory holding the files
	Downloaded  []string   `json:"downloaded"`            // URLs downloaded in this call
	Files       []FileInfo `json:"files"`                 // the dataset's files with their checksums
	Note        string     `json:"note,omitempty"`        // e.g. "compiled into the binary"
	Train       int        `json:"train"`                 // samples in the training part
	Test        int        `json:"test"`                  // samples in the test part
	Fingerprint string     `json:"fingerprint,omitempty"` // of the training part
}

// Fetch makes sure the named dataset's files are in opt.DataDir (if set) or in its
// cache directory, downloading and verifying the missing ones, then loads them to
// validate them. Files already present are kept (and reported with their checksums).
func Fetch(name string, opt Options) (*FetchResult, error) {
	if IsUserDataset(name) {
		return nil, fmt.Errorf("dataset %s is your own data, read from disk where it is: nothing to download (check it with 'dpfil data info --dataset %s')", name, name)
	}
	s, err := lookupIn(name, opt.DataDir)
	if err != nil {
		return nil, err
	}
	if s.Base != "" {
		if s, err = lookup(s.Base); err != nil {
			return nil, err
		}
	}
	res := &FetchResult{Dataset: s.Name, Downloaded: []string{}}
	if s.Format == formatEmbedded {
		l, err := loadEmbedded()
		if err != nil {
			return nil, err
		}
		res.Note = "compiled into the binary; nothing to download"
		res.Files, res.Train, res.Test, res.Fingerprint = l.Files, l.Train.N, l.Test.N, l.Train.SHA256
		return res, nil
	}
	dir := opt.DataDir
	if dir == "" {
		root, err := cacheRoot(opt)
		if err != nil {
			return nil, err
		}
		dir = filepath.Join(root, s.Dir)
	}
	res.Dir = dir
	if opt.DataDir == "" {
		// An installed system copy (Debian's dataset-fashion-mnist) that verifies is
		// used as it is: nothing to download.
		for _, sd := range s.SystemDirs {
			if _, missing := findIn(s, sd); len(missing) > 0 {
				continue
			}
			local := opt
			local.DataDir, local.NoDownload = sd, true
			if l, err := loadSpec(s, local, cifarRecordsPerBin); err == nil && allVerified(l.Files) {
				res.Dir = sd
				res.Note = "installed system copy in " + sd + " (verified); nothing to download"
				res.Files, res.Train, res.Test, res.Fingerprint = l.Files, l.Train.N, l.Test.N, l.Train.SHA256
				return res, nil
			}
		}
	}
	if !opt.NoDownload {
		if res.Downloaded, err = fetchInto(s, opt, dir); err != nil {
			return nil, err
		}
	}
	local := opt
	local.DataDir, local.NoDownload = dir, true
	l, err := loadSpec(s, local, cifarRecordsPerBin)
	if err != nil {
		return nil, err
	}
	res.Files, res.Train, res.Test, res.Fingerprint = l.Files, l.Train.N, l.Test.N, l.Train.SHA256
	return res, nil
}

// fetchInto downloads into dir the files of s that are missing there, or present but
// corrupt (not matching the known digests: such a file is set aside as
// NAME.corrupt-<time>, never used), and returns the URLs it downloaded. Each file is
// tried on every mirror in turn; the files no mirror served are then taken from the
// dataset's Go module (s.GoModule) through the Go module proxies, if it has one.
// Where each installed file came from is recorded in dir's provenance file.
func fetchInto(s spec, opt Options, dir string) ([]string, error) {
	if st, err := os.Stat(dir); err == nil && st.IsDir() {
		if _, err := quarantineCorrupt(s, dir, opt); err != nil {
			return nil, err
		}
	}
	if _, missing := findIn(s, dir); len(missing) == 0 {
		return nil, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	bases := mirrors(s, opt)
	nMirrors := len(bases)
	if len(bases) == 0 && s.GoModule == nil {
		return nil, fmt.Errorf("dataset %s: no download mirror", s.Name)
	}
	var got []string
	if s.Archive != nil {
		tmp, url, err := download(opt, bases, *s.Archive, dir)
		if err != nil {
			return nil, &downloadFailedError{spec: s, failed: []string{s.Archive.Name}, errs: []error{err}}
		}
		defer os.Remove(tmp)
		if err := extractTarGz(tmp, url, s, dir); err != nil {
			return nil, err
		}
		return append(got, url), nil
	}
	_, missing := findIn(s, dir)
	origins := map[string]Origin{}
	var failed []string
	var mirrorErrs []error
	for _, f := range s.Files {
		if !contains(missing, f.Name) {
			continue
		}
		if len(bases) == 0 {
			failed = append(failed, f.Name)
			continue
		}
		tmp, url, err := download(opt, bases, f, dir)
		if err != nil {
			failed = append(failed, f.Name)
			mirrorErrs = append(mirrorErrs, err)
			bases = reachable(bases, err)
			continue
		}
		final := filepath.Join(dir, f.Name)
		if err := os.Chmod(tmp, 0o644); err != nil {
			os.Remove(tmp)
			return got, fmt.Errorf("download %s: %w", url, err)
		}
		if err := os.Rename(tmp, final); err != nil {
			os.Remove(tmp)
			return got, fmt.Errorf("move %s into place: %w", final, err)
		}
		got = append(got, url)
		sha, _, err := hashFile(final)
		if err != nil {
			return got, err
		}
		origins[f.Name] = Origin{Via: OriginMirror, URL: url, SHA256: sha, Fetched: time.Now().UTC().Truncate(time.Second)}
	}
	if len(failed) > 0 && s.GoModule != nil {
		if nMirrors > 0 {
			logf(opt, "the mirrors did not serve %s; trying the Go module proxy (%s)", strings.Join(failed, ", "), s.GoModule.ModuleVersion())
		}
		url, from, err := fetchGoModule(s, opt, dir, failed)
		if err != nil {
			mirrorErrs = append(mirrorErrs, err)
		} else {
			failed = nil
			got = append(got, url)
			for k, v := range from {
				origins[k] = v
			}
		}
	}
	if err := recordProvenance(dir, s.Dir, origins); err != nil {
		return got, err
	}
	if len(failed) > 0 {
		return got, &downloadFailedError{spec: s, failed: failed, errs: mirrorErrs}
	}
	return got, nil
}

// downloadFailedError is a dataset whose files no source served: one message with
// the remedy (each attempt was already logged on its own line).
type downloadFailedError struct {
	spec   spec
	failed []string
	errs   []error
}

func (e *downloadFailedError) Error() string {
	last := "no source configured"
	if n := len(e.errs); n > 0 {
		last = e.errs[n-1].Error()
		var ue *neturl.Error
		if errors.As(e.errs[n-1], &ue) { // the cause, without the URL logged above
			last = ue.Err.Error()
		}
	}
	remedy := fmt.Sprintf("offline? put %s into a directory and pass --data-dir DIR", strings.Join(e.failed, ", "))
	if e.spec.GoModule != nil {
		remedy += " (MNIST also comes through the Go module proxy: 'make data' where it is reachable)"
	}
	if len(e.spec.SystemDirs) > 0 {
		remedy += fmt.Sprintf(", or install the system copy (%s)", e.spec.SystemDirs[0])
	}
	return fmt.Sprintf("could not download %s: no source served %s (%d attempt(s), each logged above; the last failed with: %s); %s",
		e.spec.Name, strings.Join(e.failed, ", "), len(e.errs), last, remedy)
}

// Unwrap gives the attempts' errors to errors.Is/As.
func (e *downloadFailedError) Unwrap() []error { return e.errs }

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// download fetches f from the first mirror that serves it with the right digests,
// into a temporary file in dir, and returns that file's path and the URL. A file that
// fails verification is removed and the next mirror is tried.
func download(opt Options, bases []string, f fileSpec, dir string) (tmpPath, url string, err error) {
	var errs []error
	for _, base := range bases {
		url = joinURL(base, f.Name)
		tmpPath, err = downloadOne(opt, url, f, dir)
		if err == nil {
			return tmpPath, url, nil
		}
		errs = append(errs, err)
		logf(opt, "%v", err)
	}
	return "", "", errors.Join(errs...)
}

// unreachableError is a download that failed before any HTTP response (DNS, connect,
// TLS): the mirror is not tried again for the dataset's other files.
type unreachableError struct{ err error }

func (e *unreachableError) Error() string { return e.err.Error() }
func (e *unreachableError) Unwrap() error { return e.err }

// reachable drops from bases those that err (from download) says are unreachable.
func reachable(bases []string, err error) []string {
	var out []string
	for _, b := range bases {
		dead := false
		for _, e := range unwrapJoined(err) {
			var ue *unreachableError
			if errors.As(e, &ue) && strings.Contains(e.Error(), " "+b) {
				dead = true
			}
		}
		if !dead {
			out = append(out, b)
		}
	}
	return out
}

// unwrapJoined lists the errors joined in err (err itself if it is not a join).
func unwrapJoined(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	if err == nil {
		return nil
	}
	return []error{err}
}

func joinURL(base, name string) string {
	if strings.HasSuffix(base, "/") {
		return base + name
	}
	return base + "/" + name
}

// maxDownload caps a download at twice the known size (or 1 GiB when unknown), so a
// misbehaving server cannot fill the disk.
func maxDownload(f fileSpec) int64 {
	if f.Size > 0 {
		return 2 * f.Size
	}
	return 1 << 30
}

// downloadOne downloads url into a temporary file in dir and verifies it.
func downloadOne(opt Options, url string, f fileSpec, dir string) (string, error) {
	client := opt.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Minute}
	}
	resp, err := client.Get(url)
	if err != nil {
		return "", &unreachableError{fmt.Errorf("download %s: %w", url, err)}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("download %s: HTTP status %s", url, resp.Status)
	}
	tmp, err := os.CreateTemp(dir, "."+f.Name+".part-*")
	if err != nil {
		return "", fmt.Errorf("download %s: %w", url, err)
	}
	keep := false
	defer func() {
		if !keep {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	total := resp.ContentLength
	if total <= 0 {
		total = f.Size
	}
	sh, mh := sha256.New(), md5.New()
	pw := &progressWriter{opt: opt, name: f.Name, total: total, next: 0}
	limit := maxDownload(f)
	n, err := io.Copy(io.MultiWriter(tmp, sh, mh, pw), io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return "", fmt.Errorf("download %s: after %d bytes: %w", url, n, err)
	}
	if n > limit {
		return "", fmt.Errorf("download %s: more than %d bytes, want %d; rejected", url, limit, f.Size)
	}
	if resp.ContentLength > 0 && n != resp.ContentLength {
		return "", fmt.Errorf("download %s: truncated: %d of %d bytes; rejected", url, n, resp.ContentLength)
	}
	if err := tmp.Sync(); err != nil {
		return "", fmt.Errorf("download %s: %w", url, err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("download %s: %w", url, err)
	}
	if err := verifyDigests(url, f, n, sh, mh); err != nil {
		return "", err
	}
	if f.ContentSHA256 != "" && strings.HasSuffix(f.Name, ".gz") {
		fh, err := os.Open(tmp.Name())
		if err != nil {
			return "", fmt.Errorf("download %s: %w", url, err)
		}
		x, err := DecodeIDX(fh, url, idxDims(f.Name))
		fh.Close()
		if err != nil {
			return "", fmt.Errorf("download %s: rejected: %w", url, err)
		}
		if x.ContentSHA256 != f.ContentSHA256 {
			return "", fmt.Errorf("download %s: content SHA-256 %s, want %s; rejected", url, x.ContentSHA256, f.ContentSHA256)
		}
	}
	logf(opt, "%s: %d bytes, verified (sha256 %s)", f.Name, n, hex.EncodeToString(sh.Sum(nil)))
	keep = true
	return tmp.Name(), nil
}

// verifyDigests checks the SHA-256 and MD5 of a download against the known ones (every
// known digest must match; at least one must be known).
func verifyDigests(url string, f fileSpec, n int64, sh, mh hash.Hash) error {
	gotSHA := hex.EncodeToString(sh.Sum(nil))
	gotMD5 := hex.EncodeToString(mh.Sum(nil))
	if f.SHA256 == "" && f.MD5 == "" {
		return fmt.Errorf("download %s: no known digest to verify it against; rejected", url)
	}
	if f.SHA256 != "" && gotSHA != f.SHA256 {
		return fmt.Errorf("download %s: SHA-256 %s (%d bytes), want %s; corrupt or truncated, rejected", url, gotSHA, n, f.SHA256)
	}
	if f.MD5 != "" && gotMD5 != f.MD5 {
		return fmt.Errorf("download %s: MD5 %s (%d bytes), want %s; corrupt or truncated, rejected", url, gotMD5, n, f.MD5)
	}
	return nil
}

// extractTarGz extracts the files of s (found anywhere in the archive, usually under
// cifar-10-batches-bin/) into dir: each into a temporary file, checked for its size;
// only when all are there are they renamed into place, so a bad archive leaves nothing.
func extractTarGz(archive, url string, s spec, dir string) error {
	fh, err := os.Open(archive)
	if err != nil {
		return fmt.Errorf("open downloaded %s: %w", url, err)
	}
	defer fh.Close()
	zr, err := gzip.NewReader(fh)
	if err != nil {
		return fmt.Errorf("%s: corrupt gzip: %w", url, err)
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	want := map[string]fileSpec{}
	for _, f := range s.Files {
		want[f.Name] = f
	}
	tmps := map[string]string{} // file name → temporary path
	defer func() {
		for _, t := range tmps {
			os.Remove(t) // no-op for those renamed into place
		}
	}()
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("%s: corrupt tar archive: %w", url, err)
		}
		base := path.Base(h.Name)
		f, ok := want[base]
		if _, dup := tmps[base]; !ok || dup || h.Typeflag != tar.TypeReg {
			continue
		}
		if f.Size > 0 && h.Size != f.Size {
			return fmt.Errorf("%s: %s is %d bytes in the archive, want %d", url, h.Name, h.Size, f.Size)
		}
		tmp, err := writeTemp(dir, base, io.LimitReader(tr, h.Size), h.Size)
		if err != nil {
			return fmt.Errorf("%s: extract %s: %w", url, h.Name, err)
		}
		tmps[base] = tmp
	}
	for _, f := range s.Files {
		if _, ok := tmps[f.Name]; !ok {
			return fmt.Errorf("%s: archive lacks %s", url, f.Name)
		}
	}
	for _, f := range s.Files {
		if err := os.Rename(tmps[f.Name], filepath.Join(dir, f.Name)); err != nil {
			return fmt.Errorf("%s: move %s into place: %w", url, f.Name, err)
		}
	}
	return nil
}

// writeTemp writes exactly size bytes from r to a temporary file in dir and returns
// its path; on error nothing is left.
func writeTemp(dir, name string, r io.Reader, size int64) (string, error) {
	tmp, err := os.CreateTemp(dir, "."+name+".part-*")
	if err != nil {
		return "", err
	}
	n, err := io.Copy(tmp, r)
	if err == nil && n != size {
		err = fmt.Errorf("%d of %d bytes", n, size)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp.Name())
		return "", err
	}
	return tmp.Name(), nil
}

// hashFile returns the hex SHA-256 and size of a file.
func hashFile(p string) (string, int64, error) {
	fh, err := os.Open(p)
	if err != nil {
		return "", 0, fmt.Errorf("open %s: %w", p, err)
	}
	defer fh.Close()
	h := sha256.New()
	n, err := io.Copy(h, fh)
	if err != nil {
		return "", 0, fmt.Errorf("read %s: %w", p, err)
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

func logf(opt Options, format string, args ...any) {
	if opt.Logf != nil {
		opt.Logf(format, args...)
	}
}

// progressWriter logs a progress line every 10% of a download.
type progressWriter struct {
	opt   Options
	name  string
	total int64
	done  int64
	next  int64
}

func (p *progressWriter) Write(b []byte) (int, error) {
	p.done += int64(len(b))
	if p.total > 0 && p.done >= p.next {
		logf(p.opt, "downloading %s: %.1f/%.1f MB (%d%%)", p.name, float64(p.done)/1e6, float64(p.total)/1e6, 100*p.done/p.total)
		p.next += p.total / 10
		if p.next <= p.done {
			p.next = p.done + 1
		}
	}
	return len(b), nil
}

func allVerified(fs []FileInfo) bool {
	for _, f := range fs {
		if f.Verified == "" {
			return false
		}
	}
	return len(fs) > 0
}
