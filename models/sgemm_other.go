//go:build !amd64

package models

import "unsafe"

// hasAVX2FMA is false off amd64: the packed float32 GEMM is not used there.
func hasAVX2FMA() bool { return false }

// hasAVX512 is false off amd64.
func hasAVX512() bool { return false }

// sgemmKernel4x32Panels is two sgemmKernel4x16 calls per block; never called off
// amd64.
func sgemmKernel4x32Panels(k int, a *float32, rsa, csa, astep int, b0, b1 *float32, ldb int, c *float32, ldc int, add int, panels int) {
	for r := 0; r < panels; r++ {
		ar := (*float32)(unsafe.Add(unsafe.Pointer(a), r*astep*4))
		cr := unsafe.Add(unsafe.Pointer(c), r*4*ldc*4)
		sgemmKernel4x16(k, ar, rsa, csa, b0, ldb, (*float32)(cr), ldc, add)
		sgemmKernel4x16(k, ar, rsa, csa, b1, ldb, (*float32)(unsafe.Add(cr, 16*4)), ldc, add)
	}
}

// sgemmKernel12x32Panels is sgemmKernel4x32Panels over 3·groups blocks; never
// called off amd64.
func sgemmKernel12x32Panels(k int, a *float32, rsa, csa, astep int, b0, b1 *float32, ldb int, c *float32, ldc int, add int, groups int) {
	sgemmKernel4x32Panels(k, a, rsa, csa, astep, b0, b1, ldb, c, ldc, add, 3*groups)
}

// sgemmKernel1x128 is eight sgemmKernel4x16 calls' first rows; never called off amd64.
func sgemmKernel1x128(k int, a *float32, csa int, b *float32, ldb int, c *float32, add int) {
	var tile [4 * 16]float32
	cs := unsafe.Slice(c, 128)
	for j := 0; j < 128; j += 16 {
		copy(tile[:16], cs[j:j+16])
		sgemmKernel4x16(k, a, 0, csa, (*float32)(unsafe.Add(unsafe.Pointer(b), j*4)), ldb, &tile[0], 16, add)
		copy(cs[j:j+16], tile[:16])
	}
}

// sgemmKernel4x16 is the portable version of the amd64 micro-kernel (same packed
// layouts, same summation order, but without fused multiply-adds). It keeps the
// package building off amd64, where hasAVX2FMA is false and gonum runs instead.
func sgemmKernel4x16(k int, a *float32, rsa, csa int, b *float32, ldb int, c *float32, ldc int, add int) {
	cs := unsafe.Slice(c, 3*ldc+16)
	if add == 0 {
		for i := 0; i < 4; i++ {
			clear(cs[i*ldc : i*ldc+16])
		}
	}
	if k == 0 {
		return
	}
	as := unsafe.Slice(a, 3*rsa+(k-1)*csa+1)
	bs := unsafe.Slice(b, (k-1)*ldb+16)
	var acc [4][16]float32
	for p := 0; p < k; p++ {
		for i := 0; i < 4; i++ {
			av := as[i*rsa+p*csa]
			for j := 0; j < 16; j++ {
				acc[i][j] += av * bs[p*ldb+j]
			}
		}
	}
	for i := 0; i < 4; i++ {
		for j := 0; j < 16; j++ {
			cs[i*ldc+j] += acc[i][j]
		}
	}
}
