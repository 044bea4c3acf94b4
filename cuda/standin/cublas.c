// The stand-in's cuBLAS: cuda/testdata/fakecublas.c (cuBLAS's argument checks, and the
// handle set up as dpfil must set it up: default math, dpfil's own stream, its own
// workspace), made stream-ordered on the stand-in libcuda.so.1: a GEMM is queued on
// (or, while it captures, recorded by) the handle's stream, and the workspace must be
// live device memory. An SGEMM is checked when it is called
// (its handle's context must be current on the calling thread, and every operand it
// reads or writes must lie inside one live device allocation: a host or Go pointer is
// refused) and queued on the stand-in's stream; it runs at the next synchronising
// call, so a host read of C before the sync crashes like any other.
//
// DPFIL_STANDIN_GEMM=fp32 (default) accumulates each dot product in float with fused
// multiply-adds, as a GPU does; =fp64 uses fakecublas.c's double accumulation.
#define cublasCreate_v2 fakehost_cublasCreate_v2
#define cublasDestroy_v2 fakehost_cublasDestroy_v2
#define cublasSgemm_v2 fakehost_cublasSgemm_v2
#define cublasSgemmStridedBatched fakehost_cublasSgemmStridedBatched
#include "../testdata/fakecublas.c"
#undef cublasCreate_v2
#undef cublasDestroy_v2
#undef cublasSgemm_v2
#undef cublasSgemmStridedBatched

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

// From the stand-in libcuda.so.1 (driver.c).
int cuCtxGetCurrent(void **ctx);
int dpfil_standin_enqueue(const char *what, void *stream, void (*fn)(void *, int), void *arg, int n,
			  const char *const *names, const uintptr_t *base, const uint64_t *bytes);
void *dpfil_standin_device_view(const void *p);
int dpfil_standin_ctx_live(const void *ctx);

// The context the CUDA runtime inside cuBLAS adopted: the one current at the process's
// first cublasCreate. The real runtime keeps its state for that context for the rest
// of the process; the stand-in adopts it without retaining it, so a driver that
// releases the primary context to zero (destroying it) while cuBLAS may still use
// it is caught at cuBLAS's next call, even after a new primary context was made.
static void *rt_ctx;

// adopted_live reports whether cuBLAS's adopted context is alive; what names the call.
static int adopted_live(const char *what) {
	void *c = __atomic_load_n(&rt_ctx, __ATOMIC_ACQUIRE);
	if (c == NULL || dpfil_standin_ctx_live(c)) return 1;
	fprintf(stderr,
		"dpfil stand-in cuBLAS: %s after the context cuBLAS adopted at its first cublasCreate was released and "
		"destroyed (the primary context must stay retained while cuBLAS is loaded)\n",
		what);
	return 0;
}

enum { EXECUTION_FAILED = 13 };

typedef struct {
	fake_handle base; // first: fakecublas.c's functions take the handle as a fake_handle
	void *ctx;        // the context current when the handle was created
} si_handle;

