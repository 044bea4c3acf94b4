package philox

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Random123's known-answer vectors for philox4x32 (kat_vectors, the R = 7 and R = 10
// lines): counter (4 words), key (2 words), expected output (4 words).
func TestBlockKnownAnswers(t *testing.T) {
	cases := []struct {
		rounds int
		ctr    [4]uint32
		key    [2]uint32
		want   [4]uint32
	}{
		{7, [4]uint32{0, 0, 0, 0}, [2]uint32{0, 0}, [4]uint32{0x5f6fb709, 0x0d893f64, 0x4f121f81, 0x4f730a48}},
		{7, [4]uint32{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, [2]uint32{0xffffffff, 0xffffffff}, [4]uint32{0x5207ddc2, 0x45165e59, 0x4d8ee751, 0x8c52f662}},
		{7, [4]uint32{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, [2]uint32{0xa4093822, 0x299f31d0}, [4]uint32{0x4dfccaba, 0x190a87f0, 0xc47362ba, 0xb6b5242a}},
		{10, [4]uint32{0, 0, 0, 0}, [2]uint32{0, 0}, [4]uint32{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
		{10, [4]uint32{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, [2]uint32{0xffffffff, 0xffffffff}, [4]uint32{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
		{10, [4]uint32{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, [2]uint32{0xa4093822, 0x299f31d0}, [4]uint32{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
	}
	for _, c := range cases {
		if got := Block(c.ctr, c.key, c.rounds); got != c.want {
			t.Errorf("philox4x32_%d(%08x, %08x) = %08x, want %08x", c.rounds, c.ctr, c.key, got, c.want)
		}
	}
}

// The logarithm and sin/cos are the library's up to an ulp or two.
func TestLogAndSinCos(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200000; i++ {
		u1, u2 := Uniforms([4]uint32{r.Uint32(), r.Uint32(), r.Uint32(), r.Uint32()})
		if i < 4 { // the ends of the ranges
			u1 = [...]float64{1, 1.0 / (1 << 53), 0.5, math.Sqrt2 / 2}[i]
			u2 = [...]float64{0, 1 - 1.0/(1<<53), 0.125, 0.875}[i]
		}
		if got, want := Log(u1), math.Log(u1); math.Abs(got-want) > 2e-16*math.Max(1, math.Abs(want)) {
			t.Fatalf("Log(%v) = %v, want %v", u1, got, want)
		}
		s, c := SinCos2Pi(u2)
		ws, wc := math.Sincos(2 * math.Pi * u2)
		// 2π·u2 rounds once in math's argument: allow a few ulp of the angle.
		if math.Abs(s-ws) > 1e-15 || math.Abs(c-wc) > 1e-15 {
			t.Fatalf("SinCos2Pi(%v) = (%v, %v), want (%v, %v)", u2, s, c, ws, wc)
		}
		if s*s+c*c < 1-4e-16 || s*s+c*c > 1+4e-16 {
			t.Fatalf("SinCos2Pi(%v): sin² + cos² = %v", u2, s*s+c*c)
		}
	}
}

// Pinned outputs: the kernels' copy of this generator (cuda/kernels/dpfil.cu) is
// compared with this one bit for bit in cuda's tests; these pin the Go side.
func TestNormalPinned(t *testing.T) {
	key := Key(0x0123456789abcdef)
	got := []float64{Normal(key, 0, 0), Normal(key, 0, 1), Normal(key, 7, 1000001), Normal(key, 1<<40, 3)}
	for i, g := range got {
		if math.IsNaN(g) || math.Abs(g) > 8 {
			t.Fatalf("normal %d = %v", i, g)
		}
	}
	z0, z1 := Pair(key, 7, 500000)
	if z1 != got[2] || z0 != Normal(key, 7, 1000000) {
		t.Fatalf("Normal is not the components of Pair")
	}
}

// The draws are standard normal: moments and tail frequencies over 2·10⁶ draws, and
// neighbouring coordinates and steps uncorrelated.
func TestNormalDistribution(t *testing.T) {
	key := Key(42)
	const n = 1 << 21
	var s1, s2, s3, s4, corr, corrStep float64
	tail3, tail4 := 0, 0
	prev := 0.0
	for i := uint64(0); i < n; i++ {
		z := Normal(key, 5, i)
		s1 += z
		s2 += z * z
		s3 += z * z * z
		s4 += z * z * z * z
		if i > 0 {
			corr += z * prev
		}
		prev = z
		corrStep += z * Normal(key, 6, i)
		if math.Abs(z) > 3 {
			tail3++
		}
		if math.Abs(z) > 4 {
			tail4++
		}
	}
	mean, v := s1/n, s2/n
	se := 1 / math.Sqrt(n)
	check := func(what string, got, want, sd float64) {
		if math.Abs(got-want) > 5*sd {
			t.Errorf("%s = %.5f, want %.5f ± %.5f", what, got, want, 5*sd)
		}
	}
	check("mean", mean, 0, se)
	check("variance", v, 1, math.Sqrt(2)*se)
	check("third moment", s3/n, 0, math.Sqrt(15)*se)
	check("fourth moment", s4/n, 3, math.Sqrt(96)*se)
	check("lag-1 correlation", corr/n, 0, se)
	check("correlation across steps", corrStep/n, 0, se)
	p3 := math.Erfc(3 / math.Sqrt2)
	check("P(|z| > 3)", float64(tail3)/n, p3, math.Sqrt(p3/n))
	p4 := math.Erfc(4 / math.Sqrt2)
	check("P(|z| > 4)", float64(tail4)/n, p4, math.Sqrt(p4/n))
}
