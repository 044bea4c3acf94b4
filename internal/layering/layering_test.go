package layering

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/dpfil/dpfil"

// root is the module root (this package is internal/layering).
var root = filepath.Join("..", "..")

// layerRow matches a row of the Layers table: | N | `pkg`, `pkg/...` |.
var layerRow = regexp.MustCompile("^\\|\\s*(\\d+)\\s*\\|(.*)\\|\\s*$")

// layers reads the "## Layers" table of docs/architecture.md: package pattern →
// layer (a pattern "p/..." covers p and every package below it).
func layers(doc []byte) (map[string]int, error) {
	out := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(doc))
	in := false
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			in = strings.TrimSpace(line) == "## Layers"
			continue
		}
		m := layerRow.FindStringSubmatch(line)
		if !in || m == nil {
			continue
		}
		n, err := strconv.Atoi(m[1])
		if err != nil {
			return nil, err
		}
		for _, cell := range strings.Split(m[2], ",") {
			p := strings.Trim(strings.TrimSpace(cell), "`")
			if p == "" {
				continue
			}
			if _, dup := out[p]; dup {
				return nil, fmt.Errorf("package %s is in two layers", p)
			}
			out[p] = n
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no Layers table (a \"## Layers\" section with rows | N | `pkg`, … |)")
	}
	return out, nil
}

// layerOf is the layer of package rel (module-relative path): its own entry, or the
// longest "p/..." pattern covering it.
func layerOf(table map[string]int, rel string) (int, bool) {
	if n, ok := table[rel]; ok {
		return n, true
	}
	best, n := -1, 0
	for p, l := range table {
		base, ok := strings.CutSuffix(p, "/...")
		if ok && (rel == base || strings.HasPrefix(rel, base+"/")) && len(base) > best {
			best, n = len(base), l
		}
	}
	return n, best >= 0
}

// imports runs go list over every package of the module (with the given build
// tags) and returns each package's imports of the module's own packages, both as
// module-relative paths.
func imports(t *testing.T, tags string) map[string][]string {
	t.Helper()
	args := []string{"list", "-e", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}"}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	cmd := exec.Command("go", append(args, "./...")...)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v", strings.Join(args, " "), err)
	}
	deps := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		pkg := rel(f[0])
		deps[pkg] = nil
		for _, imp := range f[1:] {
			if r := rel(imp); r != imp {
				deps[pkg] = append(deps[pkg], r)
			}
		}
	}
	return deps
}

// rel is p without the module prefix ("" for the module root), or p unchanged for
// packages outside the module.
func rel(p string) string {
	if p == module {
		return ""
	}
	if r, ok := strings.CutPrefix(p, module+"/"); ok {
		return r
	}
	return p
}

// TestLayering: every package of the module has a layer in docs/architecture.md,
// and none imports a package drawn above it, in the default build and with the GPU
// build tag. Tests may import anything (an example may drive a package from above).
func TestLayering(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	table, err := layers(doc)
	if err != nil {
		t.Fatalf("docs/architecture.md: %v", err)
	}
	for _, tags := range []string{"", "dpfil_cuda"} {
		deps := imports(t, tags)
		if len(deps) < 10 {
			t.Fatalf("go list (tags %q) named only %d packages", tags, len(deps))
		}
		var bad []string
		for pkg, imps := range deps {
			lp, ok := layerOf(table, pkg)
			if !ok {
				bad = append(bad, fmt.Sprintf("%s has no layer in docs/architecture.md", pkg))
				continue
			}
			for _, imp := range imps {
				li, ok := layerOf(table, imp)
				if !ok {
					continue // reported as a package of its own
				}
				if li > lp {
					bad = append(bad, fmt.Sprintf("%s (layer %d) imports %s (layer %d)", pkg, lp, imp, li))
				}
			}
		}
		sort.Strings(bad)
		for _, b := range bad {
			t.Errorf("tags %q: %s", tags, b)
		}
	}
}

// TestTrainDoesNotLinkAttacks: go list -deps ./train names no package of a higher
// layer (attack, sweep, the figures, the CLI): the trainer records transcripts
// through package transcript, below both.
func TestTrainDoesNotLinkAttacks(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "./train")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps ./train: %v", err)
	}
	have := map[string]bool{}
	for _, p := range strings.Fields(string(out)) {
		have[rel(p)] = true
	}
	if !have["transcript"] || !have["models"] {
		t.Fatalf("go list -deps ./train lacks transcript or models: %s", out)
	}
	for _, p := range []string{"attack", "sweep", "glm", "plot", "plot/figures", "cmd/dpfil", "cli"} {
		if have[p] {
			t.Errorf("go list -deps ./train includes %s", p)
		}
	}
}

// TestLayersTable checks the reader of the table on a small document: patterns,
// the longest match winning, a package in two layers and a missing table.
func TestLayersTable(t *testing.T) {
	doc := []byte("# x\n\n## Layers\n\n| layer | packages |\n|---|---|\n| 2 | `cmd/...`, `a/b` |\n| 1 | `a` |\n| 0 | `a/...` |\n\n## Next\n\n| 9 | `zz` |\n")
	tab, err := layers(doc)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		pkg  string
		want int
		ok   bool
	}{{"cmd/dpfil", 2, true}, {"a/b", 2, true}, {"a", 1, true}, {"a/c", 0, true}, {"a/b/c", 0, true}, {"zz", 0, false}, {"b", 0, false}} {
		if got, ok := layerOf(tab, c.pkg); got != c.want || ok != c.ok {
			t.Errorf("layer of %s = %d, %v; want %d, %v", c.pkg, got, ok, c.want, c.ok)
		}
	}
	if _, err := layers([]byte("## Layers\n| 1 | `a` |\n| 2 | `a` |\n")); err == nil {
		t.Error("a package in two layers accepted")
	}
	if _, err := layers([]byte("## Other\n| 1 | `a` |\n")); err == nil {
		t.Error("a document without a Layers table accepted")
	}
}
