// dpfil's CUDA kernels: the engine's elementwise, layout and reduction work (GEMMs go
// to cuBLAS). `make ptx` compiles this file to dpfil.ptx for compute_75, which the
// cuda package embeds.
//
// Rules, so that the same source also compiles as C with hostemu.h and runs on the
// CPU emulator (which runs the threads of a launch one after the other):
//   - no __shared__ memory, no __syncthreads, no warp intrinsics, no atomics: every
//     thread's work is independent of every other thread's;
//   - plain C: no templates, references, overloading or C++ headers;
//   - every kernel loops grid-stride over its index space, so any launch shape is
//     correct;
//   - integer arguments are int (32-bit), floating ones float or double, buffers
//     float* or double*; a null buffer pointer means "absent" where documented.
// Indices follow models.Backend: row-major, NCHW, patches ordered (c, kh, kw).

#ifdef __CUDACC__
#define KERNEL extern "C" __global__ void
#define DEVFN static __device__ __forceinline__
#else
#include "hostemu.h"
#endif

#define GRID_STRIDE(i, n)                                                   \
	for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; \
	     i < (long long)(n); i += (long long)gridDim.x * blockDim.x)

// Activations: 0 = tanh, 1 = ELU (alpha 1). d1/d2 take x and y = f(x) like the CPU
// backend (tanh' = 1 − y², tanh'' = −2y(1 − y²); ELU' = ELU'' = y + 1 for x ≤ 0).
DEVFN float act_f(int f, float x) {
	if (f == 0) return tanhf(x);
	return x > 0.0f ? x : expm1f(x);
}
DEVFN float act_d1(int f, float x, float y) {
	if (f == 0) return 1.0f - y * y;
	return x > 0.0f ? 1.0f : y + 1.0f;
}
DEVFN float act_d2(int f, float x, float y) {
	if (f == 0) return -2.0f * y * (1.0f - y * y);
	return x > 0.0f ? 0.0f : y + 1.0f;
}

// k_im2col writes the CKK×HWo patch matrices of rows samples (row r's input at
// x + r·inN, [InC][H][W]) side by side into cols (row stride ld, row r's patches in
// columns r·HWo …); taps outside the padded input are 0.
KERNEL k_im2col(int rows, int inN, int inC, int h, int w, int kh, int kw, int stride, int padT,
                int padL, int outH, int outW, const float* x, float* cols, int ld) {
	int hwo = outH * outW;
	GRID_STRIDE(i, (long long)rows * inC * kh * kw * hwo) {
		int pos = (int)(i % hwo);
		long long q = i / hwo;
		int r = (int)(q % rows);
		int row = (int)(q / rows);
		int c = row / (kh * kw), t = row % (kh * kw);
		int ki = t / kw, kj = t % kw;
		int ih = (pos / outW) * stride - padT + ki;
		int iw = (pos % outW) * stride - padL + kj;
		float v = 0.0f;
		if (ih >= 0 && ih < h && iw >= 0 && iw < w) v = x[(long long)r * inN + ((long long)c * h + ih) * w + iw];
		cols[(long long)row * ld + (long long)r * hwo + pos] = v;
	}
}

// k_col2im adds the patch matrices of rows samples (as k_im2col lays them out) back
// into their input gradients dx + r·inN: each thread gathers the taps that cover its
// pixel.
KERNEL k_col2im(int rows, int inN, int inC, int h, int w, int kh, int kw, int stride, int padT,
                int padL, int outH, int outW, const float* cols, int ld, float* dx) {
	int hwo = outH * outW;
	GRID_STRIDE(i, (long long)rows * inC * h * w) {
		long long chw = (long long)inC * h * w;
		int r = (int)(i / chw);
		long long p = i % chw;
		int iw = (int)(p % w), ih = (int)((p / w) % h), c = (int)(p / ((long long)h * w));
		float s = 0.0f;
		for (int ki = 0; ki < kh; ki++) {
			int t = ih + padT - ki;
			if (t < 0 || t % stride != 0 || t / stride >= outH) continue;
			int oh = t / stride;
			for (int kj = 0; kj < kw; kj++) {
				int u = iw + padL - kj;
				if (u < 0 || u % stride != 0 || u / stride >= outW) continue;
				int row = (c * kh + ki) * kw + kj;
				s += cols[(long long)row * ld + (long long)r * hwo + oh * outW + u / stride];
			}
		}
		dx[(long long)r * inN + p] += s;
	}
}

