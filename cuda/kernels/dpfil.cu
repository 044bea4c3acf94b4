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
//   - integer arguments are int (32-bit) or long long, floating ones float or double,
//     buffers float*, double*, int* or unsigned char*; a null buffer pointer means
//     "absent" where documented.
// Indices follow models.Backend: row-major, NCHW, patches ordered (c, kh, kw).

#ifdef __CUDACC__
#define KERNEL extern "C" __global__ void
#define DEVFN static __device__ __forceinline__
// Individually rounded double operations (never fused into an FMA) and a double's bits,
// for the noise generator (hostemu.h has the C builds' versions).
#define DP_ADD(a, b) __dadd_rn((a), (b))
#define DP_SUB(a, b) __dsub_rn((a), (b))
#define DP_MUL(a, b) __dmul_rn((a), (b))
#define DP_DIV(a, b) __ddiv_rn((a), (b))
#define DP_SQRT(a) __dsqrt_rn(a)
#define DP_BITS(x) ((unsigned long long)__double_as_longlong(x))
#define DP_FROM_BITS(u) __longlong_as_double((long long)(u))
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
// columns r·HWo …); taps outside the padded input are 0. Patch row (c·kh + ki)·kw + kj
// belongs to kernel row q = c·kh + ki. The index space is nb·rows·HWo with
// nb = ⌈InC·kh / krpt⌉ (Backend.Im2colRows bounds it to 2³¹ − 1, so it is taken apart
// in 32-bit unsigned arithmetic): thread t = b·rows·HWo + j writes column
// j = r·HWo + pos of the kernel rows b·krpt … b·krpt + krpt − 1, kw patch rows each, so
// its divisions are shared by krpt·kw values, the row test by kw, and consecutive
// threads write consecutive columns.
KERNEL k_im2col(int rows, int inN, int inC, int h, int w, int kh, int kw, int stride, int padT,
                int padL, int outH, int outW, const float* x, float* cols, int ld, int krpt) {
	unsigned int hwo = (unsigned int)outH * (unsigned int)outW, n = (unsigned int)rows * hwo;
	unsigned int kr = (unsigned int)inC * (unsigned int)kh;
	unsigned int nb = (kr + (unsigned int)krpt - 1) / (unsigned int)krpt;
	int hw = h * w;
	GRID_STRIDE(i, (long long)nb * n) {
		unsigned int b = (unsigned int)i / n, j = (unsigned int)i - b * n;
		unsigned int r = j / hwo, pos = j - r * hwo;
		unsigned int oh = pos / (unsigned int)outW, ow = pos - oh * (unsigned int)outW;
		int ih0 = (int)oh * stride - padT, iw0 = (int)ow * stride - padL;
		unsigned int q = b * (unsigned int)krpt;
		unsigned int end = kr - q < (unsigned int)krpt ? kr : q + (unsigned int)krpt;
		int c = (int)(q / (unsigned int)kh), ki = (int)q - c * kh;
		const float* xr = x + (long long)r * inN;
		float* d = cols + (long long)q * kw * ld + j;
		for (; q < end; q++) {
			int ih = ih0 + ki;
			if ((unsigned int)ih < (unsigned int)h) {
				const float* xs = xr + (c * hw + ih * w);
				for (int kj = 0; kj < kw; kj++, d += ld) {
					int iw = iw0 + kj;
					*d = (unsigned int)iw < (unsigned int)w ? xs[iw] : 0.0f;
				}
			} else {
				for (int kj = 0; kj < kw; kj++, d += ld) *d = 0.0f;
			}
			if (++ki == kh) {
				ki = 0;
				c++;
			}
		}
	}
}

// first_tap returns the first kernel tap k ≥ 0 with t − k ≡ 0 (mod stride) and sets
// *o = (t − k) / stride, its output index (t ≥ 0): the taps that cover an input at
// padded position t are k, k + stride, … with outputs *o, *o − 1, …, while
// k < the kernel size and the output is ≥ 0 (those ≥ the output size are skipped).
// One division per pixel and dimension instead of one per tap.
DEVFN int first_tap(int t, int stride, int* o) {
	int q = t / stride;
	*o = q;
	return t - q * stride;
}

