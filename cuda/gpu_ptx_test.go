package cuda

import (
	"go/build/constraint"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

func TestPtxParamSize(t *testing.T) {
	cases := []struct {
		decl string
		want int
		err  bool
	}{
		{".param .u32 k_param_0", 4, false},
		{".param .f32 k_param_1", 4, false},
		{".param .u64 k_param_2", 8, false},
		{".param .f64 k_param_3", 8, false},
		{".param .u64 .ptr .global .align 4 k_param_4", 8, false},
		{".param .align 8 .b8 k_param_5[16]", 16, false},
		{".param .b16 k_param_6", 2, false},
		{".reg .u32 %r1", 0, true},
		{".param .u64", 0, true},
		{".param .qq k", 0, true},
		{".param .b8 k[x]", 0, true},
	}
	for _, tc := range cases {
		got, err := ptxParamSize(tc.decl)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("ptxParamSize(%q) = %d, %v; want %d, error %v", tc.decl, got, err, tc.want, tc.err)
		}
	}
}

func TestPtxEntryParams(t *testing.T) {
	const ptx = `
.version 7.8
.target sm_75
	// .globl	k_a
.visible .entry k_a(
	.param .u32 k_a_param_0,
	.param .f32 k_a_param_1,
	.param .u64 k_a_param_2
)
{
	ret;
}
.visible .entry k_empty()
{
	ret;
}
.visible .entry k_inline(.param .u64 k_inline_param_0, .param .u32 k_inline_param_1)
{
	ret;
}
// .entry k_comment(
`
	got, err := ptxEntryParams(ptx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]int{"k_a": {4, 4, 8}, "k_empty": nil, "k_inline": {8, 4}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for name, bad := range map[string]string{
		"unclosed":  ".entry k(\n.param .u32 a,\n",
		"duplicate": ".entry k()\n.entry k()\n",
		"bad param": ".entry k(\n.param .zz a\n)\n",
		"no name":   ".entry (\n)\n",
	} {
		if _, err := ptxEntryParams(bad); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestJITLog(t *testing.T) {
	buf := make([]byte, 64)
	if got := jitLog(buf); got != "" {
		t.Errorf("empty buffer: %q", got)
	}
	copy(buf, "  ptxas error: bad\n\x00stale bytes")
	if got := jitLog(buf); got != "ptxas error: bad" {
		t.Errorf("jitLog = %q", got)
	}
	if got := jitLog([]byte("no terminator")); got != "no terminator" {
		t.Errorf("jitLog = %q", got)
	}
}

func TestCheckLaunchArgs(t *testing.T) {
	if err := checkLaunchArgs("k", []int{4, 8, 4}, 3); err != nil {
		t.Fatal(err)
	}
	if err := checkLaunchArgs("k", []int{4, 8, 4}, 2); err == nil || !strings.Contains(err.Error(), "takes 3 arguments, got 2") {
		t.Fatalf("wrong count: %v", err)
	}
	if err := checkLaunchArgs("k", []int{16}, 1); err == nil {
		t.Fatal("a 16-byte parameter was accepted")
	}
}

// TestCommittedPTXMatchesKernelSignatures reads the committed PTX the GPU driver
// embeds and checks it against kernels/dpfil.cu: the same kernels, each with as many
// parameters as its C signature, all of them fitting an 8-byte slot. So a launch that
// the emulator accepts has the argument count the GPU expects.
func TestCommittedPTXMatchesKernelSignatures(t *testing.T) {
	ptx, err := os.ReadFile("kernels/dpfil.ptx")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("kernels/dpfil.cu")
	if err != nil {
		t.Fatal(err)
	}
	entries, err := ptxEntryParams(string(ptx))
	if err != nil {
		t.Fatal(err)
	}
	sig := regexp.MustCompile(`(?s)\bKERNEL\s+(\w+)\s*\(([^)]*)\)`)
	kernels := map[string]int{}
	for _, m := range sig.FindAllStringSubmatch(string(src), -1) {
		n := 0
		if strings.TrimSpace(m[2]) != "" {
			n = strings.Count(m[2], ",") + 1
		}
		kernels[m[1]] = n
	}
	if len(kernels) == 0 {
		t.Fatal("no KERNEL definitions found in kernels/dpfil.cu")
	}
	if len(entries) != len(kernels) {
		t.Errorf("PTX has %d entries, dpfil.cu %d kernels", len(entries), len(kernels))
	}
	for name, n := range kernels {
		sizes, ok := entries[name]
		if !ok {
			t.Errorf("kernel %s is not in the PTX (run make ptx)", name)
			continue
		}
		if err := checkLaunchArgs(name, sizes, n); err != nil {
			t.Errorf("%v (dpfil.cu declares %d)", err, n)
		}
	}
}

// TestNoBareCudaBuildTag guards the build tag: `-tags cuda` also compiles Gorgonia's
// CUDA engine (it needs cuDNN and links cuBLAS), so dpfil's GPU code is behind
// dpfil_cuda, and a file constrained on plain "cuda" would silently never be built
// by make cuda.
func TestNoBareCudaBuildTag(t *testing.T) {
	root := ".."
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "bin" || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, ".c") && !strings.HasSuffix(path, ".h") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, line := range strings.Split(string(data), "\n") {
			if !constraint.IsGoBuild(line) {
				continue
			}
			expr, err := constraint.Parse(line)
			if err != nil {
				t.Errorf("%s: %v", path, err)
				continue
			}
			checked++
			if constraintHasTag(expr, "cuda") {
				t.Errorf("%s: %q uses the tag cuda; use dpfil_cuda (see Makefile)", path, line)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Fatal("no build constraints found: the walk is broken")
	}
}

// constraintHasTag reports whether tag occurs anywhere in a build constraint.
func constraintHasTag(e constraint.Expr, tag string) bool {
	switch x := e.(type) {
	case *constraint.TagExpr:
		return x.Tag == tag
	case *constraint.NotExpr:
		return constraintHasTag(x.X, tag)
	case *constraint.AndExpr:
		return constraintHasTag(x.X, tag) || constraintHasTag(x.Y, tag)
	case *constraint.OrExpr:
		return constraintHasTag(x.X, tag) || constraintHasTag(x.Y, tag)
	}
	return false
}

func TestConstraintHasTag(t *testing.T) {
	cases := map[string]bool{
		"//go:build cuda":                      true,
		"//go:build linux && !cuda":            true,
		"//go:build (unix || windows) && cuda": true,
		"//go:build dpfil_cuda":                false,
		"//go:build !dpfil_cuda && amd64":      false,
	}
	for line, want := range cases {
		e, err := constraint.Parse(line)
		if err != nil {
			t.Fatal(err)
		}
		if got := constraintHasTag(e, "cuda"); got != want {
			t.Errorf("%s: %v, want %v", line, got, want)
		}
	}
}
