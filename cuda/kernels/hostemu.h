// hostemu.h lets dpfil.cu compile as plain C for the CPU emulator (cuda/emu.go): a
// kernel becomes a static C function and the launch geometry comes from the
// emulator's variables, which it sets for every thread before calling the kernel.
#ifndef DPFIL_HOSTEMU_H
#define DPFIL_HOSTEMU_H

#include <math.h>
#include <stddef.h>
#include <string.h>

typedef struct {
	unsigned int x, y, z;
} dp_dim3;

// Set by the emulator's launcher (emu_kernels.c) before each emulated thread.
extern dp_dim3 dp_emu_threadIdx, dp_emu_blockIdx, dp_emu_blockDim, dp_emu_gridDim;

#define threadIdx dp_emu_threadIdx
#define blockIdx dp_emu_blockIdx
#define blockDim dp_emu_blockDim
#define gridDim dp_emu_gridDim

#define KERNEL static void
#define DEVFN static inline

// The noise generator's individually rounded double operations: plain operators, with
// floating-point contraction off below so that no multiply-add is fused (cgo refuses
// -ffp-contract=off as a flag), and a double's bits.
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif
#define DP_ADD(a, b) ((a) + (b))
#define DP_SUB(a, b) ((a) - (b))
#define DP_MUL(a, b) ((a) * (b))
#define DP_DIV(a, b) ((a) / (b))
#define DP_SQRT(a) sqrt(a)
static inline unsigned long long DP_BITS(double x) {
	unsigned long long u;
	memcpy(&u, &x, sizeof u);
	return u;
}
static inline double DP_FROM_BITS(unsigned long long u) {
	double x;
	memcpy(&x, &u, sizeof x);
	return x;
}

#endif
