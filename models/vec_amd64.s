#include "textflag.h"

// Constants of tanhF32: 8 copies each of the clamp bounds ±7.9053111 and the
// coefficients of the rational approximation (odd degree-13 numerator, even degree-6
// denominator; the float32 version of Eigen's fast tanh).
DATA tanhc<>+0(SB)/4, $0x40fcf84f
DATA tanhc<>+4(SB)/4, $0x40fcf84f
DATA tanhc<>+8(SB)/4, $0x40fcf84f
DATA tanhc<>+12(SB)/4, $0x40fcf84f
DATA tanhc<>+16(SB)/4, $0x40fcf84f
DATA tanhc<>+20(SB)/4, $0x40fcf84f
DATA tanhc<>+24(SB)/4, $0x40fcf84f
DATA tanhc<>+28(SB)/4, $0x40fcf84f
DATA tanhc<>+32(SB)/4, $0xc0fcf84f
DATA tanhc<>+36(SB)/4, $0xc0fcf84f
DATA tanhc<>+40(SB)/4, $0xc0fcf84f
DATA tanhc<>+44(SB)/4, $0xc0fcf84f
DATA tanhc<>+48(SB)/4, $0xc0fcf84f
DATA tanhc<>+52(SB)/4, $0xc0fcf84f
DATA tanhc<>+56(SB)/4, $0xc0fcf84f
DATA tanhc<>+60(SB)/4, $0xc0fcf84f
DATA tanhc<>+64(SB)/4, $0xa59f25c0
DATA tanhc<>+68(SB)/4, $0xa59f25c0
DATA tanhc<>+72(SB)/4, $0xa59f25c0
DATA tanhc<>+76(SB)/4, $0xa59f25c0
DATA tanhc<>+80(SB)/4, $0xa59f25c0
DATA tanhc<>+84(SB)/4, $0xa59f25c0
DATA tanhc<>+88(SB)/4, $0xa59f25c0
DATA tanhc<>+92(SB)/4, $0xa59f25c0
DATA tanhc<>+96(SB)/4, $0x2a61337e
DATA tanhc<>+100(SB)/4, $0x2a61337e
DATA tanhc<>+104(SB)/4, $0x2a61337e
DATA tanhc<>+108(SB)/4, $0x2a61337e
DATA tanhc<>+112(SB)/4, $0x2a61337e
DATA tanhc<>+116(SB)/4, $0x2a61337e
DATA tanhc<>+120(SB)/4, $0x2a61337e
DATA tanhc<>+124(SB)/4, $0x2a61337e
DATA tanhc<>+128(SB)/4, $0xaebd37ff
DATA tanhc<>+132(SB)/4, $0xaebd37ff
DATA tanhc<>+136(SB)/4, $0xaebd37ff
DATA tanhc<>+140(SB)/4, $0xaebd37ff
DATA tanhc<>+144(SB)/4, $0xaebd37ff
DATA tanhc<>+148(SB)/4, $0xaebd37ff
DATA tanhc<>+152(SB)/4, $0xaebd37ff
DATA tanhc<>+156(SB)/4, $0xaebd37ff
DATA tanhc<>+160(SB)/4, $0x335c0041
DATA tanhc<>+164(SB)/4, $0x335c0041
DATA tanhc<>+168(SB)/4, $0x335c0041
DATA tanhc<>+172(SB)/4, $0x335c0041
DATA tanhc<>+176(SB)/4, $0x335c0041
DATA tanhc<>+180(SB)/4, $0x335c0041
DATA tanhc<>+184(SB)/4, $0x335c0041
DATA tanhc<>+188(SB)/4, $0x335c0041
DATA tanhc<>+192(SB)/4, $0x3779434a
DATA tanhc<>+196(SB)/4, $0x3779434a
DATA tanhc<>+200(SB)/4, $0x3779434a
DATA tanhc<>+204(SB)/4, $0x3779434a
DATA tanhc<>+208(SB)/4, $0x3779434a
DATA tanhc<>+212(SB)/4, $0x3779434a
DATA tanhc<>+216(SB)/4, $0x3779434a
DATA tanhc<>+220(SB)/4, $0x3779434a
DATA tanhc<>+224(SB)/4, $0x3a270ded
DATA tanhc<>+228(SB)/4, $0x3a270ded
DATA tanhc<>+232(SB)/4, $0x3a270ded
DATA tanhc<>+236(SB)/4, $0x3a270ded
DATA tanhc<>+240(SB)/4, $0x3a270ded
DATA tanhc<>+244(SB)/4, $0x3a270ded
DATA tanhc<>+248(SB)/4, $0x3a270ded
DATA tanhc<>+252(SB)/4, $0x3a270ded
DATA tanhc<>+256(SB)/4, $0x3ba059dc
DATA tanhc<>+260(SB)/4, $0x3ba059dc
DATA tanhc<>+264(SB)/4, $0x3ba059dc
DATA tanhc<>+268(SB)/4, $0x3ba059dc
DATA tanhc<>+272(SB)/4, $0x3ba059dc
DATA tanhc<>+276(SB)/4, $0x3ba059dc
DATA tanhc<>+280(SB)/4, $0x3ba059dc
DATA tanhc<>+284(SB)/4, $0x3ba059dc
DATA tanhc<>+288(SB)/4, $0x35a0d3d8
DATA tanhc<>+292(SB)/4, $0x35a0d3d8
DATA tanhc<>+296(SB)/4, $0x35a0d3d8
DATA tanhc<>+300(SB)/4, $0x35a0d3d8
DATA tanhc<>+304(SB)/4, $0x35a0d3d8
DATA tanhc<>+308(SB)/4, $0x35a0d3d8
DATA tanhc<>+312(SB)/4, $0x35a0d3d8
DATA tanhc<>+316(SB)/4, $0x35a0d3d8
DATA tanhc<>+320(SB)/4, $0x38f895d6
DATA tanhc<>+324(SB)/4, $0x38f895d6
DATA tanhc<>+328(SB)/4, $0x38f895d6
DATA tanhc<>+332(SB)/4, $0x38f895d6
DATA tanhc<>+336(SB)/4, $0x38f895d6
DATA tanhc<>+340(SB)/4, $0x38f895d6
DATA tanhc<>+344(SB)/4, $0x38f895d6
DATA tanhc<>+348(SB)/4, $0x38f895d6
DATA tanhc<>+352(SB)/4, $0x3b14aa05
DATA tanhc<>+356(SB)/4, $0x3b14aa05
DATA tanhc<>+360(SB)/4, $0x3b14aa05
DATA tanhc<>+364(SB)/4, $0x3b14aa05
DATA tanhc<>+368(SB)/4, $0x3b14aa05
DATA tanhc<>+372(SB)/4, $0x3b14aa05
DATA tanhc<>+376(SB)/4, $0x3b14aa05
DATA tanhc<>+380(SB)/4, $0x3b14aa05
DATA tanhc<>+384(SB)/4, $0x3ba059dd
DATA tanhc<>+388(SB)/4, $0x3ba059dd
DATA tanhc<>+392(SB)/4, $0x3ba059dd
DATA tanhc<>+396(SB)/4, $0x3ba059dd
DATA tanhc<>+400(SB)/4, $0x3ba059dd
DATA tanhc<>+404(SB)/4, $0x3ba059dd
DATA tanhc<>+408(SB)/4, $0x3ba059dd
DATA tanhc<>+412(SB)/4, $0x3ba059dd
GLOBL tanhc<>(SB), RODATA|NOPTR, $416

