// A stand-in for the NVIDIA driver's libcuda.so.1 on a machine without a GPU, so that
// dpfil's real GPU build (tag dpfil_cuda: cuda/gpu.go through gorgonia.org/cu, cuBLAS
// through dlopen) runs unmodified in CI. It is not a GPU emulator for arbitrary code:
// it runs exactly the kernels of cuda/kernels/dpfil.cu, compiled as C (kernels.c),
// and it is strict like a real driver, and stricter, so that GPU-only bugs fail here:
//
//   - the current context is per OS thread; a call that needs one from a thread
//     without one fails with CUDA_ERROR_INVALID_CONTEXT;
//   - a module is parsed from its PTX text (.version, .target, .address_size and
//     every .entry's .param list) and each entry's parameter sizes must equal the C
//     signature of the same kernel in dpfil.cu; a launch reads every argument at its
//     PTX size, refuses a 4-byte parameter whose 8-byte slot has upper bits set
//     (gorgonia.org/cu copies every argument as 8 bytes), refuses a pointer argument
//     that is not NULL and not inside a live device allocation of the context, and
//     checks the launch bounds;
//   - launches, memsets, asynchronous copies (the host bytes of cuMemcpyHtoDAsync are
//     staged when it is called) and (through cublas.c) GEMMs are queued on the one
//     stream and run only at a synchronising call (cuCtxSynchronize, a synchronous copy, a free,
//     a module unload, the last release of the context); while work is queued, every
//     allocation it touches is PROT_NONE in the program's view, so a host read or
//     write before the sync crashes at the offending line;
//   - memory from cuMemAlloc (not managed) is never host-accessible; managed memory
//     comes poisoned (0xff bytes: NaN floats, -1 ints), not zeroed; freed ranges are
//     never reused, and stay inaccessible;
//   - kernels run in the checked build by default (hooks.c): every load and store must
//     fall inside a live allocation, naturally aligned, and no two threads of a launch
//     may touch one word with one of them writing. A failed check is a sticky error of
//     the context, as a fault is on a GPU.
//
// Environment:
//   DPFIL_STANDIN_CHECKS=0   run the plain build of the kernels (no memcheck or race
//                            check; everything else stays); default 1
//   DPFIL_STANDIN_MEMORY=N   device memory in MiB (default 8192)
//   DPFIL_STANDIN_CC=90      compute capability reported (default 90)
//   DPFIL_STANDIN_TRACE=1    log every queued operation and synchronisation
//   DPFIL_STANDIN_QUIET=1    no banner at cuInit
//
// Every other cu* symbol that gorgonia.org/cu links is in unsupported.c: it returns
// CUDA_ERROR_NOT_SUPPORTED and says which was called.
#define _GNU_SOURCE
#include <cuda.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "../kernels/hostemu.h"
#include "standin.h"

#define SI_EXPORT __attribute__((visibility("default")))
#define SI_MAXPARAMS 64
#define SI_PAGE 4096ull
#define SI_MAGIC_MOD 0x6d6f64756c65ull
#define SI_MAGIC_FN 0x66756e63ull
#define SI_MAGIC_STREAM 0x73747265616dull
#define SI_MAGIC_GRAPH 0x6772617068ull
#define SI_MAGIC_EXEC 0x65786563ull

// The launch geometry the host-compiled kernels read (hostemu.h).
dp_dim3 dp_emu_threadIdx, dp_emu_blockIdx, dp_emu_blockDim, dp_emu_gridDim;

// ---- configuration and logging ----

static int cfg_checks = 1, cfg_trace = 0, cfg_cc = 90;
static uint64_t cfg_mem = 8192ull << 20;

