#include "textflag.h"

// The constants of the F(4, 3) kernels below: 4, 5, 2, 8.
DATA wino4c<>+0(SB)/4, $0x40800000
DATA wino4c<>+4(SB)/4, $0x40a00000
DATA wino4c<>+8(SB)/4, $0x40000000
DATA wino4c<>+12(SB)/4, $0x41000000
GLOBL wino4c<>(SB), RODATA|NOPTR, $16

// The constants of winoGt4F32: 1/4, 1/6, 1/24, 1/12 (rounded to float32).
DATA wino4g<>+0(SB)/4, $0x3e800000
DATA wino4g<>+4(SB)/4, $0x3e2aaaab
DATA wino4g<>+8(SB)/4, $0x3d2aaaab
DATA wino4g<>+12(SB)/4, $0x3daaaaab
GLOBL wino4g<>(SB), RODATA|NOPTR, $16

// func winoComb6F32(c *[36][8]float32, x, y *[6]*float32, n8, ny int):
// y[j][k] = Σ_{i<6} c[j·6+i]·x[i][k] for k < 8·n8 and j < ny (1 to 6), 8 values
// at a time: the six inputs loaded once, each output one chain of FMAs.
TEXT ·winoComb6F32(SB), NOSPLIT, $0-40
	MOVQ c+0(FP), AX
	MOVQ x+8(FP), BX
	MOVQ 0(BX), SI
	MOVQ 8(BX), DI
	MOVQ 16(BX), R8
	MOVQ 24(BX), R9
	MOVQ 32(BX), R10
	MOVQ 40(BX), R11
	MOVQ y+16(FP), BX
	MOVQ n8+24(FP), DX
	SHLQ $5, DX
	MOVQ ny+32(FP), R12
	XORQ CX, CX
	TESTQ DX, DX
	JEQ w6done
w6loop:
	VMOVUPS (SI)(CX*1), Y0
	VMOVUPS (DI)(CX*1), Y1
	VMOVUPS (R8)(CX*1), Y2
	VMOVUPS (R9)(CX*1), Y3
	VMOVUPS (R10)(CX*1), Y4
	VMOVUPS (R11)(CX*1), Y5
	VMULPS 0(AX), Y0, Y6
	VFMADD231PS 32(AX), Y1, Y6
	VFMADD231PS 64(AX), Y2, Y6
	VFMADD231PS 96(AX), Y3, Y6
	VFMADD231PS 128(AX), Y4, Y6
	VFMADD231PS 160(AX), Y5, Y6
	MOVQ 0(BX), R13
	VMOVUPS Y6, (R13)(CX*1)
	CMPQ R12, $1
	JLE w6next
	VMULPS 192(AX), Y0, Y6
	VFMADD231PS 224(AX), Y1, Y6
	VFMADD231PS 256(AX), Y2, Y6
	VFMADD231PS 288(AX), Y3, Y6
	VFMADD231PS 320(AX), Y4, Y6
	VFMADD231PS 352(AX), Y5, Y6
	MOVQ 8(BX), R13
	VMOVUPS Y6, (R13)(CX*1)
	CMPQ R12, $2
	JLE w6next
	VMULPS 384(AX), Y0, Y6
	VFMADD231PS 416(AX), Y1, Y6
	VFMADD231PS 448(AX), Y2, Y6
	VFMADD231PS 480(AX), Y3, Y6
	VFMADD231PS 512(AX), Y4, Y6
	VFMADD231PS 544(AX), Y5, Y6
	MOVQ 16(BX), R13
	VMOVUPS Y6, (R13)(CX*1)
	CMPQ R12, $3
	JLE w6next
	VMULPS 576(AX), Y0, Y6
	VFMADD231PS 608(AX), Y1, Y6
	VFMADD231PS 640(AX), Y2, Y6
	VFMADD231PS 672(AX), Y3, Y6
	VFMADD231PS 704(AX), Y4, Y6
	VFMADD231PS 736(AX), Y5, Y6
	MOVQ 24(BX), R13
	VMOVUPS Y6, (R13)(CX*1)
	CMPQ R12, $4
	JLE w6next
	VMULPS 768(AX), Y0, Y6
	VFMADD231PS 800(AX), Y1, Y6
	VFMADD231PS 832(AX), Y2, Y6
	VFMADD231PS 864(AX), Y3, Y6
	VFMADD231PS 896(AX), Y4, Y6
	VFMADD231PS 928(AX), Y5, Y6
	MOVQ 32(BX), R13
	VMOVUPS Y6, (R13)(CX*1)
	CMPQ R12, $5
	JLE w6next
	VMULPS 960(AX), Y0, Y6
	VFMADD231PS 992(AX), Y1, Y6
	VFMADD231PS 1024(AX), Y2, Y6
	VFMADD231PS 1056(AX), Y3, Y6
	VFMADD231PS 1088(AX), Y4, Y6
	VFMADD231PS 1120(AX), Y5, Y6
	MOVQ 40(BX), R13
	VMOVUPS Y6, (R13)(CX*1)
