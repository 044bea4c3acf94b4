package data

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUnknownDatasetSuggests checks that a dataset name that is a file or a folder
// (or a misspelt built-in name) is answered with the form that was probably meant,
// and that every unknown-dataset error lists the user-data forms beside the names.
func TestUnknownDatasetSuggests(t *testing.T) {
	dir := t.TempDir()
	mk := func(rel string) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mk("arrays/x.npy")
	mk("arrays/y.npy")
	mk("digits/train-images-idx3-ubyte.gz")
	mk("digits/train-labels-idx1-ubyte.gz")
	mk("pics/cat/1.png")
	mk("pics/dog/2.png")
	mk("bundle/data.npz")
	mk("notes/readme.txt")
	mk("deep/more/x.npy")
	mk("deep/more/y.npy")
	wd, _ := os.Getwd()
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	defer os.Chdir(wd)

	for _, c := range []struct {
		name, dataDir string
		want          string // "" = no suggestion
	}{
		{"my.npz", "", "did you mean npz:my.npz?"},      // need not exist
		{"arrays/x.npy", "", "did you mean npy:arrays"}, // the folder, not the file
		{"arrays", "", "did you mean npy:arrays?"},
		{"digits", "", "did you mean idx:digits"},
		{"pics", "", "did you mean imagefolder:pics?"},
		{"pics/cat/1.png", "", "did you mean imagefolder:pics"},
		{"digits/train-images-idx3-ubyte.gz", "", "did you mean idx:digits"},
		{"bundle", "", "did you mean npz:bundle/data.npz?"},
		{"pics", filepath.Join(dir, "nowhere"), ""},                    // relative to --data-dir, where it is not
		{"more", filepath.Join(dir, "deep"), "did you mean npy:more?"}, // relative to --data-dir
		{"pics/cat", "", "did you mean imagefolder:pics"},              // a class folder
		{"MNIST", "", "did you mean mnist?"},
		{"fashion-mnst", "", "did you mean fashion-mnist?"},
		{"cifar", "", "did you mean cifar10?"},
		{"notes", "", ""},
		{"imagenet", "", ""},
	} {
		_, err := LoadFiles(c.name, Options{DataDir: c.dataDir, NoDownload: true})
		if err == nil {
			t.Errorf("%q: loaded", c.name)
			continue
		}
		msg := err.Error()
		for _, w := range []string{"unknown dataset", "mnist-embedded", "npz:FILE.npz", "npy:DIR", "imagefolder:DIR", "idx:DIR"} {
			if !strings.Contains(msg, w) {
				t.Errorf("%q: error %q lacks %q", c.name, msg, w)
			}
		}
		switch {
		case c.want == "" && strings.Contains(msg, "did you mean"):
			t.Errorf("%q: error %q suggests something", c.name, msg)
		case c.want != "" && !strings.Contains(msg, c.want):
			t.Errorf("%q: error %q lacks %q", c.name, msg, c.want)
		}
	}
}

// TestFetchUserData checks that fetching a user dataset says there is nothing to
// download instead of calling it unknown.
func TestFetchUserData(t *testing.T) {
	_, err := Fetch("npz:my.npz", Options{DataDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "nothing to download") {
		t.Fatalf("Fetch(npz:my.npz) = %v, want 'nothing to download'", err)
	}
}

// TestFlagHelpNamesEveryForm checks that the --dataset usage names every built-in
// dataset and every user-data scheme.
func TestFlagHelpNamesEveryForm(t *testing.T) {
	h := FlagHelp()
	for _, n := range Names() {
		if !strings.Contains(h, n) {
			t.Errorf("FlagHelp lacks %s: %q", n, h)
		}
	}
	for _, s := range UserDatasetSchemes() {
		if !strings.Contains(h, s+":") {
			t.Errorf("FlagHelp lacks %s: %q", s+":", h)
		}
	}
}