// func tanhF32(x, y []float32)
//
// y[i] = tanh(x[i]) for the first len(x) &^ 7 values (rational approximation,
// |error| < 4e-7).
TEXT ·tanhF32(SB), NOSPLIT, $0-48
	MOVQ x_base+0(FP), SI
	MOVQ x_len+8(FP), CX
	MOVQ y_base+24(FP), DI
	SHRQ $3, CX
	JEQ tanhdone
tanhloop:
	VMOVUPS (SI), Y0
	VMINPS tanhc<>+0(SB), Y0, Y0
	VMAXPS tanhc<>+32(SB), Y0, Y0
	VMULPS Y0, Y0, Y1
	VMOVUPS tanhc<>+64(SB), Y2
	VFMADD213PS tanhc<>+96(SB), Y1, Y2
	VFMADD213PS tanhc<>+128(SB), Y1, Y2
	VFMADD213PS tanhc<>+160(SB), Y1, Y2
	VFMADD213PS tanhc<>+192(SB), Y1, Y2
	VFMADD213PS tanhc<>+224(SB), Y1, Y2
	VFMADD213PS tanhc<>+256(SB), Y1, Y2
	VMULPS Y0, Y2, Y2
	VMOVUPS tanhc<>+288(SB), Y3
	VFMADD213PS tanhc<>+320(SB), Y1, Y3
	VFMADD213PS tanhc<>+352(SB), Y1, Y3
	VFMADD213PS tanhc<>+384(SB), Y1, Y3
	VDIVPS Y3, Y2, Y2
	VMOVUPS Y2, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNE tanhloop
