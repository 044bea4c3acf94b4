//go:build !amd64

package models

// Portable versions of the amd64 vector kernels. Off amd64 hasAVX2FMA is false and
// the backend never calls them; they keep the package building.

func tanhF32(x, y []float32) {
	for i := 0; i < len(x)&^7; i++ {
		y[i] = tanhRational(x[i])
	}
}

func dotF32F64(x, y []float32) float64 {
	var s float64
	for i := 0; i < len(x)&^7; i++ {
		s += float64(x[i]) * float64(y[i])
	}
	return s
}

func axpyF32F64(acc []float64, sc float64, g []float32) {
	for i := 0; i < len(g)&^7; i++ {
		acc[i] += sc * float64(g[i])
	}
}

func dotSqF32F64(x, y []float32) (xy, yy float64) {
	for i := 0; i < len(x)&^7; i++ {
		xy += float64(x[i]) * float64(y[i])
		yy += float64(y[i]) * float64(y[i])
	}
	return xy, yy
}

func mulF32(a, x, y []float32) {
	for i := 0; i < len(x)&^7; i++ {
		y[i] = a[i] * x[i]
	}
}

func actTanF32(d1, tdy, d2, tx, dy, tdx []float32) {
	for i := 0; i < len(tx)&^7; i++ {
		tdx[i] = d1[i]*tdy[i] + d2[i]*tx[i]*dy[i]
	}
}

func addPatch4F32(row, dx []float32, inC, kh, hw, w int) {
	for c := 0; c < inC; c++ {
		for r := 0; r < kh; r++ {
			for t := 0; t < 4; t++ {
				dx[c*hw+r*w+t] += row[(c*kh+r)*4+t]
			}
		}
	}
}

func copyPatch4F32(x, row []float32, inC, kh, hw, w int) {
	for c := 0; c < inC; c++ {
		for r := 0; r < kh; r++ {
			copy(row[(c*kh+r)*4:(c*kh+r)*4+4], x[c*hw+r*w:])
		}
	}
}

// hasSSEPatch is false off amd64: the patch-major im2col uses its Go loops.
const hasSSEPatch = false

func addF32(x, y []float32) {
	for i := range x {
		y[i] += x[i]
	}
}

func tanhBackF32(y, dy, dx []float32) {
	for i, v := range y {
		dx[i] = (1 - v*v) * dy[i]
	}
}

func addConstF32(y []float32, c float32) {
	for i := range y {
		y[i] += c
	}
}

func transpose8F32(src []float32, ld int, dst []float32, dld int, nb int) {
	for i := 0; i < 8; i++ {
		for j := 0; j < 8*nb; j++ {
			dst[j*dld+i] = src[i*ld+j]
		}
	}
}

func avgPool2s2F32(x0, x1, y []float32, inv float32) {
	for i := 0; i < len(y)&^7; i++ {
		var s float32
		s += x0[2*i]
		s += x0[2*i+1]
		s += x1[2*i]
		s += x1[2*i+1]
		y[i] = s * inv
	}
}

func avgPoolBack2s2F32(dy, dx0, dx1 []float32, inv float32) {
	for i := 0; i < len(dy)&^7; i++ {
		v := dy[i] * inv
		dx0[2*i] += v
		dx0[2*i+1] += v
		dx1[2*i] += v
		dx1[2*i+1] += v
	}
}