int cublasCreate_v2(void **h) {
	si_handle *x = calloc(1, sizeof *x);
	if (x == NULL) return ALLOC_FAILED;
	x->base.math = -1;
	if (cuCtxGetCurrent(&x->ctx) != 0 || x->ctx == NULL) {
		fprintf(stderr, "dpfil stand-in cuBLAS: cublasCreate without a current context\n");
		free(x);
		return NOT_INITIALIZED;
	}
	if (!adopted_live("cublasCreate")) {
		free(x);
		return NOT_INITIALIZED;
	}
	void *none = NULL; // the first cublasCreate of the process adopts its context
	__atomic_compare_exchange_n(&rt_ctx, &none, x->ctx, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
	*h = x;
	return OK;
}

int cublasDestroy_v2(void *h) {
	free(h);
	return OK;
}

typedef struct {
	int ta, tb, m, n, k, lda, ldb, ldc, batch;
	float alpha, beta;
	const float *A, *B;
	float *C;
	long long sA, sB, sC;
} gemm_job;

// With hardware FMA where the CPU has it (glibc's software fmaf is slow).
__attribute__((target_clones("fma", "default"))) static void gemm32(int ta, int tb, int m, int n, int k, float alpha, const float *A, int lda, const float *B, int ldb,
		   float beta, float *C, int ldc) {
	for (int j = 0; j < n; j++)
		for (int i = 0; i < m; i++) {
			float s = 0;
			for (int l = 0; l < k; l++) {
				float a = ta ? A[l + (long)i * lda] : A[i + (long)l * lda];
				float b = tb ? B[j + (long)l * ldb] : B[l + (long)j * ldb];
				s = fmaf(a, b, s);
			}
			float *c = &C[i + (long)j * ldc];
			*c = beta == 0 ? alpha * s : fmaf(alpha, s, beta * *c);
		}
}

// run_gemm runs the job (run = 1) or frees it (run = 0: done with).
static void run_gemm(void *arg, int run) {
	gemm_job *j = arg;
	if (!run) {
		free(j);
		return;
	}
	{
		const char *mode = getenv("DPFIL_STANDIN_GEMM");
		int fp64 = mode != NULL && strcmp(mode, "fp64") == 0;
		const float *A = dpfil_standin_device_view(j->A), *B = dpfil_standin_device_view(j->B);
		float *C = dpfil_standin_device_view(j->C);
		for (int i = 0; i < j->batch; i++) {
			if (fp64)
				gemm(j->ta, j->tb, j->m, j->n, j->k, j->alpha, A + i * j->sA, j->lda, B + i * j->sB, j->ldb,
				     j->beta, C + i * j->sC, j->ldc);
			else
				gemm32(j->ta, j->tb, j->m, j->n, j->k, j->alpha, A + i * j->sA, j->lda, B + i * j->sB, j->ldb,
				       j->beta, C + i * j->sC, j->ldc);
		}
	}
}

// extent is the bytes a column-major rows×cols operand with leading dimension ld spans,
// over batch matrices stride elements apart.
static uint64_t extent(int rows, int cols, int ld, long long stride, int batch) {
	return 4 * ((uint64_t)(batch - 1) * (uint64_t)stride + (uint64_t)(cols - 1) * (uint64_t)ld + (uint64_t)rows);
}

static int sgemm(const char *what, void *h, int ta, int tb, int m, int n, int k, const float *alpha, const float *A,
		 int lda, long long sA, const float *B, int ldb, long long sB, const float *beta, float *C, int ldc,
		 long long sC, int batch) {
	si_handle *x = h;
	int s = check(&x->base, ta, tb, m, n, k, lda, ldb, ldc);
	if (s != OK) return s;
	if (batch < 0 || sA < 0 || sB < 0 || sC < 0) return INVALID_VALUE;
	if (!adopted_live(what)) return NOT_INITIALIZED;
	void *cur = NULL;
	if (cuCtxGetCurrent(&cur) != 0 || cur != x->ctx) {
		fprintf(stderr, "dpfil stand-in cuBLAS: %s from a thread whose current context is not the handle's\n", what);
		return NOT_INITIALIZED;
	}
	if (m == 0 || n == 0 || batch == 0) return OK;
	gemm_job *j = calloc(1, sizeof *j);
	if (j == NULL) return ALLOC_FAILED;
	*j = (gemm_job){ta, tb, m, n, k, lda, ldb, ldc, batch, *alpha, *beta, A, B, C, sA, sB, sC};
	// cuBLAS's column-major names: dpfil's row-major product passes its B as A.
	static const char *const names[4] = {"workspace", "C", "A", "B"};
	uintptr_t base[4];
	uint64_t bytes[4];
	int nr = 0;
	base[nr] = (uintptr_t)x->base.ws, bytes[nr++] = x->base.ws_bytes;
	base[nr] = (uintptr_t)C, bytes[nr++] = extent(m, n, ldc, sC, batch);
	if (k > 0) {
		base[nr] = (uintptr_t)A, bytes[nr++] = extent(ta ? k : m, ta ? m : k, lda, sA, batch);
		base[nr] = (uintptr_t)B, bytes[nr++] = extent(tb ? n : k, tb ? k : n, ldb, sB, batch);
	}
	int r = dpfil_standin_enqueue(what, x->base.stream, run_gemm, j, nr, names, base, bytes);
	if (r == 0) return OK;
	free(j);
	if (r == 1 /* CUDA_ERROR_INVALID_VALUE */) return INVALID_VALUE;
	if (r == 201 || r == 709 /* no usable context */) return NOT_INITIALIZED;
	return EXECUTION_FAILED; // the context is in error
}

int cublasSgemm_v2(void *h, int ta, int tb, int m, int n, int k, const float *alpha, const float *A, int lda,
		   const float *B, int ldb, const float *beta, float *C, int ldc) {
	return sgemm("cublasSgemm_v2", h, ta, tb, m, n, k, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, 0, 1);
}

int cublasSgemmStridedBatched(void *h, int ta, int tb, int m, int n, int k, const float *alpha, const float *A,
			      int lda, long long sA, const float *B, int ldb, long long sB, const float *beta, float *C,
			      int ldc, long long sC, int batch) {
	return sgemm("cublasSgemmStridedBatched", h, ta, tb, m, n, k, alpha, A, lda, sA, B, ldb, sB, beta, C, ldc, sC,
		     batch);
}
