package cuda

// cuBLAS, loaded at run time with dlopen and never linked: the build machine's cuBLAS
// (Debian's CUDA 11.8) has versioned symbols that the GPU hosts' CUDA 12/13 libraries
// do not export, and the binary must run on either. Only the handful of entry points
// below are used, declared here with plain C types so that no cuBLAS header is needed.
// This file needs neither CUDA headers nor a GPU, so it is built everywhere and tested
// against a stand-in library (testdata/fakecublas.c); the GPU driver (gpu.go, build
// tag dpfil_cuda) is its user.

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

typedef int (*dpfil_cublasCreate_t)(void **handle);
typedef int (*dpfil_cublasDestroy_t)(void *handle);
typedef int (*dpfil_cublasSetStream_t)(void *handle, void *stream);
typedef int (*dpfil_cublasSetWorkspace_t)(void *handle, void *ws, size_t bytes);
typedef int (*dpfil_cublasSetMathMode_t)(void *handle, int mode);
typedef int (*dpfil_cublasGetVersion_t)(void *handle, int *version);
typedef int (*dpfil_cublasSgemm_t)(void *handle, int transa, int transb, int m, int n, int k,
	const float *alpha, const float *A, int lda, const float *B, int ldb,
	const float *beta, float *C, int ldc);
typedef int (*dpfil_cublasSgemmStridedBatched_t)(void *handle, int transa, int transb,
	int m, int n, int k, const float *alpha, const float *A, int lda, long long strideA,
	const float *B, int ldb, long long strideB, const float *beta, float *C, int ldc,
	long long strideC, int batchCount);

typedef struct {
	void *lib, *lt;
	dpfil_cublasCreate_t create;
	dpfil_cublasDestroy_t destroy;
	dpfil_cublasSetStream_t setStream;
	dpfil_cublasSetWorkspace_t setWorkspace;
	dpfil_cublasSetMathMode_t setMathMode;
	dpfil_cublasGetVersion_t getVersion;
	dpfil_cublasSgemm_t sgemm;
	dpfil_cublasSgemmStridedBatched_t sgemmStridedBatched;
	void *handle;
} dpfil_cublas;

// dpfil_cublas_open loads the library at path (after ltPath, globally, when not
// NULL) and resolves the entry points. On failure it returns NULL and copies the
// reason into err.
static dpfil_cublas *dpfil_cublas_open(const char *path, const char *ltPath, char *err, size_t errlen) {
	void *lt = NULL;
	if (ltPath != NULL) lt = dlopen(ltPath, RTLD_NOW | RTLD_GLOBAL); // optional
	dlerror();
	void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (lib == NULL) {
		const char *e = dlerror();
		strncpy(err, e ? e : "dlopen failed", errlen - 1);
		err[errlen - 1] = 0;
		if (lt) dlclose(lt);
		return NULL;
	}
	dpfil_cublas *b = calloc(1, sizeof(dpfil_cublas));
	if (b == NULL) {
		strncpy(err, "out of memory", errlen - 1);
		dlclose(lib);
		if (lt) dlclose(lt);
		return NULL;
	}
	b->lib = lib;
	b->lt = lt;
	const char *missing = NULL;
#define DPFIL_SYM(field, sym) \
	if ((b->field = (void *)dlsym(lib, sym)) == NULL && missing == NULL) missing = sym;
	DPFIL_SYM(create, "cublasCreate_v2")
	DPFIL_SYM(destroy, "cublasDestroy_v2")
	DPFIL_SYM(setStream, "cublasSetStream_v2")
	DPFIL_SYM(setWorkspace, "cublasSetWorkspace_v2")
	DPFIL_SYM(setMathMode, "cublasSetMathMode")
	DPFIL_SYM(getVersion, "cublasGetVersion_v2")
	DPFIL_SYM(sgemm, "cublasSgemm_v2")
	DPFIL_SYM(sgemmStridedBatched, "cublasSgemmStridedBatched")
#undef DPFIL_SYM
	if (missing != NULL) {
		strncpy(err, "symbol not found: ", errlen - 1);
		strncat(err, missing, errlen - 1 - strlen(err));
		dlclose(lib);
		if (lt) dlclose(lt);
		free(b);
		return NULL;
	}
	return b;
}

// The libraries stay loaded after close: unloading a library that embeds the CUDA
// runtime can crash at thread exit, and a process keeps at most one handle's worth.
static void dpfil_cublas_close(dpfil_cublas *b) { free(b); }