void si_log(const char *fmt, ...) {
	char buf[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	fprintf(stderr, "dpfil stand-in libcuda: %s\n", buf);
	fflush(stderr);
}

static const char *env(const char *k) {
	const char *v = getenv(k);
	return v && *v ? v : NULL;
}

// ---- global state: one device, guarded by one lock ----

typedef struct si_op si_op;
typedef struct si_stream si_stream;

typedef struct si_ctx {
	int live;
	int retains;
	CUresult sticky; // first asynchronous error: every later call returns it
	unsigned long gen;
	si_op *head, *tail; // the queue: every stream's work in issue order (stricter than a GPU)
	int queued;
	int nstreams; // live streams from cuStreamCreate: then the legacy stream is refused
	// Stream capture (cuStreamBeginCapture): the capturing stream's work is recorded
	// here instead of queued; broken when something that may not be captured happened.
	si_stream *cap;
	si_op *cap_head, *cap_tail;
	int cap_n, cap_broken;
} si_ctx;

// A stream from cuStreamCreate. The stand-in keeps one queue per context, so work of
// every stream runs in issue order; streams are checked (live, this context's), and
// while a context has one, work on the legacy default stream is refused: dpfil
// issues every launch, copy, memset and GEMM on its own stream.
struct si_stream {
	uint64_t magic;
	si_ctx *ctx;
	int live;
};

// A captured graph's operations, shared by the graph and its instantiations.
typedef struct {
	si_op *head;
	int n, refs;
} si_oplist;

typedef struct {
	uint64_t magic;
	si_oplist *list;
} si_graph; // CUgraph and (magic SI_MAGIC_EXEC) CUgraphExec

typedef struct si_module si_module;

typedef struct si_func {
	uint64_t magic;
	si_module *mod;
	const si_kernel *kc, *kf; // checked and plain builds
	int nparams;
	int psize[SI_MAXPARAMS];
	unsigned maxntid[3], reqntid[3]; // 0: not declared
	char name[128];
} si_func;

struct si_module {
	uint64_t magic;
	si_ctx *ctx;
	int loaded;
	int nfuncs;
	si_func *funcs;
};

enum { OP_KERNEL = 1, OP_MEMSET, OP_HOSTFN, OP_COPY, OP_GRAPH };

struct si_op {
	int kind;
	si_op *next;
	si_launch_info info;
	// OP_KERNEL
	si_func *fn;
	uint64_t slots[SI_MAXPARAMS];
	// every kind: the ids of the operand allocations (busy while queued; a graph
	// launch checks that they are still live)
	int nops;
	unsigned long opid[SI_MAXPARAMS];
	// OP_GRAPH: the graph's operations, run in order
	si_oplist *list;
	const char *what; // what queued it (messages)
	// OP_MEMSET
	uintptr_t dst;
	uint64_t bytes;
	uint32_t value;
	int width;
	// OP_HOSTFN
	void (*hostfn)(void *, int);
	void *arg;
	// OP_COPY (dst and bytes above): from the staged host bytes, from device memory,
	// or (pinned = 1) from page-locked host memory read when the copy runs, which must
	// still hold what it held when the copy was queued (sum)
	uint8_t *staged;
	uintptr_t src;
	int pinned;
	int to_host; // cuMemcpyDtoHAsync: dst is host memory
	uint64_t sum;
};

// Page-locked host memory (cuMemHostAlloc): host memory that asynchronous copies read
// when they run, as a GPU's DMA does.
typedef struct {
	uintptr_t base;
	size_t len;
} si_pinned;
static si_pinned *pinned;
static size_t npinned, cappinned;

// pinned_range reports whether the n bytes at p lie in one live pinned allocation.
static int pinned_range(uintptr_t p, size_t n) {
	for (size_t i = 0; i < npinned; i++)
		if (p >= pinned[i].base && p + n <= pinned[i].base + pinned[i].len) return 1;
	return 0;
}

// fnv is FNV-1a over n bytes.
static uint64_t fnv(const uint8_t *b, size_t n) {
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
	return h;
}

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static int g_init;
static si_ctx *g_primary;
static unsigned long g_ctx_gen, g_launches;
static unsigned long g_ctx_retains, g_ctx_releases; // cuDevicePrimaryCtxRetain/Release calls
static void ctx_stats(void);
static __thread si_ctx *t_cur;

uintptr_t si_host_base, si_dev_base;
uint64_t si_arena_len;
static uint64_t arena_next; // bump offset
static int arena_fd = -1;
static si_alloc *allocs;
static size_t nallocs, capallocs;
static uint64_t live_bytes;

const si_launch_info *si_cur;
uint32_t si_tid;
static jmp_buf run_jmp;

// ---- memory ----

si_alloc *si_find(uint64_t o) {
	size_t lo = 0, hi = nallocs;
	while (lo < hi) { // first allocation with off > o
		size_t mid = (lo + hi) / 2;
		if (allocs[mid].off <= o) lo = mid + 1;
		else hi = mid;
	}
	return lo == 0 ? NULL : &allocs[lo - 1];
}

si_alloc *si_next(const si_alloc *a) {
	size_t i = (size_t)(a - allocs) + 1;
	return i < nallocs ? &allocs[i] : NULL;
}

static int arena_init(void) {
	si_arena_len = 1ull << 40; // 1 TiB of address space; allocations never reuse it
	arena_fd = memfd_create("dpfil-standin-device-memory", MFD_CLOEXEC);
	if (arena_fd < 0) {
		si_log("memfd_create: %s", strerror(errno));
		return -1;
	}
	if (ftruncate(arena_fd, (off_t)si_arena_len) != 0) {
		si_log("ftruncate the device arena: %s", strerror(errno));
		return -1;
	}
	void *h = mmap(NULL, si_arena_len, PROT_NONE, MAP_SHARED | MAP_NORESERVE, arena_fd, 0);
	void *d = mmap(NULL, si_arena_len, PROT_NONE, MAP_SHARED | MAP_NORESERVE, arena_fd, 0);
	if (h == MAP_FAILED || d == MAP_FAILED) {
		si_log("mmap the device arena: %s", strerror(errno));
		return -1;
	}
	si_host_base = (uintptr_t)h;
	si_dev_base = (uintptr_t)d;
	arena_next = SI_PAGE; // offset 0 stays unmapped
	return 0;
}

// host_alloc returns the live allocation of ctx that contains the n bytes at host
// address p (n = 0: p itself), or NULL.
static si_alloc *host_alloc(si_ctx *ctx, uintptr_t p, uint64_t n) {
	if (p < si_host_base || p - si_host_base >= si_arena_len) return NULL;
	uint64_t o = p - si_host_base;
	si_alloc *a = si_find(o);
	if (a == NULL || !a->live || a->ctx != ctx) return NULL;
	if (o < a->off || o + (n ? n : 1) > a->off + a->size) return NULL;
	return a;
}

static uintptr_t to_dev(uintptr_t p) { return p - si_host_base + si_dev_base; }

// describe writes what the host address p is, for error messages.
static void describe(char *buf, size_t n, si_ctx *ctx, uintptr_t p) {
	if (p < si_host_base || p - si_host_base >= si_arena_len) {
		snprintf(buf, n, "%#lx is not device memory (host or Go memory?)", (unsigned long)p);
		return;
	}
	uint64_t o = p - si_host_base;
	si_alloc *a = si_find(o);
	if (a == NULL) {
		snprintf(buf, n, "%#lx lies before every allocation", (unsigned long)p);
	} else if (o >= a->off + a->size) {
		snprintf(buf, n, "%#lx lies %lu bytes past the end of allocation #%lu (%lu bytes)", (unsigned long)p,
			 (unsigned long)(o - a->off - a->size), a->id, (unsigned long)a->size);
	} else if (!a->live) {
		snprintf(buf, n, "%#lx lies in allocation #%lu, which was freed", (unsigned long)p, a->id);
	} else if (a->ctx != ctx) {
		snprintf(buf, n, "%#lx belongs to another context", (unsigned long)p);
	} else {
		snprintf(buf, n, "%#lx is offset %lu of allocation #%lu (%lu bytes)", (unsigned long)p,
			 (unsigned long)(o - a->off), a->id, (unsigned long)a->size);
	}
}

static void protect(si_alloc *a, int prot) {
	if (mprotect((void *)(si_host_base + a->map_off), a->map_len, prot) != 0)
		si_log("mprotect allocation #%lu: %s", a->id, strerror(errno));
}

// mark_busy makes an operand of queued work inaccessible to the program.
static void mark_busy(si_alloc *a) {
	if (!a->busy && !a->device_only) protect(a, PROT_NONE);
	a->busy = 1;
}

static CUresult alloc_mem(si_ctx *ctx, CUdeviceptr *dptr, size_t size, int device_only, const char *how) {
	if (dptr == NULL || size == 0) return CUDA_ERROR_INVALID_VALUE;
	if (size > cfg_mem - live_bytes) return CUDA_ERROR_OUT_OF_MEMORY;
	uint64_t rounded = (size + 255) & ~255ull; // 256-byte alignment, as cudaMalloc
	uint64_t pages = (rounded + SI_PAGE - 1) & ~(SI_PAGE - 1);
	if (arena_next + pages + SI_PAGE > si_arena_len) {
		si_log("%s(%zu): the 1 TiB arena is used up (freed ranges are never reused)", how, size);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (nallocs == capallocs) {
		size_t c = capallocs ? 2 * capallocs : 1024;
		si_alloc *na = realloc(allocs, c * sizeof *na);
		if (na == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
		allocs = na;
		capallocs = c;
	}
	si_alloc *a = &allocs[nallocs];
	memset(a, 0, sizeof *a);
	a->map_off = arena_next;
	a->map_len = pages;
	a->off = a->map_off + pages - rounded; // end-aligned: overruns hit the guard page
	a->size = size;
	a->id = nallocs + 1;
	a->live = 1;
	a->device_only = device_only;
	a->how = how;
	a->ctx = ctx;
	arena_next += pages + SI_PAGE; // one unmapped guard page after each
	if (mprotect((void *)(si_dev_base + a->map_off), pages, PROT_READ | PROT_WRITE) != 0) {
		si_log("%s(%zu): mprotect: %s", how, size, strerror(errno));
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	// Poisoned, not zeroed: code that relies on fresh memory being 0 fails here.
	memset((void *)(si_dev_base + a->map_off), 0xff, pages);
	if (!device_only) protect(a, PROT_READ | PROT_WRITE);
	nallocs++;
	live_bytes += size;
	*dptr = (CUdeviceptr)(si_host_base + a->off);
	return CUDA_SUCCESS;
}

static void free_mem(si_alloc *a) {
	a->live = 0;
	a->busy = 0;
	live_bytes -= a->size;
	protect(a, PROT_NONE);
	mprotect((void *)(si_dev_base + a->map_off), a->map_len, PROT_NONE);
	if (fallocate(arena_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)a->map_off, (off_t)a->map_len) != 0)
		si_log("release the pages of allocation #%lu: %s", a->id, strerror(errno));
	if (a->shadow) munmap(a->shadow, a->shadow_len);
	a->shadow = NULL;
}

// ---- contexts and the queue ----

// need_ctx returns the calling thread's current context, or sets *r to why there is
// none usable.
static si_ctx *need_ctx(CUresult *r, const char *api) {
	if (!g_init) {
		*r = CUDA_ERROR_NOT_INITIALIZED;
		return NULL;
	}
	si_ctx *c = t_cur;
	if (c == NULL) {
		si_log("%s: no current context on this OS thread (CUDA_ERROR_INVALID_CONTEXT)", api);
		*r = CUDA_ERROR_INVALID_CONTEXT;
		return NULL;
	}
	if (!c->live) {
		si_log("%s: the current context of this OS thread was destroyed (CUDA_ERROR_CONTEXT_IS_DESTROYED)", api);
		*r = CUDA_ERROR_CONTEXT_IS_DESTROYED;
		return NULL;
	}
	if (c->sticky != CUDA_SUCCESS) {
		*r = c->sticky;
		return NULL;
	}
	*r = CUDA_SUCCESS;
	return c;
}

static void enqueue(si_ctx *ctx, si_op *op) {
	op->next = NULL;
	if (ctx->tail) ctx->tail->next = op;
	else ctx->head = op;
	ctx->tail = op;
	ctx->queued++;
}

// submit queues op on stream s of ctx — its operands become inaccessible to the
// host until it ran — or, when s is capturing, records it in the capture.
static void submit(si_ctx *ctx, si_stream *s, si_op *op) {
	if (ctx->cap != NULL && s == ctx->cap) {
		op->next = NULL;
		if (ctx->cap_tail) ctx->cap_tail->next = op;
		else ctx->cap_head = op;
		ctx->cap_tail = op;
		ctx->cap_n++;
		return;
	}
	for (int i = 0; i < op->nops; i++) mark_busy(&allocs[op->opid[i] - 1]);
	enqueue(ctx, op);
}

// add_operand records allocation a as an operand of op.
static void add_operand(si_op *op, si_alloc *a) {
	if (a != NULL && op->nops < SI_MAXPARAMS) op->opid[op->nops++] = a->id;
}

// get_stream resolves a stream handle of ctx for api: NULL for the legacy default
// stream, which is refused while the context has a stream of its own.
static CUresult get_stream(si_ctx *ctx, CUstream h, si_stream **out, const char *api) {
	*out = NULL;
	if (h == NULL || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD) {
		if (ctx->nstreams > 0) {
			si_log("%s: work on the legacy default stream while the context has a stream of its own "
			       "(cuStreamCreate): dpfil issues every launch, copy, memset and GEMM on its stream",
			       api);
			return CUDA_ERROR_INVALID_HANDLE;
		}
		return CUDA_SUCCESS;
	}
	si_stream *s = (si_stream *)h;
	if (s->magic != SI_MAGIC_STREAM || !s->live || s->ctx != ctx) {
		si_log("%s: stream %p is not a live stream of the current context", api, (void *)h);
		return CUDA_ERROR_INVALID_HANDLE;
	}
	*out = s;
	return CUDA_SUCCESS;
}

static void oplist_release(si_oplist *l);

void si_launch_fail(int code) { longjmp(run_jmp, code); }

static CUresult run_kernel(si_op *op) {
	const si_kernel *k = cfg_checks ? op->fn->kc : op->fn->kf;
	dp_dim3 g = {op->info.grid[0], op->info.grid[1], op->info.grid[2]};
	dp_dim3 b = {op->info.block[0], op->info.block[1], op->info.block[2]};
	dp_emu_gridDim = g;
	dp_emu_blockDim = b;
	si_cur = &op->info;
	if (cfg_checks) {
		si_alloc *operands[SI_MAXPARAMS];
		for (int i = 0; i < op->nops; i++) operands[i] = &allocs[op->opid[i] - 1];
		si_check_begin((uintptr_t)__builtin_frame_address(0), op->slots, op->fn->nparams, operands, op->nops);
	}
	int code = setjmp(run_jmp);
	if (code != 0) return (CUresult)code;
	uint32_t tid = 0;
	for (unsigned bz = 0; bz < g.z; bz++)
		for (unsigned by = 0; by < g.y; by++)
			for (unsigned bx = 0; bx < g.x; bx++) {
				dp_dim3 bi = {bx, by, bz};
				dp_emu_blockIdx = bi;
				for (unsigned tz = 0; tz < b.z; tz++)
					for (unsigned ty = 0; ty < b.y; ty++)
						for (unsigned tx = 0; tx < b.x; tx++) {
							dp_dim3 ti = {tx, ty, tz};
							dp_emu_threadIdx = ti;
							si_tid = ++tid;
							k->run(op->slots);
						}
			}
	si_cur = NULL;
	return CUDA_SUCCESS;
}

static CUresult run_op(si_op *op) {
	switch (op->kind) {
	case OP_KERNEL:
		return run_kernel(op);
	case OP_MEMSET: {
		uint8_t *d = (uint8_t *)to_dev(op->dst);
		for (uint64_t i = 0; i < op->bytes; i += op->width) memcpy(d + i, &op->value, op->width);
		return CUDA_SUCCESS;
	}
	case OP_HOSTFN:
		op->hostfn(op->arg, 1);
		return CUDA_SUCCESS;
	case OP_COPY:
		if (op->pinned) {
			if (fnv((const uint8_t *)op->src, op->bytes) != op->sum) {
				si_log("cuMemcpyHtoDAsync: the host changed the %lu bytes of page-locked memory at %#lx after "
				       "queuing their copy and before it ran (the device would read the new bytes)",
				       (unsigned long)op->bytes, (unsigned long)op->src);
				return CUDA_ERROR_INVALID_VALUE;
			}
			memmove((void *)to_dev(op->dst), (const void *)op->src, op->bytes);
			return CUDA_SUCCESS;
		}
		if (op->to_host) {
			memmove((void *)op->dst, (const void *)to_dev(op->src), op->bytes);
			return CUDA_SUCCESS;
		}
		memmove((void *)to_dev(op->dst), op->staged ? (const void *)op->staged : (const void *)to_dev(op->src),
			op->bytes);
		return CUDA_SUCCESS;
	case OP_GRAPH:
		for (si_op *o = op->list->head; o != NULL; o = o->next) {
			CUresult r = run_op(o);
			if (r != CUDA_SUCCESS) return r;
		}
		return CUDA_SUCCESS;
	}
	return CUDA_ERROR_UNKNOWN;
}

// drain runs the context's queued work in order (lock held). The first failure
// becomes the context's sticky error and the rest of the queue is dropped.
static CUresult drain(si_ctx *ctx, const char *why) {
	if (ctx->cap != NULL) {
		// A wait while a stream captures: CUDA invalidates the capture.
		si_log("%s: a synchronisation while stream %p captures a graph (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)", why,
		       (void *)ctx->cap);
		ctx->cap_broken = 1;
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	}
	if (ctx->queued && cfg_trace) si_log("%s: running %d queued operation(s)", why, ctx->queued);
	while (ctx->head) {
		si_op *op = ctx->head;
		ctx->head = op->next;
		if (ctx->sticky == CUDA_SUCCESS) {
			CUresult r = run_op(op);
			if (r != CUDA_SUCCESS) {
				ctx->sticky = r;
				si_log("%s: the context is now in error %d; every later call fails with it", why, (int)r);
			}
		}
		if (op->kind == OP_HOSTFN) op->hostfn(op->arg, 0); // done (or not run): frees its argument
		if (op->kind == OP_GRAPH) oplist_release(op->list);
		free(op->staged);
		free(op);
	}
	ctx->tail = NULL;
	ctx->queued = 0;
	for (size_t i = 0; i < nallocs; i++) {
		si_alloc *a = &allocs[i];
		if (a->busy && a->ctx == ctx) {
			a->busy = 0;
			if (a->live && !a->device_only) protect(a, PROT_READ | PROT_WRITE);
		}
	}
	return ctx->sticky;
}

// ---- initialisation and the device ----

SI_EXPORT CUresult CUDAAPI cuInit(unsigned int flags) {
	if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&g_mu);
	CUresult r = CUDA_SUCCESS;
	if (!g_init) {
		const char *v;
		if ((v = env("DPFIL_STANDIN_CHECKS"))) cfg_checks = strcmp(v, "0") != 0 && strcmp(v, "off") != 0;
		if ((v = env("DPFIL_STANDIN_TRACE"))) cfg_trace = strcmp(v, "0") != 0;
		if ((v = env("DPFIL_STANDIN_CC"))) cfg_cc = atoi(v);
		if ((v = env("DPFIL_STANDIN_MEMORY"))) cfg_mem = strtoull(v, NULL, 10) << 20;
		if (cfg_cc < 30 || cfg_cc > 200 || cfg_mem == 0) {
			si_log("bad DPFIL_STANDIN_CC or DPFIL_STANDIN_MEMORY");
			r = CUDA_ERROR_INVALID_VALUE;
		} else if (arena_init() != 0) {
			r = CUDA_ERROR_OPERATING_SYSTEM;
		} else {
			g_init = 1;
			if (!env("DPFIL_STANDIN_QUIET"))
				si_log("a CPU stand-in for the NVIDIA driver (no GPU): dpfil.cu's kernels as C, checks %s",
				       cfg_checks ? "on (memcheck, race check)" : "off");
		}
	}
	pthread_mutex_unlock(&g_mu);
	return r;
}

SI_EXPORT CUresult CUDAAPI cuDriverGetVersion(int *v) {
	if (v == NULL) return CUDA_ERROR_INVALID_VALUE;
	*v = 12080;
	return CUDA_SUCCESS;
}

SI_EXPORT CUresult CUDAAPI cuDeviceGetCount(int *n) {
	if (!g_init) return CUDA_ERROR_NOT_INITIALIZED;
	if (n == NULL) return CUDA_ERROR_INVALID_VALUE;
	*n = 1;
	return CUDA_SUCCESS;
}

SI_EXPORT CUresult CUDAAPI cuDeviceGet(CUdevice *d, int ordinal) {
	if (!g_init) return CUDA_ERROR_NOT_INITIALIZED;
	if (d == NULL) return CUDA_ERROR_INVALID_VALUE;
	if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
	*d = 0;
	return CUDA_SUCCESS;
}

SI_EXPORT CUresult CUDAAPI cuDeviceGetName(char *name, int len, CUdevice d) {
	if (!g_init) return CUDA_ERROR_NOT_INITIALIZED;
	if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
	if (name == NULL || len <= 0) return CUDA_ERROR_INVALID_VALUE;
	snprintf(name, (size_t)len, "dpfil stand-in (CPU, no GPU)");
	return CUDA_SUCCESS;
}

SI_EXPORT CUresult CUDAAPI cuDeviceTotalMem_v2(size_t *bytes, CUdevice d) {
	if (!g_init) return CUDA_ERROR_NOT_INITIALIZED;
	if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
	if (bytes == NULL) return CUDA_ERROR_INVALID_VALUE;
	*bytes = cfg_mem;
	return CUDA_SUCCESS;
}

SI_EXPORT CUresult CUDAAPI cuDeviceGetAttribute(int *v, CUdevice_attribute attr, CUdevice d) {
	if (!g_init) return CUDA_ERROR_NOT_INITIALIZED;
	if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
	if (v == NULL) return CUDA_ERROR_INVALID_VALUE;
	switch (attr) {
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = cfg_cc / 10; break;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = cfg_cc % 10; break;
	case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: *v = 1; break;
	case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS: *v = 1; break;
	case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: *v = 1; break;
	case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 1; break;
	case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: *v = 1000000; break; // kHz
	case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; break;
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: *v = 1024; break;
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: *v = 1024; break;
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: *v = 64; break;
	case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: *v = 2147483647; break;
	case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: *v = 65535; break;
	case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: *v = 65535; break;
	case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *v = 32; break;
	case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: *v = 65536; break;
	case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *v = 49152; break;
	default:
		si_log("cuDeviceGetAttribute: attribute %d is not modelled (CUDA_ERROR_NOT_SUPPORTED)", (int)attr);
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	return CUDA_SUCCESS;
}

// ---- contexts ----

SI_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice d) {
	if (!g_init) return CUDA_ERROR_NOT_INITIALIZED;
	if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
	if (pctx == NULL) return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&g_mu);
	if (g_primary == NULL) {
		g_primary = calloc(1, sizeof *g_primary); // never freed: stale handles stay detectable
		g_primary->live = 1;
		g_primary->gen = ++g_ctx_gen;
	}
	g_primary->retains++;
	g_ctx_retains++;
	ctx_stats();
	*pctx = (CUcontext)g_primary;
	pthread_mutex_unlock(&g_mu);
	return CUDA_SUCCESS;
}

static si_module **modules; // every module ever loaded (kept: stale handles stay detectable)
static int nmodules, capmodules;

SI_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRelease_v2(CUdevice d) {
	if (!g_init) return CUDA_ERROR_NOT_INITIALIZED;
	if (d != 0) return CUDA_ERROR_INVALID_DEVICE;
	pthread_mutex_lock(&g_mu);
	si_ctx *c = g_primary;
	if (c == NULL || c->retains <= 0) {
		pthread_mutex_unlock(&g_mu);
		si_log("cuDevicePrimaryCtxRelease: the primary context is not retained (CUDA_ERROR_INVALID_CONTEXT)");
		return CUDA_ERROR_INVALID_CONTEXT;
	}
	g_ctx_releases++;
	if (--c->retains == 0) {
		// The last release destroys the context: its work finishes first, then its
		// memory and modules go. Threads that still have it current get
		// CUDA_ERROR_CONTEXT_IS_DESTROYED from then on.
		drain(c, "cuDevicePrimaryCtxRelease");
		for (size_t i = 0; i < nallocs; i++)
			if (allocs[i].live && allocs[i].ctx == c) free_mem(&allocs[i]);
		for (int i = 0; i < nmodules; i++)
			if (modules[i]->ctx == c) modules[i]->loaded = 0;
		c->live = 0;
		g_primary = NULL;
	}
	ctx_stats();
	pthread_mutex_unlock(&g_mu);
	return CUDA_SUCCESS;
}

SI_EXPORT CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx) {
	if (!g_init) return CUDA_ERROR_NOT_INITIALIZED;
	si_ctx *c = (si_ctx *)ctx;
	if (c != NULL) {
		pthread_mutex_lock(&g_mu);
		int live = c->live;
		pthread_mutex_unlock(&g_mu);
		if (!live) {
			si_log("cuCtxSetCurrent: the context was destroyed (CUDA_ERROR_INVALID_CONTEXT)");
			return CUDA_ERROR_INVALID_CONTEXT;
		}
	}
	t_cur = c;
	return CUDA_SUCCESS;
}