w6next:
	ADDQ $32, CX
	CMPQ CX, DX
	JLT w6loop
w6done:
	VZEROUPPER
	RET

// func winoBt4F32(x, y *[6]*float32, n8 int): y = Bᵀx of F(4, 3) (winoTables), 8 values at a time:
// y0 = 4x0 − 5x2 + x4, y1,2 = (x4 − 4x2) ± (x3 − 4x1), y3,4 = (x4 − x2) ± 2(x3 − x1),
// y5 = 4x1 − 5x3 + x5. AVX2 and FMA.
TEXT ·winoBt4F32(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), BX
	MOVQ 0(BX), SI
	MOVQ 8(BX), DI
	MOVQ 16(BX), R8
	MOVQ 24(BX), R9
	MOVQ 32(BX), R10
	MOVQ 40(BX), R11
	MOVQ y+8(FP), BX
	MOVQ n8+16(FP), DX
	SHLQ $5, DX
	XORQ CX, CX
	VBROADCASTSS wino4c<>+0(SB), Y8
	VBROADCASTSS wino4c<>+4(SB), Y9
	VBROADCASTSS wino4c<>+8(SB), Y10
	VBROADCASTSS wino4c<>+12(SB), Y11
	TESTQ DX, DX
	JEQ winoBt4F32_done
winoBt4F32_loop:
	VMOVUPS (SI)(CX*1), Y0
	VMOVUPS (DI)(CX*1), Y1
	VMOVUPS (R8)(CX*1), Y2
	VMOVUPS (R9)(CX*1), Y3
	VMOVUPS (R10)(CX*1), Y4
	VMOVUPS (R11)(CX*1), Y5
	VMOVAPS Y4, Y6
	VFMADD231PS Y8, Y0, Y6
	VFNMADD231PS Y9, Y2, Y6
	MOVQ 0(BX), R12
	VMOVUPS Y6, (R12)(CX*1)
	VMOVAPS Y4, Y6
	VFNMADD231PS Y8, Y2, Y6
	VMOVAPS Y3, Y7
	VFNMADD231PS Y8, Y1, Y7
	VADDPS Y7, Y6, Y12
	MOVQ 8(BX), R12
	VMOVUPS Y12, (R12)(CX*1)
	VSUBPS Y7, Y6, Y12
	MOVQ 16(BX), R12
	VMOVUPS Y12, (R12)(CX*1)
	VSUBPS Y2, Y4, Y6
	VSUBPS Y1, Y3, Y7
	VMOVAPS Y6, Y12
	VFMADD231PS Y10, Y7, Y12
	MOVQ 24(BX), R12
	VMOVUPS Y12, (R12)(CX*1)
	VFNMADD231PS Y10, Y7, Y6
	MOVQ 32(BX), R12
	VMOVUPS Y6, (R12)(CX*1)
	VMOVAPS Y5, Y6
	VFMADD231PS Y8, Y1, Y6
	VFNMADD231PS Y9, Y3, Y6
	MOVQ 40(BX), R12
	VMOVUPS Y6, (R12)(CX*1)
	ADDQ $32, CX
	CMPQ CX, DX
	JLT winoBt4F32_loop
