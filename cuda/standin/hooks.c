// The stand-in's memcheck and race check. kernels.c is compiled with GCC's
// -fsanitize=thread, which makes every load and store of a kernel call
// __tsan_readN/__tsan_writeN(addr) first; libtsan is never linked, these hooks are
// the stand-in's own. Each access of the running emulated thread must
//   - be naturally aligned (as the GPU requires; else CUDA_ERROR_MISALIGNED_ADDRESS),
//   - lie inside one live device allocation (else CUDA_ERROR_ILLEGAL_ADDRESS: host or
//     Go memory, a freed allocation, or past either end of one), the kernel's own
//     stack frames and the launch geometry excepted,
//   - not conflict with another thread of the same launch: two threads touching one
//     4-byte word with at least one of them writing is a race (CUDA_ERROR_LAUNCH_FAILED).
//     dpfil.cu's kernels use no shared memory, barriers or atomics, so within a launch
//     every such pair is unordered on a GPU and the check is exact.
// A failed check prints what happened and where, and aborts the launch.
#include <stdarg.h>
#include <stdio.h>
#include <sys/mman.h>

#include "../kernels/hostemu.h"
#include "standin.h"

// The launch's operands (the allocations its pointer arguments point into), in
// device-view bounds: nearly every access hits one of them.
#define SI_MAXOPS 64
static struct {
	uintptr_t lo, hi;
	si_alloc *a;
} ops[SI_MAXOPS];
static int nops;
static uintptr_t stack_lo, stack_hi;
static uintptr_t slots_lo, slots_hi; // the launch's argument slots (the trampolines read them)
static uint32_t epoch;

#define SI_MULTI 0x80000000u

void si_check_begin(uintptr_t hi, const uint64_t *slots, int n, si_alloc *const *operands, int nop) {
	slots_lo = (uintptr_t)slots;
	slots_hi = (uintptr_t)(slots + n);
	nops = 0;
	for (int i = 0; i < nop && nops < SI_MAXOPS; i++) {
		int dup = 0;
		for (int j = 0; j < nops; j++) dup |= ops[j].a == operands[i];
		if (dup) continue;
		ops[nops].a = operands[i];
		ops[nops].lo = si_dev_base + operands[i]->off;
		ops[nops].hi = ops[nops].lo + operands[i]->size;
		nops++;
	}
	stack_hi = hi + 256;
	stack_lo = hi > (64u << 20) ? hi - (64u << 20) : 0;
	epoch++;
	if (epoch == 0) epoch = 1;
}

// thread_name writes "thread (x,y,z) of block (x,y,z)" for a 1-based linear id.
static void thread_name(char *buf, size_t n, uint32_t tid) {
	if (si_cur == NULL || tid == 0) {
		snprintf(buf, n, "another thread");
		return;
	}
	uint64_t t = tid - 1;
	uint64_t bs = (uint64_t)si_cur->block[0] * si_cur->block[1] * si_cur->block[2];
	uint64_t b = t / bs, r = t % bs;
	unsigned tx = r % si_cur->block[0], ty = (r / si_cur->block[0]) % si_cur->block[1],
		 tz = r / ((uint64_t)si_cur->block[0] * si_cur->block[1]);
	unsigned bx = b % si_cur->grid[0], by = (b / si_cur->grid[0]) % si_cur->grid[1],
		 bz = b / ((uint64_t)si_cur->grid[0] * si_cur->grid[1]);
	snprintf(buf, n, "thread (%u,%u,%u) of block (%u,%u,%u)", tx, ty, tz, bx, by, bz);
}

static void fail(int code, const char *what, uintptr_t addr, unsigned size, int write, const char *fmt, ...)
	__attribute__((noreturn, format(printf, 6, 7)));