SI_EXPORT CUresult CUDAAPI cuCtxGetCurrent(CUcontext *pctx) {
	if (!g_init) return CUDA_ERROR_NOT_INITIALIZED;
	if (pctx == NULL) return CUDA_ERROR_INVALID_VALUE;
	*pctx = (CUcontext)t_cur;
	return CUDA_SUCCESS;
}

SI_EXPORT CUresult CUDAAPI cuCtxGetDevice(CUdevice *d) {
	CUresult r;
	pthread_mutex_lock(&g_mu);
	si_ctx *c = need_ctx(&r, "cuCtxGetDevice");
	pthread_mutex_unlock(&g_mu);
	if (c == NULL) return r;
	if (d == NULL) return CUDA_ERROR_INVALID_VALUE;
	*d = 0;
	return CUDA_SUCCESS;
}

SI_EXPORT CUresult CUDAAPI cuCtxSynchronize(void) {
	CUresult r;
	pthread_mutex_lock(&g_mu);
	si_ctx *c = need_ctx(&r, "cuCtxSynchronize");
	if (c != NULL) r = drain(c, "cuCtxSynchronize");
	pthread_mutex_unlock(&g_mu);
	return r;
}

// ---- memory ----

SI_EXPORT CUresult CUDAAPI cuMemGetInfo_v2(size_t *freeb, size_t *total) {
	CUresult r;
	pthread_mutex_lock(&g_mu);
	if (need_ctx(&r, "cuMemGetInfo") != NULL) {
		if (freeb == NULL || total == NULL) r = CUDA_ERROR_INVALID_VALUE;
		else {
			*freeb = cfg_mem - live_bytes;
			*total = cfg_mem;
		}
	}
	pthread_mutex_unlock(&g_mu);
	return r;
}

SI_EXPORT CUresult CUDAAPI cuMemAllocManaged(CUdeviceptr *dptr, size_t size, unsigned int flags) {
	CUresult r;
	pthread_mutex_lock(&g_mu);
	si_ctx *c = need_ctx(&r, "cuMemAllocManaged");
	if (c != NULL) {
		if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST) r = CUDA_ERROR_INVALID_VALUE;
		else r = alloc_mem(c, dptr, size, 0, "cuMemAllocManaged");
	}
	pthread_mutex_unlock(&g_mu);
	return r;
}

SI_EXPORT CUresult CUDAAPI cuMemAlloc_v2(CUdeviceptr *dptr, size_t size) {
	CUresult r;
	pthread_mutex_lock(&g_mu);
	si_ctx *c = need_ctx(&r, "cuMemAlloc");
	if (c != NULL) r = alloc_mem(c, dptr, size, 1, "cuMemAlloc");
	pthread_mutex_unlock(&g_mu);
	return r;
}

SI_EXPORT CUresult CUDAAPI cuMemFree_v2(CUdeviceptr p) {
	CUresult r;
	pthread_mutex_lock(&g_mu);
	si_ctx *c = need_ctx(&r, "cuMemFree");
	if (c != NULL) {
		si_alloc *a = host_alloc(c, (uintptr_t)p, 0);
		if (a == NULL || (uintptr_t)p != si_host_base + a->off) {
			char d[256];
			describe(d, sizeof d, c, (uintptr_t)p);
			si_log("cuMemFree: not the start of a live allocation: %s (CUDA_ERROR_INVALID_VALUE)", d);
			r = CUDA_ERROR_INVALID_VALUE;
		} else {
			// Freeing memory that queued work may still use waits for the work.
			r = c->queued ? drain(c, "cuMemFree") : CUDA_SUCCESS;
			free_mem(a);
		}
	}
	pthread_mutex_unlock(&g_mu);
	return r;
}