winoBt4F32_done:
	VZEROUPPER
	RET

// func winoB4F32(x, y *[6]*float32, n8 int): y = Bx (B = (Bᵀ)ᵀ of F(4, 3)), 8 values at a time:
// with u = x1 − x2, v = x3 − x4, s = x1 + x2, w = x3 + x4: y0 = 4x0, y1 = 4(x5 − u) − 2v,
// y2 = −5x0 − 4s − w, y3 = u + 2v − 5x5, y4 = x0 + s + w, y5 = x5. AVX2 and FMA.
TEXT ·winoB4F32(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), BX
	MOVQ 0(BX), SI
	MOVQ 8(BX), DI
	MOVQ 16(BX), R8
	MOVQ 24(BX), R9
	MOVQ 32(BX), R10
	MOVQ 40(BX), R11
	MOVQ y+8(FP), BX
	MOVQ n8+16(FP), DX
	SHLQ $5, DX
	XORQ CX, CX
	VBROADCASTSS wino4c<>+0(SB), Y8
	VBROADCASTSS wino4c<>+4(SB), Y9
	VBROADCASTSS wino4c<>+8(SB), Y10
	VBROADCASTSS wino4c<>+12(SB), Y11
	TESTQ DX, DX
	JEQ winoB4F32_done
winoB4F32_loop:
	VMOVUPS (SI)(CX*1), Y0
	VMOVUPS (DI)(CX*1), Y1
	VMOVUPS (R8)(CX*1), Y2
	VMOVUPS (R9)(CX*1), Y3
	VMOVUPS (R10)(CX*1), Y4
	VMOVUPS (R11)(CX*1), Y5
	VMULPS Y8, Y0, Y6
	MOVQ 0(BX), R12
	VMOVUPS Y6, (R12)(CX*1)
	VSUBPS Y2, Y1, Y6
	VSUBPS Y4, Y3, Y7
	VSUBPS Y6, Y5, Y12
	VMULPS Y8, Y12, Y12
	VFNMADD231PS Y10, Y7, Y12
	MOVQ 8(BX), R12
	VMOVUPS Y12, (R12)(CX*1)
	VMOVAPS Y6, Y12
	VFMADD231PS Y10, Y7, Y12
	VFNMADD231PS Y9, Y5, Y12
	MOVQ 24(BX), R12
	VMOVUPS Y12, (R12)(CX*1)
	VADDPS Y2, Y1, Y6
	VADDPS Y4, Y3, Y7
	VADDPS Y7, Y6, Y12
	VADDPS Y0, Y12, Y12
	MOVQ 32(BX), R12
	VMOVUPS Y12, (R12)(CX*1)
	VXORPS Y12, Y12, Y12
	VSUBPS Y7, Y12, Y12
	VFNMADD231PS Y9, Y0, Y12
	VFNMADD231PS Y8, Y6, Y12
	MOVQ 16(BX), R12
	VMOVUPS Y12, (R12)(CX*1)
	MOVQ 40(BX), R12
	VMOVUPS Y5, (R12)(CX*1)
	ADDQ $32, CX
	CMPQ CX, DX
	JLT winoB4F32_loop
winoB4F32_done:
	VZEROUPPER
	RET

// func winoAt4F32(x, y *[6]*float32, n8 int): y = Aᵀx of F(4, 3) (4 outputs), 8 values at a time:
// with p = x1 + x2, q = x1 − x2, r = x3 + x4, s = x3 − x4: y0 = x0 + p + r, y1 = q + 2s,
// y2 = p + 4r, y3 = q + 8s + x5. AVX2 and FMA.
TEXT ·winoAt4F32(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), BX
	MOVQ 0(BX), SI
	MOVQ 8(BX), DI
	MOVQ 16(BX), R8
	MOVQ 24(BX), R9
	MOVQ 32(BX), R10
	MOVQ 40(BX), R11
	MOVQ y+8(FP), BX
	MOVQ n8+16(FP), DX
	SHLQ $5, DX
	XORQ CX, CX
	VBROADCASTSS wino4c<>+0(SB), Y8
	VBROADCASTSS wino4c<>+4(SB), Y9
	VBROADCASTSS wino4c<>+8(SB), Y10
	VBROADCASTSS wino4c<>+12(SB), Y11
	TESTQ DX, DX
	JEQ winoAt4F32_done
