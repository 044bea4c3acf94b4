package cuda

import (
	"errors"
	"math"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// refColMajorSgemm is the reference BLAS sgemm (column-major, as netlib's): C =
// alpha·op(A)·op(B) + beta·C with op(A) m×k, op(B) k×n, element (i, j) of a
// column-major X at X[i + j·ld]. It stands in for cuBLAS.
func refColMajorSgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	for j := 0; j < n; j++ {
		for i := 0; i < m; i++ {
			var s float64
			for l := 0; l < k; l++ {
				var av, bv float32
				if transA {
					av = a[l+i*lda] // op(A)(i, l) = A(l, i)
				} else {
					av = a[i+l*lda] // A(i, l)
				}
				if transB {
					bv = b[j+l*ldb]
				} else {
					bv = b[l+j*ldb]
				}
				s += float64(av) * float64(bv)
			}
			c[i+j*ldc] = float32(float64(alpha)*s + float64(beta)*float64(c[i+j*ldc]))
		}
	}
}

// refRowMajor computes the row-major product straight from its definition, in float64.
func refRowMajor(transA, transB bool, m, n, k int, alpha float64, a []float32, lda int, b []float32, ldb int, beta float64, c []float32, ldc int) []float64 {
	out := make([]float64, len(c))
	for i := range c {
		out[i] = float64(c[i])
	}
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s float64
			for l := 0; l < k; l++ {
				var av, bv float32
				if transA {
					av = a[l*lda+i]
				} else {
					av = a[i*lda+l]
				}
				if transB {
					bv = b[j*ldb+l]
				} else {
					bv = b[l*ldb+j]
				}
				s += float64(av) * float64(bv)
			}
			out[i*ldc+j] = alpha*s + beta*float64(c[i*ldc+j])
		}
	}
	return out
}

// runMapped performs a row-major SGEMM the way the GPU driver does: map the arguments
// with colMajorGemm and hand them, with the operands swapped, to a column-major sgemm.
func runMapped(t *testing.T, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	t.Helper()
	g, err := colMajorGemm(transA, transB, m, n, k, lda, ldb, ldc)
	if err != nil {
		t.Fatalf("colMajorGemm: %v", err)
	}
	refColMajorSgemm(g.TransFirst, g.TransSecond, g.M, g.N, g.K, alpha, b, g.LdFirst, a, g.LdSecond, beta, c, g.Ldc)
}

func randSlice(r *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(r.NormFloat64())
	}
	return s
}

func TestColMajorGemmMatchesRowMajor(t *testing.T) {
	cases := []struct {
		name           string
		transA, transB bool
		m, n, k        int
		padA, padB     int // extra leading-dimension padding
		padC           int
		alpha, beta    float32
	}{
		{"NN", false, false, 5, 7, 3, 0, 0, 0, 1, 0},
		{"TN", true, false, 4, 6, 9, 0, 0, 0, 1, 0},
		{"NT", false, true, 6, 2, 5, 0, 0, 0, 1, 0},
		{"TT", true, true, 3, 8, 4, 0, 0, 0, 1, 0},
		{"NN padded, alpha beta", false, false, 5, 4, 6, 3, 2, 5, -0.5, 2},
		{"TT padded, alpha beta", true, true, 7, 3, 2, 1, 4, 1, 1.5, -1},
		{"TN 1x1", true, false, 1, 1, 11, 0, 0, 0, 2, 0.25},
		{"NT k=0 scales C", false, true, 3, 4, 0, 0, 0, 2, 1, 3},
		{"vector", false, false, 1, 9, 4, 0, 0, 0, 1, 1},
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rowsA, colsA := tc.m, tc.k
			if tc.transA {
				rowsA, colsA = tc.k, tc.m
			}
			rowsB, colsB := tc.k, tc.n
			if tc.transB {
				rowsB, colsB = tc.n, tc.k
			}
			lda, ldb, ldc := max(1, colsA)+tc.padA, max(1, colsB)+tc.padB, tc.n+tc.padC
			a := randSlice(r, max(1, rowsA*lda))
			b := randSlice(r, max(1, rowsB*ldb))
			c := randSlice(r, tc.m*ldc)
			want := refRowMajor(tc.transA, tc.transB, tc.m, tc.n, tc.k, float64(tc.alpha), a, lda, b, ldb, float64(tc.beta), c, ldc)
			got := append([]float32(nil), c...)
			runMapped(t, tc.transA, tc.transB, tc.m, tc.n, tc.k, tc.alpha, a, lda, b, ldb, tc.beta, got, ldc)
			for i := range got {
				if d := math.Abs(float64(got[i]) - want[i]); d > 1e-5*(1+math.Abs(want[i])) {
					t.Fatalf("C[%d] = %g, want %g", i, got[i], want[i])
				}
			}
		})
	}
}