static int dpfil_cublas_create(dpfil_cublas *b) { return b->create(&b->handle); }
static int dpfil_cublas_destroy(dpfil_cublas *b) {
	int s = b->destroy(b->handle);
	b->handle = NULL;
	return s;
}
static int dpfil_cublas_set_stream(dpfil_cublas *b, void *stream) { return b->setStream(b->handle, stream); }
static int dpfil_cublas_set_workspace(dpfil_cublas *b, void *ws, size_t n) { return b->setWorkspace(b->handle, ws, n); }
static int dpfil_cublas_set_math_mode(dpfil_cublas *b, int mode) { return b->setMathMode(b->handle, mode); }
static int dpfil_cublas_version(dpfil_cublas *b, int *v) { return b->getVersion(b->handle, v); }

static int dpfil_cublas_sgemm(dpfil_cublas *b, int ta, int tb, int m, int n, int k, float alpha,
		const void *A, int lda, const void *B, int ldb, float beta, void *C, int ldc) {
	return b->sgemm(b->handle, ta, tb, m, n, k, &alpha, (const float *)A, lda,
		(const float *)B, ldb, &beta, (float *)C, ldc);
}

static int dpfil_cublas_sgemm_strided(dpfil_cublas *b, int ta, int tb, int m, int n, int k, float alpha,
		const void *A, int lda, long long sA, const void *B, int ldb, long long sB,
		float beta, void *C, int ldc, long long sC, int batch) {
	return b->sgemmStridedBatched(b->handle, ta, tb, m, n, k, &alpha, (const float *)A, lda, sA,
		(const float *)B, ldb, sB, &beta, (float *)C, ldc, sC, batch);
}
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"unsafe"
)

// cublasDefaultMath is CUBLAS_DEFAULT_MATH: true fp32, no TF32 tensor-core shortcuts
// (the backend is checked to 1e-4 relative against float64; TF32 keeps 10 mantissa
// bits).
const cublasDefaultMath = 0

// cublas is a loaded cuBLAS with one handle, bound to the context that was current
// when it was created (the device's primary context) and to the legacy default
// stream, on which the driver also launches its kernels, so GEMMs and kernels run in
// issue order.
type cublas struct {
	b       *C.dpfil_cublas
	path    string
	version int
}

// openCublas loads the first usable cuBLAS of cublasSearch and creates its handle.
// The caller holds the OS thread with the device's context current.
func openCublas() (*cublas, error) {
	return openCublasFrom(cublasSearch(os.Getenv, filepath.Glob))
}

// openCublasFrom loads the first library of tried that dlopens, has every entry point
// and creates a handle.
func openCublasFrom(tried []string) (*cublas, error) {
	reasons := make([]string, len(tried))
	errBuf := (*C.char)(C.calloc(1024, 1))
	defer C.free(unsafe.Pointer(errBuf))
	for i, path := range tried {
		cpath := C.CString(path)
		var clt *C.char
		if lt := cublasLtSibling(path); lt != "" {
			clt = C.CString(lt)
		}
		b := C.dpfil_cublas_open(cpath, clt, errBuf, 1024)
		C.free(unsafe.Pointer(cpath))
		if clt != nil {
			C.free(unsafe.Pointer(clt))
		}
		if b == nil {
			reasons[i] = C.GoString(errBuf)
			continue
		}
		lib := &cublas{b: b, path: path}
		if err := lib.init(); err != nil {
			C.dpfil_cublas_close(b)
			reasons[i] = err.Error()
			continue
		}
		return lib, nil
	}
	return nil, cublasNotFound(tried, reasons)
}

// init creates the handle, binds it to the default stream (until bind), selects true
// fp32 math and reads the version.
func (l *cublas) init() error {
	if s := C.dpfil_cublas_create(l.b); s != 0 {
		return fmt.Errorf("cublasCreate: %s", cublasStatusString(int(s)))
	}
	var v C.int
	var err error
	if s := C.dpfil_cublas_set_stream(l.b, nil); s != 0 {
		err = fmt.Errorf("cublasSetStream: %s", cublasStatusString(int(s)))
	} else if s := C.dpfil_cublas_set_math_mode(l.b, cublasDefaultMath); s != 0 {
		err = fmt.Errorf("cublasSetMathMode(CUBLAS_DEFAULT_MATH): %s", cublasStatusString(int(s)))
	} else if s := C.dpfil_cublas_version(l.b, &v); s != 0 {
		err = fmt.Errorf("cublasGetVersion: %s", cublasStatusString(int(s)))
	}
	if err != nil {
		C.dpfil_cublas_destroy(l.b)
		return err
	}
	l.version = int(v)
	return nil
}

