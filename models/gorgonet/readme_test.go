package gorgonet_test

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// readmeBlock returns the body of the first fenced block of README.md that opens
// with fence and whose first line starts with first, and the text after it.
func readmeBlock(t *testing.T, readme, fence, first string) (body, rest string) {
	t.Helper()
	for s := readme; ; {
		i := strings.Index(s, "\n"+fence+"\n")
		if i < 0 {
			t.Fatalf("README.md has no %s block starting with %q", fence, first)
		}
		s = s[i+len(fence)+2:]
		j := strings.Index(s, "\n```\n")
		if j < 0 {
			t.Fatalf("README.md: unterminated %s block", fence)
		}
		if strings.HasPrefix(s, first) {
			return s[:j+1], s[j+5:]
		}
	}
}

// funcSource is the source text of the function name of f (doc comment included).
func funcSource(t *testing.T, fset *token.FileSet, src []byte, f *ast.File, name string) string {
	t.Helper()
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Name.Name == name {
			start := fd.Pos()
			if fd.Doc != nil {
				start = fd.Doc.Pos()
			}
			return string(src[fset.Position(start).Offset:fset.Position(fd.End()).Offset])
		}
	}
	t.Fatalf("no function %s", name)
	return ""
}

func importPaths(f *ast.File) []string {
	var out []string
	for _, im := range f.Imports {
		p, _ := strconv.Unquote(im.Path.Value)
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// TestREADMELibrarySnippet: README.md's library snippet is a complete program whose
// trainSmallCNN is, character for character, the one Example runs, with the same
// imports (plus log for main's log.Fatal), and the output README.md shows is the
// Example's checked output.
func TestREADMELibrarySnippet(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	snippet, rest := readmeBlock(t, string(raw), "```go", "package main\n")
	fset := token.NewFileSet()
	prog, err := parser.ParseFile(fset, "README.go", snippet, parser.ParseComments)
	if err != nil {
		t.Fatalf("the README snippet is not a Go file: %v", err)
	}
	exSrc, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	ex, err := parser.ParseFile(fset, "example_test.go", exSrc, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}

	if got, want := funcSource(t, fset, []byte(snippet), prog, "trainSmallCNN"), funcSource(t, fset, exSrc, ex, "trainSmallCNN"); got != want {
		t.Errorf("README's trainSmallCNN differs from example_test.go's:\n--- README\n%s\n--- example_test.go\n%s", got, want)
	}
	const wantMain = "func main() {\n\tif err := trainSmallCNN(os.Stdout); err != nil {\n\t\tlog.Fatal(err)\n\t}\n}"
	if got := funcSource(t, fset, []byte(snippet), prog, "main"); got != wantMain {
		t.Errorf("README's main:\n%s\nwant\n%s", got, wantMain)
	}
	if len(prog.Decls) != 3 { // imports, main, trainSmallCNN
		t.Errorf("README snippet has %d declarations, want the imports, main and trainSmallCNN", len(prog.Decls))
	}
	wantImports := append(importPaths(ex), "log")
	slices.Sort(wantImports)
	if got := importPaths(prog); !slices.Equal(got, wantImports) {
		t.Errorf("README imports %v, want %v (the Example's and log)", got, wantImports)
	}

	var output string
	for _, e := range doc.Examples(ex) {
		if e.Name == "" {
			output = e.Output
		}
	}
	if output == "" {
		t.Fatal("example_test.go has no Example with an // Output: comment")
	}
	shown, _ := readmeBlock(t, rest, "```text", "")
	if shown != output {
		t.Errorf("README shows the output\n%s\nbut the Example's checked output is\n%s", shown, output)
	}
}