// k_col2im adds (add ≠ 0) or writes (add = 0: 0 + the sum, as adding to a zeroed
// buffer would) the patch matrices of rows samples (as k_im2col lays them out) back
// into their input gradients dx + r·inN: each thread gathers the taps that cover its
// pixel, kernel row by kernel row (ki, then kj, ascending). The launch bounds
// rows·inC·h·w to 2³¹ − 1 (Backend.launch), so the pixel's index is taken apart in
// 32-bit unsigned arithmetic.
KERNEL k_col2im(int rows, int inN, int inC, int h, int w, int kh, int kw, int stride, int padT,
                int padL, int outH, int outW, const float* cols, int ld, float* dx, int add) {
	int hwo = outH * outW;
	unsigned int hw = (unsigned int)h * (unsigned int)w;
	GRID_STRIDE(i, (long long)rows * inC * h * w) {
		unsigned int q = (unsigned int)i / hw, p = (unsigned int)i - q * hw;
		int r = (int)(q / (unsigned int)inC), c = (int)(q - (unsigned int)r * (unsigned int)inC);
		int ih = (int)(p / (unsigned int)w), iw = (int)p - ih * w;
		int oh0, ow0;
		int ki0 = first_tap(ih + padT, stride, &oh0), kj0 = first_tap(iw + padL, stride, &ow0);
		const float* cr = cols + (long long)r * hwo;
		float s = 0.0f;
		for (int ki = ki0, oh = oh0; ki < kh && oh >= 0; ki += stride, oh--) {
			if (oh >= outH) continue;
			for (int kj = kj0, ow = ow0; kj < kw && ow >= 0; kj += stride, ow--) {
				if (ow >= outW) continue;
				int row = (c * kh + ki) * kw + kj;
				s += cr[(long long)row * ld + oh * outW + ow];
			}
		}
		float* d = dx + (long long)r * inN + (long long)c * hw + p;
		*d = (add ? *d : 0.0f) + s;
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

// k_avgpool_back: dx += poolᵀ(dy), gathered per input pixel (taps as in k_col2im;
// the launch bounds nc·h·w to 2³¹ − 1).
KERNEL k_avgpool_back(int nc, int h, int w, int kh, int kw, int stride, int outH, int outW,
                      const float* dy, float* dx) {
	float inv = 1.0f / (float)(kh * kw);
	unsigned int hw = (unsigned int)h * (unsigned int)w;
	GRID_STRIDE(i, (long long)nc * h * w) {
		unsigned int sc = (unsigned int)i / hw, p = (unsigned int)i - sc * hw;
		int ih = (int)(p / (unsigned int)w), iw = (int)p - ih * w;
		int oh0, ow0;
		int ki0 = first_tap(ih, stride, &oh0), kj0 = first_tap(iw, stride, &ow0);
		const float* dys = dy + (long long)sc * outH * outW;
		float s = 0.0f;
		for (int ki = ki0, oh = oh0; ki < kh && oh >= 0; ki += stride, oh--) {
			if (oh >= outH) continue;
			for (int kj = kj0, ow = ow0; kj < kw && ow >= 0; kj += stride, ow--) {
				if (ow >= outW) continue;
				s += dys[oh * outW + ow] * inv;
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

// stripe_dot_sq adds, over the elements i ≡ c (mod stripes) of one tensor of size
// elements, g[i]·t[i] to *gd and t[i]² to *dd, in double and in order: the inner
// loop of the FIL reductions below.
DEVFN void stripe_dot_sq(const float* g, const float* t, long long size, int c, int stripes, double* gd, double* dd) {
	for (long long i = c; i < size; i += stripes) {
		double v = (double)t[i];
		*gd += (double)g[i] * v;
		*dd += v * v;
	}
}

// k_blocked_dotsq: the FIL step's reduction for cs samples of kc directions. The
// parameter tensors are nb (offset, size) pairs in blocks; sample s's gradient is
// g + s·P and its gradient tangents are rows r = s·kc + j of tg, tensor by tensor
// (the chunk's layout, models.TangentBatcher): tensor t of row r at
// cs·kc·o_t + r·z_t. Thread t = (s·nj + j)·S + c (S = stripes, j < nj) sums, over
// every tensor, the elements i ≡ c (mod S) of ⟨g_t, tg_{t,r}⟩ and ‖tg_{t,r}‖² in
// double and writes them to part[t] and part[cs·nj·S + t].
KERNEL k_blocked_dotsq(int cs, int P, int kc, int nj, int stripes, int nb,
                       const int* blocks, const float* g, const float* tg, double* part) {
	long long n = (long long)cs * nj * stripes;
	long long rows = (long long)cs * kc;
	GRID_STRIDE(t, n) {
		long long q = t / stripes;
		int c = (int)(t % stripes), j = (int)(q % nj);
		long long s = q / nj;
		double gd = 0.0, dd = 0.0;
		for (int b = 0; b < nb; b++) {
			long long off = blocks[2 * b], size = blocks[2 * b + 1];
			stripe_dot_sq(g + s * P + off, tg + rows * off + (s * kc + j) * size, size, c, stripes, &gd, &dd);
		}
		part[t] = gd;
		part[n + t] = dd;
	}
}

// k_fil_dotsq_layer: one parameter layer's share of the FIL step's reduction, taken
// as the layer forms its gradient tangents (models.TangentBatcher.FILDotSqLayer), so
// that no buffer holds every layer's. For rows r = s·kc + j (r < rows = cs·kc), the
// layer's tensors (o0, z0) and (o1, z1) (offsets into sample s's gradient g + s·P;
// z1 = 0: one tensor) have their tangents tensor-major in tg: tensor 0 of row r at
// r·z0, tensor 1 at rows·z0 + r·z1. Thread t = r·S + c (S = stripes) continues the
// sums part[t] (of ⟨g, ġ⟩) and part[rows·S + t] (of ‖ġ‖²), or starts them at 0 when
// first, over the elements i ≡ c (mod S) of tensor 0, then of tensor 1, in double and
// in order: over the layers in order, the sums k_blocked_dotsq takes over all tensors.
KERNEL k_fil_dotsq_layer(int cs, int P, int kc, int stripes, int first, int o0, int z0, int o1, int z1,
                         const float* g, const float* tg, double* part) {
	long long rows = (long long)cs * kc;
	long long n = rows * stripes;
	GRID_STRIDE(t, n) {
		long long r = t / stripes;
		int c = (int)(t % stripes);
		long long s = r / kc;
		double gd = 0.0, dd = 0.0;
		if (!first) {
			gd = part[t];
			dd = part[n + t];
		}
		stripe_dot_sq(g + s * P + o0, tg + r * z0, z0, c, stripes, &gd, &dd);
		stripe_dot_sq(g + s * P + o1, tg + rows * z0 + r * z1, z1, c, stripes, &gd, &dd);
		part[t] = gd;
		part[n + t] = dd;
	}
}

// The FIL step's dense-layer reduction (FILDotSqDense), without forming the layer's
// gradient tangents: row r = s·kc + j's weight tangent is the rank-2
// ġ_W = δ̇_r ⊗ a_s + δ_s ⊗ ȧ_r (outN × inN) and its bias tangent δ̇_r, so with G =
// g_s's weights (row-major outN × inN at wOff) and gb its biases (at bOff),
//   ⟨g_s, ġ_r⟩ = Σ_o δ̇_r[o]·((G a_s)[o] + gb[o]) + Σ_i ȧ_r[i]·(Gᵀ δ_s)[i],
//   ‖ġ_r‖²     = (‖a_s‖² + 1)·Σ_o δ̇_r[o]² + 2·p_r·(a_s·ȧ_r) + ‖δ_s‖²·‖ȧ_r‖²,
//                with p_r = δ̇_r·δ_s.
// Everything that does not depend on the row's input tangent ȧ_r is per sample or a
// row's outN-long dot, so two launches: k_fil_dense_terms, once per sample, takes
// h_s = Gᵀ δ_s, G a_s, ‖a_s‖², ‖δ_s‖² and each row's p_r; k_fil_dense then needs only
// length-inN and length-outN sums per row, whose elements its stripes split.
// a: cs rows of inN (the layer's inputs), ta: rows rows of inN (their tangents), or,
// when idx is not null, one-hot tangents ȧ_r = val[r]·e_{idx[r]} (idx[r] < 0: zero);
// D: cs rows of outN (the output deltas), tD: rows rows of outN (their tangents).
// w, in double: h (cs·inN), then G a (cs·outN), ‖a‖² (cs), ‖δ‖² (cs), p (rows).

// k_fil_dense_terms writes w (above): thread t < cs·inN is h_s[i] (t = s·inN + i:
// a warp reads consecutive elements of each weight row), then cs·outN threads
// (G a_s)[o], cs threads ‖a_s‖² and ‖δ_s‖², rows threads p_r; all in double.
KERNEL k_fil_dense_terms(int cs, int kc, int inN, int outN, int P, int wOff, const float* g, const float* a,
                         const float* D, const float* tD, double* w) {
	long long nh = (long long)cs * inN, ng = (long long)cs * outN, rows = (long long)cs * kc;
	double* ga = w + nh;
	double* aa = ga + ng;
	double* ds = aa + cs;
	double* p = ds + cs;
	GRID_STRIDE(t, nh + ng + cs + rows) {
		if (t < nh) {
			long long s = t / inN;
			int i = (int)(t % inN);
			const float* G = g + s * P + wOff + i;
			const float* d = D + s * outN;
			double v = 0.0;
			for (int o = 0; o < outN; o++) v += (double)G[(long long)o * inN] * (double)d[o];
			w[t] = v;
		} else if (t < nh + ng) {
			long long u = t - nh, s = u / outN;
			int o = (int)(u % outN);
			const float* Go = g + s * P + wOff + (long long)o * inN;
			const float* as = a + s * inN;
			double v = 0.0;
			for (int i = 0; i < inN; i++) v += (double)Go[i] * (double)as[i];
			ga[u] = v;
		} else if (t < nh + ng + cs) {
			long long s = t - nh - ng;
			const float* as = a + s * inN;
			const float* d = D + s * outN;
			double x = 0.0, y = 0.0;
			for (int i = 0; i < inN; i++) x += (double)as[i] * (double)as[i];
			for (int o = 0; o < outN; o++) y += (double)d[o] * (double)d[o];
			aa[s] = x;
			ds[s] = y;
		} else {
			long long r = t - nh - ng - cs;
			const float* dt = tD + r * outN;
			const float* d = D + (r / kc) * outN;
			double v = 0.0;
			for (int o = 0; o < outN; o++) v += (double)dt[o] * (double)d[o];
			p[r] = v;
		}
	}
}

// k_fil_dense: the dense layer's share of the FIL step's reduction (as
// k_fil_dotsq_layer), from k_fil_dense_terms's w. Thread t = r·S + c (S = stripes)
// takes the outputs o ≡ c (mod S) of the Σ_o terms and the inputs i ≡ c (mod S) of
// the Σ_i terms (one-hot rows: all in stripe 0), in double, so that a warp's lanes
// read consecutive elements of tD, ta and w, and continues (or, when first, starts)
// part[t] and part[rows·S + t] as k_fil_dotsq_layer does.
KERNEL k_fil_dense(int cs, int kc, int inN, int outN, int P, int bOff, int stripes, int first,
                   const float* g, const float* a, const float* ta, const int* idx, const float* val,
                   const float* tD, const double* w, double* part) {
	long long rows = (long long)cs * kc;
	long long n = rows * stripes;
	const double* ga = w + (long long)cs * inN;
	const double* aa = ga + (long long)cs * outN;
	const double* ds = aa + cs;
	const double* p = ds + cs;
	GRID_STRIDE(t, n) {
		long long r = t / stripes;
		int c = (int)(t % stripes);
		long long s = r / kc;
		double gd = 0.0, dd = 0.0;
		if (!first) {
			gd = part[t];
			dd = part[n + t];
		}
		const float* dt = tD + r * outN;
		const float* gb = g + s * P + bOff;
		const double* gas = ga + s * outN;
		double a1 = aa[s] + 1.0;
		for (int o = c; o < outN; o += stripes) {
			double v = (double)dt[o];
			gd += v * gas[o] + (double)gb[o] * v;
			dd += v * v * a1;
		}
		const double* h = w + s * inN;
		const float* as = a + s * inN;
		double gh = 0.0, at = 0.0, tt = 0.0;
		if (idx) {
			int hot = idx[r];
			if (c == 0 && hot >= 0) {
				double v = (double)val[r];
				gh = v * h[hot];
				at = (double)as[hot] * v;
				tt = v * v;
			}
		} else {
			const float* tr = ta + r * inN;
			for (int i = c; i < inN; i += stripes) {
				double x = (double)tr[i];
				gh += x * h[i];
				at += (double)as[i] * x;
				tt += x * x;
			}
		}
		part[t] = gd + gh;
		part[n + t] = dd + (2.0 * p[r] * at + ds[s] * tt);
	}
}

// k_repeat_rows: dst[r] = src[r / kd] for rows rows of n values (a sample's row
// repeated for each of its kd tangent directions, so that a strided-batched GEMM
// over the rows can read it at a fixed stride).
KERNEL k_repeat_rows(int rows, int kd, int n, const float* src, float* dst) {
	GRID_STRIDE(t, (long long)rows * n) {
		long long r = t / n;
		dst[t] = src[(r / kd) * n + t % n];
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

// k_sum_chunks: out[r] = Σ_{c < m, r·m + c < n} in[r·m + c] for r < ⌈n/m⌉, each chunk
// in order: one level of the deterministic multi-block sum of n values (sumTree in
// cuda/reduce.go). in and out must not overlap.
KERNEL k_sum_chunks(int n, int m, const double* in, double* out) {
	GRID_STRIDE(r, ((long long)n + m - 1) / m) {
		long long c0 = r * m;
		long long c1 = c0 + m < (long long)n ? c0 + m : (long long)n;
		double s = 0.0;
		for (long long c = c0; c < c1; c++) s += in[c];
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

// k_transpose3: dst[j][i][k] = src[i][j][k] for src [a][b][hw]. a·b·hw < 2³¹
// (Backend.launch), so the index is taken apart in 32-bit unsigned arithmetic.
KERNEL k_transpose3(int a, int b, int hw, const float* src, float* dst) {
	GRID_STRIDE(t, (long long)a * b * hw) {
		unsigned int q = (unsigned int)t / (unsigned int)hw, k = (unsigned int)t - q * (unsigned int)hw;
		unsigned int j = q / (unsigned int)a, i = q - j * (unsigned int)a;
		dst[t] = src[(i * (unsigned int)b + j) * (unsigned int)hw + k];
	}
}

// k_add_bias: out[r][c][k] += bias[c] for rows rows of C×hw values.
KERNEL k_add_bias(int rows, int C, int hw, const float* bias, float* out) {
	GRID_STRIDE(t, (long long)rows * C * hw) { out[t] += bias[(t / hw) % C]; }
}

// k_row_sums: dst[(r/kd)·outer + (r%kd)·dstStride + c] = Σ_k src[r·srcStride + c·hw + k]
// for r < rows, c < C, summed in order (kd = rows, outer = 0: plain row strides). One
// thread per (r, c); rows·C < 2³¹ (Backend.launch), so the index is taken apart in
// 32-bit unsigned arithmetic. Backend.RowSumsBlocked runs it on the input itself when
// hw is small, else on k_row_sums_part's S stripe sums (hw = S).
KERNEL k_row_sums(int rows, int kd, int C, int hw, const float* src, int srcStride, float* dst,
                  int dstStride, long long outer) {
	GRID_STRIDE(t, (long long)rows * C) {
		unsigned int r = (unsigned int)t / (unsigned int)C, c = (unsigned int)t - r * (unsigned int)C;
		unsigned int g = r / (unsigned int)kd, j = r - g * (unsigned int)kd;
		const float* s = src + (long long)r * srcStride + (long long)c * hw;
		float acc = 0.0f;
		for (int k = 0; k < hw; k++) acc += s[k];
		dst[(long long)g * outer + (long long)j * dstStride + c] = acc;
	}
}

// k_row_sums_part: part[(r·C + c)·S + s] = Σ_{k ≡ s (mod S)} src[r·srcStride + c·hw + k],
// summed in order of k, for r < rows, c < C, s < S (rows·C·S < 2³¹: Backend.launch):
// the first pass of RowSumsBlocked for long rows. Consecutive threads take consecutive
// stripes of one (r, c) (then of the next c, whose values follow), so a warp's loads
// are consecutive floats.
KERNEL k_row_sums_part(int rows, int C, int hw, int S, const float* src, int srcStride, float* part) {
	GRID_STRIDE(t, (long long)rows * C * S) {
		unsigned int q = (unsigned int)t / (unsigned int)S, s = (unsigned int)t - q * (unsigned int)S;
		unsigned int r = q / (unsigned int)C, c = q - r * (unsigned int)C;
		const float* x = src + (long long)r * srcStride + (long long)c * hw;
		float acc = 0.0f;
		int k = (int)s;
		// Four loads in flight before their adds, which stay in order of k.
		for (; k < hw - 3 * S; k += 4 * S) {
			float v0 = x[k], v1 = x[k + S], v2 = x[k + 2 * S], v3 = x[k + 3 * S];
			acc += v0;
			acc += v1;
			acc += v2;
			acc += v3;
		}
		for (; k < hw; k += S) acc += x[k];
		part[t] = acc;
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

// ---- plain device memory: the network's last host-side steps (models.DeviceMemory) ----

// k_softmax_xent: for row r < rows of classes logits z, losses[r] = logsumexp(z) − z[y[r]]
// and dz = softmax(z) − onehot(y[r]), in double as the CPU's lossAndDelta.
KERNEL k_softmax_xent(int rows, int classes, const float* z, const int* y, float* losses, float* dz) {
	GRID_STRIDE(r, rows) {
		const float* zr = z + r * classes;
		float* dr = dz + r * classes;
		double mx = (double)zr[0];
		for (int j = 1; j < classes; j++) mx = fmax(mx, (double)zr[j]);
		double sum = 0.0;
		for (int j = 0; j < classes; j++) sum += exp((double)zr[j] - mx);
		double lse = mx + log(sum);
		int yr = y[r];
		losses[r] = (float)(lse - (double)zr[yr]);
		for (int j = 0; j < classes; j++) dr[j] = (float)exp((double)zr[j] - lse);
		dr[yr] -= 1.0f;
	}
}

// k_softmax_xent_tangent: the tangent of the logits' gradient for cs samples with kc
// directions each (row s·kc+d): p = dz_s + onehot(y_s) (the softmax), pz = pᵀż and
// tdz = p ⊙ (ż − pz), in double as the CPU's tangentLoss.
KERNEL k_softmax_xent_tangent(int cs, int kc, int classes, const int* y, const float* dz, const float* tz,
                              float* tdz) {
	GRID_STRIDE(r, (long long)cs * kc) {
		long long s = r / kc;
		const float* ds = dz + s * classes;
		const float* zr = tz + r * classes;
		float* dr = tdz + r * classes;
		int ys = y[s];
		double pz = 0.0;
		for (int j = 0; j < classes; j++) pz += ((double)ds[j] + (j == ys ? 1.0 : 0.0)) * (double)zr[j];
		for (int j = 0; j < classes; j++) {
			double p = (double)ds[j] + (j == ys ? 1.0 : 0.0);
			dr[j] = (float)(p * ((double)zr[j] - pz));
		}
	}
}

// dp_clip_scale returns the clip factor s(‖g‖) (models.Clip.Scale) for mode 0 (smooth:
// 1/(GELU(‖g‖/C − 1) + 1), GELU exact (gelu 0) or its tanh approximation (gelu 1)) or
// mode 1 (hard: min(1, C/‖g‖)), and its derivative in *ds.
DEVFN double dp_clip_scale(int mode, double C, int gelu, double norm, double* ds) {
	if (mode == 1) {
		if (norm <= C) {
			*ds = 0.0;
			return 1.0;
		}
		*ds = -C / (norm * norm);
		return C / norm;
	}
	double x = norm / C - 1.0, g, dg;
	if (gelu == 1) {
		const double a = 0.044715, k = 0.79788456080286535588; // √(2/π)
		double u = k * (x + a * x * x * x);
		double th = tanh(u);
		g = 0.5 * x * (1.0 + th);
		dg = 0.5 * (1.0 + th) + 0.5 * x * (1.0 - th * th) * k * (1.0 + 3.0 * a * x * x);
	} else {
		double phi = 0.5 * (1.0 + erf(x / 1.41421356237309504880));
		double pdf = exp(-0.5 * x * x) / 2.50662827463100050242;
		g = x * phi;
		dg = phi + x * pdf;
	}
	double s = 1.0 / (g + 1.0);
	*ds = -s * s * dg / C;
	return s;
}

// k_clip_scale: scale[r] = s(√sq[r]) for the squared gradient norms sq.
KERNEL k_clip_scale(int rows, int mode, double C, int gelu, const double* sq, double* scale) {
	GRID_STRIDE(r, rows) {
		double ds;
		scale[r] = dp_clip_scale(mode, C, gelu, sqrt(sq[r]), &ds);
	}
}

// k_fil_combine: out[s] += Σ_{j<kc} ‖ġ̃_{s,j}‖² for cs samples, where the clipped
// tangent's squared norm is s²‖ġ‖² + 2s·c·gᵀġ + c²‖g‖² with c = s′·gᵀġ/‖g‖ (0 when
// g = 0), from sq = ‖g‖², gd = gᵀġ and dd = ‖ġ‖² (row s·kc + j), negative rounding
// clamped to 0 (models' clippedTangentSqNorm; an absent direction, gd = dd = 0, adds 0).
KERNEL k_fil_combine(int cs, int kc, int mode, double C, int gelu, const double* sq, const double* gd,
                     const double* dd, double* out) {
	GRID_STRIDE(s, cs) {
		double gg = sq[s], norm = sqrt(gg), ds;
		double sc = dp_clip_scale(mode, C, gelu, norm, &ds);
		double acc = 0.0;
		for (int j = 0; j < kc; j++) {
			double a = gd[s * kc + j], b = dd[s * kc + j];
			double coef = norm > 0.0 ? ds * a / norm : 0.0;
			double v = sc * sc * b + 2.0 * sc * coef * a + coef * coef * gg;
			acc += v < 0.0 ? 0.0 : v;
		}
		out[s] += acc;
	}
}

// k_sum_rows_add: out[r] += Σ_{c < m} in[r·m + c] (the stripes in order).
KERNEL k_sum_rows_add(int rows, int m, const double* in, double* out) {
	GRID_STRIDE(r, rows) {
		double s = 0.0;
		for (int c = 0; c < m; c++) s += in[r * (long long)m + c];
		out[r] += s;
	}
}

// k_scaled_row_sum_add: acc[p] += Σ_r scale[r]·x[r·P + p], the chunk's sum in double
// (rows in order) added once.
KERNEL k_scaled_row_sum_add(int rows, int P, const double* scale, const float* x, double* acc) {
	GRID_STRIDE(p, P) {
		double s = 0.0;
		for (int r = 0; r < rows; r++) s += scale[r] * (double)x[(long long)r * P + p];
		acc[p] += s;
	}
}

// k_f64_to_f32: dst = (float)src.
KERNEL k_f64_to_f32(int n, const double* src, float* dst) {
	GRID_STRIDE(i, n) { dst[i] = (float)src[i]; }
}

// k_zero_f64: x = 0.
KERNEL k_zero_f64(int n, double* x) {
	GRID_STRIDE(i, n) { x[i] = 0.0; }
}

// k_channel_affine: dst[r][c][k] = (src[r][c][k] − shift[c])·mul[c] for rows rows of C×hw
// values (a Normalize layer: shift = mean, mul = 1/std; its adjoint: shift = 0).
KERNEL k_channel_affine(int rows, int C, int hw, const float* shift, const float* mul, const float* src,
                        float* dst) {
	GRID_STRIDE(t, (long long)rows * C * hw) {
		int c = (int)((t / hw) % C);
		dst[t] = (src[t] - shift[c]) * mul[c];
	}
}

// ---- device-resident DP-SGD (cuda.Trainer) ----

// k_gather_f32: dst[r] = src[idx[r]] for rows rows of d values (the batch from the
// training set on the device).
KERNEL k_gather_f32(int rows, int d, const int* idx, const float* src, float* dst) {
	GRID_STRIDE(t, (long long)rows * d) {
		long long r = t / d;
		dst[t] = src[(long long)idx[r] * d + t % d];
	}
}

// k_gather_u8: the same from a training set of bytes b, as b/255 (float division, as
// the data loaders' float32(b)/255).
KERNEL k_gather_u8(int rows, int d, const int* idx, const unsigned char* src, float* dst) {
	GRID_STRIDE(t, (long long)rows * d) {
		long long r = t / d;
		dst[t] = (float)src[(long long)idx[r] * d + t % d] / 255.0f;
	}
}

// The counter-based Gaussian noise: internal/philox's arithmetic, operation for
// operation. Every double operation is rounded on its own (DP_ADD…: __dadd_rn etc. on
// the GPU, which nvcc never fuses into an FMA; plain operators in the C builds, which
// are compiled with -ffp-contract=off), and the logarithm and sine/cosine are the
// polynomials below, not a math library's, so CPU and GPU draw the same bits.
DEVFN unsigned int dp_mulhi32(unsigned int a, unsigned int b) {
	return (unsigned int)(((unsigned long long)a * b) >> 32);
}

// dp_philox: Philox4x32-10 of counter c under key (k0, k1), in place.
DEVFN void dp_philox(unsigned int c[4], unsigned int k0, unsigned int k1) {
	for (int r = 0; r < 10; r++) {
		if (r > 0) {
			k0 += 0x9E3779B9u;
			k1 += 0xBB67AE85u;
		}
		unsigned int a0 = c[0], a2 = c[2];
		unsigned int hi0 = dp_mulhi32(0xD2511F53u, a0), lo0 = 0xD2511F53u * a0;
		unsigned int hi1 = dp_mulhi32(0xCD9E8D57u, a2), lo1 = 0xCD9E8D57u * a2;
		c[0] = hi1 ^ c[1] ^ k0;
		c[1] = lo1;
		c[2] = hi0 ^ c[3] ^ k1;
		c[3] = lo0;
	}
}

// dp_log: philox.Log (e_log.c's reduction and polynomial) for positive normal x.
DEVFN double dp_log(double x) {
	unsigned long long bits = DP_BITS(x);
	long long k = (long long)((bits >> 52) & 0x7ff) - 1022;
	double m = DP_FROM_BITS((bits & ~(0x7ffull << 52)) | (1022ull << 52));
	if (m < 0.70710678118654752440) {
		m = DP_MUL(m, 2.0);
		k--;
	}
	double f = DP_SUB(m, 1.0), kf = (double)k;
	double s = DP_DIV(f, DP_ADD(2.0, f));
	double s2 = DP_MUL(s, s), s4 = DP_MUL(s2, s2);
	double t1 = DP_ADD(1.818357216161805012e-01, DP_MUL(s4, 1.479819860511658591e-01)); // lg5 + s4·lg7
	t1 = DP_ADD(2.857142874366239149e-01, DP_MUL(s4, t1));                            // lg3 + s4·…
	t1 = DP_MUL(s2, DP_ADD(6.666666666666735130e-01, DP_MUL(s4, t1)));                // s2·(lg1 + s4·…)
	double t2 = DP_ADD(2.222219843214978396e-01, DP_MUL(s4, 1.531383769920937332e-01)); // lg4 + s4·lg6
	t2 = DP_MUL(s4, DP_ADD(3.999999999940941908e-01, DP_MUL(s4, t2)));                  // s4·(lg2 + s4·…)
	double R = DP_ADD(t1, t2);
	double hfsq = DP_MUL(DP_MUL(0.5, f), f);
	double inner = DP_SUB(hfsq, DP_ADD(DP_MUL(s, DP_ADD(hfsq, R)), DP_MUL(kf, 1.90821492927058770002e-10)));
	return DP_SUB(DP_MUL(kf, 6.93147180369123816490e-01), DP_SUB(inner, f));
}

// dp_ksin, dp_kcos: k_sin.c and k_cos.c on [−π/4, π/4] (philox.kernelSin/kernelCos).
DEVFN double dp_ksin(double x) {
	double z = DP_MUL(x, x), v = DP_MUL(z, x);
	double r = DP_ADD(-2.50507602534068634195e-08, DP_MUL(z, 1.58969099521155010221e-10)); // s5 + z·s6
	r = DP_ADD(2.75573137070700676789e-06, DP_MUL(z, r));                                 // s4 + z·…
	r = DP_ADD(-1.98412698298579493134e-04, DP_MUL(z, r));                                // s3 + z·…
	r = DP_ADD(8.33333333332248946124e-03, DP_MUL(z, r));                                 // s2 + z·…
	return DP_ADD(x, DP_MUL(v, DP_ADD(-1.66666666666666324348e-01, DP_MUL(z, r))));
}

DEVFN double dp_kcos(double x) {
	double z = DP_MUL(x, x);
	double r = DP_ADD(2.08757232129817482790e-09, DP_MUL(z, -1.13596475577881948265e-11)); // c5 + z·c6
	r = DP_ADD(-2.75573143513906633035e-07, DP_MUL(z, r));                                // c4 + z·…
	r = DP_ADD(2.48015872894767294178e-05, DP_MUL(z, r));                                 // c3 + z·…
	r = DP_ADD(-1.38888888888741095749e-03, DP_MUL(z, r));                                // c2 + z·…
	r = DP_MUL(z, DP_ADD(4.16666666666666019037e-02, DP_MUL(z, r)));                      // z·(c1 + z·…)
	double hz = DP_MUL(0.5, z), w = DP_SUB(1.0, hz);
	return DP_ADD(w, DP_ADD(DP_SUB(DP_SUB(1.0, w), hz), DP_MUL(z, r)));
}

// dp_gauss_pair: philox.Pair — the two standard normals of counter (pair p, block b)
// under the 64-bit key: 53-bit uniforms u1 ∈ (0, 1], u2 ∈ [0, 1), then Box–Muller.
DEVFN void dp_gauss_pair(unsigned long long key, unsigned long long b, unsigned long long p, double* z0,
                         double* z1) {
	unsigned int c[4] = {(unsigned int)p, (unsigned int)(p >> 32), (unsigned int)b, (unsigned int)(b >> 32)};
	dp_philox(c, (unsigned int)key, (unsigned int)(key >> 32));
	unsigned long long a = ((unsigned long long)c[1] << 32 | c[0]) >> 11;
	unsigned long long bb = ((unsigned long long)c[3] << 32 | c[2]) >> 11;
	double u1 = DP_MUL((double)(a + 1), 1.1102230246251565404e-16); // 2⁻⁵³
	double u2 = DP_MUL((double)bb, 1.1102230246251565404e-16);
	double r = DP_SQRT(DP_MUL(-2.0, dp_log(u1)));
	double t = DP_MUL(u2, 8.0);
	int o = (int)t;
	double f = DP_SUB(t, (double)o);
	if (o & 1) f = DP_SUB(1.0, f);
	double an = DP_MUL(f, 0.78539816339744830962); // π/4
	double sa = dp_ksin(an), ca = dp_kcos(an), sn, cs;
	switch (o & 7) {
	case 0: sn = sa; cs = ca; break;
	case 1: sn = ca; cs = sa; break;
	case 2: sn = ca; cs = -sa; break;
	case 3: sn = sa; cs = -ca; break;
	case 4: sn = -sa; cs = -ca; break;
	case 5: sn = -ca; cs = -sa; break;
	case 6: sn = -ca; cs = sa; break;
	default: sn = -sa; cs = ca; break;
	}
	*z0 = DP_MUL(r, cs);
	*z1 = DP_MUL(r, sn);
}

// k_normals: out[i] = the standard normal of coordinate i at block b (component i mod 2
// of pair i/2): the generator on its own, for the tests against internal/philox.
KERNEL k_normals(int n, long long key, long long b, double* out) {
	GRID_STRIDE(p, ((long long)n + 1) / 2) {
		double z0, z1;
		dp_gauss_pair((unsigned long long)key, (unsigned long long)b, (unsigned long long)p, &z0, &z1);
		out[2 * p] = z0;
		if (2 * p + 1 < n) out[2 * p + 1] = z1;
	}
}

// dp_update1: one coordinate of the DP-SGD step (train's step and momentumSGD, the
// same roundings): the released sum float32(sum + std·z) (std = 0: the sum), the
// gradient released/denom, then g = ḡ + wd·w, v = mom·v + g, w = w − lr·v, and the
// float32 copy of w. Returns 1 when w is not finite.
DEVFN double dp_update1(long long i, double z, double std, double denom, double lr, double mom, double wd,
                        float* sum, double* w, double* v, float* w32) {
	float rel = sum[i];
	if (std > 0.0) rel = (float)DP_ADD((double)rel, DP_MUL(std, z));
	sum[i] = rel;
	double g = DP_DIV((double)rel, denom);
	double wi = w[i];
	g = DP_ADD(g, DP_MUL(wd, wi));
	double vi = DP_ADD(DP_MUL(mom, v[i]), g);
	wi = DP_SUB(wi, DP_MUL(lr, vi));
	v[i] = vi;
	w[i] = wi;
	w32[i] = (float)wi;
	return isfinite(wi) ? 0.0 : 1.0;
}

// k_dpsgd_update: the noise, momentum update and float32 parameters of one DP-SGD step
// for n parameters, in place: sum (the clipped sum in, the released noisy sum out), w
// and v (float64 master parameters and momentum), w32. Thread t handles the pairs
// t, t + T, … (T = all threads of the launch) and writes how many of its parameters
// are not finite to bad[t].
KERNEL k_dpsgd_update(int n, long long key, long long step, double std, double denom, double lr, double mom,
                      double wd, float* sum, double* w, double* v, float* w32, double* bad) {
	long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
	double nb = 0.0;
	GRID_STRIDE(p, ((long long)n + 1) / 2) {
		double z0 = 0.0, z1 = 0.0;
		if (std > 0.0) dp_gauss_pair((unsigned long long)key, (unsigned long long)step, (unsigned long long)p, &z0, &z1);
		nb += dp_update1(2 * p, z0, std, denom, lr, mom, wd, sum, w, v, w32);
		if (2 * p + 1 < n) nb += dp_update1(2 * p + 1, z1, std, denom, lr, mom, wd, sum, w, v, w32);
	}
	bad[tid] = nb;
}

// ---- FIL coordinates drawn on the device ----------------------------------------------
// train draws each FIL member's k coordinates as IntN(d) from a math/rand/v2 PCG
// (128-bit LCG state·MUL + INC, output the DXSM mix of the new state; IntN on a 64-bit
// machine: a mask for a power of two, else Lemire's multiply, redrawing while the low
// half of the product is below (2⁶⁴ − n) mod n). internal/pcgjump is the Go reference.

typedef struct {
	unsigned long long hi, lo;
} dp_u128;

DEVFN unsigned long long dp_mulhi64(unsigned long long a, unsigned long long b) {
#ifdef __CUDACC__
	return __umul64hi(a, b);
#else
	return (unsigned long long)(((unsigned __int128)a * b) >> 64);
#endif
}

DEVFN dp_u128 dp_u128_mul(dp_u128 a, dp_u128 b) {
	dp_u128 r;
	r.lo = a.lo * b.lo;
	r.hi = dp_mulhi64(a.lo, b.lo) + a.hi * b.lo + a.lo * b.hi;
	return r;
}

DEVFN dp_u128 dp_u128_add(dp_u128 a, dp_u128 b) {
	dp_u128 r;
	r.lo = a.lo + b.lo;
	r.hi = a.hi + b.hi + (r.lo < a.lo ? 1ULL : 0ULL);
	return r;
}

DEVFN dp_u128 dp_pcg_mul(void) {
	dp_u128 m = {2549297995355413924ULL, 4865540595714422341ULL};
	return m;
}

DEVFN dp_u128 dp_pcg_inc(void) {
	dp_u128 c = {6364136223846793005ULL, 1442695040888963407ULL};
	return c;
}

// dp_pcg_jump returns the state n steps after s (Brown's method: the composed
// multiplier and increment of n steps, built from n's binary digits).
DEVFN dp_u128 dp_pcg_jump(dp_u128 s, unsigned long long n) {
	dp_u128 accMul = {0ULL, 1ULL}, accAdd = {0ULL, 0ULL}, one = {0ULL, 1ULL};
	dp_u128 curMul = dp_pcg_mul(), curAdd = dp_pcg_inc();
	for (; n > 0; n >>= 1) {
		if (n & 1ULL) {
			accMul = dp_u128_mul(accMul, curMul);
			accAdd = dp_u128_add(dp_u128_mul(accAdd, curMul), curAdd);
		}
		curAdd = dp_u128_mul(dp_u128_add(curMul, one), curAdd);
		curMul = dp_u128_mul(curMul, curMul);
	}
	return dp_u128_add(dp_u128_mul(s, accMul), accAdd);
}

// dp_pcg_next steps *s and returns the output of the new state (PCG.Uint64).
DEVFN unsigned long long dp_pcg_next(dp_u128* s) {
	*s = dp_u128_add(dp_u128_mul(*s, dp_pcg_mul()), dp_pcg_inc());
	unsigned long long hi = s->hi;
	hi ^= hi >> 32;
	hi *= 0xda942042e4dd58b5ULL;
	hi ^= hi >> 48;
	return hi * (s->lo | 1ULL);
}

// dp_coord_put writes draw r: coordinate c to out (int) or out64 (long long), whichever
// is not null, and table[c] to val when both are not null.
DEVFN void dp_coord_put(long long r, unsigned long long c, const float* table, int* out, long long* out64, float* val) {
	if (out) out[r] = (int)c;
	if (out64) out64[r] = (long long)c;
	if (table && val) val[r] = table[c];
}

// k_draw_coords writes draws 0 … rows−1 of IntN(n) (n > 0) from the PCG state st
// (st[0] the high, st[1] the low 64 bits): draw r uses the (r+1)-th output after st,
// as a sequence of IntN calls does when none is rejected. Thread s of nseg draws the
// segment [s·len, (s+1)·len), len = ⌈rows/nseg⌉: one jump ahead, then steps. A draw
// whose product's low half is below n may be rejected by IntN (probability < n/2⁶⁴);
// flags[s] says whether the segment has one, and k_draw_coords_fix then redraws.
KERNEL k_draw_coords(int rows, int nseg, long long n, const long long* st, const float* table, int* out,
                     long long* out64, float* val, int* flags) {
	unsigned long long un = (unsigned long long)n;
	long long len = ((long long)rows + nseg - 1) / nseg;
	GRID_STRIDE(s, nseg) {
		long long r0 = s * len, r1 = r0 + len;
		if (r1 > rows) r1 = rows;
		int flag = 0;
		if (r0 < r1) {
			dp_u128 base = {(unsigned long long)st[0], (unsigned long long)st[1]};
			dp_u128 cur = dp_pcg_jump(base, (unsigned long long)r0);
			for (long long r = r0; r < r1; r++) {
				unsigned long long x = dp_pcg_next(&cur), c;
				if ((un & (un - 1ULL)) == 0ULL) {
					c = x & (un - 1ULL);
				} else {
					c = dp_mulhi64(x, un);
					if (x * un < un) flag = 1;
				}
				dp_coord_put(r, c, table, out, out64, val);
			}
		}
		flags[s] = flag;
	}
}

// k_draw_coords_fix runs after k_draw_coords on the same arguments (one thread does
// the work): without a flag it only writes used[0] = rows, the PCG outputs consumed;
// with one it redraws the whole sequence as IntN does, rejections included, and
// writes how many outputs that consumed.
KERNEL k_draw_coords_fix(int rows, int nseg, long long n, const long long* st, const float* table, int* out,
                         long long* out64, float* val, const int* flags, double* used) {
	GRID_STRIDE(t, 1) {
		int any = 0;
		for (int s = 0; s < nseg; s++) any |= flags[s];
		unsigned long long consumed = (unsigned long long)rows;
		if (any) {
			unsigned long long un = (unsigned long long)n;
			unsigned long long thresh = (0ULL - un) % un;
			dp_u128 cur = {(unsigned long long)st[0], (unsigned long long)st[1]};
			consumed = 0;
			for (long long r = 0; r < rows; r++) {
				unsigned long long x = dp_pcg_next(&cur);
				consumed++;
				unsigned long long hi = dp_mulhi64(x, un), lo = x * un;
				if (lo < un) {
					while (lo < thresh) {
						x = dp_pcg_next(&cur);
						consumed++;
						hi = dp_mulhi64(x, un);
						lo = x * un;
					}
				}
				dp_coord_put(r, hi, table, out, out64, val);
			}
		}
		used[0] = (double)consumed;
	}
}
