//go:build !amd64

package models

import (
	"math"
	"unsafe"
)

// dgemmKernel4x8 is the Go form of the amd64 kernel; off amd64 NewDgemm runs gonum's
// Dgemm instead, so it is not called there.
func dgemmKernel4x8(k int, a, b, c *float64, ldc, add int) { dgemmKernelGo(8, k, a, b, c, ldc, add) }

// dgemmKernel4x16 is the Go form of the AVX-512 kernel (not called off amd64).
func dgemmKernel4x16(k int, a, b, c *float64, ldc, add int) { dgemmKernelGo(16, k, a, b, c, ldc, add) }

func dgemmKernelGo(nr, k int, a, b, c *float64, ldc, add int) {
	as := unsafe.Slice(a, 4*k)
	bs := unsafe.Slice(b, nr*k)
	cs := unsafe.Slice(c, 3*ldc+nr)
	for i := 0; i < 4; i++ {
		for j := 0; j < nr; j++ {
			s := 0.0
			for p := 0; p < k; p++ {
				s = math.FMA(as[p*4+i], bs[p*nr+j], s)
			}
			if add != 0 {
				s += cs[i*ldc+j]
			}
			cs[i*ldc+j] = s
		}
	}
}