winoAt4F32_loop:
	VMOVUPS (SI)(CX*1), Y0
	VMOVUPS (DI)(CX*1), Y1
	VMOVUPS (R8)(CX*1), Y2
	VMOVUPS (R9)(CX*1), Y3
	VMOVUPS (R10)(CX*1), Y4
	VMOVUPS (R11)(CX*1), Y5
	VADDPS Y2, Y1, Y6
	VSUBPS Y2, Y1, Y7
	VADDPS Y4, Y3, Y12
	VSUBPS Y4, Y3, Y13
	VADDPS Y6, Y0, Y14
	VADDPS Y12, Y14, Y14
	MOVQ 0(BX), R12
	VMOVUPS Y14, (R12)(CX*1)
	VMOVAPS Y7, Y14
	VFMADD231PS Y10, Y13, Y14
	MOVQ 8(BX), R12
	VMOVUPS Y14, (R12)(CX*1)
	VFMADD231PS Y8, Y12, Y6
	MOVQ 16(BX), R12
	VMOVUPS Y6, (R12)(CX*1)
	VADDPS Y5, Y7, Y7
	VFMADD231PS Y11, Y13, Y7
	MOVQ 24(BX), R12
	VMOVUPS Y7, (R12)(CX*1)
	ADDQ $32, CX
	CMPQ CX, DX
	JLT winoAt4F32_loop
winoAt4F32_done:
	VZEROUPPER
	RET

// func winoA4F32(x, y *[6]*float32, n8 int): y = Ax (A = (Aᵀ)ᵀ of F(4, 3): 4 inputs, 6 outputs),
// 8 values at a time: with e = x0 + x2, o = x1 + x3, e' = x0 + 4x2, o' = 2x1 + 8x3: y0 = x0,
// y1,2 = e ± o, y3,4 = e' ± o', y5 = x3. AVX2 and FMA.
TEXT ·winoA4F32(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), BX
	MOVQ 0(BX), SI
	MOVQ 8(BX), DI
	MOVQ 16(BX), R8
	MOVQ 24(BX), R9
	MOVQ 32(BX), R10
	MOVQ 40(BX), R11
	MOVQ y+8(FP), BX
	MOVQ n8+16(FP), DX
	SHLQ $5, DX
	XORQ CX, CX
	VBROADCASTSS wino4c<>+0(SB), Y8
	VBROADCASTSS wino4c<>+4(SB), Y9
	VBROADCASTSS wino4c<>+8(SB), Y10
	VBROADCASTSS wino4c<>+12(SB), Y11
	TESTQ DX, DX
	JEQ winoA4F32_done
winoA4F32_loop:
	VMOVUPS (SI)(CX*1), Y0
	VMOVUPS (DI)(CX*1), Y1
	VMOVUPS (R8)(CX*1), Y2
	VMOVUPS (R9)(CX*1), Y3
	MOVQ 0(BX), R12
	VMOVUPS Y0, (R12)(CX*1)
	MOVQ 40(BX), R12
	VMOVUPS Y3, (R12)(CX*1)
	VADDPS Y2, Y0, Y6
	VADDPS Y3, Y1, Y7
	VADDPS Y7, Y6, Y12
	MOVQ 8(BX), R12
	VMOVUPS Y12, (R12)(CX*1)
	VSUBPS Y7, Y6, Y12
	MOVQ 16(BX), R12
	VMOVUPS Y12, (R12)(CX*1)
	VMOVAPS Y0, Y6
	VFMADD231PS Y8, Y2, Y6
	VMULPS Y10, Y1, Y7
	VFMADD231PS Y11, Y3, Y7
	VADDPS Y7, Y6, Y12
	MOVQ 24(BX), R12
	VMOVUPS Y12, (R12)(CX*1)
	VSUBPS Y7, Y6, Y12
	MOVQ 32(BX), R12
	VMOVUPS Y12, (R12)(CX*1)
	ADDQ $32, CX
	CMPQ CX, DX
	JLT winoA4F32_loop
