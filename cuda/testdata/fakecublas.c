// A stand-in for libcublas with the eight entry points dpfil's loader resolves, for
// testing cublas.go without a GPU (cublas_test.go compiles it with gcc). Its SGEMMs
// are the reference column-major BLAS on host memory, with cuBLAS's argument checks,
// and they refuse to run unless the handle was set up as dpfil must set it up: math
// mode CUBLAS_DEFAULT_MATH (no TF32), bound to dpfil's own stream (not the legacy
// default stream, NULL, which a CUDA graph cannot capture) and given its own
// workspace (cublasSetWorkspace_v2, so that cuBLAS allocates nothing while a graph
// is captured).
//
//   -DFAKE_VERSION=N     what cublasGetVersion_v2 reports
//   -DFAKE_OMIT_STRIDED  leave cublasSgemmStridedBatched out (a "missing symbol" library)
//   -DFAKE_NEED_LT       call into libcublasLt (link with -lcublasLt), as the real one does

#include <stdlib.h>

#ifndef FAKE_VERSION
#define FAKE_VERSION 120804
#endif

#ifdef FAKE_NEED_LT
int cublasLtFakeOne(void);
#endif

typedef struct {
	int math;       // -1 until cublasSetMathMode
	int stream_set; // cublasSetStream_v2 was called
	void *stream;
	void *ws; // cublasSetWorkspace_v2
	size_t ws_bytes;
} fake_handle;

enum { OK = 0, NOT_INITIALIZED = 1, ALLOC_FAILED = 3, INVALID_VALUE = 7 };

int cublasCreate_v2(void **h) {
	fake_handle *x = calloc(1, sizeof *x);
	if (x == NULL) return ALLOC_FAILED;
	x->math = -1;
	*h = x;
	return OK;
}

int cublasDestroy_v2(void *h) {
	free(h);
	return OK;
}

int cublasSetStream_v2(void *h, void *stream) {
	fake_handle *x = h;
	x->stream_set = 1;
	x->stream = stream;
	return OK;
}

int cublasSetWorkspace_v2(void *h, void *ws, size_t bytes) {
	fake_handle *x = h;
	if (ws == NULL || bytes == 0) return INVALID_VALUE;
	x->ws = ws;
	x->ws_bytes = bytes;
	return OK;
}

int cublasSetMathMode(void *h, int mode) {
	((fake_handle *)h)->math = mode;
	return OK;
}

int cublasGetVersion_v2(void *h, int *v) {
	(void)h;
	*v = FAKE_VERSION;
#ifdef FAKE_NEED_LT
	*v += cublasLtFakeOne() - 1;
#endif
	return OK;
}

static int imax(int a, int b) { return a > b ? a : b; }

static int check(const fake_handle *x, int ta, int tb, int m, int n, int k, int lda, int ldb, int ldc) {
	if (x->math != 0 || !x->stream_set || x->stream == NULL || x->ws == NULL) return NOT_INITIALIZED;
	if (ta < 0 || ta > 1 || tb < 0 || tb > 1 || m < 0 || n < 0 || k < 0) return INVALID_VALUE;
	if (lda < imax(1, ta ? k : m) || ldb < imax(1, tb ? n : k) || ldc < imax(1, m)) return INVALID_VALUE;
	return OK;
}

static void gemm(int ta, int tb, int m, int n, int k, float alpha, const float *A, int lda,
                 const float *B, int ldb, float beta, float *C, int ldc) {
	for (int j = 0; j < n; j++) {
		for (int i = 0; i < m; i++) {
			double s = 0;
			for (int l = 0; l < k; l++) {
				double a = ta ? A[l + (long)i * lda] : A[i + (long)l * lda];
				double b = tb ? B[j + (long)l * ldb] : B[l + (long)j * ldb];
				s += a * b;
			}
			float *c = &C[i + (long)j * ldc];
			*c = (float)(alpha * s + (beta == 0 ? 0.0 : (double)beta * *c));
		}
	}
}

int cublasSgemm_v2(void *h, int ta, int tb, int m, int n, int k, const float *alpha,
                   const float *A, int lda, const float *B, int ldb, const float *beta,
                   float *C, int ldc) {
	int s = check(h, ta, tb, m, n, k, lda, ldb, ldc);
	if (s != OK) return s;
	gemm(ta, tb, m, n, k, *alpha, A, lda, B, ldb, *beta, C, ldc);
	return OK;
}

#ifndef FAKE_OMIT_STRIDED
int cublasSgemmStridedBatched(void *h, int ta, int tb, int m, int n, int k, const float *alpha,
                              const float *A, int lda, long long sA, const float *B, int ldb,
                              long long sB, const float *beta, float *C, int ldc, long long sC,
                              int batch) {
	int s = check(h, ta, tb, m, n, k, lda, ldb, ldc);
	if (s != OK) return s;
	if (batch < 0) return INVALID_VALUE;
	for (int i = 0; i < batch; i++)
		gemm(ta, tb, m, n, k, *alpha, A + i * sA, lda, B + i * sB, ldb, *beta, C + i * sC, ldc);
	return OK;
}
#endif
