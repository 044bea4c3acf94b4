//go:build !amd64

package models

import "unsafe"

// winoComb6F32 is the portable version of the amd64 kernel; off amd64 hasAVX2FMA
// is false and winoCombN never calls it.
func winoComb6F32(c *[36][8]float32, x, y *[6]*float32, n8, ny int) {
	n := 8 * n8
	var xs [6][]float32
	for i := range xs {
		xs[i] = unsafe.Slice(x[i], n)
	}
	for j := 0; j < ny; j++ {
		yj := unsafe.Slice(y[j], n)
		for k := range yj {
			s := c[j*6][0] * xs[0][k]
			for i := 1; i < 6; i++ {
				s += c[j*6+i][0] * xs[i][k]
			}
			yj[k] = s
		}
	}
}