winoA4F32_done:
	VZEROUPPER
	RET

// func winoDeint4RowsF32(src *float32, sstride int, d *[6]*float32, dstride, rows, n4 int):
// for r < rows and t < 4·n4, d[j][r·dstride + t] = src[r·sstride + 4t + j] for j < 4
// (4×4 transposes). AVX.
TEXT ·winoDeint4RowsF32(SB), NOSPLIT, $0-48
	MOVQ src+0(FP), SI
	MOVQ sstride+8(FP), R12
	SHLQ $2, R12
	MOVQ d+16(FP), BX
	MOVQ 0(BX), R8
	MOVQ 8(BX), R9
	MOVQ 16(BX), R10
	MOVQ 24(BX), R11
	MOVQ dstride+24(FP), BX
	SHLQ $2, BX
	CMPQ rows+32(FP), $0
	JLE winoDeint4RowsF32_done
	CMPQ n4+40(FP), $0
	JLE winoDeint4RowsF32_done
winoDeint4RowsF32_row:
	XORQ DI, DI
	XORQ AX, AX
	MOVQ n4+40(FP), CX
winoDeint4RowsF32_grp:
	VMOVUPS 0(SI)(DI*1), X0
	VMOVUPS 16(SI)(DI*1), X1
	VMOVUPS 32(SI)(DI*1), X2
	VMOVUPS 48(SI)(DI*1), X3
	VUNPCKLPS X1, X0, X4
	VUNPCKHPS X1, X0, X5
	VUNPCKLPS X3, X2, X6
	VUNPCKHPS X3, X2, X7
	VMOVLHPS X6, X4, X0
	VMOVHLPS X4, X6, X1
	VMOVLHPS X7, X5, X2
	VMOVHLPS X5, X7, X3
	VMOVUPS X0, (R8)(AX*1)
	VMOVUPS X1, (R9)(AX*1)
	VMOVUPS X2, (R10)(AX*1)
	VMOVUPS X3, (R11)(AX*1)
	ADDQ $64, DI
	ADDQ $16, AX
	DECQ CX
	JNE winoDeint4RowsF32_grp
	ADDQ R12, SI
	ADDQ BX, R8
	ADDQ BX, R9
	ADDQ BX, R10
	ADDQ BX, R11
	DECQ rows+32(FP)
	JNE winoDeint4RowsF32_row
winoDeint4RowsF32_done:
	RET

// func winoDeint6RowsF32(src *float32, sstride int, d *[6]*float32, dstride, rows, n4 int):
// for r < rows and t < 4·n4, d[j][r·dstride + t] = src[r·sstride + 4t + j] for j < 6
// (a source row holds 16·n4 + 2 values: columns 4 and 5 of tile t are columns 0
// and 1 of tile t + 1). 4×4 transposes, the last two columns by scalar moves. AVX.
TEXT ·winoDeint6RowsF32(SB), NOSPLIT, $0-48
	MOVQ src+0(FP), SI
	MOVQ sstride+8(FP), R12
	SHLQ $2, R12
	MOVQ d+16(FP), BX
	MOVQ 0(BX), R8
	MOVQ 8(BX), R9
	MOVQ 16(BX), R10
	MOVQ 24(BX), R11
	MOVQ 32(BX), R13
	MOVQ 40(BX), DX
	MOVQ dstride+24(FP), BX
	SHLQ $2, BX
	CMPQ rows+32(FP), $0
	JLE winoDeint6RowsF32_done
	CMPQ n4+40(FP), $0
	JLE winoDeint6RowsF32_done
winoDeint6RowsF32_row:
	XORQ DI, DI
	XORQ AX, AX
	MOVQ n4+40(FP), CX