func TestColMajorGemmRejectsBadSizes(t *testing.T) {
	cases := []struct {
		name           string
		transA, transB bool
		m, n, k        int
		lda, ldb, ldc  int
		want           string
	}{
		{"negative m", false, false, -1, 2, 2, 2, 2, 2, "m = -1"},
		{"lda too small NN", false, false, 3, 4, 5, 4, 4, 4, "lda = 4 < 5"},
		{"lda too small TN", true, false, 3, 4, 5, 2, 4, 4, "lda = 2 < 3"},
		{"ldb too small NN", false, false, 3, 4, 5, 5, 3, 4, "ldb = 3 < 4"},
		{"ldb too small NT", false, true, 3, 4, 5, 5, 4, 4, "ldb = 4 < 5"},
		{"ldc too small", false, false, 3, 4, 5, 5, 4, 3, "ldc = 3 < n = 4"},
		{"zero ld", false, false, 0, 0, 0, 0, 1, 1, "lda = 0 < 1"},
		{"too large", false, false, 1 << 31, 1, 1, 1, 1, 1, "outside [0, 2^31)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := colMajorGemm(tc.transA, tc.transB, tc.m, tc.n, tc.k, tc.lda, tc.ldb, tc.ldc)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

func TestColMajorGemmStrided(t *testing.T) {
	const m, n, k, batch = 4, 3, 5, 3
	r := rand.New(rand.NewPCG(3, 4))
	// A (transposed, k×m stored) shared by the batch (stride 0), B k×n per item with
	// padding between items, C m×n with ldc 4.
	lda, ldb, ldc := m, n, 4
	strideA, strideB, strideC := 0, k*ldb+2, m*ldc+1
	a := randSlice(r, k*lda)
	b := randSlice(r, batch*strideB)
	c := randSlice(r, batch*strideC)
	g, err := colMajorGemmStrided(true, false, m, n, k, lda, strideA, ldb, strideB, ldc, strideC, batch)
	if err != nil {
		t.Fatal(err)
	}
	if g.StrideFirst != strideB || g.StrideSecond != strideA || g.StrideC != strideC || g.Batch != batch {
		t.Fatalf("strides not mapped with the operands: %+v", g)
	}
	got := append([]float32(nil), c...)
	for i := 0; i < g.Batch; i++ {
		refColMajorSgemm(g.TransFirst, g.TransSecond, g.M, g.N, g.K, 0.5,
			b[i*g.StrideFirst:], g.LdFirst, a[i*g.StrideSecond:], g.LdSecond, 2, got[i*g.StrideC:], g.Ldc)
	}
	for i := 0; i < batch; i++ {
		want := refRowMajor(true, false, m, n, k, 0.5, a[i*strideA:], lda, b[i*strideB:], ldb, 2, c[i*strideC:i*strideC+m*ldc], ldc)
		for j, w := range want {
			if d := math.Abs(float64(got[i*strideC+j]) - w); d > 1e-5*(1+math.Abs(w)) {
				t.Fatalf("batch %d C[%d] = %g, want %g", i, j, got[i*strideC+j], w)
			}
		}
	}
	// The padding word between the C matrices is untouched.
	for i := 0; i < batch; i++ {
		if p := i*strideC + m*ldc; got[p] != c[p] {
			t.Fatalf("padding after C_%d overwritten", i)
		}
	}
}

func TestColMajorGemmStridedRejects(t *testing.T) {
	cases := []struct {
		name                      string
		strideA, strideB, strideC int
		batch                     int
		want                      string
	}{
		{"negative batch", 0, 0, 12, -1, "batch = -1"},
		{"negative stride", -1, 0, 12, 2, "negative stride"},
		{"overlapping C", 0, 0, 11, 2, "strideC = 11 < 12"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := colMajorGemmStrided(false, false, 3, 4, 2, 2, tc.strideA, 4, tc.strideB, 4, tc.strideC, tc.batch)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
	// One matrix may use any strideC.
	if _, err := colMajorGemmStrided(false, false, 3, 4, 2, 2, 0, 4, 0, 4, 0, 1); err != nil {
		t.Fatalf("batch 1 with strideC 0: %v", err)
	}
}

func TestCublasOp(t *testing.T) {
	if cublasOp(false) != 0 || cublasOp(true) != 1 {
		t.Fatal("CUBLAS_OP_N must be 0 and CUBLAS_OP_T 1")
	}
}

func TestCublasSearchOrder(t *testing.T) {
	files := map[string][]string{
		"/opt/venv/.venv/lib/python3.12/site-packages/nvidia/*/lib/libcublas.so.*": nil,
		"/opt/*/.venv/lib/python3*/site-packages/nvidia/*/lib/libcublas.so.*": {
			"/opt/app/.venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcublas.so.13",
			"/opt/app/.venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcublas.so.13.1.0.3",
		},
		"/usr/local/lib/python3*/dist-packages/nvidia/*/lib/libcublas.so.*": {
			"/usr/local/lib/python3.12/dist-packages/nvidia/cublas/lib/libcublas.so.12",
			"/usr/local/lib/python3.12/dist-packages/nvidia/cu13/lib/libcublas.so.13",
		},
		"/home/u/.local/lib/python3*/site-packages/nvidia/*/lib/libcublas.so.*": {
			"/home/u/.local/lib/python3.11/site-packages/nvidia/cublas/lib/libcublas.so.11",
			"/home/u/.local/lib/python3.11/site-packages/nvidia/cublas/lib/libcublas.so.10",
		},
		"/venv/lib/python3*/site-packages/nvidia/*/lib/libcublas.so.*": {
			"/venv/lib/python3.12/site-packages/nvidia/cublas/lib/libcublas.so.12",
			"/venv/lib/python3.12/site-packages/nvidia/cublas/lib/libcublasLt.so.12",
		},
	}
	var globbed []string
	glob := func(p string) ([]string, error) {
		globbed = append(globbed, p)
		return files[p], nil
	}
	env := map[string]string{"DPFIL_CUBLAS": "/x/libcublas.so.12", "HOME": "/home/u", "VIRTUAL_ENV": "/venv"}
	got := cublasSearch(func(k string) string { return env[k] }, glob)
	want := []string{
		"/x/libcublas.so.12",
		"libcublas.so.13", "libcublas.so.12", "libcublas.so.11", "libcublas.so",
		"/opt/app/.venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcublas.so.13",
		"/usr/local/lib/python3.12/dist-packages/nvidia/cu13/lib/libcublas.so.13",
		"/usr/local/lib/python3.12/dist-packages/nvidia/cublas/lib/libcublas.so.12",
		"/venv/lib/python3.12/site-packages/nvidia/cublas/lib/libcublas.so.12",
		"/home/u/.local/lib/python3.11/site-packages/nvidia/cublas/lib/libcublas.so.11",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("search order\n got %q\nwant %q", got, want)
	}
	if globbed[0] != "/venv/lib/python3*/site-packages/nvidia/*/lib/libcublas.so.*" {
		t.Fatalf("$VIRTUAL_ENV not searched first: %q", globbed)
	}
	for _, p := range []string{
		"/opt/*/.venv/lib/python3*/site-packages/nvidia/*/lib/libcublas.so.*",
		"/usr/local/lib/python3*/dist-packages/nvidia/*/lib/libcublas.so.*",
	} {
		found := false
		for _, g := range globbed {
			found = found || g == p
		}
		if !found {
			t.Fatalf("pattern %s not searched: %q", p, globbed)
		}
	}

	// No environment: only the sonames and the fixed folders, and no "~" pattern.
	globbed = nil
	got = cublasSearch(func(string) string { return "" }, func(p string) ([]string, error) {
		globbed = append(globbed, p)
		return nil, nil
	})
	if !reflect.DeepEqual(got, cublasSonames()) {
		t.Fatalf("empty search = %q, want the sonames", got)
	}
	for _, g := range globbed {
		if strings.Contains(g, "~") || !filepath.IsAbs(g) {
			t.Fatalf("relative or ~ pattern globbed: %q", g)
		}
	}
	// A failing glob is skipped, not fatal.
	got = cublasSearch(func(string) string { return "" }, func(string) ([]string, error) { return nil, filepath.ErrBadPattern })
	if len(got) != len(cublasSonames()) {
		t.Fatalf("glob errors changed the result: %q", got)
	}
}

func TestCublasMajorAndLtSibling(t *testing.T) {
	majors := map[string]int{
		"libcublas.so.13": 13, "libcublas.so.12": 12, "libcublas.so.12.4.5.8": -1,
		"libcublasLt.so.12": -1, "libcublas.so": -1, "libcublas.so.x": -1,
	}
	for name, want := range majors {
		if got := cublasMajor(name); got != want {
			t.Errorf("cublasMajor(%q) = %d, want %d", name, got, want)
		}
	}
	siblings := map[string]string{
		"/a/nvidia/cu13/lib/libcublas.so.13": "/a/nvidia/cu13/lib/libcublasLt.so.13",
		"/a/libcublas.so":                    "/a/libcublasLt.so",
		"libcublas.so.12":                    "",
		"/a/libfoo.so":                       "",
	}
	for p, want := range siblings {
		if got := cublasLtSibling(p); got != want {
			t.Errorf("cublasLtSibling(%q) = %q, want %q", p, got, want)
		}
	}
}

func TestCublasStatusAndVersion(t *testing.T) {
	status := map[int]string{0: "CUBLAS_STATUS_SUCCESS", 7: "CUBLAS_STATUS_INVALID_VALUE", 13: "CUBLAS_STATUS_EXECUTION_FAILED", 99: "cublasStatus 99"}
	for s, want := range status {
		if got := cublasStatusString(s); got != want {
			t.Errorf("status %d = %q, want %q", s, got, want)
		}
	}
	versions := map[int]string{120804: "12.8.4", 130100: "13.1.0", 111103: "11.11.3", 0: "unknown (0)"}
	for v, want := range versions {
		if got := cublasVersionString(v); got != want {
			t.Errorf("version %d = %q, want %q", v, got, want)
		}
	}
}

func TestCublasNotFoundSaysWhatWasTriedAndWhatToDo(t *testing.T) {
	err := cublasNotFound([]string{"libcublas.so.13", "/p/libcublas.so.12"}, []string{"cannot open shared object file", "symbol not found: cublasSgemm_v2"})
	var msg string
	if err != nil {
		msg = err.Error()
	}
	for _, want := range []string{"libcublas.so.13: cannot open", "/p/libcublas.so.12: symbol not found", "scripts/gpu-run.sh", "DPFIL_CUBLAS", "pip install nvidia-cublas-cu12"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not mention %q", msg, want)
		}
	}
	if errors.Unwrap(err) != nil {
		t.Errorf("unexpected wrapped error")
	}
}
