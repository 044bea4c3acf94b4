#include "textflag.h"

// func cpuid(eaxArg, ecxArg uint32) (eax, ebx, ecx, edx uint32)
TEXT ·cpuid(SB), NOSPLIT, $0-24
	MOVL eaxArg+0(FP), AX
	MOVL ecxArg+4(FP), CX
	CPUID
	MOVL AX, eax+8(FP)
	MOVL BX, ebx+12(FP)
	MOVL CX, ecx+16(FP)
	MOVL DX, edx+20(FP)
	RET

// func xgetbv() (eax, edx uint32)
TEXT ·xgetbv(SB), NOSPLIT, $0-8
	MOVL $0, CX
	XGETBV
	MOVL AX, eax+0(FP)
	MOVL DX, edx+4(FP)
	RET

// func sgemmKernel4x16(k int, a *float32, rsa, csa int, b *float32, ldb int, c *float32, ldc int, add int)
//
// C[i][j] (+)= Σ_p A[i][p]·b[p*ldb+j] for i < 4, j < 16, where A[i][p] is at
// a[i*rsa+p*csa] (a packed panel has rsa = 1, csa = 4) and C's rows are ldc floats
// apart. Each product is accumulated with FMA in p order, starting from zero; the
// sum is added to C when add ≠ 0 and overwrites C otherwise.
TEXT ·sgemmKernel4x16(SB), NOSPLIT, $0-72
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ rsa+16(FP), R10
	SHLQ $2, R10
	LEAQ (R10)(R10*2), R11
	MOVQ csa+24(FP), R12
	SHLQ $2, R12
	MOVQ b+32(FP), DI
	MOVQ ldb+40(FP), R9
	SHLQ $2, R9
	MOVQ c+48(FP), DX
	MOVQ ldc+56(FP), R8
	SHLQ $2, R8
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	TESTQ CX, CX
	JEQ store

loop:
	VMOVUPS (DI), Y8
	VMOVUPS 32(DI), Y9
	VBROADCASTSS (SI), Y10
	VBROADCASTSS (SI)(R10*1), Y11
	VFMADD231PS Y8, Y10, Y0
	VFMADD231PS Y9, Y10, Y1
	VBROADCASTSS (SI)(R10*2), Y12
	VFMADD231PS Y8, Y11, Y2
	VFMADD231PS Y9, Y11, Y3
	VBROADCASTSS (SI)(R11*1), Y13
	VFMADD231PS Y8, Y12, Y4
	VFMADD231PS Y9, Y12, Y5
	VFMADD231PS Y8, Y13, Y6
	VFMADD231PS Y9, Y13, Y7
	ADDQ R12, SI
	ADDQ R9, DI
	DECQ CX
	JNE loop

store:
	MOVQ add+64(FP), AX
	TESTQ AX, AX
	JEQ overwrite
	VADDPS (DX), Y0, Y0
	VMOVUPS Y0, (DX)
	VADDPS 32(DX), Y1, Y1
	VMOVUPS Y1, 32(DX)
	ADDQ R8, DX
	VADDPS (DX), Y2, Y2
	VMOVUPS Y2, (DX)
	VADDPS 32(DX), Y3, Y3
	VMOVUPS Y3, 32(DX)
	ADDQ R8, DX
	VADDPS (DX), Y4, Y4
	VMOVUPS Y4, (DX)
	VADDPS 32(DX), Y5, Y5
	VMOVUPS Y5, 32(DX)
	ADDQ R8, DX
	VADDPS (DX), Y6, Y6
	VMOVUPS Y6, (DX)
	VADDPS 32(DX), Y7, Y7
	VMOVUPS Y7, 32(DX)
	VZEROUPPER
	RET