// k_avgpool: y[n][C][OutH][OutW] = mean over the KH×KW window of x[n][C][H][W].
KERNEL k_avgpool(int nc, int h, int w, int kh, int kw, int stride, int outH, int outW,
                 const float* x, float* y) {
	float inv = 1.0f / (float)(kh * kw);
	GRID_STRIDE(i, (long long)nc * outH * outW) {
		int ow = (int)(i % outW), oh = (int)((i / outW) % outH);
		long long sc = i / ((long long)outH * outW);
		const float* xs = x + sc * h * w;
		float s = 0.0f;
		for (int ki = 0; ki < kh; ki++)
			for (int kj = 0; kj < kw; kj++) s += xs[(oh * stride + ki) * w + ow * stride + kj];
		y[i] = s * inv;
	}
}

// k_avgpool_back: dx += poolᵀ(dy), gathered per input pixel.
KERNEL k_avgpool_back(int nc, int h, int w, int kh, int kw, int stride, int outH, int outW,
                      const float* dy, float* dx) {
	float inv = 1.0f / (float)(kh * kw);
	GRID_STRIDE(i, (long long)nc * h * w) {
		int iw = (int)(i % w), ih = (int)((i / w) % h);
		long long sc = i / ((long long)h * w);
		const float* dys = dy + sc * outH * outW;
		float s = 0.0f;
		for (int ki = 0; ki < kh; ki++) {
			int t = ih - ki;
			if (t < 0 || t % stride != 0 || t / stride >= outH) continue;
			for (int kj = 0; kj < kw; kj++) {
				int u = iw - kj;
				if (u < 0 || u % stride != 0 || u / stride >= outW) continue;
				s += dys[(t / stride) * outW + u / stride] * inv;
			}
		}
		dx[i] += s;
	}
}

// k_act_fwd: y = f(x).
KERNEL k_act_fwd(int f, int n, const float* x, float* y) {
	GRID_STRIDE(i, n) { y[i] = act_f(f, x[i]); }
}

// k_act_bwd: dx = f'(x)·dy.
KERNEL k_act_bwd(int f, int n, const float* x, const float* y, const float* dy, float* dx) {
	GRID_STRIDE(i, n) { dx[i] = act_d1(f, x[i], y[i]) * dy[i]; }
}

// k_act_tangent: for n samples of size values with k directions each (row s·k+j of
// tx/ty/tdy/tdx belongs to sample s): ty = f'(x)·tx when ty is not null, and
// tdx = f'(x)·tdy + f''(x)·tx·dy when tdy is not null.
KERNEL k_act_tangent(int f, int n, int k, int size, const float* x, const float* y,
                     const float* dy, const float* tx, float* ty, const float* tdy, float* tdx) {
	GRID_STRIDE(i, (long long)n * k * size) {
		int e = (int)(i % size);
		long long s = i / ((long long)k * size);
		long long si = s * size + e;
		float d1 = act_d1(f, x[si], y[si]);
		if (ty) ty[i] = d1 * tx[i];
		if (tdy) tdx[i] = d1 * tdy[i] + act_d2(f, x[si], y[si]) * tx[i] * dy[si];
	}
}

// k_blocked_dotsq: the FIL step's reduction for cs samples. The parameter tensors are
// nb (offset, size) pairs in blocks; sample s's gradient is g + s·P and its gradient
// tangents tg + s·tgStride hold kc directions per tensor, direction j of tensor t at
// kc·o_t + j·z_t. Thread t = (s·nj + j)·S + c (S = stripes, j < nj) sums, over every
// tensor, the elements i ≡ c (mod S) of ⟨g_t, tg_{t,j}⟩ and ‖tg_{t,j}‖² in double and writes
// them to part[t] and part[cs·nj·S + t].
KERNEL k_blocked_dotsq(int cs, int P, long long tgStride, int kc, int nj, int stripes, int nb,
                       const int* blocks, const float* g, const float* tg, double* part) {
	long long n = (long long)cs * nj * stripes;
	GRID_STRIDE(t, n) {
		long long q = t / stripes;
		int c = (int)(t % stripes), j = (int)(q % nj);
		long long s = q / nj;
		double gd = 0.0, dd = 0.0;
		for (int b = 0; b < nb; b++) {
			long long off = blocks[2 * b], size = blocks[2 * b + 1];
			const float* gt = g + s * P + off;
			const float* tt = tg + s * tgStride + (long long)kc * off + (long long)j * size;
			for (long long i = c; i < size; i += stripes) {
				double v = (double)tt[i];
				gd += (double)gt[i] * v;
				dd += v * v;
			}
		}
		part[t] = gd;
		part[n + t] = dd;
	}
}

