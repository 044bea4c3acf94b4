// Kernel ids of the CPU emulator (emu_kernels.c); emu.go maps kernel names to them.
#ifndef DPFIL_EMU_KERNELS_H
#define DPFIL_EMU_KERNELS_H

#include <stdint.h>

enum {
	EMU_K_IM2COL = 1,
	EMU_K_COL2IM,
	EMU_K_AVGPOOL,
	EMU_K_AVGPOOL_BACK,
	EMU_K_ACT_FWD,
	EMU_K_ACT_BWD,
	EMU_K_ACT_TANGENT,
	EMU_K_BLOCKED_DOTSQ,
	EMU_K_REPEAT_ROWS,
	EMU_K_SUM_ROWS,
	EMU_K_SUM_CHUNKS,
	EMU_K_ROW_SQNORM,
	EMU_K_ZERO,
	EMU_K_TRANSPOSE3,
	EMU_K_ADD_BIAS,
	EMU_K_ROW_SUMS,
	EMU_K_ROW_SUMS_PART,
	EMU_K_SPARSE_CONV_FWD,
	EMU_K_SPARSE_DENSE_FWD,
	EMU_K_SPARSE_CONV_GRAD,
	EMU_K_SPARSE_DENSE_GRAD,
	EMU_K_SCALED_ROW_SUM,
	EMU_K_SOFTMAX_XENT,
	EMU_K_SOFTMAX_XENT_TANGENT,
	EMU_K_CLIP_SCALE,
	EMU_K_FIL_COMBINE,
	EMU_K_SUM_ROWS_ADD,
	EMU_K_SCALED_ROW_SUM_ADD,
	EMU_K_F64_TO_F32,
	EMU_K_ZERO_F64,
	EMU_K_CHANNEL_AFFINE,
	EMU_K_GATHER_F32,
	EMU_K_GATHER_U8,
	EMU_K_NORMALS,
	EMU_K_DPSGD_UPDATE,
	EMU_K_FIL_DOTSQ_LAYER,
	EMU_K_FIL_DENSE,
	EMU_K_FIL_DENSE_TERMS,
	EMU_K_DRAW_COORDS,
	EMU_K_DRAW_COORDS_FIX,
};

int emu_launch(int id, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
               const uint64_t* args);
void emu_sgemm(int ta, int tb, int m, int n, int k, float alpha, const float* A, int lda,
               const float* B, int ldb, float beta, float* C, int ldc);

#endif