overwrite:
	VMOVUPS Y0, (DX)
	VMOVUPS Y1, 32(DX)
	ADDQ R8, DX
	VMOVUPS Y2, (DX)
	VMOVUPS Y3, 32(DX)
	ADDQ R8, DX
	VMOVUPS Y4, (DX)
	VMOVUPS Y5, 32(DX)
	ADDQ R8, DX
	VMOVUPS Y6, (DX)
	VMOVUPS Y7, 32(DX)
	VZEROUPPER
	RET

// func sgemmKernel1x128(k int, a *float32, csa int, b *float32, ldb int, c *float32, add int)
//
// One row of C: C[j] (+)= Σ_p A[p]·b[p*ldb+j] for j < 128, A[p] at a[p*csa], B read in
// place (row stride ldb). Each element is the FMA chain in p order starting from
// zero, added to C when add ≠ 0, as in sgemmKernel4x16/4x32, so the bits are theirs;
// eight independent chains keep the FMA units busy where a 4-row kernel would
// compute three rows of padding. AVX-512F only.
TEXT ·sgemmKernel1x128(SB), NOSPLIT, $0-56
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ csa+16(FP), R12
	SHLQ $2, R12
	MOVQ b+24(FP), DI
	MOVQ ldb+32(FP), R9
	SHLQ $2, R9
	MOVQ c+40(FP), DX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	TESTQ CX, CX
	JEQ store128

loop128:
	VBROADCASTSS (SI), Z8
	VFMADD231PS (DI), Z8, Z0
	VFMADD231PS 64(DI), Z8, Z1
	VFMADD231PS 128(DI), Z8, Z2
	VFMADD231PS 192(DI), Z8, Z3
	VFMADD231PS 256(DI), Z8, Z4
	VFMADD231PS 320(DI), Z8, Z5
	VFMADD231PS 384(DI), Z8, Z6
	VFMADD231PS 448(DI), Z8, Z7
	ADDQ R12, SI
	ADDQ R9, DI
	DECQ CX
	JNE loop128

store128:
	MOVQ add+48(FP), AX
	TESTQ AX, AX
	JEQ overwrite128
	VADDPS (DX), Z0, Z0
	VADDPS 64(DX), Z1, Z1
	VADDPS 128(DX), Z2, Z2
	VADDPS 192(DX), Z3, Z3
	VADDPS 256(DX), Z4, Z4
	VADDPS 320(DX), Z5, Z5
	VADDPS 384(DX), Z6, Z6
	VADDPS 448(DX), Z7, Z7

overwrite128:
	VMOVUPS Z0, (DX)
	VMOVUPS Z1, 64(DX)
	VMOVUPS Z2, 128(DX)
	VMOVUPS Z3, 192(DX)
	VMOVUPS Z4, 256(DX)
	VMOVUPS Z5, 320(DX)
	VMOVUPS Z6, 384(DX)
	VMOVUPS Z7, 448(DX)
	VZEROUPPER
	RET

// func sgemmKernel4x32Panels(k int, a *float32, rsa, csa, astep int, b0, b1 *float32, ldb int, c *float32, ldc int, add int, panels int)
//
// The AVX-512 twin of sgemmKernel4x16 for two adjacent 16-column panels of B (b0 for
// C's columns 0–15, b1 for 16–31, both with row stride ldb), over panels ≥ 1
// consecutive 4-row blocks of C (block r at c + 4·r·ldc, its A block at
// a + r·astep) in one call: each element is the same FMA chain as in
// sgemmKernel4x16, so every value is bit-identical to what it computes.
TEXT ·sgemmKernel4x32Panels(SB), NOSPLIT, $0-96
	MOVQ rsa+16(FP), R10
	SHLQ $2, R10
	LEAQ (R10)(R10*2), R11
	MOVQ csa+24(FP), R12
	SHLQ $2, R12
	MOVQ ldb+56(FP), R9
	SHLQ $2, R9
	MOVQ c+64(FP), DX
	MOVQ ldc+72(FP), R8
	SHLQ $2, R8
	MOVQ panels+88(FP), R13