// k_sum_rows: out[r] = Σ_{c < m} in[r·m + c] for r < rows, in order.
KERNEL k_sum_rows(int rows, int m, const double* in, double* out) {
	GRID_STRIDE(r, rows) {
		double s = 0.0;
		for (int c = 0; c < m; c++) s += in[r * (long long)m + c];
		out[r] = s;
	}
}

// k_row_sqnorm: thread t = r·S + c (r < rows, S stripes) sums in double, over the nb
// blocks (o, z) of blocks, the squares of x[r·stride + o + i] for i ≡ c (mod S), and
// writes part[t].
KERNEL k_row_sqnorm(int rows, int stride, int stripes, int nb, const int* blocks, const float* x,
                    double* part) {
	GRID_STRIDE(t, (long long)rows * stripes) {
		long long r = t / stripes;
		int c = (int)(t % stripes);
		double ss = 0.0;
		for (int b = 0; b < nb; b++) {
			const float* xb = x + r * stride + blocks[2 * b];
			int size = blocks[2 * b + 1];
			for (int i = c; i < size; i += stripes) {
				double v = (double)xb[i];
				ss += v * v;
			}
		}
		part[t] = ss;
	}
}

// ---- layout and bookkeeping steps of the network (models.DeviceOps) ----

// k_zero: x = 0.
KERNEL k_zero(int n, float* x) {
	GRID_STRIDE(i, n) { x[i] = 0.0f; }
}

// k_transpose3: dst[j][i][k] = src[i][j][k] for src [a][b][hw].
KERNEL k_transpose3(int a, int b, int hw, const float* src, float* dst) {
	GRID_STRIDE(t, (long long)a * b * hw) {
		int k = (int)(t % hw);
		long long q = t / hw;
		int i = (int)(q % a), j = (int)(q / a);
		dst[t] = src[((long long)i * b + j) * hw + k];
	}
}

// k_add_bias: out[r][c][k] += bias[c] for rows rows of C×hw values.
KERNEL k_add_bias(int rows, int C, int hw, const float* bias, float* out) {
	GRID_STRIDE(t, (long long)rows * C * hw) { out[t] += bias[(t / hw) % C]; }
}

// k_row_sums: dst[(r/kd)·outer + (r%kd)·dstStride + c] = Σ_k src[r·srcStride + c·hw + k]
// for r < rows, c < C, summed in order (kd = rows, outer = 0: plain row strides).
KERNEL k_row_sums(int rows, int kd, int C, int hw, const float* src, int srcStride, float* dst,
                  int dstStride, long long outer) {
	GRID_STRIDE(t, (long long)rows * C) {
		long long r = t / C;
		int c = (int)(t % C);
		const float* s = src + r * srcStride + (long long)c * hw;
		float acc = 0.0f;
		for (int k = 0; k < hw; k++) acc += s[k];
		dst[(r / kd) * outer + (r % kd) * dstStride + c] = acc;
	}
}