tanhdone:
	VZEROUPPER
	RET

// func dotF32F64(x, y []float32) float64
//
// Σ x[i]·y[i] over the first len(x) &^ 7 values, converted to float64 and
// accumulated with float64 FMAs in two 4-lane accumulators.
TEXT ·dotF32F64(SB), NOSPLIT, $0-56
	MOVQ x_base+0(FP), SI
	MOVQ x_len+8(FP), CX
	MOVQ y_base+24(FP), DI
	VXORPD Y4, Y4, Y4
	VXORPD Y5, Y5, Y5
	SHRQ $3, CX
	JEQ dotsum
dotloop:
	VCVTPS2PD (SI), Y0
	VCVTPS2PD 16(SI), Y1
	VCVTPS2PD (DI), Y2
	VCVTPS2PD 16(DI), Y3
	VFMADD231PD Y2, Y0, Y4
	VFMADD231PD Y3, Y1, Y5
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNE dotloop
dotsum:
	VADDPD Y5, Y4, Y4
	VEXTRACTF128 $1, Y4, X5
	VADDPD X5, X4, X4
	VPERMILPD $1, X4, X5
	VADDSD X5, X4, X4
	VMOVSD X4, ret+48(FP)
	VZEROUPPER
	RET

// func axpyF32F64(acc []float64, sc float64, g []float32)
//
// acc[i] += sc·float64(g[i]) (one FMA) for the first len(g) &^ 7 values.
TEXT ·axpyF32F64(SB), NOSPLIT, $0-56
	MOVQ acc_base+0(FP), DI
	VBROADCASTSD sc+24(FP), Y6
	MOVQ g_base+32(FP), SI
	MOVQ g_len+40(FP), CX
	SHRQ $3, CX
	JEQ axpydone
axpyloop:
	VCVTPS2PD (SI), Y0
	VCVTPS2PD 16(SI), Y1
	VFMADD213PD (DI), Y6, Y0
	VFMADD213PD 32(DI), Y6, Y1
	VMOVUPD Y0, (DI)
	VMOVUPD Y1, 32(DI)
	ADDQ $32, SI
	ADDQ $64, DI
	DECQ CX
	JNE axpyloop
axpydone:
	VZEROUPPER
	RET

// func dotSqF32F64(x, y []float32) (xy, yy float64)
//
// Σ x[i]·y[i] and Σ y[i]² over the first len(x) &^ 7 values, in float64.
TEXT ·dotSqF32F64(SB), NOSPLIT, $0-64
	MOVQ x_base+0(FP), SI
	MOVQ x_len+8(FP), CX
	MOVQ y_base+24(FP), DI
	VXORPD Y4, Y4, Y4
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6
	VXORPD Y7, Y7, Y7
	SHRQ $3, CX
	JEQ dsqsum
dsqloop:
	VCVTPS2PD (SI), Y0
	VCVTPS2PD 16(SI), Y1
	VCVTPS2PD (DI), Y2
	VCVTPS2PD 16(DI), Y3
	VFMADD231PD Y2, Y0, Y4
	VFMADD231PD Y3, Y1, Y5
	VFMADD231PD Y2, Y2, Y6
	VFMADD231PD Y3, Y3, Y7
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNE dsqloop
dsqsum:
	VADDPD Y5, Y4, Y4
	VEXTRACTF128 $1, Y4, X5
	VADDPD X5, X4, X4
	VPERMILPD $1, X4, X5
	VADDSD X5, X4, X4
	VMOVSD X4, xy+48(FP)
	VADDPD Y7, Y6, Y6
	VEXTRACTF128 $1, Y6, X7
	VADDPD X7, X6, X6
	VPERMILPD $1, X6, X7
	VADDSD X7, X6, X6
	VMOVSD X6, yy+56(FP)
	VZEROUPPER
	RET

// func mulF32(a, x, y []float32): y[i] = a[i]·x[i] for i < len(x) &^ 7.
TEXT ·mulF32(SB), NOSPLIT, $0-72
	MOVQ a_base+0(FP), AX
	MOVQ x_base+24(FP), SI
	MOVQ x_len+32(FP), CX
	MOVQ y_base+48(FP), DI
	SHRQ $3, CX
	JEQ muldone