winoDeint6RowsF32_grp:
	VMOVUPS 0(SI)(DI*1), X0
	VMOVUPS 16(SI)(DI*1), X1
	VMOVUPS 32(SI)(DI*1), X2
	VMOVUPS 48(SI)(DI*1), X3
	VUNPCKLPS X1, X0, X4
	VUNPCKHPS X1, X0, X5
	VUNPCKLPS X3, X2, X6
	VUNPCKHPS X3, X2, X7
	VMOVLHPS X6, X4, X0
	VMOVHLPS X4, X6, X1
	VMOVLHPS X7, X5, X2
	VMOVHLPS X5, X7, X3
	VMOVUPS X0, (R8)(AX*1)
	VMOVUPS X1, (R9)(AX*1)
	VMOVUPS X2, (R10)(AX*1)
	VMOVUPS X3, (R11)(AX*1)
	VMOVSS 16(SI)(DI*1), X4
	VMOVSS X4, 0(R13)(AX*1)
	VMOVSS 20(SI)(DI*1), X5
	VMOVSS X5, 0(DX)(AX*1)
	VMOVSS 32(SI)(DI*1), X4
	VMOVSS X4, 4(R13)(AX*1)
	VMOVSS 36(SI)(DI*1), X5
	VMOVSS X5, 4(DX)(AX*1)
	VMOVSS 48(SI)(DI*1), X4
	VMOVSS X4, 8(R13)(AX*1)
	VMOVSS 52(SI)(DI*1), X5
	VMOVSS X5, 8(DX)(AX*1)
	VMOVSS 64(SI)(DI*1), X4
	VMOVSS X4, 12(R13)(AX*1)
	VMOVSS 68(SI)(DI*1), X5
	VMOVSS X5, 12(DX)(AX*1)
	ADDQ $64, DI
	ADDQ $16, AX
	DECQ CX
	JNE winoDeint6RowsF32_grp
	ADDQ R12, SI
	ADDQ BX, R8
	ADDQ BX, R9
	ADDQ BX, R10
	ADDQ BX, R11
	ADDQ BX, R13
	ADDQ BX, DX
	DECQ rows+32(FP)
	JNE winoDeint6RowsF32_row
winoDeint6RowsF32_done:
	RET

// func winoInt4RowsF32(s *[6]*float32, sstride int, dst *float32, dstride, rows, n4 int):
// for r < rows and t < 4·n4, dst[r·dstride + 4t + c] = s[c][r·sstride + t] for c < 4
// (4×4 transposes). AVX.
TEXT ·winoInt4RowsF32(SB), NOSPLIT, $0-48
	MOVQ s+0(FP), BX
	MOVQ 0(BX), R8
	MOVQ 8(BX), R9
	MOVQ 16(BX), R10
	MOVQ 24(BX), R11
	MOVQ sstride+8(FP), BX
	SHLQ $2, BX
	MOVQ dst+16(FP), SI
	MOVQ dstride+24(FP), R12
	SHLQ $2, R12
	CMPQ rows+32(FP), $0
	JLE winoInt4RowsF32_done
	CMPQ n4+40(FP), $0
	JLE winoInt4RowsF32_done
winoInt4RowsF32_row:
	XORQ DI, DI
	XORQ AX, AX
	MOVQ n4+40(FP), CX
winoInt4RowsF32_grp:
	VMOVUPS (R8)(AX*1), X0
	VMOVUPS (R9)(AX*1), X1
	VMOVUPS (R10)(AX*1), X2
	VMOVUPS (R11)(AX*1), X3
	VUNPCKLPS X1, X0, X4
	VUNPCKHPS X1, X0, X5
	VUNPCKLPS X3, X2, X6
	VUNPCKHPS X3, X2, X7
	VMOVLHPS X6, X4, X0
	VMOVHLPS X4, X6, X1
	VMOVLHPS X7, X5, X2
	VMOVHLPS X5, X7, X3
	VMOVUPS X0, 0(SI)(DI*1)
	VMOVUPS X1, 16(SI)(DI*1)
	VMOVUPS X2, 32(SI)(DI*1)
	VMOVUPS X3, 48(SI)(DI*1)
	ADDQ $64, DI
	ADDQ $16, AX
	DECQ CX
	JNE winoInt4RowsF32_grp
	ADDQ R12, SI
	ADDQ BX, R8
	ADDQ BX, R9
	ADDQ BX, R10
	ADDQ BX, R11
	DECQ rows+32(FP)
	JNE winoInt4RowsF32_row
