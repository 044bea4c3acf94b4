//go:build !amd64

package models

import "unsafe"

// winoComb6F32 is the portable version of the amd64 kernel; off amd64 hasAVX2FMA
// is false and winoCombN never calls it.
func winoComb6F32(c *[36][8]float32, x, y *[6]*float32, n8, ny int) {
	winoCombRef(c[:], x[:], y[:], n8, ny)
}

// winoTab4F32 sets y = Cx for the F(4, 3) table C picked by pick (portable version
// of the amd64 kernels below; never called off amd64).
func winoTab4F32(x, y *[6]*float32, n8 int, ny, nx int, f func(j, i int) float64) {
	n := 8 * n8
	for j := 0; j < ny; j++ {
		yj := unsafe.Slice(y[j], n)
		for k := range yj {
			var s float32
			for i := 0; i < nx; i++ {
				s += float32(f(j, i)) * unsafe.Slice(x[i], n)[k]
			}
			yj[k] = s
		}
	}
}

func winoBt4F32(x, y *[6]*float32, n8 int) {
	bt, _, _ := winoTables(4)
	winoTab4F32(x, y, n8, 6, 6, func(j, i int) float64 { return bt[j][i] })
}

func winoB4F32(x, y *[6]*float32, n8 int) {
	bt, _, _ := winoTables(4)
	winoTab4F32(x, y, n8, 6, 6, func(j, i int) float64 { return bt[i][j] })
}

func winoAt4F32(x, y *[6]*float32, n8 int) {
	_, _, at := winoTables(4)
	winoTab4F32(x, y, n8, 4, 6, func(j, i int) float64 { return at[j][i] })
}

func winoA4F32(x, y *[6]*float32, n8 int) {
	_, _, at := winoTables(4)
	winoTab4F32(x, y, n8, 6, 4, func(j, i int) float64 { return at[i][j] })
}

// The portable versions of the row kernels (never called off amd64).
func winoDeint4RowsF32(src *float32, sstride int, d *[6]*float32, dstride, rows, n4 int) {
	winoDeintRowsRef(src, sstride, d, dstride, rows, n4, 4)
}

func winoDeint6RowsF32(src *float32, sstride int, d *[6]*float32, dstride, rows, n4 int) {
	winoDeintRowsRef(src, sstride, d, dstride, rows, n4, 6)
}

func winoDeintRowsRef(src *float32, sstride int, d *[6]*float32, dstride, rows, n4, nj int) {
	n := 4 * n4
	s := unsafe.Slice(src, (rows-1)*sstride+4*n+2)
	for j := 0; j < nj; j++ {
		dj := unsafe.Slice(d[j], (rows-1)*dstride+n)
		for r := 0; r < rows; r++ {
			for t := 0; t < n; t++ {
				dj[r*dstride+t] = s[r*sstride+4*t+j]
			}
		}
	}
}

func winoInt4RowsF32(s *[6]*float32, sstride int, dst *float32, dstride, rows, n4 int) {
	winoIntRowsRef(s, sstride, dst, dstride, rows, n4, 4)
}

func winoInt6RowsF32(s *[6]*float32, sstride int, dst *float32, dstride, rows, n4 int) {
	winoIntRowsRef(s, sstride, dst, dstride, rows, n4, 6)
}

func winoIntRowsRef(s *[6]*float32, sstride int, dst *float32, dstride, rows, n4, nj int) {
	n := 4 * n4
	d := unsafe.Slice(dst, (rows-1)*dstride+4*n+2)
	for r := 0; r < rows; r++ {
		dr := d[r*dstride:]
		for c := 0; c < 4; c++ {
			sc := unsafe.Slice(s[c], (rows-1)*sstride+n)[r*sstride:]
			for t := 0; t < n; t++ {
				dr[4*t+c] = sc[t]
			}
		}
		if nj == 6 {
			dr[4*n], dr[4*n+1] = 0, 0
			for c := 0; c < 2; c++ {
				sc := unsafe.Slice(s[4+c], (rows-1)*sstride+n)[r*sstride:]
				for t := 0; t < n; t++ {
					dr[4*t+4+c] += sc[t]
				}
			}
		}
	}
}

// winoTransposeF32 is the portable version of the amd64 kernel (never called off
// amd64).
func winoTransposeF32(src *float32, sstride int, dst *float32, dstride, rows4, cols4 int) {
	rows, cols := 4*rows4, 4*cols4
	s := unsafe.Slice(src, (rows-1)*sstride+cols)
	d := unsafe.Slice(dst, (cols-1)*dstride+rows)
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			d[c*dstride+r] = s[r*sstride+c]
		}
	}
}

func winoGt4F32(x, y *[6]*float32, n8 int) {
	_, g, _ := winoTables(4)
	winoTab4F32(x, y, n8, 3, 6, func(j, i int) float64 { return g[i][j] })
}
