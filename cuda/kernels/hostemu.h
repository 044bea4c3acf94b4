// hostemu.h lets dpfil.cu compile as plain C for the CPU emulator (cuda/emu.go): a
// kernel becomes a static C function and the launch geometry comes from the
// emulator's variables, which it sets for every thread before calling the kernel.
#ifndef DPFIL_HOSTEMU_H
#define DPFIL_HOSTEMU_H

#include <math.h>
#include <stddef.h>

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

#endif