mulloop:
	VMOVUPS (AX), Y0
	VMULPS (SI), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, AX
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNE mulloop
muldone:
	VZEROUPPER
	RET

// func actTanF32(d1, tdy, d2, tx, dy, tdx []float32):
// tdx[i] = d1[i]·tdy[i] + (d2[i]·tx[i])·dy[i] for i < len(tx) &^ 7, each product
// and the sum rounded to float32 (no fused multiply-add, as Go computes it).
TEXT ·actTanF32(SB), NOSPLIT, $0-144
	MOVQ d1_base+0(FP), AX
	MOVQ tdy_base+24(FP), BX
	MOVQ d2_base+48(FP), DX
	MOVQ tx_base+72(FP), SI
	MOVQ tx_len+80(FP), CX
	MOVQ dy_base+96(FP), R8
	MOVQ tdx_base+120(FP), DI
	SHRQ $3, CX
	JEQ atdone
atloop:
	VMOVUPS (AX), Y0
	VMULPS (BX), Y0, Y0
	VMOVUPS (DX), Y1
	VMULPS (SI), Y1, Y1
	VMULPS (R8), Y1, Y1
	VADDPS Y1, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, AX
	ADDQ $32, BX
	ADDQ $32, DX
	ADDQ $32, SI
	ADDQ $32, R8
	ADDQ $32, DI
	DECQ CX
	JNE atloop
atdone:
	VZEROUPPER
	RET

// func addPatch4F32(row, dx []float32, inC, kh, hw, w int): for c < inC, r < kh:
// dx[c·hw + r·w :][:4] += row[(c·kh + r)·4 :][:4].
TEXT ·addPatch4F32(SB), NOSPLIT, $0-80
	MOVQ row_base+0(FP), SI
	MOVQ dx_base+24(FP), DI
	MOVQ inC+48(FP), CX
	MOVQ kh+56(FP), R10
	MOVQ hw+64(FP), R11
	SHLQ $2, R11
	MOVQ w+72(FP), R12
	SHLQ $2, R12
	TESTQ CX, CX
	JEQ apdone
apc:
	MOVQ DI, R9
	MOVQ R10, DX
aprow:
	MOVUPS (R9), X0
	MOVUPS (SI), X1
	ADDPS X1, X0
	MOVUPS X0, (R9)
	ADDQ $16, SI
	ADDQ R12, R9
	DECQ DX
	JNE aprow
	ADDQ R11, DI
	DECQ CX
	JNE apc
apdone:
	RET

// func copyPatch4F32(x, row []float32, inC, kh, hw, w int): for c < inC, r < kh:
// row[(c·kh + r)·4 :][:4] = x[c·hw + r·w :][:4].
TEXT ·copyPatch4F32(SB), NOSPLIT, $0-80
	MOVQ x_base+0(FP), DI
	MOVQ row_base+24(FP), SI
	MOVQ inC+48(FP), CX
	MOVQ kh+56(FP), R10
	MOVQ hw+64(FP), R11
	SHLQ $2, R11
	MOVQ w+72(FP), R12
	SHLQ $2, R12
	TESTQ CX, CX
	JEQ cpdone
cpc:
	MOVQ DI, R9
	MOVQ R10, DX
cprow:
	MOVUPS (R9), X0
	MOVUPS X0, (SI)
	ADDQ $16, SI
	ADDQ R12, R9
	DECQ DX
	JNE cprow
	ADDQ R11, DI
	DECQ CX
	JNE cpc
cpdone:
	RET

// func addF32(x, y []float32): y[i] += x[i] for i < len(x), 8 at a time, then one
// at a time.
TEXT ·addF32(SB), NOSPLIT, $0-48
	MOVQ x_base+0(FP), SI
	MOVQ x_len+8(FP), CX
	MOVQ y_base+24(FP), DI
	MOVQ CX, DX
	ANDQ $7, DX
	SHRQ $3, CX
	JEQ addtail
addloop:
	VMOVUPS (DI), Y0
	VADDPS (SI), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNE addloop
addtail:
	TESTQ DX, DX
	JEQ adddone
addone:
	VMOVSS (DI), X0
	VADDSS (SI), X0, X0
	VMOVSS X0, (DI)
	ADDQ $4, SI
	ADDQ $4, DI
	DECQ DX
	JNE addone
adddone:
	VZEROUPPER
	RET