panel32:
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ b0+40(FP), DI
	MOVQ b1+48(FP), BX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	TESTQ CX, CX
	JEQ pstore32

ploop32:
	VMOVUPS (DI), Z8
	VMOVUPS (BX), Z9
	VBROADCASTSS (SI), Z10
	VBROADCASTSS (SI)(R10*1), Z11
	VFMADD231PS Z8, Z10, Z0
	VFMADD231PS Z9, Z10, Z1
	VBROADCASTSS (SI)(R10*2), Z12
	VFMADD231PS Z8, Z11, Z2
	VFMADD231PS Z9, Z11, Z3
	VBROADCASTSS (SI)(R11*1), Z13
	VFMADD231PS Z8, Z12, Z4
	VFMADD231PS Z9, Z12, Z5
	VFMADD231PS Z8, Z13, Z6
	VFMADD231PS Z9, Z13, Z7
	ADDQ R12, SI
	ADDQ R9, DI
	ADDQ R9, BX
	DECQ CX
	JNE ploop32

pstore32:
	MOVQ add+80(FP), AX
	TESTQ AX, AX
	JEQ poverwrite32
	VADDPS (DX), Z0, Z0
	VADDPS 64(DX), Z1, Z1
	VADDPS (DX)(R8*1), Z2, Z2
	VADDPS 64(DX)(R8*1), Z3, Z3
	VADDPS (DX)(R8*2), Z4, Z4
	VADDPS 64(DX)(R8*2), Z5, Z5
	LEAQ (R8)(R8*2), AX
	VADDPS (DX)(AX*1), Z6, Z6
	VADDPS 64(DX)(AX*1), Z7, Z7

poverwrite32:
	VMOVUPS Z0, (DX)
	VMOVUPS Z1, 64(DX)
	ADDQ R8, DX
	VMOVUPS Z2, (DX)
	VMOVUPS Z3, 64(DX)
	ADDQ R8, DX
	VMOVUPS Z4, (DX)
	VMOVUPS Z5, 64(DX)
	ADDQ R8, DX
	VMOVUPS Z6, (DX)
	VMOVUPS Z7, 64(DX)
	ADDQ R8, DX
	MOVQ astep+32(FP), AX
	SHLQ $2, AX
	ADDQ AX, a+8(FP)
	DECQ R13
	JNE panel32
	VZEROUPPER
	RET

// Twelve rows of C (three 4-row blocks) at DX, rows R8 bytes apart: add C's old values
// to the accumulators when the add argument is non-zero, store them, and leave DX at
// the row after the twelfth.
#define STORE_ROW(z0, z1) VMOVUPS z0, (DX); VMOVUPS z1, 64(DX); ADDQ R8, DX
#define ADD_STORE_ROW(z0, z1) VADDPS (DX), z0, z0; VADDPS 64(DX), z1, z1; STORE_ROW(z0, z1)

// One k step of one A row for both 16-column halves: broadcast A[i][p] from addr into
// zb and multiply-add it with B's row p (Z24, Z25) into z0 and z1.
#define ROW_FMA(addr, zb, z0, z1) VBROADCASTSS addr, zb; VFMADD231PS Z24, zb, z0; VFMADD231PS Z25, zb, z1

// func sgemmKernel12x32Panels(k int, a *float32, rsa, csa, astep int, b0, b1 *float32, ldb int, c *float32, ldc int, add int, groups int)
//
// sgemmKernel4x32Panels for three consecutive 4-row blocks at a time: groups ≥ 1
// groups of 12 rows of C (group g at c + 12·g·ldc, its three A blocks at
// a + (3g + r)·astep, r = 0, 1, 2), so 24 independent FMA chains keep both FMA ports
// busy where the 4-row kernel's 8 chains wait on the FMA latency. Each element of C
// is the same FMA chain in p order, starting from zero and then added to C or stored,
// so every value is bit-identical to sgemmKernel4x32Panels's and sgemmKernel4x16's.
// AVX-512F only.
TEXT ·sgemmKernel12x32Panels(SB), NOSPLIT, $0-96
	MOVQ rsa+16(FP), R10
	SHLQ $2, R10
	LEAQ (R10)(R10*2), R11
	MOVQ csa+24(FP), R12
	SHLQ $2, R12
	MOVQ ldb+56(FP), R9
	SHLQ $2, R9
	MOVQ c+64(FP), DX
	MOVQ ldc+72(FP), R8
	SHLQ $2, R8
	MOVQ groups+88(FP), R13

