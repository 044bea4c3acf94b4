// Package philox is the counter-based generator of the DP-SGD noise: Philox4x32-10
// (Salmon, Moraes, Dror and Shaw, "Parallel random numbers: as easy as 1, 2, 3",
// SC'11; the Random123 library) and standard normals from it by Box–Muller.
//
// A draw is a pure function of (key, counter): the noise of coordinate i at step t of
// a repeat needs no state, so the CPU can draw any coordinates in any order on any
// number of goroutines and a GPU kernel can draw each coordinate in its own thread,
// and all of them get the same bits. cuda/kernels/dpfil.cu implements the very same
// arithmetic (dp_philox, dp_gauss_pair): only IEEE-754 double additions,
// subtractions, multiplications, divisions and square roots, each rounded on its own
// (no fused multiply-add: the explicit float64 conversions below forbid Go's fusion,
// the kernels use __dadd_rn/__dmul_rn, and the C builds compile with
// -ffp-contract=off), with the logarithm and sine/cosine computed by the polynomials
// written out here instead of a math library whose last bit differs between Go, glibc
// and CUDA's libdevice. cuda's tests compare the two bit for bit.
package philox

import "math"

// The Philox4x32 multipliers and Weyl key increments (Random123's philox.h).
const (
	M0 = 0xD2511F53
	M1 = 0xCD9E8D57
	W0 = 0x9E3779B9
	W1 = 0xBB67AE85
)

// Rounds is the number of rounds of the generator used for the noise.
const Rounds = 10

// Block is Philox4x32 with the given number of rounds (Random123's philox4x32_R):
// four 32-bit outputs from a 128-bit counter and a 64-bit key.
func Block(ctr [4]uint32, key [2]uint32, rounds int) [4]uint32 {
	for r := 0; r < rounds; r++ {
		if r > 0 {
			key[0] += W0
			key[1] += W1
		}
		p0 := uint64(M0) * uint64(ctr[0])
		p1 := uint64(M1) * uint64(ctr[2])
		ctr = [4]uint32{uint32(p1>>32) ^ ctr[1] ^ key[0], uint32(p1), uint32(p0>>32) ^ ctr[3] ^ key[1], uint32(p0)}
	}
	return ctr
}

// Key splits a 64-bit seed into a Philox key (low half first).
func Key(seed uint64) [2]uint32 { return [2]uint32{uint32(seed), uint32(seed >> 32)} }

// Counter is the counter of pair p of block b: (p low, p high, b low, b high). The
// trainer's noise uses b = the step and p = ⌊coordinate/2⌋.
func Counter(b, p uint64) [4]uint32 {
	return [4]uint32{uint32(p), uint32(p >> 32), uint32(b), uint32(b >> 32)}
}

// Uniforms maps a Philox output to two doubles with 53 random bits each: u1 in
// (0, 1] (from words 0 and 1: never 0, so log(u1) is finite) and u2 in [0, 1) (words
// 2 and 3).
func Uniforms(x [4]uint32) (u1, u2 float64) {
	const inv53 = 1.0 / (1 << 53)
	a := (uint64(x[1])<<32 | uint64(x[0])) >> 11
	b := (uint64(x[3])<<32 | uint64(x[2])) >> 11
	return float64(a+1) * inv53, float64(b) * inv53
}

// Pair returns the two standard normals of counter (b, p) under key: Box–Muller,
// z0 = r·cos θ and z1 = r·sin θ with r = √(−2 ln u1), θ = 2π·u2.
func Pair(key [2]uint32, b, p uint64) (z0, z1 float64) {
	u1, u2 := Uniforms(Block(Counter(b, p), key, Rounds))
	r := math.Sqrt(float64(-2 * Log(u1)))
	s, c := SinCos2Pi(u2)
	return float64(r * c), float64(r * s)
}

// Normal returns the standard normal of coordinate i at block b: component i mod 2
// of pair ⌊i/2⌋.
func Normal(key [2]uint32, b, i uint64) float64 {
	z0, z1 := Pair(key, b, i/2)
	if i%2 == 0 {
		return z0
	}
	return z1
}