winoInt4RowsF32_done:
	RET

// func winoInt6RowsF32(s *[6]*float32, sstride int, dst *float32, dstride, rows, n4 int):
// for r < rows and t < n = 4·n4, dst[r·dstride + 4t + c] = s[c][r·sstride + t] for
// c < 4, then dst[r·dstride + 4n + c] = 0 and dst[r·dstride + 4t + 4 + c] +=
// s[4 + c][r·sstride + t] for c < 2 (a destination row holds 4n + 2 values: the
// columns 4 and 5 of tile t overlap tile t + 1). AVX.
TEXT ·winoInt6RowsF32(SB), NOSPLIT, $0-48
	MOVQ s+0(FP), BX
	MOVQ 0(BX), R8
	MOVQ 8(BX), R9
	MOVQ 16(BX), R10
	MOVQ 24(BX), R11
	MOVQ 32(BX), R13
	MOVQ 40(BX), DX
	MOVQ sstride+8(FP), BX
	SHLQ $2, BX
	MOVQ dst+16(FP), SI
	MOVQ dstride+24(FP), R12
	SHLQ $2, R12
	CMPQ rows+32(FP), $0
	JLE winoInt6RowsF32_done
	CMPQ n4+40(FP), $0
	JLE winoInt6RowsF32_done
winoInt6RowsF32_row:
	XORQ DI, DI
	XORQ AX, AX
	MOVQ n4+40(FP), CX
winoInt6RowsF32_grp:
	VMOVUPS (R8)(AX*1), X0
	VMOVUPS (R9)(AX*1), X1
	VMOVUPS (R10)(AX*1), X2
	VMOVUPS (R11)(AX*1), X3
	VUNPCKLPS X1, X0, X4
	VUNPCKHPS X1, X0, X5
	VUNPCKLPS X3, X2, X6
	VUNPCKHPS X3, X2, X7
	VMOVLHPS X6, X4, X0
	VMOVHLPS X4, X6, X1
	VMOVLHPS X7, X5, X2
	VMOVHLPS X5, X7, X3
	VMOVUPS X0, 0(SI)(DI*1)
	VMOVUPS X1, 16(SI)(DI*1)
	VMOVUPS X2, 32(SI)(DI*1)
	VMOVUPS X3, 48(SI)(DI*1)
	ADDQ $64, DI
	ADDQ $16, AX
	DECQ CX
	JNE winoInt6RowsF32_grp
	MOVL $0, 0(SI)(DI*1)
	MOVL $0, 4(SI)(DI*1)
	XORQ DI, DI
	XORQ AX, AX
	MOVQ n4+40(FP), CX
	SHLQ $2, CX
winoInt6RowsF32_ovl:
	VMOVSS 16(SI)(DI*1), X4
	VADDSS (R13)(AX*1), X4, X4
	VMOVSS X4, 16(SI)(DI*1)
	VMOVSS 20(SI)(DI*1), X5
	VADDSS (DX)(AX*1), X5, X5
	VMOVSS X5, 20(SI)(DI*1)
	ADDQ $16, DI
	ADDQ $4, AX
	DECQ CX
	JNE winoInt6RowsF32_ovl
	ADDQ R12, SI
	ADDQ BX, R8
	ADDQ BX, R9
	ADDQ BX, R10
	ADDQ BX, R11
	ADDQ BX, R13
	ADDQ BX, DX
	DECQ rows+32(FP)
	JNE winoInt6RowsF32_row
winoInt6RowsF32_done:
	RET