static CUresult memset_op(CUdeviceptr dst, uint32_t value, int width, size_t n, CUstream stream, const char *api) {
	CUresult r;
	pthread_mutex_lock(&g_mu);
	si_ctx *c = need_ctx(&r, api);
	si_stream *st = NULL;
	if (c != NULL && (r = get_stream(c, stream, &st, api)) != CUDA_SUCCESS) c = NULL;
	if (c != NULL) {
		uint64_t bytes = (uint64_t)n * width;
		si_alloc *a = host_alloc(c, (uintptr_t)dst, bytes);
		if (n == 0) {
			r = CUDA_SUCCESS;
		} else if (a == NULL || ((uintptr_t)dst % width) != 0) {
			char d[256];
			describe(d, sizeof d, c, (uintptr_t)dst);
			si_log("%s(%zu elements): the range is not inside one live allocation or misaligned: %s", api, n, d);
			r = CUDA_ERROR_INVALID_VALUE;
		} else {
			si_op *op = calloc(1, sizeof *op);
			op->kind = OP_MEMSET;
			op->dst = (uintptr_t)dst;
			op->bytes = bytes;
			op->value = value;
			op->width = width;
			add_operand(op, a);
			submit(c, st, op);
			if (cfg_trace) si_log("queued %s of %lu bytes at %#lx", api, (unsigned long)bytes, (unsigned long)dst);
		}
	}
	pthread_mutex_unlock(&g_mu);
	return r;
}

SI_EXPORT CUresult CUDAAPI cuMemsetD8_v2(CUdeviceptr dst, unsigned char uc, size_t n) {
	return memset_op(dst, uc, 1, n, NULL, "cuMemsetD8");
}

SI_EXPORT CUresult CUDAAPI cuMemsetD32_v2(CUdeviceptr dst, unsigned int ui, size_t n) {
	return memset_op(dst, ui, 4, n, NULL, "cuMemsetD32");
}

SI_EXPORT CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr dst, unsigned char uc, size_t n, CUstream stream) {
	return memset_op(dst, uc, 1, n, stream, "cuMemsetD8Async");
}

// copy is a synchronous copy of n bytes: the queue runs first. Device ranges must lie
// inside one live allocation; host ranges must not be device memory.
static CUresult copy(uintptr_t dst, int dst_dev, uintptr_t src, int src_dev, size_t n, const char *api) {
	CUresult r;
	pthread_mutex_lock(&g_mu);
	si_ctx *c = need_ctx(&r, api);
	if (c != NULL && n > 0) {
		r = drain(c, api);
		uintptr_t ends[2] = {dst, src};
		int devs[2] = {dst_dev, src_dev};
		for (int i = 0; i < 2 && r == CUDA_SUCCESS; i++) {
			int in_arena = ends[i] >= si_host_base && ends[i] - si_host_base < si_arena_len;
			if (devs[i] < 0) devs[i] = in_arena; // cuMemcpy: unified addressing decides
			if (devs[i] && host_alloc(c, ends[i], n) == NULL) {
				char d[256];
				describe(d, sizeof d, c, ends[i]);
				si_log("%s(%zu bytes): the %s range is not inside one live allocation: %s", api, n,
				       i == 0 ? "destination" : "source", d);
				r = CUDA_ERROR_INVALID_VALUE;
			} else if (!devs[i] && in_arena) {
				si_log("%s: the %s is device memory, but the call copies %s host memory", api,
				       i == 0 ? "destination" : "source", i == 0 ? "to" : "from");
				r = CUDA_ERROR_INVALID_VALUE;
			}
		}
		if (r == CUDA_SUCCESS)
			memmove((void *)(devs[0] ? to_dev(dst) : dst), (const void *)(devs[1] ? to_dev(src) : src), n);
	}
	pthread_mutex_unlock(&g_mu);
	return r;
}

SI_EXPORT CUresult CUDAAPI cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) {
	return copy((uintptr_t)dst, 1, (uintptr_t)src, 0, n, "cuMemcpyHtoD");
}
SI_EXPORT CUresult CUDAAPI cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) {
	return copy((uintptr_t)dst, 0, (uintptr_t)src, 1, n, "cuMemcpyDtoH");
}
SI_EXPORT CUresult CUDAAPI cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n) {
	return copy((uintptr_t)dst, 1, (uintptr_t)src, 1, n, "cuMemcpyDtoD");
}
SI_EXPORT CUresult CUDAAPI cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n) {
	return copy((uintptr_t)dst, -1, (uintptr_t)src, -1, n, "cuMemcpy");
}

// copy_async queues a copy of n bytes to device memory dst, on the legacy default
// stream (the only one): from host memory src (dev_src = 0) — pageable memory is
// staged at once, as the driver does, so the caller may reuse it; page-locked memory
// (cuMemHostAlloc) is read when the copy runs and must not change until then — or
// from device memory src (dev_src = 1). Both device ranges must lie inside one live allocation;
// they are inaccessible to the host until the copy ran.
static CUresult copy_async(uintptr_t dst, uintptr_t src, int dev_src, size_t n, CUstream stream, const char *api) {
	CUresult r;
	pthread_mutex_lock(&g_mu);
	si_ctx *c = need_ctx(&r, api);
	si_stream *st = NULL;
	if (c != NULL && (r = get_stream(c, stream, &st, api)) != CUDA_SUCCESS) c = NULL;
	int capturing = c != NULL && c->cap != NULL && st == c->cap;
	if (c != NULL && capturing && !dev_src && n > 0 && !pinned_range(src, n)) {
		si_log("%s: a copy from pageable host memory while stream %p captures a graph: the graph would read "
		       "bytes the caller may reuse (copy from page-locked memory, cuMemHostAlloc)",
		       api, (void *)stream);
		c->cap_broken = 1;
		r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	} else if (c != NULL && n > 0) {
		si_alloc *ad = host_alloc(c, dst, n), *as = NULL;
		int src_in_arena = src >= si_host_base && src - si_host_base < si_arena_len;
		char d[256];
		if (ad == NULL) {
			describe(d, sizeof d, c, dst);
			si_log("%s(%zu bytes): the destination range is not inside one live allocation: %s", api, n, d);
			r = CUDA_ERROR_INVALID_VALUE;
		} else if (dev_src && (as = host_alloc(c, src, n)) == NULL) {
			describe(d, sizeof d, c, src);
			si_log("%s(%zu bytes): the source range is not inside one live allocation: %s", api, n, d);
			r = CUDA_ERROR_INVALID_VALUE;
		} else if (!dev_src && (src == 0 || src_in_arena)) {
			si_log("%s: the source %#lx is %s, but the call copies from host memory", api, (unsigned long)src,
			       src ? "device memory" : "NULL");
			r = CUDA_ERROR_INVALID_VALUE;
		} else {
			si_op *op = calloc(1, sizeof *op);
			op->kind = OP_COPY;
			op->dst = dst;
			op->bytes = n;
			if (dev_src) {
				op->src = src;
				add_operand(op, as);
			} else if (pinned_range(src, n)) {
				op->src = src;
				op->pinned = 1;
				op->sum = fnv((const uint8_t *)src, n);
			} else {
				op->staged = malloc(n);
				memcpy(op->staged, (const void *)src, n);
			}
			add_operand(op, ad);
			submit(c, st, op);
			if (cfg_trace) si_log("queued %s of %zu bytes to %#lx", api, n, (unsigned long)dst);
		}
	}
	pthread_mutex_unlock(&g_mu);
	return r;
}

// cuMemHostAlloc returns page-locked host memory (here: plain pages, recorded so that
// asynchronous copies read them when they run); cuMemFreeHost waits for queued work
// first, as the driver does.
SI_EXPORT CUresult CUDAAPI cuMemHostAlloc(void **pp, size_t n, unsigned int flags) {
	CUresult r;
	pthread_mutex_lock(&g_mu);
	si_ctx *c = need_ctx(&r, "cuMemHostAlloc");
	if (c != NULL) {
		if (pp == NULL || n == 0 || flags != 0) {
			r = CUDA_ERROR_INVALID_VALUE;
		} else {
			void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (p == MAP_FAILED) {
				r = CUDA_ERROR_OUT_OF_MEMORY;
			} else {
				if (npinned == cappinned) {
					cappinned = cappinned ? 2 * cappinned : 16;
					pinned = realloc(pinned, cappinned * sizeof *pinned);
				}
				pinned[npinned].base = (uintptr_t)p;
				pinned[npinned].len = n;
				npinned++;
				*pp = p;
			}
		}
	}
	pthread_mutex_unlock(&g_mu);
	return r;
}

SI_EXPORT CUresult CUDAAPI cuMemFreeHost(void *p) {
	CUresult r;
	pthread_mutex_lock(&g_mu);
	si_ctx *c = need_ctx(&r, "cuMemFreeHost");
	if (c != NULL) {
		size_t i = 0;
		while (i < npinned && pinned[i].base != (uintptr_t)p) i++;
		if (i == npinned) {
			si_log("cuMemFreeHost(%p): not page-locked memory from cuMemHostAlloc", p);
			r = CUDA_ERROR_INVALID_VALUE;
		} else {
			r = c->queued ? drain(c, "cuMemFreeHost") : CUDA_SUCCESS;
			munmap(p, pinned[i].len);
			pinned[i] = pinned[--npinned];
		}
	}
	pthread_mutex_unlock(&g_mu);
	return r;
}

SI_EXPORT CUresult CUDAAPI cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUstream stream) {
	return copy_async((uintptr_t)dst, (uintptr_t)src, 0, n, stream, "cuMemcpyHtoDAsync");
}
SI_EXPORT CUresult CUDAAPI cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream stream) {
	return copy_async((uintptr_t)dst, (uintptr_t)src, 1, n, stream, "cuMemcpyDtoDAsync");
}