// The logarithm's polynomial (FreeBSD's e_log.c, also Go's math.Log).
const (
	ln2Hi = 6.93147180369123816490e-01
	ln2Lo = 1.90821492927058770002e-10
	lg1   = 6.666666666666735130e-01
	lg2   = 3.999999999940941908e-01
	lg3   = 2.857142874366239149e-01
	lg4   = 2.222219843214978396e-01
	lg5   = 1.818357216161805012e-01
	lg6   = 1.531383769920937332e-01
	lg7   = 1.479819860511658591e-01
)

// Log is the natural logarithm of a positive normal finite x, within 1 ulp, in
// individually rounded operations (e_log.c's reduction and polynomial): x = 2^k·m with
// m in [√2/2, √2), f = m − 1, s = f/(2+f), ln m = f − (f²/2 − s·(f²/2 + R(s²))).
func Log(x float64) float64 {
	bits := math.Float64bits(x)
	k := int64(bits>>52&0x7ff) - 1022
	m := math.Float64frombits(bits&^(0x7ff<<52) | 1022<<52) // in [0.5, 1)
	if m < math.Sqrt2/2 {
		m = float64(m * 2)
		k--
	}
	f := float64(m - 1)
	kf := float64(k)
	s := float64(f / float64(2+f))
	s2 := float64(s * s)
	s4 := float64(s2 * s2)
	t1 := float64(s2 * float64(lg1+float64(s4*float64(lg3+float64(s4*float64(lg5+float64(s4*lg7)))))))
	t2 := float64(s4 * float64(lg2+float64(s4*float64(lg4+float64(s4*lg6)))))
	R := float64(t1 + t2)
	hfsq := float64(float64(0.5*f) * f)
	inner := float64(hfsq - float64(float64(s*float64(hfsq+R))+float64(kf*ln2Lo)))
	return float64(kf*ln2Hi) - float64(inner-f)
}

// The kernels of sin and cos on [−π/4, π/4] (FreeBSD's k_sin.c and k_cos.c).
const (
	s1   = -1.66666666666666324348e-01
	s2   = 8.33333333332248946124e-03
	s3   = -1.98412698298579493134e-04
	s4   = 2.75573137070700676789e-06
	s5   = -2.50507602534068634195e-08
	s6   = 1.58969099521155010221e-10
	c1   = 4.16666666666666019037e-02
	c2   = -1.38888888888741095749e-03
	c3   = 2.48015872894767294178e-05
	c4   = -2.75573143513906633035e-07
	c5   = 2.08757232129817482790e-09
	c6   = -1.13596475577881948265e-11
	pio4 = math.Pi / 4
)

func kernelSin(x float64) float64 {
	z := float64(x * x)
	v := float64(z * x)
	r := float64(s2 + float64(z*float64(s3+float64(z*float64(s4+float64(z*float64(s5+float64(z*s6))))))))
	return x + float64(v*float64(s1+float64(z*r)))
}

func kernelCos(x float64) float64 {
	z := float64(x * x)
	r := float64(z * float64(c1+float64(z*float64(c2+float64(z*float64(c3+float64(z*float64(c4+float64(z*float64(c5+float64(z*c6)))))))))))
	hz := float64(0.5 * z)
	w := float64(1 - hz)
	return w + float64(float64(float64(1-w)-hz)+float64(z*r))
}

// SinCos2Pi returns sin(2πu) and cos(2πu) for u in [0, 1) with 53-bit resolution
// (u·2⁵³ an integer): 8u = o + f exactly, octant o, and the angle within the octant
// is f·π/4 or (1 − f)·π/4 (both exact in f), at most π/4, for the kernels.
func SinCos2Pi(u float64) (sin, cos float64) {
	t := float64(u * 8)
	o := int(t)
	f := float64(t - float64(o))
	if o&1 == 1 {
		f = float64(1 - f)
	}
	a := float64(f * pio4)
	sa, ca := kernelSin(a), kernelCos(a)
	switch o & 7 {
	case 0:
		return sa, ca
	case 1:
		return ca, sa
	case 2:
		return ca, -sa
	case 3:
		return sa, -ca
	case 4:
		return -sa, -ca
	case 5:
		return -ca, -sa
	case 6:
		return -ca, sa
	default:
		return -sa, ca
	}
}
