package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExampleMatchesREADME: README.md's section "Your own Gorgonia model" shows this
// program, character for character, as its first Go block.
func TestExampleMatchesREADME(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	const heading = "\n### Your own Gorgonia model\n"
	i := strings.Index(string(readme), heading)
	if i < 0 {
		t.Fatalf("README.md has no section %q", strings.TrimSpace(heading))
	}
	s := string(readme[i+len(heading):])
	if next := strings.Index(s, "\n#"); next >= 0 {
		s = s[:next]
	}
	const open = "\n```go\n"
	j := strings.Index(s, open)
	if j < 0 {
		t.Fatal("the section has no ```go block")
	}
	s = s[j+len(open):]
	k := strings.Index(s, "\n```\n")
	if k < 0 {
		t.Fatal("the section's ```go block is not closed")
	}
	if got := s[:k+1]; got != string(src) {
		t.Errorf("README's program differs from main.go:\n--- README\n%s\n--- main.go\n%s", got, src)
	}
}