// cuMemcpyDtoHAsync_v2 queues a copy from device memory to host memory, written when
// the copy runs; in a capture the destination must be page-locked memory.
SI_EXPORT CUresult CUDAAPI cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUstream stream) {
	const char *api = "cuMemcpyDtoHAsync";
	CUresult r;
	pthread_mutex_lock(&g_mu);
	si_ctx *c = need_ctx(&r, api);
	si_stream *st = NULL;
	if (c != NULL && (r = get_stream(c, stream, &st, api)) != CUDA_SUCCESS) c = NULL;
	if (c != NULL && n > 0) {
		si_alloc *as = host_alloc(c, (uintptr_t)src, n);
		uintptr_t d = (uintptr_t)dst;
		char desc[256];
		if (as == NULL) {
			describe(desc, sizeof desc, c, (uintptr_t)src);
			si_log("%s(%zu bytes): the source range is not inside one live allocation: %s", api, n, desc);
			r = CUDA_ERROR_INVALID_VALUE;
		} else if (d == 0 || (d >= si_host_base && d - si_host_base < si_arena_len)) {
			si_log("%s: the destination %#lx is %s, but the call copies to host memory", api, (unsigned long)d,
			       d ? "device memory" : "NULL");
			r = CUDA_ERROR_INVALID_VALUE;
		} else if (c->cap != NULL && st == c->cap && !pinned_range(d, n)) {
			si_log("%s: a copy to pageable host memory while stream %p captures a graph (use cuMemHostAlloc)", api,
			       (void *)stream);
			c->cap_broken = 1;
			r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
		} else {
			si_op *op = calloc(1, sizeof *op);
			op->kind = OP_COPY;
			op->to_host = 1;
			op->dst = d;
			op->src = (uintptr_t)src;
			op->bytes = n;
			add_operand(op, as);
			submit(c, st, op);
			if (cfg_trace) si_log("queued %s of %zu bytes from %#lx", api, n, (unsigned long)src);
		}
	}
	pthread_mutex_unlock(&g_mu);
	return r;
}

// ---- streams and graphs ----

SI_EXPORT CUresult CUDAAPI cuStreamCreate(CUstream *ph, unsigned int flags) {
	CUresult r;
	pthread_mutex_lock(&g_mu);
	si_ctx *c = need_ctx(&r, "cuStreamCreate");
	if (c != NULL) {
		if (ph == NULL || (flags != CU_STREAM_DEFAULT && flags != CU_STREAM_NON_BLOCKING)) {
			r = CUDA_ERROR_INVALID_VALUE;
		} else {
			si_stream *s = calloc(1, sizeof *s);
			*s = (si_stream){SI_MAGIC_STREAM, c, 1};
			c->nstreams++;
			*ph = (CUstream)s;
		}
	}
	pthread_mutex_unlock(&g_mu);
	return r;
}

// cuStreamDestroy_v2 waits for the queue and retires the stream (its memory is kept,
// so a later use of the handle is reported, not undefined).
SI_EXPORT CUresult CUDAAPI cuStreamDestroy_v2(CUstream h) {
	CUresult r;
	pthread_mutex_lock(&g_mu);
	si_ctx *c = need_ctx(&r, "cuStreamDestroy");
	si_stream *s = NULL;
	if (c != NULL && (r = get_stream(c, h, &s, "cuStreamDestroy")) == CUDA_SUCCESS) {
		if (s == NULL || s == c->cap) {
			si_log("cuStreamDestroy: %s", s == NULL ? "the legacy stream cannot be destroyed" : "the stream is capturing");
			r = CUDA_ERROR_INVALID_HANDLE;
		} else {
			r = c->queued ? drain(c, "cuStreamDestroy") : CUDA_SUCCESS;
			s->live = 0;
			c->nstreams--;
		}
	}
	pthread_mutex_unlock(&g_mu);
	return r;
}

SI_EXPORT CUresult CUDAAPI cuStreamSynchronize(CUstream h) {
	CUresult r;
	pthread_mutex_lock(&g_mu);
	si_ctx *c = need_ctx(&r, "cuStreamSynchronize");
	if (c != NULL) {
		si_stream *s = (si_stream *)h;
		if (h != NULL && h != CU_STREAM_LEGACY && (s->magic != SI_MAGIC_STREAM || !s->live || s->ctx != c)) {
			si_log("cuStreamSynchronize: %p is not a live stream of the current context", (void *)h);
			r = CUDA_ERROR_INVALID_HANDLE;
		} else {
			r = drain(c, "cuStreamSynchronize");
		}
	}
	pthread_mutex_unlock(&g_mu);
	return r;
}

SI_EXPORT CUresult CUDAAPI cuStreamBeginCapture_v2(CUstream h, CUstreamCaptureMode mode) {
	CUresult r;
	pthread_mutex_lock(&g_mu);
	si_ctx *c = need_ctx(&r, "cuStreamBeginCapture");
	si_stream *s = NULL;
	if (c != NULL && (r = get_stream(c, h, &s, "cuStreamBeginCapture")) == CUDA_SUCCESS) {
		if (s == NULL || c->cap != NULL || mode > CU_STREAM_CAPTURE_MODE_RELAXED) {
			si_log("cuStreamBeginCapture: %s", s == NULL ? "the legacy stream cannot be captured"
							   : c->cap != NULL ? "a stream of the context captures already"
									    : "unknown capture mode");
			r = s == NULL ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_ERROR_ILLEGAL_STATE;
		} else {
			c->cap = s;
			c->cap_head = c->cap_tail = NULL;
			c->cap_n = c->cap_broken = 0;
		}
	}
	pthread_mutex_unlock(&g_mu);
	return r;
}

// oplist_release drops a reference to captured operations; the last frees them.
static void oplist_release(si_oplist *l) {
	if (--l->refs > 0) return;
	for (si_op *op = l->head, *next; op != NULL; op = next) {
		next = op->next;
		if (op->kind == OP_HOSTFN) op->hostfn(op->arg, 0);
		free(op->staged);
		free(op);
	}
	free(l);
}

SI_EXPORT CUresult CUDAAPI cuStreamEndCapture(CUstream h, CUgraph *pg) {
	CUresult r;
	pthread_mutex_lock(&g_mu);
	si_ctx *c = need_ctx(&r, "cuStreamEndCapture");
	if (c != NULL) {
		if (pg == NULL || c->cap == NULL || (si_stream *)h != c->cap) {
			si_log("cuStreamEndCapture: stream %p is not capturing", (void *)h);
			r = CUDA_ERROR_ILLEGAL_STATE;
		} else {
			si_oplist *l = calloc(1, sizeof *l);
			*l = (si_oplist){c->cap_head, c->cap_n, 1};
			c->cap = NULL;
			c->cap_head = c->cap_tail = NULL;
			if (c->cap_broken) {
				oplist_release(l);
				r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
			} else {
				si_graph *g = calloc(1, sizeof *g);
				*g = (si_graph){SI_MAGIC_GRAPH, l};
				*pg = (CUgraph)g;
				if (cfg_trace) si_log("captured a graph of %d operation(s)", l->n);
			}
		}
	}
	pthread_mutex_unlock(&g_mu);
	return r;
}

SI_EXPORT CUresult CUDAAPI cuGraphInstantiateWithFlags(CUgraphExec *pe, CUgraph hg, unsigned long long flags) {
	CUresult r;
	pthread_mutex_lock(&g_mu);
	si_ctx *c = need_ctx(&r, "cuGraphInstantiateWithFlags");
	si_graph *g = (si_graph *)hg;
	if (c != NULL) {
		if (pe == NULL || g == NULL || g->magic != SI_MAGIC_GRAPH || flags != 0) {
			r = CUDA_ERROR_INVALID_VALUE;
		} else {
			si_graph *e = calloc(1, sizeof *e);
			*e = (si_graph){SI_MAGIC_EXEC, g->list};
			g->list->refs++;
			*pe = (CUgraphExec)e;
		}
	}
	pthread_mutex_unlock(&g_mu);
	return r;
}

static CUresult graph_destroy(void *h, uint64_t magic, const char *api) {
	CUresult r;
	pthread_mutex_lock(&g_mu);
	si_ctx *c = need_ctx(&r, api);
	si_graph *g = h;
	if (c != NULL) {
		if (g == NULL || g->magic != magic) {
			si_log("%s: %p is not a live graph", api, h);
			r = CUDA_ERROR_INVALID_VALUE;
		} else {
			g->magic = 0;
			oplist_release(g->list);
			free(g);
		}
	}
	pthread_mutex_unlock(&g_mu);
	return r;
}

SI_EXPORT CUresult CUDAAPI cuGraphDestroy(CUgraph g) { return graph_destroy(g, SI_MAGIC_GRAPH, "cuGraphDestroy"); }
SI_EXPORT CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec e) {
	return graph_destroy(e, SI_MAGIC_EXEC, "cuGraphExecDestroy");
}

// cuGraphLaunch queues a graph's operations as one. Every allocation they use must
// still be live, and until the graph ran every one of them is inaccessible to the
// host (nothing outside the graph touches its buffers while it runs); page-locked
// sources are read when it runs and must not change until then.
SI_EXPORT CUresult CUDAAPI cuGraphLaunch(CUgraphExec he, CUstream h) {
	CUresult r;
	pthread_mutex_lock(&g_mu);
	si_ctx *c = need_ctx(&r, "cuGraphLaunch");
	si_stream *st = NULL;
	si_graph *e = (si_graph *)he;
	if (c != NULL && (r = get_stream(c, h, &st, "cuGraphLaunch")) == CUDA_SUCCESS) {
		if (e == NULL || e->magic != SI_MAGIC_EXEC) {
			si_log("cuGraphLaunch: %p is not an instantiated graph", (void *)he);
			r = CUDA_ERROR_INVALID_VALUE;
		} else if (c->cap != NULL && st == c->cap) {
			si_log("cuGraphLaunch: into a capturing stream (not supported by the stand-in)");
			r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
		} else {
			int i = 0;
			for (si_op *o = e->list->head; o != NULL && r == CUDA_SUCCESS; o = o->next, i++)
				for (int k = 0; k < o->nops; k++)
					if (!allocs[o->opid[k] - 1].live) {
						si_log("cuGraphLaunch: operation %d of the graph (%s) uses allocation #%lu, freed since the "
						       "capture",
						       i, o->kind == OP_KERNEL ? o->fn->name : o->kind == OP_HOSTFN ? "a GEMM" : "a copy or memset",
						       o->opid[k]);
						r = CUDA_ERROR_INVALID_VALUE;
						break;
					}
			if (r == CUDA_SUCCESS) {
				si_op *op = calloc(1, sizeof *op);
				op->kind = OP_GRAPH;
				op->list = e->list;
				e->list->refs++;
				for (si_op *o = e->list->head; o != NULL; o = o->next) {
					if (o->kind == OP_KERNEL) o->info.launch = ++g_launches;
					if (o->kind == OP_COPY && o->pinned) o->sum = fnv((const uint8_t *)o->src, o->bytes);
					for (int k = 0; k < o->nops; k++) mark_busy(&allocs[o->opid[k] - 1]);
				}
				enqueue(c, op);
				if (cfg_trace) si_log("queued a graph of %d operation(s)", e->list->n);
			}
		}
	}
	pthread_mutex_unlock(&g_mu);
	return r;
}

// ---- modules: PTX parsing ----

typedef struct {
	const char *s;
	size_t pos, len;
	int line;
	char tok[256];
} lexer;

