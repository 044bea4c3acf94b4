package cuda

import (
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// fmaSources are the calls in dpfil.cu after which a fused multiply-add in the PTX is
// expected: the explicit ones (fma, fmaf: the C builds call the same C99 functions,
// so they fuse there too) and CUDA's math library, whose device implementations are
// polynomials written with fma. The math functions' results differ from glibc's in
// the last bits anyway; everything else must be unfused, as in the C builds
// (-ffp-contract=off).
var fmaSources = map[string]bool{
	"fma": true, "fmaf": true,
	"exp": true, "expf": true, "expm1": true, "expm1f": true, "log": true, "logf": true, "log1p": true, "log1pf": true,
	"tanh": true, "tanhf": true, "erf": true, "erff": true, "pow": true, "powf": true, "sin": true, "cos": true,
}

// cuFunctions splits dpfil.cu into its top-level functions (KERNEL and DEVFN, each
// ending at a "}" in column 0) and returns, for each, the names it calls.
func cuFunctions(src string) map[string][]string {
	code := regexp.MustCompile(`//[^\n]*`).ReplaceAllString(src, "")
	head := regexp.MustCompile(`^(?:KERNEL|DEVFN [\w ]+?\*?)\s*(\w+)\(`)
	call := regexp.MustCompile(`\b(\w+)\s*\(`)
	out := map[string][]string{}
	name := ""
	for _, line := range strings.Split(code, "\n") {
		if m := head.FindStringSubmatch(line); m != nil {
			name = m[1]
			out[name] = nil
			line = line[len(m[0]):]
		}
		if name == "" {
			continue
		}
		for _, c := range call.FindAllStringSubmatch(line, -1) {
			out[name] = append(out[name], c[1])
		}
		if strings.HasPrefix(line, "}") {
			name = ""
		}
	}
	return out
}

// fusesBy returns the fmaSources fn calls, directly or through the DEVFNs it calls.
func fusesBy(fns map[string][]string, fn string, seen map[string]bool) []string {
	if seen[fn] {
		return nil
	}
	seen[fn] = true
	var out []string
	for _, c := range fns[fn] {
		if fmaSources[c] {
			out = append(out, c)
		} else if _, ok := fns[c]; ok {
			out = append(out, fusesBy(fns, c, seen)...)
		}
	}
	return out
}

// ptxFMAs counts the fma.rn instructions of each .entry of a PTX module.
func ptxFMAs(ptx string) map[string]int {
	out := map[string]int{}
	entry := regexp.MustCompile(`\.entry (\w+)\(`)
	name := ""
	for _, line := range strings.Split(ptx, "\n") {
		if m := entry.FindStringSubmatch(line); m != nil {
			name = m[1]
			out[name] += 0
		}
		if name != "" && strings.Contains(line, "fma.rn.") {
			out[name]++
		}
	}
	return out
}

// TestPTXHasNoContractedFMA checks that the committed PTX was built with
// -fmad=false and that every kernel with a fused multiply-add (fma.rn) in it calls,
// in dpfil.cu, an explicit fma/fmaf or a math-library function: no multiply and add
// the C builds round twice is fused on a GPU. Checked on a planted PTX too.
func TestPTXHasNoContractedFMA(t *testing.T) {
	ptx, err := os.ReadFile("kernels/dpfil.ptx")
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(ptx), "\n")
	if !strings.Contains(first, "-fmad=false") {
		t.Errorf("kernels/dpfil.ptx was not built with -fmad=false (header %q): run make ptx", first)
	}
	fns := cuFunctions(kernelSource)
	if len(fns) < 20 || fns["k_act_fwd"] == nil || fns["dp_update1"] == nil {
		t.Fatalf("dpfil.cu parsed into %d functions (k_act_fwd calls %v)", len(fns), fns["k_act_fwd"])
	}
	contracted := func(ptx string) []string {
		var bad []string
		for entry, n := range ptxFMAs(ptx) {
			if n > 0 && len(fusesBy(fns, entry, map[string]bool{})) == 0 {
				bad = append(bad, entry)
			}
		}
		sort.Strings(bad)
		return bad
	}
	counts := ptxFMAs(string(ptx))
	if len(counts) < 20 {
		t.Fatalf("only %d entries in the PTX", len(counts))
	}
	if bad := contracted(string(ptx)); len(bad) > 0 {
		t.Errorf("kernels with fused multiply-adds that dpfil.cu does not ask for: %v", bad)
	}
	// Kernels without math-library calls have none; those with one may.
	for _, k := range []string{"k_dpsgd_update", "k_sum_chunks", "k_scaled_row_sum_add", "k_blocked_dotsq", "k_softmax_xent_tangent", "k_act_bwd", "k_act_tangent"} {
		if n, ok := counts[k]; !ok || n != 0 {
			t.Errorf("%s: %d fma.rn in the PTX (present %v), want 0", k, n, ok)
		}
	}
	for _, k := range []string{"k_act_fwd", "k_softmax_xent", "k_clip_scale"} {
		if len(fusesBy(fns, k, map[string]bool{})) == 0 {
			t.Errorf("%s: no math-library call found in dpfil.cu", k)
		}
	}
	// A contracted multiply-add planted in k_dpsgd_update (no math-library call) is
	// caught.
	planted := regexp.MustCompile(`(\.entry k_dpsgd_update\([^}]*?)\n`).ReplaceAllString(string(ptx), "$1\n\tfma.rn.f64 \t%fd1, %fd2, %fd3, %fd4;\n")
	if bad := contracted(planted); len(bad) != 1 || bad[0] != "k_dpsgd_update" {
		t.Errorf("a planted fma.rn.f64 in k_dpsgd_update: flagged %v", bad)
	}
}
