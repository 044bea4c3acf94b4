// The CPU emulator's half in C: dpfil.cu compiled for the host, a reference SGEMM,
// and a launcher that runs every thread of a grid in order. See emu.go.
#include <stdint.h>
#include <string.h>

#include "kernels/hostemu.h"

dp_dim3 dp_emu_threadIdx, dp_emu_blockIdx, dp_emu_blockDim, dp_emu_gridDim;

#include "kernels/dpfil.cu"

#include "emu_kernels.h"

// Argument slots: ints and floats in the low bytes, pointers as addresses (cuda.Arg).
#define I(k) ((int)(int32_t)(uint32_t)a[k])
#define F(k) slot_float(a[k])
#define PF(k) ((float*)(uintptr_t)a[k])
#define PD(k) ((double*)(uintptr_t)a[k])
#define PI(k) ((int*)(uintptr_t)a[k])
#define L(k) ((long long)a[k])
#define D(k) slot_double(a[k])
#define PU8(k) ((unsigned char*)(uintptr_t)a[k])
#define PLL(k) ((long long*)(uintptr_t)a[k])

static float slot_float(uint64_t v) {
	uint32_t u = (uint32_t)v;
	float f;
	memcpy(&f, &u, sizeof f);
	return f;
}

static double slot_double(uint64_t v) {
	double d;
	memcpy(&d, &v, sizeof d);
	return d;
}

static int call(int id, const uint64_t* a) {
	switch (id) {
	case EMU_K_IM2COL:
		k_im2col(I(0), I(1), I(2), I(3), I(4), I(5), I(6), I(7), I(8), I(9), I(10), I(11), PF(12), PF(13), I(14), I(15));
		return 0;
	case EMU_K_COL2IM:
		k_col2im(I(0), I(1), I(2), I(3), I(4), I(5), I(6), I(7), I(8), I(9), I(10), I(11), PF(12), I(13), PF(14), I(15));
		return 0;
	case EMU_K_AVGPOOL:
		k_avgpool(I(0), I(1), I(2), I(3), I(4), I(5), I(6), I(7), PF(8), PF(9));
		return 0;
	case EMU_K_AVGPOOL_BACK:
		k_avgpool_back(I(0), I(1), I(2), I(3), I(4), I(5), I(6), I(7), PF(8), PF(9));
		return 0;
	case EMU_K_ACT_FWD:
		k_act_fwd(I(0), I(1), PF(2), PF(3));
		return 0;
	case EMU_K_ACT_BWD:
		k_act_bwd(I(0), I(1), PF(2), PF(3), PF(4), PF(5));
		return 0;
	case EMU_K_ACT_TANGENT:
		k_act_tangent(I(0), I(1), I(2), I(3), PF(4), PF(5), PF(6), PF(7), PF(8), PF(9), PF(10));
		return 0;
	case EMU_K_BLOCKED_DOTSQ:
		k_blocked_dotsq(I(0), I(1), I(2), I(3), I(4), I(5), PI(6), PF(7), PF(8), PD(9));
		return 0;
	case EMU_K_FIL_DOTSQ_LAYER:
		k_fil_dotsq_layer(I(0), I(1), I(2), I(3), I(4), I(5), I(6), I(7), I(8), PF(9), PF(10), PD(11));
		return 0;
	case EMU_K_FIL_DENSE:
		k_fil_dense(I(0), I(1), I(2), I(3), I(4), I(5), I(6), I(7), PF(8), PF(9), PF(10), PI(11), PF(12), PF(13), PD(14), PD(15));
		return 0;
	case EMU_K_FIL_DENSE_TERMS:
		k_fil_dense_terms(I(0), I(1), I(2), I(3), I(4), I(5), PF(6), PF(7), PF(8), PF(9), PD(10));
		return 0;
	case EMU_K_REPEAT_ROWS:
		k_repeat_rows(I(0), I(1), I(2), PF(3), PF(4));
		return 0;
	case EMU_K_SUM_ROWS:
		k_sum_rows(I(0), I(1), PD(2), PD(3));
		return 0;
	case EMU_K_SUM_CHUNKS:
		k_sum_chunks(I(0), I(1), PD(2), PD(3));
		return 0;
	case EMU_K_ROW_SQNORM:
		k_row_sqnorm(I(0), I(1), I(2), I(3), PI(4), PF(5), PD(6));
		return 0;
	case EMU_K_ZERO:
		k_zero(I(0), PF(1));
		return 0;
	case EMU_K_TRANSPOSE3:
		k_transpose3(I(0), I(1), I(2), PF(3), PF(4));
		return 0;
	case EMU_K_ADD_BIAS:
		k_add_bias(I(0), I(1), I(2), PF(3), PF(4));
		return 0;
	case EMU_K_ROW_SUMS:
		k_row_sums(I(0), I(1), I(2), I(3), PF(4), I(5), PF(6), I(7), L(8));
		return 0;
	case EMU_K_ROW_SUMS_PART:
		k_row_sums_part(I(0), I(1), I(2), I(3), PF(4), I(5), PF(6));
		return 0;
	case EMU_K_SPARSE_CONV_FWD:
		k_sparse_conv_fwd(I(0), I(1), I(2), I(3), I(4), I(5), I(6), I(7), I(8), I(9), I(10), I(11), PI(12), PF(13), PF(14), PF(15));
		return 0;
	case EMU_K_SPARSE_DENSE_FWD:
		k_sparse_dense_fwd(I(0), I(1), I(2), PI(3), PF(4), PF(5), PF(6));
		return 0;
	case EMU_K_SPARSE_CONV_GRAD:
		k_sparse_conv_grad(I(0), I(1), I(2), I(3), I(4), I(5), I(6), I(7), I(8), I(9), I(10), I(11), I(12), PI(13), PF(14), PF(15), I(16), PF(17), I(18), L(19));
		return 0;
	case EMU_K_SPARSE_DENSE_GRAD:
		k_sparse_dense_grad(I(0), I(1), I(2), I(3), PI(4), PF(5), PF(6), I(7), PF(8), I(9), L(10));
		return 0;
	case EMU_K_SCALED_ROW_SUM:
		k_scaled_row_sum(I(0), I(1), PD(2), PF(3), PD(4));
		return 0;
	case EMU_K_SOFTMAX_XENT:
		k_softmax_xent(I(0), I(1), PF(2), PI(3), PF(4), PF(5));
		return 0;
	case EMU_K_SOFTMAX_XENT_TANGENT:
		k_softmax_xent_tangent(I(0), I(1), I(2), PI(3), PF(4), PF(5), PF(6));
		return 0;
	case EMU_K_CLIP_SCALE:
		k_clip_scale(I(0), I(1), D(2), I(3), PD(4), PD(5));
		return 0;
	case EMU_K_FIL_COMBINE:
		k_fil_combine(I(0), I(1), I(2), D(3), I(4), PD(5), PD(6), PD(7), PD(8));
		return 0;
	case EMU_K_SUM_ROWS_ADD:
		k_sum_rows_add(I(0), I(1), PD(2), PD(3));
		return 0;
	case EMU_K_SCALED_ROW_SUM_ADD:
		k_scaled_row_sum_add(I(0), I(1), PD(2), PF(3), PD(4));
		return 0;
	case EMU_K_F64_TO_F32:
		k_f64_to_f32(I(0), PD(1), PF(2));
		return 0;
	case EMU_K_ZERO_F64:
		k_zero_f64(I(0), PD(1));
		return 0;
	case EMU_K_CHANNEL_AFFINE:
		k_channel_affine(I(0), I(1), I(2), PF(3), PF(4), PF(5), PF(6));
		return 0;
	case EMU_K_GATHER_F32:
		k_gather_f32(I(0), I(1), PI(2), PF(3), PF(4));
		return 0;
	case EMU_K_GATHER_U8:
		k_gather_u8(I(0), I(1), PI(2), PU8(3), PF(4));
		return 0;
	case EMU_K_NORMALS:
		k_normals(I(0), L(1), L(2), PD(3));
		return 0;
	case EMU_K_DPSGD_UPDATE:
		k_dpsgd_update(I(0), L(1), L(2), D(3), D(4), D(5), D(6), D(7), PF(8), PD(9), PD(10), PF(11), PD(12));
		return 0;
	case EMU_K_DRAW_COORDS:
		k_draw_coords(I(0), I(1), L(2), PLL(3), PF(4), PI(5), PLL(6), PF(7), PI(8));
		return 0;
	case EMU_K_DRAW_COORDS_FIX:
		k_draw_coords_fix(I(0), I(1), L(2), PLL(3), PF(4), PI(5), PLL(6), PF(7), PI(8), PD(9));
		return 0;
	}
	return -1;
}