// next reads the next token of PTX (comments skipped) into lx->tok; 0 at the end.
static int next(lexer *lx) {
	for (;;) {
		while (lx->pos < lx->len && (lx->s[lx->pos] == ' ' || lx->s[lx->pos] == '\t' || lx->s[lx->pos] == '\r' ||
					     lx->s[lx->pos] == '\n')) {
			if (lx->s[lx->pos] == '\n') lx->line++;
			lx->pos++;
		}
		if (lx->pos + 1 < lx->len && lx->s[lx->pos] == '/' && lx->s[lx->pos + 1] == '/') {
			while (lx->pos < lx->len && lx->s[lx->pos] != '\n') lx->pos++;
			continue;
		}
		if (lx->pos + 1 < lx->len && lx->s[lx->pos] == '/' && lx->s[lx->pos + 1] == '*') {
			lx->pos += 2;
			while (lx->pos + 1 < lx->len && !(lx->s[lx->pos] == '*' && lx->s[lx->pos + 1] == '/')) {
				if (lx->s[lx->pos] == '\n') lx->line++;
				lx->pos++;
			}
			lx->pos += 2;
			continue;
		}
		break;
	}
	if (lx->pos >= lx->len) {
		lx->tok[0] = 0;
		return 0;
	}
	char ch = lx->s[lx->pos];
	size_t n = 0;
	if (strchr("(){}[],;:<>+-=@!|", ch)) {
		lx->tok[n++] = ch;
		lx->pos++;
	} else if (ch == '"') {
		lx->tok[n++] = ch;
		lx->pos++;
		while (lx->pos < lx->len && lx->s[lx->pos] != '"' && n < sizeof lx->tok - 2) lx->tok[n++] = lx->s[lx->pos++];
		if (lx->pos < lx->len) lx->tok[n++] = lx->s[lx->pos++];
	} else {
		while (lx->pos < lx->len && !strchr(" \t\r\n(){}[],;:<>+-=@!|\"", lx->s[lx->pos]) && n < sizeof lx->tok - 1)
			lx->tok[n++] = lx->s[lx->pos++];
	}
	lx->tok[n] = 0;
	return 1;
}

typedef struct {
	char *buf;
	size_t cap, used;
} logbuf;

