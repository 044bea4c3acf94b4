package cuda

import (
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"
)

// buildFake compiles a stand-in library from testdata into dir/name with the host C
// compiler (the package is cgo, so one is there).
func buildFake(t *testing.T, dir, name, src string, args ...string) string {
	t.Helper()
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "gcc"
	}
	out := filepath.Join(dir, name)
	cmd := exec.Command(cc, append([]string{"-shared", "-fPIC", "-O1", "-o", out, src}, args...)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, b)
	}
	return out
}

// fakeCublasLayout builds the libraries of the loader tests:
//   - bad/libcublas.so.13 lacks cublasSgemmStridedBatched;
//   - good/libcublas.so.12 needs good/libcublasLt.so.12 and has no rpath (as a pip
//     wheel's library seen from outside the loader's path);
//   - alone/libcublas.so.12 is the same library without its libcublasLt beside it.
func fakeCublasLayout(t *testing.T) (bad, good, alone string) {
	t.Helper()
	root := t.TempDir()
	for _, d := range []string{"bad", "good", "alone"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bad = buildFake(t, filepath.Join(root, "bad"), "libcublas.so.13", "testdata/fakecublas.c", "-DFAKE_OMIT_STRIDED")
	goodDir := filepath.Join(root, "good")
	buildFake(t, goodDir, "libcublasLt.so.12", "testdata/fakecublaslt.c", "-Wl,-soname,libcublasLt.so.12")
	good = buildFake(t, goodDir, "libcublas.so.12", "testdata/fakecublas.c",
		"-DFAKE_NEED_LT", "-DFAKE_VERSION=120804", "-L"+goodDir, "-l:libcublasLt.so.12")
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	alone = filepath.Join(root, "alone", "libcublas.so.12")
	if err := os.WriteFile(alone, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return bad, good, alone
}

func TestCublasLoader(t *testing.T) {
	bad, good, alone := fakeCublasLayout(t)
	missing := filepath.Join(filepath.Dir(bad), "libcublas.so.11")

	// The ones that cannot work, each with its reason. (alone is tried before good:
	// once good's libcublasLt is loaded, the loader would reuse it for alone too.)
	_, err := openCublasFrom([]string{missing, bad, alone})
	if err == nil {
		t.Fatal("loading from unusable libraries succeeded")
	}
	for _, want := range []string{
		missing + ": ", "No such file",
		bad + ": symbol not found: cublasSgemmStridedBatched",
		alone + ": ", "libcublasLt.so.12",
		"scripts/gpu-run.sh",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q:\n%v", want, err)
		}
	}

	// The first usable one wins; its libcublasLt is found beside it.
	l, err := openCublasFrom([]string{missing, bad, good})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := l.close(); err != nil {
			t.Error(err)
		}
	}()
	if l.path != good || l.version != 120804 {
		t.Fatalf("loaded %s version %d, want %s version 120804", l.path, l.version, good)
	}
}

// TestCublasSgemmThroughTheCABI runs the driver's SGEMMs through the real C glue and a
// column-major stand-in for cuBLAS (which also checks the leading dimensions the way
// cuBLAS does and that the handle uses default math on a stream of its own with a
// workspace of its own), against the row-major product computed from its definition.
func TestCublasSgemmThroughTheCABI(t *testing.T) {
	_, good, _ := fakeCublasLayout(t)
	l, err := openCublasFrom([]string{good})
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	ptr := func(s []float32) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(s)) }
	one := make([]float32, 16)
	if err := l.sgemm(false, false, 1, 1, 1, 1, ptr(one), 1, ptr(one), 1, 0, ptr(one), 1); err == nil {
		t.Fatal("an SGEMM on the default stream without a workspace ran")
	}
	stream, ws := make([]byte, 8), make([]byte, 1024) // the fake only checks that they are set
	if err := l.bind(unsafe.Pointer(&stream[0]), unsafe.Pointer(&ws[0]), len(ws)); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 6))
	cases := []struct {
		transA, transB bool
		m, n, k, pad   int
		alpha, beta    float32
	}{
		{false, false, 5, 7, 3, 0, 1, 0},
		{true, false, 4, 6, 9, 2, 0.5, 1},
		{false, true, 6, 2, 5, 1, -1, 0.25},
		{true, true, 3, 8, 4, 3, 2, -1},
		{false, false, 1, 1, 1, 0, 1, 1},
	}
	for _, tc := range cases {
		rowsA, colsA := tc.m, tc.k
		if tc.transA {
			rowsA, colsA = tc.k, tc.m
		}
		rowsB, colsB := tc.k, tc.n
		if tc.transB {
			rowsB, colsB = tc.n, tc.k
		}
		lda, ldb, ldc := colsA+tc.pad, colsB+tc.pad, tc.n+tc.pad
		a, b, c := randSlice(r, rowsA*lda), randSlice(r, rowsB*ldb), randSlice(r, tc.m*ldc)
		want := refRowMajor(tc.transA, tc.transB, tc.m, tc.n, tc.k, float64(tc.alpha), a, lda, b, ldb, float64(tc.beta), c, ldc)
		if err := l.sgemm(tc.transA, tc.transB, tc.m, tc.n, tc.k, tc.alpha, ptr(a), lda, ptr(b), ldb, tc.beta, ptr(c), ldc); err != nil {
			t.Fatalf("%+v: %v", tc, err)
		}
		for i := range c {
			if math.Abs(float64(c[i])-want[i]) > 1e-5*(1+math.Abs(want[i])) {
				t.Fatalf("%+v: C[%d] = %g, want %g", tc, i, c[i], want[i])
			}
		}

		// The same product three times as a strided batch, A shared (stride 0).
		const batch = 3
		strideB, strideC := rowsB*ldb, tc.m*ldc+1
		bs, cs := randSlice(r, batch*strideB), randSlice(r, batch*strideC)
		var wants [][]float64
		for i := 0; i < batch; i++ {
			wants = append(wants, refRowMajor(tc.transA, tc.transB, tc.m, tc.n, tc.k, float64(tc.alpha), a, lda,
				bs[i*strideB:], ldb, float64(tc.beta), cs[i*strideC:i*strideC+tc.m*ldc], ldc))
		}
		if err := l.sgemmStridedBatched(tc.transA, tc.transB, tc.m, tc.n, tc.k, tc.alpha, ptr(a), lda, 0,
			ptr(bs), ldb, strideB, tc.beta, ptr(cs), ldc, strideC, batch); err != nil {
			t.Fatalf("%+v strided: %v", tc, err)
		}
		for i, w := range wants {
			for j := range w {
				if got := cs[i*strideC+j]; math.Abs(float64(got)-w[j]) > 1e-5*(1+math.Abs(w[j])) {
					t.Fatalf("%+v strided: C_%d[%d] = %g, want %g", tc, i, j, got, w[j])
				}
			}
		}
	}

	// Bad arguments stop before cuBLAS, with the caller's names.
	x := make([]float32, 16)
	if err := l.sgemm(false, false, 2, 2, 2, 1, ptr(x), 1, ptr(x), 2, 0, ptr(x), 2); err == nil || !strings.Contains(err.Error(), "lda = 1 < 2") {
		t.Errorf("lda too small: %v", err)
	}
	if err := l.sgemm(false, false, 2, 2, 2, 1, ptr(x), 2, ptr(x), 2, 0, nil, 2); err == nil || !strings.Contains(err.Error(), "C is nil") {
		t.Errorf("nil C: %v", err)
	}
}