// func tanhBackF32(y, dy, dx []float32): dx[i] = (1 − y[i]·y[i])·dy[i] for
// i < len(y), each operation rounded to float32 as Go computes it.
TEXT ·tanhBackF32(SB), NOSPLIT, $0-72
	MOVQ y_base+0(FP), SI
	MOVQ y_len+8(FP), CX
	MOVQ dy_base+24(FP), BX
	MOVQ dx_base+48(FP), DI
	MOVQ $0x3f800000, AX
	MOVQ AX, X7
	VBROADCASTSS X7, Y7
	MOVQ CX, DX
	ANDQ $7, DX
	SHRQ $3, CX
	JEQ tbtail
tbloop:
	VMOVUPS (SI), Y0
	VMULPS Y0, Y0, Y0
	VSUBPS Y0, Y7, Y0
	VMULPS (BX), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, BX
	ADDQ $32, DI
	DECQ CX
	JNE tbloop
tbtail:
	TESTQ DX, DX
	JEQ tbdone
tbone:
	VMOVSS (SI), X0
	VMULSS X0, X0, X0
	VSUBSS X0, X7, X0
	VMULSS (BX), X0, X0
	VMOVSS X0, (DI)
	ADDQ $4, SI
	ADDQ $4, BX
	ADDQ $4, DI
	DECQ DX
	JNE tbone
tbdone:
	VZEROUPPER
	RET

// func addConstF32(y []float32, c float32): y[i] += c for i < len(y), 8 at a time,
// then one at a time.
TEXT ·addConstF32(SB), NOSPLIT, $0-28
	MOVQ y_base+0(FP), DI
	MOVQ y_len+8(FP), CX
	VBROADCASTSS c+24(FP), Y1
	MOVQ CX, DX
	ANDQ $7, DX
	SHRQ $3, CX
	JEQ actail
acloop:
	VADDPS (DI), Y1, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	DECQ CX
	JNE acloop
actail:
	TESTQ DX, DX
	JEQ acdone
acone:
	VADDSS (DI), X1, X0
	VMOVSS X0, (DI)
	ADDQ $4, DI
	DECQ DX
	JNE acone
acdone:
	VZEROUPPER
	RET

// func transpose8F32(src []float32, ld int, dst []float32, dld int, nb int)
//
// Transposes 8 rows × 8·nb columns: dst[j·dld + i] = src[i·ld + j] for i < 8,
// j < 8·nb, one 8×8 block at a time (unpack, shuffle, lane permute). AVX only.
TEXT ·transpose8F32(SB), NOSPLIT, $0-72
	MOVQ src_base+0(FP), SI
	MOVQ ld+24(FP), AX
	SHLQ $2, AX
	MOVQ dst_base+32(FP), DI
	MOVQ dld+56(FP), BX
	SHLQ $2, BX
	MOVQ nb+64(FP), CX
	TESTQ CX, CX
	JEQ tr8done
	LEAQ (AX)(AX*2), R8 // 3·ld
	LEAQ (BX)(BX*2), R9 // 3·dld
tr8loop:
	MOVQ SI, DX
	VMOVUPS (DX), Y0
	VMOVUPS (DX)(AX*1), Y1
	VMOVUPS (DX)(AX*2), Y2
	VMOVUPS (DX)(R8*1), Y3
	LEAQ (DX)(AX*4), DX
	VMOVUPS (DX), Y4
	VMOVUPS (DX)(AX*1), Y5
	VMOVUPS (DX)(AX*2), Y6
	VMOVUPS (DX)(R8*1), Y7
	VUNPCKLPS Y1, Y0, Y8
	VUNPCKHPS Y1, Y0, Y9
	VUNPCKLPS Y3, Y2, Y10
	VUNPCKHPS Y3, Y2, Y11
	VUNPCKLPS Y5, Y4, Y12
	VUNPCKHPS Y5, Y4, Y13
	VUNPCKLPS Y7, Y6, Y14
	VUNPCKHPS Y7, Y6, Y15
	VSHUFPS $0x44, Y10, Y8, Y0
	VSHUFPS $0xEE, Y10, Y8, Y1
	VSHUFPS $0x44, Y11, Y9, Y2
	VSHUFPS $0xEE, Y11, Y9, Y3
	VSHUFPS $0x44, Y14, Y12, Y4
	VSHUFPS $0xEE, Y14, Y12, Y5
	VSHUFPS $0x44, Y15, Y13, Y6
	VSHUFPS $0xEE, Y15, Y13, Y7
	VPERM2F128 $0x20, Y4, Y0, Y8
	VPERM2F128 $0x20, Y5, Y1, Y9
	VPERM2F128 $0x20, Y6, Y2, Y10
	VPERM2F128 $0x20, Y7, Y3, Y11
	VPERM2F128 $0x31, Y4, Y0, Y12
	VPERM2F128 $0x31, Y5, Y1, Y13
	VPERM2F128 $0x31, Y6, Y2, Y14
	VPERM2F128 $0x31, Y7, Y3, Y15
	MOVQ DI, DX
	VMOVUPS Y8, (DX)
	VMOVUPS Y9, (DX)(BX*1)
	VMOVUPS Y10, (DX)(BX*2)
	VMOVUPS Y11, (DX)(R9*1)
	LEAQ (DX)(BX*4), DX
	VMOVUPS Y12, (DX)
	VMOVUPS Y13, (DX)(BX*1)
	VMOVUPS Y14, (DX)(BX*2)
	VMOVUPS Y15, (DX)(R9*1)
	ADDQ $32, SI
	LEAQ (DI)(BX*8), DI
	DECQ CX
	JNE tr8loop
