package accounting

import (
	"math"
	"math/bits"

	"github.com/dpfil/dpfil/internal/splitmix"
)

// Fast kernels for the ReRo Monte Carlo hot loop (T·N normal draws and exponentials):
// an inlinable xoshiro256++ generator, the Marsaglia–Tsang ziggurat for N(0, 1), and a
// table-driven exp with relative error < 1e-14. math/rand/v2's NormFloat64 goes
// through an interface call per draw and math.Exp is accurate to the last ulp, which
// we do not need; together these kernels are several times faster.

// xoshiro is xoshiro256++ (Blackman & Vigna 2019).
type xoshiro struct{ s0, s1, s2, s3 uint64 }

func splitmix64(x *uint64) uint64 { return splitmix.Next(x) }

// newXoshiro seeds a generator for stream `stream` of a user seed: splitmix64 of the
// seed, offset by the stream index, expanded by splitmix64 into the 256-bit state.
func newXoshiro(seed uint64, stream uint64) *xoshiro {
	x := seed
	base := splitmix64(&x)
	y := base ^ (stream * 0xD1B54A32D192ED03)
	r := &xoshiro{splitmix64(&y), splitmix64(&y), splitmix64(&y), splitmix64(&y)}
	if r.s0|r.s1|r.s2|r.s3 == 0 {
		r.s0 = 1
	}
	return r
}

// xoshiroStep is the one xoshiro256++ step: the output of state (s0, s1, s2, s3)
// and the next state. It takes and returns the state by value so that it inlines
// into hot loops that keep the state in registers (ratioGen.fill) as well as into
// next.
func xoshiroStep(s0, s1, s2, s3 uint64) (out, n0, n1, n2, n3 uint64) {
	out = bits.RotateLeft64(s0+s3, 23) + s0
	t := s1 << 17
	s2 ^= s0
	s3 ^= s1
	s1 ^= s2
	s0 ^= s3
	s2 ^= t
	return out, s0, s1, s2, bits.RotateLeft64(s3, 45)
}

func (r *xoshiro) next() uint64 {
	var out uint64
	out, r.s0, r.s1, r.s2, r.s3 = xoshiroStep(r.s0, r.s1, r.s2, r.s3)
	return out
}

// uniform returns a float64 in (0, 1).
func (r *xoshiro) uniform() float64 {
	return (float64(r.next()>>11) + 0.5) * (1.0 / (1 << 53))
}

// ziggurat holds the 128-layer tables of Marsaglia & Tsang (2000), "The ziggurat
// method for generating random variables", J. Stat. Softw. 5(8), computed by their
// zigset procedure.
type ziggurat struct {
	kn [128]uint32
	wn [128]float64
	fn [128]float64
}

const zigR = 3.442619855899

func newZiggurat() *ziggurat {
	z := &ziggurat{}
	const m1 = 2147483648.0
	const vn = 9.91256303526217e-3
	dn := zigR
	tn := dn
	q := vn / math.Exp(-0.5*dn*dn)
	z.kn[0] = uint32((dn / q) * m1)
	z.kn[1] = 0
	z.wn[0] = q / m1
	z.wn[127] = dn / m1
	z.fn[0] = 1
	z.fn[127] = math.Exp(-0.5 * dn * dn)
	for i := 126; i >= 1; i-- {
		dn = math.Sqrt(-2 * math.Log(vn/dn+math.Exp(-0.5*dn*dn)))
		z.kn[i+1] = uint32((dn / tn) * m1)
		tn = dn
		z.fn[i] = math.Exp(-0.5 * dn * dn)
		z.wn[i] = dn / m1
	}
	return z
}

// norm draws a standard normal. The fast path (≈ 99% of draws) costs one 64-bit
// draw, a table lookup and a multiply; the 32 low bits give the sign and magnitude,
// 7 further bits the layer.
func (z *ziggurat) norm(r *xoshiro) float64 {
	u := r.next()
	if x, ok := z.fast(u); ok {
		return x
	}
	return z.slow(r, u)
}

// fast is the ziggurat's rectangle test for the draw u.
func (z *ziggurat) fast(u uint64) (float64, bool) {
	hz := int32(uint32(u))
	iz := (u >> 32) & 127
	m := hz >> 31
	a := uint32((hz ^ m) - m) // |hz|, 2^31 for MinInt32
	return float64(hz) * z.wn[iz], a < z.kn[iz]
}

// slow finishes a draw whose rectangle test with u failed: the wedge and tail tests,
// then fresh draws until one is accepted.
func (z *ziggurat) slow(r *xoshiro, u uint64) float64 {
	for {
		hz := int32(uint32(u))
		iz := (u >> 32) & 127
		x := float64(hz) * z.wn[iz]
		if iz == 0 {
			// Tail beyond zigR (Marsaglia 1964).
			for {
				x = -math.Log(r.uniform()) / zigR
				y := -math.Log(r.uniform())
				if y+y >= x*x {
					break
				}
			}
			if hz > 0 {
				return zigR + x
			}
			return -zigR - x
		}
		if z.fn[iz]+r.uniform()*(z.fn[iz-1]-z.fn[iz]) < math.Exp(-0.5*x*x) {
			return x
		}
		u = r.next()
		if x, ok := z.fast(u); ok {
			return x
		}
	}
}

// roundMagic = 1.5·2^52: adding it to |y| < 2^51 rounds y to the nearest integer.
const roundMagic = 6755399441055744.0

// expTable holds 2^{j/256}, j = 0…255.
type expTable [256]float64

func newExpTable() *expTable {
	var t expTable
	for j := range t {
		t[j] = math.Exp2(float64(j) / 256)
	}
	return &t
}

// exp returns e^x with relative error < 1e-14 for |x| ≤ 700 (callers keep x in that
// range): x = (256k + j)·ln2/256 + r with |r| ≤ ln2/512, e^x = 2^k·2^{j/256}·P(r), P
// the degree-4 Taylor polynomial (truncation < 4e-17).
func (t *expTable) exp(x float64) float64 {
	const inv = 256 / math.Ln2
	const ln2hi = 6.93147180369123816490e-01 / 256 // fdlibm split of ln2, /256 exact
	const ln2lo = 1.90821492927058770002e-10 / 256
	kf := x*inv + roundMagic
	ni := int64(math.Float64bits(kf) - math.Float64bits(roundMagic))
	n := kf - roundMagic
	r := (x - n*ln2hi) - n*ln2lo
	j := ni & 255
	k := ni >> 8
	p := 1 + r*(1+r*(0.5+r*(1.0/6+r*(1.0/24))))
	return math.Float64frombits(math.Float64bits(t[j]*p) + uint64(k)<<52)
}
