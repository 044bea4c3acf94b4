//go:build !amd64

package models

// winoCombF32 is the portable version of the amd64 kernel; off amd64 hasAVX2FMA is
// false and winoComb never calls it.
func winoCombF32(c *[16][8]float32, x, y *[4]*float32, n8, ny int) {
	winoCombRef(c[:], x[:], y[:], n8, ny)
}