group12:
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ astep+32(FP), AX
	SHLQ $2, AX
	LEAQ (SI)(AX*1), R14
	LEAQ (R14)(AX*1), AX
	MOVQ b0+40(FP), DI
	MOVQ b1+48(FP), BX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	VPXORD Z20, Z20, Z20
	VPXORD Z21, Z21, Z21
	VPXORD Z22, Z22, Z22
	VPXORD Z23, Z23, Z23
	TESTQ CX, CX
	JEQ gstore12

gloop12:
	VMOVUPS (DI), Z24
	VMOVUPS (BX), Z25
	ROW_FMA((SI), Z26, Z0, Z1)
	ROW_FMA((SI)(R10*1), Z27, Z2, Z3)
	ROW_FMA((SI)(R10*2), Z28, Z4, Z5)
	ROW_FMA((SI)(R11*1), Z29, Z6, Z7)
	ROW_FMA((R14), Z30, Z8, Z9)
	ROW_FMA((R14)(R10*1), Z31, Z10, Z11)
	ROW_FMA((R14)(R10*2), Z26, Z12, Z13)
	ROW_FMA((R14)(R11*1), Z27, Z14, Z15)
	ROW_FMA((AX), Z28, Z16, Z17)
	ROW_FMA((AX)(R10*1), Z29, Z18, Z19)
	ROW_FMA((AX)(R10*2), Z30, Z20, Z21)
	ROW_FMA((AX)(R11*1), Z31, Z22, Z23)
	ADDQ R12, SI
	ADDQ R12, R14
	ADDQ R12, AX
	ADDQ R9, DI
	ADDQ R9, BX
	DECQ CX
	JNE gloop12

gstore12:
	MOVQ add+80(FP), CX
	TESTQ CX, CX
	JEQ goverwrite12
	ADD_STORE_ROW(Z0, Z1)
	ADD_STORE_ROW(Z2, Z3)
	ADD_STORE_ROW(Z4, Z5)
	ADD_STORE_ROW(Z6, Z7)
	ADD_STORE_ROW(Z8, Z9)
	ADD_STORE_ROW(Z10, Z11)
	ADD_STORE_ROW(Z12, Z13)
	ADD_STORE_ROW(Z14, Z15)
	ADD_STORE_ROW(Z16, Z17)
	ADD_STORE_ROW(Z18, Z19)
	ADD_STORE_ROW(Z20, Z21)
	ADD_STORE_ROW(Z22, Z23)
	JMP gnext12

goverwrite12:
	STORE_ROW(Z0, Z1)
	STORE_ROW(Z2, Z3)
	STORE_ROW(Z4, Z5)
	STORE_ROW(Z6, Z7)
	STORE_ROW(Z8, Z9)
	STORE_ROW(Z10, Z11)
	STORE_ROW(Z12, Z13)
	STORE_ROW(Z14, Z15)
	STORE_ROW(Z16, Z17)
	STORE_ROW(Z18, Z19)
	STORE_ROW(Z20, Z21)
	STORE_ROW(Z22, Z23)

gnext12:
	MOVQ astep+32(FP), CX
	SHLQ $2, CX
	LEAQ (CX)(CX*2), CX
	ADDQ CX, a+8(FP)
	DECQ R13
	JNE group12
	VZEROUPPER
	RET
