// Internal interfaces of the stand-in libcuda.so.1 (see driver.c for what it is).
#ifndef DPFIL_STANDIN_H
#define DPFIL_STANDIN_H

#include <stdint.h>
#include <string.h>

// A kernel parameter's C type, from dpfil.cu (genkernels.go).
typedef enum { SI_INT = 1, SI_LL, SI_FLOAT, SI_DOUBLE, SI_PTR } si_type;

typedef struct {
	si_type type;
	int size;         // bytes: 4 (int, float) or 8 (long long, double, pointers)
	int elem;         // a pointer's element size (its required alignment), else 0
	const char *decl; // the C declaration, e.g. "const float* x"
} si_param;

// One kernel of dpfil.cu compiled as C: run calls it for the current emulated thread
// with its arguments read from 8-byte slots.
typedef struct {
	const char *name;
	void (*run)(const uint64_t *slots);
	int nparams;
	const si_param *params;
} si_kernel;

// The two builds of dpfil.cu (kernels.c): instrumented with -fsanitize=thread, whose
// memory accesses go to hooks.c, and plain.
extern const si_kernel si_kernels_checked[], si_kernels_fast[];

static inline int si_slot_int(uint64_t v) { return (int)(int32_t)(uint32_t)v; }
static inline float si_slot_float(uint64_t v) {
	uint32_t u = (uint32_t)v;
	float f;
	memcpy(&f, &u, sizeof f);
	return f;
}
static inline double si_slot_double(uint64_t v) {
	double d;
	memcpy(&d, &v, sizeof d);
	return d;
}

// ---- device memory (driver.c) ----
//
// One arena of address space, mapped twice from one memfd: the host view (the
// addresses handed out, what the program sees) and the device view (what kernels
// and GEMMs touch, at a fixed distance). Allocations are bump-allocated, page
// aligned at their end, separated by an unmapped guard page, and never reused.
typedef struct si_alloc {
	uint64_t off;      // arena offset of the first byte handed out
	uint64_t size;     // bytes asked for
	uint64_t map_off;  // arena offset of the first mapped page
	uint64_t map_len;  // bytes mapped (whole pages)
	unsigned long id;  // 1, 2, ... in allocation order
	int live;          // not freed
	int busy;          // an operand of queued work: its host view is PROT_NONE
	int device_only;   // cuMemAlloc (not managed): never host-accessible
	const char *how;   // "cuMemAllocManaged" or "cuMemAlloc"
	void *ctx;         // owning context
	uint32_t *shadow;  // race-check shadow (3 words per 4 bytes), lazily mapped
	uint64_t shadow_len;
} si_alloc;

extern uintptr_t si_host_base, si_dev_base;
extern uint64_t si_arena_len;

// si_find returns the allocation with the largest off <= arena offset o, or NULL.
si_alloc *si_find(uint64_t o);
// si_next returns the allocation after a (by address), or NULL.
si_alloc *si_next(const si_alloc *a);

// ---- the launch being run (driver.c) and its checker (hooks.c) ----
typedef struct {
	const char *kernel;
	unsigned long launch; // 1, 2, ... in issue order
	unsigned grid[3], block[3];
} si_launch_info;

extern const si_launch_info *si_cur;
extern uint32_t si_tid; // 1 + the linear id of the emulated thread running now

// hooks.c: the check of one access by the instrumented kernels.
void si_access(uintptr_t addr, unsigned size, int write);
// hooks.c: a launch starts (new race epoch); hi is the runner's frame address, above
// which kernels' stack frames do not reach, slots[0:n] its arguments and operands
// the allocations its pointer arguments point into.
void si_check_begin(uintptr_t stack_hi, const uint64_t *slots, int n, si_alloc *const *operands, int nop);
// driver.c: abort the running launch with a CUresult (longjmp to the runner).
void si_launch_fail(int code) __attribute__((noreturn));
// driver.c: print a message to stderr with the stand-in's prefix.
void si_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