// close destroys the handle and unloads the library. The caller holds the OS thread
// with the context current.
// bind binds the handle to the driver's stream and gives it its own workspace of
// bytes device memory (cublasSetWorkspace_v2), so that GEMMs are ordered with the
// driver's kernels, can be captured into a CUDA graph, and never make cuBLAS
// allocate (which a capture forbids).
func (l *cublas) bind(stream, ws unsafe.Pointer, bytes int) error {
	if s := C.dpfil_cublas_set_stream(l.b, stream); s != 0 {
		return fmt.Errorf("cublasSetStream: %s", cublasStatusString(int(s)))
	}
	if s := C.dpfil_cublas_set_workspace(l.b, ws, C.size_t(bytes)); s != 0 {
		return fmt.Errorf("cublasSetWorkspace: %s", cublasStatusString(int(s)))
	}
	return nil
}

// cublasWorkspaceBytes is the workspace dpfil gives cuBLAS: 32 MiB, what NVIDIA
// recommends for Hopper.
const cublasWorkspaceBytes = 32 << 20

func (l *cublas) close() error {
	var err error
	if s := C.dpfil_cublas_destroy(l.b); s != 0 {
		err = fmt.Errorf("cublasDestroy: %s", cublasStatusString(int(s)))
	}
	C.dpfil_cublas_close(l.b)
	l.b = nil
	return err
}

// sgemm runs the row-major SGEMM of Driver.Sgemm.
func (l *cublas) sgemm(transA, transB bool, m, n, k int, alpha float32, a unsafe.Pointer, lda int, b unsafe.Pointer, ldb int, beta float32, c unsafe.Pointer, ldc int) error {
	g, err := colMajorGemm(transA, transB, m, n, k, lda, ldb, ldc)
	if err != nil {
		return err
	}
	if err := checkGemmPointers(m, n, k, a, b, c); err != nil {
		return err
	}
	s := C.dpfil_cublas_sgemm(l.b, C.int(cublasOp(g.TransFirst)), C.int(cublasOp(g.TransSecond)),
		C.int(g.M), C.int(g.N), C.int(g.K), C.float(alpha),
		b, C.int(g.LdFirst), a, C.int(g.LdSecond), C.float(beta), c, C.int(g.Ldc))
	if s != 0 {
		return fmt.Errorf("cublasSgemm: %s", cublasStatusString(int(s)))
	}
	return nil
}

// sgemmStridedBatched runs batch row-major SGEMMs (see GPU.SgemmStridedBatched).
func (l *cublas) sgemmStridedBatched(transA, transB bool, m, n, k int, alpha float32, a unsafe.Pointer, lda, strideA int, b unsafe.Pointer, ldb, strideB int, beta float32, c unsafe.Pointer, ldc, strideC, batch int) error {
	g, err := colMajorGemmStrided(transA, transB, m, n, k, lda, strideA, ldb, strideB, ldc, strideC, batch)
	if err != nil {
		return err
	}
	if batch == 0 {
		return nil
	}
	if err := checkGemmPointers(m, n, k, a, b, c); err != nil {
		return err
	}
	s := C.dpfil_cublas_sgemm_strided(l.b, C.int(cublasOp(g.TransFirst)), C.int(cublasOp(g.TransSecond)),
		C.int(g.M), C.int(g.N), C.int(g.K), C.float(alpha),
		b, C.int(g.LdFirst), C.longlong(g.StrideFirst),
		a, C.int(g.LdSecond), C.longlong(g.StrideSecond),
		C.float(beta), c, C.int(g.Ldc), C.longlong(g.StrideC), C.int(g.Batch))
	if s != 0 {
		return fmt.Errorf("cublasSgemmStridedBatched: %s", cublasStatusString(int(s)))
	}
	return nil
}

// checkGemmPointers rejects null matrices that the product would read or write.
func checkGemmPointers(m, n, k int, a, b, c unsafe.Pointer) error {
	if m == 0 || n == 0 {
		return nil
	}
	if c == nil {
		return errors.New("sgemm: C is nil")
	}
	if k > 0 && (a == nil || b == nil) {
		return errors.New("sgemm: A or B is nil")
	}
	return nil
}