// k_sparse_conv_fwd: out[r][oc][pos] = val[r]·W[oc][c][kh][kw] for the one tap (kh, kw)
// through which the one-hot input pixel idx[r] = (c, ih, iw) reaches output position
// pos, 0 where there is none or idx[r] < 0 (no bias).
KERNEL k_sparse_conv_fwd(int inC, int h, int w, int kh, int kw, int stride, int padT, int padL,
                         int outH, int outW, int outC, int rows, const int* idx, const float* val,
                         const float* W, float* out) {
	int hwo = outH * outW, ckk = inC * kh * kw;
	GRID_STRIDE(t, (long long)rows * outC * hwo) {
		int pos = (int)(t % hwo);
		int oc = (int)((t / hwo) % outC);
		long long r = t / ((long long)hwo * outC);
		float v = 0.0f;
		int id = idx[r];
		if (id >= 0) {
			int c = id / (h * w), ih = (id % (h * w)) / w, iw = id % w;
			int ki = ih + padT - (pos / outW) * stride, kj = iw + padL - (pos % outW) * stride;
			if (ki >= 0 && ki < kh && kj >= 0 && kj < kw) v = val[r] * W[oc * ckk + (c * kh + ki) * kw + kj];
		}
		out[t] = v;
	}
}

// k_sparse_dense_fwd: out[r][j] = val[r]·W[j][idx[r]] (0 when idx[r] < 0).
KERNEL k_sparse_dense_fwd(int inN, int outN, int rows, const int* idx, const float* val, const float* W,
                          float* out) {
	GRID_STRIDE(t, (long long)rows * outN) {
		long long r = t / outN;
		int j = (int)(t % outN);
		out[t] = idx[r] >= 0 ? val[r] * W[(long long)j * inN + idx[r]] : 0.0f;
	}
}

// k_sparse_conv_grad: for row j < rows (sample j/kd, direction j%kd) with one-hot input
// pixel idx[j] = (c, ih, iw), adds val[j]·D_s[oc][pos(kh, kw)] to
// gw[(j/kd)·gStride + (j%kd)·nW + oc·CKK + (c, kh, kw)] for every tap (kh, kw) that reaches
// an output position; D_s = D + (j/kd)·dStride.
KERNEL k_sparse_conv_grad(int inC, int h, int w, int kh, int kw, int stride, int padT, int padL,
                          int outH, int outW, int outC, int rows, int kd, const int* idx, const float* val,
                          const float* D, int dStride, float* gw, int nW, long long gStride) {
	int hwo = outH * outW, ckk = inC * kh * kw;
	GRID_STRIDE(t, (long long)rows * outC * kh * kw) {
		int kj = (int)(t % kw), ki = (int)((t / kw) % kh);
		int oc = (int)((t / ((long long)kw * kh)) % outC);
		int j = (int)(t / ((long long)kw * kh * outC));
		int id = idx[j];
		if (id < 0) continue;
		int c = id / (h * w), ih = (id % (h * w)) / w, iw = id % w;
		int u = ih + padT - ki, v = iw + padL - kj;
		if (u < 0 || u % stride != 0 || u / stride >= outH) continue;
		if (v < 0 || v % stride != 0 || v / stride >= outW) continue;
		int pos = (u / stride) * outW + v / stride;
		long long s = j / kd;
		gw[s * gStride + (long long)(j % kd) * nW + oc * ckk + (c * kh + ki) * kw + kj] +=
			val[j] * D[s * dStride + oc * hwo + pos];
	}
}

// k_sparse_dense_grad: gw[(j/kd)·gStride + (j%kd)·nW + o·inN + idx[j]] += val[j]·D_s[o] for
// rows j < rows, o < outN (D_s = D + (j/kd)·dStride).
KERNEL k_sparse_dense_grad(int inN, int outN, int rows, int kd, const int* idx, const float* val,
                           const float* D, int dStride, float* gw, int nW, long long gStride) {
	GRID_STRIDE(t, (long long)rows * outN) {
		int j = (int)(t / outN), o = (int)(t % outN);
		long long s = j / kd;
		if (idx[j] >= 0)
			gw[s * gStride + (long long)(j % kd) * nW + (long long)o * inN + idx[j]] += val[j] * D[s * dStride + o];
	}
}

// k_scaled_row_sum: acc[p] = Σ_r scale[r]·x[r·P + p] in double, rows in order.
KERNEL k_scaled_row_sum(int rows, int P, const double* scale, const float* x, double* acc) {
	GRID_STRIDE(p, P) {
		double s = 0.0;
		for (int r = 0; r < rows; r++) s += scale[r] * (double)x[(long long)r * P + p];
		acc[p] = s;
	}
}