int emu_launch(int id, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
               const uint64_t* args) {
	dp_dim3 g = {gx, gy, gz}, b = {bx, by, bz};
	dp_emu_gridDim = g;
	dp_emu_blockDim = b;
	for (unsigned z = 0; z < gz; z++)
		for (unsigned y = 0; y < gy; y++)
			for (unsigned x = 0; x < gx; x++) {
				dp_dim3 bi = {x, y, z};
				dp_emu_blockIdx = bi;
				for (unsigned tz = 0; tz < bz; tz++)
					for (unsigned ty = 0; ty < by; ty++)
						for (unsigned tx = 0; tx < bx; tx++) {
							dp_dim3 ti = {tx, ty, tz};
							dp_emu_threadIdx = ti;
							if (call(id, args) != 0) return -1;
						}
			}
	return 0;
}

// emu_sgemm: row-major C = alpha·op(A)·op(B) + beta·C, accumulated in double. With
// beta = 0, C is not read (as in BLAS).
void emu_sgemm(int ta, int tb, int m, int n, int k, float alpha, const float* A, int lda,
               const float* B, int ldb, float beta, float* C, int ldc) {
	for (int i = 0; i < m; i++)
		for (int j = 0; j < n; j++) {
			double s = 0.0;
			for (int p = 0; p < k; p++) {
				double av = ta ? A[(long long)p * lda + i] : A[(long long)i * lda + p];
				double bv = tb ? B[(long long)j * ldb + p] : B[(long long)p * ldb + j];
				s += av * bv;
			}
			float* c = &C[(long long)i * ldc + j];
			*c = beta == 0.0f ? (float)((double)alpha * s) : (float)((double)alpha * s + (double)beta * (double)*c);
		}
}
