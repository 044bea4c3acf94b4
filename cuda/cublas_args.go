package cuda

// The pure parts of the GPU driver's cuBLAS binding (cublas.go, build tag cuda): the
// row-major → column-major argument mapping, the library search order and the status
// and version decoding. They need neither cgo nor a GPU, so they are built and tested
// everywhere.

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// cublasGemm is one column-major cuBLAS SGEMM call: C = alpha·op(First)·op(Second) + beta·C
// with op(First) m×k, op(Second) k×n, all column-major. For a row-major call First is the
// caller's B and Second the caller's A (see colMajorGemm).
type cublasGemm struct {
	TransFirst, TransSecond bool
	M, N, K                 int
	LdFirst, LdSecond, Ldc  int
	// Element strides between consecutive matrices of a strided-batched call.
	StrideFirst, StrideSecond, StrideC int
	Batch                              int
}

// cublasOp returns the cublasOperation_t for a transpose flag (CUBLAS_OP_N = 0,
// CUBLAS_OP_T = 1).
func cublasOp(trans bool) int {
	if trans {
		return 1
	}
	return 0
}

// colMajorGemm maps the row-major SGEMM C = alpha·op(A)·op(B) + beta·C (op(A) m×k,
// op(B) k×n, C m×n, leading dimensions lda, ldb, ldc in elements) onto column-major
// cuBLAS. A row-major matrix with leading dimension ld is, read column-major, its own
// transpose with the same ld, so the call is Cᵀ = alpha·op(B)ᵀ·op(A)ᵀ + beta·Cᵀ:
// sgemm(opB, opA, n, m, k, alpha, B, ldb, A, lda, beta, C, ldc). It checks the sizes
// the way cuBLAS would, but reports them in the caller's row-major terms.
func colMajorGemm(transA, transB bool, m, n, k, lda, ldb, ldc int) (cublasGemm, error) {
	for _, d := range []struct {
		name string
		v    int
	}{{"m", m}, {"n", n}, {"k", k}, {"lda", lda}, {"ldb", ldb}, {"ldc", ldc}} {
		if d.v < 0 || d.v > math.MaxInt32 {
			return cublasGemm{}, fmt.Errorf("sgemm: %s = %d is outside [0, 2^31)", d.name, d.v)
		}
	}
	colsA, colsB := k, n // columns of A and B as stored (row-major)
	if transA {
		colsA = m
	}
	if transB {
		colsB = k
	}
	if lda < max(1, colsA) {
		return cublasGemm{}, fmt.Errorf("sgemm: lda = %d < %d (columns of A as stored, transA = %v)", lda, max(1, colsA), transA)
	}
	if ldb < max(1, colsB) {
		return cublasGemm{}, fmt.Errorf("sgemm: ldb = %d < %d (columns of B as stored, transB = %v)", ldb, max(1, colsB), transB)
	}
	if ldc < max(1, n) {
		return cublasGemm{}, fmt.Errorf("sgemm: ldc = %d < n = %d", ldc, max(1, n))
	}
	return cublasGemm{
		TransFirst: transB, TransSecond: transA,
		M: n, N: m, K: k,
		LdFirst: ldb, LdSecond: lda, Ldc: ldc,
		Batch: 1,
	}, nil
}

// colMajorGemmStrided is colMajorGemm for a strided batch: matrix i of A, B and C
// starts strideA·i, strideB·i and strideC·i elements after the first. A and B may be
// shared (stride 0); the C matrices must not overlap.
func colMajorGemmStrided(transA, transB bool, m, n, k, lda, strideA, ldb, strideB, ldc, strideC, batch int) (cublasGemm, error) {
	g, err := colMajorGemm(transA, transB, m, n, k, lda, ldb, ldc)
	if err != nil {
		return g, err
	}
	if batch < 0 || batch > math.MaxInt32 {
		return cublasGemm{}, fmt.Errorf("sgemm strided batched: batch = %d is outside [0, 2^31)", batch)
	}
	if strideA < 0 || strideB < 0 || strideC < 0 {
		return cublasGemm{}, fmt.Errorf("sgemm strided batched: negative stride (A %d, B %d, C %d)", strideA, strideB, strideC)
	}
	if batch > 1 && m > 0 && n > 0 {
		if span := (m-1)*ldc + n; strideC < span {
			return cublasGemm{}, fmt.Errorf("sgemm strided batched: strideC = %d < %d, the C matrices would overlap", strideC, span)
		}
	}
	g.StrideFirst, g.StrideSecond, g.StrideC, g.Batch = strideB, strideA, strideC, batch
	return g, nil
}

// cublasSonames are the cuBLAS libraries tried by name (the dynamic loader's search:
// LD_LIBRARY_PATH, which scripts/gpu-run.sh sets, then the ld.so cache), newest first.
func cublasSonames() []string {
	return []string{"libcublas.so.13", "libcublas.so.12", "libcublas.so.11", "libcublas.so"}
}