static void logf_(logbuf *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
// logf_ writes a module-load message into the caller's JIT error log, or to stderr
// when the caller gave none (as cuModuleLoadData's callers cannot).
static void logf_(logbuf *l, const char *fmt, ...) {
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (l == NULL || l->buf == NULL || l->cap == 0) {
		si_log("%s", msg);
		return;
	}
	size_t room = l->cap - l->used;
	if (room <= 1) return;
	int w = snprintf(l->buf + l->used, room, "%s%s", l->used ? "\n" : "", msg);
	if (w > 0) l->used += (size_t)w < room ? (size_t)w : room - 1;
}

// param_size returns the byte size of a PTX .param type token (.u32, .f64, ...), or 0.
static int param_size(const char *t) {
	if (t[0] != '.' || !strchr("usbf", t[1])) return 0;
	int bits = atoi(t + 2);
	if (bits != 8 && bits != 16 && bits != 32 && bits != 64) return 0;
	if (strlen(t + 2) != (bits >= 10 ? 2u : 1u)) return 0;
	return bits / 8;
}

static const si_kernel *find_kernel(const si_kernel *table, const char *name) {
	for (const si_kernel *k = table; k->name; k++)
		if (strcmp(k->name, name) == 0) return k;
	return NULL;
}

static void signature(char *buf, size_t n, const si_kernel *k) {
	size_t u = (size_t)snprintf(buf, n, "%s(", k->name);
	for (int i = 0; i < k->nparams && u < n; i++)
		u += (size_t)snprintf(buf + u, n - u, "%s%s", i ? ", " : "", k->params[i].decl);
	if (u < n) snprintf(buf + u, n - u, ")");
}

// parse_dims reads ".maxntid x[, y[, z]]" operands.
static int parse_dims(lexer *lx, unsigned d[3]) {
	d[0] = d[1] = d[2] = 1;
	for (int i = 0; i < 3; i++) {
		if (!next(lx)) return -1;
		d[i] = (unsigned)strtoul(lx->tok, NULL, 0);
		if (d[i] == 0) return -1;
		size_t save = lx->pos;
		int line = lx->line;
		if (!next(lx) || strcmp(lx->tok, ",") != 0) {
			lx->pos = save;
			lx->line = line;
			return 0;
		}
	}
	return 0;
}

// load_ptx parses a module and checks it against dpfil.cu's kernels. On failure it
// logs why (into the JIT error log too) and returns CUDA_ERROR_INVALID_PTX.
static CUresult load_ptx(si_ctx *ctx, const char *image, si_module **out, logbuf *elog, logbuf *ilog) {
	if (image == NULL) return CUDA_ERROR_INVALID_VALUE;
	size_t len = strlen(image);
	if (len >= 4 && memcmp(image, "\177ELF", 4) == 0) {
		logf_(elog, "cuModuleLoadData: a cubin/ELF image; the stand-in takes PTX text only");
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	lexer lx = {image, 0, len, 1, {0}};
	int version = -1, target = -1, addr = 0, depth = 0;
	si_func *funcs = NULL;
	int nf = 0, capf = 0;
	CUresult bad = CUDA_ERROR_INVALID_PTX;
#define FAIL(...)                                               \
	do {                                                    \
		char m_[512];                                   \
		snprintf(m_, sizeof m_, __VA_ARGS__);           \
		logf_(elog, "ptx line %d: %s", lx.line, m_);    \
		goto fail;                                      \
	} while (0)
	while (next(&lx)) {
		if (strcmp(lx.tok, "{") == 0) {
			depth++;
			continue;
		}
		if (strcmp(lx.tok, "}") == 0) {
			if (--depth < 0) FAIL("unbalanced '}'");
			continue;
		}
		if (depth > 0) continue;
		if (strcmp(lx.tok, ".version") == 0) {
			if (!next(&lx)) FAIL(".version without a number");
			int maj = 0, min = 0;
			if (sscanf(lx.tok, "%d.%d", &maj, &min) != 2) FAIL("cannot read .version %s", lx.tok);
			version = maj * 10 + min;
			if (version > 87 || maj < 1) // what a CUDA 12.8 driver's JIT accepts
				FAIL("PTX ISA .version %s is newer than this driver (CUDA 12.8, PTX ISA 8.7) supports", lx.tok);
		} else if (strcmp(lx.tok, ".target") == 0) {
			for (;;) {
				if (!next(&lx)) FAIL(".target without a target");
				if (strncmp(lx.tok, "sm_", 3) == 0) {
					target = atoi(lx.tok + 3);
					if (target > cfg_cc)
						FAIL(".target %s is newer than the device (sm_%d): the JIT cannot compile it", lx.tok, cfg_cc);
				} else if (strcmp(lx.tok, "map_f64_to_f32") == 0) {
					FAIL(".target map_f64_to_f32 would run dpfil.cu's double reductions in float");
				} else if (strcmp(lx.tok, "texmode_unified") != 0 && strcmp(lx.tok, "texmode_independent") != 0 &&
					   strcmp(lx.tok, "debug") != 0) {
					FAIL("unknown .target %s", lx.tok);
				}
				size_t save = lx.pos;
				int line = lx.line;
				if (!next(&lx) || strcmp(lx.tok, ",") != 0) {
					lx.pos = save;
					lx.line = line;
					break;
				}
			}
		} else if (strcmp(lx.tok, ".address_size") == 0) {
			if (!next(&lx)) FAIL(".address_size without a number");
			addr = atoi(lx.tok);
			if (addr != 64) FAIL(".address_size %s: dpfil's pointers are 64-bit", lx.tok);
		} else if (strcmp(lx.tok, ".entry") == 0) {
			if (version < 0 || target < 0) FAIL(".entry before .version and .target");
			if (!next(&lx)) FAIL(".entry without a name");
			if (nf == capf) {
				capf = capf ? 2 * capf : 32;
				funcs = realloc(funcs, (size_t)capf * sizeof *funcs);
			}
			si_func *f = &funcs[nf];
			memset(f, 0, sizeof *f);
			f->magic = SI_MAGIC_FN;
			snprintf(f->name, sizeof f->name, "%s", lx.tok);
			for (int i = 0; i < nf; i++)
				if (strcmp(funcs[i].name, f->name) == 0) FAIL("entry %s declared twice", f->name);
			if (!next(&lx) || strcmp(lx.tok, "(") != 0) FAIL("entry %s: expected its parameter list", f->name);
			// .param [.align N] .type [.ptr .space .align N] name[N] , ... )
			for (;;) {
				if (!next(&lx)) FAIL("entry %s: unterminated parameter list", f->name);
				if (strcmp(lx.tok, ")") == 0) break;
				if (strcmp(lx.tok, ",") == 0) continue;
				if (strcmp(lx.tok, ".param") != 0) FAIL("entry %s: expected .param, got %s", f->name, lx.tok);
				int size = 0;
				for (;;) {
					if (!next(&lx)) FAIL("entry %s: unterminated parameter", f->name);
					if (strcmp(lx.tok, ".align") == 0) {
						next(&lx);
						continue;
					}
					if (lx.tok[0] == '.') {
						int s = param_size(lx.tok);
						if (s) {
							if (size) FAIL("entry %s: two types in one parameter", f->name);
							size = s;
						}
						continue; // .ptr, .global, ...
					}
					break; // the name
				}
				if (size == 0) FAIL("entry %s: parameter %s has no type", f->name, lx.tok);
				size_t save = lx.pos;
				int line = lx.line;
				if (next(&lx) && strcmp(lx.tok, "[") == 0) {
					if (!next(&lx)) FAIL("entry %s: bad array parameter", f->name);
					size *= atoi(lx.tok);
					if (!next(&lx) || strcmp(lx.tok, "]") != 0) FAIL("entry %s: bad array parameter", f->name);
				} else {
					lx.pos = save;
					lx.line = line;
				}
				if (f->nparams == SI_MAXPARAMS) FAIL("entry %s: more than %d parameters", f->name, SI_MAXPARAMS);
				f->psize[f->nparams++] = size;
			}
			// Performance directives up to the body or the ';' of a declaration.
			for (;;) {
				size_t save = lx.pos;
				int line = lx.line;
				if (!next(&lx)) FAIL("entry %s: no body", f->name);
				if (strcmp(lx.tok, ".maxntid") == 0) {
					if (parse_dims(&lx, f->maxntid)) FAIL("entry %s: bad .maxntid", f->name);
				} else if (strcmp(lx.tok, ".reqntid") == 0) {
					if (parse_dims(&lx, f->reqntid)) FAIL("entry %s: bad .reqntid", f->name);
				} else if (lx.tok[0] == '.') {
					next(&lx); // .minnctapersm n, .maxnreg n, ...
				} else {
					lx.pos = save;
					lx.line = line;
					break;
				}
			}
			nf++;
		}
	}
	if (depth != 0) FAIL("unbalanced '{'");
	if (version < 0) FAIL("no .version directive");
	if (target < 0) FAIL("no .target directive");
	if (addr != 64) FAIL("no .address_size 64 directive");
	// Every entry against the C signature of the same kernel in dpfil.cu.
	for (int i = 0; i < nf; i++) {
		si_func *f = &funcs[i];
		const si_kernel *k = find_kernel(si_kernels_checked, f->name);
		if (k == NULL) {
			logf_(elog, "PTX entry %s has no kernel of that name in dpfil.cu as the stand-in was built: it cannot run it",
			      f->name);
			goto fail;
		}
		char sig[1024];
		signature(sig, sizeof sig, k);
		if (k->nparams != f->nparams) {
			logf_(elog, "PTX entry %s has %d parameters, but dpfil.cu declares %d: %s (stale PTX: run make ptx)",
			      f->name, f->nparams, k->nparams, sig);
			goto fail;
		}
		for (int j = 0; j < f->nparams; j++) {
			if (f->psize[j] != k->params[j].size) {
				logf_(elog, "PTX entry %s: parameter %d is %d bytes, but dpfil.cu's is %d (%s) in %s (stale PTX: run make ptx)",
				      f->name, j, f->psize[j], k->params[j].size, k->params[j].decl, sig);
				goto fail;
			}
		}
		f->kc = k;
		f->kf = find_kernel(si_kernels_fast, f->name);
	}
#undef FAIL
	si_module *m = calloc(1, sizeof *m);
	m->magic = SI_MAGIC_MOD;
	m->ctx = ctx;
	m->loaded = 1;
	m->nfuncs = nf;
	m->funcs = funcs;
	for (int i = 0; i < nf; i++) funcs[i].mod = m;
	if (nmodules == capmodules) {
		int c = capmodules ? 2 * capmodules : 64;
		si_module **nm = realloc(modules, (size_t)c * sizeof *nm);
		if (nm == NULL) {
			free(m);
			free(funcs);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		modules = nm;
		capmodules = c;
	}
	modules[nmodules++] = m;
	if (ilog && ilog->buf && ilog->cap) {
		int w = snprintf(ilog->buf, ilog->cap,
				 "dpfil stand-in: PTX ISA %d.%d, sm_%d, %d entries checked against dpfil.cu's C signatures",
				 version / 10, version % 10, target, nf);
		ilog->used = w < 0 ? 0 : ((size_t)w < ilog->cap ? (size_t)w : ilog->cap - 1);
	}
	*out = m;
	return CUDA_SUCCESS;
fail:
	free(funcs);
	return bad;
}

static CUresult module_load(CUmodule *mod, const void *image, unsigned n, CUjit_option *opts, void **vals,
			    const char *api) {
	CUresult r;
	if (mod == NULL) return CUDA_ERROR_INVALID_VALUE;
	logbuf elog = {0}, ilog = {0};
	int esize_at = -1, isize_at = -1;
	for (unsigned i = 0; i < n; i++) {
		switch (opts[i]) {
		case CU_JIT_ERROR_LOG_BUFFER: elog.buf = vals[i]; break;
		case CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES: elog.cap = (size_t)(uintptr_t)vals[i]; esize_at = (int)i; break;
		case CU_JIT_INFO_LOG_BUFFER: ilog.buf = vals[i]; break;
		case CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES: ilog.cap = (size_t)(uintptr_t)vals[i]; isize_at = (int)i; break;
		default:
			if ((int)opts[i] < 0 || opts[i] >= CU_JIT_NUM_OPTIONS) return CUDA_ERROR_INVALID_VALUE;
		}
	}
	if ((elog.buf == NULL) != (esize_at < 0) || (ilog.buf == NULL) != (isize_at < 0)) {
		si_log("%s: a JIT log buffer without its size option, or the reverse (CUDA_ERROR_INVALID_VALUE)", api);
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (elog.buf && elog.cap) elog.buf[0] = 0;
	if (ilog.buf && ilog.cap) ilog.buf[0] = 0;
	pthread_mutex_lock(&g_mu);
	si_ctx *c = need_ctx(&r, api);
	if (c != NULL) {
		si_module *m = NULL;
		r = load_ptx(c, image, &m, &elog, &ilog);
		if (r == CUDA_SUCCESS) *mod = (CUmodule)m;
	}
	pthread_mutex_unlock(&g_mu);
	// OUT: the bytes of each log buffer that were filled.
	if (esize_at >= 0) vals[esize_at] = (void *)(uintptr_t)(elog.used ? elog.used + 1 : 0);
	if (isize_at >= 0) vals[isize_at] = (void *)(uintptr_t)(ilog.used ? ilog.used + 1 : 0);
	return r;
}

SI_EXPORT CUresult CUDAAPI cuModuleLoadData(CUmodule *mod, const void *image) {
	return module_load(mod, image, 0, NULL, NULL, "cuModuleLoadData");
}

SI_EXPORT CUresult CUDAAPI cuModuleLoadDataEx(CUmodule *mod, const void *image, unsigned int n, CUjit_option *opts,
					       void **vals) {
	if (n > 0 && (opts == NULL || vals == NULL)) return CUDA_ERROR_INVALID_VALUE;
	return module_load(mod, image, n, opts, vals, "cuModuleLoadDataEx");
}

static si_module *module_of(CUmodule h) {
	si_module *m = (si_module *)h;
	for (int i = 0; i < nmodules; i++)
		if (modules[i] == m) return m->magic == SI_MAGIC_MOD ? m : NULL;
	return NULL;
}

SI_EXPORT CUresult CUDAAPI cuModuleUnload(CUmodule h) {
	CUresult r;
	pthread_mutex_lock(&g_mu);
	si_ctx *c = need_ctx(&r, "cuModuleUnload");
	if (c != NULL) {
		si_module *m = module_of(h);
		if (m == NULL || !m->loaded) {
			si_log("cuModuleUnload: not a loaded module (CUDA_ERROR_INVALID_HANDLE)");
			r = CUDA_ERROR_INVALID_HANDLE;
		} else if (m->ctx != c) {
			si_log("cuModuleUnload: the module belongs to another context (CUDA_ERROR_INVALID_CONTEXT)");
			r = CUDA_ERROR_INVALID_CONTEXT;
		} else {
			r = c->queued ? drain(c, "cuModuleUnload") : CUDA_SUCCESS;
			m->loaded = 0;
		}
	}
	pthread_mutex_unlock(&g_mu);
	return r;
}

SI_EXPORT CUresult CUDAAPI cuModuleGetFunction(CUfunction *fn, CUmodule h, const char *name) {
	CUresult r;
	if (fn == NULL || name == NULL) return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&g_mu);
	si_ctx *c = need_ctx(&r, "cuModuleGetFunction");
	if (c != NULL) {
		si_module *m = module_of(h);
		if (m == NULL || !m->loaded) {
			r = CUDA_ERROR_INVALID_HANDLE;
		} else {
			r = CUDA_ERROR_NOT_FOUND;
			for (int i = 0; i < m->nfuncs; i++)
				if (strcmp(m->funcs[i].name, name) == 0) {
					*fn = (CUfunction)&m->funcs[i];
					r = CUDA_SUCCESS;
				}
		}
	}
	pthread_mutex_unlock(&g_mu);
	return r;
}

// ---- launches ----

SI_EXPORT CUresult CUDAAPI cuLaunchKernel(CUfunction h, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
					   unsigned bz, unsigned shmem, CUstream stream, void **params, void **extra) {
	CUresult r;
	pthread_mutex_lock(&g_mu);
	si_ctx *c = need_ctx(&r, "cuLaunchKernel");
	if (c == NULL) goto out;
	si_func *f = (si_func *)h;
	if (f == NULL || f->magic != SI_MAGIC_FN || module_of((CUmodule)f->mod) == NULL || !f->mod->loaded) {
		si_log("cuLaunchKernel: not a function of a loaded module (CUDA_ERROR_INVALID_HANDLE)");
		r = CUDA_ERROR_INVALID_HANDLE;
		goto out;
	}
	r = CUDA_ERROR_INVALID_VALUE;
	if (f->mod->ctx != c) {
		si_log("cuLaunchKernel %s: the kernel's module belongs to another context", f->name);
		r = CUDA_ERROR_INVALID_CONTEXT;
		goto out;
	}
	uint64_t threads = (uint64_t)bx * by * bz, blocks = (uint64_t)gx * gy * gz;
	if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0 || bx > 1024 || by > 1024 || bz > 64 ||
	    threads > 1024 || gx > 2147483647u || gy > 65535 || gz > 65535) {
		si_log("cuLaunchKernel %s: grid (%u,%u,%u) block (%u,%u,%u) outside the device's limits", f->name, gx, gy, gz, bx,
		       by, bz);
		goto out;
	}
	if ((f->maxntid[0] && (bx > f->maxntid[0] || by > f->maxntid[1] || bz > f->maxntid[2] ||
			       threads > (uint64_t)f->maxntid[0] * f->maxntid[1] * f->maxntid[2])) ||
	    (f->reqntid[0] && (bx != f->reqntid[0] || by != f->reqntid[1] || bz != f->reqntid[2]))) {
		si_log("cuLaunchKernel %s: block (%u,%u,%u) breaks the PTX's .maxntid/.reqntid", f->name, bx, by, bz);
		goto out;
	}
	if (blocks * threads >= 0x7fffffffull) {
		si_log("cuLaunchKernel %s: %lu threads: more than the stand-in can number", f->name,
		       (unsigned long)(blocks * threads));
		goto out;
	}
	if (shmem > 49152) {
		si_log("cuLaunchKernel %s: %u bytes of dynamic shared memory", f->name, shmem);
		goto out;
	}
	si_stream *st = NULL;
	if ((r = get_stream(c, stream, &st, "cuLaunchKernel")) != CUDA_SUCCESS) goto out;
	r = CUDA_ERROR_INVALID_VALUE;
	if (extra != NULL) {
		si_log("cuLaunchKernel %s: the extra argument form is not supported; pass kernelParams", f->name);
		goto out;
	}
	if (f->nparams > 0 && params == NULL) {
		si_log("cuLaunchKernel %s: kernelParams is NULL but the kernel takes %d parameters", f->name, f->nparams);
		goto out;
	}
	si_op *op = calloc(1, sizeof *op);
	si_alloc *operands[SI_MAXPARAMS];
	int nops = 0;
	for (int i = 0; i < f->nparams; i++) {
		const si_param *p = &f->kc->params[i];
		if (params[i] == NULL) {
			si_log("cuLaunchKernel %s: kernelParams[%d] (%s) is NULL", f->name, i, p->decl);
			free(op);
			goto out;
		}
		// gorgonia.org/cu passes every argument as an 8-byte slot (cuda.Arg): a 4-byte
		// parameter is its low half, and the high half must be 0. An int64 or a
		// sign-extended int where the kernel takes a 32-bit int is refused here.
		uint64_t v;
		memcpy(&v, params[i], 8);
		if (f->psize[i] == 4 && (v >> 32) != 0) {
			si_log("cuLaunchKernel %s: argument %d (%s) is the 8-byte slot %#lx: the kernel reads 4 bytes and the "
			       "upper 4 are not 0 (a 64-bit value passed where dpfil.cu takes a 32-bit %s?)",
			       f->name, i, p->decl, (unsigned long)v, p->type == SI_FLOAT ? "float" : "int");
			free(op);
			goto out;
		}
		if (p->type == SI_PTR && v != 0) {
			si_alloc *a = host_alloc(c, (uintptr_t)v, 0);
			if (a == NULL) {
				char d[256];
				describe(d, sizeof d, c, (uintptr_t)v);
				si_log("cuLaunchKernel %s: argument %d (%s) is not device memory of this context: %s", f->name, i,
				       p->decl, d);
				free(op);
				goto out;
			}
			if (v % (uint64_t)p->elem != 0) {
				si_log("cuLaunchKernel %s: argument %d (%s) = %#lx is not aligned to %d bytes", f->name, i, p->decl,
				       (unsigned long)v, p->elem);
				free(op);
				goto out;
			}
			operands[nops++] = a;
			v = to_dev((uintptr_t)v);
		}
		op->slots[i] = v;
	}
	op->kind = OP_KERNEL;
	op->fn = f;
	op->info.kernel = f->name;
	op->info.launch = ++g_launches;
	op->info.grid[0] = gx, op->info.grid[1] = gy, op->info.grid[2] = gz;
	op->info.block[0] = bx, op->info.block[1] = by, op->info.block[2] = bz;
	for (int i = 0; i < nops; i++) op->opid[i] = operands[i]->id;
	op->nops = nops;
	submit(c, st, op);
	if (cfg_trace)
		si_log("queued launch #%lu %s grid (%u,%u,%u) block (%u,%u,%u)", op->info.launch, f->name, gx, gy, gz, bx, by,
		       bz);
	r = CUDA_SUCCESS;
out:
	pthread_mutex_unlock(&g_mu);
	return r;
}

// ---- for the stand-in cuBLAS (cublas.c): stream-ordered host work ----

// dpfil_standin_enqueue queues fn(arg) on stream of the calling thread's current
// context (or records it, when the stream captures a graph), after checking that each
// of the n ranges (base[i], bytes[i]), called names[i] in messages, lies inside one
// live allocation of that context; the ranges are inaccessible to the host until the
// work ran. fn(arg, 1) runs the work (at the next synchronising call, or at each
// launch of the graph); fn(arg, 0) follows once the work is done with — run, dropped
// because the context failed, or its graph destroyed — so that fn can free arg.
// what names the call in messages.
SI_EXPORT CUresult dpfil_standin_enqueue(const char *what, CUstream stream, void (*fn)(void *, int), void *arg, int n,
					 const char *const *names, const uintptr_t *base, const uint64_t *bytes) {
	CUresult r;
	pthread_mutex_lock(&g_mu);
	si_ctx *c = need_ctx(&r, what);
	si_stream *st = NULL;
	if (c != NULL && (r = get_stream(c, stream, &st, what)) != CUDA_SUCCESS) c = NULL;
	if (c != NULL) {
		si_alloc *as[16];
		for (int i = 0; i < n && i < 16; i++) {
			as[i] = host_alloc(c, base[i], bytes[i]);
			if (as[i] == NULL) {
				char d[256];
				describe(d, sizeof d, c, base[i]);
				si_log("%s: operand %s (%lu bytes from %#lx) is not inside one live device allocation: %s", what,
				       names[i], (unsigned long)bytes[i], (unsigned long)base[i], d);
				r = CUDA_ERROR_INVALID_VALUE;
				break;
			}
		}
		if (r == CUDA_SUCCESS) {
			si_op *op = calloc(1, sizeof *op);
			op->kind = OP_HOSTFN;
			op->hostfn = fn;
			op->arg = arg;
			for (int i = 0; i < n && i < 16; i++) add_operand(op, as[i]);
			submit(c, st, op);
			if (cfg_trace) si_log("queued %s", what);
		}
	}
	pthread_mutex_unlock(&g_mu);
	return r;
}

// dpfil_standin_device_view translates a host-view device address for use inside a
// function queued with dpfil_standin_enqueue.
SI_EXPORT void *dpfil_standin_device_view(const void *p) {
	uintptr_t u = (uintptr_t)p;
	if (u >= si_host_base && u - si_host_base < si_arena_len) return (void *)to_dev(u);
	return (void *)p;
}

// ---- context lifetime, for the stand-in cuBLAS and the tests ----

// dpfil_standin_ctx_live reports whether ctx (a context handle, destroyed or not) is
// alive: the stand-in cuBLAS refuses to run in a context that was released and
// destroyed under it.
SI_EXPORT int dpfil_standin_ctx_live(const void *ctx) {
	pthread_mutex_lock(&g_mu);
	int live = ctx != NULL && ((const si_ctx *)ctx)->live;
	pthread_mutex_unlock(&g_mu);
	return live;
}

// ctx_stats prints the running counts of primary-context retains and releases after
// each (DPFIL_STANDIN_CTXSTATS=1: the context-lifetime test reads the last line; a Go
// program leaves through exit_group, so nothing runs at exit). Called with g_mu held.
static void ctx_stats(void) {
	if (env("DPFIL_STANDIN_CTXSTATS"))
		si_log("primary context: %lu retain(s), %lu release(s), %s", g_ctx_retains, g_ctx_releases,
		       g_primary != NULL && g_primary->live ? "live" : "destroyed");
}

// ---- events: host timestamps taken when the queue runs them ----

// An event recorded on a stream is queued like any other operation; when the
// queue runs (at the next synchronising call), it takes the host's monotonic clock,
// so the time between two events is the time the stand-in took to run the work
// queued between them: the stand-in's "GPU time". Events are never freed (a stale
// handle stays detectable).
#define SI_MAGIC_EVENT 0x6576656e74ull

typedef struct {
	uint64_t magic;
	si_ctx *ctx;
	int recorded, done;
	struct timespec t;
} si_event;

static si_event *event_of(CUevent h) {
	si_event *e = (si_event *)h;
	return e != NULL && e->magic == SI_MAGIC_EVENT ? e : NULL;
}

// event_stamp is an OP_HOSTFN: called with run = 1 when the queue runs it, and with
// run = 0 when the op is released (after running, or unrun after a fault), which
// leaves a stamped event done.
static void event_stamp(void *arg, int run) {
	si_event *e = arg;
	if (run) {
		clock_gettime(CLOCK_MONOTONIC, &e->t);
		e->done = 1;
	}
}

SI_EXPORT CUresult CUDAAPI cuEventCreate(CUevent *ph, unsigned int flags) {
	if (ph == NULL || (flags & ~(unsigned)(CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING)) != 0)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r;
	pthread_mutex_lock(&g_mu);
	si_ctx *c = need_ctx(&r, "cuEventCreate");
	if (c != NULL) {
		si_event *e = calloc(1, sizeof *e);
		e->magic = SI_MAGIC_EVENT;
		e->ctx = c;
		*ph = (CUevent)e;
	}
	pthread_mutex_unlock(&g_mu);
	return r;
}

SI_EXPORT CUresult CUDAAPI cuEventRecord(CUevent h, CUstream s) {
	CUresult r;
	pthread_mutex_lock(&g_mu);
	si_event *e = event_of(h);
	si_ctx *c = need_ctx(&r, "cuEventRecord");
	if (c != NULL && (e == NULL || e->ctx != c)) {
		si_log("cuEventRecord: %p is not an event of the current context (CUDA_ERROR_INVALID_HANDLE)", (void *)h);
		r = CUDA_ERROR_INVALID_HANDLE;
	} else if (c != NULL) {
		si_stream *st = NULL;
		r = get_stream(c, s, &st, "cuEventRecord");
		if (r == CUDA_SUCCESS && c->cap != NULL && st == c->cap) {
			si_log("cuEventRecord: into a capturing stream (not supported by the stand-in)");
			r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
		} else if (r == CUDA_SUCCESS) {
			si_op *op = calloc(1, sizeof *op);
			op->kind = OP_HOSTFN;
			op->hostfn = event_stamp;
			op->arg = e;
			e->recorded = 1;
			e->done = 0;
			submit(c, st, op);
		}
	}
	pthread_mutex_unlock(&g_mu);
	return r;
}

SI_EXPORT CUresult CUDAAPI cuEventQuery(CUevent h) {
	pthread_mutex_lock(&g_mu);
	si_event *e = event_of(h);
	CUresult r = e == NULL ? CUDA_ERROR_INVALID_HANDLE : e->ctx->sticky != CUDA_SUCCESS ? e->ctx->sticky
		     : !e->recorded || e->done ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
	pthread_mutex_unlock(&g_mu);
	return r;
}

SI_EXPORT CUresult CUDAAPI cuEventSynchronize(CUevent h) {
	CUresult r;
	pthread_mutex_lock(&g_mu);
	si_event *e = event_of(h);
	si_ctx *c = need_ctx(&r, "cuEventSynchronize");
	if (c != NULL && (e == NULL || e->ctx != c)) {
		si_log("cuEventSynchronize: %p is not an event of the current context (CUDA_ERROR_INVALID_HANDLE)", (void *)h);
		r = CUDA_ERROR_INVALID_HANDLE;
	} else if (c != NULL && e->recorded && !e->done) {
		r = drain(c, "cuEventSynchronize");
	}
	pthread_mutex_unlock(&g_mu);
	return r;
}

SI_EXPORT CUresult CUDAAPI cuEventElapsedTime(float *ms, CUevent start, CUevent end) {
	pthread_mutex_lock(&g_mu);
	si_event *a = event_of(start), *b = event_of(end);
	CUresult r = CUDA_SUCCESS;
	if (ms == NULL || a == NULL || b == NULL) {
		r = ms == NULL ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_INVALID_HANDLE;
	} else if (!a->recorded || !b->recorded) {
		si_log("cuEventElapsedTime: an event was never recorded (CUDA_ERROR_INVALID_HANDLE)");
		r = CUDA_ERROR_INVALID_HANDLE;
	} else if (!a->done || !b->done) {
		r = CUDA_ERROR_NOT_READY;
	} else {
		*ms = (float)((double)(b->t.tv_sec - a->t.tv_sec) * 1e3 + (double)(b->t.tv_nsec - a->t.tv_nsec) / 1e6);
	}
	pthread_mutex_unlock(&g_mu);
	return r;
}

SI_EXPORT CUresult CUDAAPI cuEventDestroy_v2(CUevent h) {
	pthread_mutex_lock(&g_mu);
	si_event *e = event_of(h);
	CUresult r = CUDA_SUCCESS;
	if (e == NULL) r = CUDA_ERROR_INVALID_HANDLE;
	else if (e->recorded && !e->done && e->ctx->queued) r = drain(e->ctx, "cuEventDestroy"); // its queued stamp runs first
	if (e != NULL) e->magic = 0; // stale from now on (the memory stays: the queue may hold it)
	pthread_mutex_unlock(&g_mu);
	return r;
}