static void fail(int code, const char *what, uintptr_t addr, unsigned size, int write, const char *fmt, ...) {
	char me[96], detail[512];
	thread_name(me, sizeof me, si_tid);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(detail, sizeof detail, fmt, ap);
	va_end(ap);
	// Report device-view addresses as the host-view addresses the program knows.
	uintptr_t shown = addr;
	if (addr >= si_dev_base && addr - si_dev_base < si_arena_len) shown = addr - si_dev_base + si_host_base;
	si_log("%s: kernel %s (launch #%lu, grid (%u,%u,%u), block (%u,%u,%u)): %s %s %u bytes at %#lx: %s",
	       what, si_cur ? si_cur->kernel : "?", si_cur ? si_cur->launch : 0UL,
	       si_cur ? si_cur->grid[0] : 0, si_cur ? si_cur->grid[1] : 0, si_cur ? si_cur->grid[2] : 0,
	       si_cur ? si_cur->block[0] : 0, si_cur ? si_cur->block[1] : 0, si_cur ? si_cur->block[2] : 0,
	       me, write ? "writes" : "reads", size, (unsigned long)shown, detail);
	si_launch_fail(code);
}

// outside reports an access outside every live allocation.
static void outside(uintptr_t addr, unsigned size, int write) __attribute__((noreturn));
static void outside(uintptr_t addr, unsigned size, int write) {
	if (addr < si_dev_base || addr - si_dev_base >= si_arena_len) {
		int host = addr >= si_host_base && addr - si_host_base < si_arena_len;
		fail(700, "memcheck", addr, size, write, "%s",
		     host ? "a host-view address of device memory (the stand-in runs kernels on the device view: not expected)"
			  : "not device memory (a host or Go pointer reached the kernel?)");
	}
	uint64_t o = addr - si_dev_base;
	si_alloc *a = si_find(o);
	if (a != NULL && o < a->off + a->size) {
		fail(700, "memcheck", addr, size, write,
		     "inside allocation #%lu (%lu bytes, %s), which was freed", a->id, (unsigned long)a->size, a->how);
	}
	if (a != NULL && o < a->off + a->size + 4096) {
		fail(700, "memcheck", addr, size, write, "%lu bytes past the end of allocation #%lu (%lu bytes%s)",
		     (unsigned long)(o - (a->off + a->size)), a->id, (unsigned long)a->size, a->live ? "" : ", freed");
	}
	si_alloc *n = a ? si_next(a) : si_find(0);
	if (n != NULL && n->off > o) {
		fail(700, "memcheck", addr, size, write, "%lu bytes before the start of allocation #%lu (%lu bytes%s)",
		     (unsigned long)(n->off - o), n->id, (unsigned long)n->size, n->live ? "" : ", freed");
	}
	fail(700, "memcheck", addr, size, write, "in the device arena but in no allocation");
}

static int in_geometry(uintptr_t a) {
	static const dp_dim3 *g[] = {&dp_emu_threadIdx, &dp_emu_blockIdx, &dp_emu_blockDim, &dp_emu_gridDim};
	for (int i = 0; i < 4; i++)
		if (a >= (uintptr_t)g[i] && a < (uintptr_t)(g[i] + 1)) return 1;
	return 0;
}

