package models

// tanhRational is the scalar form of tanhF32's rational approximation of tanh (the
// float32 version of Eigen's fast tanh): x clamped to ±7.9053111, then
// x·P(x²)/Q(x²) with P of degree 6 and Q of degree 3 in x². Without fused
// multiply-adds its result may differ from tanhF32's in the last bits.
func tanhRational(x float32) float32 {
	const c = 7.90531110763549805
	x = max(-c, min(c, x))
	x2 := x * x
	p := float32(-2.76076847742355e-16)
	p = p*x2 + 2.00018790482477e-13
	p = p*x2 + -8.60467152213735e-11
	p = p*x2 + 5.12229709037114e-08
	p = p*x2 + 1.48572235717979e-05
	p = p*x2 + 6.37261928875436e-04
	p = p*x2 + 4.89352455891786e-03
	q := float32(1.19825839466702e-06)
	q = q*x2 + 1.18534705686654e-04
	q = q*x2 + 2.26843463243900e-03
	q = q*x2 + 4.89352518554385e-03
	return p * x / q
}

// tanhVec sets y = tanh(x) elementwise with tanhF32; the last len(x) mod 8 values
// go through a zero-padded block of 8, so every value is computed by the same
// instructions wherever it sits.
func tanhVec(x, y []float32) {
	n8 := len(x) &^ 7
	tanhF32(x[:n8], y[:n8])
	if n8 == len(x) {
		return
	}
	var in, out [8]float32
	copy(in[:], x[n8:])
	tanhF32(in[:], out[:])
	copy(y[n8:len(x)], out[:])
}

// dotVec returns Σ x_i·y_i accumulated in float64 (dotF32F64 plus a scalar tail).
func dotVec(x, y []float32) float64 {
	n8 := len(x) &^ 7
	s := dotF32F64(x[:n8], y[:n8])
	for i := n8; i < len(x); i++ {
		s += float64(x[i]) * float64(y[i])
	}
	return s
}

// axpyVec adds sc·g to acc in float64 (axpyF32F64 plus a scalar tail).
func axpyVec(acc []float64, sc float64, g []float32) {
	n8 := len(g) &^ 7
	axpyF32F64(acc[:n8], sc, g[:n8])
	for i := n8; i < len(g); i++ {
		acc[i] += sc * float64(g[i])
	}
}

// dotSqVec returns Σ x_i·y_i and Σ y_i² accumulated in float64 (dotSqF32F64 plus a
// scalar tail).
func dotSqVec(x, y []float32) (xy, yy float64) {
	n8 := len(x) &^ 7
	xy, yy = dotSqF32F64(x[:n8], y[:n8])
	for i := n8; i < len(x); i++ {
		yv := float64(y[i])
		xy += float64(x[i]) * yv
		yy += yv * yv
	}
	return xy, yy
}

// mulVec sets y = a·x elementwise (mulF32 plus a scalar tail, the same rounding).
func mulVec(a, x, y []float32) {
	n8 := len(x) &^ 7
	mulF32(a[:n8], x[:n8], y[:n8])
	for i := n8; i < len(x); i++ {
		y[i] = a[i] * x[i]
	}
}

// actTanVec sets tdx = d1·tdy + d2·tx·dy elementwise (actTanF32 plus a scalar tail,
// the same rounding): the tangent of an activation's backward pass.
func actTanVec(d1, tdy, d2, tx, dy, tdx []float32) {
	n8 := len(tx) &^ 7
	actTanF32(d1[:n8], tdy[:n8], d2[:n8], tx[:n8], dy[:n8], tdx[:n8])
	for i := n8; i < len(tx); i++ {
		tdx[i] = d1[i]*tdy[i] + d2[i]*tx[i]*dy[i]
	}
}

// addVec adds x to y elementwise (each sum rounded once, as in a Go loop).
func addVec(x, y []float32) {
	addF32(x, y[:len(x)])
}