tr8done:
	VZEROUPPER
	RET

// func avgPool2s2F32(x0, x1, y []float32, inv float32)
//
// 2×2 stride-2 average pooling of one output row: for i < len(y) &^ 7,
// y[i] = ((((0 + x0[2i]) + x0[2i+1]) + x1[2i]) + x1[2i+1])·inv, the general
// loop's order (from +0). Evens and odds are split by in-lane shuffles, so the
// sums come out in the order 0 1 4 5 2 3 6 7 (by pairs) and one VPERMPD puts them
// back. AVX2.
TEXT ·avgPool2s2F32(SB), NOSPLIT, $0-76
	MOVQ x0_base+0(FP), SI
	MOVQ x1_base+24(FP), DX
	MOVQ y_base+48(FP), DI
	MOVQ y_len+56(FP), CX
	VBROADCASTSS inv+72(FP), Y9
	VXORPS Y8, Y8, Y8
	SHRQ $3, CX
	JEQ ap2done
ap2loop:
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS (DX), Y2
	VMOVUPS 32(DX), Y3
	VSHUFPS $0x88, Y1, Y0, Y4
	VSHUFPS $0xDD, Y1, Y0, Y5
	VSHUFPS $0x88, Y3, Y2, Y6
	VSHUFPS $0xDD, Y3, Y2, Y7
	VADDPS Y4, Y8, Y4
	VADDPS Y5, Y4, Y4
	VADDPS Y6, Y4, Y4
	VADDPS Y7, Y4, Y4
	VMULPS Y9, Y4, Y4
	VPERMPD $0xD8, Y4, Y4
	VMOVUPS Y4, (DI)
	ADDQ $64, SI
	ADDQ $64, DX
	ADDQ $32, DI
	DECQ CX
	JNE ap2loop
ap2done:
	VZEROUPPER
	RET

// func avgPoolBack2s2F32(dy, dx0, dx1 []float32, inv float32)
//
// The adjoint of avgPool2s2F32 for one output row, added: for i < len(dy) &^ 7 and
// j = 0, 1, dx0[2i+j] += dy[i]·inv and dx1[2i+j] += dy[i]·inv (product rounded,
// then the sum, as the general loop). AVX.
TEXT ·avgPoolBack2s2F32(SB), NOSPLIT, $0-76
	MOVQ dy_base+0(FP), SI
	MOVQ dy_len+8(FP), CX
	MOVQ dx0_base+24(FP), DI
	MOVQ dx1_base+48(FP), DX
	VBROADCASTSS inv+72(FP), Y9
	SHRQ $3, CX
	JEQ apbdone
apbloop:
	VMULPS (SI), Y9, Y0
	VUNPCKLPS Y0, Y0, Y1
	VUNPCKHPS Y0, Y0, Y2
	VPERM2F128 $0x20, Y2, Y1, Y3
	VPERM2F128 $0x31, Y2, Y1, Y4
	VADDPS (DI), Y3, Y5
	VADDPS 32(DI), Y4, Y6
	VMOVUPS Y5, (DI)
	VMOVUPS Y6, 32(DI)
	VADDPS (DX), Y3, Y5
	VADDPS 32(DX), Y4, Y6
	VMOVUPS Y5, (DX)
	VMOVUPS Y6, 32(DX)
	ADDQ $32, SI
	ADDQ $64, DI
	ADDQ $64, DX
	DECQ CX
	JNE apbloop
apbdone:
	VZEROUPPER
	RET