static void race_check(si_alloc *a, uintptr_t addr, unsigned size, int write) {
	uintptr_t base = si_dev_base + a->off;
	uint64_t w0 = (addr - base) >> 2, w1 = (addr + size - 1 - base) >> 2;
	if (a->shadow == NULL) {
		uint64_t words = (a->size + 3) / 4;
		a->shadow_len = words * 3 * sizeof(uint32_t);
		void *p = mmap(NULL, a->shadow_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p == MAP_FAILED) {
			si_log("race check: cannot map %lu bytes of shadow memory", (unsigned long)a->shadow_len);
			si_launch_fail(2); // CUDA_ERROR_OUT_OF_MEMORY
		}
		a->shadow = p;
	}
	uint32_t me = si_tid;
	for (uint64_t w = w0; w <= w1; w++) {
		uint32_t *e = a->shadow + 3 * w;
		if (e[0] != epoch) {
			e[0] = epoch;
			e[1] = 0;
			e[2] = 0;
		}
		if (e[1] != 0 && e[1] != me) {
			char other[96];
			thread_name(other, sizeof other, e[1]);
			fail(719, "race", addr, size, write,
			     "byte offset %lu of allocation #%lu (%lu bytes) was written by %s in the same launch",
			     (unsigned long)(w * 4), a->id, (unsigned long)a->size, other);
		}
		if (write) {
			uint32_t r = e[2];
			if (r != 0 && ((r & SI_MULTI) || r != me)) {
				char other[96];
				uint32_t o = r & ~SI_MULTI;
				if (o == me) snprintf(other, sizeof other, "other threads");
				else thread_name(other, sizeof other, o);
				fail(719, "race", addr, size, write,
				     "byte offset %lu of allocation #%lu (%lu bytes) was read by %s in the same launch",
				     (unsigned long)(w * 4), a->id, (unsigned long)a->size, other);
			}
			e[1] = me;
		} else if (e[2] == 0) {
			e[2] = me;
		} else if ((e[2] & ~SI_MULTI) != me) {
			e[2] = me | SI_MULTI;
		}
	}
}

void si_access(uintptr_t addr, unsigned size, int write) {
	for (int i = 0; i < nops; i++) {
		if (addr >= ops[i].lo && addr + size <= ops[i].hi) {
			if (addr & (size - 1)) fail(716, "misaligned", addr, size, write, "not aligned to %u bytes", size);
			race_check(ops[i].a, addr, size, write);
			return;
		}
	}
	if (in_geometry(addr)) return;                  // threadIdx, blockIdx, ...
	if (addr >= stack_lo && addr < stack_hi) return; // the kernel's own locals
	if (addr >= slots_lo && addr + size <= slots_hi && !write) return; // its arguments
	if (size > 1 && (addr & (size - 1)))
		fail(716, "misaligned", addr, size, write, "not aligned to %u bytes", size);
	if (addr < si_dev_base || addr - si_dev_base >= si_arena_len) outside(addr, size, write);
	si_alloc *a = si_find(addr - si_dev_base);
	if (a == NULL || !a->live || addr < si_dev_base + a->off || addr + size > si_dev_base + a->off + a->size)
		outside(addr, size, write);
	// A live allocation that no pointer argument points into: legal for the check
	// (a pointer may step from one allocation into another only by overrunning the
	// first, which the guard pages and the bounds above catch).
	race_check(a, addr, size, write);
}

// ---- the hooks GCC's -fsanitize=thread instrumentation calls ----
#define SI_HOOKS(n)                                                                  \
	void __tsan_read##n(void *a) { si_access((uintptr_t)a, n, 0); }                \
	void __tsan_write##n(void *a) { si_access((uintptr_t)a, n, 1); }               \
	void __tsan_unaligned_read##n(void *a) { si_access((uintptr_t)a, n, 0); }      \
	void __tsan_unaligned_write##n(void *a) { si_access((uintptr_t)a, n, 1); }
SI_HOOKS(1)
SI_HOOKS(2)
SI_HOOKS(4)
SI_HOOKS(8)
SI_HOOKS(16)

void __tsan_read_range(void *a, unsigned long n) {
	for (unsigned long i = 0; i < n; i += 4) si_access((uintptr_t)a + i, n - i < 4 ? (unsigned)(n - i) : 4, 0);
}
void __tsan_write_range(void *a, unsigned long n) {
	for (unsigned long i = 0; i < n; i += 4) si_access((uintptr_t)a + i, n - i < 4 ? (unsigned)(n - i) : 4, 1);
}
void __tsan_func_entry(void *pc) { (void)pc; }
void __tsan_func_exit(void) {}
void __tsan_init(void) {}
