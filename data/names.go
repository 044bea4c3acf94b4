package data

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/dpfil/dpfil/internal/suggest"
)

// userForms are the spellings of a user dataset, one per scheme (see userdata.go).
var userForms = []string{"npz:FILE.npz", "npy:DIR", "imagefolder:DIR", "idx:DIR"}

// UserDatasetForms lists the spellings of a user dataset: npz:FILE.npz, npy:DIR,
// imagefolder:DIR and idx:DIR.
func UserDatasetForms() []string { return append([]string(nil), userForms...) }

// FlagHelp is the usage text of a --dataset flag: the built-in names and the forms
// of your own data.
func FlagHelp() string {
	return "dataset: " + strings.Join(Names(), ", ") + "; or your own files: " + strings.Join(userForms, ", ") + " (docs/data.md)"
}

// knownList is the tail of an unknown-dataset error: what would have been accepted.
func knownList() string {
	return "known datasets: " + strings.Join(Names(), ", ") + "; your own data: " + strings.Join(userForms, ", ") + " (docs/data.md)"
}

// unknownDataset is the error for a name that is neither a known dataset nor a user
// dataset. When the name looks like a file or a folder (an .npz or .npy name, an
// existing path, relative to dataDir when that is set, as user data paths are), or
// like a known name misspelt, it says which form was probably meant.
func unknownDataset(name, dataDir string) error {
	if guess := guessDataset(name, dataDir); guess != "" {
		return fmt.Errorf("unknown dataset %q: did you mean %s? (%s)", name, guess, knownList())
	}
	return fmt.Errorf("unknown dataset %q; %s", name, knownList())
}

// guessDataset returns what a user probably meant by the unknown dataset name, as
// text ("npz:my.npz", "mnist"), or "" when nothing fits.
func guessDataset(name, dataDir string) string {
	if name == "" {
		return ""
	}
	path := name
	if dataDir != "" && !filepath.IsAbs(path) {
		path = filepath.Join(dataDir, path)
	}
	fi, statErr := os.Stat(path)
	exists := statErr == nil
	ext := strings.ToLower(filepath.Ext(name))
	switch {
	case ext == ".npz":
		return "npz:" + name
	case ext == ".npy":
		dir := filepath.Dir(name)
		return "npy:" + dir + " (npy: names the folder holding x.npy and y.npy)"
	case exists && fi.IsDir():
		return guessFolder(name, path)
	case exists:
		dir := filepath.Dir(name)
		switch {
		case isImageName(name):
			return "imagefolder:" + filepath.Dir(dir) + " (imagefolder: names the folder of class folders DIR/<class>/<image>)"
		case ext == ".gz" || strings.Contains(name, "ubyte"):
			return "idx:" + dir + " (idx: names the folder holding the IDX files)"
		}
		return ""
	}
	if strings.ContainsAny(name, `/\`) {
		return ""
	}
	return suggest.Nearest(name, Names())
}

// guessFolder says which user-data form fits the existing folder path (spelt name
// by the user): npy: for x.npy and y.npy, idx: for IDX files, imagefolder: for
// class folders.
func guessFolder(name, path string) string {
	ents, err := os.ReadDir(path)
	if err != nil {
		return ""
	}
	var files, dirs []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if e.IsDir() {
			dirs = append(dirs, e.Name())
		} else {
			files = append(files, e.Name())
		}
	}
	has := func(sub string) bool {
		for _, f := range files {
			if strings.Contains(f, sub) {
				return true
			}
		}
		return false
	}
	switch {
	case has("x.npy") && has("y.npy"):
		return "npy:" + name
	case has("train-images") && has("train-labels"):
		return "idx:" + name + " (or --dataset mnist --data-dir " + name + " for MNIST's four files)"
	case len(dirs) > 0:
		return "imagefolder:" + name
	case len(files) == 1 && strings.HasSuffix(strings.ToLower(files[0]), ".npz"):
		return "npz:" + filepath.Join(name, files[0])
	case len(files) > 0 && isImageName(files[0]):
		return "imagefolder:" + filepath.Dir(filepath.Clean(name)) + " (imagefolder: names the folder of class folders DIR/<class>/<image>)"
	}
	return ""
}

// isImageName reports whether a file name has an image extension imagefolder: reads.
func isImageName(name string) bool {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".png", ".jpg", ".jpeg", ".gif":
		return true
	}
	return false
}