// cublasPipDirs are glob patterns of the folders where pip wheels put NVIDIA's
// libraries: nvidia/cu13/lib for the CUDA 13 wheels, nvidia/cublas/lib for CUDA 11/12.
// "~" stands for $HOME.
func cublasPipDirs() []string {
	return []string{
		"/opt/*/.venv/lib/python3*/site-packages/nvidia/*/lib",
		"/usr/local/lib/python3*/dist-packages/nvidia/*/lib",
		"/usr/local/lib/python3*/site-packages/nvidia/*/lib",
		"/usr/lib/python3/dist-packages/nvidia/*/lib",
		"/usr/lib/python3*/site-packages/nvidia/*/lib",
		"~/.local/lib/python3*/site-packages/nvidia/*/lib",
		"/usr/local/cuda/lib64",
	}
}

// cublasSearch lists the libraries OpenGPU tries to dlopen, in order: the file named
// by $DPFIL_CUBLAS, the sonames, then every libcublas.so.{13,12,11} found by glob in
// $VIRTUAL_ENV's and the usual pip folders (newest major version first, then by path).
// getenv and glob are os.Getenv and filepath.Glob outside tests.
func cublasSearch(getenv func(string) string, glob func(string) ([]string, error)) []string {
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if p != "" && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	add(getenv("DPFIL_CUBLAS"))
	for _, s := range cublasSonames() {
		add(s)
	}
	dirs := cublasPipDirs()
	if venv := getenv("VIRTUAL_ENV"); venv != "" {
		dirs = append([]string{filepath.Join(venv, "lib/python3*/site-packages/nvidia/*/lib")}, dirs...)
	}
	type found struct {
		path  string
		major int
	}
	var libs []found
	for _, d := range dirs {
		if strings.HasPrefix(d, "~/") {
			home := getenv("HOME")
			if home == "" {
				continue
			}
			d = filepath.Join(home, d[2:])
		}
		matches, err := glob(filepath.Join(d, "libcublas.so.*"))
		if err != nil {
			continue // only ErrBadPattern, impossible for these patterns
		}
		for _, p := range matches {
			if major := cublasMajor(filepath.Base(p)); major >= 11 && major <= 13 {
				libs = append(libs, found{p, major})
			}
		}
	}
	sort.SliceStable(libs, func(i, j int) bool {
		if libs[i].major != libs[j].major {
			return libs[i].major > libs[j].major
		}
		return libs[i].path < libs[j].path
	})
	for _, l := range libs {
		add(l.path)
	}
	return out
}

// cublasMajor returns N for a file named exactly libcublas.so.N, else -1 (so full
// versions such as libcublas.so.12.4.5.8 and libcublasLt are skipped: the soname link
// is what the wheels and toolkits ship).
func cublasMajor(base string) int {
	rest, ok := strings.CutPrefix(base, "libcublas.so.")
	if !ok {
		return -1
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 0 {
		return -1
	}
	return n
}

// cublasLtSibling returns the libcublasLt that a libcublas at path needs, in the same
// folder (libcublas.so.N → libcublasLt.so.N), or "" for a bare soname, which the
// loader resolves by itself. OpenGPU loads it first, globally, so that a libcublas
// found by glob outside the loader's path finds its libcublasLt.
func cublasLtSibling(path string) string {
	dir, base := filepath.Split(path)
	if dir == "" {
		return ""
	}
	rest, ok := strings.CutPrefix(base, "libcublas.so")
	if !ok {
		return ""
	}
	return filepath.Join(dir, "libcublasLt.so"+rest)
}

// cublasStatusString names a cublasStatus_t.
func cublasStatusString(s int) string {
	switch s {
	case 0:
		return "CUBLAS_STATUS_SUCCESS"
	case 1:
		return "CUBLAS_STATUS_NOT_INITIALIZED"
	case 3:
		return "CUBLAS_STATUS_ALLOC_FAILED"
	case 7:
		return "CUBLAS_STATUS_INVALID_VALUE"
	case 8:
		return "CUBLAS_STATUS_ARCH_MISMATCH"
	case 11:
		return "CUBLAS_STATUS_MAPPING_ERROR"
	case 13:
		return "CUBLAS_STATUS_EXECUTION_FAILED"
	case 14:
		return "CUBLAS_STATUS_INTERNAL_ERROR"
	case 15:
		return "CUBLAS_STATUS_NOT_SUPPORTED"
	case 16:
		return "CUBLAS_STATUS_LICENSE_ERROR"
	}
	return fmt.Sprintf("cublasStatus %d", s)
}

// cublasVersionString decodes cublasGetVersion's integer, major·10000 + minor·100 +
// patch (cuBLAS 11 and later; e.g. 120804 → "12.8.4").
func cublasVersionString(v int) string {
	if v <= 0 {
		return fmt.Sprintf("unknown (%d)", v)
	}
	return fmt.Sprintf("%d.%d.%d", v/10000, v/100%100, v%100)
}

// cublasNotFound is the error when no cuBLAS could be loaded: every path tried and why
// it failed, and what to do about it.
func cublasNotFound(tried, reasons []string) error {
	var b strings.Builder
	b.WriteString("cuda: no usable cuBLAS (libcublas.so.13/.12/.11) found; tried:")
	for i, p := range tried {
		fmt.Fprintf(&b, "\n  %s: %s", p, reasons[i])
	}
	b.WriteString("\nrun through scripts/gpu-run.sh (it puts pip's nvidia/*/lib folders on LD_LIBRARY_PATH)," +
		" set DPFIL_CUBLAS=/path/to/libcublas.so.N, or install it: pip install nvidia-cublas-cu12 (CUDA 12) / nvidia-cublas (CUDA 13)")
	return errors.New(b.String())
}