// func winoTransposeF32(src *float32, sstride int, dst *float32, dstride, rows4, cols4 int):
// dst[c·dstride + r] = src[r·sstride + c] for r < 4·rows4, c < 4·cols4 (rows4,
// cols4 ≥ 1), 4×4 blocks at a time. AVX.
TEXT ·winoTransposeF32(SB), NOSPLIT, $0-48
	MOVQ src+0(FP), SI
	MOVQ sstride+8(FP), R8
	SHLQ $2, R8
	MOVQ dst+16(FP), DI
	MOVQ dstride+24(FP), R9
	SHLQ $2, R9
	MOVQ rows4+32(FP), R12
	LEAQ (R8)(R8*2), R10
	LEAQ (R9)(R9*2), R11
wtrow:
	MOVQ cols4+40(FP), CX
	MOVQ SI, AX
	MOVQ DI, BX
wtcol:
	VMOVUPS (AX), X0
	VMOVUPS (AX)(R8*1), X1
	VMOVUPS (AX)(R8*2), X2
	VMOVUPS (AX)(R10*1), X3
	VUNPCKLPS X1, X0, X4
	VUNPCKHPS X1, X0, X5
	VUNPCKLPS X3, X2, X6
	VUNPCKHPS X3, X2, X7
	VMOVLHPS X6, X4, X0
	VMOVHLPS X4, X6, X1
	VMOVLHPS X7, X5, X2
	VMOVHLPS X5, X7, X3
	VMOVUPS X0, (BX)
	VMOVUPS X1, (BX)(R9*1)
	VMOVUPS X2, (BX)(R9*2)
	VMOVUPS X3, (BX)(R11*1)
	ADDQ $16, AX
	LEAQ (BX)(R9*4), BX
	DECQ CX
	JNE wtcol
	LEAQ (SI)(R8*4), SI
	ADDQ $16, DI
	DECQ R12
	JNE wtrow
	RET

// func winoGt4F32(x, y *[6]*float32, n8 int): y = Gᵀx of F(4, 3) (3 outputs), 8
// values at a time: with s = x1 + x2, d = x2 − x1, p = x3 + x4, q = x3 − x4:
// y0 = x0/4 − s/6 + p/24, y1 = d/6 + q/12, y2 = (p − s)/6 + x5. AVX2 and FMA.
TEXT ·winoGt4F32(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), BX
	MOVQ 0(BX), SI
	MOVQ 8(BX), DI
	MOVQ 16(BX), R8
	MOVQ 24(BX), R9
	MOVQ 32(BX), R10
	MOVQ 40(BX), R11
	MOVQ y+8(FP), BX
	MOVQ n8+16(FP), DX
	SHLQ $5, DX
	XORQ CX, CX
	VBROADCASTSS wino4g<>+0(SB), Y8
	VBROADCASTSS wino4g<>+4(SB), Y9
	VBROADCASTSS wino4g<>+8(SB), Y10
	VBROADCASTSS wino4g<>+12(SB), Y11
	TESTQ DX, DX
	JEQ winoGt4F32_done
winoGt4F32_loop:
	VMOVUPS (SI)(CX*1), Y0
	VMOVUPS (DI)(CX*1), Y1
	VMOVUPS (R8)(CX*1), Y2
	VMOVUPS (R9)(CX*1), Y3
	VMOVUPS (R10)(CX*1), Y4
	VMOVUPS (R11)(CX*1), Y5
	VADDPS Y2, Y1, Y6
	VSUBPS Y1, Y2, Y7
	VADDPS Y4, Y3, Y12
	VSUBPS Y4, Y3, Y13
	VMULPS Y8, Y0, Y14
	VFNMADD231PS Y9, Y6, Y14
	VFMADD231PS Y10, Y12, Y14
	MOVQ 0(BX), R12
	VMOVUPS Y14, (R12)(CX*1)
	VMULPS Y9, Y7, Y14
	VFMADD231PS Y11, Y13, Y14
	MOVQ 8(BX), R12
	VMOVUPS Y14, (R12)(CX*1)
	VSUBPS Y6, Y12, Y14
	VFMADD213PS Y5, Y9, Y14
	MOVQ 16(BX), R12
	VMOVUPS Y14, (R12)(CX*1)
	ADDQ $32, CX
	CMPQ CX, DX
	JLT winoGt4F32_loop
winoGt4F32_done:
	VZEROUPPER
	RET
