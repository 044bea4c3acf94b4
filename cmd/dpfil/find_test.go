package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// walkCommands calls fn for c and every command below it.
func walkCommands(c *cobra.Command, fn func(*cobra.Command)) {
	fn(c)
	for _, s := range c.Commands() {
		walkCommands(s, fn)
	}
}

// TestDatasetFlagsNameUserForms checks that every --dataset flag of the command tree
// says how to name your own data (npz:, npy:, imagefolder:, idx:), and that 'data
// --help' describes the forms.
func TestDatasetFlagsNameUserForms(t *testing.T) {
	n := 0
	walkCommands(newRootCmd(), func(c *cobra.Command) {
		f := c.Flags().Lookup("dataset")
		if f == nil {
			return
		}
		n++
		for _, form := range []string{"npz:", "npy:", "imagefolder:", "idx:"} {
			if !strings.Contains(f.Usage, form) {
				t.Errorf("%s --dataset usage lacks %s: %q", c.CommandPath(), form, f.Usage)
			}
		}
	})
	if n < 8 {
		t.Errorf("found %d --dataset flags, want at least 8 (train, eval, data info/fetch, attack, glm, plot images…)", n)
	}
	out, _, err := execCLI(t, "data", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"npz:FILE.npz", "npy:DIR", "imagefolder:DIR", "idx:DIR"} {
		if !strings.Contains(out, w) {
			t.Errorf("data --help lacks %s", w)
		}
	}
}

// TestDatasetPathSuggestsForm checks the CLI's answer to a bare file as --dataset.
func TestDatasetPathSuggestsForm(t *testing.T) {
	_, _, err := execCLI(t, "data", "info", "--dataset", "my.npz")
	if err == nil || !strings.Contains(err.Error(), "did you mean npz:my.npz?") || !strings.Contains(err.Error(), "imagefolder:DIR") {
		t.Fatalf("data info --dataset my.npz: %v", err)
	}
}
